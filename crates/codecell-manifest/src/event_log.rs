//! The append-only event log of promote / activate / rollback, and its replay into active
//! versions. One canonical JSON object per line; lines are never rewritten.

use crate::manifest::{Scope, is_manifest_id, is_valid_name};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// What an event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// A session version was promoted (and activated) in a scope.
    Promote,
    /// An existing version was activated.
    Activate,
    /// The version active before the current one was re-activated.
    Rollback,
}

/// One audit event, as stored on its line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Unique id of the event.
    pub event_id: String,
    /// What happened.
    pub operation: Operation,
    /// When, in nanoseconds since the epoch.
    pub created_at_ns: u64,
    /// `project` or `global` (serialised as those words).
    pub scope: Scope,
    /// Project id, or "" for global.
    pub scope_id: String,
    /// Tool name.
    pub name: String,
    /// The version that is active after this event.
    pub manifest_id: String,
    /// For a rollback: the version that was active before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_manifest_id: Option<String>,
    /// Root frame (session) of the actor.
    pub actor_root_frame_id: String,
    /// Project of the actor.
    pub actor_project_id: String,
}

impl Event {
    /// The line written to the log (canonical JSON, no newline).
    pub fn to_line(&self) -> String {
        crate::canonical::to_string(&serde_json::to_value(self).unwrap_or_default())
    }

    fn check(&self) -> Result<(), String> {
        if self.scope == Scope::Session {
            return Err(format!("invalid scope {:?}", self.scope.as_str()));
        }
        if (self.scope == Scope::Global) != self.scope_id.is_empty() {
            return Err("scope id does not fit the scope".into());
        }
        if !is_valid_name(&self.name) {
            return Err(format!("invalid tool name {:?}", self.name));
        }
        let ids = std::iter::once(&self.manifest_id).chain(self.previous_manifest_id.as_ref());
        if let Some(bad) = ids.into_iter().find(|id| !is_manifest_id(id)) {
            return Err(format!("invalid manifest id {bad:?}"));
        }
        if self.event_id.is_empty() {
            return Err("empty event id".into());
        }
        Ok(())
    }

    /// Whether the event concerns `name` in the given scope.
    pub fn concerns(&self, scope: Scope, scope_id: &str, name: Option<&str>) -> bool {
        self.scope == scope && self.scope_id == scope_id && name.is_none_or(|n| n == self.name)
    }
}

/// Parses the log's bytes: the valid events, and a message for each line that is not one (the
/// first [`MAX_LOAD_ERRORS`](crate::load_errors::MAX_LOAD_ERRORS), then a count of the rest).
/// A last line without its newline is a write that never finished: it is ignored and reported.
pub fn parse_log(bytes: &[u8], file: &str) -> (Vec<Event>, Vec<String>) {
    parse_log_keyed(bytes, file, None)
}

/// As [`parse_log`]; with a store key, a line counts only if its MAC (over its content and its
/// line number) verifies.
pub fn parse_log_keyed(bytes: &[u8], file: &str, key: Option<&[u8]>) -> (Vec<Event>, Vec<String>) {
    let mut events = Vec::new();
    let mut errors = crate::load_errors::Sink::new(file);
    let mut rest = bytes;
    let mut number = 0usize;
    while !rest.is_empty() {
        number += 1;
        let (line, complete) = match rest.iter().position(|b| *b == b'\n') {
            Some(end) => {
                let line = &rest[..end];
                rest = &rest[end + 1..];
                (line, true)
            }
            None => {
                let line = rest;
                rest = &[];
                (line, false)
            }
        };
        // Unterminated, or closed by a later writer's repair: an interrupted write either way.
        if !complete || line.last() == Some(&crate::store::fsutil::TORN_MARK) {
            errors.push_with(|| {
                format!("{file}: line {number} is incomplete (a torn write); ignored")
            });
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_line(line, number, key) {
            Ok(event) => events.push(event),
            Err(e) => {
                // Formatted only if kept: a log of a million junk lines costs a counter.
                errors.push_with(|| format!("{file}: line {number} is not a valid event: {e}"));
            }
        }
    }
    (events, errors.finish())
}

/// Why a line is not an event, kept unformatted until a message is wanted.
enum LineError {
    Utf8(std::str::Utf8Error),
    Json(crate::canonical::CanonicalError),
    Shape(serde_json::Error),
    Invalid(String),
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::Utf8(e) => e.fmt(f),
            LineError::Json(e) => e.fmt(f),
            LineError::Shape(e) => e.fmt(f),
            LineError::Invalid(e) => f.write_str(e),
        }
    }
}

