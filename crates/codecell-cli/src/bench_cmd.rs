//! `codecell bench [--json] [--guest G] [--quick]`: the performance figures of this machine in
//! one command, in-process, for each guest — fresh runs, tool calls, compute beside native
//! `python3`, metering A/B, throughput through `run_batch`, and host memory per live instance.
//!
//! Every figure is a median with its 10th–90th percentile spread; a ratio divides medians taken
//! in the same process, minutes apart at most, which is the only comparison this kind of shared
//! machine supports (figures move ±30% between runs). `--quick` shrinks counts and inputs so the
//! whole table takes seconds: it checks the rows exist, not the figures. The criterion benches
//! (`benches/`) stay the tool for development.

mod kernels;
mod memory;
mod native;
mod stats;

use crate::failure::Failure;
use crate::out;
use clap::Args;
use codecell::{
    ALL_GUESTS, BatchItem, BatchOptions, BatchRun, Catalog, Engine, GuestKind, Limits, Metering,
    ToolSpec, async_handler_fn, handler_fn, run_batch,
};
use kernels::{Kernel, LOOP, QUICK_DIVISOR, SUITE};
use serde::Serialize;
use serde_json::json;
use stats::{Row, median};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// The flags of `codecell bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Print one JSON document (`{"guests": [{"guest", "rows": [...]}]}`) instead of a table.
    #[arg(long)]
    json: bool,
    /// Measure only this guest (default: every guest).
    #[arg(long)]
    guest: Option<GuestKind>,
    /// Small counts and inputs: seconds instead of minutes; the figures are not meaningful.
    #[arg(long)]
    quick: bool,
}

/// How much of each workload to run.
struct Plan {
    /// Back-to-back fresh runs timed.
    fresh: usize,
    /// Fresh runs timed after a 10 ms gap.
    after_idle: usize,
    /// Single tool calls timed (in one run).
    calls: usize,
    /// Runs of 100 tool calls.
    blocks: usize,
    /// Repetitions of each compute kernel.
    reps: usize,
    /// Input sizes are divided by this.
    divisor: usize,
    /// Programs per `run_batch` throughput round, and rounds.
    batch: usize,
    rounds: usize,
    /// Runs held in flight for the memory rows.
    in_flight: usize,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                fresh: 5,
                after_idle: 3,
                calls: 20,
                blocks: 2,
                reps: 2,
                divisor: QUICK_DIVISOR,
                batch: 8,
                rounds: 1,
                in_flight: 4,
            }
        } else {
            Plan {
                fresh: 200,
                after_idle: 50,
                calls: 1000,
                blocks: 20,
                reps: 7,
                divisor: 1,
                batch: 400,
                rounds: 3,
                in_flight: 64,
            }
        }
    }
}

/// The whole report (`--json`).
#[derive(Serialize)]
struct Report {
    codecell: &'static str,
    quick: bool,
    /// `python3 --version` of the native baseline, or null when it is not on PATH.
    native_python: Option<String>,
    /// Cores the all-cores throughput row uses.
    cores: usize,
    guests: Vec<GuestReport>,
}

/// One guest's rows.
#[derive(Serialize)]
struct GuestReport {
    guest: &'static str,
    python_version: String,
    rows: Vec<Row>,
}

/// The native baseline: whether `python3` is on PATH, and each program's median there, run
/// right beside the guest's runs of the same program so both see the same machine.
struct Natives(bool);

impl Natives {
    /// Median milliseconds of the repetitions `program` times on native `python3`.
    async fn median_ms(&self, program: &str) -> Option<f64> {
        if !self.0 {
            return None;
        }
        let times = native::run(program)
            .await
            .and_then(|o| kernels::seconds(&o))?;
        median(&times).map(|s| s * 1e3)
    }

    /// `native_after_10ms_slowdown`: [`kernels::pause_program`]'s ratios on native `python3`.
    async fn pause_row(&self, pairs: usize) -> Row {
        const NAME: &str = "native_after_10ms_slowdown";
        if !self.0 {
            return Row::missing(NAME, "ratio", "native python3 is not on PATH");
        }
        match native::run(&kernels::pause_program(pairs))
            .await
            .and_then(|o| kernels::seconds(&o))
        {
            Some(ratios) => Row::of(NAME, "ratio", &ratios).noted(
                "native python3: a little interpreter work after a 10 ms sleep ÷ the same back to back (what a pause costs any code here)",
            ),
            None => Row::missing(NAME, "ratio", "native python3 failed the pause program"),
        }
    }
}

