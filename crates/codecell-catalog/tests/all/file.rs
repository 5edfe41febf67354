//! Catalog files: loading, relative commands, dynamic handlers, and errors that name the file,
//! the JSON path and the problem.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use codecell_catalog::{Catalog, CatalogError, Handler, MAX_CATALOG_FILE_BYTES, handler_fn};
use serde_json::{Value, json};

const ORIGIN: &str = "demo/catalog.json";

fn tool(name: &str) -> Value {
    json!({"name": name, "description": "d", "inputSchema": {"type": "object"}, "handler": {"command": ["true"]}})
}

fn with_tools(tools: Vec<Value>) -> Value {
    json!({"categories": [{"name": "c", "description": "d", "tools": tools}]})
}

/// Parses `catalog` and returns the error's message, checking it names the origin and `path`.
fn error_at(catalog: &Value, path: &str, problem: &str) -> String {
    let text = catalog.to_string();
    let e = Catalog::from_json_str(&text, Path::new("."), ORIGIN).unwrap_err();
    let m = e.to_string();
    assert!(
        m.starts_with(&format!("{ORIGIN}: {path}: ")),
        "expected path {path:?} in {m:?}"
    );
    assert!(m.contains(problem), "expected {problem:?} in {m:?}");
    m
}

#[test]
fn structural_errors_name_the_json_path() {
    error_at(&json!([1]), "$", "must be an object, found an array");
    error_at(&json!({}), "$", "missing field \"categories\"");
    error_at(&json!({"categories": {}}), "categories", "must be an array");
    error_at(
        &json!({"categories": [], "extra": 1}),
        "$",
        "unknown field \"extra\"",
    );
    error_at(
        &json!({"categories": [7]}),
        "categories[0]",
        "must be an object, found a number",
    );
    error_at(
        &json!({"categories": [{"name": "c", "tools": []}]}),
        "categories[0]",
        "missing field \"description\"",
    );
    error_at(
        &json!({"categories": [{"name": 1, "description": "", "tools": []}]}),
        "categories[0].name",
        "must be a string",
    );
    error_at(
        &json!({"categories": [{"name": "c", "description": ""}]}),
        "categories[0]",
        "missing field \"tools\"",
    );
    let mut t = tool("t");
    t["input_schema"] = json!({});
    error_at(
        &with_tools(vec![t]),
        "categories[0].tools[0]",
        "unknown field \"input_schema\"",
    );
    let mut t = tool("t");
    t.as_object_mut().unwrap().remove("inputSchema");
    error_at(
        &with_tools(vec![t]),
        "categories[0].tools[0]",
        "missing field \"inputSchema\"",
    );
    let mut t = tool("t");
    t.as_object_mut().unwrap().remove("handler");
    error_at(
        &with_tools(vec![tool("ok"), t]),
        "categories[0].tools[1]",
        "missing field \"handler\"",
    );
}

#[test]
fn schema_errors_name_the_json_path() {
    let cat = |tools| json!({"categories": [{"name": "a", "description": "", "tools": []}, {"name": "b", "description": "", "tools": tools}]});
    let mut t = tool("t");
    t["inputSchema"] = json!("string");
    error_at(
        &cat(vec![t]),
        "categories[1].tools[0].inputSchema",
        "must be a JSON object",
    );
    let mut t = tool("t");
    t["inputSchema"] = json!({"type": "object", "properties": {"x": {"type": 12}}});
    error_at(
        &cat(vec![t]),
        "categories[1].tools[0].inputSchema",
        "not a valid JSON Schema",
    );
    let mut t = tool("t");
    t["outputSchema"] = json!({"type": "nope"});
    error_at(
        &cat(vec![tool("ok"), t]),
        "categories[1].tools[1].outputSchema",
        "not a valid JSON Schema",
    );
}

#[test]
fn name_errors_name_the_json_path() {
    let two = json!({"categories": [
        {"name": "c", "description": "", "tools": []},
        {"name": "c", "description": "", "tools": []}]});
    error_at(&two, "categories[1].name", "duplicate category name \"c\"");
    error_at(
        &with_tools(vec![tool("t"), tool("u"), tool("t")]),
        "categories[0].tools[2].name",
        "duplicate tool name \"t\"",
    );
    error_at(
        &with_tools(vec![tool("")]),
        "categories[0].tools[0].name",
        "must not be empty",
    );
    let empty_cat = json!({"categories": [{"name": "", "description": "", "tools": []}]});
    error_at(&empty_cat, "categories[0].name", "must not be empty");
    error_at(
        &with_tools(vec![tool("a\u{7}b")]),
        "categories[0].tools[0].name",
        "control character",
    );
}

