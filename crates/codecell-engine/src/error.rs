//! Host-side failures of the engine (never a guest's fault: those are in `Outcome`).

use std::path::{Path, PathBuf};

/// Errors of the engine itself: missing guest, failed compile, failed instantiation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The guest component was not found.
    #[error("guest component not found at {path}: build it with `{build}`", build = crate::guest::BUILD_COMMAND)]
    GuestNotBuilt {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// Reading or writing a file failed.
    #[error("cannot read or write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The guest component failed to compile or does not match the world.
    #[error("cannot compile guest {path}: {source:#}")]
    Compile {
        /// The component file.
        path: PathBuf,
        /// wasmtime's explanation.
        #[source]
        source: wasmtime::Error,
    },
    /// Pre-initialising the guest (building its interpreter before the snapshot) failed.
    #[error("cannot pre-initialise guest {path}: {stage}: {source:#}")]
    Preinit {
        /// The component file.
        path: PathBuf,
        /// Which stage failed.
        stage: &'static str,
        /// Why.
        #[source]
        source: wasmtime::Error,
    },
    /// The memory cap is below what the guest needs just to start.
    #[error("the memory cap of {cap} bytes is below the {minimum} bytes this guest needs to start")]
    MemoryCapTooSmall {
        /// The cap asked for.
        cap: usize,
        /// The guest's initial memory.
        minimum: usize,
    },
    /// The thread that advances the epoch (epoch metering) could not be started.
    #[error("cannot start the epoch ticker thread: {0}")]
    EpochTicker(#[source] std::io::Error),
    /// The engine's instance pool was closed, so no run can get an instance.
    #[error("the engine's instance pool was closed")]
    PoolClosed,
    /// A session refused a turn: it has ended.
    #[error("the session has ended: {reason}")]
    SessionEnded {
        /// Why it ended.
        reason: String,
    },
    /// A session's journal is over its size limit, so the session cannot be saved.
    #[error(
        "the session's journal holds {used} (bytes or clock reads), over its limit of {limit}; the session runs on but cannot be saved"
    )]
    JournalTooLarge {
        /// What the journal holds.
        used: usize,
        /// The limit.
        limit: usize,
    },
    /// A journal cannot be restored: wrong format or guest, or over a limit.
    #[error("cannot restore the journal: {detail}")]
    JournalInvalid {
        /// What is wrong with it.
        detail: String,
    },
    /// Replaying a journal, a cell did other than the journal records.
    #[error("restoring the journal diverged at cell {cell}: {detail}")]
    JournalDiverged {
        /// The cell, from 1.
        cell: usize,
        /// What differed.
        detail: String,
    },
    /// A session manager has no session by this id (never made, closed, or evicted).
    #[error("no session {id}: it was never made, was closed, or was evicted")]
    UnknownSession {
        /// The id asked for.
        id: String,
    },
    /// A session manager refused a new session: it holds as many as it may.
    #[error(
        "cannot start another session: {live} live sessions reserve {reserved} bytes of memory; the limits are {max_sessions} sessions and {max_memory} bytes"
    )]
    SessionsFull {
        /// Sessions alive.
        live: usize,
        /// Memory their caps reserve, in bytes.
        reserved: usize,
        /// The cap on sessions.
        max_sessions: usize,
        /// The cap on their memory, in bytes.
        max_memory: usize,
    },
    /// Guests cannot be precompiled for this target triple: another architecture than this
    /// host's (whose engine's CPU features are not known here), or an unknown OS.
    #[error(
        "cannot precompile for {target}: only this host's architecture ({arch}) on Linux, macOS or Windows"
    )]
    UnsupportedTarget {
        /// The target triple asked for.
        target: String,
        /// This host's architecture.
        arch: &'static str,
    },
    /// wasmtime failed to configure, link or instantiate.
    #[error("wasmtime: {0:#}")]
    Wasmtime(#[source] wasmtime::Error),
}

impl EngineError {
    /// A stable name for this kind of failure, for machine-readable output (`--json`, MCP).
    pub fn code(&self) -> &'static str {
        match self {
            EngineError::GuestNotBuilt { .. } => "guest_not_built",
            EngineError::Io { .. } => "io",
            EngineError::Compile { .. } => "compile",
            EngineError::UnsupportedTarget { .. } => "unsupported_target",
            EngineError::Preinit { .. } => "preinit",
            EngineError::MemoryCapTooSmall { .. } => "memory_cap_too_small",
            EngineError::EpochTicker(_) => "epoch_ticker",
            EngineError::PoolClosed => "pool_closed",
            EngineError::SessionEnded { .. } => "session_ended",
            EngineError::JournalTooLarge { .. } => "journal_too_large",
            EngineError::JournalInvalid { .. } => "journal_invalid",
            EngineError::JournalDiverged { .. } => "journal_diverged",
            EngineError::UnknownSession { .. } => "unknown_session",
            EngineError::SessionsFull { .. } => "sessions_full",
            EngineError::Wasmtime(_) => "wasmtime",
        }
    }

    pub(crate) fn compile(path: &Path, source: wasmtime::Error) -> Self {
        EngineError::Compile {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        EngineError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl From<wasmtime::Error> for EngineError {
    fn from(e: wasmtime::Error) -> Self {
        EngineError::Wasmtime(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_wasmtime_failure_keeps_its_source() {
        let error = EngineError::Compile {
            path: "g.wasm".into(),
            source: wasmtime::format_err!("bad magic"),
        };
        assert!(error.to_string().contains("bad magic"));
        assert_eq!(
            error.source().map(|s| s.to_string()).as_deref(),
            Some("bad magic")
        );
        assert_eq!(error.code(), "compile");
    }
}
