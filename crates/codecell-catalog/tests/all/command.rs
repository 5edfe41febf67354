//! Command handlers: JSON over stdin/stdout, exit statuses, timeouts, output caps, bad output.

use crate::common;

use std::time::{Duration, Instant};

use codecell_catalog::{CommandHandler, Handler, STDERR_TAIL_BYTES};
use serde_json::{Value, json};

/// The test tool told to do `args` (see `examples/command_tool.rs`).
fn tool(args: &[&str]) -> CommandHandler {
    let mut argv = vec![common::command_tool()];
    argv.extend(args.iter().map(|a| a.to_string()));
    CommandHandler::new(argv)
}

async fn run(h: &CommandHandler, args: Value) -> Result<Value, String> {
    h.call(args).await.map_err(|e| e.to_string())
}

#[tokio::test]
async fn success_reads_stdin_to_eof_and_parses_stdout() {
    let h = tool(&["double"]);
    let out = run(&h, json!({"x": 21, "s": "é\"\n"})).await.unwrap();
    assert_eq!(out, json!({"echo": {"x": 21, "s": "é\"\n"}, "n": 42}));
}

#[tokio::test]
async fn a_program_that_ignores_stdin_still_works() {
    let h = tool(&["print", "[1, 2, 3]"]);
    let big = json!({"blob": "b".repeat(1_000_000)});
    assert_eq!(run(&h, big).await.unwrap(), json!([1, 2, 3]));
}

#[tokio::test]
async fn non_zero_exit_carries_the_tail_of_stderr() {
    let stderr = format!("{}\nValueError: FINAL LINE\n", "noise ".repeat(2000));
    let h = tool(&["exit", "3", &stderr]);
    let e = run(&h, json!({})).await.unwrap_err();
    assert!(e.contains("exited with status 3"), "{e}");
    assert!(e.contains("ValueError: FINAL LINE"), "{e}");
    assert!(
        e.len() < STDERR_TAIL_BYTES + 300,
        "tail is bounded: {} bytes",
        e.len()
    );
    assert!(e.contains('…'), "a cut tail is marked: {e}");
}

#[tokio::test]
async fn non_zero_exit_without_stderr() {
    let e = run(&tool(&["exit", "1"]), json!({})).await.unwrap_err();
    assert!(
        e.contains("exited with status 1") && e.contains("no stderr"),
        "{e}"
    );
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "Windows has no signals: an aborted program exits with a status"
)]
async fn killed_by_a_signal() {
    let e = run(&tool(&["abort"]), json!({})).await.unwrap_err();
    assert!(e.contains("killed by a signal"), "{e}");
}

#[tokio::test]
async fn timeout_kills_the_program() {
    let h = tool(&["sleep", "30000"]).timeout(Duration::from_millis(300));
    let start = Instant::now();
    let e = run(&h, json!({})).await.unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert!(e.contains("timed out after 300 ms"), "{e}");
}

#[tokio::test]
async fn timeout_covers_a_program_that_closes_its_output_and_hangs() {
    let h = tool(&["close-and-sleep", "30000"]).timeout(Duration::from_millis(300));
    let start = Instant::now();
    let e = run(&h, json!({})).await.unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert!(e.contains("timed out"), "{e}");
}

#[tokio::test]
async fn stdout_over_the_cap_is_an_error() {
    let h = tool(&["quoted", "100000"]).max_output_bytes(1000);
    let e = run(&h, json!({})).await.unwrap_err();
    assert!(e.contains("more than 1000 bytes"), "{e}");
    // Exactly at the cap is fine.
    let exact = format!("\"{}\"", "x".repeat(998));
    let h = tool(&["write", &exact]).max_output_bytes(1000);
    assert_eq!(run(&h, json!({})).await.unwrap(), json!("x".repeat(998)));
}

#[tokio::test]
async fn an_endless_writer_is_stopped_at_the_cap_not_the_timeout() {
    for stream in ["stdout", "stderr"] {
        let h = tool(&["flood", stream])
            .max_output_bytes(100_000)
            .timeout(Duration::from_secs(20));
        let start = Instant::now();
        let e = run(&h, json!({})).await.unwrap_err();
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{stream}: took {:?}",
            start.elapsed()
        );
        assert!(e.contains("more than 100000 bytes"), "{stream}: {e}");
    }
}

#[tokio::test]
async fn invalid_json_on_stdout_is_an_error() {
    let e = run(&tool(&["print", "this is not json"]), json!({}))
        .await
        .unwrap_err();
    assert!(
        e.contains("invalid JSON") && e.contains("this is not json"),
        "{e}"
    );
    let e = run(&tool(&["print", "{\"a\": 1} trailing"]), json!({}))
        .await
        .unwrap_err();
    assert!(e.contains("invalid JSON"), "{e}");
    let e = run(&tool(&["sleep", "0"]), json!({})).await.unwrap_err();
    assert!(e.contains("printed nothing"), "{e}");
}

