//! `codecell run`: one snippet, one fresh guest, the outcome as text or JSON.

use crate::failure::{Failure, GUEST_FAILED};
use crate::input::read_text;
use crate::out;
use crate::store_args::{DynamicStoreArgs, load_catalog};
use clap::Args;
use codecell::{Catalog, CodeMode, DynamicTools, Engine, GuestKind, Limits, Metering, Outcome};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Largest snippet accepted, in bytes.
const MAX_SNIPPET_BYTES: u64 = 1 << 20;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The snippet file, or `-` to read it from stdin.
    file: String,
    #[command(flatten)]
    sandbox: SandboxArgs,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    json: bool,
    /// `--store DIR --session ID [--project ID]`: the catalog's `{"dynamic": name}` handlers.
    #[command(flatten)]
    dynamic: DynamicStoreArgs,
}

/// The flags of every command that runs code (`run`, `serve`, `batch`): the catalog, the guest
/// and the limits.
#[derive(Args, Debug)]
pub struct SandboxArgs {
    /// Tool catalog (JSON) behind ls/read/call_tool; its `mcpServers` start when it loads.
    #[arg(long)]
    pub tools: Option<PathBuf>,
    /// Guest interpreter (for `batch`: of the programs that name none).
    #[arg(long, default_value = "cpython")]
    pub guest: GuestKind,
    /// The limits (for `batch`: of the programs that set none of their own).
    #[command(flatten)]
    pub limits: LimitArgs,
}

impl SandboxArgs {
    /// Loads `--tools`, when given, starting its `mcpServers`; `store` answers its
    /// `{"dynamic": name}` handlers.
    pub async fn catalog(&self, store: Option<&DynamicTools>) -> Result<Option<Catalog>, Failure> {
        match &self.tools {
            Some(path) => Ok(Some(load_catalog(path, store).await?)),
            None => Ok(None),
        }
    }

    /// Code mode over `catalog` in a new engine for `--guest`, held to the limit flags (fuel
    /// metered when `--fuel` was given).
    pub fn code_mode(
        &self,
        catalog: Option<Catalog>,
        warm_instance: bool,
    ) -> Result<CodeMode, Failure> {
        self.code_mode_metered(catalog, warm_instance, self.limits.metering())
    }

    /// [`SandboxArgs::code_mode`] with the engine's metering chosen by the caller.
    pub fn code_mode_metered(
        &self,
        catalog: Option<Catalog>,
        warm_instance: bool,
        metering: Metering,
    ) -> Result<CodeMode, Failure> {
        let engine = Engine::builder()
            .guest(self.guest)
            .warm_instance(warm_instance)
            .metering(metering)
            .build()
            .map_err(Failure::engine)?;
        Ok(match catalog {
            Some(catalog) => CodeMode::new(engine, catalog),
            None => CodeMode::without_tools(engine),
        }
        .with_limits(self.limits.limits()))
    }
}

/// The limit flags; each replaces one field of [`Limits::default`]. `codecell batch` reads the
/// same names (snake_case, or as the flags are spelt) from a program's `"limits"` object.
#[derive(Args, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitArgs {
    /// Fuel (wasm instructions) for the run: an exact instruction budget. Giving it turns on fuel
    /// metering, which costs guest speed; without it a run is held to its deadline alone.
    #[arg(long)]
    fuel: Option<u64>,
    /// Memory cap in MiB.
    #[arg(long)]
    #[serde(alias = "memory-mb")]
    memory_mb: Option<usize>,
    /// Wall-clock deadline in milliseconds.
    #[arg(long)]
    #[serde(alias = "timeout-ms")]
    timeout_ms: Option<u64>,
    /// Output cap in bytes.
    #[arg(long)]
    #[serde(alias = "max-output-bytes")]
    max_output_bytes: Option<usize>,
    /// Maximum number of tool calls.
    #[arg(long)]
    #[serde(alias = "max-tool-calls")]
    max_tool_calls: Option<u32>,
    /// Make the run reproducible: seeded randomness and virtual clocks (see the README).
    #[arg(long)]
    #[serde(skip)]
    seed: Option<u64>,
}

impl LimitArgs {
    /// The metering these flags need: fuel when a fuel budget was given, else the default.
    pub fn metering(&self) -> Metering {
        if self.fuel.is_some() {
            Metering::Fuel
        } else {
            Metering::default()
        }
    }

    /// [`Limits::default`] with the flags given applied.
    pub fn limits(&self) -> Limits {
        self.apply_to(Limits::default())
    }

    /// `limits` with the flags given applied.
    pub fn apply_to(&self, mut limits: Limits) -> Limits {
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
        if self.seed.is_some() {
            limits.seed = self.seed;
        }
        limits
    }
}

pub async fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    let code = read_text(&args.file, MAX_SNIPPET_BYTES)?;
    let store = args.dynamic.open(args.sandbox.guest)?;
    let catalog = args.sandbox.catalog(store.as_ref()).await?;
    // One run per process: an instance made ahead for a next run would be wasted work.
    let code_mode = args.sandbox.code_mode(catalog, false)?;
    let outcome = code_mode
        .execute_code(&code)
        .await
        .map_err(Failure::codecell)?;
    if args.json {
        let text = serde_json::to_string(&outcome).map_err(|e| Failure::host(e.to_string()))?;
        out::line(&text)?;
    } else {
        print_human(&outcome)?;
    }
    Ok(if outcome.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(GUEST_FAILED)
    })
}

/// Prints an outcome for people: the guest's output, then one `[codecell]` status line.
pub fn print_human(outcome: &Outcome) -> Result<(), Failure> {
    out::stdout(&out::guest_stdout(&outcome.stdout))?;
    if !outcome.stderr.is_empty() {
        out::stderr(&out::guest_stderr(&outcome.stderr));
    }
    if let Some(error) = outcome.error().filter(|e| !e.traceback.is_empty()) {
        out::stderr(&out::guest_stderr(&error.traceback));
    }
    let detail = match (outcome.limit(), outcome.error()) {
        (Some(limit), Some(e)) => format!(" ({}: {})", limit.as_str(), e.message),
        (None, Some(e)) => format!(" ({}: {})", e.kind, e.message),
        _ => String::new(),
    };
    // Without fuel metering (the default; `--fuel` turns it on) no fuel is counted: say nothing
    // rather than "fuel 0".
    let fuel = match outcome.fuel_used {
        0 => String::new(),
        used => format!(", fuel {used}"),
    };
    out::stderr(&format!(
        "[codecell] {}{}{} in {:.1} ms{fuel}, {} tool call(s)\n",
        outcome.status().as_str(),
        out::guest_stderr(&detail),
        if outcome.truncated {
            ", output truncated"
        } else {
            ""
        },
        outcome.duration_ms,
        outcome.tool_calls.len()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::LimitArgs;

    #[test]
    fn each_flag_replaces_one_default_and_memory_saturates() {
        let args = LimitArgs {
            fuel: Some(7),
            memory_mb: Some(usize::MAX),
            ..LimitArgs::default()
        };
        let limits = args.limits();
        assert_eq!(limits.fuel, 7);
        assert_eq!(limits.memory_bytes, usize::MAX);
        assert_eq!(limits.deadline, codecell::Limits::default().deadline);
    }
}
