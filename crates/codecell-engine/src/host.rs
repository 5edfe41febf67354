//! The host functions: `ls`, `read`, `call-tool` and the concurrent `start-tool-call`,
//! `wait-tool-calls` and `cancel-tool-call`, the guest's only way out.
//!
//! Errors the guest can act on (a bad path, a refused argument, a failing tool) come back as
//! `Err(message)` and become Python exceptions. Exceeding a run-wide limit traps instead
//! ([`LimitStop`]), so the guest cannot catch it and carry on.
//!
//! Every buffer the guest sizes is bounded here before the host keeps it: arguments by
//! `max_tool_args_bytes`, results and tool error messages by `max_tool_result_bytes`, and the
//! category and tool names a call record keeps by the catalog's own name limit.

use crate::bindings::codecell::guest::host::{Host, ToolCompletion};
use crate::budget::CallerBudget;
use crate::ending::{LimitStop, clip};
use crate::in_flight::Served;
use crate::outcome::{LimitKind, ToolCallRecord};
use crate::session::{JournalCall, JournalResult, ReplayDiverged};
use crate::state::RunState;
use codecell_catalog::{Catalog, MAX_NAME_BYTES};
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

/// What a session's journal keeps for a call that never completed (cancelled, or cut off).
const CANCELLED: &str = "the call was cancelled before it completed";

/// Why a call naming `category`/`name` is refused before anything looks them up: a name over
/// the catalog's limit (no catalog has such a name, and the record keeps only that much).
fn name_refusal(category: &str, name: &str) -> Option<String> {
    [("category", category), ("tool name", name)]
        .into_iter()
        .find(|(_, given)| given.len() > MAX_NAME_BYTES)
        .map(|(what, given)| {
            format!(
                "the {what} is {} bytes, over the limit of {MAX_NAME_BYTES} bytes",
                given.len()
            )
        })
}

fn no_catalog() -> String {
    "no tools are available in this run".to_string()
}

impl crate::bindings::codecell::guest::types::Host for RunState {}

impl Host for RunState {
    fn ls(&mut self, path: String) -> wasmtime::Result<Result<Vec<String>, String>> {
        Ok(match &self.catalog {
            Some(catalog) => catalog.ls(&path).map_err(|e| e.to_string()),
            None => Err(no_catalog()),
        })
    }

    fn read(&mut self, path: String) -> wasmtime::Result<Result<String, String>> {
        Ok(match &self.catalog {
            Some(catalog) => catalog
                .read(&path)
                .map(|s| s.to_string())
                .map_err(|e| e.to_string()),
            None => Err(no_catalog()),
        })
    }

    async fn call_tool(
        &mut self,
        category: String,
        name: String,
        args_json: String,
    ) -> wasmtime::Result<Result<String, String>> {
        let (begun, dispatch) = self.begin_call(category, name, args_json)?;
        let (result, nested) = match dispatch {
            Dispatch::Call(call) => call.await,
            Dispatch::Answered(answer) => (answer, 0),
        };
        self.finish_call(&begun, result, nested)
    }

    async fn start_tool_call(
        &mut self,
        category: String,
        name: String,
        args_json: String,
    ) -> wasmtime::Result<Result<u64, String>> {
        let (begun, dispatch) = self.begin_call(category, name, args_json)?;
        let handle = begun.index as u64;
        let refusal = match (dispatch, tokio::runtime::Handle::try_current()) {
            (Dispatch::Call(call), Ok(runtime)) => {
                self.in_flight.start(begun, call, &runtime);
                return Ok(Ok(handle));
            }
            (Dispatch::Call(_), Err(_)) => "concurrent tool calls need a tokio runtime".to_string(),
            (Dispatch::Answered(Ok(answer)), _) => {
                // A journal's answer: a call that has already completed.
                self.in_flight.completed(begun, (Ok(answer), 0));
                return Ok(Ok(handle));
            }
            (Dispatch::Answered(Err(refusal)), _) => refusal,
        };
        self.finish_call(&begun, Err(refusal), 0)
            .map(|refused| refused.map(|_| handle))
    }

