//! Dynamic-tool benchmarks: `define` (validation, schemas, smoke run in a fresh guest, atomic
//! write) and `invoke` (schema checks around a fresh guest run).
//!
//! `cargo bench --bench dynamic_tools`, every guest side by side (`dynamic_tools/<guest>/…`).
//! Besides criterion's estimates, the medians of every timed call are printed per guest.

use codecell::{ALL_GUESTS, DynamicTools, RegistryOptions};
use codecell_tests::engine;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::path::Path;
use std::time::{Duration, Instant};

fn spec() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dynamic/word_frequency.json");
    let text = std::fs::read_to_string(path).expect("fixture readable");
    codecell::canonical::parse_exact(&text).expect("fixture is JSON")
}

fn median(samples: &RefCell<Vec<Duration>>) -> Duration {
    let mut v = samples.borrow().clone();
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for guest in ALL_GUESTS {
        let store = tempfile::tempdir().expect("tempdir");
        let tools = DynamicTools::open(engine(guest), RegistryOptions::new("bench", store.path()))
            .expect("store opens");
        let base = spec();
        let define_times = RefCell::new(Vec::new());
        let invoke_times = RefCell::new(Vec::new());

        let mut group = c.benchmark_group(format!("dynamic_tools/{guest}"));
        group
            .sample_size(20)
            .measurement_time(Duration::from_secs(10));
        // Each define stores a new manifest (one session tool per name), so give every iteration
        // its own name.
        let mut n = 0u64;
        group.bench_function("define_with_smoke_run", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    n += 1;
                    let mut spec = base.clone();
                    spec["name"] = json!(format!("word_frequency_{n}"));
                    let started = Instant::now();
                    rt.block_on(tools.define(&spec)).expect("define");
                    let took = started.elapsed();
                    define_times.borrow_mut().push(took);
                    total += took;
                }
                total
            })
        });

        // The same invoke among the hundreds of session tools the define benchmark left behind
        // (resolution used to clone every manifest: 30–45 ms with ~900 tools).
        rt.block_on(tools.define(&base))
            .expect("define word_frequency");
        let args = json!({"text": "the quick brown fox jumps over the lazy dog the end", "top": 3});
        group.bench_function("invoke_among_many_session_tools", |b| {
            b.iter(|| {
                rt.block_on(tools.invoke("word_frequency", &args))
                    .expect("invoke")
            })
        });

        // A store of its own for the plain invoke figure.
        let invoke_store = tempfile::tempdir().expect("tempdir");
        let tools = DynamicTools::open(
            engine(guest),
            RegistryOptions::new("bench", invoke_store.path()),
        )
        .expect("store opens");
        rt.block_on(tools.define(&base))
            .expect("define word_frequency");
        let args = json!({"text": "the quick brown fox jumps over the lazy dog the end", "top": 3});
        group.bench_function("invoke", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let started = Instant::now();
                    rt.block_on(tools.invoke("word_frequency", &args))
                        .expect("invoke");
                    let took = started.elapsed();
                    invoke_times.borrow_mut().push(took);
                    total += took;
                }
                total
            })
        });
        group.finish();

        println!(
            "dynamic_tools medians ({guest}): define (smoke run included) {:.2} ms over {} calls, invoke {:.2} ms over {} calls",
            median(&define_times).as_secs_f64() * 1e3,
            define_times.borrow().len(),
            median(&invoke_times).as_secs_f64() * 1e3,
            invoke_times.borrow().len(),
        );
    }
}

criterion_group!(dynamic_tools, benches);
criterion_main!(dynamic_tools);
