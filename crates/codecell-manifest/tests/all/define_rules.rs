//! `define` rules: names, description, permissions, TTL, schemas, smoke args and output.

use crate::common::{PythonRunner, add_spec, clock, open};
use codecell_manifest::smoke::minimal_smoke_args;
use codecell_manifest::{DynamicToolError, ManualClock};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::Ordering;

fn registry() -> (
    tempfile::TempDir,
    codecell_manifest::Registry,
    Arc<PythonRunner>,
    Arc<ManualClock>,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let runner = Arc::new(PythonRunner::default());
    let clock = clock();
    let registry = open(dir.path(), "sess", None, clock.clone(), runner.clone());
    (dir, registry, runner, clock)
}

#[tokio::test]
async fn a_valid_spec_defines_a_normalised_manifest() {
    let (dir, registry, runner, clock) = registry();
    let manifest = registry.define(&add_spec("add")).await.expect("define");
    assert_eq!(manifest.description, "Add two numbers.");
    assert_eq!(manifest.imports, vec!["math".to_string()]);
    assert_eq!(manifest.ttl_s, 3600.0);
    assert_eq!(manifest.created_at, clock.now_value());
    assert_eq!(manifest.expires_at, clock.now_value() + 3600.0);
    assert_eq!(manifest.input_schema["type"], "object");
    assert_eq!(manifest.input_schema["additionalProperties"], false);
    assert_eq!(manifest.output_schema["additionalProperties"], false);
    assert_eq!(runner.runs.load(Ordering::SeqCst), 1, "one smoke run");
    let file = dir
        .path()
        .join("sessions/s-sess")
        .join(format!("{}.json", manifest.manifest_id));
    let on_disk = std::fs::read_to_string(&file).expect("manifest file");
    assert_eq!(on_disk, manifest.record_json());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let result = registry
        .invoke("add", &json!({"a": 1, "b": 2.5}))
        .await
        .expect("invoke");
    assert_eq!(result, json!({"sum": 3.5}));
}

trait NowValue {
    fn now_value(&self) -> f64;
}
impl NowValue for ManualClock {
    fn now_value(&self) -> f64 {
        codecell_manifest::Clock::now(self)
    }
}

#[tokio::test]
async fn refusals_name_what_is_wrong() {
    let (_dir, registry, runner, _clock) = registry();
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (json!([1]), "must be a JSON object"),
        (
            {
                let mut s = add_spec("9lives");
                s["name"] = json!("9lives");
                s
            },
            "not provider-portable",
        ),
        (
            {
                let mut s = add_spec("x");
                s["name"] = json!("a".repeat(65));
                s
            },
            "not provider-portable",
        ),
        (
            {
                let mut s = add_spec("x");
                s["name"] = json!("naïve");
                s
            },
            "not provider-portable",
        ),
        (add_spec("bash"), "reserved"),
        (add_spec("submit_output"), "reserved"),
        (add_spec("finalize_response"), "reserved"),
        (
            {
                let mut s = add_spec("x");
                s["description"] = json!(" \n\t ");
                s
            },
            "description is required",
        ),
        (
            {
                let mut s = add_spec("x");
                s["implementation"] = json!("def run(args):\n    return 1\n");
                s
            },
            "source rejected",
        ),
        (
            {
                let mut s = add_spec("x");
                s["implementation"] = json!("import os\ndef execute(args):\n    return {}\n");
                s
            },
            "source rejected",
        ),
        (
            {
                let mut s = add_spec("x");
                s["input_schema"] = json!([]);
                s
            },
            "input_schema must be a JSON schema object",
        ),
        (
            {
                let mut s = add_spec("x");
                s["output_schema"] = json!({"type": "nonsense"});
                s
            },
            "output_schema is not a valid JSON schema",
        ),
        (
            {
                let mut s = add_spec("x");
                s["permissions"] = json!(["net"]);
                s
            },
            "cannot request",
        ),
        (
            {
                let mut s = add_spec("x");
                s["ttl_s"] = json!(0);
                s
            },
            "(0, 86400]",
        ),
        (
            {
                let mut s = add_spec("x");
                s["ttl_s"] = json!(86400.5);
                s
            },
            "(0, 86400]",
        ),
        (
            {
                let mut s = add_spec("x");
                s["ttl_s"] = json!(-1);
                s
            },
            "(0, 86400]",
        ),
        (
            {
                let mut s = add_spec("x");
                s["ttl_s"] = json!(null);
                s
            },
            "must be a number",
        ),
        (
            {
                let mut s = add_spec("x");
                s["ttl_s"] = json!("soon");
                s
            },
            "must be a number",
        ),
        (
            {
                let mut s = add_spec("x");
                s["smoke_args"] = json!({"a": "one", "b": 2});
                s
            },
            "smoke_args",
        ),
        (
            {
                let mut s = add_spec("x");
                s["input_schema"]["properties"]["c"] = json!({"type": ["string", "null"]});
                s["input_schema"]["required"] = json!(["a", "b", "c"]);
                s
            },
            "cannot synthesize smoke value",
        ),
        (
            {
                let mut s = add_spec("x");
                s["implementation"] = json!("def execute(args):\n    return {\"sum\": \"text\"}\n");
                s
            },
            "smoke output",
        ),
        (
            {
                let mut s = add_spec("x");
                s["implementation"] = json!("def execute(args):\n    raise ValueError(\"boom\")\n");
                s
            },
            "smoke test failed",
        ),
    ];
    for (spec, needle) in cases {
        let error = registry
            .define(&spec)
            .await
            .expect_err(&format!("{spec} should be refused"));
        let message = error.to_string();
        assert!(
            message.contains(needle),
            "{spec}: {message:?} lacks {needle:?}"
        );
    }
    assert!(registry.tools().is_empty(), "nothing was defined");
    assert!(
        runner.runs.load(Ordering::SeqCst) >= 2,
        "smoke runs happened for the last cases"
    );
}

