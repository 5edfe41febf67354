//! How a run ends: the one place where a limit is signalled, classified and worded.
//!
//! **Signals.** Every limit the host notices itself stops the run the same way: the code that
//! notices it traps with [`LimitStop`] carrying the limit's kind — `call_tool` for the tool-call
//! limit (`host.rs`), the output stream for the output cap (`output.rs`), the run loop for the
//! deadline (`run.rs`). Two limits are noticed elsewhere: fuel by wasmtime (`Trap::OutOfFuel`),
//! and memory by the store's limiter, which refuses a `memory.grow` rather than trapping so the
//! guest sees a failed allocation (a `MemoryError` it may catch and recover from). Only that
//! refusal is read after the fact: a run that then fails with `MemoryError`, or traps, ended on
//! the memory limit.
//!
//! **Classification and wording** are [`classify`] and [`limit_report`]; nothing else decides
//! whether a run ended on a limit or says so.
//!
//! **Clipping.** The error report is the one part of an outcome the guest writes that is not a
//! captured stream. The guest clips it to [`REPORT_MESSAGE_CHARS`] and [`REPORT_TRACEBACK_CHARS`]
//! characters, but guest code can undo anything guest-side, so the host clips it again here, in
//! bytes ([`MAX_REPORT_KIND_BYTES`], [`MAX_REPORT_MESSAGE_BYTES`], [`MAX_REPORT_TRACEBACK_BYTES`]),
//! and marks the outcome truncated when it had to.

use crate::bindings::{Failure as GuestFailure, ToolFailure};
use crate::limits::Limits;
use crate::outcome::{ErrorReport, Failure, LimitKind};
use wasmtime::Trap;

/// Marker error: the host stopped the run because a limit was exceeded.
#[derive(Debug, thiserror::Error)]
#[error("run stopped: the {} limit was exceeded", .0.as_str())]
pub(crate) struct LimitStop(pub(crate) LimitKind);

impl LimitStop {
    /// The trap that ends the run for `kind`.
    pub(crate) fn trap(kind: LimitKind) -> wasmtime::Error {
        wasmtime::Error::new(LimitStop(kind))
    }
}

/// Characters of an exception message the guest keeps (it appends `... (truncated)`).
pub(crate) const REPORT_MESSAGE_CHARS: u32 = 4096;
/// Characters of a traceback the guest keeps.
pub(crate) const REPORT_TRACEBACK_CHARS: u32 = 8192;
/// Bytes of an exception type name the host keeps.
pub const MAX_REPORT_KIND_BYTES: usize = 256;
/// Bytes of an exception message the host keeps (the guest's clip, at four bytes a character).
pub const MAX_REPORT_MESSAGE_BYTES: usize = 4 * REPORT_MESSAGE_CHARS as usize;
/// Bytes of a traceback the host keeps.
pub const MAX_REPORT_TRACEBACK_BYTES: usize = 4 * REPORT_TRACEBACK_CHARS as usize;

/// Why an export returned no value, as the guest tells it.
pub(crate) enum GuestEnd {
    /// The code raised.
    Raised(GuestFailure),
    /// A dynamic tool's result has this many characters, over the run's limit.
    ResultTooLarge(u64),
}

impl From<GuestFailure> for GuestEnd {
    fn from(failure: GuestFailure) -> Self {
        GuestEnd::Raised(failure)
    }
}

impl From<ToolFailure> for GuestEnd {
    fn from(failure: ToolFailure) -> Self {
        match failure {
            ToolFailure::Raised(failure) => GuestEnd::Raised(failure),
            ToolFailure::ResultTooLarge(chars) => GuestEnd::ResultTooLarge(chars),
        }
    }
}

/// What the guest export returned, before classification.
pub(crate) enum Returned<T> {
    /// The export returned normally (its own `Ok` or `Err`).
    Guest(Result<T, GuestEnd>),
    /// The instance trapped, or the host stopped it ([`LimitStop`]).
    Trap(wasmtime::Error),
}

/// A classified run: the export's value or the failure, and whether the report was clipped.
pub(crate) struct Classified<T> {
    pub(crate) result: Result<T, Failure>,
    pub(crate) clipped: bool,
}

