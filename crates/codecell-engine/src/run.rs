//! The run loop: a fresh instance, the export called under the deadline, the ending classified.

use crate::bindings::{RunOptions, Sandbox};
use crate::ending::{
    self, GuestEnd, LimitStop, REPORT_MESSAGE_CHARS, REPORT_TRACEBACK_CHARS, Returned,
};
use crate::engine::{Engine, disarm};
use crate::error::EngineError;
use crate::limits::Limits;
use crate::outcome::{Failure, LimitKind, Outcome, ToolCallRecord};
use crate::state::RunState;
use codecell_catalog::Catalog;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::sync::OwnedSemaphorePermit;
use wasmtime::Store;

/// How long past the deadline the tokio timeout waits before it ends a run that nothing polls.
pub(crate) const TIMEOUT_GRACE: Duration = Duration::from_millis(20);

/// A dynamic tool's run: its JSON result or why there is none, and the fuel it used.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRun {
    /// The canonical JSON `execute(args)` returned, or the exception or limit that ended the run.
    pub result: Result<String, Failure>,
    /// Fuel consumed by the run.
    pub fuel_used: u64,
}

/// The export call a run makes, given the instance and its store.
pub(crate) type ExportCall<T> = Box<
    dyn for<'a> FnOnce(
            &'a Sandbox,
            &'a mut Store<RunState>,
        ) -> Pin<
            Box<dyn Future<Output = wasmtime::Result<Result<T, GuestEnd>>> + Send + 'a>,
        > + Send,
>;

/// What the run loop hands back: the classified ending and everything captured.
struct Finished<T> {
    result: Result<T, Failure>,
    captured: Captured,
    clipped: bool,
    fuel_used: u64,
    duration: Duration,
}

/// What a finished run's store held for its caller, taken out before the store is retired.
struct Captured {
    /// Standard output, and whether it was cut at the output limit.
    stdout: (String, bool),
    /// Standard error, and whether it was cut at the output limit.
    stderr: (String, bool),
    /// The tool calls the run made, in order.
    tool_calls: Vec<ToolCallRecord>,
}

/// Drops a finished run's store, and then its pool slot, off the caller's path. Dropping the
/// store resets its slot's linear memory (every page the run dirtied is found and copied back
/// from the snapshot image), which takes about as long as the rest of a fresh run, and nothing
/// the caller reads depends on it. The slot's permit goes with the store, so the pool is never
/// asked for more instances than it has. Outside a tokio runtime the store is dropped here.
fn retire(store: Store<RunState>, slot: OwnedSemaphorePermit) {
    let reset = move || {
        drop(store);
        drop(slot);
    };
    match tokio::runtime::Handle::try_current() {
        // A runtime shutting down drops the task unrun, which drops the store all the same.
        Ok(runtime) => drop(runtime.spawn_blocking(reset)),
        Err(_) => reset(),
    }
}

/// The options a run passes to its export: where the guest clips its failure record (the host
/// clips again, `ending.rs`) and how long a dynamic tool's result may be.
pub(crate) fn options(limits: &Limits, max_result_chars: usize) -> RunOptions {
    RunOptions {
        recursion_limit: limits.recursion_limit,
        max_message_chars: REPORT_MESSAGE_CHARS,
        max_traceback_chars: REPORT_TRACEBACK_CHARS,
        max_result_chars: u32::try_from(max_result_chars).unwrap_or(u32::MAX),
    }
}

impl Engine {
    /// Runs a code-mode snippet in a fresh guest with `catalog` behind `ls`/`read`/`call_tool`.
    pub async fn run_snippet(
        &self,
        code: &str,
        catalog: Option<Catalog>,
        limits: &Limits,
    ) -> Result<Outcome, EngineError> {
        let (code, options) = (code.to_string(), options(limits, usize::MAX));
        let call: ExportCall<()> = Box::new(move |sandbox, store| {
            Box::pin(async move {
                let ended = sandbox.call_run_snippet(store, &code, options).await?;
                Ok(ended.map_err(GuestEnd::from))
            })
        });
        let finished = self.run(catalog, limits, call).await?;
        let (stdout, out_cut) = finished.captured.stdout;
        let (stderr, err_cut) = finished.captured.stderr;
        Ok(Outcome {
            result: finished.result,
            stdout,
            stderr,
            truncated: out_cut || err_cut || finished.clipped,
            fuel_used: finished.fuel_used,
            duration_ms: Outcome::duration_ms_of(finished.duration),
            tool_calls: finished.captured.tool_calls,
        })
    }

    /// Runs a dynamic tool's `execute(args)` with restricted builtins; its value is the JSON
    /// result, which may have at most `max_result_chars` characters (a longer one ends the run
    /// with [`LimitKind::Output`]).
    pub async fn run_tool(
        &self,
        source: &str,
        imports: &[String],
        args_json: &str,
        max_result_chars: usize,
        limits: &Limits,
    ) -> Result<ToolRun, EngineError> {
        let (source, imports, args) = (source.to_string(), imports.to_vec(), args_json.to_string());
        let options = options(limits, max_result_chars);
        let call: ExportCall<String> = Box::new(move |sandbox, store| {
            Box::pin(async move {
                let ended = sandbox
                    .call_run_tool(store, &source, &imports, &args, options)
                    .await?;
                Ok(ended.map_err(GuestEnd::from))
            })
        });
        let finished = self.run(None, limits, call).await?;
        Ok(ToolRun {
            result: finished.result,
            fuel_used: finished.fuel_used,
        })
    }

