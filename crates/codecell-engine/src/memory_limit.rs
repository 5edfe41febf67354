//! Guards the memory cap: the store's `ResourceLimiter`.
//!
//! Growth past the cap is refused (the guest sees a failed `memory.grow`, which CPython turns into
//! `MemoryError`) rather than trapping, so the guest can report what it was doing. The refusal is
//! remembered so the run can be classified as having hit the memory limit.

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
    pub(crate) hit: bool,
    /// Largest linear memory size granted, in bytes.
    pub(crate) peak: usize,
}

impl MemoryLimiter {
    pub(crate) fn new(cap: usize) -> Self {
        MemoryLimiter {
            cap,
            hit: false,
            peak: 0,
        }
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
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.cap {
            self.hit = true;
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
