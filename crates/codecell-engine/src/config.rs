//! The wasmtime configuration every engine running a guest shares, the pre-initialiser's
//! included: metering, the component model, stack sizes and the linker.

use crate::bindings::Sandbox;
use crate::error::EngineError;
use crate::metering::Metering;
use crate::state::RunState;
use wasmtime::component::{HasSelf, Linker};

/// Native wasm stack per run (virtual memory, committed only as used).
const MAX_WASM_STACK: usize = 64 << 20;

/// The wasmtime settings every engine running a guest shares, the pre-initialiser's included:
/// `metering`, the component model and the wasm stack sizes.
pub(crate) fn base_config(metering: Metering) -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    match metering {
        Metering::Epoch => config.epoch_interruption(true),
        Metering::Fuel => config.consume_fuel(true),
    };
    config.wasm_component_model(true);
    // Each interpreter's own guard (CPython's C recursion count, RustPython's depth count) must
    // trip before wasm's native stack runs out, so deep C recursion (`==` of self-referential
    // containers, deep `repr` or `json`) is a catchable RecursionError rather than a trap: a
    // comparison level uses far more native stack than shadow stack, and 8 MiB was not enough
    // (docs/async-and-fidelity.md). A trap is still handled.
    config.max_wasm_stack(MAX_WASM_STACK);
    config.async_stack_size(MAX_WASM_STACK + (1 << 20));
    // For `perf record`: with CODECELL_PERFMAP set, wasmtime writes /tmp/perf-<pid>.map naming
    // each compiled guest function, so profiles show CPython's and RustPython's own symbols
    // (docs/performance.md). Off otherwise: it costs a file write per loaded module.
    #[cfg(target_os = "linux")]
    if std::env::var_os("CODECELL_PERFMAP").is_some() {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    config
}

/// A linker with WASI (an empty context is supplied per run) and the three host functions.
pub(crate) fn linker(engine: &wasmtime::Engine) -> Result<Linker<RunState>, EngineError> {
    let mut linker: Linker<RunState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    Sandbox::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
    Ok(linker)
}