/// Classifies how a run ended; `memory_refused` says whether the limiter refused a growth.
pub(crate) fn classify<T>(
    returned: Returned<T>,
    memory_refused: bool,
    limits: &Limits,
) -> Classified<T> {
    let failure = match returned {
        Returned::Guest(Ok(value)) => {
            return Classified {
                result: Ok(value),
                clipped: false,
            };
        }
        Returned::Guest(Err(GuestEnd::Raised(failure))) => {
            guest_failure(failure, memory_refused, limits)
        }
        Returned::Guest(Err(GuestEnd::ResultTooLarge(chars))) => Failure::Limit {
            kind: LimitKind::Output,
            report: ErrorReport {
                kind: "OutputLimitExceeded".to_string(),
                message: format!("dynamic tool output is too large: {chars} characters"),
                traceback: String::new(),
                line: None,
            },
        },
        Returned::Trap(error) => match trap_limit(&error, memory_refused) {
            Some(kind) => limit(kind, limits),
            None => Failure::Error(trap_report(&error)),
        },
    };
    let (failure, clipped) = clip_failure(failure);
    Classified {
        result: Err(failure),
        clipped,
    }
}

fn limit(kind: LimitKind, limits: &Limits) -> Failure {
    Failure::Limit {
        kind,
        report: limit_report(kind, limits),
    }
}

fn guest_failure(failure: GuestFailure, memory_refused: bool, limits: &Limits) -> Failure {
    if failure.kind == "MemoryError" && memory_refused {
        let separator = if failure.message.is_empty() { "" } else { ": " };
        let report = ErrorReport {
            message: format!(
                "memory cap of {} bytes reached{separator}{}",
                limits.memory_bytes, failure.message
            ),
            kind: failure.kind,
            traceback: failure.traceback,
            line: failure.line,
        };
        return Failure::Limit {
            kind: LimitKind::Memory,
            report,
        };
    }
    Failure::Error(ErrorReport {
        kind: failure.kind,
        message: failure.message,
        traceback: failure.traceback,
        line: failure.line,
    })
}

fn trap_limit(error: &wasmtime::Error, memory_refused: bool) -> Option<LimitKind> {
    if let Some(LimitStop(kind)) = error.downcast_ref::<LimitStop>() {
        return Some(*kind);
    }
    if let Some(Trap::OutOfFuel) = error.downcast_ref::<Trap>() {
        return Some(LimitKind::Fuel);
    }
    // A guest that cannot recover from a refused allocation traps (RustPython aborts).
    memory_refused.then_some(LimitKind::Memory)
}

fn trap_report(error: &wasmtime::Error) -> ErrorReport {
    let (kind, message) = match error.downcast_ref::<Trap>() {
        Some(Trap::StackOverflow) => (
            "StackOverflow",
            "the guest exhausted its native stack (very deep recursion in C code)".to_string(),
        ),
        Some(trap) => ("Trap", format!("the guest trapped: {trap}")),
        None => ("Trap", format!("the guest trapped: {error}")),
    };
    ErrorReport {
        kind: kind.to_string(),
        message,
        traceback: String::new(),
        line: None,
    }
}

/// The report a caller gets when `kind` ended a run held to `limits`.
pub(crate) fn limit_report(kind: LimitKind, limits: &Limits) -> ErrorReport {
    let (name, message) = match kind {
        LimitKind::Fuel => (
            "OutOfFuel",
            format!("the run used all of its {} units of fuel", limits.fuel),
        ),
        LimitKind::Memory => (
            "MemoryLimitExceeded",
            format!(
                "the run tried to use more than {} bytes of memory",
                limits.memory_bytes
            ),
        ),
        LimitKind::Deadline => (
            "DeadlineExceeded",
            format!(
                "the run exceeded its deadline of {} ms",
                limits.deadline.as_millis()
            ),
        ),
        LimitKind::Output => (
            "OutputLimitExceeded",
            format!(
                "output exceeded {} bytes; it was truncated and the run stopped",
                limits.max_output_bytes
            ),
        ),
        LimitKind::ToolCalls => (
            "ToolCallLimitExceeded",
            format!(
                "the run made more than {} tool calls",
                limits.max_tool_calls
            ),
        ),
    };
    ErrorReport {
        kind: name.to_string(),
        message,
        traceback: String::new(),
        line: None,
    }
}

fn clip_failure(failure: Failure) -> (Failure, bool) {
    match failure {
        Failure::Error(report) => {
            let (report, clipped) = clip_report(report);
            (Failure::Error(report), clipped)
        }
        Failure::Limit { kind, report } => {
            let (report, clipped) = clip_report(report);
            (Failure::Limit { kind, report }, clipped)
        }
    }
}

