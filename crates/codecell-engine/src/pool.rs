//! The pooling allocator: instance slots reserved once and reused by every run.
//!
//! A fresh run needs a fresh instance, and with wasmtime's default (on-demand) allocator each one
//! maps its linear memory anew and takes a page fault on every page of the interpreter's heap it
//! touches. With the pool, a finished run's memory is reset in place: on Linux ≥ 6.7 the
//! `PAGEMAP_SCAN` ioctl finds the pages the run dirtied and only those are copied back from the
//! snapshot image, so the next run starts with its pages already resident. Elsewhere wasmtime
//! falls back to `madvise`/re-mapping, which is still correct. The reset happens when the run's
//! store is dropped, which `run.rs` does off the caller's path, on tokio's blocking pool.
//!
//! The pool is finite: at most `max_concurrent_runs` instances exist at once, and each reserves
//! address space (not memory) for a full 4 GiB linear memory plus guards. [`crate::Engine`] queues
//! runs beyond that on a semaphore rather than failing them.

use wasmtime::{Enabled, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Default number of runs that may hold an instance at the same time.
pub(crate) const DEFAULT_MAX_CONCURRENT_RUNS: u32 = 64;

/// Core instances one guest component may create (each guest needs a handful: its module and
/// the component's shims; room is left for a guest linked from several modules).
const CORE_INSTANCES_PER_COMPONENT: u32 = 64;
/// Linear memories one guest component may have (the main one and adapter memories).
const MEMORIES_PER_COMPONENT: u32 = 2;
/// Tables one guest component may have.
const TABLES_PER_COMPONENT: u32 = 32;
/// Elements per table: CPython's indirect-call table holds tens of thousands of functions.
const TABLE_ELEMENTS: usize = 200_000;
/// How many of a finished run's dirty pages (in bytes) are reset by copying back and kept
/// resident for the next run; the rest are released, so an idle slot holds at most this much
/// whatever its last run allocated. 16 MiB covers what a fresh run and a mid-size one (a 1 MB
/// `json.dumps`) dirty, so neither pays page faults for what it releases (docs/performance.md).
const MEMORY_KEEP_RESIDENT: usize = 16 << 20;
/// Largest linear memory a slot can hold: wasm32's whole 4 GiB, so no `Limits::memory_bytes` is
/// ever cut short by the pool (the run's `ResourceLimiter` enforces the real cap).
const MAX_MEMORY_SIZE: usize = 1 << 32;

/// The allocation strategy for `max_runs` concurrent runs.
pub(crate) fn strategy(max_runs: u32) -> InstanceAllocationStrategy {
    let max_runs = max_runs.max(1);
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(max_runs)
        .total_core_instances(max_runs.saturating_mul(CORE_INSTANCES_PER_COMPONENT))
        .total_memories(max_runs.saturating_mul(MEMORIES_PER_COMPONENT))
        .total_tables(max_runs.saturating_mul(TABLES_PER_COMPONENT))
        .total_stacks(max_runs)
        .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
        .max_memories_per_component(MEMORIES_PER_COMPONENT)
        .max_tables_per_component(TABLES_PER_COMPONENT)
        .max_memories_per_module(1)
        .max_tables_per_module(TABLES_PER_COMPONENT)
        .table_elements(TABLE_ELEMENTS)
        .max_memory_size(MAX_MEMORY_SIZE)
        .max_component_instance_size(1 << 20)
        .max_core_instance_size(1 << 20)
        .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT)
        .table_keep_resident(1 << 20)
        .pagemap_scan(Enabled::Auto);
    InstanceAllocationStrategy::Pooling(pool)
}
