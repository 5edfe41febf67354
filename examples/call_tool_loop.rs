//! A profiling target: one run making many `call_tool` round trips to an in-process echo tool.
//!
//! `cargo build --release --example call_tool_loop && perf record -g target/release/examples/call_tool_loop rustpython 200000`
//! Prints the mean round trip as the guest timed it. Figures quoted anywhere come from
//! `cargo bench --bench code_mode`. With `CODECELL_SNIPPET=FILE` it runs that file instead, with the
//! same `bench/echo` tool and limits, and prints its output and the fuel it used (for comparing variants).

use codecell::{Catalog, Limits, ToolSpec, handler_fn};
use std::time::Duration;

fn main() {
    let (guest, calls) =
        codecell_tests::example_args(200_000, "call_tool_loop [cpython|rustpython] [CALLS]");
    let spec = ToolSpec::new(
        "echo",
        "Return the arguments.",
        serde_json::json!({"type": "object"}),
    );
    let catalog = Catalog::builder()
        .category("bench", "Benchmark tools.")
        .tool("bench", spec, handler_fn(Ok))
        .build()
        .expect("catalog builds");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let engine = codecell_tests::engine(guest);
    let limits = Limits {
        deadline: Duration::from_secs(600),
        fuel: u64::MAX / 2,
        max_tool_calls: u32::MAX,
        ..Limits::default()
    };
    let snippet = std::env::var_os("CODECELL_SNIPPET")
        .map(|path| std::fs::read_to_string(&path).expect("CODECELL_SNIPPET is readable"));
    let code = snippet.clone().unwrap_or_else(|| {
        format!(
            "import time\nt0 = time.perf_counter()\nfor _ in range({calls}):\n    call_tool('bench', 'echo', x=1)\n\
             print((time.perf_counter() - t0) / {calls} * 1e6)"
        )
    });
    let outcome = rt
        .block_on(engine.run_snippet(&code, Some(catalog), &limits))
        .expect("run");
    if snippet.is_some() {
        print!("{}{}", outcome.stdout, outcome.stderr);
        println!("fuel used: {}", outcome.fuel_used);
    } else {
        println!(
            "{guest}: {} µs per call_tool round trip",
            outcome.stdout.trim()
        );
    }
}
