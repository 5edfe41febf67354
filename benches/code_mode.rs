//! Code-mode benchmarks, every guest side by side in one run: a fresh run, one `call_tool` round
//! trip (synchronous, and awaited with `call_tool_async`), and a loop against native python3.
//!
//! `cargo bench --bench code_mode`. Bench ids end in the guest's name (`…/cpython`,
//! `…/rustpython`). The loop ratios (guest / native python3) are printed at the end, from medians
//! measured in the same run.

use codecell::{ALL_GUESTS, Catalog, Engine, GuestKind, Limits, ToolSpec, handler_fn};
use codecell_tests::engine;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::process::Command;
use std::time::Duration;

/// The loop body timed in both interpreters.
const LOOP_BODY: &str = "x = _ * 2";
const LOOP: &str = "for _ in range(1_000_000):\n    x = _ * 2\n";

fn echo_catalog() -> Catalog {
    let spec = ToolSpec::new("echo", "Return the arguments.", json!({"type": "object"}));
    Catalog::builder()
        .category("bench", "Benchmark tools.")
        .tool("bench", spec, handler_fn(Ok))
        .build()
        .expect("catalog builds")
}

/// Seconds printed by the guest for `iters` iterations of `body`, timed inside the guest.
fn guest_timed(
    rt: &tokio::runtime::Runtime,
    engine: &Engine,
    catalog: &Catalog,
    iters: u64,
    body: &str,
) -> Duration {
    guest_timed_with(rt, engine, catalog, iters, "", body)
}

/// Like [`guest_timed`], with `setup` run before the clock starts.
fn guest_timed_with(
    rt: &tokio::runtime::Runtime,
    engine: &Engine,
    catalog: &Catalog,
    iters: u64,
    setup: &str,
    body: &str,
) -> Duration {
    let code = format!(
        "{setup}import time\nt0 = time.perf_counter()\nfor _ in range({iters}):\n    {body}\nprint(time.perf_counter() - t0)"
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
    let engines: Vec<(GuestKind, Engine)> = ALL_GUESTS.iter().map(|g| (*g, engine(*g))).collect();
    let catalog = echo_catalog();
    let limits = Limits::default();
    let long = Limits {
        deadline: Duration::from_secs(600),
        fuel: u64::MAX / 2,
        ..Limits::default()
    };

    // Baseline in the same run: each guest with the other warm-instance setting than its default.
    let toggled: Vec<(String, Engine)> = ALL_GUESTS
        .iter()
        .map(|g| {
            let warm = !g.warm_by_default();
            let engine = Engine::builder()
                .guest(*g)
                .warm_instance(warm)
                .build()
                .expect("guest built");
            let label = if warm { "with" } else { "without" };
            (format!("{g}_{label}_warm_instance"), engine)
        })
        .collect();
    let named: Vec<(String, &Engine)> = engines
        .iter()
        .map(|(g, e)| (g.name().to_string(), e))
        .chain(toggled.iter().map(|(n, e)| (n.clone(), e)))
        .collect();
    let mut group = c.benchmark_group("fresh_run_print_1_plus_1");
    for (name, engine) in &named {
        group.bench_function(name.as_str(), |b| {
            b.iter(|| {
                rt.block_on(engine.run_snippet("print(1+1)", None, &limits))
                    .unwrap()
            })
        });
    }
    group.finish();

    // The latency a caller sees when runs are spaced out (as an agent's are, between model
    // turns): the warm instance made after the previous run is ready. The gap is not timed.
    let mut group = c.benchmark_group("fresh_run_print_1_plus_1_after_idle");
    for (name, engine) in &named {
        group.bench_function(name.as_str(), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    rt.block_on(async { tokio::time::sleep(Duration::from_millis(10)).await });
                    let started = std::time::Instant::now();
                    rt.block_on(engine.run_snippet("print(1+1)", None, &limits))
                        .unwrap();
                    total += started.elapsed();
                }
                total
            })
        });
    }
    group.finish();

    // The floor under a fresh run: a new store and instance, and the smallest export call.
    let mut group = c.benchmark_group("fresh_instance_python_version");
    for (guest, engine) in &engines {
        group.bench_function(guest.name(), |b| {
            b.iter(|| rt.block_on(engine.python_version()).unwrap())
        });
    }
    group.finish();

    let mut group = c.benchmark_group("call_tool_round_trip");
    for (guest, engine) in &engines {
        group.bench_function(guest.name(), |b| {
            b.iter_custom(|iters| {
                guest_timed(
                    &rt,
                    engine,
                    &catalog,
                    iters,
                    "call_tool('bench', 'echo', x=1)",
                )
            })
        });
        // The same call awaited (top-level await: the timed loop runs on the guest's event
        // loop), one at a time: start-tool-call, then wait-tool-calls for its completion.
        group.bench_function(format!("{guest}/awaited"), |b| {
            b.iter_custom(|iters| {
                guest_timed(
                    &rt,
                    engine,
                    &catalog,
                    iters,
                    "await call_tool_async('bench', 'echo', x=1)",
                )
            })
        });
    }
    group.finish();

    // Where a round trip goes, timed inside the guest: argument encoding, result decoding, and
    // the host import alone (no JSON work in Python).
    let parts = [
        ("encode_args", "_codecell_api._ENCODE_ARGS({'x': 1})"),
        (
            "decode_result",
            "_codecell_api._DECODE_RESULT('{\"x\": 1}')",
        ),
        (
            "host_call_only",
            "_b.call_tool('bench', 'echo', '{\"x\": 1}')",
        ),
    ];
    let mut group = c.benchmark_group("call_tool_parts");
    for (guest, engine) in &engines {
        for (part, body) in parts {
            group.bench_function(format!("{guest}/{part}"), |b| {
                b.iter_custom(|iters| {
                    let setup = "import _codecell_api; import _codecell_binding as _b\n";
                    guest_timed_with(&rt, engine, &catalog, iters, setup, body)
                })
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("loop_1e6");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    for (guest, engine) in &engines {
        group.bench_function(format!("guest_{}", guest.name()), |b| {
            b.iter(|| rt.block_on(engine.run_snippet(LOOP, None, &long)).unwrap())
        });
    }
    group.bench_function("native_python3", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| Duration::from_secs_f64(native_loop_seconds()))
                .sum()
        })
    });
    group.finish();

    // The ratios, from medians of the loop itself (timed inside each interpreter) in this run.
    let native = median((0..7).map(|_| native_loop_seconds()).collect());
    for (guest, engine) in &engines {
        let timed: Vec<f64> = (0..7)
            .map(|_| guest_timed(&rt, engine, &catalog, 1_000_000, LOOP_BODY).as_secs_f64())
            .collect();
        let g = median(timed);
        println!(
            "loop_1e6 median: {guest} {:.1} ms, native python3 {:.1} ms, ratio {:.2}x",
            g * 1e3,
            native * 1e3,
            g / native
        );
    }
}

criterion_group!(code_mode, benches);
criterion_main!(code_mode);
