//! What a run produced: the caller-facing record of a snippet or tool run.

use serde::Serialize;
use std::time::Duration;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The code ran to completion.
    Ok,
    /// The code raised an exception (or trapped) that was not a limit.
    Error,
    /// A limit ended the run.
    Limit,
}

/// Which limit ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
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

/// An exception or trap as reported to the caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GuestError {
    /// Exception type name, e.g. `ValueError`, or a limit/trap name such as `DeadlineExceeded`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The exception message.
    pub message: String,
    /// The traceback, limited to the user's own frames.
    pub traceback: String,
}

/// One `call_tool` made by the guest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCallRecord {
    /// Category the guest named.
    pub category: String,
    /// Tool name the guest named.
    pub name: String,
    /// Whether the call returned a result (false: the guest saw a `ToolError`).
    pub ok: bool,
    /// Time spent in the host for this call, in microseconds.
    pub duration_us: u64,
    /// Size of the JSON arguments, in bytes.
    pub args_bytes: usize,
    /// Size of the JSON result (or error message), in bytes.
    pub result_bytes: usize,
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// How the run ended.
    pub status: Status,
    /// Captured stdout, at most the output cap.
    pub stdout: String,
    /// Captured stderr, at most the output cap.
    pub stderr: String,
    /// Whether stdout or stderr was cut at the cap.
    pub truncated: bool,
    /// The exception or limit that ended the run, if any.
    pub error: Option<GuestError>,
    /// The limit that ended the run, if any.
    pub limit: Option<LimitKind>,
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
        self.status == Status::Ok
    }

    pub(crate) fn duration_ms_of(d: Duration) -> f64 {
        d.as_secs_f64() * 1000.0
    }
}
