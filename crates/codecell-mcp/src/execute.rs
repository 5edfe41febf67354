//! `execute_code` over MCP: the tool's definition, one run per call, and its outcome as a tool
//! result (the rendered text for the model, the `--json` outcome as `structuredContent`).

use std::sync::Arc;
use std::time::Duration;

use codecell::{CodeMode, Outcome};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ProgressNotificationParam, Tool};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use crate::error::ServeError;

/// Largest `code` argument accepted, in bytes (the CLI's snippet limit).
pub const MAX_CODE_BYTES: usize = 1 << 20;

/// How often a run that is still going reports progress, when the client asked for it.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The `execute_code` tool as MCP lists it: the description teaches the tree and `call_tool`.
pub(crate) fn tool(code_mode: &CodeMode) -> Tool {
    let spec = code_mode.execute_code_tool();
    let description = format!(
        "{}\n\nInside the code: ls(path) lists the tool tree (start with ls(\"tools/\")), \
         read(path) shows a tool's typed stub, call_tool(category, name, **kwargs) calls it \
         (stubs are importable too: from tools.<category> import <tool>). Only what is \
         printed comes back. Each call runs in a fresh interpreter: nothing persists between \
         calls.",
        spec.description
    );
    let mut tool = Tool::new("execute_code", description, object(spec.input_schema));
    tool.output_schema = Some(Arc::new(object(outcome_schema())));
    tool
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The JSON Schema of `structuredContent`: exactly `codecell run --json`'s outcome.
pub fn outcome_schema() -> Value {
    let report = json!({
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "message": {"type": "string"},
            "traceback": {"type": "string"}
        },
        "required": ["type", "message", "traceback"]
    });
    json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["ok", "error", "limit"]},
            "stdout": {"type": "string"},
            "stderr": {"type": "string"},
            "truncated": {"type": "boolean"},
            "error": {"anyOf": [report, {"type": "null"}]},
            "limit": {"anyOf": [
                {"type": "string", "enum": ["fuel", "memory", "deadline", "output", "tool_calls"]},
                {"type": "null"}
            ]},
            "fuel_used": {"type": "integer", "minimum": 0},
            "duration_ms": {"type": "number", "minimum": 0},
            "tool_calls": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "category": {"type": "string"},
                    "name": {"type": "string"},
                    "ok": {"type": "boolean"},
                    "duration_us": {"type": "integer", "minimum": 0},
                    "args_bytes": {"type": "integer", "minimum": 0},
                    "result_bytes": {"type": "integer", "minimum": 0}
                },
                "required": ["category", "name", "ok", "duration_us", "args_bytes", "result_bytes"]
            }}
        },
        "required": ["status", "stdout", "stderr", "truncated", "error", "limit",
                     "fuel_used", "duration_ms", "tool_calls"]
    })
}

/// The `code` argument, refused when missing, not a string, too long, or beside other fields.
pub(crate) fn code_argument(arguments: Option<&JsonObject>) -> Result<String, ServeError> {
    let arguments = arguments.ok_or(ServeError::BadArguments(
        "execute_code needs an object with a \"code\" string".to_string(),
    ))?;
    if let Some(key) = arguments.keys().find(|k| k.as_str() != "code") {
        return Err(ServeError::BadArguments(format!(
            "execute_code takes only \"code\"; unknown argument {:?}",
            clip(key, 60)
        )));
    }
    match arguments.get("code") {
        Some(Value::String(code)) if code.len() <= MAX_CODE_BYTES => Ok(code.clone()),
        Some(Value::String(code)) => Err(ServeError::BadArguments(format!(
            "code is {} bytes; the limit is {MAX_CODE_BYTES}",
            code.len()
        ))),
        Some(_) => Err(ServeError::BadArguments(
            "\"code\" must be a string".to_string(),
        )),
        None => Err(ServeError::BadArguments(
            "execute_code needs a \"code\" string".to_string(),
        )),
    }
}

pub(crate) fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Runs `code` until it ends or the client cancels the request (the run is dropped, which
/// stops its guest); reports progress each second to a client that sent a progress token.
pub(crate) async fn run(
    code_mode: &CodeMode,
    code: &str,
    context: &RequestContext<RoleServer>,
) -> Result<Outcome, ServeError> {
    let run = code_mode.execute_code(code);
    tokio::pin!(run);
    let token = context.meta.get_progress_token();
    let started = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval_at(started + PROGRESS_EVERY, PROGRESS_EVERY);
    loop {
        tokio::select! {
            outcome = &mut run => return outcome.map_err(ServeError::Run),
            () = context.ct.cancelled() => return Err(ServeError::Cancelled),
            _ = ticks.tick(), if token.is_some() => {
                let Some(token) = token.clone() else { continue };
                let seconds = started.elapsed().as_secs_f64();
                let note = ProgressNotificationParam::new(token, seconds)
                    .with_message(format!("running for {seconds:.0} s"));
                // A client that stopped listening for progress still gets its result.
                let _ = context.peer.notify_progress(note).await;
            }
        }
    }
}

/// The tool result: the text a model reads, the outcome as `structuredContent`, and
/// `isError` for a run that raised or hit a limit.
pub(crate) fn result(outcome: &Outcome) -> CallToolResult {
    let text = vec![ContentBlock::text(CodeMode::render_for_model(outcome))];
    let mut result = if outcome.is_ok() {
        CallToolResult::success(text)
    } else {
        CallToolResult::error(text)
    };
    result.structured_content = serde_json::to_value(outcome).ok();
    result
}
