//! Helpers shared by the CLI tests: run the built `codecell` binary as a process.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `codecell ARGS` with `stdin` as its standard input and waits for it.
pub fn codecell(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_codecell"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("codecell starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}
