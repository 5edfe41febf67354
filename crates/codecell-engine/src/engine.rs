//! `Engine`: one per process. Holds the wasmtime engine, the compiled guest and the instance
//! pool, and sets up the store every instance lives in.

use crate::bindings::{Sandbox, SandboxPre};
use crate::error::EngineError;
use crate::guest::GuestKind;
use crate::limits::Limits;
use crate::metering::{EpochTicker, Metering, YIELD_FUEL};
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
    /// How running guests are metered.
    pub(crate) metering: Metering,
    /// Advances the epoch while a store of this engine is armed (epoch metering only).
    pub(crate) ticker: Option<EpochTicker>,
}

/// The code-mode engine: cheap to clone, shared by every run in the process.
///
/// Runs are futures: they must be polled inside a tokio runtime with timers enabled (the
/// deadline of a guest blocked in a host call is a tokio timeout). Many may run concurrently; a
/// CPU-bound guest yields to the runtime about every millisecond ([`Metering`]).
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

    /// How this engine meters running guests.
    pub fn metering(&self) -> Metering {
        self.inner.metering
    }

    /// The guest interpreter's Python version, e.g. `3.13.15`.
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
        self.store_over(RunState::new(limits, catalog), limits)
    }

    /// A store of this engine over `state`, armed with `limits`.
    pub(crate) fn store_over(
        &self,
        state: RunState,
        limits: &Limits,
    ) -> Result<Store<RunState>, EngineError> {
        store_with(
            &self.inner.wasmtime,
            state,
            limits,
            self.inner.ticker.as_ref(),
        )
    }

    /// Arms `store` for a run with `limits`, on this engine's metering ([`arm`]).
    pub(crate) fn arm(
        &self,
        store: &mut Store<RunState>,
        limits: &Limits,
    ) -> Result<(), EngineError> {
        arm(store, limits, self.inner.ticker.as_ref())
    }
}

/// A store of `engine` over `state`, with the memory limiter installed and armed with `limits`
/// (the pre-initialiser's fuel-metered engine has no `ticker`).
pub(crate) fn store_with(
    engine: &wasmtime::Engine,
    state: RunState,
    limits: &Limits,
    ticker: Option<&EpochTicker>,
) -> Result<Store<RunState>, EngineError> {
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    arm(&mut store, limits, ticker)?;
    Ok(store)
}

/// Arms a store for its run: with fuel metering, gives it the run's fuel and makes the guest
/// yield every [`YIELD_FUEL`] units of it; with epoch metering, makes the guest yield at every
/// epoch tick and holds `ticker` so that the epoch advances until the store is idle again
/// ([`disarm`]) or dropped. Which metering is read from the store itself (fuel is only readable
/// when metered), so the engine's choice is the single source of truth.
pub(crate) fn arm(
    store: &mut Store<RunState>,
    limits: &Limits,
    ticker: Option<&EpochTicker>,
) -> Result<(), EngineError> {
    if store.get_fuel().is_ok() {
        store.set_fuel(limits.fuel)?;
        store.fuel_async_yield_interval(Some(YIELD_FUEL))?;
    } else {
        // Relative to the current epoch: the next tick yields, and each yield re-arms one more.
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        store.data_mut().ticking = ticker.map(EpochTicker::hold);
    }
    Ok(())
}

/// Lets the epoch stop for a store that will run no guest code until it is armed again (a warm
/// instance waiting to be taken, a session between turns).
pub(crate) fn disarm(store: &mut Store<RunState>) {
    store.data_mut().ticking = None;
}

/// Fuel a finished run's guest used itself: 0 when the store is not fuel-metered.
pub(crate) fn guest_fuel_used(store: &Store<RunState>, limits: &Limits) -> u64 {
    store
        .get_fuel()
        .map_or(0, |left| limits.fuel.saturating_sub(left))
}