fn clip_report(report: ErrorReport) -> (ErrorReport, bool) {
    let (kind, a) = clip(report.kind, MAX_REPORT_KIND_BYTES);
    let (message, b) = clip(report.message, MAX_REPORT_MESSAGE_BYTES);
    let (traceback, c) = clip(report.traceback, MAX_REPORT_TRACEBACK_BYTES);
    (
        ErrorReport {
            kind,
            message,
            traceback,
            line: report.line,
        },
        a || b || c,
    )
}

/// What a clipped text ends with, as the guest's own clip does.
const CLIP_MARK: &str = "... (truncated)";

/// `text` cut to at most `max` bytes on a character boundary, marked, and whether it was cut.
pub(crate) fn clip(mut text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max.saturating_sub(CLIP_MARK.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(CLIP_MARK);
    (text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guest(kind: &str, message: &str) -> Returned<()> {
        Returned::Guest(Err(GuestEnd::Raised(GuestFailure {
            kind: kind.into(),
            message: message.into(),
            traceback: String::new(),
            line: Some(1),
        })))
    }

    #[test]
    fn a_limit_stop_trap_is_that_limit_whatever_else_happened() {
        let limits = Limits::default();
        for kind in [LimitKind::Output, LimitKind::ToolCalls, LimitKind::Deadline] {
            let ended = classify(Returned::<()>::Trap(LimitStop::trap(kind)), true, &limits);
            assert_eq!(ended.result.unwrap_err().limit(), Some(kind));
        }
    }

    #[test]
    fn fuel_trap_is_the_fuel_limit_worded_with_the_budget() {
        let limits = Limits::default();
        let ended = classify(
            Returned::<()>::Trap(wasmtime::Error::new(Trap::OutOfFuel)),
            false,
            &limits,
        );
        let failure = ended.result.unwrap_err();
        assert_eq!(failure.limit(), Some(LimitKind::Fuel));
        assert_eq!(failure.report().kind, "OutOfFuel");
        let budget = limits.fuel.to_string();
        assert!(failure.report().message.contains(&budget), "{failure:?}");
    }

    #[test]
    fn memory_error_is_a_limit_only_when_the_cap_refused_growth() {
        let limits = Limits::default();
        let refused = classify(guest("MemoryError", "x"), true, &limits);
        assert_eq!(refused.result.unwrap_err().limit(), Some(LimitKind::Memory));
        let raised = classify(guest("MemoryError", "x"), false, &limits);
        assert_eq!(raised.result.unwrap_err().limit(), None);
    }

    #[test]
    fn other_traps_are_errors_and_a_trap_after_a_refusal_is_memory() {
        let limits = Limits::default();
        let trap = || Returned::<()>::Trap(wasmtime::Error::new(Trap::StackOverflow));
        let plain = classify(trap(), false, &limits).result.unwrap_err();
        assert_eq!(plain.limit(), None);
        assert_eq!(plain.report().kind, "StackOverflow");
        let after = classify(trap(), true, &limits).result.unwrap_err();
        assert_eq!(after.limit(), Some(LimitKind::Memory));
    }

    #[test]
    fn a_huge_guest_report_is_clipped_host_side_and_marked() {
        let huge = "K".repeat(20 << 20);
        let ended = classify(guest(&huge, &huge), false, &Limits::default());
        assert!(ended.clipped);
        let report = ended.result.unwrap_err().report().clone();
        assert!(report.kind.len() <= MAX_REPORT_KIND_BYTES);
        assert!(report.message.len() <= MAX_REPORT_MESSAGE_BYTES);
        assert!(report.message.ends_with(CLIP_MARK));
    }

    #[test]
    fn a_tool_result_over_its_limit_is_the_output_limit() {
        let limits = Limits::default();
        let ended = classify(
            Returned::<String>::Guest(Err(GuestEnd::ResultTooLarge(3_000_000))),
            false,
            &limits,
        );
        let failure = ended.result.unwrap_err();
        assert_eq!(failure.limit(), Some(LimitKind::Output));
        assert!(failure.report().message.contains("3000000 characters"));
    }

    #[test]
    fn the_failing_line_survives_classification() {
        let ended = classify(guest("ValueError", "x"), false, &Limits::default());
        assert_eq!(ended.result.unwrap_err().report().line, Some(1));
    }

    #[test]
    fn clip_never_splits_a_character() {
        let (text, cut) = clip("é".repeat(100), 41);
        assert!(cut);
        assert!(text.len() <= 41);
        assert!(text.ends_with(CLIP_MARK));
    }
}
