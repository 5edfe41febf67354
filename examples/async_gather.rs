//! Ten calls of a tool that sleeps 200 ms, one after another with `call_tool` and at once with
//! `asyncio.gather` over `call_tool_async`, on each guest; prints the wall time of each run and
//! whether the gathered calls overlapped. Then one round trip to an instant tool, synchronous and
//! awaited, timed inside the guest (median of 5 runs of 300 calls; `cargo bench --bench
//! code_mode -- call_tool_round_trip` measures the same in release).
//!
//! `cargo run --example async_gather` (the guests must be built: `python3 wasm-guests/build.py
//! --guest all`).

use codecell::{
    ALL_GUESTS, HandlerError, ToolDefinition, ToolSpec, async_handler_fn, code_mode_from_tools,
};
use codecell_tests::engine;
use serde_json::json;
use std::time::{Duration, Instant};

const SEQUENTIAL: &str = "for _ in range(10):\n    call_tool('slow', 'wait', ms=200)\n";
const GATHERED: &str = "import asyncio\n\
    await asyncio.gather(*(call_tool_async('slow', 'wait', ms=200) for _ in range(10)))\n";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    for guest in ALL_GUESTS {
        let wait = ToolDefinition {
            category: "slow".into(),
            spec: ToolSpec::new("wait", "Sleeps ms milliseconds.", json!({"type": "object"})),
            handler: async_handler_fn(|args| async move {
                let ms = args["ms"].as_u64().unwrap_or(0).min(10_000);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok::<_, HandlerError>(json!(ms))
            }),
        };
        let echo = ToolDefinition {
            category: "slow".into(),
            spec: ToolSpec::new("echo", "Echo.", json!({"type": "object"})),
            handler: codecell::handler_fn(Ok),
        };
        let mode = code_mode_from_tools(engine(guest), vec![wait, echo], |_| "Slow tools.".into())?;
        mode.execute_code("print(1)").await?; // compile and warm up, untimed
        for (label, code) in [("call_tool x10", SEQUENTIAL), ("gather x10", GATHERED)] {
            let started = Instant::now();
            let outcome = mode.execute_code(code).await?;
            let wall = started.elapsed();
            anyhow::ensure!(outcome.is_ok(), "{outcome:#?}");
            let first_end = outcome
                .tool_calls
                .iter()
                .map(|c| c.end_us)
                .min()
                .unwrap_or(0);
            let last_start = outcome
                .tool_calls
                .iter()
                .map(|c| c.start_us)
                .max()
                .unwrap_or(0);
            println!(
                "{guest:>10} {label:<14} {:>7.1} ms, {} calls, all overlapping: {}",
                wall.as_secs_f64() * 1e3,
                outcome.tool_calls.len(),
                last_start < first_end
            );
        }
        for (label, call) in [
            ("call_tool", "call_tool('slow', 'echo', x=1)"),
            ("awaited", "await call_tool_async('slow', 'echo', x=1)"),
        ] {
            let code = format!(
                "import time\nt0 = time.perf_counter()\nfor _ in range(300):\n    {call}\nprint((time.perf_counter() - t0) / 300 * 1e6)"
            );
            let mut micros = Vec::new();
            for _ in 0..5 {
                let outcome = mode.execute_code(&code).await?;
                micros.push(outcome.stdout.trim().parse::<f64>()?);
            }
            micros.sort_by(f64::total_cmp);
            println!(
                "{guest:>10} one {label:<9} round trip: median {:>6.1} us",
                micros[2]
            );
        }
    }
    Ok(())
}
