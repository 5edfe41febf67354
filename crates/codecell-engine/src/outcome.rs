//! What a run produced: the caller-facing record of a snippet run.
//!
//! How the run ended is one field, [`Outcome::result`]: `Ok(())`, or a [`Failure`] that is
//! either an exception or a limit, each with its [`ErrorReport`]. Status, limit and error are
//! read off it, so they cannot disagree. The `--json` shape (`status`, `stdout`, `stderr`,
//! `truncated`, `error`, `limit`, `fuel_used`, `duration_ms`, `tool_calls`) is written by hand
//! below so that it stays exactly the documented contract.

use serde::ser::{Serialize, SerializeStruct, Serializer};
use std::time::Duration;

/// How a run ended, as the `status` field of the JSON contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Status {
    /// The code ran to completion.
    Ok,
    /// The code raised an exception (or trapped) that was not a limit.
    Error,
    /// A limit ended the run.
    Limit,
}

impl Status {
    /// The stable lower-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Limit => "limit",
        }
    }
}

/// Which limit ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LimitKind {
    /// Fuel ran out.
    Fuel,
    /// The memory cap refused an allocation the guest could not recover from.
    Memory,
    /// The wall-clock deadline passed.
    Deadline,
    /// Output exceeded its cap.
    Output,
    /// Too many tool calls.
    ToolCalls,
}

impl LimitKind {
    /// The stable lower-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKind::Fuel => "fuel",
            LimitKind::Memory => "memory",
            LimitKind::Deadline => "deadline",
            LimitKind::Output => "output",
            LimitKind::ToolCalls => "tool_calls",
        }
    }
}

/// What the caller is told about an exception, a trap or a limit that ended a run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ErrorReport {
    /// Exception type name, e.g. `ValueError`, or a limit/trap name such as `DeadlineExceeded`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The exception message.
    pub message: String,
    /// The traceback, limited to the user's own frames.
    pub traceback: String,
    /// The line of the innermost frame of the user's own code, when there is one (not part of
    /// the `--json` contract).
    #[serde(skip)]
    pub line: Option<u32>,
}

/// Why a run did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The code raised an exception (or trapped) that was not a limit.
    Error(ErrorReport),
    /// A limit ended the run.
    Limit {
        /// Which limit.
        kind: LimitKind,
        /// What the caller is told, e.g. `DeadlineExceeded: the run exceeded its deadline …`.
        report: ErrorReport,
    },
}

impl Failure {
    /// The report of the exception or limit.
    pub fn report(&self) -> &ErrorReport {
        match self {
            Failure::Error(report) | Failure::Limit { report, .. } => report,
        }
    }

    /// The limit, when a limit ended the run.
    pub fn limit(&self) -> Option<LimitKind> {
        match self {
            Failure::Limit { kind, .. } => Some(*kind),
            Failure::Error(_) => None,
        }
    }

    /// [`Status::Error`] or [`Status::Limit`].
    pub fn status(&self) -> Status {
        match self {
            Failure::Error(_) => Status::Error,
            Failure::Limit { .. } => Status::Limit,
        }
    }
}

/// One tool call made by the guest (`call_tool`, or `call_tool_async` started concurrently).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ToolCallRecord {
    /// Category the guest named (clipped to the catalog's name limit).
    pub category: String,
    /// Tool name the guest named (clipped to the catalog's name limit).
    pub name: String,
    /// Whether the call returned a result (false: the guest saw a `ToolError`).
    pub ok: bool,
    /// Time spent in the host for this call, in microseconds.
    pub duration_us: u64,
    /// When the call started, in microseconds since the run started: with `end_us`, what shows
    /// concurrent calls overlapping.
    pub start_us: u64,
    /// When the call completed, was cancelled or was cut off by the run's end, in microseconds
    /// since the run started.
    pub end_us: u64,
    /// Size of the JSON arguments, in bytes.
    pub args_bytes: usize,
    /// Size of the JSON result (or error message), in bytes.
    pub result_bytes: usize,
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// How the run ended: completed, or the exception or limit that ended it.
    pub result: Result<(), Failure>,
    /// Captured stdout, at most the output cap.
    pub stdout: String,
    /// Captured stderr, at most the output cap.
    pub stderr: String,
    /// Whether stdout, stderr or the error report was cut at its cap.
    pub truncated: bool,
    /// Fuel consumed by the run.
    pub fuel_used: u64,
    /// Wall-clock duration of the run in milliseconds (fractional).
    pub duration_ms: f64,
    /// Every tool call, in order.
    pub tool_calls: Vec<ToolCallRecord>,
}

impl Outcome {
    /// True when the run completed without error or limit.
    pub fn is_ok(&self) -> bool {
        self.result.is_ok()
    }

    /// How the run ended.
    pub fn status(&self) -> Status {
        match &self.result {
            Ok(()) => Status::Ok,
            Err(failure) => failure.status(),
        }
    }

    /// The exception or limit report, if the run did not complete.
    pub fn error(&self) -> Option<&ErrorReport> {
        self.result.as_ref().err().map(Failure::report)
    }

    /// The limit that ended the run, if any.
    pub fn limit(&self) -> Option<LimitKind> {
        self.result.as_ref().err().and_then(Failure::limit)
    }

    pub(crate) fn duration_ms_of(d: Duration) -> f64 {
        d.as_secs_f64() * 1000.0
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Outcome", 9)?;
        s.serialize_field("status", &self.status())?;
        s.serialize_field("stdout", &self.stdout)?;
        s.serialize_field("stderr", &self.stderr)?;
        s.serialize_field("truncated", &self.truncated)?;
        s.serialize_field("error", &self.error())?;
        s.serialize_field("limit", &self.limit())?;
        s.serialize_field("fuel_used", &self.fuel_used)?;
        s.serialize_field("duration_ms", &self.duration_ms)?;
        s.serialize_field("tool_calls", &self.tool_calls)?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(result: Result<(), Failure>) -> Outcome {
        Outcome {
            result,
            stdout: "hi\n".into(),
            stderr: String::new(),
            truncated: false,
            fuel_used: 7,
            duration_ms: 1.5,
            tool_calls: vec![],
        }
    }

    #[test]
    fn json_keeps_the_documented_field_order_and_names() {
        let ok = serde_json::to_string(&outcome(Ok(()))).unwrap();
        assert_eq!(
            ok,
            r#"{"status":"ok","stdout":"hi\n","stderr":"","truncated":false,"error":null,"limit":null,"fuel_used":7,"duration_ms":1.5,"tool_calls":[]}"#
        );
        let report = ErrorReport {
            kind: "OutOfFuel".into(),
            message: "m".into(),
            traceback: String::new(),
            line: Some(3),
        };
        let limited = outcome(Err(Failure::Limit {
            kind: LimitKind::ToolCalls,
            report,
        }));
        let json = serde_json::to_string(&limited).unwrap();
        assert!(json.starts_with(r#"{"status":"limit","#), "{json}");
        assert!(
            json.contains(
                r#""error":{"type":"OutOfFuel","message":"m","traceback":""},"limit":"tool_calls""#
            ),
            "{json}"
        );
    }

    #[test]
    fn status_limit_and_error_are_read_off_one_result() {
        let failed = outcome(Err(Failure::Error(ErrorReport {
            kind: "ValueError".into(),
            message: "x".into(),
            traceback: String::new(),
            line: None,
        })));
        assert_eq!(failed.status(), Status::Error);
        assert_eq!(failed.limit(), None);
        assert_eq!(failed.error().map(|e| e.kind.as_str()), Some("ValueError"));
        assert!(!failed.is_ok());
    }
}
