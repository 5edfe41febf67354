//! Dispatch: name resolution, schema refusals of arguments and results, closure handlers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codecell_catalog::{
    CallError, Catalog, CatalogError, HandlerError, ToolSpec, async_handler_fn, handler_fn,
};
use serde_json::{Value, json};

fn add_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "minimum": 0}},
        "required": ["a", "b"],
        "additionalProperties": false
    })
}

fn catalog(calls: Arc<AtomicUsize>) -> Catalog {
    let counted = calls.clone();
    Catalog::builder()
        .category("math-ops", "Arithmetic")
        .tool(
            "math-ops",
            ToolSpec::new("add", "Adds.", add_schema())
                .with_output_schema(json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]})),
            handler_fn(move |args| {
                counted.fetch_add(1, Ordering::SeqCst);
                let sum = args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap();
                Ok(json!({"sum": sum}))
            }),
        )
        .tool(
            "math-ops",
            ToolSpec::new("sub-tract", "Subtracts, slowly.", add_schema()),
            async_handler_fn(|args: Value| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Ok(json!(args["a"].as_i64().unwrap() - args["b"].as_i64().unwrap()))
            }),
        )
        .tool(
            "math-ops",
            ToolSpec::new("liar", "Claims an integer, returns a string.", json!({"type": "object"}))
                .with_output_schema(json!({"type": "integer"})),
            handler_fn(|_| Ok(json!("not an integer"))),
        )
        .tool(
            "math-ops",
            ToolSpec::new("fails", "Always fails.", json!({"type": "object"})),
            async_handler_fn(|_| async { Err(HandlerError::new("the backend is down; retry later")) }),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn sync_and_async_closures() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = catalog(calls.clone());
    assert_eq!(
        c.call("math-ops", "add", json!({"a": 2, "b": 3}))
            .await
            .unwrap(),
        json!({"sum": 5})
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        c.call("math-ops", "sub-tract", json!({"a": 2, "b": 3}))
            .await
            .unwrap(),
        json!(-1)
    );
}

#[tokio::test]
async fn names_resolve_by_name_identifier_and_py_suffix() {
    let c = catalog(Arc::new(AtomicUsize::new(0)));
    let args = json!({"a": 1, "b": 1});
    for (cat, tool) in [
        ("math-ops", "sub-tract"),
        ("math_ops", "sub-tract"),
        ("math-ops", "sub_tract"),
        ("math_ops", "sub_tract.py"),
        ("math-ops", "sub-tract.py"),
    ] {
        assert_eq!(
            c.call(cat, tool, args.clone()).await.unwrap(),
            json!(0),
            "{cat}/{tool} dispatches to sub-tract (1 - 1)"
        );
    }
}

#[tokio::test]
async fn unknown_names_list_what_exists() {
    let c = catalog(Arc::new(AtomicUsize::new(0)));
    let e = c.call("maths", "add", json!({})).await.unwrap_err();
    assert!(matches!(e, CallError::UnknownCategory { .. }));
    let m = e.to_string();
    assert!(
        m.contains("\"maths\"") && m.contains("\"math-ops\"") && m.contains("ls(\"tools/\")"),
        "{m}"
    );
    let e = c.call("math-ops", "mul", json!({})).await.unwrap_err();
    assert!(matches!(e, CallError::UnknownTool { .. }));
    let m = e.to_string();
    for needle in [
        "\"mul\"",
        "\"add\"",
        "\"sub-tract\"",
        "ls(\"tools/math_ops/\")",
    ] {
        assert!(m.contains(needle), "{needle} in {m}");
    }
}

