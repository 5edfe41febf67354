//! `codecell batch`: JSON Lines of programs in, JSON Lines of outcomes out, many runs at once.
//!
//! Each input line is `{"id": …, "code": "…"}` with optional `"limits"` (the names of the limit
//! flags: `fuel`, `memory_mb`, `timeout_ms`, `max_output_bytes`, `max_tool_calls`), `"guest"`
//! and `"seed"`; each output line is `{"id": …}` plus exactly the fields of `codecell run
//! --json`. A line that is not such a program is an `error` outcome (type `BatchInputError`,
//! the line number in its message), never the end of the batch. The input is read as it is
//! run: a reader thread is at most a bounded queue ahead of the runs, so memory stays flat.

mod lines;
mod progress;

use crate::failure::Failure;
use crate::run_cmd::SandboxArgs;
use clap::Args;
use codecell::{BatchOptions, EngineError, Outcome, run_batch};
use lines::{Entry, Programs};
use progress::Progress;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

#[derive(Args, Debug)]
pub struct BatchArgs {
    /// The JSON Lines file of programs, or `-` (the default) for stdin.
    #[arg(default_value = "-")]
    file: String,
    /// How many programs run at once (default: the number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Write outcomes in input order (default: in the order runs complete).
    #[arg(long)]
    ordered: bool,
    /// The catalog behind every program, and the guest and limits of those that set none.
    #[command(flatten)]
    sandbox: SandboxArgs,
}

/// Programs the reader may be ahead of the runs, at the least. `run_batch` takes what is waiting
/// in one go, so the reader thread is woken once per handful of programs rather than once per
/// program (a thread's wake-up can cost a context switch, and a run is a tenth of a
/// millisecond). Memory stays bounded: at most twice this many programs wait (in the channel and
/// taken by run_batch), each at most 1 MiB of code.
const READ_AHEAD: usize = 32;

pub async fn run(args: BatchArgs) -> Result<ExitCode, Failure> {
    let jobs = args
        .jobs
        .unwrap_or_else(|| BatchOptions::default().concurrency)
        .max(1);
    let sandbox = &args.sandbox;
    let catalog = sandbox.catalog(None).await?;
    let programs = Programs::open(
        &args.file,
        sandbox.guest,
        sandbox.limits.limits(),
        catalog,
        jobs,
    )?;
    let (tx, rx) = mpsc::channel(jobs.saturating_mul(2).max(READ_AHEAD));
    // The reader: a thread of its own, so a slow file or stdin never holds up a runtime worker.
    let reader = std::thread::spawn(move || {
        for entry in programs {
            let Entry { id, line, item } = entry;
            if tx.blocking_send(((id, line), item)).is_err() {
                break;
            }
        }
    });
    let outcomes = run_batch(
        rx,
        BatchOptions {
            concurrency: jobs,
            ordered: args.ordered,
        },
    );
    // The writer: a task on the runtime's workers rather than this thread, so handing an outcome
    // over wakes no other thread (one more context switch per run otherwise; run_batch's runner
    // yields to it right after). Its writes block that worker while stdout does not drain; the
    // runs then stop at the batch's bound on outcomes not yet handed out, as they would anyway.
    // It writes outcomes out in bursts, at most QUIET after the last one (see write_outcomes).
    let writer = tokio::spawn(write_outcomes(outcomes));
    let (written, progress) = writer
        .await
        .map_err(|e| Failure::host(format!("the outcome writer failed: {e}")))?;
    written?;
    let _ = reader.join();
    progress.finish();
    Ok(ExitCode::SUCCESS)
}

/// Outcome lines wait in the output buffer until no other outcome has come for this long (or the
/// buffer is full, or the oldest has waited [`MOST_UNFLUSHED`]): a write per line costs the
/// process reading them a wake-up per run, and runs take a tenth of a millisecond.
const QUIET: Duration = Duration::from_millis(1);

/// The longest an outcome line waits in the output buffer while others keep coming.
const MOST_UNFLUSHED: Duration = Duration::from_millis(20);

/// Writes every outcome as its line on stdout, counting it on the progress bar; stops at the
/// first write that fails.
async fn write_outcomes(mut outcomes: Outcomes) -> (Result<(), Failure>, Progress) {
    let mut progress = Progress::start();
    let mut out = std::io::BufWriter::new(std::io::stdout());
    let mut oldest_unflushed: Option<Instant> = None;
    let written = loop {
        let next = match oldest_unflushed {
            None => outcomes.recv().await,
            Some(_) => match tokio::time::timeout(QUIET, outcomes.recv()).await {
                Ok(next) => next,
                Err(_quiet) => {
                    oldest_unflushed = None;
                    match out.flush() {
                        Ok(()) => continue,
                        Err(e) => break Err(write_failure(e)),
                    }
                }
            },
        };
        let Some(((id, line), result)) = next else {
            break Ok(());
        };
        let outcome = result.unwrap_or_else(|e| host_error(line, e));
        progress.record(&outcome);
        if let Err(e) = write_line(&mut out, &id, &outcome) {
            break Err(e);
        }
        let since = *oldest_unflushed.get_or_insert_with(Instant::now);
        if out.buffer().is_empty() {
            oldest_unflushed = None; // the buffer filled and was written through
        } else if since.elapsed() >= MOST_UNFLUSHED {
            oldest_unflushed = None;
            if let Err(e) = out.flush() {
                break Err(write_failure(e));
            }
        }
    };
    drop(outcomes);
    (
        written.and_then(|()| out.flush().map_err(write_failure)),
        progress,
    )
}

/// The outcomes of `codecell batch`'s runs, tagged with each program's id and line number.
type Outcomes = mpsc::Receiver<((serde_json::Value, u64), Result<Outcome, EngineError>)>;

/// One output line: the program's id, then the `codecell run --json` fields.
#[derive(serde::Serialize)]
struct Line<'a> {
    id: &'a serde_json::Value,
    #[serde(flatten)]
    outcome: &'a Outcome,
}

fn write_line(
    out: &mut impl Write,
    id: &serde_json::Value,
    outcome: &Outcome,
) -> Result<(), Failure> {
    serde_json::to_writer(&mut *out, &Line { id, outcome })
        .map_err(|e| Failure::host(format!("cannot write an outcome: {e}")))?;
    out.write_all(b"\n").map_err(write_failure)
}

fn write_failure(e: std::io::Error) -> Failure {
    match e.kind() {
        std::io::ErrorKind::BrokenPipe => Failure::closed_pipe(),
        _ => Failure::host(format!("cannot write to stdout: {e}")),
    }
}

/// A run the host could not carry out (e.g. a memory cap below the guest's minimum) is that
/// program's `error` outcome: the batch goes on.
fn host_error(line: u64, error: EngineError) -> Outcome {
    let kind = match error {
        EngineError::MemoryCapTooSmall { .. } => "BatchInputError",
        _ => "HostError",
    };
    lines::error_outcome(kind, format!("line {line}: {error}"))
}
