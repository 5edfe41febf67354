//! The differential corpus (`fixtures/differential/*.py`): ordinary tool code run on native
//! `python3` and on each guest, stdout compared.
//!
//! Every program must print on the CPython guest exactly what python3 prints. On RustPython it
//! must too, unless its header says `# rustpython-differs: <why>`; such a program must then still
//! differ, so the list of differences (README, "Known RustPython differences") stays true.
//!
//! python3's stdout for each program is also recorded in `fixtures/differential/expected/`: on
//! Windows, where a program under Wine cannot start a Linux python3, the recordings are the
//! oracle, and on Linux a test checks that they are still what python3 prints.

use codecell::{GuestKind, Limits, Status};
use codecell_tests::{engine, fixture};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// The header that marks a known RustPython difference.
const DIFFERS: &str = "# rustpython-differs:";

/// The corpus, sorted by file name.
fn programs() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(fixture("differential"))
        .expect("fixtures/differential exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "py")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().as_bytes()[0].is_ascii_digit())
        })
        .collect();
    paths.sort();
    paths
}

/// Native python3's stdout for every program, computed once per process (two at a time).
fn native_outputs() -> &'static BTreeMap<PathBuf, String> {
    static NATIVE: OnceLock<BTreeMap<PathBuf, String>> = OnceLock::new();
    NATIVE.get_or_init(|| {
        let paths = programs();
        let mut out = BTreeMap::new();
        for pair in paths.chunks(2) {
            let handles: Vec<_> = pair
                .iter()
                .cloned()
                .map(|p| std::thread::spawn(move || (p.clone(), native(&p))))
                .collect();
            for h in handles {
                let (p, stdout) = h.join().expect("native runner thread");
                out.insert(p, stdout);
            }
        }
        out
    })
}

/// Where python3's stdout for `program` is recorded: `expected/NN_topic.out` beside it.
fn recorded_path(program: &Path) -> PathBuf {
    let dir = program.parent().expect("a program is in a directory");
    dir.join("expected")
        .join(Path::new(program.file_name().expect("a file")).with_extension("out"))
}

/// The recorded stdout of every program (the oracle on Windows).
fn recorded_outputs() -> &'static BTreeMap<PathBuf, String> {
    static RECORDED: OnceLock<BTreeMap<PathBuf, String>> = OnceLock::new();
    RECORDED.get_or_init(|| {
        programs()
            .into_iter()
            .map(|p| {
                let file = recorded_path(&p);
                let text = std::fs::read_to_string(&file).unwrap_or_else(|e| {
                    panic!(
                        "{} is missing ({e}): record it on Linux ({RECORD})",
                        file.display()
                    )
                });
                (p, text)
            })
            .collect()
    })
}

/// How to record python3's outputs again, quoted when a recording is missing or stale.
const RECORD: &str = "CODECELL_RECORD=1 cargo test --test all the_recorded_outputs";

/// What each program must print: python3's stdout, or on Windows its recording.
fn oracle() -> &'static BTreeMap<PathBuf, String> {
    if cfg!(windows) {
        recorded_outputs()
    } else {
        native_outputs()
    }
}

/// The recordings are what python3 prints now, one per program and none left over;
/// `CODECELL_RECORD=1` writes them instead.
#[test]
#[cfg_attr(
    windows,
    ignore = "needs native python3, which a Windows program under Wine cannot start"
)]
fn the_recorded_outputs_are_what_native_python3_prints() {
    let record = std::env::var_os("CODECELL_RECORD").is_some();
    let mut stale = Vec::new();
    for (program, stdout) in native_outputs() {
        let file = recorded_path(program);
        if record {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, stdout).unwrap();
        } else if std::fs::read_to_string(&file).ok().as_ref() != Some(stdout) {
            stale.push(file.display().to_string());
        }
    }
    let dir = fixture("differential/expected");
    let wanted: Vec<PathBuf> = programs().iter().map(|p| recorded_path(p)).collect();
    for entry in std::fs::read_dir(&dir).expect("fixtures/differential/expected exists") {
        let path = entry.unwrap().path();
        if !wanted.contains(&path) {
            stale.push(format!("{} (no program)", path.display()));
        }
    }
    assert!(
        stale.is_empty(),
        "missing, stale or left over: {stale:#?}; record again: {RECORD}"
    );
}

fn native(path: &PathBuf) -> String {
    let output = Command::new("python3")
        .arg(path)
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONIOENCODING", "utf-8")
        .output()
        .unwrap_or_else(|e| panic!("python3 must be installed to run {}: {e}", path.display()));
    assert!(
        output.status.success(),
        "native python3 failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("python3 printed UTF-8")
}

codecell_tests::for_each_guest! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn corpus_agrees_with_native_python3() {
        let paths = programs();
        assert!(paths.len() >= 30, "the corpus has only {} programs", paths.len());
        let limits = Limits {
            deadline: Duration::from_secs(30),
            ..Limits::default()
        };
        let engine = engine(GUEST);
        let native = oracle();
        let mut failures = Vec::new();
        let mut listed = 0;
        for path in &paths {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let source = std::fs::read_to_string(path).unwrap();
            let expected = &native[path];
            let outcome = engine
                .run_snippet(&source, None, &limits)
                .await
                .expect("the host itself does not fail");
            let same = outcome.status() == Status::Ok && &outcome.stdout == expected;
            let known = GUEST == GuestKind::RustPython && source.lines().any(|l| l.starts_with(DIFFERS));
            listed += usize::from(known);
            match (same, known) {
                (true, false) | (false, true) => {}
                (true, true) => failures.push(format!(
                    "{name}: listed as a RustPython difference but now agrees with python3: remove its `{DIFFERS}` header and its README entry"
                )),
                (false, false) => failures.push(format!(
                    "{name}: differs from python3\n--- python3\n{expected}--- {GUEST} ({:?}{})\n{}",
                    outcome.status(),
                    outcome
                        .error()
                        .map(|e| format!(": {}: {}", e.kind, e.message))
                        .unwrap_or_default(),
                    outcome.stdout
                )),
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} programs broke the rule on {GUEST} ({listed} listed as known differences):\n{}",
            failures.len(),
            paths.len(),
            failures.join("\n")
        );
    }
}
