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

/// What one process did: its exit status, bytes printed and (on Unix) its own peak RSS.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub peak_rss: u64,
}

/// Runs `command` to the end; on Unix reaps it with `wait4`, which reports that one child's
/// peak RSS (getrusage over all children would count the guest compilation of the warm-up).
pub fn run(mut command: std::process::Command) -> Ran {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("codecell starts");
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = err.read_to_end(&mut bytes);
        bytes
    });
    let mut stdout = Vec::new();
    let _ = child.stdout.take().unwrap().read_to_end(&mut stdout);
    let stderr = reader.join().unwrap();
    #[cfg(unix)]
    {
        let mut status = 0;
        // SAFETY: wait4 writes only the status and the rusage it is given.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = child.id() as libc::pid_t;
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(rc, pid, "wait4");
        let max = u64::try_from(usage.ru_maxrss).unwrap_or(0);
        // Linux reports kilobytes; macOS, bytes.
        let peak_rss = if cfg!(target_os = "macos") {
            max
        } else {
            max * 1024
        };
        let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        // Reaped by wait4 above: std must not wait for it again.
        std::mem::forget(child);
        Ran {
            code,
            stdout,
            stderr,
            peak_rss,
        }
    }
    #[cfg(not(unix))]
    {
        let code = child.wait().expect("codecell ends").code();
        Ran {
            code,
            stdout,
            stderr,
            peak_rss: 0,
        }
    }
}
