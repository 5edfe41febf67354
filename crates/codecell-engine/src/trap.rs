//! Turns how a run ended (a guest result, a trap, a timeout) into status, limit and error.
//!
//! Order matters: an explicit stop by the host comes first, then the trap codes wasmtime gives
//! for fuel and the epoch deadline, then the side effects the limiters recorded (output cut,
//! memory refused). Anything else a guest manages to trap with is its own error, never a panic.

use crate::bindings::Failure;
use crate::outcome::{GuestError, LimitKind, Status};
use crate::run::{Returned, limit_error};
use crate::state::RunState;
use wasmtime::Trap;

/// `(value, status, limit, error)` for a finished run.
pub(crate) type Classified<T> = (Option<T>, Status, Option<LimitKind>, Option<GuestError>);

pub(crate) fn classify<T>(returned: Returned<T>, state: &RunState) -> Classified<T> {
    let limited = |kind: LimitKind| {
        (
            None,
            Status::Limit,
            Some(kind),
            Some(limit_error(kind, &state.limits)),
        )
    };
    match returned {
        Returned::Guest(Ok(value)) => (Some(value), Status::Ok, None, None),
        Returned::Guest(Err(failure)) => classify_failure(failure, state),
        Returned::TimedOut => limited(LimitKind::Deadline),
        Returned::Trap(error) => match trap_limit(&error, state) {
            Some(kind) => limited(kind),
            None => (None, Status::Error, None, Some(trap_error(&error))),
        },
    }
}

fn classify_failure<T>(failure: Failure, state: &RunState) -> Classified<T> {
    if failure.kind == "MemoryError" && state.limiter.hit {
        let error = GuestError {
            kind: failure.kind,
            message: format!(
                "memory cap of {} bytes reached{}{}",
                state.limits.memory_bytes,
                if failure.message.is_empty() { "" } else { ": " },
                failure.message
            ),
            traceback: failure.traceback,
        };
        return (None, Status::Limit, Some(LimitKind::Memory), Some(error));
    }
    let error = GuestError {
        kind: failure.kind,
        message: failure.message,
        traceback: failure.traceback,
    };
    (None, Status::Error, None, Some(error))
}

fn trap_limit(error: &wasmtime::Error, state: &RunState) -> Option<LimitKind> {
    if let Some(kind) = state.stopped_by {
        return Some(kind);
    }
    if let Some(Trap::OutOfFuel) = error.downcast_ref::<Trap>() {
        return Some(LimitKind::Fuel);
    }
    if state.stdout.truncated() || state.stderr.truncated() {
        return Some(LimitKind::Output);
    }
    if state.limiter.hit {
        return Some(LimitKind::Memory);
    }
    None
}

fn trap_error(error: &wasmtime::Error) -> GuestError {
    let (kind, message) = match error.downcast_ref::<Trap>() {
        Some(Trap::StackOverflow) => (
            "StackOverflow",
            "the guest exhausted its native stack (very deep recursion in C code)".to_string(),
        ),
        Some(trap) => ("Trap", format!("the guest trapped: {trap}")),
        None => ("Trap", format!("the guest trapped: {error}")),
    };
    GuestError {
        kind: kind.to_string(),
        message,
        traceback: String::new(),
    }
}
