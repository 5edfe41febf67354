//! codecell over the Model Context Protocol.
//!
//! Two halves:
//! - **[`CodecellServer`]**: an MCP server whose one tool is `execute_code` (plus the
//!   dynamic-tool tools when given a store). Serve it on stdio ([`serve_stdio`]) or as
//!   stateless streamable HTTP ([`serve_http`], or [`http_service`] to mount in an axum or
//!   hyper application of your own). Its `instructions` are the code-mode prompt; each call
//!   runs in a fresh guest under the [`codecell::CodeMode`]'s limits; a client's cancellation
//!   stops the run; a run longer than a second reports progress to a client that asked.
//! - **Upstream servers** ([`load_catalog`]): a catalog file's `"mcpServers"`, in the format
//!   Claude Desktop and Cursor use, become categories whose tools the guest's `call_tool` and
//!   stubs reach over MCP.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use codecell::{CodeMode, Engine};
//! let catalog = codecell_mcp::load_catalog("fixtures/demo/catalog.json".as_ref(), None).await?;
//! let server = codecell_mcp::CodecellServer::new(CodeMode::new(Engine::builder().build()?, catalog));
//! codecell_mcp::serve_stdio(server).await?;
//! # Ok(()) }
//! ```

mod dynamic_tools;
mod error;
mod execute;
mod serve;
mod server;
pub mod upstream;

pub use error::{ServeError, UpstreamError};
pub use execute::{MAX_CODE_BYTES, outcome_schema};
pub use serve::{HttpOptions, MAX_CONNECTIONS, MCP_PATH, http_service, serve_http, serve_stdio};
pub use server::CodecellServer;
pub use upstream::load_catalog;
