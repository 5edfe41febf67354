//! Store files that are not what they claim (issue 10, class 8): a FIFO, a directory or a huge
//! file in place of a manifest or of the event log is refused quickly and reported, and the
//! number and length of load errors stay bounded whatever the store holds.

use crate::common::{PythonRunner, add_spec, clock, open};
use codecell_manifest::Scope;
use codecell_manifest::load_errors::{MAX_LOAD_ERROR_BYTES, MAX_LOAD_ERRORS};
use codecell_manifest::store::{MAX_EVENT_LOG_BYTES, MAX_MANIFEST_BYTES};
use std::sync::Arc;
use std::time::Duration;

/// Runs `f` on its own thread and fails the test if it has not returned within 20 s (on the old
/// code a FIFO blocked the open forever; the test must fail, not hang).
#[cfg(unix)]
fn within_deadline<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what} did not finish within 20 s: it blocked"))
}

#[cfg(unix)]
fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

fn fake_id(i: usize) -> String {
    format!("dyn-{:064x}", 0xf1f0_0000 + i)
}

#[cfg(unix)]
#[tokio::test]
async fn a_fifo_in_place_of_the_log_or_a_manifest_does_not_block_listing() {
    let dir = tempfile::tempdir().unwrap();
    let registry = open(
        dir.path(),
        "sess",
        Some("proj"),
        clock(),
        Arc::new(PythonRunner::default()),
    );
    registry.define(&add_spec("add")).await.unwrap();
    registry.promote("add", Scope::Project, true).unwrap();
    drop(registry);
    let root = dir.path().to_path_buf();
    std::fs::remove_file(root.join("scoped/events.jsonl")).unwrap();
    mkfifo(&root.join("scoped/events.jsonl"));
    mkfifo(&root.join(format!("scoped/manifests/{}.json", fake_id(1))));
    mkfifo(&root.join(format!("sessions/s-sess/{}.json", fake_id(2))));

    let (names, errors) = within_deadline("listing a store with FIFOs", move || {
        let registry = open(
            &root,
            "sess",
            Some("proj"),
            clock(),
            Arc::new(PythonRunner::default()),
        );
        let names: Vec<String> = registry.tools().into_iter().map(|m| m.name).collect();
        (names, registry.load_errors())
    });
    // The session tool still resolves; the project version has no readable log to activate it.
    assert_eq!(names, ["add"]);
    for file in ["events.jsonl", &fake_id(1), &fake_id(2)] {
        assert!(
            errors
                .iter()
                .any(|e| e.contains(file) && e.contains("not a regular file")),
            "{file} is not reported as refused: {errors:#?}"
        );
    }
}

#[cfg(unix)]
#[tokio::test]
async fn a_fifo_in_place_of_the_lock_or_the_log_fails_a_write_instead_of_blocking() {
    for victim in ["scoped/.lock", "scoped/events.jsonl"] {
        let dir = tempfile::tempdir().unwrap();
        let registry = open(
            dir.path(),
            "sess",
            Some("proj"),
            clock(),
            Arc::new(PythonRunner::default()),
        );
        registry.define(&add_spec("add")).await.unwrap();
        let _ = std::fs::remove_file(dir.path().join(victim));
        mkfifo(&dir.path().join(victim));
        let registry = Arc::new(registry);
        let promoting = registry.clone();
        let result = within_deadline("a promotion", move || {
            promoting
                .promote("add", Scope::Project, true)
                .map(|m| m.manifest_id)
        });
        let error = result.expect_err("a write through a FIFO must fail");
        assert!(
            error.to_string().contains("not a regular file"),
            "{victim}: {error}"
        );
    }
}

#[tokio::test]
async fn a_directory_in_place_of_a_manifest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let registry = open(
        dir.path(),
        "sess",
        None,
        clock(),
        Arc::new(PythonRunner::default()),
    );
    drop(registry);
    std::fs::create_dir_all(
        dir.path()
            .join(format!("scoped/manifests/{}.json", fake_id(3))),
    )
    .unwrap();
    let registry = open(
        dir.path(),
        "sess",
        None,
        clock(),
        Arc::new(PythonRunner::default()),
    );
    let errors = registry.load_errors();
    assert!(
        errors
            .iter()
            .any(|e| e.contains(&fake_id(3)) && e.contains("not a regular file")),
        "{errors:#?}"
    );
}