/// Runs the benchmarks and prints the table or the JSON report.
pub async fn run(args: BenchArgs) -> Result<ExitCode, Failure> {
    let plan = Plan::new(args.quick);
    let guests: Vec<GuestKind> = match args.guest {
        Some(guest) => vec![guest],
        None => ALL_GUESTS.to_vec(),
    };
    let native_python = native::version().await;
    let natives = Natives(native_python.is_some());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut reports = Vec::new();
    for guest in guests {
        reports.push(bench_guest(guest, &plan, &natives, cores).await?);
    }
    let report = Report {
        codecell: env!("CARGO_PKG_VERSION"),
        quick: args.quick,
        native_python,
        cores,
        guests: reports,
    };
    if args.json {
        let text =
            serde_json::to_string_pretty(&report).map_err(|e| Failure::host(e.to_string()))?;
        out::line(&text)?;
    } else {
        out::stdout(&table(&report))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Limits for the benchmark's own programs: generous, so no limit cuts a measurement short.
fn bench_limits() -> Limits {
    Limits {
        deadline: Duration::from_secs(120),
        memory_bytes: 512 << 20,
        max_output_bytes: 1 << 20,
        max_tool_calls: 100_000,
        ..Limits::default()
    }
}

/// Releases the runs waiting in `bench.hold`, and counts those that arrived.
struct Hold {
    arrived: AtomicUsize,
    release: watch::Sender<bool>,
}

/// The benchmark's catalog: `bench.add(a, b)` and `bench.hold()`.
fn catalog(hold: Arc<Hold>) -> Result<Catalog, Failure> {
    let add_schema = json!({
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"]
    });
    Catalog::builder()
        .category("bench", "Benchmark tools.")
        .tool(
            "bench",
            ToolSpec::new("add", "Adds a and b.", add_schema),
            handler_fn(|args| {
                let a = args["a"].as_f64().unwrap_or(0.0);
                let b = args["b"].as_f64().unwrap_or(0.0);
                Ok(json!(a + b))
            }),
        )
        .tool(
            "bench",
            ToolSpec::new("hold", "Waits until released.", json!({"type": "object"})),
            async_handler_fn(move |_| {
                let hold = hold.clone();
                async move {
                    let mut released = hold.release.subscribe();
                    hold.arrived.fetch_add(1, Ordering::SeqCst);
                    let _ = released.wait_for(|r| *r).await;
                    Ok(json!(null))
                }
            }),
        )
        .build()
        .map_err(|e| Failure::host(format!("the benchmark catalog: {e}")))
}

/// Everything one guest's rows need.
struct Bench {
    engine: Engine,
    fuel: Engine,
    catalog: Catalog,
    hold: Arc<Hold>,
    limits: Limits,
}

impl Bench {
    /// Runs `code` on `engine`; its stdout, its fuel and duration, or why it failed.
    async fn stdout(&self, engine: &Engine, code: &str) -> Result<(String, u64, f64), Failure> {
        let outcome = engine
            .run_snippet(code, Some(self.catalog.clone()), &self.limits)
            .await
            .map_err(Failure::engine)?;
        if !outcome.is_ok() {
            return Err(Failure::host(format!(
                "a benchmark program failed on {}: {:?}",
                engine.guest(),
                outcome.result
            )));
        }
        Ok((outcome.stdout, outcome.fuel_used, outcome.duration_ms))
    }

    /// The seconds a program printed.
    async fn seconds(&self, engine: &Engine, code: &str) -> Result<Vec<f64>, Failure> {
        let (stdout, _, _) = self.stdout(engine, code).await?;
        kernels::seconds(&stdout)
            .ok_or_else(|| Failure::host(format!("a benchmark program printed {stdout:?}")))
    }

    /// The seconds a program printed, in microseconds.
    async fn microseconds(&self, engine: &Engine, code: &str) -> Result<Vec<f64>, Failure> {
        Ok(self
            .seconds(engine, code)
            .await?
            .iter()
            .map(|s| s * 1e6)
            .collect())
    }

    /// Wall-clock milliseconds of each of `count` fresh runs of `print(1+1)`, `gap` apart.
    async fn fresh(
        &self,
        engine: &Engine,
        count: usize,
        gap: Duration,
    ) -> Result<Vec<f64>, Failure> {
        let mut times = Vec::with_capacity(count);
        for _ in 0..count {
            if !gap.is_zero() {
                tokio::time::sleep(gap).await;
            }
            let started = Instant::now();
            let outcome = engine
                .run_snippet("print(1+1)", None, &self.limits)
                .await
                .map_err(Failure::engine)?;
            times.push(started.elapsed().as_secs_f64() * 1e3);
            if outcome.stdout != "2\n" {
                return Err(Failure::host(format!(
                    "print(1+1) printed {:?}",
                    outcome.stdout
                )));
            }
        }
        Ok(times)
    }

    /// A kernel's row on `engine`: guest milliseconds per repetition against native.
    async fn kernel(
        &self,
        engine: &Engine,
        kernel: &Kernel,
        name: &'static str,
        plan: &Plan,
        natives: &Natives,
    ) -> Result<Row, Failure> {
        let program = kernels::program(kernel, kernel.size / plan.divisor, plan.reps);
        let ms: Vec<f64> = self
            .seconds(engine, &program)
            .await?
            .iter()
            .map(|s| s * 1e3)
            .collect();
        let native = natives.median_ms(&program).await;
        Ok(Row::of(name, "ms", &ms).against(native))
    }

    /// Runs/s of `print(1+1)` through `run_batch` with `jobs` in flight.
    async fn throughput(&self, jobs: usize, plan: &Plan) -> Result<Vec<f64>, Failure> {
        let mut rates = Vec::new();
        for _ in 0..plan.rounds {
            let (tx, rx) = mpsc::channel(jobs.max(1));
            let engine = self.engine.clone();
            let limits = self.limits.clone();
            let count = plan.batch;
            let feeder = tokio::spawn(async move {
                for i in 0..count {
                    let run = BatchRun {
                        engine: engine.clone(),
                        code: "print(1+1)".to_string(),
                        catalog: None,
                        limits: limits.clone(),
                    };
                    if tx.send((i, BatchItem::Run(run))).await.is_err() {
                        return;
                    }
                }
            });
            let started = Instant::now();
            let mut outcomes = run_batch(
                rx,
                BatchOptions {
                    concurrency: jobs,
                    ordered: false,
                },
            );
            let mut done = 0;
            while let Some((_, result)) = outcomes.recv().await {
                let outcome = result.map_err(Failure::engine)?;
                if !outcome.is_ok() {
                    return Err(Failure::host(format!(
                        "a batch run failed: {:?}",
                        outcome.result
                    )));
                }
                done += 1;
            }
            let elapsed = started.elapsed().as_secs_f64();
            let _ = feeder.await;
            rates.push(done as f64 / elapsed.max(1e-9));
        }
        Ok(rates)
    }

    /// Host memory per run in flight (each holding a 1 MB string) and per idle slot afterwards.
    async fn memory(&self, plan: &Plan) -> Result<(Row, Row), Failure> {
        const LIVE: &str = "memory_per_live_instance";
        const IDLE: &str = "memory_per_idle_slot";
        let Some(before) = memory::resident_bytes() else {
            return Ok((
                Row::missing(LIVE, "MiB", memory::UNMEASURED),
                Row::missing(IDLE, "MiB", memory::UNMEASURED),
            ));
        };
        let _ = self.hold.release.send(false);
        self.hold.arrived.store(0, Ordering::SeqCst);
        let mut runs = Vec::new();
        for _ in 0..plan.in_flight {
            let engine = self.engine.clone();
            let catalog = self.catalog.clone();
            let limits = self.limits.clone();
            runs.push(tokio::spawn(async move {
                engine
                    .run_snippet(kernels::HOLD, Some(catalog), &limits)
                    .await
            }));
        }
        let waited = Instant::now();
        while self.hold.arrived.load(Ordering::SeqCst) < plan.in_flight {
            if waited.elapsed() > Duration::from_secs(60) {
                let _ = self.hold.release.send(true);
                return Err(Failure::host(
                    "the memory benchmark's runs never all started".to_string(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let live = memory::resident_bytes().unwrap_or(before);
        let _ = self.hold.release.send(true);
        for run in runs {
            let outcome = run
                .await
                .map_err(|e| Failure::host(e.to_string()))?
                .map_err(Failure::engine)?;
            if outcome.stdout != "1000000\n" {
                return Err(Failure::host(format!(
                    "a held run ended {:?}",
                    outcome.result
                )));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let idle = memory::resident_bytes().unwrap_or(before);
        let n = plan.in_flight;
        Ok((
            Row::of(LIVE, "MiB", &[memory::mib_each(before, live, n)]).noted(format!(
                "host memory (proportional set size) added with {n} runs in flight, each holding a 1 MB string, ÷ {n}"
            )),
            Row::of(IDLE, "MiB", &[memory::mib_each(before, idle, n)]).noted(format!(
                "host memory (proportional set size) still added once those {n} runs ended (slots kept by the pool), ÷ {n}"
            )),
        ))
    }
}

/// Every row for `guest`.
async fn bench_guest(
    guest: GuestKind,
    plan: &Plan,
    natives: &Natives,
    cores: usize,
) -> Result<GuestReport, Failure> {
    let engine = Engine::builder()
        .guest(guest)
        .build()
        .map_err(Failure::engine)?;
    let fuel = Engine::builder()
        .guest(guest)
        .metering(Metering::Fuel)
        .build()
        .map_err(Failure::engine)?;
    let python_version = engine.python_version().await.map_err(Failure::engine)?;
    let (release, _) = watch::channel(false);
    let hold = Arc::new(Hold {
        arrived: AtomicUsize::new(0),
        release,
    });
    let bench = Bench {
        catalog: catalog(hold.clone())?,
        engine,
        fuel,
        hold,
        limits: bench_limits(),
    };
    let (engine, fuel) = (&bench.engine, &bench.fuel);
    let mut rows = Vec::new();

    bench.fresh(engine, 3, Duration::ZERO).await?; // warm-up: caches, the warm instance
    let fresh = bench.fresh(engine, plan.fresh, Duration::ZERO).await?;
    rows.push(Row::of("fresh_run", "ms", &fresh));
    let after = bench
        .fresh(engine, plan.after_idle, Duration::from_millis(10))
        .await?;
    rows.push(
        Row::of("fresh_run_after_10ms", "ms", &after)
            .relative_to(median(&fresh))
            .noted("ratio: ÷ fresh_run; compare native_after_10ms_slowdown"),
    );
    rows.push(natives.pause_row(plan.after_idle).await);
    bench.fresh(fuel, 3, Duration::ZERO).await?;
    rows.push(
        Row::of(
            "fresh_run_fuel",
            "ms",
            &bench.fresh(fuel, plan.fresh, Duration::ZERO).await?,
        )
        .noted("the same on a fuel-metered engine"),
    );
    let (live, idle) = bench.memory(plan).await?;
    rows.extend([live, idle]);

    let each = bench
        .microseconds(engine, &kernels::tool_calls_each(plan.calls))
        .await?;
    rows.push(
        Row::of("tool_call", "us", &each)
            .noted("one call_tool('bench', 'add', a, b) round trip, timed in the guest"),
    );
    let awaited = bench
        .microseconds(engine, &kernels::tool_calls_awaited_each(plan.calls))
        .await?;
    rows.push(
        Row::of("tool_call_awaited", "us", &awaited)
            .relative_to(median(&each))
            .noted("the same call awaited (call_tool_async), one at a time; ratio: ÷ tool_call"),
    );
    let mut blocks = Vec::new();
    for _ in 0..plan.blocks {
        blocks.extend(
            bench
                .seconds(engine, &kernels::tool_calls_block(100))
                .await?
                .iter()
                .map(|s| s * 1e3),
        );
    }
    rows.push(Row::of("tool_calls_100", "ms", &blocks));

    // Metering A/B: the loop alternately on native python3 and each engine, one repetition a
    // run, so all sides see the same machine (the load here moves figures ±30% within a minute).
    let loop_program = kernels::program(&LOOP, LOOP.size / plan.divisor, 1);
    let (mut epoch_ms, mut fuel_ms, mut paired) = (Vec::new(), Vec::new(), Vec::new());
    let mut native_ms = Vec::new();
    for _ in 0..plan.reps.max(3) {
        native_ms.extend(natives.median_ms(&loop_program).await);
        let e = bench
            .seconds(engine, &loop_program)
            .await?
            .iter()
            .sum::<f64>()
            * 1e3;
        let f = bench
            .seconds(fuel, &loop_program)
            .await?
            .iter()
            .sum::<f64>()
            * 1e3;
        epoch_ms.push(e);
        fuel_ms.push(f);
        paired.push(f / e.max(1e-9));
    }
    let native_loop = median(&native_ms);
    let looped = Row::of("loop_1e6", "ms", &epoch_ms).against(native_loop);
    let looped_fuel = Row::of("loop_1e6_fuel", "ms", &fuel_ms)
        .against(native_loop)
        .noted("the loop on a fuel-metered engine, runs alternating with loop_1e6");
    let metering_ratio = Row::of("metering_fuel_vs_epoch", "ratio", &paired)
        .noted("fuel-metered ÷ epoch-metered time of the loop, per alternating pair");
    let (_, fuel_used, ms) = bench.stdout(fuel, &loop_program).await?;
    let fuel_rate = Row::of(
        "fuel_per_second",
        "fuel/s",
        &[fuel_used as f64 / (ms / 1e3).max(1e-9)],
    )
    .noted(
        "fuel a busy guest burns per second here: fuel F buys about F / this seconds of compute",
    );
    rows.extend([looped, looped_fuel, metering_ratio, fuel_rate]);

    let mut ratios = Vec::new();
    for kernel in &SUITE {
        let row = bench
            .kernel(engine, kernel, kernel.name, plan, natives)
            .await?;
        ratios.extend(row.ratio);
        rows.push(row);
    }
    rows.push(if ratios.len() == SUITE.len() {
        Row::of(
            "compute_suite_median_ratio",
            "ratio",
            &[median(&ratios).unwrap_or(f64::NAN)],
        )
    } else {
        Row::missing(
            "compute_suite_median_ratio",
            "ratio",
            "native python3 is not on PATH (or failed)",
        )
    });

    rows.push(Row::of(
        "runs_per_second_1_job",
        "runs/s",
        &bench.throughput(1, plan).await?,
    ));
    rows.push(
        Row::of(
            "runs_per_second_all_cores",
            "runs/s",
            &bench.throughput(cores, plan).await?,
        )
        .noted(format!("{cores} jobs in flight through run_batch")),
    );
    Ok(GuestReport {
        guest: guest.name(),
        python_version,
        rows,
    })
}

/// The human-readable table.
fn table(report: &Report) -> String {
    let mut text = format!(
        "codecell {} bench{} — native baseline: {}; {} cores\n",
        report.codecell,
        if report.quick {
            " (quick: counts too small for real figures)"
        } else {
            ""
        },
        report
            .native_python
            .as_deref()
            .unwrap_or("none (python3 not on PATH)"),
        report.cores
    );
    let fig = |v: Option<f64>| match v {
        None => "–".to_string(),
        Some(v) if v.abs() >= 1e6 => format!("{v:.3e}"),
        Some(v) => format!("{v:.3}"),
    };
    for guest in &report.guests {
        text.push_str(&format!(
            "\n{} (Python {})\n",
            guest.guest, guest.python_version
        ));
        text.push_str(&format!(
            "{:<28} {:>12} {:>25} {:>10} {:>8}  unit\n",
            "row", "median", "p10 .. p90", "native", "ratio"
        ));
        for row in &guest.rows {
            text.push_str(&format!(
                "{:<28} {:>12} {:>25} {:>10} {:>8}  {}\n",
                row.name,
                fig(row.median),
                format!("{} .. {}", fig(row.p10), fig(row.p90)),
                fig(row.native),
                row.ratio.map_or("–".to_string(), |r| format!("{r:.2}×")),
                row.unit
            ));
        }
    }
    text
}
