//! `codecell run`: one snippet, one fresh guest, the outcome as text or JSON.

use crate::exit::{Failure, GUEST_FAILED};
use clap::Args;
use codecell::{Engine, GuestKind, Limits, Outcome, Status};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Largest snippet accepted, in bytes.
const MAX_SNIPPET_BYTES: u64 = 1 << 20;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The snippet file, or `-` to read it from stdin.
    file: String,
    /// Tool catalog (JSON) behind ls/read/call_tool.
    #[arg(long)]
    tools: Option<PathBuf>,
    /// Guest interpreter.
    #[arg(long, default_value = "cpython")]
    guest: GuestKind,
    /// Fuel (wasm instructions) for the run.
    #[arg(long)]
    fuel: Option<u64>,
    /// Memory cap in MiB.
    #[arg(long)]
    memory_mb: Option<usize>,
    /// Wall-clock deadline in milliseconds.
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// Output cap in bytes.
    #[arg(long)]
    max_output_bytes: Option<usize>,
    /// Maximum number of tool calls.
    #[arg(long)]
    max_tool_calls: Option<u32>,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    json: bool,
    /// `--store DIR --session ID [--project ID]`: the catalog's `{"dynamic": name}` handlers.
    #[command(flatten)]
    dynamic: crate::tool_cmd::DynamicStoreArgs,
}

impl RunArgs {
    fn limits(&self) -> Limits {
        let mut limits = Limits::default();
        if let Some(v) = self.fuel {
            limits.fuel = v;
        }
        if let Some(v) = self.memory_mb {
            limits.memory_bytes = v.saturating_mul(1 << 20);
        }
        if let Some(v) = self.timeout_ms {
            limits.deadline = Duration::from_millis(v);
        }
        if let Some(v) = self.max_output_bytes {
            limits.max_output_bytes = v;
        }
        if let Some(v) = self.max_tool_calls {
            limits.max_tool_calls = v;
        }
        limits
    }
}

fn read_snippet(file: &str) -> Result<String, Failure> {
    let mut bytes = Vec::new();
    let result = if file == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_SNIPPET_BYTES + 1)
            .read_to_end(&mut bytes)
    } else {
        std::fs::File::open(file)
            .and_then(|f| f.take(MAX_SNIPPET_BYTES + 1).read_to_end(&mut bytes))
    };
    result.map_err(|e| Failure::input(format!("cannot read {file}: {e}")))?;
    if bytes.len() as u64 > MAX_SNIPPET_BYTES {
        return Err(Failure::input(format!(
            "{file} is larger than {MAX_SNIPPET_BYTES} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|_| Failure::input(format!("{file} is not UTF-8 text")))
}

pub async fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    let code = read_snippet(&args.file)?;
    let catalog = match &args.tools {
        Some(path) => Some(Arc::new(args.dynamic.load_catalog(path, args.guest)?)),
        None => None,
    };
    // One run per process: an instance made ahead for a next run would be wasted work.
    let engine = Engine::builder()
        .guest(args.guest)
        .warm_instance(false)
        .build()
        .map_err(|e| Failure::host(e.to_string()))?;
    let outcome = engine
        .run_snippet(&code, catalog, &args.limits())
        .await
        .map_err(|e| Failure::host(e.to_string()))?;
    if args.json {
        let text = serde_json::to_string(&outcome).map_err(|e| Failure::host(e.to_string()))?;
        println!("{text}");
    } else {
        print_human(&outcome);
    }
    Ok(match outcome.status {
        Status::Ok => ExitCode::SUCCESS,
        Status::Error | Status::Limit => ExitCode::from(GUEST_FAILED),
    })
}

fn print_human(outcome: &Outcome) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(outcome.stdout.as_bytes());
    let _ = out.flush();
    if !outcome.stderr.is_empty() {
        eprint!("{}", outcome.stderr);
    }
    if let Some(error) = outcome.error.as_ref().filter(|e| !e.traceback.is_empty()) {
        eprint!("{}", error.traceback);
    }
    let detail = match (&outcome.limit, &outcome.error) {
        (Some(limit), Some(e)) => format!(" ({}: {})", limit.as_str(), e.message),
        (None, Some(e)) => format!(" ({}: {})", e.kind, e.message),
        _ => String::new(),
    };
    let status = match outcome.status {
        Status::Ok => "ok",
        Status::Error => "error",
        Status::Limit => "limit",
    };
    eprintln!(
        "[codecell] {status}{detail}{} in {:.1} ms, fuel {}, {} tool call(s)",
        if outcome.truncated {
            ", output truncated"
        } else {
            ""
        },
        outcome.duration_ms,
        outcome.fuel_used,
        outcome.tool_calls.len()
    );
}
