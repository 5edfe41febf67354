//! Throughput of batch runs, both guests side by side in one run: `codecell batch` on 10,000
//! `print(1+1)` lines with `--jobs 1` and `--jobs 2`, against the engine alone in-process
//! (a loop of `run_snippet` on a 2-worker runtime, one run at a time and two at once), generated
//! programs through `run_batch` with one job and with all cores, and host memory per live
//! instance (resident memory growth with 64 runs in flight, divided by 64). With `--monty PYTHON` it
//! also runs `examples/monty_fresh.py` with that interpreter, for the ratio to Monty.
//!
//! `cargo build -p codecell-cli --example batch_throughput --bin codecell &&
//!  target/debug/examples/batch_throughput [--monty target/monty-venv/bin/python]`
//! Each figure is the median of three rounds; the machine is noisy, so compare within one run.

use codecell::{BatchItem, BatchOptions, BatchRun, Engine, GuestKind, Limits, Metering, run_batch};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// Lines per `codecell batch` round.
const LINES: usize = 10_000;
/// In-process runs per round.
const IN_PROCESS_RUNS: usize = 4_000;
/// Generated programs per round.
const GENERATED: u64 = 400;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn codecell_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    let dir = exe.parent().and_then(|p| p.parent()).expect("target/debug");
    dir.join(format!("codecell{}", std::env::consts::EXE_SUFFIX))
}

/// Runs/s of `codecell batch` over `input`, wall clock of the whole process.
fn cli_rate(input: &std::path::Path, guest: GuestKind, jobs: usize) -> f64 {
    let started = Instant::now();
    let out = std::process::Command::new(codecell_binary())
        .arg("batch")
        .arg(input)
        .args(["--guest", guest.name(), "--jobs", &jobs.to_string()])
        .output()
        .expect("codecell batch runs");
    let seconds = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ok = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(r#""status":"ok","stdout":"2\n""#))
        .count();
    assert_eq!(ok, LINES, "every line ok with stdout 2");
    LINES as f64 / seconds
}

/// Runs/s of `run_snippet` in a loop, `at_once` loops side by side.
fn in_process_rate(rt: &tokio::runtime::Runtime, engine: &Engine, at_once: usize) -> f64 {
    let started = Instant::now();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..at_once {
            let engine = engine.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..IN_PROCESS_RUNS / at_once {
                    let o = engine
                        .run_snippet("print(1+1)", None, &Limits::default())
                        .await
                        .expect("run");
                    assert_eq!(o.stdout, "2\n");
                }
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
    });
    IN_PROCESS_RUNS as f64 / started.elapsed().as_secs_f64()
}

/// Programs/s of generated programs through `run_batch`.
fn generated_rate(rt: &tokio::runtime::Runtime, engine: &Engine, jobs: usize, round: u64) -> f64 {
    let started = Instant::now();
    rt.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::channel(jobs * 2);
        let mut out = run_batch(
            rx,
            BatchOptions {
                concurrency: jobs,
                ordered: false,
            },
        );
        let engine = engine.clone();
        tokio::spawn(async move {
            for seed in round * GENERATED..(round + 1) * GENERATED {
                let program = codecell_fuzz::generator::generate(seed);
                let run = BatchRun {
                    engine: engine.clone(),
                    code: program.source(),
                    catalog: None,
                    limits: Limits::default(),
                };
                if tx.send((seed, BatchItem::Run(run))).await.is_err() {
                    break;
                }
            }
        });
        while out.recv().await.is_some() {}
    });
    GENERATED as f64 / started.elapsed().as_secs_f64()
}

/// Resident-memory growth per instance with 64 runs in flight (Linux: VmRSS sampled while
/// all 64 sleep, minus VmRSS before), in MiB.
fn memory_per_instance(rt: &tokio::runtime::Runtime, engine: &Engine) -> Option<f64> {
    let rss = || -> Option<f64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb / 1024.0)
    };
    let before = rss()?;
    let during = rt.block_on(async {
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let engine = engine.clone();
                tokio::spawn(async move {
                    let code = "import time\nx = [0] * 1000\ntime.sleep(1.5)";
                    engine.run_snippet(code, None, &Limits::default()).await
                })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
        let during = rss();
        for t in tasks {
            let o = t.await.expect("task").expect("run");
            assert!(o.is_ok(), "{o:?}");
        }
        during
    })?;
    Some((during - before) / 64.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let monty = args
        .iter()
        .position(|a| a == "--monty")
        .and_then(|i| args.get(i + 1));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut input = tempfile::NamedTempFile::new().expect("temp file");
    for i in 0..LINES {
        writeln!(input, r#"{{"id": {i}, "code": "print(1+1)"}}"#).expect("write");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "{LINES} print(1+1) lines; in-process {IN_PROCESS_RUNS} runs; {GENERATED} generated programs; median of 3; {cores} cores"
    );
    for guest in codecell::ALL_GUESTS {
        let engine = Engine::builder()
            .guest(guest)
            .max_concurrent_runs(65)
            .build()
            .expect("guest built: python3 wasm-guests/build.py --guest all");
        // `codecell batch` meters fuel (its outcomes' fuel_used are compared run against run), so
        // its baseline is the engine alone with the same metering; the epoch figure is beside it.
        let fuel_engine = Engine::builder()
            .guest(guest)
            .metering(Metering::Fuel)
            .max_concurrent_runs(65)
            .build()
            .expect("guest built");
        in_process_rate(&rt, &engine, 1); // warm-up: compiled guest loaded, pool pages touched
        in_process_rate(&rt, &fuel_engine, 1);
        let alone = |engine: &Engine, at_once| {
            median(
                (0..3)
                    .map(|_| in_process_rate(&rt, engine, at_once))
                    .collect(),
            )
        };
        let (alone_1, alone_2) = (alone(&fuel_engine, 1), alone(&fuel_engine, 2));
        let (epoch_1, epoch_2) = (alone(&engine, 1), alone(&engine, 2));
        let cli_1 = median((0..3).map(|_| cli_rate(input.path(), guest, 1)).collect());
        let cli_2 = median((0..3).map(|_| cli_rate(input.path(), guest, 2)).collect());
        let gen_1 = median((0..3).map(|r| generated_rate(&rt, &engine, 1, r)).collect());
        let gen_n = median(
            (0..3)
                .map(|r| generated_rate(&rt, &engine, cores, r))
                .collect(),
        );
        let mem = memory_per_instance(&rt, &engine);
        println!(
            "{guest}: engine alone, fuel-metered as the batch: {alone_1:.0} runs/s one at a time, {alone_2:.0} two at once"
        );
        println!(
            "{guest}: engine alone, epoch-metered (the default): {epoch_1:.0} runs/s one at a time, {epoch_2:.0} two at once"
        );
        println!(
            "{guest}: codecell batch --jobs 1 {cli_1:.0} runs/s, --jobs 2 {cli_2:.0} runs/s ({:.2}x jobs 1; {:.0}% of the engine alone two at once)",
            cli_2 / cli_1,
            100.0 * cli_2 / alone_2
        );
        println!(
            "{guest}: generated programs through run_batch: {gen_1:.0}/s with 1 job, {gen_n:.0}/s with {cores}"
        );
        if let Some(mib) = mem {
            println!("{guest}: resident memory per live instance (64 in flight): {mib:.1} MiB");
        }
    }
    if let Some(python) = monty {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/monty_fresh.py");
        let out = std::process::Command::new(python)
            .arg(script)
            .arg("2000")
            .output()
            .expect("monty script runs");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        if !out.status.success() {
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
        }
    }
}
