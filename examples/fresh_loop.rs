//! A profiling target: many fresh `print(1+1)` runs back to back on one guest, without criterion's
//! analysis in the way, so `perf stat`/`perf record`/`perf trace` see only the run loop.
//!
//! `cargo build --release --example fresh_loop && perf stat target/release/examples/fresh_loop rustpython 2000`
//! Prints the median, 10th and 90th percentile of the runs. Timings here are for profiling; the
//! figures quoted anywhere come from `cargo bench --bench code_mode`.

use codecell::Limits;

fn main() {
    let (guest, runs) =
        codecell_tests::example_args(2000, "fresh_loop [cpython|rustpython] [RUNS]");
    let runs = runs as usize;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let engine = codecell_tests::engine(guest);
    let limits = Limits::default();
    let run_once = || {
        let started = std::time::Instant::now();
        let outcome = rt
            .block_on(engine.run_snippet("print(1+1)", None, &limits))
            .expect("run");
        assert_eq!(outcome.stdout, "2\n", "{outcome:?}");
        started.elapsed().as_secs_f64() * 1e3
    };
    // Warm-up: the pool's slots and the page cache.
    for _ in 0..50 {
        run_once();
    }
    let mut ms: Vec<f64> = (0..runs).map(|_| run_once()).collect();
    ms.sort_by(f64::total_cmp);
    println!(
        "{guest}: {runs} fresh runs, median {:.3} ms, p10 {:.3} ms, p90 {:.3} ms",
        ms[runs / 2],
        ms[runs / 10],
        ms[runs * 9 / 10]
    );
}
