//! `Engine`: one per process. Holds the wasmtime engine, the compiled guest and the instance
//! pool, and sets up the store every instance lives in.

use crate::bindings::{Sandbox, SandboxPre};
use crate::config::YIELD_FUEL;
use crate::error::EngineError;
use crate::guest::GuestKind;
use crate::limits::Limits;
use crate::state::RunState;
use codecell_catalog::Catalog;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::Store;

/// An instantiated, never-called guest with the pool slot it occupies: the warm instance
/// (`warm.rs`).
pub(crate) struct Warm {
    pub(crate) store: Store<RunState>,
    pub(crate) sandbox: Sandbox,
    pub(crate) slot: OwnedSemaphorePermit,
}

pub(crate) struct Inner {
    pub(crate) wasmtime: wasmtime::Engine,
    pub(crate) pre: SandboxPre<RunState>,
    pub(crate) guest: GuestKind,
    pub(crate) wasm: PathBuf,
    /// One permit per pool slot: a run holds one from before instantiation until its store is
    /// dropped, so the pool is never exhausted.
    pub(crate) slots: Arc<Semaphore>,
    /// The next run's instance, made ahead of time (None: warm instances are off).
    pub(crate) warm: Option<Mutex<Option<Warm>>>,
    /// Set while a background task is making the warm instance.
    pub(crate) refilling: AtomicBool,
}

/// The code-mode engine: cheap to clone, shared by every run in the process.
///
/// Runs are futures: they must be polled inside a tokio runtime with timers enabled (the
/// deadline of a guest blocked in a host call is a tokio timeout). Many may run concurrently; a
/// CPU-bound guest yields to the runtime every 10 million units of fuel (a few milliseconds).
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("guest", &self.inner.guest)
            .field("wasm", &self.inner.wasm)
            .finish()
    }
}

impl Engine {
    /// The guest this engine runs.
    pub fn guest(&self) -> GuestKind {
        self.inner.guest
    }

    /// The guest interpreter's Python version, e.g. `3.14.0`.
    pub async fn python_version(&self) -> Result<String, EngineError> {
        let _slot = self.slot().await?;
        let mut store = self.new_store(None, &Limits::default())?;
        let sandbox = self.inner.pre.instantiate_async(&mut store).await?;
        Ok(sandbox.call_python_version(&mut store).await?)
    }

    /// Waits for a free instance slot in the pool.
    pub(crate) async fn slot(&self) -> Result<OwnedSemaphorePermit, EngineError> {
        self.inner
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| EngineError::PoolClosed)
    }

    /// A store of this engine for one run, armed with `limits`.
    pub(crate) fn new_store(
        &self,
        catalog: Option<Catalog>,
        limits: &Limits,
    ) -> Result<Store<RunState>, EngineError> {
        new_store(&self.inner.wasmtime, catalog, limits)
    }
}

/// A store of `engine` whose data is a fresh [`RunState`], with the memory limiter installed and
/// the run's fuel set; the pre-initialiser uses it too.
pub(crate) fn new_store(
    engine: &wasmtime::Engine,
    catalog: Option<Catalog>,
    limits: &Limits,
) -> Result<Store<RunState>, EngineError> {
    store_with(engine, RunState::new(limits, catalog), limits)
}

/// A store of `engine` over `state`, with the memory limiter installed and `limits`' fuel set.
pub(crate) fn store_with(
    engine: &wasmtime::Engine,
    state: RunState,
    limits: &Limits,
) -> Result<Store<RunState>, EngineError> {
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    arm(&mut store, limits)?;
    Ok(store)
}

/// Gives a store its run's fuel and makes the guest yield every [`YIELD_FUEL`] units of it.
pub(crate) fn arm(store: &mut Store<RunState>, limits: &Limits) -> Result<(), EngineError> {
    store.set_fuel(limits.fuel)?;
    store.fuel_async_yield_interval(Some(YIELD_FUEL))?;
    Ok(())
}
