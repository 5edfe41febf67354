//! Manifest ids computed by codecell equal the ids the seed's algorithm gives (python3,
//! `tests/fixtures/seed_ids.py`), for session, project and global versions.

use crate::common::{PythonRunner, add_spec, clock, open, run_python};
use codecell_manifest::Scope;
use serde_json::{Value, json};
use std::sync::Arc;

fn specs() -> Vec<Value> {
    let mut specs = vec![add_spec("add")];
    let mut floats = add_spec("floats");
    floats["input_schema"]["properties"]["a"] =
        json!({"type": "number", "minimum": 0.5, "maximum": 1e16, "multipleOf": 1e-7});
    floats["ttl_s"] = json!(60);
    specs.push(floats);
    let mut unicode = add_spec("uni-code_2");
    unicode["description"] = json!("  Ünïcödé\u{1c}tool\u{3000}with 😀 and \"quotes\"\t\n ");
    unicode["ttl_s"] = json!(86400);
    unicode["implementation"] = json!(
        "import json, collections.abc\nfrom datetime import date\n\ndef execute(args):\n    \"\"\"Ünïcödé 😀\"\"\"\n    return {\"sum\": float(len(json.dumps(args)))}\n"
    );
    specs.push(unicode);
    let mut typed = add_spec("_typed");
    typed["input_schema"] = json!({"type": "object", "properties": {"a": {"type": "integer", "default": 3}, "b": {"enum": [2.5, 3]}}, "required": ["a", "b"], "additionalProperties": true});
    typed["output_schema"] = json!({"type": "object", "additionalProperties": true});
    typed["ttl_s"] = json!(0.25);
    specs.push(typed);
    specs
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "needs native python3 as the oracle, which a Windows program under Wine cannot start"
)]
async fn ids_equal_the_seed_algorithm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = open(
        dir.path(),
        "root-frame-1",
        Some("proj-7"),
        clock(),
        Arc::new(PythonRunner::default()),
    );
    let cases: Vec<Value> = specs()
        .into_iter()
        .map(|spec| json!({"spec": spec, "session_id": "root-frame-1", "project_id": "proj-7"}))
        .collect();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/seed_ids.py");
    let expected: Vec<Value> = serde_json::from_str(&run_python(
        script,
        &[],
        &Value::Array(cases.clone()).to_string(),
    ))
    .expect("ids from python3");
    assert_eq!(expected.len(), cases.len());
    for (case, want) in cases.iter().zip(&expected) {
        let manifest = registry.define(&case["spec"]).await.expect("define");
        assert_eq!(
            manifest.manifest_id, want["session"],
            "session id of {}",
            manifest.name
        );
        let project = registry
            .promote(&manifest.name, Scope::Project, true)
            .expect("promote project");
        assert_eq!(
            project.manifest_id, want["project"],
            "project id of {}",
            manifest.name
        );
        let global = registry
            .promote(&manifest.name, Scope::Global, true)
            .expect("promote global");
        assert_eq!(
            global.manifest_id, want["global"],
            "global id of {}",
            manifest.name
        );
        // The record on disk canonicalises to itself and hashes back to its id.
        let record = manifest.record_json();
        assert_eq!(
            codecell_manifest::canonical::canonicalize_str(&record).unwrap(),
            record
        );
    }
}

#[test]
fn session_record_has_the_seeds_fields_and_float_spellings() {
    let core = codecell_manifest::manifest::SessionCore {
        name: "t",
        description: "d",
        input_schema: &json!({"type": "object", "properties": {}, "additionalProperties": false}),
        output_schema: &json!({"type": "object", "properties": {}, "additionalProperties": false}),
        implementation: "def execute(args):\n    return {}\n",
        imports: &[],
        session_id: "s",
        ttl_s: 3600.0,
    };
    let manifest = core.into_manifest(1e9);
    let record = manifest.record_json();
    assert!(record.contains("\"ttl_s\":3600.0"), "{record}");
    assert!(record.contains("\"created_at\":1000000000.0"), "{record}");
    assert!(record.contains("\"expires_at\":1000003600.0"), "{record}");
    assert!(record.contains("\"version\":1"), "{record}");
    assert!(
        !record.contains("scope_id"),
        "v1 records have no scope_id: {record}"
    );
}
