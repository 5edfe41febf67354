//! Every load-time check, each with a tampered file: the bad file stays inert and is reported in
//! `load_errors`; the good ones still load.

use crate::common::{self, PythonRunner, add_spec, clock, open};
use codecell_manifest::{Registry, Scope};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

type Mutation = fn(&mut Value);

fn fake_name(i: usize) -> String {
    format!("dyn-{:064x}", 0xabc000 + i)
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn assert_reported(registry: &Registry, file: &str, needle: &str) {
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

#[tokio::test]
async fn deeply_nested_files_do_not_crash_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let registry = open(
        dir.path(),
        "deep",
        None,
        c.clone(),
        Arc::new(PythonRunner::default()),
    );
    let good = registry.define(&add_spec("add")).await.unwrap();
    let session_dir = dir.path().join("sessions/s-deep");
    let mut schema = String::from("{\"type\":\"object\"}");
    for _ in 0..400 {
        schema = format!("{{\"type\":\"object\",\"properties\":{{\"a\":{schema}}}}}");
    }
    let mut record = good.record_json();
    record = record.replacen(
        "\"input_schema\":{",
        &format!("\"input_schema\":{{\"properties\":{{\"deep\":{schema}}},"),
        1,
    );
    write(&session_dir, &format!("{}.json", fake_name(0)), &record);
    write(
        &session_dir,
        &format!("{}.json", fake_name(1)),
        &"[".repeat(100_000),
    );
    let reopened = open(
        dir.path(),
        "deep",
        None,
        c,
        Arc::new(PythonRunner::default()),
    );
    assert_reported(&reopened, &fake_name(0), "");
    assert_reported(&reopened, &fake_name(1), "nested deeper than");
    assert_eq!(reopened.tools().len(), 1);
}

#[tokio::test]
async fn an_unterminated_whole_event_never_takes_effect() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let runner = Arc::new(PythonRunner::default());
    let a = open(dir.path(), "a", Some("p"), c.clone(), runner.clone());
    a.define(&add_spec("add")).await.unwrap();
    let v1 = a.promote("add", Scope::Project, true).unwrap();
    let b = open(dir.path(), "b", Some("p"), c.clone(), runner.clone());
    b.define(&common::add_spec_v2("add")).await.unwrap();
    let v2 = b.promote("add", Scope::Project, true).unwrap();

    // A whole "activate v1" event whose writer died before the newline.
    let log = dir.path().join("scoped/events.jsonl");
    let mut event = a.last_audit_event().unwrap();
    event.event_id = "unconfirmed".into();
    event.operation = codecell_manifest::Operation::Activate;
    event.manifest_id = v1.manifest_id.clone();
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(&event.to_line());
    std::fs::write(&log, text).unwrap();

    let reader = open(dir.path(), "r", Some("p"), c.clone(), runner.clone());
    assert_eq!(reader.get("add").unwrap().manifest_id, v2.manifest_id);
    assert_reported(&reader, "events.jsonl: line 3", "incomplete (a torn write)");

    // A later append must not turn the fragment into a valid line.
    b.define(&add_spec("other")).await.unwrap();
    b.promote("other", Scope::Project, true).unwrap();
    let later = open(dir.path(), "r2", Some("p"), c, runner);
    assert_eq!(later.get("add").unwrap().manifest_id, v2.manifest_id);
    assert!(later.get("other").is_some());
    assert_reported(&later, "events.jsonl: line 3", "incomplete (a torn write)");
}

/// Issue 10, class 8: a session manifest with `created_at` in 2100 (its id does not cover the
/// time) loaded and never expired; a scoped one sorted as the newest version for decades.
#[tokio::test]
async fn a_manifest_from_the_future_is_a_load_error() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let runner = Arc::new(PythonRunner::default());
    let registry = open(dir.path(), "sess", Some("proj"), c.clone(), runner.clone());
    let session = registry.define(&add_spec("add")).await.unwrap();
    let scoped = registry.promote("add", Scope::Project, true).unwrap();
    let now = 1_712_345_678.25;
    let session_file = dir
        .path()
        .join(format!("sessions/s-sess/{}.json", session.manifest_id));
    let scoped_file = dir
        .path()
        .join(format!("scoped/manifests/{}.json", scoped.manifest_id));
    let moved = |file: &Path, created_at: f64, session_record: bool| {
        let mut record: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        record["created_at"] = json!(created_at);
        if session_record {
            record["expires_at"] = json!(created_at + 3600.0);
        }
        std::fs::write(file, record.to_string()).unwrap();
    };

    // Within the allowed skew: still loads.
    moved(&session_file, now + 200.0, true);
    moved(&scoped_file, now + 200.0, false);
    let reader = open(dir.path(), "sess", Some("proj"), c.clone(), runner.clone());
    assert!(
        reader.load_errors().is_empty(),
        "{:#?}",
        reader.load_errors()
    );
    assert_eq!(reader.versions(Some("add"), None).versions.len(), 1);

    moved(&session_file, 4_102_444_800.0, true);
    moved(&scoped_file, 4_102_444_800.0, false);
    let reader = open(dir.path(), "sess", Some("proj"), c.clone(), runner.clone());
    assert_reported(&reader, &session.manifest_id, "is in the future");
    assert_reported(&reader, &scoped.manifest_id, "is in the future");
    assert!(reader.get("add").is_none(), "neither version resolves");
    // Once the clock reaches it, the scoped record is an ordinary version (verdicts are cached
    // by content, the time check is not).
    c.set(4_102_444_800.0);
    assert_eq!(reader.versions(Some("add"), None).versions.len(), 1);
}