#[test]
fn handler_errors_name_the_json_path() {
    let with_handler = |h: Value| {
        let mut t = tool("t");
        t["handler"] = h;
        with_tools(vec![t])
    };
    let at = "categories[0].tools[0].handler";
    error_at(
        &with_handler(json!("python3 x.py")),
        at,
        "must be an object",
    );
    error_at(&with_handler(json!({})), at, "must be {\"command\"");
    error_at(
        &with_handler(json!({"command": ["x"], "dynamic": "y"})),
        at,
        "both",
    );
    error_at(
        &with_handler(json!({"command": "x.py"})),
        &format!("{at}.command"),
        "array of strings",
    );
    error_at(
        &with_handler(json!({"command": []})),
        &format!("{at}.command"),
        "1 to 256 entries",
    );
    error_at(
        &with_handler(json!({"command": ["x", 3]})),
        &format!("{at}.command[1]"),
        "must be a string",
    );
    error_at(
        &with_handler(json!({"command": [""]})),
        &format!("{at}.command[0]"),
        "non-empty",
    );
    error_at(
        &with_handler(json!({"command": ["x"], "timeout_ms": 0})),
        &format!("{at}.timeout_ms"),
        "from 1 to 600000",
    );
    error_at(
        &with_handler(json!({"command": ["x"], "timeout_ms": 1e12})),
        &format!("{at}.timeout_ms"),
        "integer",
    );
    error_at(
        &with_handler(json!({"command": ["x"], "max_output_bytes": "1k"})),
        &format!("{at}.max_output_bytes"),
        "integer",
    );
    error_at(
        &with_handler(json!({"command": ["x"], "shell": true})),
        at,
        "unknown field \"shell\"",
    );
    error_at(
        &with_handler(json!({"dynamic": "word-count"})),
        &format!("{at}.dynamic"),
        "without a dynamic-tool store",
    );
}

#[test]
fn invalid_json_names_line_and_column() {
    let e =
        Catalog::from_json_str("{\n  \"categories\": [,]\n}", Path::new("."), ORIGIN).unwrap_err();
    assert!(matches!(e, CatalogError::Json { line: 2, .. }), "{e:?}");
    let m = e.to_string();
    assert!(m.starts_with(ORIGIN) && m.contains("line 2"), "{m}");
}

