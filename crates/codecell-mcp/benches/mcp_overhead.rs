//! What MCP costs, each figure beside its baseline from the same run (medians):
//! - a tool call to an upstream MCP server (server-everything's `echo`, over stdio) beside a
//!   call to a native Rust handler, from the run's own call records;
//! - `execute_code` of `print(1+1)` through the server (rmcp's client, in-process pipe) beside
//!   the engine's own fresh run.
//!
//! `cargo bench -p codecell-mcp --bench mcp_overhead` (needs `bash .ci/install-mcp`). The
//! client-observed HTTP figure comes from `benches/http_overhead.py`.

use std::time::{Duration, Instant};

use codecell::{Catalog, CodeMode, Engine, Limits, ToolSpec, handler_fn};
use codecell_mcp::{CodecellServer, load_catalog};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

const RUNS: usize = 30;
const CALLS: usize = 50;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

async fn per_call_us(mode: &CodeMode, category: &str) -> f64 {
    let code =
        format!("for _ in range({CALLS}):\n    call_tool({category:?}, 'echo', message='hi')");
    let mut durations = Vec::new();
    for _ in 0..RUNS {
        let outcome = mode.execute_code(&code).await.expect("runs");
        assert!(outcome.is_ok(), "{outcome:?}");
        durations.extend(outcome.tool_calls.iter().map(|c| c.duration_us as f64));
    }
    median(durations)
}

async fn fresh_run_ms(mode: &CodeMode) -> f64 {
    let mut times = Vec::new();
    for _ in 0..RUNS * 3 {
        let started = Instant::now();
        let outcome = mode.execute_code("print(1+1)").await.expect("runs");
        assert!(outcome.is_ok());
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    median(times)
}

#[tokio::main]
async fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let engine = Engine::builder()
        .build()
        .expect("the CPython guest is built");
    let echo = ToolSpec::new(
        "echo",
        "Echoes.",
        json!({"type": "object", "properties": {"message": {"type": "string"}}}),
    );
    let native = Catalog::builder()
        .tool(
            "native",
            echo,
            handler_fn(|args| Ok(json!(format!("Echo: {}", args["message"])))),
        )
        .build()
        .unwrap();
    let native = CodeMode::new(engine.clone(), native).with_limits(Limits {
        deadline: Duration::from_secs(60),
        ..Limits::default()
    });
    let upstream = load_catalog(&root.join("fixtures/mcp/upstream.json"), None)
        .await
        .expect("upstream servers start (bash .ci/install-mcp)");
    let upstream = CodeMode::new(engine.clone(), upstream).with_limits(native.limits().clone());

    let native_us = per_call_us(&native, "native").await;
    let upstream_us = per_call_us(&upstream, "everything").await;
    println!(
        "tool call, median of {} calls: native handler {native_us:.1} us, upstream MCP server \
         (stdio) {upstream_us:.1} us ({:.0}x)",
        RUNS * CALLS,
        upstream_us / native_us
    );

    let direct = fresh_run_ms(&native).await;
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let server = CodecellServer::new(native.clone());
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.expect("client connects");
    let mut through = Vec::new();
    for _ in 0..RUNS * 3 {
        let mut args = serde_json::Map::new();
        args.insert("code".into(), json!("print(1+1)"));
        let started = Instant::now();
        let result = client
            .call_tool(CallToolRequestParams::new("execute_code").with_arguments(args))
            .await
            .expect("call");
        assert_eq!(result.is_error, Some(false));
        through.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let through = median(through);
    println!(
        "execute_code of print(1+1), median of {}: engine alone {direct:.3} ms, through the MCP \
         server (in-process client) {through:.3} ms ({:.2}x)",
        RUNS * 3,
        through / direct
    );
}
