//! `execute_code` with `session_id`: turns that share an interpreter, over MCP.

use codecell::{Catalog, CodeMode, Limits, SessionLimits, SessionManager, SessionManagerLimits};
use codecell_mcp::{CodecellServer, outcome_schema};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::common::{connect, engine, fixture, text};

fn server(max_sessions: usize) -> CodecellServer {
    let catalog = Catalog::from_file(&fixture("demo/catalog.json")).expect("demo catalog");
    let code_mode = CodeMode::new(engine(), catalog.clone());
    let caps = SessionManagerLimits {
        max_sessions,
        ..SessionManagerLimits::default()
    };
    let sessions = SessionManager::new(
        &engine(),
        Some(catalog),
        Limits::default(),
        SessionLimits::default(),
        caps,
    );
    CodecellServer::new(code_mode).with_sessions(sessions)
}

fn execute(arguments: Value) -> CallToolRequestParams {
    let Value::Object(map) = arguments else {
        unreachable!("arguments are objects")
    };
    CallToolRequestParams::new("execute_code").with_arguments(map)
}

#[tokio::test]
async fn a_new_session_gives_its_id_and_later_turns_see_its_globals() {
    let (client, _) = connect(server(4)).await;
    let tools = client.list_all_tools().await.unwrap();
    let schema = Value::Object((*tools[0].input_schema).clone());
    assert_eq!(
        schema["properties"]["session_id"]["type"], "string",
        "{schema}"
    );
    let first = client
        .call_tool(execute(json!({"code": "x = 41", "session_id": "new"})))
        .await
        .unwrap();
    let outcome = first
        .structured_content
        .clone()
        .expect("structured content");
    let id = outcome["session_id"]
        .as_str()
        .expect("the new session's id")
        .to_string();
    assert_eq!(outcome["session_state"], "live");
    assert!(text(&first).contains(&id), "{}", text(&first));
    let validator = jsonschema::validator_for(&outcome_schema()).unwrap();
    assert!(validator.is_valid(&outcome), "{outcome}");
    let second = client
        .call_tool(execute(json!({"code": "print(x + 1)", "session_id": id})))
        .await
        .unwrap();
    assert_eq!(second.structured_content.unwrap()["stdout"], "42\n");
    let fresh = client
        .call_tool(execute(json!({"code": "print('x' in globals())"})))
        .await
        .unwrap();
    assert_eq!(
        fresh.structured_content.unwrap()["stdout"],
        "False\n",
        "no session_id: a fresh run"
    );
}

#[tokio::test]
async fn an_unknown_session_and_a_full_server_are_tool_errors_the_model_can_read() {
    let (client, _) = connect(server(1)).await;
    let unknown = client
        .call_tool(execute(json!({"code": "1", "session_id": "nope"})))
        .await
        .unwrap();
    assert_eq!(unknown.is_error, Some(true));
    assert!(
        text(&unknown).contains("session_id \"new\""),
        "{}",
        text(&unknown)
    );
    let one = client
        .call_tool(execute(json!({"code": "1", "session_id": "new"})))
        .await
        .unwrap();
    assert_eq!(one.is_error, Some(false));
    let full = client
        .call_tool(execute(json!({"code": "1", "session_id": "new"})))
        .await
        .unwrap();
    assert_eq!(full.is_error, Some(true));
    assert!(
        text(&full).contains("cannot start another session"),
        "{}",
        text(&full)
    );
    let bad = client
        .call_tool(execute(json!({"code": "1", "session_id": 7})))
        .await
        .expect_err("a session_id that is not a string is refused");
    assert!(bad.to_string().contains("session_id"), "{bad}");
}
