//! `codecell fuzz diff`: generated programs run on native python3 and on both guests, outputs
//! compared, every divergence reduced and written as a regression case.

use crate::failure::Failure;
use crate::out;
use clap::{Args, Subcommand};
use codecell::{
    BatchItem, BatchOptions, BatchRun, Engine, GuestKind, Limits, Metering, Outcome, Status,
};
use codecell_fuzz::generator::{Program, generate};
use codecell_fuzz::oracle::{NATIVE_DRIVER, Observed, Verdict, compare};
use codecell_fuzz::reduce::reduce;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc;

/// Programs generated, run and compared per round.
const ROUND: u64 = 512;

/// The fuzzers codecell runs against itself.
#[derive(Subcommand, Debug)]
pub enum FuzzCommand {
    /// Differential fuzzing: generated programs on native python3 and both guests, compared.
    Diff(DiffArgs),
    /// Print the program `fuzz diff` generates from a seed.
    Show {
        /// The program's seed.
        #[arg(long)]
        seed: u64,
    },
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// How many programs to generate and run.
    #[arg(long, default_value_t = 1000)]
    count: u64,
    /// Seed of the first program (program i has seed SEED + i).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Runs at once on each guest (default: the number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// The native interpreter.
    #[arg(long, default_value = "python3")]
    python: String,
    /// Where reduced divergences are written.
    #[arg(long, default_value = "fixtures/differential/found")]
    found: PathBuf,
}

pub async fn run(command: FuzzCommand) -> Result<ExitCode, Failure> {
    let args = match command {
        FuzzCommand::Diff(args) => args,
        FuzzCommand::Show { seed } => {
            out::stdout(&generate(seed).source())?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| BatchOptions::default().concurrency);
    let guests = Guests::start(jobs)?;
    let native = Arc::new(Mutex::new(Native::start(&args.python)?));
    let started = Instant::now();
    let (mut agree, mut diverged, mut known) = (0u64, 0u64, BTreeMap::<&str, u64>::new());
    let mut next = 0u64;
    while next < args.count {
        let n = ROUND.min(args.count - next);
        let programs: Vec<Program> = (0..n)
            .map(|i| generate(args.seed.wrapping_add(next + i)))
            .collect();
        next += n;
        let observed = observe(&guests, &native, &programs).await?;
        for (program, (native_seen, cpython, rustpython)) in programs.iter().zip(observed) {
            match compare(&native_seen, &cpython, &rustpython) {
                Verdict::Agree => agree += 1,
                Verdict::Known(name) => *known.entry(name).or_default() += 1,
                Verdict::Diverges(which) => {
                    diverged += 1;
                    let path = record(&guests, &native, program, &args.found).await?;
                    out::stderr(&format!(
                        "divergence ({}) at seed {}: {}\n",
                        which.join(", "),
                        program.seed,
                        path.display()
                    ));
                }
            }
        }
        // A line per round on stderr: a run stopped early still says how far it got.
        out::stderr(&format!(
            "fuzz diff: {next} programs, {agree} agree, {diverged} diverge, {:.1} programs/s\n",
            next as f64 / started.elapsed().as_secs_f64().max(1e-9)
        ));
    }
    let seconds = started.elapsed().as_secs_f64().max(1e-9);
    let known_text: Vec<String> = known.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    out::line(&format!(
        "fuzz diff: {} programs in {seconds:.1} s ({:.1} programs/s): {agree} agree, {diverged} diverge, known [{}]",
        args.count,
        args.count as f64 / seconds,
        known_text.join(", ")
    ))?;
    Ok(if diverged == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::failure::GUEST_FAILED)
    })
}

/// One engine per guest.
struct Guests {
    cpython: Engine,
    rustpython: Engine,
    jobs: usize,
}

impl Guests {
    fn start(jobs: usize) -> Result<Self, Failure> {
        let build = |guest| {
            // Fuel metering: a generated program that loops ends on its budget, the same on
            // every machine, and fuel_used is part of what the oracle may compare.
            Engine::builder()
                .guest(guest)
                .metering(Metering::Fuel)
                .max_concurrent_runs(u32::try_from(jobs).unwrap_or(u32::MAX).saturating_add(1))
                .build()
                .map_err(Failure::engine)
        };
        Ok(Guests {
            cpython: build(GuestKind::CPython)?,
            rustpython: build(GuestKind::RustPython)?,
            jobs,
        })
    }

