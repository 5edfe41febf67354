//! codecell: run untrusted, model-written Python tool code inside WebAssembly.
//!
//! [`CodeMode`] gives an agent one tool, `execute_code`: its Python runs in a fresh guest that
//! can only browse the tool tree (`ls`, `read`) and call tools (`call_tool`), under [`Limits`].

mod code_mode;
mod dynamic;
mod error;
mod prompt;
mod setup;
mod wasm_runner;

pub use code_mode::CodeMode;
pub use dynamic::DynamicTools;
pub use error::CodecellError;
pub use prompt::system_prompt as system_prompt_for;
pub use setup::{ToolDefinition, code_mode_from_tools};
pub use wasm_runner::WasmToolRunner;

/// The dynamic-tool source policy (`validate_dynamic_source`).
pub use codecell_policy as policy;

/// Manifests, canonical JSON, the store and the registry behind [`DynamicTools`].
pub use codecell_manifest as manifest;
pub use codecell_manifest::{
    Approval, DynamicToolError, Manifest, RegistryOptions, RunError, Scope, ToolRunner,
    VersionsReport,
};

pub use codecell_catalog::{
    Catalog, CatalogBuilder, Handler, HandlerError, ToolSpec, async_handler_fn, handler_fn,
};
pub use codecell_engine::{
    ALL_GUESTS, BUILD_COMMAND, Engine, EngineBuilder, EngineError, GuestError, GuestKind,
    LimitKind, Limits, Outcome, Status, ToolCallRecord,
};
