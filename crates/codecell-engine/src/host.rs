//! The three host functions: `ls`, `read` and `call-tool`, the guest's only way out.
//!
//! Errors the guest can act on (a bad path, a refused argument, a failing tool) come back as
//! `Err(message)` and become Python exceptions. Exceeding a run-wide limit traps instead, so the
//! guest cannot catch it and carry on.

use crate::bindings::codecell::guest::host::Host;
use crate::outcome::{LimitKind, ToolCallRecord};
use crate::state::RunState;
use std::time::Instant;

/// Marker error: a host function stopped the run because a limit was exceeded.
#[derive(Debug, thiserror::Error)]
#[error("run stopped: {0:?} limit exceeded")]
pub(crate) struct LimitTrap(pub(crate) LimitKind);

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
            self.stopped_by = Some(LimitKind::ToolCalls);
            return Err(wasmtime::Error::new(LimitTrap(LimitKind::ToolCalls)));
        }
        let started = Instant::now();
        let args_bytes = args_json.len();
        // Only owned values cross the await: the store data itself is not `Sync`.
        let call = Call {
            catalog: self.catalog.clone(),
            max_args: self.limits.max_tool_args_bytes,
            max_result: self.limits.max_tool_result_bytes,
        };
        let result = call.dispatch(&category, &name, args_json).await;
        let result_bytes = match &result {
            Ok(s) | Err(s) => s.len(),
        };
        self.tool_calls.push(ToolCallRecord {
            category,
            name,
            ok: result.is_ok(),
            duration_us: started.elapsed().as_micros() as u64,
            args_bytes,
            result_bytes,
        });
        Ok(result)
    }
}

/// What one tool call needs from the run, detached from the store.
struct Call {
    catalog: Option<std::sync::Arc<codecell_catalog::Catalog>>,
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
        let value = catalog
            .call(category, name, args)
            .await
            .map_err(|e| e.to_string())?;
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