#[test]
fn size_and_count_limits() {
    let big = format!(
        "{{\"categories\": [], \"pad\": \"{}\"}}",
        "x".repeat(MAX_CATALOG_FILE_BYTES as usize)
    );
    let e = Catalog::from_json_str(&big, Path::new("."), ORIGIN).unwrap_err();
    assert!(
        matches!(e, CatalogError::TooLarge { .. }) && e.to_string().contains(ORIGIN),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.json");
    std::fs::write(&path, &big).unwrap();
    let e = Catalog::from_file(&path).unwrap_err();
    assert!(
        matches!(e, CatalogError::TooLarge { .. }) && e.to_string().contains("big.json"),
        "{e}"
    );
    let many: Vec<Value> = (0..2049).map(|i| tool(&format!("t{i}"))).collect();
    error_at(
        &with_tools(many),
        "categories",
        "2049 tools; the limit is 2048",
    );
}

#[test]
fn a_missing_file_names_the_file() {
    let e = Catalog::from_file(Path::new("/nonexistent/dir/tools.json")).unwrap_err();
    assert!(matches!(e, CatalogError::Io { .. }));
    assert!(e.to_string().contains("/nonexistent/dir/tools.json"), "{e}");
}

#[test]
fn dynamic_handlers_use_the_resolver() {
    let mut t = tool("wc");
    t["handler"] = json!({"dynamic": "word-count"});
    let mut u = tool("gone");
    u["handler"] = json!({"dynamic": "missing"});
    let resolver = |name: &str| -> Option<Arc<dyn Handler>> {
        (name == "word-count").then(|| handler_fn(|args| Ok(json!({"got": args}))))
    };
    let text = with_tools(vec![t.clone()]).to_string();
    let c = Catalog::from_json_with(&text, Path::new("."), ORIGIN, &resolver).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(
        rt.block_on(c.call("c", "wc", json!({"x": 1}))).unwrap(),
        json!({"got": {"x": 1}})
    );
    let text = with_tools(vec![t, u]).to_string();
    let m = Catalog::from_json_with(&text, Path::new("."), ORIGIN, &resolver)
        .unwrap_err()
        .to_string();
    assert_eq!(
        m,
        format!(
            "{ORIGIN}: categories[0].tools[1].handler.dynamic: no dynamic tool named \"missing\""
        )
    );
}

#[tokio::test]
async fn commands_resolve_against_the_catalog_directory() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // The program reads a data file relative to its working directory: the catalog's directory.
    std::fs::write(dir.path().join("greeting.txt"), "hello").unwrap();
    let exe = format!("greet{}", std::env::consts::EXE_SUFFIX);
    std::fs::copy(common::command_tool(), bin.join(&exe)).unwrap();
    let tool = common::command_tool();
    let catalog = json!({"$schema": "ignored", "categories": [{"name": "greet", "description": "Greetings", "tools": [
        {"name": "hello", "title": "Hello", "description": "Greets.", "handler": {"command": [format!("./bin/{exe}"), "cat", "greeting.txt"], "timeout_ms": 20000},
         "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
         "outputSchema": {"type": "string"}},
        {"name": "hello-abs", "description": "Greets from an absolute path.", "handler": {"command": [tool, "cat", "bin/../greeting.txt"]},
         "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
    ]}]});
    let path = dir.path().join("catalog.json");
    std::fs::write(&path, catalog.to_string()).unwrap();
    let c = Catalog::from_file(&path).unwrap();
    assert_eq!(
        c.call("greet", "hello", json!({"name": "Ada"}))
            .await
            .unwrap(),
        json!("hello")
    );
    assert_eq!(
        c.call("greet", "hello_abs", json!({"name": "Bo"}))
            .await
            .unwrap(),
        json!("hello")
    );
    assert!(
        c.read("tools/greet/hello_abs.py")
            .unwrap()
            .contains("call_tool(\"greet\", \"hello-abs\"")
    );
}

#[test]
fn env_errors_name_the_json_path() {
    let with_env = |env: Value| {
        let mut t = tool("t");
        t["handler"] = json!({"command": ["x"], "env": env});
        with_tools(vec![t])
    };
    let at = "categories[0].tools[0].handler.env";
    error_at(&with_env(json!(["A=1"])), at, "must be an object");
    error_at(
        &with_env(json!({"A": 1})),
        &format!("{at}.A"),
        "must be a string",
    );
    error_at(
        &with_env(json!({"A=B": "1"})),
        &format!("{at}.A=B"),
        "without '='",
    );
    error_at(&with_env(json!({"": "1"})), &format!("{at}."), "non-empty");
    error_at(
        &with_env(json!({"A": "x\u{0}y"})),
        &format!("{at}.A"),
        "without NUL",
    );
    let many: serde_json::Map<String, Value> = (0..=codecell_catalog::MAX_ENV_VARS)
        .map(|i| (format!("V{i}"), json!("1")))
        .collect();
    error_at(
        &with_env(Value::Object(many)),
        at,
        "has 65 variables; the limit is 64",
    );
}

#[tokio::test]
async fn a_command_sees_only_path_and_the_env_its_catalog_lists() {
    // SAFETY: set before any tool of this test starts; no other test reads this variable.
    unsafe { std::env::set_var("CODECELL_TEST_FILE_SECRET", "leaked") };
    let catalog = json!({"categories": [{"name": "c", "description": "", "tools": [{
        "name": "env", "description": "", "inputSchema": {"type": "object"},
        "handler": {"command": [common::command_tool(), "env"], "env": {"TOOL_MODE": "fast", "EMPTY": ""}}
    }]}]});
    let c = Catalog::from_json_str(&catalog.to_string(), Path::new("."), ORIGIN).unwrap();
    let env = c.call("c", "env", json!({})).await.unwrap();
    assert_eq!(env["CODECELL_TEST_FILE_SECRET"], Value::Null, "{env}");
    assert_eq!(
        (&env["TOOL_MODE"], &env["EMPTY"]),
        (&json!("fast"), &json!("")),
        "{env}"
    );
}
