//! Every load-time check, each with a tampered file: the bad file stays inert and is reported in
//! `load_errors`; the good ones still load.

use crate::common::{PythonRunner, add_spec, clock, open};
use codecell_manifest::{Registry, Scope};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

type Mutation = fn(&mut Value);

pub(crate) fn fake_name(i: usize) -> String {
    format!("dyn-{:064x}", 0xabc000 + i)
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

pub(crate) fn assert_reported(registry: &Registry, file: &str, needle: &str) {
    let errors = registry.load_errors();
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with(file) && e.contains(needle)),
        "no load error for {file} containing {needle:?}; got {errors:#?}"
    );
}

#[tokio::test]
async fn tampered_session_manifests_stay_inert() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let registry = open(
        dir.path(),
        "sess",
        None,
        c.clone(),
        Arc::new(PythonRunner::default()),
    );
    let good = registry.define(&add_spec("add")).await.unwrap();
    let session_dir = dir.path().join("sessions/s-sess");
    let record = good.record();

    let cases: Vec<(Mutation, &str)> = vec![
        (|r| r["version"] = json!(2), "unsupported manifest record"),
        (
            |r| r["session_id"] = json!("someone-else"),
            "session identity mismatch",
        ),
        (
            |r| r["implementation"] = json!("import os\ndef execute(args):\n    return {}\n"),
            "source rejected",
        ),
        (
            |r| r["implementation"] = json!("def execute(args):\n    return eval('1')\n"),
            "source rejected",
        ),
        (
            |r| r["imports"] = json!(["json"]),
            "validated import set mismatch",
        ),
        (
            |r| r["permissions"] = json!(["network"]),
            "session manifest requests permissions",
        ),
        (
            |r| r["name"] = json!("bad name"),
            "manifest identity is invalid",
        ),
        (
            |r| r["description"] = json!("   "),
            "manifest identity is invalid",
        ),
        (
            |r| r["name"] = json!("bash"),
            "manifest identity is reserved",
        ),
        (
            |r| r["input_schema"] = json!("not a schema"),
            "input_schema must be a JSON schema object",
        ),
        (
            |r| r["output_schema"] = json!({"type": 5}),
            "output_schema is not a valid JSON schema",
        ),
        (|r| r["ttl_s"] = json!(100000), "(0, 86400]"),
        (|r| r["ttl_s"] = json!([1]), "must be a number"),
        (
            |r| r["created_at"] = json!("nan"),
            "manifest timestamps are invalid",
        ),
        (
            |r| r["expires_at"] = json!(r["expires_at"].as_f64().unwrap() + 10.0),
            "expiry does not match its TTL",
        ),
        (
            |r| r["description"] = json!("Add two numbers, tampered."),
            "content hash mismatch",
        ),
        (
            |r| r["input_schema"]["properties"]["a"]["type"] = json!("string"),
            "content hash mismatch",
        ),
        (
            |r| r["manifest_id"] = json!(format!("dyn-{}", "1".repeat(64))),
            "content hash mismatch",
        ),
    ];
    for (i, (mutate, _)) in cases.iter().enumerate() {
        let mut tampered = record.clone();
        mutate(&mut tampered);
        write(
            &session_dir,
            &format!("{}.json", fake_name(i)),
            &tampered.to_string(),
        );
    }
    // A valid record under a file name that is not its id.
    write(
        &session_dir,
        &format!("{}.json", fake_name(100)),
        &good.record_json(),
    );
    write(
        &session_dir,
        &format!("{}.json", fake_name(101)),
        "{not json",
    );
    write(
        &session_dir,
        &format!("{}.json", fake_name(102)),
        &format!(
            "{{\"pad\":\"{}\"}}",
            "x".repeat(codecell_manifest::store::MAX_MANIFEST_BYTES as usize + 1)
        ),
    );
    write(
        &session_dir,
        &format!("{}.json", fake_name(103)),
        "[1, NaN]",
    );
    write(
        &session_dir,
        &format!("{}.json", fake_name(104)),
        "\u{0}\u{ff}",
    );
    // A project-scoped record in a session directory is skipped silently, like the seed.
    let mut other_scope = record.clone();
    other_scope["scope"] = json!("project");
    write(
        &session_dir,
        &format!("{}.json", fake_name(105)),
        &other_scope.to_string(),
    );
    // A leftover temporary file from an interrupted write is not a manifest.
    write(
        &session_dir,
        &format!(".{}.json.1234.tmp", good.manifest_id),
        "{\"torn",
    );

    let reopened = open(
        dir.path(),
        "sess",
        None,
        c.clone(),
        Arc::new(PythonRunner::default()),
    );
    for (i, (_, needle)) in cases.iter().enumerate() {
        assert_reported(&reopened, &fake_name(i), needle);
    }
    assert_reported(&reopened, &fake_name(100), "content hash mismatch");
    assert_reported(&reopened, &fake_name(101), "invalid JSON");
    assert_reported(&reopened, &fake_name(102), "manifest is too large");
    assert_reported(&reopened, &fake_name(103), "non-finite");
    assert_reported(&reopened, &fake_name(104), "");
    assert!(
        !reopened
            .load_errors()
            .iter()
            .any(|e| e.starts_with(&fake_name(105)))
    );
    assert!(!reopened.load_errors().iter().any(|e| e.contains(".tmp")));
    assert_eq!(
        reopened.load_errors().len(),
        cases.len() + 5,
        "{:#?}",
        reopened.load_errors()
    );
    let tools = reopened.tools();
    assert_eq!(tools.len(), 1, "only the good manifest loads");
    assert_eq!(tools[0].manifest_id, good.manifest_id);
}

