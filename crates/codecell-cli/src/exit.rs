//! Exit codes of the CLI contract, and the error type that carries one.

use std::process::ExitCode;

/// Guest error or limit.
pub const GUEST_FAILED: u8 = 1;
/// Bad input: unreadable file, bad catalog, bad flag value.
pub const BAD_INPUT: u8 = 2;
/// Host failure: guest not built, engine error.
pub const HOST_FAILURE: u8 = 3;

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    pub code: ExitCode,
    pub message: String,
}

impl Failure {
    pub fn input(message: String) -> Self {
        Failure {
            code: ExitCode::from(BAD_INPUT),
            message,
        }
    }

    pub fn host(message: String) -> Self {
        Failure {
            code: ExitCode::from(HOST_FAILURE),
            message,
        }
    }
}
