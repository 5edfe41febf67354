//! codecell-catalog: the tools a guest can see and call, with no knowledge of wasm.
//!
//! A [`Catalog`] holds categories of tools ([`ToolSpec`]: MCP's `name`, `description`,
//! `inputSchema`, `outputSchema`) with a [`Handler`] each: Rust closures ([`handler_fn`],
//! [`async_handler_fn`]), programs ([`CommandHandler`]), or anything implementing the trait.
//! Building it (with [`Catalog::builder`] or from a catalog file, [`Catalog::from_file`]) validates
//! every name, size and schema, compiles the validators, and generates the whole tree once; after
//! that the catalog is immutable and `ls`/`read` are map lookups.
//!
//! # The tree
//!
//! ```text
//! tools/__index__.md                  categories: name, description, tool count
//! tools/<category>/__index__.md       each tool with the first line of its description
//! tools/<category>/<tool>.py          the stub: typed signature, docstring, call_tool body
//! ```
//!
//! The root (`""`, `"."`, `"/"`) lists only `tools/`. Listings are sorted; directories end with
//! `/`. Paths are normalised once, in [`TreePath::parse`]: `.` and empty segments are dropped, a
//! trailing `/` is fine, a leading `/` is allowed only for `/tools/...` (any other absolute path is
//! `OutsideTree`); `..` anywhere, NUL, backslashes, control characters, more than
//! [`MAX_PATH_BYTES`] bytes or [`MAX_PATH_SEGMENTS`] segments are refused, never resolved.
//!
//! # Names
//!
//! Category directories and tool files use Python identifiers ([`naming`]): characters outside
//! ASCII `[A-Za-z0-9_]` become `_`, a leading digit gets a `_` prefix, keywords, dunders and names
//! the stub itself binds get a trailing `_`, and collisions take `_2`, `_3`, … (names already valid
//! keep them; the rest are numbered in sorted order). Parameters are mapped the same way and the
//! stub passes the original names. [`Catalog::call`] accepts a category by name or identifier, and
//! a tool by name, identifier, or either with the seed's `.py` suffix.
//!
//! # Calls
//!
//! Arguments are checked against `inputSchema` before the handler runs, results against
//! `outputSchema` when given; [`CallError`]'s `Display` is the message the guest's `ToolError`
//! carries. Command handlers get JSON on stdin, answer JSON on stdout, and are bounded by a
//! timeout and an output cap; see [`CommandHandler`]. Each runs in its own process group (a job
//! object on Windows) that is killed as a whole when the call ends, and with an empty
//! environment but for `PATH` (`SystemRoot` too on Windows) and the variables its handler lists
//! (`"env": {"NAME": "value"}` in a catalog file, [`CommandHandler::env`] in Rust).
//!
//! # Limits
//!
//! Every schema is bounded when the catalog is built, before it is compiled: its size
//! ([`MAX_SCHEMA_BYTES`]) and nesting ([`MAX_SCHEMA_DEPTH`]); its fan-out, counting every `$ref`
//! target and combinator branch each time it is reached ([`MAX_SCHEMA_EXPANSION`] schema nodes
//! per instance value, [`MAX_SCHEMA_BRANCHES`] per `anyOf`/`oneOf`/`allOf`); `$ref` loops that
//! never descend and non-local references are refused. Patterns are matched by a linear-time
//! engine, so look-around and backreferences are refused; each compiles to at most
//! [`PATTERN_SIZE_LIMIT`] bytes, with at most [`MAX_PATTERNS`] distinct ones per catalog. Stub generation has a work budget
//! ([`STUB_WORK_BUDGET`]); past it a stub gets `Any` types.

mod builder;
mod catalog;
mod command;
mod complexity;
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
pub use complexity::{
    MAX_INSTANCE_DEPTH, MAX_SCHEMA_BRANCHES, MAX_SCHEMA_EXPANSION, instance_depth_limit,
};
pub use error::{CallError, CatalogError, HandlerError, PathError};
pub use file::{
    DynamicResolver, MAX_ARG_BYTES, MAX_ARGV, MAX_CATALOG_FILE_BYTES, MAX_ENV_VARS, ServerCategory,
    read_catalog_file,
};
pub use handler::{Handler, HandlerFuture, async_handler_fn, handler_fn};
pub use path::{MAX_PATH_BYTES, MAX_PATH_SEGMENTS, TreePath};
/// A double-quoted Python string literal for any text: what stubs quote names and descriptions
/// with (control, bidirectional and invisible characters escaped).
pub use pylit::string as py_string;
pub use schema::{
    MAX_PATTERNS, MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, PATTERN_SIZE_LIMIT, depth as json_depth,
};
pub use spec::{CategoryInfo, ToolSpec};
pub use stub::{STUB_WORK_BUDGET, StubInput, generate as generate_stub};
