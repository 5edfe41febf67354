//! Dynamic tools over MCP: `define_tool`, `list_dynamic_tools`, `invoke_dynamic_tool`. A
//! refusal or a failing tool is a tool result with `isError` (the model reads why and tries
//! again); promotion, activation and rollback need a human's approval and are not here.

use std::sync::Arc;

use codecell::{DynamicToolError, DynamicTools, Manifest};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use crate::error::ServeError;
use crate::execute::clip;

/// The names of the dynamic-tool tools.
pub(crate) const NAMES: [&str; 3] = ["define_tool", "list_dynamic_tools", "invoke_dynamic_tool"];

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// Their definitions, as `tools/list` shows them.
pub(crate) fn tools() -> Vec<Tool> {
    let schema = json!({"type": "object"});
    vec![
        Tool::new(
            "define_tool",
            "Define a session tool from Python source with exactly one `def execute(args)`. It is \
             validated (restricted builtins, an import allowlist), smoke-tested with smoke_args \
             in a fresh sandbox, and its result checked against output_schema before it is \
             stored. Call it with invoke_dynamic_tool.",
            object(json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "Tool name: a lower-case identifier."},
                    "description": {"type": "string"},
                    "input_schema": schema,
                    "output_schema": schema,
                    "implementation": {"type": "string", "description": "Python source defining execute(args)."},
                    "smoke_args": {"type": "object", "description": "Arguments for the smoke test."},
                    "ttl_s": {"type": "number", "description": "Seconds the session version lives."}
                },
                "required": ["name", "description", "input_schema", "output_schema", "implementation"]
            })),
        ),
        Tool::new(
            "list_dynamic_tools",
            "List the dynamic tools this session resolves: name, description, schemas, scope.",
            object(json!({"type": "object", "properties": {}, "additionalProperties": false})),
        ),
        Tool::new(
            "invoke_dynamic_tool",
            "Run a dynamic tool in a fresh sandbox: its arguments are checked against its \
             input_schema and its result against its output_schema.",
            object(json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "args": {"type": "object"}
                },
                "required": ["name"],
                "additionalProperties": false
            })),
        ),
    ]
}

fn summary(m: &Manifest) -> Value {
    json!({
        "name": m.name,
        "description": m.description,
        "input_schema": m.input_schema,
        "output_schema": m.output_schema,
        "scope": m.scope.as_str(),
        "manifest_id": m.manifest_id,
        "imports": m.imports,
        "expires_at": m.expires_at,
    })
}

fn done(value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(value);
    result
}

fn refused(error: &DynamicToolError) -> CallToolResult {
    let value = json!({"error": {"kind": error.code(), "message": error.to_string()}});
    let mut result = CallToolResult::error(vec![ContentBlock::text(error.to_string())]);
    result.structured_content = Some(value);
    result
}

/// Runs one of [`NAMES`]; a client's cancellation drops the define or the invocation.
pub(crate) async fn call(
    store: &DynamicTools,
    name: &str,
    arguments: Option<&JsonObject>,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ServeError> {
    let work = async {
        match name {
            "define_tool" => {
                let spec = Value::Object(arguments.cloned().unwrap_or_default());
                Ok(match store.define(&spec).await {
                    Ok(manifest) => done(summary(&manifest)),
                    Err(e) => refused(&e),
                })
            }
            "list_dynamic_tools" => {
                if let Some(key) = arguments.and_then(|a| a.keys().next()) {
                    return Err(unknown_argument(name, key));
                }
                let tools: Vec<Value> = store.tools().iter().map(summary).collect();
                Ok(done(json!({"tools": tools})))
            }
            _ => {
                let empty = JsonObject::new();
                let arguments = arguments.unwrap_or(&empty);
                if let Some(key) = arguments.keys().find(|k| *k != "name" && *k != "args") {
                    return Err(unknown_argument(name, key));
                }
                let Some(Value::String(tool)) = arguments.get("name") else {
                    return Err(ServeError::BadArguments(
                        "invoke_dynamic_tool needs a \"name\" string".to_string(),
                    ));
                };
                let args = arguments.get("args").cloned().unwrap_or_else(|| json!({}));
                Ok(match store.invoke(tool, &args).await {
                    Ok(value) => done(json!({"result": value})),
                    Err(e) => refused(&e),
                })
            }
        }
    };
    tokio::select! {
        result = work => result,
        () = context.ct.cancelled() => Err(ServeError::Cancelled),
    }
}

fn unknown_argument(tool: &str, key: &str) -> ServeError {
    ServeError::BadArguments(format!("{tool}: unknown argument {:?}", clip(key, 60)))
}
