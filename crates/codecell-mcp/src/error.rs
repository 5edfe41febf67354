//! The errors of this crate: serving, and loading upstream MCP servers.

use rmcp::ErrorData;

/// Why a request to the codecell server failed (a run that raised or hit a limit is not an
/// error: it is a tool result with `isError`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// No tool of that name.
    #[error("unknown tool {0:?}")]
    UnknownTool(String),
    /// The arguments do not fit the tool.
    #[error("{0}")]
    BadArguments(String),
    /// The client cancelled the request.
    #[error("the request was cancelled")]
    Cancelled,
    /// The engine could not run the code (guest not built, engine failure).
    #[error("cannot run the code: {0}")]
    Run(#[source] codecell::Error),
    /// The transport failed.
    #[error("{context}: {source}")]
    Transport {
        /// What was being done.
        context: &'static str,
        /// rmcp's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl ServeError {
    /// The JSON-RPC error a client receives.
    pub(crate) fn into_error_data(self) -> ErrorData {
        match &self {
            ServeError::UnknownTool(_) | ServeError::BadArguments(_) => {
                ErrorData::invalid_params(self.to_string(), None)
            }
            _ => ErrorData::internal_error(self.to_string(), None),
        }
    }
}

/// Why an upstream MCP server could not become a category.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The catalog file could not be read or is not valid.
    #[error(transparent)]
    Catalog(#[from] codecell::CatalogError),
    /// A server's entry in `mcpServers` is malformed.
    #[error("{origin}: mcpServers.{server}: {message}")]
    Config {
        /// The catalog file.
        origin: String,
        /// The server's key.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// A server did not start, or did not answer `initialize` or `tools/list`.
    #[error("MCP server {server:?}: {message}")]
    Start {
        /// The server's key.
        server: String,
        /// What went wrong.
        message: String,
    },
}
