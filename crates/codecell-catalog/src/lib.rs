//! codecell-catalog: the tools a guest can see and call, with no knowledge of wasm.
//!
//! A [`Catalog`] holds categories of tools ([`ToolSpec`]: MCP's `name`, `description`,
//! `inputSchema`, `outputSchema`) with a [`Handler`] each. Building it validates every name and
//! schema, compiles the validators, and generates the virtual tree once:
//! `tools/__index__.md`, `tools/<category>/__index__.md`, `tools/<category>/<tool>.py`.
//! [`Catalog::ls`] and [`Catalog::read`] serve that tree (paths are normalised and guarded in
//! `path`); [`Catalog::call`] checks arguments, runs the handler and checks the result.
//!
//! Names that are not Python identifiers are mapped deterministically (see [`naming`]).

mod builder;
mod catalog;
mod command;
mod error;
mod file;
mod handler;
pub mod naming;
mod path;
mod pylit;
mod schema;
mod spec;
mod stub;
mod tree;

pub use builder::{
    CatalogBuilder, MAX_CATEGORIES, MAX_DESCRIPTION_BYTES, MAX_NAME_BYTES, MAX_PARAMETERS,
    MAX_TOOLS,
};
pub use catalog::Catalog;
pub use command::{
    CommandHandler, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT, MAX_OUTPUT_BYTES, MAX_TIMEOUT,
    STDERR_TAIL_BYTES,
};
pub use error::{CallError, CatalogError, HandlerError, PathError};
pub use file::{DynamicResolver, MAX_ARG_BYTES, MAX_ARGV, MAX_CATALOG_FILE_BYTES};
pub use handler::{Handler, HandlerFuture, async_handler_fn, handler_fn};
pub use path::{MAX_PATH_BYTES, MAX_PATH_SEGMENTS, TreePath};
pub use schema::{MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH};
pub use spec::{CategoryInfo, ToolSpec};
pub use stub::{StubInput, generate as generate_stub};
