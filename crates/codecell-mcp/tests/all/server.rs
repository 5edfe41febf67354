//! The `execute_code` server, driven in-process by rmcp's own client.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use codecell::{Catalog, CodeMode, DynamicTools, Limits, RegistryOptions, ToolSpec, handler_fn};
use codecell_mcp::{CodecellServer, MAX_CODE_BYTES, outcome_schema};
use rmcp::model::{CallToolRequestParams, NumberOrString, ProgressToken, RequestMetaObject};
use serde_json::{Value, json};

use crate::common::{connect, engine, fixture, text};

fn demo_server() -> CodecellServer {
    let catalog = Catalog::from_file(&fixture("demo/catalog.json")).expect("demo catalog");
    CodecellServer::new(CodeMode::new(engine(), catalog))
}

fn args(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("arguments are objects"),
    }
}

fn execute(code: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("execute_code").with_arguments(args(json!({"code": code})))
}

#[tokio::test]
async fn tools_list_offers_execute_code_with_the_outcome_schema_and_the_prompt_as_instructions() {
    let (client, _) = connect(demo_server()).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["execute_code"]);
    let schema = tools[0].output_schema.as_ref().expect("an output schema");
    assert_eq!(Value::Object((**schema).clone()), outcome_schema());
    assert!(
        tools[0]
            .description
            .as_deref()
            .unwrap()
            .contains("call_tool(")
    );
    let info = client.peer_info().expect("the server introduced itself");
    let instructions = info.instructions.as_deref().unwrap_or_default();
    assert!(instructions.contains("execute_code"), "{instructions}");
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "needs the MCP SDK and reference servers (python3 and node under target/mcp), which a Windows program under Wine cannot start"
)]
async fn execute_code_answers_with_the_output_and_a_structured_outcome_matching_its_schema() {
    let (client, _) = connect(demo_server()).await;
    let code = std::fs::read_to_string(fixture("snippets/demo.py")).unwrap();
    let result = client.call_tool(execute(&code)).await.unwrap();
    assert_eq!(result.is_error, Some(false));
    assert!(
        text(&result).contains("100 C = 212.0 F"),
        "{}",
        text(&result)
    );
    let outcome = result.structured_content.expect("structured content");
    assert_eq!(outcome["status"], "ok");
    assert_eq!(outcome["tool_calls"].as_array().unwrap().len(), 3);
    let validator = jsonschema::validator_for(&outcome_schema()).unwrap();
    assert!(validator.is_valid(&outcome), "{outcome}");
}

#[tokio::test]
async fn an_exception_and_a_limit_are_tool_results_with_is_error() {
    let (client, _) = connect(demo_server()).await;
    let raised = client.call_tool(execute("1/0")).await.unwrap();
    assert_eq!(raised.is_error, Some(true));
    assert!(
        text(&raised).contains("ZeroDivisionError"),
        "{}",
        text(&raised)
    );
    // The default engine has no fuel budget: a busy snippet meets its deadline (short here).
    let catalog = Catalog::from_file(&fixture("demo/catalog.json")).expect("demo catalog");
    let hurried = CodeMode::new(engine(), catalog).with_limits(Limits {
        deadline: Duration::from_millis(300),
        ..Limits::default()
    });
    let (client, _) = connect(CodecellServer::new(hurried)).await;
    let limited = client.call_tool(execute("while True: pass")).await.unwrap();
    assert_eq!(limited.is_error, Some(true));
    let outcome = limited.structured_content.unwrap();
    assert_eq!(
        (outcome["status"].as_str(), outcome["limit"].as_str()),
        (Some("limit"), Some("deadline"))
    );
    let validator = jsonschema::validator_for(&outcome_schema()).unwrap();
    assert!(validator.is_valid(&outcome), "{outcome}");
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_are_refused_before_any_run() {
    let (client, _) = connect(demo_server()).await;
    let huge = "#".repeat(MAX_CODE_BYTES + 1);
    for (params, needle) in [
        (CallToolRequestParams::new("execute_code"), "\"code\""),
        (
            CallToolRequestParams::new("execute_code").with_arguments(args(json!({"code": 1}))),
            "must be a string",
        ),
        (
            CallToolRequestParams::new("execute_code")
                .with_arguments(args(json!({"code": "1", "cwd": "/"}))),
            "unknown argument \"cwd\"",
        ),
        (execute(&huge), "the limit is"),
        (CallToolRequestParams::new("define_tool"), "unknown tool"),
    ] {
        let error = client.call_tool(params).await.expect_err("refused");
        assert!(error.to_string().contains(needle), "{error}");
    }
}

/// A catalog whose one tool counts its calls, so a test can see whether a run goes on.
fn counting_server(calls: Arc<AtomicU64>) -> CodecellServer {
    let catalog = Catalog::builder()
        .tool(
            "probe",
            ToolSpec::new("tick", "Counts.", json!({"type": "object"})),
            handler_fn(move |_| Ok(json!(calls.fetch_add(1, Ordering::SeqCst)))),
        )
        .build()
        .unwrap();
    let limits = Limits {
        fuel: u64::MAX / 4,
        deadline: Duration::from_secs(60),
        max_tool_calls: u32::MAX,
        ..Limits::default()
    };
    CodecellServer::new(CodeMode::new(engine(), catalog).with_limits(limits))
}

#[tokio::test]
async fn a_cancelled_request_stops_its_run_and_the_server_serves_the_next() {
    let calls = Arc::new(AtomicU64::new(0));
    let (client, _) = connect(counting_server(calls.clone())).await;
    let looping = client.call_tool(execute("while True:\n    call_tool('probe', 'tick')"));
    // Dropping the call's future sends notifications/cancelled.
    let cut = tokio::time::timeout(Duration::from_millis(700), looping).await;
    assert!(cut.is_err(), "the loop cannot finish on its own");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after_cancel = calls.load(Ordering::SeqCst);
    assert!(after_cancel > 0, "the run had started");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        after_cancel,
        "the run went on calling tools after it was cancelled"
    );
    let next = client.call_tool(execute("print('next')")).await.unwrap();
    assert_eq!(text(&next), "next\n");
}

