//! Rust bindings for the guest world in `wasm-guests/wit`.
//!
//! Host imports are `trappable` (exceeding a limit inside a host call must end the run, not return
//! an error the guest could swallow); `call-tool` is also `async` (a tool handler may do I/O),
//! while `ls` and `read` only look up the in-memory tree.

wasmtime::component::bindgen!({
    path: "../../wasm-guests/wit",
    world: "sandbox",
    imports: {
        "codecell:guest/host.call-tool": async | trappable,
        "codecell:guest/host.start-tool-call": async | trappable,
        "codecell:guest/host.wait-tool-calls": async | trappable,
        "codecell:guest/host.cancel-tool-call": async | trappable,
        default: trappable,
    },
    exports: { default: async },
});
