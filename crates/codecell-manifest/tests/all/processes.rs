//! Several processes writing one store: concurrent promoters lose nothing, and a writer killed
//! with SIGKILL mid-write leaves a store that loads cleanly.

use crate::common::{PythonRunner, add_spec, add_spec_v2, clock, open};
use codecell_manifest::event_log::parse_log;
use codecell_manifest::{Operation, Scope};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

/// The `store_writer` example, which `cargo test` builds next to the test binaries.
fn writer_exe() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let path = dir
        .join("examples")
        .join(format!("store_writer{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        // A filtered run (`cargo test --test all processes`) does not build examples: build it.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "-p",
                "codecell-manifest",
                "--example",
                "store_writer",
            ])
            .status()
            .expect("run cargo to build the store_writer example");
        assert!(status.success(), "building the store_writer example failed");
    }
    assert!(path.exists(), "{} is missing", path.display());
    path
}

#[test]
fn two_processes_promoting_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    const COUNT: usize = 25;
    let children: Vec<_> = ["alpha", "beta"]
        .iter()
        .map(|session| {
            Command::new(writer_exe())
                .args([
                    dir.path().to_str().unwrap(),
                    session,
                    "proj",
                    "promote",
                    &COUNT.to_string(),
                ])
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn writer")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "writer failed");
    }
    let log = std::fs::read(dir.path().join("scoped/events.jsonl")).unwrap();
    let (events, errors) = parse_log(&log, "events.jsonl");
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(events.len(), 2 * COUNT, "every promotion is in the log");
    assert!(events.iter().all(|e| e.operation == Operation::Promote));
    let reader = open(
        dir.path(),
        "reader",
        Some("proj"),
        clock(),
        Arc::new(PythonRunner::default()),
    );
    assert!(
        reader.load_errors().is_empty(),
        "{:#?}",
        reader.load_errors()
    );
    let tools = reader.tools();
    assert_eq!(tools.len(), 2 * COUNT, "every promoted tool resolves");
    assert!(tools.iter().all(|m| m.scope == Scope::Project));
    let mut ids: Vec<&str> = events.iter().map(|e| e.event_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 2 * COUNT, "event ids are unique");
}

#[cfg(unix)]
#[tokio::test]
async fn a_writer_killed_mid_write_leaves_a_loadable_store() {
    use std::io::{BufRead as _, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let runner = Arc::new(PythonRunner::default());
    let first = open(dir.path(), "one", Some("proj"), c.clone(), runner.clone());
    first.define(&add_spec("shared")).await.unwrap();
    let v1 = first.promote("shared", Scope::Project, true).unwrap();
    let second = open(dir.path(), "two", Some("proj"), c.clone(), runner.clone());
    second.define(&add_spec_v2("shared")).await.unwrap();
    let v2 = second.promote("shared", Scope::Project, true).unwrap();

    for round in 0..3 {
        let mut child = Command::new(writer_exe())
            .args([
                dir.path().to_str().unwrap(),
                &format!("victim{round}"),
                "proj",
                "hammer",
                &v1.manifest_id,
                &v2.manifest_id,
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn writer");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        std::thread::sleep(std::time::Duration::from_millis(150 + 100 * round));
        child.kill().expect("SIGKILL the writer");
        child.wait().unwrap();
    }

    let reader = open(
        dir.path(),
        "reader",
        Some("proj"),
        c.clone(),
        runner.clone(),
    );
    let errors = reader.load_errors();
    assert!(
        errors
            .iter()
            .all(|e| e.contains("incomplete (a torn write)") || e.contains("not a valid event")),
        "only torn log lines may be reported: {errors:#?}"
    );
    let active = reader
        .get("shared")
        .expect("shared still resolves")
        .manifest_id;
    assert!(active == v1.manifest_id || active == v2.manifest_id);
    let log = std::fs::read(dir.path().join("scoped/events.jsonl")).unwrap();
    let (events, _) = parse_log(&log, "events.jsonl");
    assert!(
        events.len() > 4,
        "the writers made progress: {} events",
        events.len()
    );
    // Every promoted tool whose event made it to the log resolves to a valid manifest.
    for event in events.iter().filter(|e| e.operation == Operation::Promote) {
        assert!(
            reader.get(&event.name).is_some(),
            "{} does not resolve",
            event.name
        );
    }
    // The store stays writable and the next writer's line is intact.
    reader
        .activate("shared", Scope::Project, &v1.manifest_id, true)
        .unwrap();
    let after = open(dir.path(), "after", Some("proj"), c.clone(), runner);
    assert_eq!(after.get("shared").unwrap().manifest_id, v1.manifest_id);
    assert!(
        std::fs::read(dir.path().join("scoped/events.jsonl"))
            .unwrap()
            .ends_with(b"\n")
    );
}