    async fn run<T: Send + 'static>(
        &self,
        catalog: Option<Catalog>,
        limits: &Limits,
        call: ExportCall<T>,
    ) -> Result<Finished<T>, EngineError> {
        // The slot is held until the store (and its pool slot) is dropped below.
        let (mut store, warm_sandbox, slot) = match self.take_warm(limits, catalog.clone()) {
            Some(warm) => (warm.store, Some(warm.sandbox), warm.slot),
            None => {
                let slot = self.slot().await?;
                (self.new_store(catalog, limits)?, None, slot)
            }
        };
        let started = Instant::now();
        let deadline = started + limits.deadline;
        store.data_mut().deadline = Some(deadline);
        let pre = &self.inner.pre;
        // A running guest yields at every epoch tick (or every YIELD_FUEL units of fuel); each
        // time it is polled again the wall clock is checked here, and past the deadline the run
        // is dropped where it stands.
        // The tokio timeout covers a guest blocked in a host call (a WASI sleep, a slow tool),
        // where nothing polls; its grace lets the clock check classify a busy guest first.
        let guarded = tokio::time::timeout(limits.deadline + TIMEOUT_GRACE, async {
            let sandbox = match warm_sandbox {
                Some(sandbox) => sandbox,
                None => pre
                    .instantiate_async(&mut store)
                    .await
                    .map_err(Instantiate)?,
            };
            let call = call(&sandbox, &mut store);
            Ok::<_, Instantiate>(checked(deadline, call).await)
        });
        let returned = match guarded.await {
            Ok(Ok(Ok(result))) => Returned::Guest(result),
            Ok(Ok(Err(trap))) => Returned::Trap(trap),
            Err(_elapsed) => Returned::Trap(LimitStop::trap(LimitKind::Deadline)),
            Ok(Err(Instantiate(e))) => self.instantiate_failed(e, &store, limits)?,
        };
        let guest_fuel = crate::engine::guest_fuel_used(&store, limits);
        disarm(&mut store);
        let state = store.data_mut();
        // Calls started concurrently and still running end with the run.
        state.cancel_in_flight();
        // The guest's own fuel, and what the dynamic tools it called used in runs of their own.
        let fuel_used = guest_fuel.saturating_add(state.nested_fuel);
        let captured = Captured {
            stdout: state.stdout.take(),
            stderr: state.stderr.take(),
            tool_calls: std::mem::take(&mut state.tool_calls),
        };
        let duration = started.elapsed();
        let classified = ending::classify(returned, state.limiter.refused(), limits);
        retire(store, slot);
        self.refill_warm();
        Ok(Finished {
            result: classified.result,
            captured,
            clipped: classified.clipped,
            fuel_used,
            duration,
        })
    }

    /// Instantiation failed: a limit that ended start-up (fuel too small to start) is the run's
    /// ending, a memory cap below what the guest needs to exist is the caller's error, and
    /// anything else is a failure of the host.
    fn instantiate_failed<T>(
        &self,
        error: wasmtime::Error,
        store: &Store<RunState>,
        limits: &Limits,
    ) -> Result<Returned<T>, EngineError> {
        if let Some(refused) = cap_below_start(store, limits) {
            return Err(refused);
        }
        if let Some(wasmtime::Trap::OutOfFuel) = error.downcast_ref::<wasmtime::Trap>() {
            return Ok(Returned::Trap(error));
        }
        Err(EngineError::Wasmtime(error))
    }
}

/// The caller's error when instantiation failed because `limits`' memory cap is below the
/// guest's initial memory.
pub(crate) fn cap_below_start(store: &Store<RunState>, limits: &Limits) -> Option<EngineError> {
    let minimum = store.data().limiter.refused_initial()?;
    Some(EngineError::MemoryCapTooSmall {
        cap: limits.memory_bytes,
        minimum,
    })
}

/// `call`, polled until it ends or is polled at or past `deadline`, where it ends with the
/// deadline trap. A running guest yields at every epoch tick (or every `YIELD_FUEL` units of
/// fuel, `metering.rs`), so a busy one is polled, and stopped, within a few milliseconds of its
/// deadline.
pub(crate) async fn checked<T>(
    deadline: Instant,
    call: impl Future<Output = wasmtime::Result<T>>,
) -> wasmtime::Result<T> {
    let mut call = std::pin::pin!(call);
    std::future::poll_fn(|cx| {
        if Instant::now() >= deadline {
            return Poll::Ready(Err(LimitStop::trap(LimitKind::Deadline)));
        }
        call.as_mut().poll(cx)
    })
    .await
}

/// Instantiation failed: not the guest's code running, so classified apart.
struct Instantiate(wasmtime::Error);
