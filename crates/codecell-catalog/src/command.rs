//! Handlers that run a program: JSON arguments on stdin, a JSON result on stdout, bounded in time
//! and in output. The program is started directly from its argv (no shell); it never sees the
//! parent's stdin, and it is killed on timeout, on an output overflow, or when the call is dropped.
//!
//! Everything the program starts goes with it: it runs in its own process group on Unix (a job
//! object on Windows), and the whole group is killed when the call ends, however it ends — so a
//! grandchild (`sh -c 'sleep 60 & …'`) neither outlives the call nor keeps its pipes open. The
//! call ends when the program itself exits: output a background process would write later is
//! not waited for. A
//! program that leaves the group on purpose (`setsid`, a double-forking daemon) is out of reach
//! on Unix; that needs an OS sandbox, which codecell does not use.
//!
//! The environment is empty but for `PATH` (and, on Windows, `SystemRoot`, without which
//! programs fail to start) and the variables the handler lists ([`CommandHandler::env`], `"env"`
//! in a catalog file): the host's secrets are not the tool's to pass back to the guest.

use std::collections::BTreeMap;
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
    env: BTreeMap<String, String>,
}

/// Host variables passed through to every command: what is needed to find and start programs.
#[cfg(not(windows))]
const INHERITED_ENV: &[&str] = &["PATH"];
/// Host variables passed through to every command: what is needed to find and start programs.
#[cfg(windows)]
const INHERITED_ENV: &[&str] = &["PATH", "SystemRoot"];