    async fn wait_tool_calls(
        &mut self,
        timeout_us: Option<u64>,
    ) -> wasmtime::Result<Vec<ToolCompletion>> {
        let deadline = self
            .deadline
            .unwrap_or_else(|| Instant::now() + self.limits.deadline);
        // Never past the deadline: the run ends there anyway, and a huge timeout stays finite.
        let left = deadline.saturating_duration_since(Instant::now());
        let wait = timeout_us.map(|us| Duration::from_micros(us).min(left));
        if self.in_flight.next_ready_bytes().is_none() {
            match wait {
                _ if self.in_flight.none_running() => {
                    // Nothing can complete: only a timer to wait for (`asyncio.sleep`). With no
                    // timer either, the guest's loop would wait forever; it says so itself.
                    // A seeded run's clocks are virtual: they jump to the timer instead.
                    match (wait, &self.virtual_clocks) {
                        (Some(wait), Some(clocks)) => clocks.advance(wait),
                        (Some(wait), None) => tokio::time::sleep(wait).await,
                        (None, _) => {}
                    }
                }
                Some(wait) => {
                    let timed_out = tokio::time::timeout(wait, self.in_flight.wait_one())
                        .await
                        .is_err();
                    if let (true, Some(clocks)) = (timed_out, &self.virtual_clocks) {
                        clocks.advance(wait);
                    }
                }
                None => {
                    let _ = tokio::time::timeout(left, self.in_flight.wait_one()).await;
                }
            }
        }
        self.in_flight.collect_finished();
        if Instant::now() >= deadline {
            return Err(LimitStop::trap(LimitKind::Deadline));
        }
        // At least one completion per wait, and no more than one result's worth of bytes
        // beyond it: the guest must be able to take the list in.
        let mut handed = Vec::new();
        let mut bytes = 0usize;
        while let Some(size) = self.in_flight.next_ready_bytes() {
            if !handed.is_empty() && bytes.saturating_add(size) > self.limits.max_tool_result_bytes
            {
                break;
            }
            let Some(done) = self.in_flight.pop_ready() else {
                break;
            };
            bytes = bytes.saturating_add(size);
            let (result, nested) = done.served;
            let result = self.finish_call(&done.begun, result, nested)?;
            handed.push(ToolCompletion {
                handle: done.begun.index as u64,
                outcome: result,
            });
        }
        Ok(handed)
    }

    async fn cancel_tool_call(&mut self, handle: u64) -> wasmtime::Result<()> {
        let Ok(index) = usize::try_from(handle) else {
            return Ok(());
        };
        if let Some(begun) = self.in_flight.cancel(index) {
            self.settle_cancelled(&begun, Instant::now());
        }
        Ok(())
    }
}

/// A call's future, detached from the store: its result and the fuel nested runs used.
type CallFuture = Pin<Box<dyn Future<Output = Served> + Send>>;

/// How a recorded call is answered.
enum Dispatch {
    /// By its handler.
    Call(CallFuture),
    /// At once: a refusal, or (a session being restored) the journal's answer.
    Answered(Result<String, String>),
}

/// A call recorded by `begin_call`: its record, when it started and where its journal entry is.
pub(crate) struct Begun {
    pub(crate) index: usize,
    started: Instant,
    journal_slot: Option<usize>,
}

impl RunState {
    /// Microseconds from the start of the run to `at`.
    fn since_run_start(&self, at: Instant) -> u64 {
        // The run loop sets the deadline as the run starts, `limits.deadline` after it.
        let start = self
            .deadline
            .and_then(|d| d.checked_sub(self.limits.deadline))
            .unwrap_or(at);
        at.saturating_duration_since(start).as_micros() as u64
    }

