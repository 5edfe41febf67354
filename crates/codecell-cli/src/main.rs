//! The `codecell` command line.
//!
//! Exit status: 0 ok, 1 guest error or limit, 2 bad input (unreadable file, bad catalog),
//! 3 host failure (guest not built, engine error).

mod batch_cmd;
mod bench_cmd;
mod catalog_cmd;
mod dynamic_cmd;
mod failure;
mod fuzz_cmd;
mod input;
mod out;
mod precompile_cmd;
mod repl_cmd;
mod run_cmd;
mod serve_cmd;
mod store_args;
mod validate_cmd;

use clap::{Parser, Subcommand};
use failure::Failure;
use std::process::ExitCode;

/// Run untrusted Python tool code in a WebAssembly sandbox.
#[derive(Parser, Debug)]
#[command(name = "codecell", disable_version_flag = true)]
struct Cli {
    /// Print codecell's version and the guest interpreters' Python versions.
    #[arg(long = "version", short = 'V')]
    version: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a snippet (a file, or `-` for stdin) in a fresh guest.
    Run(run_cmd::RunArgs),
    /// Run JSON Lines of programs (`{"id", "code"}` …), one outcome line per program.
    Batch(batch_cmd::BatchArgs),
    /// Show what the guest and the model see of a tool catalog.
    #[command(subcommand)]
    Tools(catalog_cmd::CatalogCommand),
    /// Check dynamic-tool source against the policy (exit 0 with its imports, 1 with the violation).
    Validate(validate_cmd::ValidateArgs),
    /// Fuzz codecell itself (`fuzz diff`: native python3 against both guests).
    #[command(subcommand)]
    Fuzz(fuzz_cmd::FuzzCommand),
    /// Define, invoke and govern dynamic tools in a manifest store.
    #[command(subcommand)]
    Tool(dynamic_cmd::ToolCommand),
    /// Measure this machine: fresh runs, tool calls, compute beside native python3, memory.
    Bench(bench_cmd::BenchArgs),
    /// A session: cells that share their globals, from a prompt or `# %%`-separated stdin.
    Repl(repl_cmd::ReplArgs),
    /// Serve `execute_code` (and dynamic tools) as an MCP server on stdio or HTTP.
    Serve(serve_cmd::ServeArgs),
    /// Compile the guests for another OS (a target triple) into their cache, ahead of its first run.
    Precompile(precompile_cmd::PrecompileArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::host(format!("cannot start the async runtime: {e}")))
        .and_then(|rt| rt.block_on(dispatch(cli)));
    match result {
        Ok(code) => code,
        Err(failure) => {
            if !failure.message.is_empty() {
                out::stderr(&format!("codecell: {}\n", failure.message));
            }
            failure.exit_code()
        }
    }
}

async fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    if cli.version {
        return version().await;
    }
    match cli.command {
        Some(Command::Run(args)) => run_cmd::run(args).await,
        Some(Command::Batch(args)) => batch_cmd::run(args).await,
        Some(Command::Bench(args)) => bench_cmd::run(args).await,
        Some(Command::Tools(cmd)) => catalog_cmd::run(cmd).await,
        Some(Command::Serve(args)) => serve_cmd::run(args).await,
        Some(Command::Repl(args)) => repl_cmd::run(args).await,
        Some(Command::Validate(args)) => validate_cmd::run(args),
        Some(Command::Tool(cmd)) => dynamic_cmd::run(cmd).await,
        Some(Command::Fuzz(cmd)) => fuzz_cmd::run(cmd).await,
        Some(Command::Precompile(args)) => precompile_cmd::run(args).await,
        None => Err(Failure::input(
            "no command given; try `codecell --help`".to_string(),
        )),
    }
}

async fn version() -> Result<ExitCode, Failure> {
    out::line(&format!("codecell {}", env!("CARGO_PKG_VERSION")))?;
    for guest in codecell::ALL_GUESTS {
        let version = match codecell::Engine::builder().guest(guest).build() {
            Ok(engine) => engine.python_version().await,
            Err(e) => Err(e),
        };
        out::line(&match version {
            Ok(v) => format!("guest {guest}: Python {v}"),
            Err(e) => format!("guest {guest}: unavailable ({e})"),
        })?;
    }
    Ok(ExitCode::SUCCESS)
}
