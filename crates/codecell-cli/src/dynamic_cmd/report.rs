//! What `codecell tool` prints: one JSON object with `"ok"` (and the store's `load_errors`), or
//! a few lines for people. Refusals carry a stable `kind` so scripts need not parse messages.

use crate::failure::Failure;
use crate::out;
use codecell::{DynamicToolError, Event, Manifest, VersionsReport, canonical};
use serde_json::{Value, json};

/// A successful command's output, in both forms.
pub struct Report {
    json: Value,
    human: String,
}

impl Report {
    /// Prints the report on stdout; load errors go in the object, or to stderr as warnings.
    pub fn print(mut self, as_json: bool, load_errors: &[String]) -> Result<(), Failure> {
        if as_json {
            self.json["load_errors"] = json!(load_errors);
            out::line(&canonical::to_string(&self.json))
        } else {
            out::line(&out::guest_stdout(self.human.trim_end()))?;
            for error in load_errors {
                out::stderr(&format!(
                    "codecell: warning: {}\n",
                    out::guest_stderr(error)
                ));
            }
            Ok(())
        }
    }
}

/// Prints `{"ok": false, "error": {"kind", "message"}, "load_errors"}`.
pub fn print_refusal(kind: &str, message: &str, load_errors: &[String]) -> Result<(), Failure> {
    let value = json!({
        "ok": false,
        "error": {"kind": kind, "message": message},
        "load_errors": load_errors,
    });
    out::line(&canonical::to_string(&value))
}

/// After `define`: the manifest record exactly as stored.
pub fn defined(m: &Manifest) -> Report {
    Report {
        json: json!({"ok": true, "manifest": m.record()}),
        human: format!(
            "defined {} {} (session {}, imports [{}], expires in {} s)",
            m.name,
            m.manifest_id,
            m.session_id,
            m.imports.join(", "),
            m.ttl_s
        ),
    }
}

/// After `invoke`: the result and the version that produced it.
pub fn invoked(m: &Manifest, result: Value) -> Report {
    let human = canonical::to_string(&result);
    Report {
        json: json!({
            "ok": true,
            "name": m.name,
            "scope": m.scope.as_str(),
            "manifest_id": m.manifest_id,
            "result": result,
        }),
        human,
    }
}

/// After `list`: every tool that resolves, with what a reviewer needs (source included).
pub fn listed(tools: &[Manifest]) -> Report {
    let entries: Vec<Value> = tools
        .iter()
        .map(|m| {
            json!({
                "name": m.name,
                "scope": m.scope.as_str(),
                "manifest_id": m.manifest_id,
                "description": m.description,
                "imports": m.imports,
                "input_schema": m.input_schema,
                "output_schema": m.output_schema,
                "implementation": m.implementation,
                "expires_at": m.expires_at,
            })
        })
        .collect();
    let human = tools
        .iter()
        .map(|m| {
            format!(
                "{}\t{}\t{}\t{}\n",
                m.name,
                m.scope.as_str(),
                m.manifest_id,
                m.description
            )
        })
        .collect::<String>();
    Report {
        json: json!({"ok": true, "tools": entries}),
        human: if human.is_empty() {
            "no dynamic tools".to_string()
        } else {
            human
        },
    }
}

/// After `versions`: versions with flags, then the audit events.
pub fn versions(report: &VersionsReport) -> Report {
    let mut human = String::new();
    for v in &report.versions {
        let flags = match (v.active, v.effective) {
            (true, true) => "active, effective",
            (true, false) => "active",
            (false, true) => "effective",
            (false, false) => "-",
        };
        human.push_str(&format!(
            "{}\t{}\t{}\t{flags}\n",
            v.name, v.scope, v.manifest_id
        ));
    }
    for e in &report.events {
        human.push_str(&format!(
            "event {}\t{}\t{:?}\t{}\t{}\n",
            e.created_at_ns, e.scope, e.operation, e.name, e.manifest_id
        ));
    }
    let mut value = serde_json::to_value(report).unwrap_or_else(|_| json!({}));
    value["ok"] = json!(true);
    Report {
        json: value,
        human: if human.is_empty() {
            "no project or global versions".to_string()
        } else {
            human
        },
    }
}

/// After `promote`, `activate` or `rollback`: the version now active and the event appended.
pub fn governed(verb: &str, m: &Manifest, event: Option<Event>) -> Report {
    let event_id = event
        .as_ref()
        .map_or("-", |e| e.event_id.as_str())
        .to_string();
    Report {
        json: json!({"ok": true, "manifest": m.record(), "event": event}),
        human: format!(
            "{verb} {} in {} scope: {} is active (event {event_id})",
            m.name,
            m.scope.as_str(),
            m.manifest_id
        ),
    }
}

/// The registry's message, with what to do next where that is not obvious.
pub fn explain(error: &DynamicToolError) -> String {
    match error {
        DynamicToolError::ApprovalRequired(_) => format!(
            "{error}: a human must review the tool (`codecell tool list --json` shows its source) and re-run with --approve"
        ),
        DynamicToolError::Unknown(_) => {
            format!("{error}; `codecell tool list` shows the tools this session resolves")
        }
        _ => error.to_string(),
    }
}