#[tokio::test]
async fn a_run_longer_than_a_second_reports_progress_to_a_client_that_asks() {
    let calls = Arc::new(AtomicU64::new(0));
    let (client, recorder) = connect(counting_server(calls)).await;
    let mut meta = RequestMetaObject::default();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(7)));
    let mut params = execute("import time\ntime.sleep(2.3)\nprint('done')");
    params.meta = Some(meta);
    let result = client.call_tool(params).await.unwrap();
    assert_eq!(text(&result), "done\n");
    let progress = recorder.progress.lock().unwrap().clone();
    assert!(progress.len() >= 2, "{progress:?}");
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
}

#[tokio::test]
async fn dynamic_tools_are_defined_listed_and_invoked_and_refusals_are_is_error_results() {
    let store = tempfile::tempdir().unwrap();
    let options = RegistryOptions::new("mcp-test-session", store.path());
    let tools = DynamicTools::open(engine(), options).unwrap();
    let server = CodecellServer::new(CodeMode::without_tools(engine())).with_dynamic_tools(tools);
    let (client, _) = connect(server).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "execute_code",
            "define_tool",
            "list_dynamic_tools",
            "invoke_dynamic_tool"
        ]
    );

    let spec = json!({
        "name": "double",
        "description": "Doubles n.",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "output_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "implementation": "def execute(args):\n    return {'n': args['n'] * 2}\n",
        "smoke_args": {"n": 1}
    });
    let call = |name: &str, value: Value| {
        client.call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args(value)))
    };
    let defined = call("define_tool", spec.clone()).await.unwrap();
    assert_eq!(defined.is_error, Some(false), "{}", text(&defined));
    assert!(
        defined.structured_content.unwrap()["manifest_id"]
            .as_str()
            .unwrap()
            .starts_with("dyn-")
    );

    let listed = call("list_dynamic_tools", json!({})).await.unwrap();
    assert_eq!(
        listed.structured_content.unwrap()["tools"][0]["name"],
        "double"
    );

    let invoked = call(
        "invoke_dynamic_tool",
        json!({"name": "double", "args": {"n": 21}}),
    )
    .await
    .unwrap();
    assert_eq!(
        invoked.structured_content.unwrap()["result"],
        json!({"n": 42})
    );

    let bad_args = call(
        "invoke_dynamic_tool",
        json!({"name": "double", "args": {"n": "x"}}),
    )
    .await
    .unwrap();
    assert_eq!(bad_args.is_error, Some(true));

    let mut unsafe_spec = spec;
    unsafe_spec["name"] = json!("escape");
    unsafe_spec["implementation"] = json!("import os\ndef execute(args):\n    return {'n': 1}\n");
    let refused = call("define_tool", unsafe_spec).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("os"), "{}", text(&refused));
}
