//! The three host functions: `ls`, `read` and `call-tool`, the guest's only way out.
//!
//! Errors the guest can act on (a bad path, a refused argument, a failing tool) come back as
//! `Err(message)` and become Python exceptions. Exceeding a run-wide limit traps instead
//! ([`LimitStop`]), so the guest cannot catch it and carry on.
//!
//! Every buffer the guest sizes is bounded here before the host keeps it: arguments by
//! `max_tool_args_bytes`, results and tool error messages by `max_tool_result_bytes`, and the
//! category and tool names a call record keeps by the catalog's own name limit.

use crate::bindings::codecell::guest::host::Host;
use crate::budget::CallerBudget;
use crate::ending::{LimitStop, clip};
use crate::outcome::{LimitKind, ToolCallRecord};
use crate::session::{JournalCall, JournalResult, ReplayDiverged};
use crate::state::RunState;
use codecell_catalog::{Catalog, MAX_NAME_BYTES};
use std::time::Instant;

/// Why a call naming `category`/`name` is refused before anything looks them up: a name over
/// the catalog's limit (no catalog has such a name, and the record keeps only that much).
fn name_refusal(category: &str, name: &str) -> Option<String> {
    [("category", category), ("tool name", name)]
        .into_iter()
        .find(|(_, given)| given.len() > MAX_NAME_BYTES)
        .map(|(what, given)| {
            format!(
                "the {what} is {} bytes, over the limit of {MAX_NAME_BYTES} bytes",
                given.len()
            )
        })
}

fn no_catalog() -> String {
    "no tools are available in this run".to_string()
}

impl crate::bindings::codecell::guest::types::Host for RunState {}

impl Host for RunState {
    fn ls(&mut self, path: String) -> wasmtime::Result<Result<Vec<String>, String>> {
        Ok(match &self.catalog {
            Some(catalog) => catalog.ls(&path).map_err(|e| e.to_string()),
            None => Err(no_catalog()),
        })
    }

    fn read(&mut self, path: String) -> wasmtime::Result<Result<String, String>> {
        Ok(match &self.catalog {
            Some(catalog) => catalog
                .read(&path)
                .map(|s| s.to_string())
                .map_err(|e| e.to_string()),
            None => Err(no_catalog()),
        })
    }

    async fn call_tool(
        &mut self,
        category: String,
        name: String,
        args_json: String,
    ) -> wasmtime::Result<Result<String, String>> {
        if self.tool_calls.len() >= self.limits.max_tool_calls as usize {
            return Err(LimitStop::trap(LimitKind::ToolCalls));
        }
        let started = Instant::now();
        let refused = name_refusal(&category, &name);
        // Recorded before the call, so a call the deadline cuts off is still in the record
        // (`ok: false`); completed below. The names move in (cut in place when too long).
        let index = self.tool_calls.len();
        self.tool_calls.push(ToolCallRecord {
            category: clip(category, MAX_NAME_BYTES).0,
            name: clip(name, MAX_NAME_BYTES).0,
            ok: false,
            duration_us: 0,
            args_bytes: args_json.len(),
            result_bytes: 0,
        });
        // Only owned values cross the await: the store data itself is not `Sync`.
        let call = Call {
            catalog: self.catalog.clone(),
            max_args: self.limits.max_tool_args_bytes,
            max_result: self.limits.max_tool_result_bytes,
        };
        // A tool that starts a run of its own (a dynamic tool) gets what this run has left.
        let budget = CallerBudget::new(
            self.limits.fuel.saturating_sub(self.nested_fuel),
            self.limits.memory_bytes,
            self.deadline
                .unwrap_or_else(|| started + self.limits.deadline),
        );
        let (result, nested) = match refused {
            Some(refusal) => (Err(refusal), 0),
            None => {
                let record = &self.tool_calls[index];
                // A session being restored answers from its journal instead of calling again.
                match self.journal.as_mut().and_then(|journal| {
                    journal.replayed(&record.category, &record.name, &args_json)
                }) {
                    // A journal is input like any other: its answers get the same cap.
                    Some(Ok(answer))
                        if answer.as_ref().map_or_else(String::len, String::len)
                            > call.max_result =>
                    {
                        return Err(wasmtime::Error::new(ReplayDiverged(format!(
                            "the journal's answer to {}/{} is over the limit of {} bytes",
                            record.category, record.name, call.max_result
                        ))));
                    }
                    Some(Ok(answer)) => (answer, 0),
                    Some(Err(diverged)) => return Err(wasmtime::Error::new(diverged)),
                    None => {
                        let args = self.journal.is_some().then(|| args_json.clone());
                        let served = budget
                            .serve(call.dispatch(&record.category, &record.name, args_json))
                            .await;
                        if let (Some(journal), Some(args_json)) = (self.journal.as_mut(), args) {
                            let record = &self.tool_calls[index];
                            journal.recorded.push(JournalCall {
                                category: record.category.clone(),
                                name: record.name.clone(),
                                args_json,
                                result: JournalResult::of(&served.0),
                            });
                        }
                        served
                    }
                }
            }
        };
        self.nested_fuel = self.nested_fuel.saturating_add(nested);
        let now = Instant::now();
        let stop = if nested > 0 && self.nested_fuel >= self.limits.fuel {
            Some(LimitKind::Fuel)
        } else if self.deadline.is_some_and(|d| now >= d) {
            // Host work cannot be interrupted mid-poll: a call that returns after the deadline
            // ends the run there, so a run past its deadline is never reported `ok`.
            Some(LimitKind::Deadline)
        } else {
            None
        };
        let record = &mut self.tool_calls[index];
        record.ok = result.is_ok() && stop.is_none();
        record.duration_us = (now - started).as_micros() as u64;
        record.result_bytes = match &result {
            Ok(s) | Err(s) => s.len(),
        };
        if let Some(kind) = stop {
            return Err(LimitStop::trap(kind));
        }
        Ok(result)
    }
}

