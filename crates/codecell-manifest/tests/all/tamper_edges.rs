//! Load-time checks on files that are malformed at the edges: deeply nested, an event line cut
//! short, a creation time in the future. As in `tamper.rs`, the bad file stays inert and reported.

use crate::common::{self, PythonRunner, add_spec, clock, open};
use codecell_manifest::Scope;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

use crate::tamper::{assert_reported, fake_name, write};

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