impl CommandHandler {
    /// A handler running `argv[0]` with the rest as arguments (no shell); `argv` must not be empty.
    pub fn new(argv: Vec<String>) -> Self {
        CommandHandler {
            argv,
            timeout: DEFAULT_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            current_dir: None,
            env: BTreeMap::new(),
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

    /// Sets an environment variable of the program (it starts with only `PATH`, plus `SystemRoot`
    /// on Windows); a listed `PATH` replaces the host's.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
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
            .kill_on_drop(true)
            .env_clear();
        for name in INHERITED_ENV {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        cmd.envs(&self.env);
        if let Some(dir) = &self.current_dir {
            cmd.current_dir(dir);
        }
        // Its own group, so that one signal reaches everything it starts (see `Group`).
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            HandlerError::new(format!(
                "could not start command {:?}: {e}",
                self.program_name()
            ))
        })?;
        // Declared after `child`, so it is dropped (and the group killed) first on every exit.
        let group = Group::adopt(&child);
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
                Ok::<(), Stop>(())
            };
            let exited = async {
                let status = child.wait().await.map_err(Stop::Wait)?;
                // The program is done: what it left behind (a grandchild holding our pipes open)
                // goes now, so its output ends and the call does not wait for it.
                group.kill();
                Ok::<_, Stop>(status)
            };
            // try_join stops at the first overflow instead of waiting for the other pipe.
            tokio::try_join!(
                write,
                read_capped(stdout, cap),
                read_capped(stderr, cap),
                exited
            )
        };
        // On every early return `group` is dropped, which kills the program and all it started.
        let (out, err, status) = match tokio::time::timeout_at(deadline, work).await {
            Ok(Ok(((), out, err, status))) => (out, err, status),
            Ok(Err(Stop::Overflow)) => {
                return Err(HandlerError::new(format!(
                    "command {:?} wrote more than {cap} bytes of output and was killed",
                    self.program_name()
                )));
            }
            Ok(Err(Stop::Wait(e))) => {
                return Err(HandlerError::new(format!(
                    "waiting for command failed: {e}"
                )));
            }
            Err(_) => {
                return Err(HandlerError::new(format!(
                    "command {:?} timed out after {} ms and was killed",
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

/// Why the call's I/O stopped early.
enum Stop {
    /// Output went past the cap.
    Overflow,
    /// Waiting for the program failed.
    Wait(std::io::Error),
}

/// Reads a pipe to its end, or stops at `cap + 1` bytes.
async fn read_capped<R: AsyncRead + Unpin>(pipe: Option<R>, cap: usize) -> Result<Vec<u8>, Stop> {
    let Some(pipe) = pipe else {
        return Ok(Vec::new());
    };
    let mut buf = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    // An I/O error mid-stream just ends the stream: the exit status says what happened.
    let _ = pipe.take(limit).read_to_end(&mut buf).await;
    if buf.len() > cap {
        return Err(Stop::Overflow);
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

/// Everything one call started: the program's process group on Unix, a job object on Windows.
/// Killed as a whole by [`Group::kill`] and when dropped, so no exit path leaves anything behind.
struct Group {
    #[cfg(unix)]
    pgid: Option<libc::pid_t>,
    #[cfg(windows)]
    job: Option<windows_job::Job>,
}

impl Group {
    /// Takes charge of a just-spawned child (its group is its pid: `process_group(0)`).
    fn adopt(child: &tokio::process::Child) -> Group {
        #[cfg(unix)]
        {
            Group {
                pgid: child
                    .id()
                    .and_then(|pid| libc::pid_t::try_from(pid).ok())
                    .filter(|&pid| pid > 0),
            }
        }
        #[cfg(windows)]
        {
            // The child runs briefly before it is assigned: what it starts in that instant
            // escapes the job. Starting it suspended would close the gap, but tokio's
            // `Command` cannot resume a suspended process.
            Group {
                job: child.raw_handle().and_then(windows_job::Job::assign),
            }
        }
        #[cfg(not(any(unix, windows)))]
        {
            let _ = child;
            Group {}
        }
    }

    /// Kills every process of the group (the direct child is also killed by `kill_on_drop`).
    fn kill(&self) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            // SAFETY: kill(2) with a negative pid signals the process group; no memory involved.
            // The pgid cannot name anyone else's group while a member lives or the leader is
            // unreaped, and once none is left the call fails with ESRCH, which is ignored.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        #[cfg(windows)]
        if let Some(job) = &self.job {
            job.terminate();
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(windows)]
mod windows_job {
    //! A job object that kills its processes when terminated or closed.

    use std::os::windows::io::RawHandle;

    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
        JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
        SetInformationJobObject, TerminateJobObject,
    };

    /// An owned job handle; closing it kills whatever is still in the job.
    pub(super) struct Job(HANDLE);

    // SAFETY: a job handle is a kernel object reference, usable from any thread.
    unsafe impl Send for Job {}
    // SAFETY: as above; the calls made through `&Job` are thread-safe kernel calls.
    unsafe impl Sync for Job {}

    impl Job {
        /// A kill-on-close job holding `process`, or `None` if Windows refused (the direct
        /// child is then still killed by `kill_on_drop`).
        pub(super) fn assign(process: RawHandle) -> Option<Job> {
            // SAFETY: plain Win32 calls on a handle we own (`job`) and a live process handle
            // borrowed from tokio's `Child`; the info struct is zeroed and sized correctly.
            unsafe {
                let job = CreateJobObjectW(std::ptr::null(), std::ptr::null());
                if job.is_null() {
                    return None;
                }
                let job = Job(job);
                let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
                info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
                let size = u32::try_from(std::mem::size_of_val(&info)).ok()?;
                let set = SetInformationJobObject(
                    job.0,
                    JobObjectExtendedLimitInformation,
                    (&raw const info).cast(),
                    size,
                );
                if set == 0 || AssignProcessToJobObject(job.0, process as HANDLE) == 0 {
                    return None;
                }
                Some(job)
            }
        }

        /// Kills every process in the job.
        pub(super) fn terminate(&self) {
            // SAFETY: `self.0` is a job handle we own; failure (already empty) is harmless.
            unsafe {
                TerminateJobObject(self.0, 1);
            }
        }
    }

    impl Drop for Job {
        fn drop(&mut self) {
            // SAFETY: closing the handle we own exactly once; kill-on-close ends the rest.
            unsafe {
                CloseHandle(self.0);
            }
        }
    }
}