#[tokio::test]
async fn one_session_tool_per_name_and_ttl_from_spec() {
    let (_dir, registry, _runner, _clock) = registry();
    let mut spec = add_spec("add");
    spec["ttl_s"] = json!("120");
    let manifest = registry.define(&spec).await.expect("define");
    assert_eq!(
        manifest.ttl_s, 120.0,
        "float() of a numeric string, like the seed"
    );
    let error = registry.define(&add_spec("add")).await.unwrap_err();
    assert!(
        matches!(error, DynamicToolError::AlreadyDefined(ref n) if n == "add"),
        "{error}"
    );
}

#[tokio::test]
async fn invoke_checks_arguments_before_and_result_after() {
    let (_dir, registry, runner, _clock) = registry();
    let mut spec = add_spec("odd");
    spec["implementation"] = json!(
        "def execute(args):\n    if args[\"a\"] > 100:\n        return {\"sum\": \"big\"}\n    return {\"sum\": args[\"a\"] + args[\"b\"]}\n"
    );
    registry.define(&spec).await.expect("define");
    let before = runner.runs.load(Ordering::SeqCst);
    let error = registry.invoke("odd", &json!({"a": 1})).await.unwrap_err();
    assert!(matches!(error, DynamicToolError::Arguments(_)), "{error}");
    let error = registry
        .invoke("odd", &json!({"a": 1, "b": 1, "c": 1}))
        .await
        .unwrap_err();
    assert!(
        matches!(error, DynamicToolError::Arguments(_)),
        "additionalProperties false: {error}"
    );
    assert_eq!(
        runner.runs.load(Ordering::SeqCst),
        before,
        "bad arguments never reach the runner"
    );
    let error = registry
        .invoke("odd", &json!({"a": 101, "b": 2}))
        .await
        .unwrap_err();
    assert!(matches!(error, DynamicToolError::Output(_)), "{error}");
    assert_eq!(
        registry
            .invoke("odd", &json!({"a": 1, "b": 2}))
            .await
            .unwrap(),
        json!({"sum": 3})
    );
    let error = registry.invoke("missing", &json!({})).await.unwrap_err();
    assert!(matches!(error, DynamicToolError::Unknown(_)), "{error}");
}

#[test]
fn smoke_args_follow_the_seed() {
    let schema = json!({
        "type": "object",
        "properties": {
            "d": {"type": "string", "default": "dflt"},
            "e": {"enum": ["first", "second"]},
            "s": {"type": "string"},
            "n": {"type": "number", "minimum": 2.5},
            "neg": {"type": "integer", "minimum": -4},
            "z": {"type": "number", "minimum": 0.0},
            "i": {"type": "integer"},
            "b": {"type": "boolean"},
            "a": {"type": "array"},
            "o": {"type": "object"},
            "optional": {"type": "string"}
        },
        "required": ["d", "e", "s", "n", "neg", "z", "i", "b", "a", "o"]
    });
    let args = minimal_smoke_args(&schema).expect("synthesised");
    assert_eq!(
        codecell_manifest::canonical::to_string(&args),
        r#"{"a":[],"b":false,"d":"dflt","e":"first","i":0,"n":2.5,"neg":0,"o":{},"s":"smoke","z":0}"#
    );
    assert!(minimal_smoke_args(&json!({"required": ["x"]})).is_err());
    assert_eq!(
        minimal_smoke_args(&json!({"properties": {"x": {}}})).unwrap(),
        json!({})
    );
}

/// The registry can be shared across threads and its futures can run on a multi-threaded
/// runtime (the std mutex guard is never held across an await).
#[test]
fn registry_and_its_futures_are_send_and_sync() {
    fn assert_send<T: Send>(_: &T) {}
    fn assert_sync<T: Sync + Send>() {}
    assert_sync::<codecell_manifest::Registry>();
    let (_dir, registry, _runner, _clock) = registry();
    let spec = add_spec("x");
    let args = json!({});
    let define = registry.define(&spec);
    assert_send(&define);
    let invoke = registry.invoke("x", &args);
    assert_send(&invoke);
}

#[test]
fn a_registry_needs_a_session_id() {
    let dir = tempfile::tempdir().unwrap();
    let options = codecell_manifest::RegistryOptions::new("  ", dir.path());
    let result = codecell_manifest::Registry::open(options, Arc::new(PythonRunner::default()));
    assert!(matches!(result, Err(DynamicToolError::MissingSessionId)));
}
