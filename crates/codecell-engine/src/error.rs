//! Host-side failures of the engine (never a guest's fault: those are in `Outcome`).

use std::path::{Path, PathBuf};

/// Errors of the engine itself: missing guest, failed compile, failed instantiation.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The guest component was not found.
    #[error("guest component not found at {path}: build it with `{build}`", build = crate::guest::BUILD_COMMAND)]
    GuestNotBuilt {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// Reading a file failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The guest component failed to compile or does not match the world.
    #[error("cannot compile guest {path}: {message}")]
    Compile {
        /// The component file.
        path: PathBuf,
        /// wasmtime's explanation.
        message: String,
    },
    /// Pre-initialising the guest (building its interpreter before the snapshot) failed.
    #[error("cannot pre-initialise guest {path}: {message}")]
    Preinit {
        /// The component file.
        path: PathBuf,
        /// Which stage failed, and why.
        message: String,
    },
    /// wasmtime failed to configure, link or instantiate.
    #[error("wasmtime: {0}")]
    Wasmtime(String),
}

impl EngineError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        EngineError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn wasmtime(e: wasmtime::Error) -> Self {
        EngineError::Wasmtime(format!("{e:#}"))
    }
}