#[tokio::test]
async fn an_event_log_over_its_limit_loads_nothing_and_takes_no_appends() {
    let dir = tempfile::tempdir().unwrap();
    let registry = open(
        dir.path(),
        "sess",
        Some("proj"),
        clock(),
        Arc::new(PythonRunner::default()),
    );
    registry.define(&add_spec("add")).await.unwrap();
    registry.promote("add", Scope::Project, true).unwrap();
    let log = dir.path().join("scoped/events.jsonl");
    // 20 MB of junk lines, appended to a log with one good event.
    let mut bytes = std::fs::read(&log).unwrap();
    let junk = b"{not an event}\n";
    while (bytes.len() as u64) <= MAX_EVENT_LOG_BYTES + 4 * 1024 * 1024 {
        bytes.extend_from_slice(junk);
    }
    std::fs::write(&log, &bytes).unwrap();
    let started = std::time::Instant::now();
    let reader = open(
        dir.path(),
        "reader",
        Some("proj"),
        clock(),
        Arc::new(PythonRunner::default()),
    );
    assert!(
        reader.get("add").is_none(),
        "no event loads from an oversized log"
    );
    let errors = reader.load_errors();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("events.jsonl") && e.contains("larger than the limit")),
        "{errors:#?}"
    );
    assert!(
        errors.len() <= 2,
        "one error for the log, not one per line: {errors:#?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let refused = registry.promote("add", Scope::Global, true).unwrap_err();
    assert!(refused.to_string().contains("limit"), "{refused}");
    assert_eq!(std::fs::metadata(&log).unwrap().len(), bytes.len() as u64);
}

#[tokio::test]
async fn junk_log_lines_under_the_limit_give_a_bounded_report() {
    let dir = tempfile::tempdir().unwrap();
    let registry = open(
        dir.path(),
        "sess",
        Some("proj"),
        clock(),
        Arc::new(PythonRunner::default()),
    );
    registry.define(&add_spec("add")).await.unwrap();
    let good = registry.promote("add", Scope::Project, true).unwrap();
    let log = dir.path().join("scoped/events.jsonl");
    let mut bytes = std::fs::read(&log).unwrap();
    let lines = 500_000;
    for i in 0..lines {
        bytes.extend_from_slice(format!("junk {i}\n").as_bytes());
    }
    // One line quoting a 100 KB field: its error is clipped, not copied.
    let long = std::fs::read_to_string(&log).unwrap().trim_end().replace(
        "\"name\":\"add\"",
        &format!("\"name\":\"{}\"", "n".repeat(100_000)),
    );
    let mut front = long.into_bytes();
    front.push(b'\n');
    front.extend_from_slice(&bytes);
    std::fs::write(&log, &front).unwrap();
    let reader = open(
        dir.path(),
        "reader",
        Some("proj"),
        clock(),
        Arc::new(PythonRunner::default()),
    );
    assert_eq!(reader.get("add").unwrap().manifest_id, good.manifest_id);
    // Query again: the same errors are not counted twice.
    reader.tools();
    let errors = reader.load_errors();
    assert_eq!(errors.len(), MAX_LOAD_ERRORS + 1, "{errors:#?}");
    assert!(errors.iter().all(|e| e.len() <= MAX_LOAD_ERROR_BYTES));
    assert!(
        errors[0].starts_with("events.jsonl: line 1 is not a valid event: invalid tool name"),
        "{}",
        errors[0]
    );
    assert!(
        errors.iter().any(|e| e
            == &format!(
                "events.jsonl: … and {} more load errors",
                lines + 1 - MAX_LOAD_ERRORS
            )),
        "{:#?}",
        &errors[MAX_LOAD_ERRORS - 2..]
    );
}

#[tokio::test]
async fn many_bad_manifests_give_a_bounded_report() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("scoped/manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    for i in 0..250 {
        std::fs::write(manifests.join(format!("{}.json", fake_id(1000 + i))), "[").unwrap();
    }
    let sessions = dir.path().join("sessions/s-sess");
    std::fs::create_dir_all(&sessions).unwrap();
    for i in 0..250 {
        std::fs::write(sessions.join(format!("{}.json", fake_id(i))), "[").unwrap();
    }
    std::fs::write(
        sessions.join(format!("{}.json", fake_id(999))),
        "x".repeat(MAX_MANIFEST_BYTES as usize + 1),
    )
    .unwrap();
    let registry = open(
        dir.path(),
        "sess",
        None,
        clock(),
        Arc::new(PythonRunner::default()),
    );
    registry.tools();
    registry.tools();
    let errors = registry.load_errors();
    // 251 session and 250 scoped errors: each source keeps 100 and counts the rest; the
    // registry keeps the first 100 overall and counts the distinct ones it dropped.
    assert_eq!(
        &errors[MAX_LOAD_ERRORS..],
        [
            "scoped/manifests: … and 150 more load errors",
            "sessions/s-sess: … and 151 more load errors",
            "store: … and 100 more load errors",
        ],
        "{errors:#?}"
    );
    assert!(errors.iter().all(|e| e.len() <= MAX_LOAD_ERROR_BYTES));
}
