//! Code-mode benchmarks: a fresh run, one `call_tool` round trip, and a loop against native python3.
//!
//! `cargo bench --bench code_mode`. The loop ratio (guest / native python3) is printed at the end,
//! from medians measured in the same run.

use codecell::{Catalog, Engine, Limits, ToolSpec, handler_fn};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// The loop body timed in both interpreters.
const LOOP_BODY: &str = "x = _ * 2";
const LOOP: &str = "for _ in range(1_000_000):\n    x = _ * 2\n";

fn engine() -> Engine {
    Engine::builder()
        .build()
        .expect("guest built: run `python3 wasm-guests/build.py`")
}

fn echo_catalog() -> Arc<Catalog> {
    let spec = ToolSpec::new("echo", "Return the arguments.", json!({"type": "object"}));
    Arc::new(
        Catalog::builder()
            .category("bench", "Benchmark tools.")
            .tool("bench", spec, handler_fn(Ok))
            .build()
            .expect("catalog builds"),
    )
}

/// Seconds printed by the guest for `iters` iterations of `body`, timed inside the guest.
fn guest_timed(
    rt: &tokio::runtime::Runtime,
    engine: &Engine,
    catalog: &Arc<Catalog>,
    iters: u64,
    body: &str,
) -> Duration {
    let code = format!(
        "import time\nt0 = time.perf_counter()\nfor _ in range({iters}):\n    {body}\nprint(time.perf_counter() - t0)"
    );
    let limits = Limits {
        deadline: Duration::from_secs(600),
        fuel: u64::MAX / 2,
        max_tool_calls: u32::MAX,
        ..Limits::default()
    };
    let outcome = rt
        .block_on(engine.run_snippet(&code, Some(catalog.clone()), &limits))
        .expect("run");
    let secs: f64 = outcome
        .stdout
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("guest said {outcome:?}"));
    Duration::from_secs_f64(secs)
}

fn native_loop_seconds() -> f64 {
    let script =
        format!("import time\nt0 = time.perf_counter()\n{LOOP}print(time.perf_counter() - t0)");
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("python3 printed seconds")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let engine = engine();
    let catalog = echo_catalog();
    let limits = Limits::default();

    c.bench_function("fresh_run_print_1_plus_1", |b| {
        b.iter(|| {
            rt.block_on(engine.run_snippet("print(1+1)", None, &limits))
                .unwrap()
        })
    });

    c.bench_function("call_tool_round_trip", |b| {
        b.iter_custom(|iters| {
            guest_timed(
                &rt,
                &engine,
                &catalog,
                iters,
                "call_tool('bench', 'echo', x=1)",
            )
        })
    });

    let mut group = c.benchmark_group("loop_1e6");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("guest_cpython", |b| {
        b.iter(|| {
            rt.block_on(engine.run_snippet(
                LOOP,
                None,
                &Limits {
                    deadline: Duration::from_secs(60),
                    fuel: u64::MAX / 2,
                    ..Limits::default()
                },
            ))
            .unwrap()
        })
    });
    group.bench_function("native_python3", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| Duration::from_secs_f64(native_loop_seconds()))
                .sum()
        })
    });
    group.finish();

    // The ratio, from medians of the loop itself (timed inside each interpreter) in this run.
    let guest: Vec<f64> = (0..7)
        .map(|_| guest_timed(&rt, &engine, &catalog, 1_000_000, LOOP_BODY).as_secs_f64())
        .collect();
    let native: Vec<f64> = (0..7).map(|_| native_loop_seconds()).collect();
    let (g, n) = (median(guest), median(native));
    println!(
        "loop_1e6 median: guest {:.1} ms, native python3 {:.1} ms, ratio {:.2}x",
        g * 1e3,
        n * 1e3,
        g / n
    );
}

criterion_group!(code_mode, benches);
criterion_main!(code_mode);