/// What one tool call needs from the run, detached from the store.
struct Call {
    catalog: Option<Catalog>,
    max_args: usize,
    max_result: usize,
}

impl Call {
    async fn dispatch(
        self,
        category: &str,
        name: &str,
        args_json: String,
    ) -> Result<String, String> {
        let Some(catalog) = self.catalog else {
            return Err(no_catalog());
        };
        if args_json.len() > self.max_args {
            return Err(format!(
                "arguments of {category}/{name} are {} bytes, over the limit of {} bytes",
                args_json.len(),
                self.max_args
            ));
        }
        let args: serde_json::Value = serde_json::from_str(&args_json)
            .map_err(|e| format!("arguments of {category}/{name} are not valid JSON: {e}"))?;
        // A slow tool is bounded by the run's deadline: the whole run future is under a timeout.
        let value = catalog.call(category, name, args).await.map_err(|e| {
            // A tool's error message is guest-bound text like a result: the same cap applies.
            clip(e.to_string(), self.max_result).0
        })?;
        let text = serde_json::to_string(&value)
            .map_err(|e| format!("result of {category}/{name} is not JSON: {e}"))?;
        if text.len() > self.max_result {
            return Err(format!(
                "result of {category}/{name} is {} bytes, over the limit of {} bytes",
                text.len(),
                self.max_result
            ));
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codecell_catalog::{HandlerError, ToolSpec, handler_fn};
    use serde_json::json;

    fn catalog() -> Catalog {
        let echo = ToolSpec::new("echo", "Echo.", json!({"type": "object"}));
        let loud = ToolSpec::new("loud", "Fails at length.", json!({"type": "object"}));
        Catalog::builder()
            .category("misc", "Test tools.")
            .tool("misc", echo, handler_fn(Ok))
            .tool(
                "misc",
                loud,
                handler_fn(|_| Err(HandlerError::new("e".repeat(10_000)))),
            )
            .build()
            .unwrap()
    }

    fn call(max_args: usize, max_result: usize) -> Call {
        Call {
            catalog: Some(catalog()),
            max_args,
            max_result,
        }
    }

    #[tokio::test]
    async fn a_call_reaches_its_handler_and_comes_back_as_json() {
        let got = call(1000, 1000)
            .dispatch("misc", "echo", r#"{"a":[1,2]}"#.into())
            .await;
        assert_eq!(got.unwrap(), r#"{"a":[1,2]}"#);
    }

    #[tokio::test]
    async fn every_guest_sized_text_is_bounded() {
        let long = "n".repeat(MAX_NAME_BYTES + 1);
        let refused = name_refusal(&long, "echo").expect("refused");
        assert!(refused.contains("category is 129 bytes, over the limit of 128 bytes"));
        assert!(name_refusal("misc", &long).unwrap().contains("tool name"));
        assert_eq!(name_refusal("misc", "echo"), None);
        let big_args = format!(r#"{{"a":"{}"}}"#, "x".repeat(100));
        let refused = call(50, 1000)
            .dispatch("misc", "echo", big_args.clone())
            .await;
        assert!(refused.unwrap_err().contains("over the limit of 50 bytes"));
        let refused = call(1000, 50).dispatch("misc", "echo", big_args).await;
        assert!(refused.unwrap_err().contains("result of misc/echo"));
        let clipped = call(1000, 300).dispatch("misc", "loud", "{}".into()).await;
        assert!(clipped.unwrap_err().len() <= 300);
    }

    #[tokio::test]
    async fn without_a_catalog_every_call_is_refused() {
        let none = Call {
            catalog: None,
            max_args: 10,
            max_result: 10,
        };
        let refused = none.dispatch("misc", "echo", "{}".into()).await;
        assert_eq!(refused.unwrap_err(), no_catalog());
    }
}
