//! Native `python3`, the baseline of every ratio: the same program text, run as a process.

use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// Longest a native kernel program may take before it is abandoned (its row then has no ratio).
const NATIVE_TIMEOUT: Duration = Duration::from_secs(120);

/// The `python3` on PATH, if any: its version line (`Python 3.11.2`).
pub async fn version() -> Option<String> {
    let out = Command::new("python3")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .await
        .ok()?;
    let text = String::from_utf8_lossy(if out.stdout.is_empty() {
        &out.stderr
    } else {
        &out.stdout
    })
    .trim()
    .to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// Runs `program` on native `python3` (fed on stdin) and returns what it printed, or None if it
/// failed or took longer than [`NATIVE_TIMEOUT`].
pub async fn run(program: &str) -> Option<String> {
    let mut child = Command::new("python3")
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    stdin.write_all(program.as_bytes()).await.ok()?;
    drop(stdin);
    let out = tokio::time::timeout(NATIVE_TIMEOUT, child.wait_with_output())
        .await
        .ok()?
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
