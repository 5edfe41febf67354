//! Guards the memory cap: the store's `ResourceLimiter`.
//!
//! Growth past the cap is refused (the guest sees a failed `memory.grow`, which CPython turns into
//! `MemoryError`) rather than trapping, so the guest can report what it was doing. The refusal is
//! remembered so `ending.rs` can classify the run as having hit the memory limit, and a refusal of
//! the initial memory (a cap below what the guest needs to exist) is told apart.

use wasmtime::ResourceLimiter;

/// Tables and instances a single guest may create; generous for CPython, tight for a bomb.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;
const MAX_INSTANCES: usize = 64;
const MAX_TABLES: usize = 64;
const MAX_MEMORIES: usize = 16;

/// Enforces the memory cap of one run and records whether it refused anything.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    cap: usize,
    /// Set once a growth was refused.
    hit: bool,
    /// The size of an initial memory that was refused, in bytes.
    initial_refused: Option<usize>,
    /// Largest linear memory size granted, in bytes.
    peak: usize,
}

impl MemoryLimiter {
    pub(crate) fn new(cap: usize) -> Self {
        MemoryLimiter {
            cap,
            hit: false,
            initial_refused: None,
            peak: 0,
        }
    }

    /// Whether a growth was refused during this run.
    pub(crate) fn refused(&self) -> bool {
        self.hit
    }

    /// The largest linear memory granted so far, in bytes.
    pub(crate) fn peak(&self) -> usize {
        self.peak
    }

    /// The size the guest's initial memory needed, if the cap refused even that.
    pub(crate) fn refused_initial(&self) -> Option<usize> {
        self.initial_refused
    }
}

impl MemoryLimiter {
    /// Applies a new cap to an instance made ahead of its run; false if the memory it already
    /// has is over that cap (the caller then instantiates afresh, which reports the refusal).
    pub(crate) fn rearm(&mut self, cap: usize) -> bool {
        self.cap = cap;
        self.hit = false;
        self.peak <= cap
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.cap {
            self.hit = true;
            if current == 0 {
                self.initial_refused = Some(desired);
            }
            return Ok(false);
        }
        self.peak = self.peak.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}
