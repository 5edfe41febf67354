//! One run: a fresh store and instance, the limits armed, the export called, the result classified.

use crate::bindings::{Failure, RunOptions, Sandbox};
use crate::engine::{Engine, YIELD_FUEL};
use crate::error::EngineError;
use crate::limits::Limits;
use crate::outcome::{GuestError, LimitKind, Outcome};
use crate::state::RunState;
use crate::trap;
use codecell_catalog::Catalog;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use std::time::Instant;
use wasmtime::Store;

/// What the guest export returned, before classification.
pub(crate) enum Returned<T> {
    /// The export returned normally (its own `Ok` or `Err`).
    Guest(Result<T, Failure>),
    /// The instance trapped (or the host stopped it).
    Trap(wasmtime::Error),
    /// The wall-clock deadline passed (the guest was running, or blocked in a host call).
    TimedOut,
}

impl Engine {
    /// Runs a code-mode snippet in a fresh guest with `catalog` behind `ls`/`read`/`call_tool`.
    pub async fn run_snippet(
        &self,
        code: &str,
        catalog: Option<Arc<Catalog>>,
        limits: &Limits,
    ) -> Result<Outcome, EngineError> {
        let options = RunOptions {
            recursion_limit: limits.recursion_limit,
        };
        let code = code.to_string();
        self.run(catalog, limits, move |sandbox, store| {
            Box::pin(async move { sandbox.call_run_snippet(store, &code, options).await })
        })
        .await
        .map(|(outcome, _)| outcome)
    }

    /// Runs a dynamic tool's `execute(args)` with restricted builtins; the value is its JSON result.
    pub async fn run_tool(
        &self,
        source: &str,
        imports: &[String],
        args_json: &str,
        limits: &Limits,
    ) -> Result<(Outcome, Option<String>), EngineError> {
        let options = RunOptions {
            recursion_limit: limits.recursion_limit,
        };
        let (source, imports, args) = (source.to_string(), imports.to_vec(), args_json.to_string());
        self.run(None, limits, move |sandbox, store| {
            Box::pin(async move {
                sandbox
                    .call_run_tool(store, &source, &imports, &args, options)
                    .await
            })
        })
        .await
    }

    /// The guest interpreter's Python version, e.g. `3.14.0`.
    pub async fn python_version(&self) -> Result<String, EngineError> {
        let limits = Limits::default();
        let _slot = self.slot().await?;
        let mut store = self.new_store(None, &limits)?;
        let sandbox = self
            .inner
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(EngineError::wasmtime)?;
        sandbox
            .call_python_version(&mut store)
            .await
            .map_err(EngineError::wasmtime)
    }

    /// Waits for a free instance slot in the pool.
    pub(crate) async fn slot(&self) -> Result<tokio::sync::OwnedSemaphorePermit, EngineError> {
        self.inner
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| EngineError::Wasmtime("the engine's instance pool was closed".into()))
    }

    pub(crate) fn new_store(
        &self,
        catalog: Option<Arc<Catalog>>,
        limits: &Limits,
    ) -> Result<Store<RunState>, EngineError> {
        let mut store = Store::new(&self.inner.wasmtime, RunState::new(limits, catalog));
        store.limiter(|s| &mut s.limiter);
        arm(&mut store, limits)?;
        Ok(store)
    }

    async fn run<T, F>(
        &self,
        catalog: Option<Arc<Catalog>>,
        limits: &Limits,
        call: F,
    ) -> Result<(Outcome, Option<T>), EngineError>
    where
        T: Send + 'static,
        F: for<'a> FnOnce(
                &'a Sandbox,
                &'a mut Store<RunState>,
            ) -> std::pin::Pin<
                Box<dyn Future<Output = wasmtime::Result<Result<T, Failure>>> + Send + 'a>,
            > + Send,
    {
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
        let pre = &self.inner.pre;
        // A running guest yields every YIELD_FUEL units of fuel; each time it is polled again the
        // wall clock is checked here, and past the deadline the run is dropped where it stands.
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
            let mut call = call(&sandbox, &mut store);
            let checked = std::future::poll_fn(|cx| {
                if Instant::now() >= deadline {
                    return Poll::Ready(None);
                }
                call.as_mut().poll(cx).map(Some)
            });
            Ok::<_, Instantiate>(checked.await)
        });
        let returned = match guarded.await {
            Ok(Ok(Some(Ok(result)))) => Returned::Guest(result),
            Ok(Ok(Some(Err(trap)))) => Returned::Trap(trap),
            Ok(Ok(None)) | Err(_) => Returned::TimedOut,
            Ok(Err(Instantiate(e))) => return Err(EngineError::wasmtime(e)),
        };
        let fuel_left = store.get_fuel().unwrap_or(0);
        let state = store.into_data();
        let duration = started.elapsed();
        let (value, status, limit, error) = trap::classify(returned, &state);
        let (stdout, out_cut) = state.stdout.take();
        let (stderr, err_cut) = state.stderr.take();
        let outcome = Outcome {
            status,
            stdout,
            stderr,
            truncated: out_cut || err_cut,
            error,
            limit,
            fuel_used: limits.fuel.saturating_sub(fuel_left),
            duration_ms: Outcome::duration_ms_of(duration),
            tool_calls: state.tool_calls,
        };
        drop(slot);
        self.refill_warm();
        Ok((outcome, value))
    }
}

/// How long past the deadline the tokio timeout waits before it ends a run that nothing polls.
const TIMEOUT_GRACE: Duration = Duration::from_millis(20);

/// Gives a store its run's fuel and makes the guest yield every [`YIELD_FUEL`] units of it.
pub(crate) fn arm(store: &mut Store<RunState>, limits: &Limits) -> Result<(), EngineError> {
    store.set_fuel(limits.fuel).map_err(EngineError::wasmtime)?;
    store
        .fuel_async_yield_interval(Some(YIELD_FUEL))
        .map_err(EngineError::wasmtime)
}

/// Instantiation failed: a host failure, not the guest's doing.
struct Instantiate(wasmtime::Error);

/// Builds the caller-facing error for a limit.
pub(crate) fn limit_error(kind: LimitKind, limits: &Limits) -> GuestError {
    let (name, message) = match kind {
        LimitKind::Fuel => (
            "OutOfFuel",
            format!("the run used all of its {} units of fuel", limits.fuel),
        ),
        LimitKind::Memory => (
            "MemoryLimitExceeded",
            format!(
                "the run tried to use more than {} bytes of memory",
                limits.memory_bytes
            ),
        ),
        LimitKind::Deadline => (
            "DeadlineExceeded",
            format!(
                "the run exceeded its deadline of {} ms",
                limits.deadline.as_millis()
            ),
        ),
        LimitKind::Output => (
            "OutputLimitExceeded",
            format!(
                "output exceeded {} bytes; it was truncated and the run stopped",
                limits.max_output_bytes
            ),
        ),
        LimitKind::ToolCalls => (
            "ToolCallLimitExceeded",
            format!(
                "the run made more than {} tool calls",
                limits.max_tool_calls
            ),
        ),
    };
    GuestError {
        kind: name.to_string(),
        message,
        traceback: String::new(),
    }
}
