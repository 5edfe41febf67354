//! `codecell tool`: define, invoke and govern dynamic tools in a manifest store.
//!
//! Exit status: 0 ok; 1 codecell refused or the tool failed (policy, schema, smoke test, missing
//! approval, unknown tool, limit); 2 bad input (unreadable spec, invalid JSON, bad flags);
//! 3 host failure (store unwritable, guest not built). With `--json` every outcome, failures
//! included, is one JSON object on stdout with `"ok"`.

pub mod report;

use crate::failure::Failure;
use crate::input::read_text;
use crate::store_args::{StoreArgs, refusal};
use clap::{Subcommand, ValueEnum};
use codecell::{DynamicToolError, DynamicTools, Scope, canonical};
use serde_json::Value;
use std::process::ExitCode;

/// Largest spec file read; the registry bounds the source itself at 100,000 characters.
const MAX_SPEC_BYTES: u64 = 4 << 20;

/// Which shared scope a governance command acts on.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum ScopeArg {
    /// This project's versions.
    Project,
    /// Versions shared by every project.
    Global,
}

impl From<ScopeArg> for Scope {
    fn from(scope: ScopeArg) -> Scope {
        match scope {
            ScopeArg::Project => Scope::Project,
            ScopeArg::Global => Scope::Global,
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum ToolCommand {
    /// Validate a spec, smoke-test it in a fresh guest and store it as a session tool.
    Define {
        /// Spec file (JSON): name, description, input_schema, output_schema, implementation,
        /// optional smoke_args and ttl_s; `-` for stdin.
        spec: String,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Run a tool (session > project > global) in a fresh guest with both schemas checked.
    Invoke {
        /// Tool name.
        name: String,
        /// Arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List the tools this session resolves.
    List {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List project/global versions with their active/effective flags and audit events.
    Versions {
        /// Only this tool.
        name: Option<String>,
        /// Only this scope.
        #[arg(long)]
        scope: Option<ScopeArg>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Promote this session's tool to project or global scope (needs --approve).
    Promote {
        /// Tool name.
        name: String,
        /// Target scope.
        #[arg(long)]
        scope: ScopeArg,
        /// A human has reviewed the tool and approves the promotion.
        #[arg(long)]
        approve: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Activate an existing project/global version (needs --approve).
    Activate {
        /// Tool name.
        name: String,
        /// Scope of the version.
        #[arg(long)]
        scope: ScopeArg,
        /// The version's manifest id.
        #[arg(long)]
        manifest: String,
        /// A human approves the activation.
        #[arg(long)]
        approve: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Re-activate the version active before the current one (needs --approve).
    Rollback {
        /// Tool name.
        name: String,
        /// Scope to roll back.
        #[arg(long)]
        scope: ScopeArg,
        /// A human approves the rollback.
        #[arg(long)]
        approve: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
}

impl ToolCommand {
    fn store(&self) -> &StoreArgs {
        match self {
            ToolCommand::Define { store, .. }
            | ToolCommand::Invoke { store, .. }
            | ToolCommand::List { store }
            | ToolCommand::Versions { store, .. }
            | ToolCommand::Promote { store, .. }
            | ToolCommand::Activate { store, .. }
            | ToolCommand::Rollback { store, .. } => store,
        }
    }
}

pub async fn run(command: ToolCommand) -> Result<ExitCode, Failure> {
    let json = command.store().json;
    let mut load_errors = Vec::new();
    match execute(command, &mut load_errors).await {
        Ok(report) => {
            report.print(json, &load_errors)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            if json {
                report::print_refusal(failure.kind, &failure.message, &load_errors)?;
            }
            Err(failure)
        }
    }
}

async fn execute(
    command: ToolCommand,
    load_errors: &mut Vec<String>,
) -> Result<report::Report, Failure> {
    let runs_code = matches!(
        command,
        ToolCommand::Define { .. } | ToolCommand::Invoke { .. }
    );
    // Bad input is reported before the store or the guest is touched.
    let input = match &command {
        ToolCommand::Define { spec, .. } => {
            Some(parse_json(&read_text(spec, MAX_SPEC_BYTES)?, "the spec")?)
        }
        ToolCommand::Invoke { args, .. } => Some(parse_json(args, "--args")?),
        _ => None,
    };
    let tools = command.store().open(runs_code)?;
    let result = dispatch(command, input.unwrap_or(Value::Null), &tools).await;
    *load_errors = tools.load_errors();
    result.map_err(refusal)
}

async fn dispatch(
    command: ToolCommand,
    input: Value,
    tools: &DynamicTools,
) -> Result<report::Report, DynamicToolError> {
    let audit = |verb, m| report::governed(verb, &m, tools.last_audit_event());
    match command {
        ToolCommand::Define { .. } => tools.define(&input).await.map(|m| report::defined(&m)),
        ToolCommand::Invoke { name, .. } => {
            // Resolve once and run exactly that version, so the report names what ran.
            let manifest = tools.get(&name).ok_or(DynamicToolError::Unknown(name))?;
            let value = tools.invoke_manifest(&manifest, &input).await?;
            Ok(report::invoked(&manifest, value))
        }
        ToolCommand::List { .. } => Ok(report::listed(&tools.tools())),
        ToolCommand::Versions { name, scope, .. } => Ok(report::versions(
            &tools.versions(name.as_deref(), scope.map(Scope::from)),
        )),
        ToolCommand::Promote {
            name,
            scope,
            approve,
            ..
        } => tools
            .promote(&name, scope.into(), approve)
            .map(|m| audit("promoted", m)),
        ToolCommand::Activate {
            name,
            scope,
            manifest,
            approve,
            ..
        } => tools
            .activate(&name, scope.into(), &manifest, approve)
            .map(|m| audit("activated", m)),
        ToolCommand::Rollback {
            name,
            scope,
            approve,
            ..
        } => tools
            .rollback(&name, scope.into(), approve)
            .map(|m| audit("rolled back", m)),
    }
}

/// Parses JSON exactly (integers of any size are refused rather than rounded, so ids match
/// the seed's or the command fails saying why).
fn parse_json(text: &str, what: &str) -> Result<Value, Failure> {
    canonical::parse_exact(text)
        .map_err(|e| Failure::input(format!("{what} is not usable JSON: {e}")))
}