#[tokio::test]
async fn tampered_scoped_manifests_and_events_stay_inert() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let registry = open(
        dir.path(),
        "sess",
        Some("proj"),
        c.clone(),
        Arc::new(PythonRunner::default()),
    );
    registry.define(&add_spec("add")).await.unwrap();
    let project = registry.promote("add", Scope::Project, true).unwrap();
    let global = registry.promote("add", Scope::Global, true).unwrap();
    let manifests_dir = dir.path().join("scoped/manifests");

    let cases: Vec<(bool, Mutation, &str)> = vec![
        (
            false,
            |r| r["version"] = json!(1),
            "unsupported scoped dynamic manifest version",
        ),
        (
            false,
            |r| r["scope"] = json!("session"),
            "scoped manifest scope is invalid",
        ),
        (
            false,
            |r| r["scope_id"] = json!(""),
            "project scoped manifest lacks project_id",
        ),
        (
            true,
            |r| r["scope_id"] = json!("proj"),
            "global scoped manifest has a scope_id",
        ),
        (
            false,
            |r| r["source_root_frame_id"] = json!(""),
            "lacks bound source scope",
        ),
        (
            false,
            |r| r["source_project_id"] = json!(null),
            "lacks bound source scope",
        ),
        (
            false,
            |r| r["source_project_id"] = json!("elsewhere"),
            "project scoped manifest source/scope mismatch",
        ),
        (
            false,
            |r| r["implementation"] = json!("def execute(args):\n    return args.__class__\n"),
            "source rejected",
        ),
        (
            false,
            |r| r["imports"] = json!([]),
            "validated import set mismatch",
        ),
        (
            false,
            |r| r["permissions"] = json!(["fs"]),
            "dynamic scoped manifest requests permissions",
        ),
        (
            false,
            |r| r["name"] = json!("-x"),
            "scoped manifest identity is invalid",
        ),
        (
            false,
            |r| r["name"] = json!("finalize_response"),
            "scoped manifest identity is reserved",
        ),
        (
            false,
            |r| r["input_schema"] = json!({"type": "object", "required": "a"}),
            "input_schema is not a valid JSON schema",
        ),
        (false, |r| r["ttl_s"] = json!(0), "(0, 86400]"),
        (
            false,
            |r| r["created_at"] = json!("inf"),
            "scoped manifest timestamps are invalid",
        ),
        (
            false,
            |r| r["created_at"] = json!(253_402_300_800.0_f64),
            "scoped manifest timestamps are invalid",
        ),
        (
            false,
            |r| r["expires_at"] = json!(4_000_000_000.0_f64),
            "scoped manifest expiry is invalid",
        ),
        (
            false,
            |r| r["source_manifest_id"] = json!("dyn-XYZ"),
            "scoped manifest source id is invalid",
        ),
        (
            false,
            |r| r["session_id"] = json!("impostor"),
            "scoped manifest root identity mismatch",
        ),
        (
            false,
            |r| r["description"] = json!("changed"),
            "scoped manifest content hash mismatch",
        ),
        (
            true,
            |r| {
                r["implementation"] = json!(
                    "import math\ndef execute(args):\n    return {\"sum\": math.fsum([0.0])}\n"
                )
            },
            "scoped manifest content hash mismatch",
        ),
    ];
    for (i, (is_global, mutate, _)) in cases.iter().enumerate() {
        let mut tampered = if *is_global {
            global.record()
        } else {
            project.record()
        };
        mutate(&mut tampered);
        write(
            &manifests_dir,
            &format!("{}.json", fake_name(i)),
            &tampered.to_string(),
        );
    }
    write(
        &manifests_dir,
        &format!("{}.json", fake_name(100)),
        &project.record_json(),
    );
    write(&manifests_dir, &format!("{}.json", fake_name(101)), "");

    // Events: a garbage line, a wrong-shaped event, an activation of an inert manifest, a torn tail.
    let log = dir.path().join("scoped/events.jsonl");
    let mut text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 2);
    text.push_str("this is not json\n");
    text.push_str("{\"event_id\":\"e\",\"operation\":\"explode\"}\n");
    let mut bad_activation: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    bad_activation["operation"] = json!("activate");
    bad_activation["event_id"] = json!("forged");
    bad_activation["manifest_id"] = json!(fake_name(19));
    text.push_str(&format!("{bad_activation}\n"));
    text.push_str("{\"event_id\":\"torn\",\"operat");
    std::fs::write(&log, text).unwrap();

    let reopened = open(
        dir.path(),
        "other-session",
        Some("proj"),
        c.clone(),
        Arc::new(PythonRunner::default()),
    );
    for (i, (_, _, needle)) in cases.iter().enumerate() {
        assert_reported(&reopened, &fake_name(i), needle);
    }
    assert_reported(
        &reopened,
        &fake_name(100),
        "file name does not match its content hash",
    );
    assert_reported(&reopened, &fake_name(101), "invalid JSON");
    assert_reported(&reopened, "events.jsonl: line 3", "not a valid event");
    assert_reported(&reopened, "events.jsonl: line 4", "not a valid event");
    assert_reported(
        &reopened,
        "events.jsonl: line 6",
        "incomplete (a torn write)",
    );
    assert_reported(
        &reopened,
        "activation for project:add",
        "references unavailable manifest",
    );
    // The forged activation points at an inert version: the name does not resolve in project
    // scope any more (as in the seed), so the active global version is what resolves.
    assert_eq!(reopened.get("add").unwrap().manifest_id, global.manifest_id);
    let report = reopened.versions(Some("add"), None);
    assert_eq!(
        report.versions.len(),
        2,
        "only the two genuine versions are listed"
    );

    // The store stays writable: re-activating the genuine version repairs resolution, and the
    // torn tail does not swallow the new line.
    reopened
        .activate("add", Scope::Project, &project.manifest_id, true)
        .unwrap();
    let again = open(
        dir.path(),
        "third",
        Some("proj"),
        c.clone(),
        Arc::new(PythonRunner::default()),
    );
    assert_eq!(again.get("add").unwrap().manifest_id, project.manifest_id);
    assert!(
        again
            .load_errors()
            .iter()
            .any(|e| e.contains("line 6 is incomplete (a torn write)")),
        "torn fragment is now a bad line of its own: {:#?}",
        again.load_errors()
    );
    assert!(std::fs::read_to_string(&log).unwrap().ends_with("}\n"));
}