    /// Checks the tool-call limit and records the call; gives its record index, when it
    /// started, and the future that serves it or the refusal the guest gets at once.
    fn begin_call(
        &mut self,
        category: String,
        name: String,
        args_json: String,
    ) -> wasmtime::Result<(Begun, Dispatch)> {
        if self.tool_calls.len() >= self.limits.max_tool_calls as usize {
            return Err(LimitStop::trap(LimitKind::ToolCalls));
        }
        let started = Instant::now();
        let refused = name_refusal(&category, &name);
        // Recorded before the call, so a call the deadline cuts off is still in the record
        // (`ok: false`); completed by `finish_call`. The names are cut in place when too long.
        let index = self.tool_calls.len();
        let start_us = self.since_run_start(started);
        let (category, name) = (
            clip(category, MAX_NAME_BYTES).0,
            clip(name, MAX_NAME_BYTES).0,
        );
        self.tool_calls.push(ToolCallRecord {
            category: category.clone(),
            name: name.clone(),
            ok: false,
            duration_us: 0,
            start_us,
            end_us: start_us,
            args_bytes: args_json.len(),
            result_bytes: 0,
        });
        let mut begun = Begun {
            index,
            started,
            journal_slot: None,
        };
        if let Some(refusal) = refused {
            return Ok((begun, Dispatch::Answered(Err(refusal))));
        }
        let max_result = self.limits.max_tool_result_bytes;
        if let Some(journal) = self.journal.as_mut() {
            // A session being restored answers from its journal instead of calling again.
            match journal.replayed(&category, &name, &args_json) {
                // A journal is input like any other: its answers get the same cap.
                Some(Ok(answer))
                    if answer.as_ref().map_or_else(String::len, String::len) > max_result =>
                {
                    return Err(wasmtime::Error::new(ReplayDiverged(format!(
                        "the journal's answer to {category}/{name} is over the limit of {max_result} bytes"
                    ))));
                }
                Some(Ok(answer)) => return Ok((begun, Dispatch::Answered(answer))),
                Some(Err(diverged)) => return Err(wasmtime::Error::new(diverged)),
                None => {
                    // Kept in the order calls start (the order a replay asks in); the result
                    // is filled in as the call completes, and a call that never does replays
                    // as a tool error.
                    begun.journal_slot = Some(journal.recorded.len());
                    journal.recorded.push(JournalCall {
                        category: category.clone(),
                        name: name.clone(),
                        args_json: args_json.clone(),
                        result: JournalResult::of(&Err(CANCELLED.to_string())),
                    });
                }
            }
        }
        // Only owned values cross the await: the store data itself is not `Sync`.
        let call = Call {
            catalog: self.catalog.clone(),
            max_args: self.limits.max_tool_args_bytes,
            max_result: self.limits.max_tool_result_bytes,
        };
        // A tool that starts a run of its own (a dynamic tool) gets what this run has left.
        // Concurrent calls each get all of it; the fuel they use is charged as each completes.
        let budget = CallerBudget::new(
            self.limits.fuel.saturating_sub(self.nested_fuel),
            self.limits.memory_bytes,
            self.deadline
                .unwrap_or_else(|| started + self.limits.deadline),
        );
        let future: CallFuture = Box::pin(async move {
            budget
                .serve(call.dispatch(&category, &name, args_json))
                .await
        });
        Ok((begun, Dispatch::Call(future)))
    }

    /// Completes the record of call `index` with what its handler gave; ends the run (a trap)
    /// when the call took it past its deadline or its nested runs past its fuel.
    fn finish_call(
        &mut self,
        begun: &Begun,
        result: Result<String, String>,
        nested: u64,
    ) -> wasmtime::Result<Result<String, String>> {
        let (index, started) = (begun.index, begun.started);
        if let (Some(journal), Some(slot)) = (self.journal.as_mut(), begun.journal_slot)
            && let Some(entry) = journal.recorded.get_mut(slot)
        {
            entry.result = JournalResult::of(&result);
        }
        self.nested_fuel = self.nested_fuel.saturating_add(nested);
        let now = Instant::now();
        let stop = if nested > 0 && self.nested_fuel >= self.limits.fuel {
            Some(LimitKind::Fuel)
        } else if self.deadline.is_some_and(|d| now >= d) {
            // Host work cannot be interrupted mid-poll: a call that returns after the deadline
            // ends the run there, so a run past its deadline is never reported `ok`.
            Some(LimitKind::Deadline)
        } else {
            None
        };
        let end_us = self.since_run_start(now);
        let record = &mut self.tool_calls[index];
        record.ok = result.is_ok() && stop.is_none();
        record.duration_us = (now - started).as_micros() as u64;
        record.end_us = end_us;
        record.result_bytes = match &result {
            Ok(s) | Err(s) => s.len(),
        };
        if let Some(kind) = stop {
            return Err(LimitStop::trap(kind));
        }
        Ok(result)
    }

    /// Closes the record of a call dropped before it completed (`ok: false`, no result).
    fn settle_cancelled(&mut self, begun: &Begun, now: Instant) {
        let end_us = self.since_run_start(now);
        if let Some(record) = self.tool_calls.get_mut(begun.index) {
            record.ok = false;
            record.duration_us = now.saturating_duration_since(begun.started).as_micros() as u64;
            record.end_us = end_us;
        }
    }

