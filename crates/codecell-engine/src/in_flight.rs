//! Tool calls started by `start-tool-call` and not yet handed back by `wait-tool-calls`.
//!
//! Each call's future is spawned on the tokio runtime the run is polled on, so the handlers of
//! concurrent calls (`asyncio.gather` over `call_tool_async`) run at the same time, and on a
//! multi-threaded runtime while the guest itself computes. Everything here is dropped with the
//! run: the [`JoinSet`] aborts what is still running, which drops the handler's future (a
//! command tool's process group is killed when its child handle drops).

use crate::host::Begun;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use tokio::task::{AbortHandle, Id, JoinSet};

/// What a served call gives back: its result (or tool error) and the fuel nested runs used.
pub(crate) type Served = (Result<String, String>, u64);

/// A call that completed and waits to be handed to the guest.
pub(crate) struct Completed {
    /// The call: its handle is the index of its record in the run's `tool_calls`.
    pub(crate) begun: Begun,
    /// What the handler gave.
    pub(crate) served: Served,
}

/// A started call still running.
struct Running {
    begun: Begun,
    abort: AbortHandle,
}

/// The run's started calls: running, or completed and not yet waited for.
#[derive(Default)]
pub(crate) struct InFlight {
    tasks: JoinSet<Served>,
    running: HashMap<usize, Running>,
    by_task: HashMap<Id, usize>,
    ready: VecDeque<Completed>,
}

impl InFlight {
    /// Whether no call is running or waiting to be handed back.
    pub(crate) fn is_empty(&self) -> bool {
        self.running.is_empty() && self.ready.is_empty()
    }

    /// Whether no call is running (some may have completed and wait in the queue).
    pub(crate) fn none_running(&self) -> bool {
        self.running.is_empty()
    }

    /// Spawns the call `begun` on `runtime`.
    pub(crate) fn start(
        &mut self,
        begun: Begun,
        call: impl Future<Output = Served> + Send + 'static,
        runtime: &tokio::runtime::Handle,
    ) {
        let abort = self.tasks.spawn_on(call, runtime);
        let index = begun.index;
        self.by_task.insert(abort.id(), index);
        self.running.insert(index, Running { begun, abort });
    }

    /// Queues a call answered without running (a session's journal answer).
    pub(crate) fn completed(&mut self, begun: Begun, served: Served) {
        self.ready.push_back(Completed { begun, served });
    }

    /// Waits for the next running call to complete and queues it; returns at once when none runs.
    pub(crate) async fn wait_one(&mut self) {
        while !self.running.is_empty() {
            let Some(joined) = self.tasks.join_next_with_id().await else {
                return;
            };
            if self.settle(joined) {
                return;
            }
        }
    }

    /// Queues every call that has completed by now, without waiting.
    pub(crate) fn collect_finished(&mut self) {
        while let Some(joined) = self.tasks.try_join_next_with_id() {
            self.settle(joined);
        }
    }

    /// Queues a joined task if its call is still wanted; true if it was.
    fn settle(&mut self, joined: Result<(Id, Served), tokio::task::JoinError>) -> bool {
        let (id, served) = match joined {
            Ok((id, served)) => (id, served),
            // A handler that panicked fails its own call, never the host; an aborted task was
            // cancelled, and its call already settled.
            Err(e) if e.is_panic() => (e.id(), (Err("the tool's handler panicked".to_string()), 0)),
            Err(e) => {
                self.by_task.remove(&e.id());
                return false;
            }
        };
        let Some(index) = self.by_task.remove(&id) else {
            return false;
        };
        let Some(running) = self.running.remove(&index) else {
            return false;
        };
        self.ready.push_back(Completed {
            begun: running.begun,
            served,
        });
        true
    }

    /// The size of the next queued completion's result, if any.
    pub(crate) fn next_ready_bytes(&self) -> Option<usize> {
        self.ready.front().map(|c| match &c.served.0 {
            Ok(s) | Err(s) => s.len(),
        })
    }

    /// Takes the next queued completion.
    pub(crate) fn pop_ready(&mut self) -> Option<Completed> {
        self.ready.pop_front()
    }

    /// Drops call `index` if it is running or queued; gives it if it was.
    pub(crate) fn cancel(&mut self, index: usize) -> Option<Begun> {
        if let Some(running) = self.running.remove(&index) {
            running.abort.abort();
            return Some(running.begun);
        }
        let at = self.ready.iter().position(|c| c.begun.index == index)?;
        self.ready.remove(at).map(|c| c.begun)
    }

    /// Drops every call still running or queued; gives them in the order they started.
    pub(crate) fn cancel_all(&mut self) -> Vec<Begun> {
        self.tasks.abort_all();
        self.by_task.clear();
        let mut dropped: Vec<Begun> = self.running.drain().map(|(_, r)| r.begun).collect();
        dropped.extend(self.ready.drain(..).map(|c| c.begun));
        dropped.sort_unstable_by_key(|b| b.index);
        dropped
    }
}
