//! Several processes writing one store: concurrent promoters lose nothing, and a writer killed
//! with SIGKILL mid-write leaves a store that loads cleanly, and concurrent defines of one name
//! in one session leave exactly one tool.

use crate::common::{PythonRunner, clock_now as clock, open};
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
    use crate::common::{add_spec, add_spec_v2};
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

/// Issue 10, class 8: four processes defining one name in one session all succeeded.
#[test]
fn four_processes_defining_one_name_in_one_session_yield_one_tool() {
    use std::io::{BufRead as _, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let mut children: Vec<_> = (0..4)
        .map(|i| {
            Command::new(writer_exe())
                .args([
                    dir.path().join("store").to_str().unwrap(),
                    "same-session",
                    "proj",
                    "define",
                    "contested",
                    &format!("writer {i}"),
                    go.to_str().unwrap(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn writer")
        })
        .collect();
    let mut outputs: Vec<_> = children
        .iter_mut()
        .map(|child| BufReader::new(child.stdout.take().unwrap()))
        .collect();
    for out in &mut outputs {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready");
    }
    std::fs::write(&go, "").unwrap();
    let mut defined = Vec::new();
    let mut refused = Vec::new();
    for (child, out) in children.iter_mut().zip(outputs) {
        let line = out.lines().next().unwrap().unwrap();
        let status = child.wait().unwrap();
        if status.success() {
            defined.push(line);
        } else {
            assert_eq!(status.code(), Some(3), "{line}");
            refused.push(line);
        }
    }
    assert_eq!(
        defined.len(),
        1,
        "defined: {defined:#?}, refused: {refused:#?}"
    );
    assert!(
        refused
            .iter()
            .all(|l| l.contains("session dynamic tool already exists: \"contested\"")),
        "{refused:#?}"
    );
    let files = std::fs::read_dir(dir.path().join("store/sessions/s-same-session"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("dyn-"))
        .count();
    assert_eq!(files, 1, "exactly one manifest on disk");
}