    /// Cancels every call still in flight as the run ends: their handlers are dropped (command
    /// tools' process groups killed) and their records closed at `now`.
    pub(crate) fn cancel_in_flight(&mut self) {
        if self.in_flight.is_empty() {
            return;
        }
        let now = Instant::now();
        for begun in self.in_flight.cancel_all() {
            self.settle_cancelled(&begun, now);
        }
    }
}

/// What one tool call needs from the run, detached from the store.
struct Call {
    catalog: Option<Catalog>,
    max_args: usize,
    max_result: usize,
}

impl Call {
    async fn dispatch(
        self,
        category: &str,
        name: &str,
        args_json: String,
    ) -> Result<String, String> {
        let Some(catalog) = self.catalog else {
            return Err(no_catalog());
        };
        if args_json.len() > self.max_args {
            return Err(format!(
                "arguments of {category}/{name} are {} bytes, over the limit of {} bytes",
                args_json.len(),
                self.max_args
            ));
        }
        let args: serde_json::Value = serde_json::from_str(&args_json)
            .map_err(|e| format!("arguments of {category}/{name} are not valid JSON: {e}"))?;
        // A slow tool is bounded by the run's deadline: the whole run future is under a timeout.
        let value = catalog.call(category, name, args).await.map_err(|e| {
            // A tool's error message is guest-bound text like a result: the same cap applies.
            clip(e.to_string(), self.max_result).0
        })?;
        let text = serde_json::to_string(&value)
            .map_err(|e| format!("result of {category}/{name} is not JSON: {e}"))?;
        if text.len() > self.max_result {
            return Err(format!(
                "result of {category}/{name} is {} bytes, over the limit of {} bytes",
                text.len(),
                self.max_result
            ));
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codecell_catalog::{HandlerError, ToolSpec, handler_fn};
    use serde_json::json;

    fn catalog() -> Catalog {
        let echo = ToolSpec::new("echo", "Echo.", json!({"type": "object"}));
        let loud = ToolSpec::new("loud", "Fails at length.", json!({"type": "object"}));
        Catalog::builder()
            .category("misc", "Test tools.")
            .tool("misc", echo, handler_fn(Ok))
            .tool(
                "misc",
                loud,
                handler_fn(|_| Err(HandlerError::new("e".repeat(10_000)))),
            )
            .build()
            .unwrap()
    }

    fn call(max_args: usize, max_result: usize) -> Call {
        Call {
            catalog: Some(catalog()),
            max_args,
            max_result,
        }
    }

    #[tokio::test]
    async fn a_call_reaches_its_handler_and_comes_back_as_json() {
        let got = call(1000, 1000)
            .dispatch("misc", "echo", r#"{"a":[1,2]}"#.into())
            .await;
        assert_eq!(got.unwrap(), r#"{"a":[1,2]}"#);
    }

    #[tokio::test]
    async fn every_guest_sized_text_is_bounded() {
        let long = "n".repeat(MAX_NAME_BYTES + 1);
        let refused = name_refusal(&long, "echo").expect("refused");
        assert!(refused.contains("category is 129 bytes, over the limit of 128 bytes"));
        assert!(name_refusal("misc", &long).unwrap().contains("tool name"));
        assert_eq!(name_refusal("misc", "echo"), None);
        let big_args = format!(r#"{{"a":"{}"}}"#, "x".repeat(100));
        let refused = call(50, 1000)
            .dispatch("misc", "echo", big_args.clone())
            .await;
        assert!(refused.unwrap_err().contains("over the limit of 50 bytes"));
        let refused = call(1000, 50).dispatch("misc", "echo", big_args).await;
        assert!(refused.unwrap_err().contains("result of misc/echo"));
        let clipped = call(1000, 300).dispatch("misc", "loud", "{}".into()).await;
        assert!(clipped.unwrap_err().len() <= 300);
    }

    #[tokio::test]
    async fn without_a_catalog_every_call_is_refused() {
        let none = Call {
            catalog: None,
            max_args: 10,
            max_result: 10,
        };
        let refused = none.dispatch("misc", "echo", "{}".into()).await;
        assert_eq!(refused.unwrap_err(), no_catalog());
    }
}