#[tokio::test]
async fn invalid_arguments_are_refused_before_the_handler_runs() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = catalog(calls.clone());
    for args in [
        json!({"a": 1}),
        json!({"a": "1", "b": 2}),
        json!({"a": 1, "b": -1}),
        json!({"a": 1, "b": 2, "c": 3}),
        json!([1, 2]),
        Value::Null,
    ] {
        let e = c.call("math-ops", "add", args.clone()).await.unwrap_err();
        let CallError::InvalidArguments { errors, .. } = &e else {
            panic!("{args}: {e:?}");
        };
        assert!(!errors.is_empty());
        let m = e.to_string();
        assert!(
            m.contains("math-ops/add")
                && m.contains("tools/math_ops/add.py")
                && m.contains("not run"),
            "{m}"
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let m = c
        .call("math-ops", "add", json!({"a": "x", "b": 2}))
        .await
        .unwrap_err()
        .to_string();
    assert!(m.contains("/a") && m.contains("integer"), "{m}");
}

#[tokio::test]
async fn invalid_argument_errors_are_bounded() {
    let mut props = serde_json::Map::new();
    for i in 0..40 {
        props.insert(format!("p{i}"), json!({"type": "integer"}));
    }
    let schema = json!({"type": "object", "properties": props});
    let c = Catalog::builder()
        .category("c", "")
        .tool("c", ToolSpec::new("t", "", schema), handler_fn(Ok))
        .build()
        .unwrap();
    let big = "z".repeat(100_000);
    let args: serde_json::Map<String, Value> =
        (0..40).map(|i| (format!("p{i}"), json!(big))).collect();
    let e = c.call("c", "t", Value::Object(args)).await.unwrap_err();
    let CallError::InvalidArguments { errors, .. } = &e else {
        panic!("{e:?}")
    };
    assert!(
        errors.len() <= 9 && errors.last().unwrap().contains("more"),
        "{errors:?}"
    );
    assert!(
        e.to_string().len() < 4000,
        "message length {}",
        e.to_string().len()
    );
}

#[tokio::test]
async fn results_are_checked_against_output_schema() {
    let c = catalog(Arc::new(AtomicUsize::new(0)));
    let e = c.call("math-ops", "liar", json!({})).await.unwrap_err();
    assert!(matches!(e, CallError::InvalidResult { .. }));
    let m = e.to_string();
    assert!(
        m.contains("outputSchema") && m.contains("not in your arguments"),
        "{m}"
    );
}

#[tokio::test]
async fn handler_errors_pass_through() {
    let c = catalog(Arc::new(AtomicUsize::new(0)));
    let e = c.call("math-ops", "fails", json!({})).await.unwrap_err();
    assert_eq!(
        e,
        CallError::Handler(HandlerError::new("the backend is down; retry later"))
    );
    assert_eq!(e.to_string(), "the backend is down; retry later");
}

#[test]
fn catalog_is_shareable_and_call_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    fn assert_sync<T: Send + Sync + Clone>() {}
    assert_sync::<Catalog>();
    let c = catalog(Arc::new(AtomicUsize::new(0)));
    let fut = c.call("math-ops", "add", json!({"a": 1, "b": 2}));
    assert_send(&fut);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(fut).unwrap(), json!({"sum": 3}));
}

#[tokio::test]
async fn concurrent_calls_on_a_shared_catalog() {
    let c = Arc::new(catalog(Arc::new(AtomicUsize::new(0))));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            c.call("math-ops", "sub-tract", json!({"a": i, "b": 1}))
                .await
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        assert_eq!(t.await.unwrap().unwrap(), json!(i as i64 - 1));
    }
}

