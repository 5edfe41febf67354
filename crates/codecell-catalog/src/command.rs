//! Handlers that run a program: JSON arguments on stdin, a JSON result on stdout, bounded in time
//! and in output. The program is started directly from its argv (no shell); it never sees the
//! parent's stdin, and it is killed on timeout, on an output overflow, or when the call is dropped.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::error::{HandlerError, shorten};
use crate::handler::{Handler, HandlerFuture};

/// Default time a command may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest timeout a catalog may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Default cap on bytes read from stdout, and separately from stderr.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1024 * 1024;
/// Largest output cap a catalog may ask for.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;
/// How much of stderr a failure carries (its end, where the error usually is).
pub const STDERR_TAIL_BYTES: usize = 2048;

/// Runs a program per call. Construct with [`CommandHandler::new`], adjust with the setters.
#[derive(Debug, Clone)]
pub struct CommandHandler {
    argv: Vec<String>,
    timeout: Duration,
    max_output_bytes: usize,
    current_dir: Option<PathBuf>,
}

impl CommandHandler {
    /// A handler running `argv[0]` with the rest as arguments (no shell); `argv` must not be empty.
    pub fn new(argv: Vec<String>) -> Self {
        CommandHandler {
            argv,
            timeout: DEFAULT_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            current_dir: None,
        }
    }

    /// Sets the time limit of one call.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the cap on bytes read from stdout (and, separately, from stderr).
    pub fn max_output_bytes(mut self, max: usize) -> Self {
        self.max_output_bytes = max;
        self
    }

    /// Sets the working directory of the program (default: the parent's).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// The program and its arguments.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The time limit of one call.
    pub fn get_timeout(&self) -> Duration {
        self.timeout
    }

    /// The output cap.
    pub fn get_max_output_bytes(&self) -> usize {
        self.max_output_bytes
    }

    /// The program's file name: messages reach the guest, which has no business learning
    /// where on the host the catalog lives.
    fn program_name(&self) -> String {
        let program = self.argv.first().map_or("", String::as_str);
        let name = std::path::Path::new(program)
            .file_name()
            .map_or_else(|| program.into(), |n| n.to_string_lossy());
        shorten(&name, 200)
    }

    async fn run(&self, args: Value) -> Result<Value, HandlerError> {
        let Some((program, rest)) = self.argv.split_first() else {
            return Err(HandlerError::new("command handler has an empty argv"));
        };
        let input = serde_json::to_vec(&args)
            .map_err(|e| HandlerError::new(format!("cannot encode arguments: {e}")))?;
        let mut cmd = Command::new(program);
        cmd.args(rest)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Dropping the call (the run's deadline, a cancelled future) must not leave it running.
            .kill_on_drop(true);
        if let Some(dir) = &self.current_dir {
            cmd.current_dir(dir);
        }
        let mut child = cmd.spawn().map_err(|e| {
            HandlerError::new(format!(
                "could not start command {:?}: {e}",
                self.program_name()
            ))
        })?;
        let mut stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let cap = self.max_output_bytes;
        // One deadline for the whole call: output and exit together, not a timeout each.
        let deadline = tokio::time::Instant::now() + self.timeout;

        let work = async {
            // Write and read concurrently: a program that answers before reading all of its
            // input, or that fills a pipe, must not deadlock us.
            let write = async {
                if let Some(mut pipe) = stdin.take() {
                    // A program that ignores its input closes the pipe early; that is not an error.
                    let _ = pipe.write_all(&input).await;
                    let _ = pipe.shutdown().await;
                }
                Ok::<(), Overflow>(())
            };
            // try_join stops at the first overflow instead of waiting for the other pipe.
            tokio::try_join!(write, read_capped(stdout, cap), read_capped(stderr, cap))
        };
        let (out, err) = match tokio::time::timeout_at(deadline, work).await {
            Ok(Ok(((), out, err))) => (out, err),
            Ok(Err(Overflow)) => {
                let _ = child.kill().await;
                return Err(HandlerError::new(format!(
                    "command {:?} wrote more than {cap} bytes of output and was killed",
                    self.program_name()
                )));
            }
            Err(_) => {
                let _ = child.kill().await;
                return Err(HandlerError::new(format!(
                    "command {:?} timed out after {} ms and was killed",
                    self.program_name(),
                    self.timeout.as_millis()
                )));
            }
        };
        // Output is closed; the exit itself is still bounded by the timeout.
        let status = match tokio::time::timeout_at(deadline, child.wait()).await {
            Ok(Ok(status)) => status,
            Ok(Err(e)) => {
                return Err(HandlerError::new(format!(
                    "waiting for command failed: {e}"
                )));
            }
            Err(_) => {
                let _ = child.kill().await;
                return Err(HandlerError::new(format!(
                    "command {:?} timed out after {} ms and was killed (it closed its output but did not exit)",
                    self.program_name(),
                    self.timeout.as_millis()
                )));
            }
        };
        if !status.success() {
            let how = match status.code() {
                Some(code) => format!("exited with status {code}"),
                None => "was killed by a signal".to_string(),
            };
            let tail = stderr_tail(&err);
            return Err(HandlerError::new(if tail.is_empty() {
                format!("command {:?} {how} (no stderr)", self.program_name())
            } else {
                format!("command {:?} {how}; stderr: {tail}", self.program_name())
            }));
        }
        if out.iter().all(u8::is_ascii_whitespace) {
            return Err(HandlerError::new(format!(
                "command {:?} printed nothing on stdout; it must print one JSON value",
                self.program_name()
            )));
        }
        serde_json::from_slice(&out).map_err(|e| {
            let start = String::from_utf8_lossy(&out[..out.len().min(200)]).into_owned();
            HandlerError::new(format!(
                "command {:?} printed invalid JSON on stdout ({e}); output starts with {:?}",
                self.program_name(),
                shorten(&start, 160)
            ))
        })
    }
}

impl Handler for CommandHandler {
    fn call<'a>(&'a self, args: Value) -> HandlerFuture<'a> {
        Box::pin(self.run(args))
    }
}

/// Output went past the cap.
struct Overflow;

/// Reads a pipe to its end, or stops at `cap + 1` bytes.
async fn read_capped<R: AsyncRead + Unpin>(
    pipe: Option<R>,
    cap: usize,
) -> Result<Vec<u8>, Overflow> {
    let Some(pipe) = pipe else {
        return Ok(Vec::new());
    };
    let mut buf = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    // An I/O error mid-stream just ends the stream: the exit status says what happened.
    let _ = pipe.take(limit).read_to_end(&mut buf).await;
    if buf.len() > cap {
        return Err(Overflow);
    }
    Ok(buf)
}

/// The last [`STDERR_TAIL_BYTES`] of stderr as text, trimmed.
fn stderr_tail(err: &[u8]) -> String {
    let start = err.len().saturating_sub(STDERR_TAIL_BYTES);
    let text = String::from_utf8_lossy(&err[start..]);
    let text = text.trim();
    if start > 0 {
        format!("…{text}")
    } else {
        text.to_string()
    }
}
