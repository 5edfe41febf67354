//! How the registry runs tool code: through a [`ToolRunner`] it is given (in codecell, a fresh
//! wasm guest). This crate never executes anything itself.

use crate::manifest::Manifest;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

/// A boxed future as runners return it.
pub type RunFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, RunError>> + Send + 'a>>;

/// Runs a manifest's `execute(args)` in isolation and returns its JSON result.
pub trait ToolRunner: Send + Sync {
    /// Runs `manifest.implementation`'s `execute(args)` with exactly this manifest's imports.
    fn run<'a>(&'a self, manifest: &'a Manifest, args: &'a Value) -> RunFuture<'a>;
}

/// Why a run produced no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The tool code raised; `kind` is the exception type.
    #[error("dynamic tool raised {kind}: {message}")]
    Raised {
        /// Exception type name.
        kind: String,
        /// Exception message (may include a traceback).
        message: String,
    },
    /// A limit ended the run.
    #[error("dynamic tool hit a limit: {kind}: {message}")]
    Limit {
        /// Which limit, by its stable name: `input` or `output` (sizes), or one of the
        /// engine's run limits (`fuel`, `memory`, `deadline`, `output`, `tool_calls`).
        kind: &'static str,
        /// What was over the limit, e.g. "dynamic tool input is too large: …".
        message: String,
    },
    /// The result was not JSON or not representable.
    #[error("dynamic tool returned invalid JSON: {0}")]
    InvalidOutput(String),
    /// The runner itself failed (could not start the guest, host error).
    #[error("dynamic tool runner failed: {0}")]
    Host(String),
}

impl RunError {
    /// A stable name for the error (the `kind` `codecell tool --json` prints for it).
    pub fn code(&self) -> &'static str {
        match self {
            RunError::Raised { .. } => "tool_raised",
            RunError::Limit { .. } => "limit",
            RunError::InvalidOutput(_) => "invalid_output",
            RunError::Host(_) => "host_failure",
        }
    }
}
