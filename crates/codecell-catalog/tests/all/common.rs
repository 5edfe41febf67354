//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The python3 the tests use; a missing interpreter fails the test with a clear message.
pub fn python3() -> &'static str {
    let ok = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "python3 is required by this test (stub validity and command handlers) but was not found on PATH"
    );
    "python3"
}

/// Runs python3 with `script`, feeding `stdin`; returns (success, stdout, stderr).
pub fn run_python(script: &str, stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(python3())
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn python3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts that `source` parses as Python (ast.parse).
pub fn assert_valid_python(name: &str, source: &str) {
    let (ok, _, err) = run_python("import ast,sys; ast.parse(sys.stdin.read())", source);
    assert!(
        ok,
        "{name} is not valid Python:\n{err}\n--- source ---\n{source}"
    );
}

/// The repository's fixtures directory.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}