fn build_err(b: codecell_catalog::CatalogBuilder) -> String {
    match b.build() {
        Err(e @ CatalogError::Invalid { .. }) => e.to_string(),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn builder_refusals_name_what_is_wrong() {
    let ok = json!({"type": "object"});
    let m = build_err(Catalog::builder().category("a", "").category("a", ""));
    assert!(m.contains("duplicate category name \"a\""), "{m}");
    let m = build_err(
        Catalog::builder()
            .tool("a", ToolSpec::new("t", "", ok.clone()), handler_fn(Ok))
            .tool("a", ToolSpec::new("t", "", ok.clone()), handler_fn(Ok)),
    );
    assert!(
        m.contains("category \"a\", tool \"t\": name") && m.contains("duplicate tool name"),
        "{m}"
    );
    let m =
        build_err(Catalog::builder().tool("", ToolSpec::new("t", "", ok.clone()), handler_fn(Ok)));
    assert!(m.contains("must not be empty"), "{m}");
    let m =
        build_err(Catalog::builder().tool("a", ToolSpec::new("", "", ok.clone()), handler_fn(Ok)));
    assert!(m.contains("must not be empty"), "{m}");
    let m = build_err(Catalog::builder().tool(
        "a",
        ToolSpec::new("x".repeat(129), "", ok.clone()),
        handler_fn(Ok),
    ));
    assert!(m.contains("limit is 128"), "{m}");
    let m = build_err(Catalog::builder().tool(
        "a",
        ToolSpec::new("t", "", json!({"type": "strin"})),
        handler_fn(Ok),
    ));
    assert!(m.contains("inputSchema"), "{m}");
    let m = build_err(Catalog::builder().tool(
        "a",
        ToolSpec::new("t", "", json!({"properties": {"x": {"type": "strin"}}})),
        handler_fn(Ok),
    ));
    assert!(m.contains("inputSchema: is not a valid JSON Schema"), "{m}");
    let m = build_err(Catalog::builder().tool(
        "a",
        ToolSpec::new("t", "", json!({"type": "string"})),
        handler_fn(Ok),
    ));
    assert!(m.contains("must describe an object"), "{m}");
    let m =
        build_err(Catalog::builder().tool("a", ToolSpec::new("t", "", json!([1])), handler_fn(Ok)));
    assert!(m.contains("inputSchema: must be a JSON object"), "{m}");
    let m = build_err(Catalog::builder().tool(
        "a",
        ToolSpec::new("t", "", ok.clone()).with_output_schema(json!({"minimum": "zero"})),
        handler_fn(Ok),
    ));
    assert!(m.contains("outputSchema"), "{m}");
    // External references are never fetched.
    let m = build_err(Catalog::builder().tool(
        "a",
        ToolSpec::new(
            "t",
            "",
            json!({"type": "object", "properties": {"x": {"$ref": "http://127.0.0.1:9/s.json"}}}),
        ),
        handler_fn(Ok),
    ));
    assert!(m.contains("inputSchema"), "{m}");
    let mut deep = json!({"type": "object"});
    for _ in 0..60 {
        deep = json!({"type": "object", "properties": {"x": deep}});
    }
    let m = build_err(Catalog::builder().tool("a", ToolSpec::new("t", "", deep), handler_fn(Ok)));
    assert!(m.contains("levels deep"), "{m}");
    let m = build_err(Catalog::builder().tool(
        "a",
        ToolSpec::new("t", "d".repeat(20_000), ok.clone()),
        handler_fn(Ok),
    ));
    assert!(m.contains("description"), "{m}");
}

#[test]
fn categories_report_modules_and_functions() {
    let c = catalog(Arc::new(AtomicUsize::new(0)));
    let info = &c.categories()[0];
    assert_eq!(info.name, "math-ops");
    assert_eq!(info.module, "math_ops");
    assert_eq!(info.description, "Arithmetic");
    assert_eq!(
        info.tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["add", "sub-tract", "liar", "fails"]
    );
    assert_eq!(info.functions, ["add", "sub_tract", "liar", "fails"]);
}

#[tokio::test]
async fn self_referential_schemas_build_inside_a_runtime_and_validate() {
    // A cycle of references must neither hang nor overflow; a remote one must fail, not block.
    // A loop that never leaves one value (`L` is `L`) says nothing and would recurse forever:
    // refused when built (it was accepted before the complexity bound, issue 10 class 3).
    let cyclic = json!({"type": "object", "$defs": {"L": {"$ref": "#/$defs/L"}}, "properties": {"x": {"$ref": "#/$defs/L"}}});
    let e = Catalog::builder()
        .tool("a", ToolSpec::new("t", "", cyclic), handler_fn(Ok))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("never descends"), "{e}");
    // A recursive schema that descends builds, validates and terminates; its stub is plain.
    let list = json!({"type": "object", "$defs": {"L": {"type": "object", "properties": {"next": {"$ref": "#/$defs/L"}}}}, "properties": {"x": {"$ref": "#/$defs/L"}}});
    let c = Catalog::builder()
        .tool("a", ToolSpec::new("t", "", list), handler_fn(Ok))
        .build()
        .unwrap();
    let outcome = tokio::time::timeout(
        Duration::from_secs(5),
        c.call("a", "t", json!({"x": {"next": {"next": 1}}})),
    )
    .await;
    assert!(
        outcome.expect("validation terminates").is_err(),
        "1 is not an object"
    );
    assert!(
        c.read("tools/a/t.py")
            .unwrap()
            .contains("x: Optional[dict] = None")
    );
    let remote =
        json!({"type": "object", "properties": {"x": {"$ref": "https://example.invalid/s.json"}}});
    let e = Catalog::builder()
        .tool("a", ToolSpec::new("t", "", remote), handler_fn(Ok))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("inputSchema"), "{e}");
}