    /// Runs `programs` on `engine` through `run_batch`, in input order.
    async fn run(&self, engine: &Engine, programs: &[Program]) -> Vec<Observed> {
        let (tx, rx) = mpsc::channel(self.jobs.max(1) * 2);
        let mut outcomes = codecell::run_batch(
            rx,
            BatchOptions {
                concurrency: self.jobs.max(1),
                ordered: true,
            },
        );
        let items: Vec<(usize, BatchItem)> = programs
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let run = BatchRun {
                    engine: engine.clone(),
                    code: p.source(),
                    catalog: None,
                    limits: Limits {
                        seed: Some(p.seed),
                        ..Limits::default()
                    },
                };
                (i, BatchItem::Run(run))
            })
            .collect();
        tokio::spawn(async move {
            for item in items {
                if tx.send(item).await.is_err() {
                    break;
                }
            }
        });
        let mut seen = Vec::with_capacity(programs.len());
        while let Some((_, result)) = outcomes.recv().await {
            seen.push(match result {
                Ok(outcome) => observed(&outcome),
                Err(e) => Observed {
                    stdout: String::new(),
                    error: Some(format!("host:{e}")),
                },
            });
        }
        seen
    }
}

/// A guest's outcome as the oracle compares it.
fn observed(outcome: &Outcome) -> Observed {
    let error = match (outcome.status(), outcome.limit(), outcome.error()) {
        (Status::Ok, _, _) => None,
        (_, Some(limit), _) => Some(format!("limit:{}", limit.as_str())),
        (_, None, Some(report)) => Some(report.kind.clone()),
        _ => Some("unknown".to_string()),
    };
    Observed {
        stdout: outcome.stdout.clone(),
        error,
    }
}

/// Native python3 and both guests on `programs`: (native, cpython, rustpython) per program.
async fn observe(
    guests: &Guests,
    native: &Arc<Mutex<Native>>,
    programs: &[Program],
) -> Result<Vec<(Observed, Observed, Observed)>, Failure> {
    let sources: Vec<String> = programs.iter().map(Program::source).collect();
    let native = native.clone();
    let native_run = tokio::task::spawn_blocking(move || {
        let mut native = native
            .lock()
            .map_err(|_| Failure::host("native runner poisoned".into()))?;
        sources
            .iter()
            .map(|s| native.run(s))
            .collect::<Result<Vec<_>, _>>()
    });
    let (cpython, rustpython) = tokio::join!(
        guests.run(&guests.cpython, programs),
        guests.run(&guests.rustpython, programs)
    );
    let native_seen = native_run
        .await
        .map_err(|e| Failure::host(format!("native runner: {e}")))??;
    Ok(native_seen
        .into_iter()
        .zip(cpython)
        .zip(rustpython)
        .map(|((n, c), r)| (n, c, r))
        .collect())
}

/// Reduces a diverging program and writes it, with the three outputs, under `dir`.
async fn record(
    guests: &Guests,
    native: &Arc<Mutex<Native>>,
    program: &Program,
    dir: &Path,
) -> Result<PathBuf, Failure> {
    let handle = tokio::runtime::Handle::current();
    // The reducer is synchronous: each candidate is run to the end before the next is chosen.
    let reduced = tokio::task::block_in_place(|| {
        reduce(program, |candidate| {
            let seen = handle.block_on(observe(guests, native, std::slice::from_ref(candidate)));
            matches!(seen.as_deref(), Ok([(n, c, r)]) if !matches!(compare(n, c, r), Verdict::Agree))
        })
    });
    let mut seen = observe(guests, native, std::slice::from_ref(&reduced)).await?;
    let (native_seen, cpython, rustpython) = seen.remove(0);
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::host(format!("cannot create {}: {e}", dir.display())))?;
    let stem = format!("seed-{}", program.seed);
    let py = dir.join(format!("{stem}.py"));
    let header = format!(
        "# Found by `codecell fuzz diff` (seed {}), reduced from {} blocks to {}.\n",
        program.seed,
        program.blocks.len(),
        reduced.blocks.len()
    );
    let outputs = serde_json::json!({
        "seed": program.seed,
        "native": native_seen,
        "cpython": cpython,
        "rustpython": rustpython,
    });
    let write = |path: &Path, text: String| {
        std::fs::write(path, text)
            .map_err(|e| Failure::host(format!("cannot write {}: {e}", path.display())))
    };
    write(&py, format!("{header}{}", reduced.source()))?;
    write(
        &dir.join(format!("{stem}.json")),
        serde_json::to_string_pretty(&outputs).unwrap_or_default() + "\n",
    )?;
    Ok(py)
}

/// One long-lived native interpreter running the driver.
struct Native {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Native {
    fn start(python: &str) -> Result<Self, Failure> {
        let mut child = std::process::Command::new(python)
            .args(["-u", "-c", NATIVE_DRIVER])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| Failure::input(format!("cannot start {python}: {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Failure::host(format!("{python} has no pipes")));
        };
        Ok(Native {
            _child: child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    fn run(&mut self, code: &str) -> Result<Observed, Failure> {
        let broken = |e: std::io::Error| Failure::host(format!("native python3 went away: {e}"));
        let line = serde_json::json!({ "code": code }).to_string();
        writeln!(self.stdin, "{line}").map_err(broken)?;
        self.stdin.flush().map_err(broken)?;
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).map_err(broken)?;
        serde_json::from_str(&answer)
            .map_err(|e| Failure::host(format!("native python3 answered {answer:?}: {e}")))
    }
}