/// One complete line as an event: UTF-8, exact JSON, signed if there is a key, well-formed.
fn parse_line(line: &[u8], number: usize, key: Option<&[u8]>) -> Result<Event, LineError> {
    let text = std::str::from_utf8(line).map_err(LineError::Utf8)?;
    let mut value = crate::canonical::parse_exact(text).map_err(LineError::Json)?;
    if let Some(key) = key {
        let domain = crate::auth::event_domain(number);
        crate::auth::verify(key, &domain, &mut value)
            .map_err(|e| LineError::Invalid(format!("the line {e}")))?;
    }
    let event = serde_json::from_value::<Event>(value).map_err(LineError::Shape)?;
    event.check().map_err(LineError::Invalid)?;
    Ok(event)
}

/// The activation history of one name in one scope after replaying its events: the last entry
/// is active, the ones below it are what successive rollbacks return to.
pub fn replay(
    events: &[Event],
    scope: Scope,
    scope_id: &str,
    name: &str,
) -> (Vec<String>, Vec<String>) {
    let mut stack: Vec<String> = Vec::new();
    let mut errors = Vec::new();
    for event in events
        .iter()
        .filter(|e| e.concerns(scope, scope_id, Some(name)))
    {
        match event.operation {
            Operation::Promote | Operation::Activate => {
                if stack.last() != Some(&event.manifest_id) {
                    stack.push(event.manifest_id.clone());
                }
            }
            Operation::Rollback => {
                stack.pop();
                // The writer skipped versions that were unavailable; replay skips the same.
                while stack.last().is_some_and(|top| *top != event.manifest_id) {
                    stack.pop();
                }
                if stack.is_empty() {
                    errors.push(format!(
                        "event {}: rollback of {scope}:{name} to {} has no matching history",
                        event.event_id, event.manifest_id
                    ));
                    stack.push(event.manifest_id.clone());
                }
            }
        }
    }
    (stack, errors)
}

/// The version a rollback would re-activate: the newest entry below the current one whose
/// manifest is still available. `None` when there is no such entry.
pub fn rollback_target(history: &[String], available: &HashSet<String>) -> Option<String> {
    let below = history.len().checked_sub(1)?;
    history[..below]
        .iter()
        .rev()
        .find(|id| available.contains(*id))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(scope: Scope, scope_id: &str) -> Event {
        Event {
            event_id: "e1".into(),
            operation: Operation::Activate,
            created_at_ns: 7,
            scope,
            scope_id: scope_id.into(),
            name: "add".into(),
            manifest_id: format!("dyn-{}", "a".repeat(64)),
            previous_manifest_id: None,
            actor_root_frame_id: "s".into(),
            actor_project_id: "p".into(),
        }
    }

    #[test]
    fn a_scope_is_written_as_the_string_it_replaced() {
        let line = event(Scope::Project, "p").to_line();
        assert_eq!(
            line,
            format!(
                "{{\"actor_project_id\":\"p\",\"actor_root_frame_id\":\"s\",\"created_at_ns\":7,\"event_id\":\"e1\",\"manifest_id\":\"dyn-{}\",\"name\":\"add\",\"operation\":\"activate\",\"scope\":\"project\",\"scope_id\":\"p\"}}",
                "a".repeat(64)
            )
        );
        let (events, errors) = parse_log(format!("{line}\n").as_bytes(), "log");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(events, [event(Scope::Project, "p")]);
    }

    #[test]
    fn a_bad_scope_is_worded_as_before() {
        let session = event(Scope::Session, "p").to_line();
        let bogus = session.replace("\"session\"", "\"bogus\"");
        let (events, errors) = parse_log(format!("{session}\n{bogus}\n").as_bytes(), "log");
        assert!(events.is_empty());
        assert_eq!(
            errors,
            [
                "log: line 1 is not a valid event: invalid scope \"session\"",
                "log: line 2 is not a valid event: invalid scope \"bogus\"",
            ]
        );
    }
}
