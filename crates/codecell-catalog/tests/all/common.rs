//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
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

/// Asserts that `source` parses as Python: by CPython's `ast.parse`, or on Windows (where a
/// test under Wine cannot start a Linux python3) by rustpython-parser, the policy's parser.
pub fn assert_valid_python(name: &str, source: &str) {
    #[cfg(not(windows))]
    let (ok, err) = {
        let (ok, _, err) = run_python("import ast,sys; ast.parse(sys.stdin.read())", source);
        (ok, err)
    };
    #[cfg(windows)]
    let (ok, err) = match rustpython_parser::parse(source, rustpython_parser::Mode::Module, name) {
        Ok(_) => (true, String::new()),
        Err(e) => (false, e.to_string()),
    };
    assert!(
        ok,
        "{name} is not valid Python:\n{err}\n--- source ---\n{source}"
    );
}

/// The `command_tool` example (`examples/command_tool.rs`), which `cargo test` builds next to
/// the test binaries: a command tool that runs wherever the tests do.
pub fn command_tool() -> String {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let path = dir
        .join("examples")
        .join(format!("command_tool{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        // A filtered run (`cargo test --test all command`) does not build examples: build it.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "-p",
                "codecell-catalog",
                "--example",
                "command_tool",
            ])
            .status()
            .expect("run cargo to build the command_tool example");
        assert!(status.success(), "building the command_tool example failed");
    }
    assert!(path.exists(), "{} is missing", path.display());
    path.to_string_lossy().into_owned()
}

/// The repository's fixtures directory.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}
