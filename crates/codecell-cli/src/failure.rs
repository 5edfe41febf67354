//! The exit statuses of the CLI contract, and the one failure type that carries one.

use std::process::ExitCode;

/// Guest error or limit (and, for `codecell tool`, a refusal).
pub const GUEST_FAILED: u8 = 1;
/// Bad input: unreadable file, bad catalog, bad flag value.
pub const BAD_INPUT: u8 = 2;
/// Host failure: guest not built, engine error.
pub const HOST_FAILURE: u8 = 3;
/// Standard output was closed by its reader (`| head`): 128 + SIGPIPE, as a shell reports a
/// program the signal ended.
pub const CLOSED_PIPE: u8 = 141;

/// Why a command ended without its result: the exit status, a stable kind and a message.
#[derive(Debug)]
pub struct Failure {
    /// The exit status.
    pub code: u8,
    /// A stable name for scripts (`--json` output prints it).
    pub kind: &'static str,
    /// What went wrong, for people; empty when nothing should be printed.
    pub message: String,
}

impl Failure {
    /// Bad input (exit 2).
    pub fn input(message: String) -> Self {
        Failure {
            code: BAD_INPUT,
            kind: "bad_input",
            message,
        }
    }

    /// A failure of the host itself (exit 3).
    pub fn host(message: String) -> Self {
        Failure {
            code: HOST_FAILURE,
            kind: "host_failure",
            message,
        }
    }

    /// The reader of stdout went away: end quietly.
    pub fn closed_pipe() -> Self {
        Failure {
            code: CLOSED_PIPE,
            kind: "closed_pipe",
            message: String::new(),
        }
    }

    /// An engine failure: a memory cap below the guest's minimum is the caller's input,
    /// anything else is the host's.
    pub fn engine(error: codecell::EngineError) -> Self {
        match error {
            codecell::EngineError::MemoryCapTooSmall { .. } => Failure::input(error.to_string()),
            other => Failure::host(other.to_string()),
        }
    }

    /// A facade failure: an engine failure as [`Failure::engine`], anything else the host's.
    pub fn codecell(error: codecell::Error) -> Self {
        match error {
            codecell::Error::Engine(e) => Failure::engine(e),
            other => Failure::host(other.to_string()),
        }
    }

    /// The exit status as an [`ExitCode`].
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.code)
    }
}
