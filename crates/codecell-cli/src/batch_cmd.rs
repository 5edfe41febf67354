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
    let (tx, rx) = mpsc::channel(jobs.saturating_mul(2));
    // The reader: a thread of its own, so a slow file or stdin never holds up a runtime worker.
    let reader = std::thread::spawn(move || {
        for entry in programs {
            let Entry { id, line, item } = entry;
            if tx.blocking_send(((id, line), item)).is_err() {
                break;
            }
        }
    });
    let mut outcomes = run_batch(
        rx,
        BatchOptions {
            concurrency: jobs,
            ordered: args.ordered,
        },
    );
    let mut progress = Progress::start();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut written = Ok(());
    while let Some(((id, line), result)) = outcomes.recv().await {
        let outcome = result.unwrap_or_else(|e| host_error(line, e));
        progress.record(&outcome);
        written = write_line(&mut out, &id, &outcome);
        if written.is_ok() && outcomes.is_empty() {
            written = out.flush().map_err(write_failure);
        }
        if written.is_err() {
            break;
        }
    }
    drop(outcomes);
    written.and_then(|()| out.flush().map_err(write_failure))?;
    let _ = reader.join();
    progress.finish();
    Ok(ExitCode::SUCCESS)
}

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
