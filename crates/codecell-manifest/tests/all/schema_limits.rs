//! Dynamic-tool schemas are bounded before they are compiled (issue 10, class 3: a 13 KB
//! model-written schema with `anyOf`/`$ref` fan-out took 4.5 s and 2.9 GB at define), and
//! compiled once per manifest rather than on every invoke (issue 16).

use crate::common::{add_spec, clock};
use codecell_manifest::schema::{
    MAX_SCHEMA_BRANCHES, MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, MAX_SCHEMA_EXPANSION, SchemaError,
};
use codecell_manifest::{DynamicToolError, Manifest, Registry, RunFuture, ToolRunner};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Answers `{"sum": 1.0}` without running anything, counting its runs.
#[derive(Default)]
struct Fixed(AtomicUsize);

impl ToolRunner for Fixed {
    fn run<'a>(&'a self, _: &'a Manifest, _: &'a Value) -> RunFuture<'a> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::ready(Ok(json!({"sum": 1.0}))))
    }
}

fn registry(dir: &std::path::Path) -> (Registry, Arc<Fixed>) {
    let runner = Arc::new(Fixed::default());
    let mut options = codecell_manifest::RegistryOptions::new("sess", dir);
    options.clock = clock();
    (Registry::open(options, runner.clone()).unwrap(), runner)
}

/// About 13 KB: twelve `$defs`, each an `anyOf` of 40 `$ref`s to the next (40^12 paths).
fn fan_out_bomb() -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..12 {
        let branches: Vec<Value> = (0..40)
            .map(|_| json!({"$ref": format!("#/$defs/d{}", i + 1)}))
            .collect();
        defs.insert(format!("d{i}"), json!({"anyOf": branches}));
    }
    defs.insert("d12".into(), json!({"type": "number"}));
    json!({"$defs": defs, "properties": {"a": {"$ref": "#/$defs/d0"}}})
}

async fn refusal(dir: &std::path::Path, schema: Value) -> (DynamicToolError, Duration) {
    let (registry, runner) = registry(dir);
    let mut spec = add_spec("t");
    spec["input_schema"] = schema;
    let started = Instant::now();
    let error = registry.define(&spec).await.unwrap_err();
    assert_eq!(runner.0.load(Ordering::SeqCst), 0, "refused before any run");
    (error, started.elapsed())
}

#[tokio::test]
async fn a_fan_out_bomb_is_refused_fast_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = fan_out_bomb();
    let size = serde_json::to_vec(&bomb).unwrap().len();
    assert!((9_000..16_000).contains(&size), "{size}");
    let (error, took) = refusal(dir.path(), bomb).await;
    assert!(took < Duration::from_secs(1), "took {took:?}");
    let message = error.to_string();
    assert!(
        message.starts_with("dynamic tool input_schema is too complex")
            && message.contains(&format!("the limit is {MAX_SCHEMA_EXPANSION}")),
        "{message}"
    );
    assert!(matches!(
        error,
        DynamicToolError::Schema(SchemaError::TooComplex { .. })
    ));
    assert_eq!(error.code(), "invalid_schema");
}

#[tokio::test]
async fn size_depth_and_branch_limits_are_each_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let wide: Vec<Value> = (0..=MAX_SCHEMA_BRANCHES)
        .map(|i| json!({"const": i}))
        .collect();
    let mut deep = json!({"type": "number"});
    for _ in 0..MAX_SCHEMA_DEPTH {
        deep = json!({"items": deep});
    }
    let big = json!({"properties": {"a": {"type": "number", "description": "x".repeat(MAX_SCHEMA_BYTES)}}});
    let cases = [
        (
            json!({"properties": {"a": {"anyOf": wide}}}),
            format!("the limit is {MAX_SCHEMA_BRANCHES}"),
        ),
        (
            json!({"properties": {"a": deep}}),
            format!("the limit is {MAX_SCHEMA_DEPTH}"),
        ),
        (big, format!("the limit is {MAX_SCHEMA_BYTES}")),
    ];
    for (schema, needle) in cases {
        let (error, _) = refusal(dir.path(), schema).await;
        assert!(
            error.to_string().contains(&needle),
            "{error} lacks {needle:?}"
        );
    }
    // Just inside the limits: accepted.
    let ok: Vec<Value> = (0..MAX_SCHEMA_BRANCHES)
        .map(|i| json!({"const": i}))
        .collect();
    let (registry, _) = registry(dir.path());
    let mut spec = add_spec("inside");
    spec["input_schema"] = json!({"properties": {"a": {"anyOf": ok}, "b": {"type": "number"}}});
    spec["smoke_args"] = json!({"a": 3, "b": 2});
    registry.define(&spec).await.unwrap();
}

#[tokio::test]
async fn a_stored_manifest_with_a_bomb_schema_is_refused_at_load_fast() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, _) = registry(dir.path());
    let good = writer.define(&add_spec("add")).await.unwrap();
    let file = dir
        .path()
        .join(format!("sessions/s-sess/{}.json", good.manifest_id));
    let mut record = good.record();
    record["input_schema"] = fan_out_bomb();
    std::fs::write(&file, record.to_string()).unwrap();
    let started = Instant::now();
    let (reader, _) = registry(dir.path());
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(reader.get("add").is_none());
    assert!(
        reader
            .load_errors()
            .iter()
            .any(|e| e.contains("too complex")),
        "{:#?}",
        reader.load_errors()
    );
}

#[tokio::test]
async fn schemas_are_compiled_once_per_manifest_and_the_cache_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, runner) = registry(dir.path());
    let manifest = registry.define(&add_spec("add")).await.unwrap();
    assert_eq!(
        registry.cached_validator_count(),
        1,
        "define leaves its compiled schemas"
    );
    for _ in 0..3 {
        registry
            .invoke("add", &json!({"a": 1, "b": 2}))
            .await
            .unwrap();
    }
    assert_eq!(registry.cached_validator_count(), 1);
    // A caller-made manifest with the same id but another schema is checked against its own.
    let mut altered = manifest.clone();
    altered.input_schema = json!({"type": "object", "required": ["z"]});
    let error = registry
        .invoke_manifest(&altered, &json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert!(
        matches!(error, DynamicToolError::Arguments(ref m) if m.contains("\"z\"")),
        "{error}"
    );
    registry
        .invoke_manifest(&manifest, &json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    for i in 0..400 {
        let mut other = manifest.clone();
        other.manifest_id = format!("dyn-{i:064x}");
        registry
            .invoke_manifest(&other, &json!({"a": 1, "b": 2}))
            .await
            .unwrap();
    }
    assert!(
        registry.cached_validator_count() <= 256,
        "{}",
        registry.cached_validator_count()
    );
    assert_eq!(runner.0.load(Ordering::SeqCst), 1 + 3 + 1 + 400);
}

#[tokio::test]
async fn validation_errors_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, _) = registry(dir.path());
    let mut spec = add_spec("many");
    spec["input_schema"] = json!({"additionalProperties": {"type": "number"}});
    spec["smoke_args"] = json!({});
    registry.define(&spec).await.unwrap();
    let args: serde_json::Map<String, Value> = (0..5_000)
        .map(|i| (format!("k{i}"), json!("x".repeat(1_000))))
        .collect();
    let error = registry
        .invoke("many", &Value::Object(args))
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(message.len() < 8_000, "{} bytes", message.len());
    assert!(
        message.ends_with("… and 4984 more"),
        "{}",
        &message[message.len() - 40..]
    );
}
