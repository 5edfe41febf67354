#![doc = include_str!("../../../README.md")]
//!
//! # The API at a glance
//!
//! - [`CodeMode`]: the `execute_code` tool over a [`Catalog`], its system prompt and its
//!   rendering for the model; [`code_mode_from_tools`] builds one from an agent's own tools.
//! - [`Engine`] (from [`Engine::builder`]) runs guests under [`Limits`]; every run ends in an
//!   [`Outcome`] whose [`Failure`] says which exception or limit ended it.
//! - [`Catalog`] (from [`Catalog::builder`] or [`Catalog::from_file`]) holds the tools a guest
//!   can see and call, with a [`Handler`] each.
//! - [`DynamicTools`]: model-authored tools in a store, validated by [`validate_dynamic_source`],
//!   governed by approval-gated promotion, activation and rollback.
//! - [`Error`]: everything that can fail on the host side.

mod code_mode;
mod dynamic;
mod error;
mod prompt;
mod setup;
mod wasm_runner;

pub use code_mode::CodeMode;
pub use dynamic::DynamicTools;
pub use error::Error;
pub use prompt::system_prompt as system_prompt_for;
pub use setup::{ToolDefinition, code_mode_from_tools};
pub use wasm_runner::WasmToolRunner;

pub use codecell_catalog::{
    Catalog, CatalogBuilder, CatalogError, CommandHandler, DynamicResolver, Handler, HandlerError,
    HandlerFuture, ServerCategory, ToolSpec, async_handler_fn, handler_fn, read_catalog_file,
};
pub use codecell_engine::{
    ALL_GUESTS, BUILD_COMMAND, BatchItem, BatchOptions, BatchRun, Engine, EngineBuilder,
    EngineError, ErrorReport, Failure, GuestKind, Journal, JournalResult, LimitKind, Limits,
    Outcome, Session, SessionLimits, SessionManager, SessionManagerLimits, SessionState, Status,
    ToolCallRecord, ToolRun, Turn, VIRTUAL_EPOCH_SECS, VIRTUAL_TICK, run_batch,
};
pub use codecell_manifest::canonical;
pub use codecell_manifest::{
    Approval, DynamicToolError, Event, Manifest, Operation, Registry, RegistryOptions, RunError,
    RunFuture, Scope, ToolRunner, VersionsReport,
};
pub use codecell_policy::{
    Options as PolicyOptions, Strictness, Validated, Violation, validate_dynamic_source,
    validate_with,
};
