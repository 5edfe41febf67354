//! The warm instance: the next run's fresh instance, made ahead of time.
//!
//! Instantiating the guest is a large share of a run (CPython links dozens of core modules; every
//! run pays for resolving their imports). So after each run the engine instantiates the next one
//! in the background and keeps it, unused, for the next caller. A run still never sees an instance
//! anything else has touched: the warm instance has only been instantiated, never called, and it
//! is taken out of the engine by exactly one run. Before use it gets that run's limits and catalog
//! ([`crate::state::RunState::rearm`]); its fuel and yield interval are set afresh, and its
//! deadline starts with the run.
//!
//! The warm instance holds one slot of the pool, so it is only kept when the pool has at least
//! two (a run waiting for a slot does not look for the warm instance).

use crate::engine::{Engine, Warm};
use crate::limits::Limits;
use codecell_catalog::Catalog;
use std::sync::atomic::Ordering;

/// Clears the engine's `refilling` flag when the refill task ends, however it ends.
struct Refilling(Engine);

impl Drop for Refilling {
    fn drop(&mut self) {
        self.0.inner.refilling.store(false, Ordering::Release);
    }
}

impl Engine {
    /// Takes the warm instance, armed for a run with `limits` and `catalog`, if there is one.
    /// A seeded run never takes it: its WASI context was built with the host's randomness and
    /// clocks, before the seed was known.
    pub(crate) fn take_warm(&self, limits: &Limits, catalog: Option<Catalog>) -> Option<Warm> {
        if limits.seed.is_some() {
            return None;
        }
        let mut warm = self.inner.warm.as_ref()?.lock().ok()?.take()?;
        if !warm.store.data_mut().rearm(limits, catalog) {
            // Its memory is already over this run's cap: let the caller instantiate afresh.
            return None;
        }
        self.arm(&mut warm.store, limits).ok()?;
        Some(warm)
    }

    /// Starts making the next warm instance in the background unless one exists or is underway.
    pub(crate) fn refill_warm(&self) {
        let Some(warm) = &self.inner.warm else {
            return;
        };
        // Outside a tokio runtime there is nothing to run the refill on: skip it, never panic.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if warm.lock().map(|w| w.is_some()).unwrap_or(true)
            || self.inner.refilling.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let engine = self.clone();
        runtime.spawn(async move {
            // Cleared on drop too: a runtime shutting down drops this task mid-way.
            let _refilling = Refilling(engine.clone());
            let made = engine.make_warm().await;
            if let (Some(made), Some(slot)) = (made, &engine.inner.warm)
                && let Ok(mut slot) = slot.lock()
            {
                *slot = Some(made);
            }
        });
    }

    /// Instantiates the guest with placeholder limits (re-armed when taken); None on failure,
    /// which leaves the next run to instantiate inline and report the error itself.
    async fn make_warm(&self) -> Option<Warm> {
        let slot = self.slot().await.ok()?;
        let mut store = self.new_store(None, &Limits::default()).ok()?;
        let sandbox = self.inner.pre.instantiate_async(&mut store).await.ok()?;
        crate::engine::disarm(&mut store);
        Some(Warm {
            store,
            sandbox,
            slot,
        })
    }
}