#[tokio::test]
async fn a_missing_program_is_an_error() {
    let h = CommandHandler::new(vec!["/nonexistent/codecell-tool".to_string()]);
    let e = run(&h, json!({})).await.unwrap_err();
    assert!(
        e.contains("could not start command \"codecell-tool\""),
        "{e}"
    );
    assert!(
        !e.contains("/nonexistent"),
        "host paths stay out of guest-visible messages: {e}"
    );
    let e = run(&CommandHandler::new(vec![]), json!({}))
        .await
        .unwrap_err();
    assert!(e.contains("empty argv"), "{e}");
}

#[tokio::test]
async fn no_shell_is_involved() {
    // With a shell, `;` would start a second command; without one it is just an argument.
    let h = tool(&["argv", "a; echo injected", "$HOME"]);
    assert_eq!(
        run(&h, json!({})).await.unwrap(),
        json!(["a; echo injected", "$HOME"])
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_the_call_kills_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let h = tool(&["pidfile", &pid_file.to_string_lossy(), "30000"]);
    let task = tokio::spawn(async move { h.call(json!({})).await });
    // Wait until it runs, then give up on it, as a run's deadline would.
    let started = Instant::now();
    while std::fs::read_to_string(&pid_file).map_or(true, |s| s.trim().is_empty()) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the program never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        // Gone, or a zombie waiting to be reaped: either way no longer running.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next()
            .unwrap_or("");
        if stat.is_empty() || state == "Z" || state == "X" {
            break;
        }
        assert!(Instant::now() < deadline, "pid {pid} still running: {stat}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Reads the pid a tool wrote to `file`, waiting up to 20 s for it to appear.
#[cfg(unix)]
async fn wait_for_pid(file: &std::path::Path) -> i32 {
    let started = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(file)
            && let Ok(pid) = s.trim().parse()
        {
            return pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the tool never wrote its grandchild's pid"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether `pid` is still running (a zombie waiting to be reaped counts as gone).
#[cfg(unix)]
fn running(pid: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next();
        !stat.is_empty() && !matches!(state, Some("Z" | "X"))
    }
    #[cfg(not(target_os = "linux"))]
    {
        std::process::Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// Asserts that `pid` stops running within 5 s (the kill is synchronous, reaping may lag).
#[cfg(unix)]
async fn assert_gone(pid: i32, when: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(pid) {
        assert!(
            Instant::now() < deadline,
            "grandchild {pid} survived {when}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `sh -c` that starts `sleep 60` in the background, writes its pid to `file`, then runs `then`.
#[cfg(unix)]
fn with_grandchild(file: &std::path::Path, then: &str) -> CommandHandler {
    CommandHandler::new(vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("sleep 60 & echo $! > '{}'; {then}", file.display()),
    ])
}

#[cfg(unix)]
#[tokio::test]
async fn grandchildren_do_not_outlive_a_successful_call() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let h = with_grandchild(&pid_file, "echo '{\"ok\": true}'");
    let started = Instant::now();
    // The grandchild holds stdout open; the call must end when the tool exits, not in 60 s
    // (before process groups it ran into the 10 s timeout).
    assert_eq!(run(&h, json!({})).await.unwrap(), json!({"ok": true}));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_gone(wait_for_pid(&pid_file).await, "a successful call").await;
}

#[cfg(unix)]
#[tokio::test]
async fn grandchildren_are_killed_on_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let h = with_grandchild(&pid_file, "sleep 60").timeout(Duration::from_millis(500));
    let e = run(&h, json!({})).await.unwrap_err();
    assert!(e.contains("timed out after 500 ms"), "{e}");
    assert_gone(wait_for_pid(&pid_file).await, "the timeout").await;
}

#[cfg(unix)]
#[tokio::test]
async fn grandchildren_are_killed_on_output_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let h = with_grandchild(&pid_file, "while :; do echo xxxxxxxxxxxxxxxx; done")
        .max_output_bytes(1000);
    let e = run(&h, json!({})).await.unwrap_err();
    assert!(e.contains("more than 1000 bytes"), "{e}");
    assert_gone(wait_for_pid(&pid_file).await, "an output overflow").await;
}

#[cfg(unix)]
#[tokio::test]
async fn grandchildren_are_killed_when_the_call_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let h = with_grandchild(&pid_file, "sleep 60");
    let task = tokio::spawn(async move { h.call(json!({})).await });
    let pid = wait_for_pid(&pid_file).await;
    assert!(running(pid));
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_gone(pid, "a dropped call").await;
}

#[tokio::test]
async fn the_host_environment_does_not_reach_a_tool() {
    // SAFETY: set once, before any tool starts, to a value only this test reads; other tests
    // running concurrently never read it.
    unsafe { std::env::set_var("CODECELL_TEST_HOST_SECRET", "leaked") };
    let h = tool(&["env"]).env("TOOL_MODE", "fast");
    let out = run(&h, json!({})).await.unwrap();
    assert_eq!(out["CODECELL_TEST_HOST_SECRET"], Value::Null, "{out}");
    assert_eq!(out["HOME"], Value::Null, "{out}");
    assert_eq!(out["TOOL_MODE"], "fast", "{out}");
    // Passed through so programs can be found (a pyenv shim may prepend its own entries).
    let path = out["PATH"].as_str().unwrap_or_default();
    assert!(path.ends_with(&std::env::var("PATH").unwrap()), "{out}");
}
