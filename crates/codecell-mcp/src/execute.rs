//! `execute_code` over MCP: the tool's definition, one run per call, and its outcome as a tool
//! result (the rendered text for the model, the `--json` outcome as `structuredContent`).

use std::sync::Arc;
use std::time::Duration;

use codecell::{CodeMode, Outcome, SessionState, Turn};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ProgressNotificationParam, Tool};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use crate::error::ServeError;

/// Largest `code` argument accepted, in bytes (the CLI's snippet limit).
pub const MAX_CODE_BYTES: usize = 1 << 20;

/// How often a run that is still going reports progress, when the client asked for it.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The `execute_code` tool as MCP lists it: the description teaches the tree and `call_tool`,
/// and, when the server keeps sessions, the `session_id` argument.
pub(crate) fn tool(code_mode: &CodeMode, sessions: bool) -> Tool {
    let spec = code_mode.execute_code_tool();
    let persistence = if sessions {
        "Without session_id each call runs in a fresh interpreter. With session_id \"new\" the \
         call starts a session and the result gives its session_id: pass it to later calls \
         and they run in the same interpreter, seeing its variables, imports and functions."
    } else {
        "Each call runs in a fresh interpreter: nothing persists between calls."
    };
    let description = format!(
        "{}\n\nInside the code: ls(path) lists the tool tree (start with ls(\"tools/\")), \
         read(path) shows a tool's typed stub, call_tool(category, name, **kwargs) calls it \
         (stubs are importable too: from tools.<category> import <tool>). Only what is \
         printed comes back. {persistence}",
        spec.description
    );
    let mut schema = spec.input_schema;
    if sessions {
        schema["properties"]["session_id"] = json!({
            "type": "string",
            "description": "\"new\" to start a session, or the session_id a result gave, to continue it."
        });
    }
    let mut tool = Tool::new("execute_code", description, object(schema));
    tool.output_schema = Some(Arc::new(object(outcome_schema())));
    tool
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The JSON Schema of `structuredContent`: `codecell run --json`'s outcome, plus `session_id`
/// and `session_state` for a session's turn.
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
                    "start_us": {"type": "integer", "minimum": 0},
                    "end_us": {"type": "integer", "minimum": 0},
                    "args_bytes": {"type": "integer", "minimum": 0},
                    "result_bytes": {"type": "integer", "minimum": 0}
                },
                "required": ["category", "name", "ok", "duration_us", "args_bytes", "result_bytes"]
            }},
            "session_id": {"type": "string"},
            "session_state": {"type": "string", "enum": ["live", "restarted", "ended"]}
        },
        "required": ["status", "stdout", "stderr", "truncated", "error", "limit",
                     "fuel_used", "duration_ms", "tool_calls"]
    })
}

/// The arguments of one `execute_code` call.
pub(crate) struct ExecuteArgs {
    /// The code to run.
    pub(crate) code: String,
    /// `"new"` or a session's id; None for a fresh interpreter.
    pub(crate) session_id: Option<String>,
}

/// Largest `session_id` accepted, in bytes (ids the server gives are 32).
const MAX_SESSION_ID_BYTES: usize = 64;

/// The arguments, refused when `code` is missing, not a string or too long, or when another
/// field is there (`session_id` only where the server keeps sessions).
pub(crate) fn arguments(
    arguments: Option<&JsonObject>,
    sessions: bool,
) -> Result<ExecuteArgs, ServeError> {
    let arguments = arguments.ok_or(ServeError::BadArguments(
        "execute_code needs an object with a \"code\" string".to_string(),
    ))?;
    let known = |k: &str| k == "code" || (sessions && k == "session_id");
    if let Some(key) = arguments.keys().find(|k| !known(k)) {
        let takes = if sessions {
            "\"code\" and \"session_id\""
        } else {
            "only \"code\""
        };
        return Err(ServeError::BadArguments(format!(
            "execute_code takes {takes}; unknown argument {:?}",
            clip(key, 60)
        )));
    }
    let code = match arguments.get("code") {
        Some(Value::String(code)) if code.len() <= MAX_CODE_BYTES => code.clone(),
        Some(Value::String(code)) => {
            return Err(ServeError::BadArguments(format!(
                "code is {} bytes; the limit is {MAX_CODE_BYTES}",
                code.len()
            )));
        }
        Some(_) => {
            return Err(ServeError::BadArguments(
                "\"code\" must be a string".to_string(),
            ));
        }
        None => {
            return Err(ServeError::BadArguments(
                "execute_code needs a \"code\" string".to_string(),
            ));
        }
    };
    let session_id = match arguments.get("session_id") {
        None => None,
        Some(Value::String(id)) if id.len() <= MAX_SESSION_ID_BYTES => Some(id.clone()),
        Some(_) => {
            return Err(ServeError::BadArguments(format!(
                "\"session_id\" must be \"new\" or a session id of at most {MAX_SESSION_ID_BYTES} bytes"
            )));
        }
    };
    Ok(ExecuteArgs { code, session_id })
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

/// Runs `run` (a fresh run or a session's turn) until it ends or the client cancels the request
/// (the run is dropped, which stops its guest); reports progress each second to a client that
/// sent a progress token.
pub(crate) async fn run<T>(
    run: impl Future<Output = Result<T, ServeError>>,
    context: &RequestContext<RoleServer>,
) -> Result<T, ServeError> {
    tokio::pin!(run);
    let token = context.meta.get_progress_token();
    let started = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval_at(started + PROGRESS_EVERY, PROGRESS_EVERY);
    loop {
        tokio::select! {
            outcome = &mut run => return outcome,
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

/// A session turn's tool result: [`result`]'s, with the session's id and state added to the
/// text and to `structuredContent` (`session_id`, `session_state`).
pub(crate) fn session_result(turn: &Turn, id: &str) -> CallToolResult {
    let mut result = result(&turn.outcome);
    let (state, note) = match &turn.state {
        SessionState::Live => ("live", format!("[session_id {id}, turn {}]", turn.number)),
        SessionState::Restarted => (
            "restarted",
            format!(
                "[session_id {id}: this turn ended the interpreter; the session starts over, every variable is gone]"
            ),
        ),
        SessionState::Ended(reason) => ("ended", format!("[session {id} has ended: {reason}]")),
        _ => ("ended", format!("[session {id} has ended]")),
    };
    result.content.push(ContentBlock::text(note));
    if let Some(Value::Object(map)) = result.structured_content.as_mut() {
        map.insert("session_id".into(), Value::String(id.to_string()));
        map.insert("session_state".into(), Value::String(state.to_string()));
    }
    result
}
