//! The wasmtime configuration every engine running a guest shares, the pre-initialiser's
//! included: metering, the component model, stack sizes and the linker.

use crate::bindings::Sandbox;
use crate::error::EngineError;
use crate::metering::Metering;
use crate::state::RunState;
use wasmtime::component::{HasSelf, Linker};

/// Native wasm stack per run (virtual memory, committed only as used).
const MAX_WASM_STACK: usize = 8 << 20;

/// The wasmtime settings every engine running a guest shares, the pre-initialiser's included:
/// `metering`, the component model and the wasm stack sizes.
pub(crate) fn base_config(metering: Metering) -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    match metering {
        Metering::Epoch => config.epoch_interruption(true),
        Metering::Fuel => config.consume_fuel(true),
    };
    config.wasm_component_model(true);
    // CPython's own C-recursion guard (about 1 MB of its shadow stack) must trip before wasm's
    // native stack runs out, so deep nesting in json/repr is a catchable RecursionError rather
    // than a trap; 8 MiB was measured to be enough for json.dumps, and a trap is still handled.
    config.max_wasm_stack(MAX_WASM_STACK);
    config.async_stack_size(MAX_WASM_STACK + (1 << 20));
    config
}

/// A linker with WASI (an empty context is supplied per run) and the three host functions.
pub(crate) fn linker(engine: &wasmtime::Engine) -> Result<Linker<RunState>, EngineError> {
    let mut linker: Linker<RunState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    Sandbox::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
    Ok(linker)
}
