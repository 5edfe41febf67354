//! The CLI contract, run as a process: flags, the `--json` object and the exit codes.

use crate::common::codecell;

use serde_json::Value;
use std::process::Output;

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Every guest, by its `--guest` name: the run tests below are repeated on each.
fn guests() -> impl Iterator<Item = &'static str> {
    codecell::ALL_GUESTS
        .into_iter()
        .map(codecell::GuestKind::name)
}

fn catalog() -> String {
    fixture("demo/catalog.json").to_string_lossy().into_owned()
}

#[test]
#[cfg_attr(
    windows,
    ignore = "calls the demo catalog file's python3 command tools, which a Windows program under Wine cannot start"
)]
fn run_json_demo_is_ok_with_the_right_stdout() {
    for guest in guests() {
        let demo = fixture("snippets/demo.py").to_string_lossy().into_owned();
        let out = codecell(
            &[
                "run",
                "--guest",
                guest,
                &demo,
                "--tools",
                &catalog(),
                "--json",
            ],
            "",
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json_of(&out);
        assert_eq!(v["status"], "ok");
        assert!(v["stdout"].as_str().unwrap().contains("100 C = 212.0 F"));
        assert_eq!(v["truncated"], false);
        assert!(v["error"].is_null());
        assert!(v["limit"].is_null());
        // Without `--fuel` the engine meters by epoch: nothing is counted, and it says 0.
        assert_eq!(v["fuel_used"].as_u64(), Some(0), "{v}");
        assert!(v["duration_ms"].as_f64().unwrap() > 0.0);
        let calls = v["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 3);
        for key in [
            "category",
            "name",
            "ok",
            "duration_us",
            "args_bytes",
            "result_bytes",
        ] {
            assert!(calls[0].get(key).is_some(), "tool call record lacks {key}");
        }
    }
}

#[test]
fn guest_error_exits_1_with_error_object() {
    for guest in guests() {
        let (code, v) = run_json(guest, &[], "raise ValueError('nope')");
        assert_eq!(code, Some(1));
        assert_eq!(v["status"], "error");
        assert_eq!(v["error"]["type"], "ValueError");
        assert_eq!(v["error"]["message"], "nope");
        assert!(
            v["error"]["traceback"]
                .as_str()
                .unwrap()
                .contains("ValueError: nope")
        );
    }
}

/// `codecell run --guest GUEST - --json FLAGS…` with `code` on stdin: the exit code and the JSON.
fn run_json(guest: &str, flags: &[&str], code: &str) -> (Option<i32>, Value) {
    let mut args = vec!["run", "--guest", guest, "-", "--json"];
    args.extend_from_slice(flags);
    let out = codecell(&args, code);
    (out.status.code(), json_of(&out))
}

#[test]
fn limit_exits_1_and_names_the_limit() {
    for guest in guests() {
        let (code, v) = run_json(
            guest,
            &["--timeout-ms", "1000"],
            "import time\ntime.sleep(3600)",
        );
        assert_eq!(code, Some(1));
        assert_eq!(v["status"], "limit");
        assert_eq!(v["limit"], "deadline");
    }
}

#[test]
#[cfg_attr(
    windows,
    ignore = "calls the demo catalog file's python3 command tools, which a Windows program under Wine cannot start"
)]
fn limit_flags_are_applied() {
    for guest in guests() {
        let (_, v) = run_json(
            guest,
            &["--max-output-bytes", "10"],
            "print('0123456789abcdef')",
        );
        assert_eq!(v["truncated"], true);
        assert_eq!(v["stdout"], "0123456789");
        assert_eq!(v["limit"], "output");
        let (_, v) = run_json(guest, &["--memory-mb", "64"], "b = bytearray(100 * 2**20)");
        assert_eq!(v["limit"], "memory");
        let (_, v) = run_json(guest, &["--fuel", "1000000"], "while True: pass");
        assert_eq!(v["limit"], "fuel");
        let catalog = catalog();
        let flags = ["--tools", catalog.as_str(), "--max-tool-calls", "2"];
        let code = "for i in range(5): call_tool('text', 'stats', text='a')";
        let (_, v) = run_json(guest, &flags, code);
        assert_eq!(v["limit"], "tool_calls");
    }
}

