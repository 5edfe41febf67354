//! A session's journal: what `Session::save` writes and `Session::restore` replays.
//!
//! A journal holds everything a fresh instance needs to reach the same state: the cells in
//! order, the seed of the guest's random generators, the clock reads the guest made (or that the
//! clocks were virtual), and every tool call's arguments and result. Restoring replays the cells
//! with each tool call answered from the journal instead of called again, and checks that every
//! replayed cell printed what it printed the first time.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The journal format this build writes and reads.
pub const JOURNAL_FORMAT: u32 = 1;

/// A saved session, as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Journal {
    /// [`JOURNAL_FORMAT`] when written.
    pub format: u32,
    /// The guest the session ran on (`cpython`, `rustpython`); restore refuses another.
    pub guest: String,
    /// The seed of the guest's random generators.
    pub seed: u64,
    /// What the guest's clocks gave it.
    pub clocks: JournalClocks,
    /// The cells, in the order they ran.
    pub cells: Vec<JournalCell>,
}

/// The clocks a session's guest saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum JournalClocks {
    /// Virtual clocks of a seeded session (`determinism.rs`): nothing to record.
    Virtual,
    /// Real clocks, every read in nanoseconds, in read order.
    Recorded {
        /// Wall-clock reads, nanoseconds since the Unix epoch.
        wall_ns: Vec<u64>,
        /// Monotonic-clock reads.
        monotonic_ns: Vec<u64>,
    },
}

/// One cell: its code, what it printed and how it ended, and the tool calls it made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalCell {
    /// The cell's code.
    pub code: String,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// `ok`, `error` or `limit`.
    pub status: String,
    /// Its tool calls, in order.
    pub tool_calls: Vec<JournalCall>,
}

/// One tool call and what it returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalCall {
    /// The category called.
    pub category: String,
    /// The tool called.
    pub name: String,
    /// The arguments as the guest sent them (JSON text).
    pub args_json: String,
    /// The JSON result, or the error message the guest saw.
    pub result: JournalResult,
}

/// A tool call's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum JournalResult {
    /// The JSON text of the result.
    Ok(String),
    /// The error message.
    Error(String),
}

impl JournalResult {
    pub(crate) fn of(result: &Result<String, String>) -> Self {
        match result {
            Ok(text) => JournalResult::Ok(text.clone()),
            Err(message) => JournalResult::Error(message.clone()),
        }
    }

    pub(crate) fn answer(self) -> Result<String, String> {
        match self {
            JournalResult::Ok(text) => Ok(text),
            JournalResult::Error(message) => Err(message),
        }
    }

    fn len(&self) -> usize {
        match self {
            JournalResult::Ok(s) | JournalResult::Error(s) => s.len(),
        }
    }
}

impl JournalCall {
    /// Bytes this call adds to a journal (its texts; JSON framing is not counted).
    pub(crate) fn size(&self) -> usize {
        self.category.len() + self.name.len() + self.args_json.len() + self.result.len()
    }
}

/// Trap payload: a replayed cell called a tool other than the journal says it did.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ReplayDiverged(pub(crate) String);

/// The tool calls of the current cell: recorded as they happen, and on restore answered from the
/// journal (in order, each checked against what the guest asks for).
#[derive(Debug, Default)]
pub(crate) struct CallJournal {
    /// Calls of the cell being replayed, still to answer; None when not replaying.
    pub(crate) replay: Option<VecDeque<JournalCall>>,
    /// Calls of the current cell.
    pub(crate) recorded: Vec<JournalCall>,
}

impl CallJournal {
    /// The journal's answer to this call when replaying: Some(Ok) if it is the call recorded
    /// next, Some(Err) if the guest asks for something else. None when not replaying.
    pub(crate) fn replayed(
        &mut self,
        category: &str,
        name: &str,
        args_json: &str,
    ) -> Option<Result<Result<String, String>, ReplayDiverged>> {
        let replay = self.replay.as_mut()?;
        Some(match replay.pop_front() {
            Some(call)
                if call.category == category
                    && call.name == name
                    && call.args_json == args_json =>
            {
                Ok(call.result.answer())
            }
            Some(call) => Err(ReplayDiverged(format!(
                "it called {category}/{name} where the journal has {}/{} (or other arguments)",
                call.category, call.name
            ))),
            None => Err(ReplayDiverged(format!(
                "it called {category}/{name} after the journal's last call of the cell"
            ))),
        })
    }
}