#[test]
fn human_output_prints_stdout_and_a_status_line() {
    let out = codecell(&["run", "-"], "print('hi')");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[codecell] ok"), "{err}");
}

#[test]
fn bad_input_exits_2() {
    let out = codecell(&["run", "/nonexistent/snippet.py"], "");
    assert_eq!(out.status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"categories": [{"name": "x", "description": "d", "tools": [{"name": "t"}]}]}"#,
    )
    .unwrap();
    let out = codecell(&["run", "-", "--tools", bad.to_str().unwrap()], "print(1)");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.json"),
        "error does not name the file: {err}"
    );
    assert!(
        err.contains("categories[0].tools[0]"),
        "error does not name the JSON path: {err}"
    );
}

#[test]
fn tools_subcommands_show_the_tree() {
    let out = codecell(&["tools", "ls", "--tools", &catalog()], "");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "__index__.md\ntext/\nunits/\n"
    );
    let out = codecell(
        &[
            "tools",
            "read",
            "tools/units/convert.py",
            "--tools",
            &catalog(),
        ],
        "",
    );
    let stub = String::from_utf8_lossy(&out.stdout);
    assert!(stub.contains("def convert("), "{stub}");
    assert!(stub.contains("call_tool("), "{stub}");
    let out = codecell(
        &[
            "tools",
            "read",
            "tools/../../etc/passwd",
            "--tools",
            &catalog(),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    let out = codecell(&["tools", "prompt", "--tools", &catalog()], "");
    assert!(String::from_utf8_lossy(&out.stdout).contains("execute_code"));
}

#[test]
fn version_names_the_guest_python() {
    let out = codecell(&["--version"], "");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("codecell 0.1.0"), "{text}");
    assert!(text.contains("guest cpython: Python 3."), "{text}");
    assert!(text.contains("guest rustpython: Python 3."), "{text}");
}

fn fixture(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(rel)
}

#[test]
fn validate_reports_imports_or_the_violation() {
    let ok = "import json\nfrom collections import Counter\n\ndef execute(args):\n    return json.dumps(Counter(args['x']))\n";
    let out = codecell(&["validate", "-", "--json"], ok);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        json_of(&out),
        serde_json::json!({"ok": true, "imports": ["collections", "json"]})
    );
    let bad = "def execute(args):\n    return eval(args['x'])\n";
    let out = codecell(&["validate", "-", "--json"], bad);
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    assert_eq!(v["ok"], false);
    assert_eq!(v["rule"], "banned_call");
    assert_eq!(v["line"], 2);
    assert_eq!(v["column"], 12);
    assert!(v["message"].as_str().unwrap().contains("eval"));
    let out = codecell(&["validate", "-"], bad);
    assert!(String::from_utf8_lossy(&out.stdout).contains("-:2:12: banned_call"));
}

/// Regression (issue 10, class 12): `codecell run … | head -1` panicked ("failed printing to
/// stdout: Broken pipe", exit 101). A closed pipe now ends the command quietly with 141.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::io::Read;
    // More than a pipe's buffer (64 KiB), so the writer is still writing when the reader goes.
    let snippet = "for i in range(30000):\n    print('line', i)";
    for args in [
        vec!["run", "-", "--max-output-bytes", "1000000"],
        vec!["run", "-", "--max-output-bytes", "1000000", "--json"],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_codecell"))
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("codecell starts");
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(snippet.as_bytes()).unwrap();
        }
        // Read one byte, then hang up, as `head -c1` does.
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        let _ = stdout.read(&mut first);
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(141), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: nothing is printed: {stderr}");
    }
}

/// Regression (issue 10, class 9): `--memory-mb 1` exited 3 with a wasmtime message; a cap below
/// what the guest needs is bad input, and the message names the minimum.
#[test]
fn a_memory_cap_below_the_guest_minimum_is_bad_input() {
    for guest in guests() {
        let out = codecell(
            &["run", "-", "--guest", guest, "--memory-mb", "1"],
            "print(1)",
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{guest}: {stderr}");
        assert!(stderr.contains("needs to start"), "{guest}: {stderr}");
    }
}
