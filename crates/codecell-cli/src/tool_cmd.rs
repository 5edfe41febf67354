//! `codecell tool`: define, invoke and govern dynamic tools in a manifest store.
//!
//! Exit status: 0 ok; 1 codecell refused or the tool failed (policy, schema, smoke test, missing
//! approval, unknown tool, limit); 2 bad input (unreadable spec, invalid JSON, bad flags);
//! 3 host failure (store unwritable, guest not built). With `--json` every outcome, failures
//! included, is one JSON object on stdout with `"ok"`.

mod output;

use crate::exit::{BAD_INPUT, Failure, GUEST_FAILED, HOST_FAILURE};
use clap::{Args, Subcommand, ValueEnum};
use codecell::manifest::canonical;
use codecell::{
    Catalog, DynamicToolError, DynamicTools, Engine, GuestKind, RegistryOptions, RunError, Scope,
};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Largest spec file read; the registry bounds the source itself at 100,000 characters.
const MAX_SPEC_BYTES: u64 = 4 << 20;

/// Where the store is and who is acting: required by every `tool` subcommand.
#[derive(Args, Debug)]
pub struct StoreArgs {
    /// Manifest store directory (created if missing).
    #[arg(long)]
    store: PathBuf,
    /// Root session id: session tools belong to it.
    #[arg(long)]
    session: String,
    /// Project id for project scope (default: the session id, as in the seed).
    #[arg(long)]
    project: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Guest interpreter that runs the tool code.
    #[arg(long, default_value = "cpython")]
    guest: GuestKind,
}

/// The same store flags, optional: lets `codecell run --tools` resolve `{"dynamic": name}`.
#[derive(Args, Debug)]
pub struct DynamicStoreArgs {
    /// Manifest store for the catalog's `{"dynamic": name}` handlers.
    #[arg(long, requires = "session")]
    store: Option<PathBuf>,
    /// Root session id for `--store`.
    #[arg(long, requires = "store")]
    session: Option<String>,
    /// Project id for `--store` (default: the session id).
    #[arg(long, requires = "store")]
    project: Option<String>,
}

impl DynamicStoreArgs {
    /// Loads a catalog file; with `--store`, its dynamic handlers are that store's tools, run
    /// in `guest` (the same guest as the snippet).
    pub fn load_catalog(&self, path: &Path, guest: GuestKind) -> Result<Catalog, Failure> {
        let (Some(store), Some(session)) = (&self.store, &self.session) else {
            return Catalog::from_file(path).map_err(|e| Failure::input(e.to_string()));
        };
        let args = StoreArgs {
            store: store.clone(),
            session: session.clone(),
            project: self.project.clone(),
            json: false,
            guest,
        };
        let tools = open(&args, true).map_err(|r| Failure {
            code: ExitCode::from(r.code),
            message: r.message,
        })?;
        tools
            .load_catalog(path)
            .map_err(|e| Failure::input(e.to_string()))
    }
}

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

/// Why a command produced no report: its exit code, a stable kind and a message.
pub(crate) struct Refusal {
    code: u8,
    kind: &'static str,
    message: String,
}

impl Refusal {
    fn input(message: String) -> Self {
        Refusal {
            code: BAD_INPUT,
            kind: "bad_input",
            message,
        }
    }

    fn host(message: String) -> Self {
        Refusal {
            code: HOST_FAILURE,
            kind: "host_failure",
            message,
        }
    }
}

impl From<DynamicToolError> for Refusal {
    fn from(error: DynamicToolError) -> Self {
        Refusal {
            code: error_code(&error),
            kind: output::kind(&error),
            message: output::explain(&error),
        }
    }
}

pub async fn run(command: ToolCommand) -> Result<ExitCode, Failure> {
    let json = command.store().json;
    let mut load_errors = Vec::new();
    match execute(command, &mut load_errors).await {
        Ok(report) => {
            report.print(json, &load_errors);
            Ok(ExitCode::SUCCESS)
        }
        Err(refusal) => {
            if json {
                output::print_refusal(refusal.kind, &refusal.message, &load_errors);
            }
            Err(Failure {
                code: ExitCode::from(refusal.code),
                message: refusal.message,
            })
        }
    }
}

async fn execute(
    command: ToolCommand,
    load_errors: &mut Vec<String>,
) -> Result<output::Report, Refusal> {
    let runs_code = matches!(
        command,
        ToolCommand::Define { .. } | ToolCommand::Invoke { .. }
    );
    // Bad input is reported before the store or the guest is touched.
    let input = match &command {
        ToolCommand::Define { spec, .. } => Some(parse_json(&read_spec(spec)?, "the spec")?),
        ToolCommand::Invoke { args, .. } => Some(parse_json(args, "--args")?),
        _ => None,
    };
    let tools = open(command.store(), runs_code)?;
    let result = dispatch(command, input.unwrap_or(Value::Null), &tools).await;
    *load_errors = tools.load_errors();
    result.map_err(Refusal::from)
}

async fn dispatch(
    command: ToolCommand,
    input: Value,
    tools: &DynamicTools,
) -> Result<output::Report, DynamicToolError> {
    let audit = |verb, m| output::governed(verb, &m, tools.last_audit_event());
    match command {
        ToolCommand::Define { .. } => tools.define(&input).await.map(|m| output::defined(&m)),
        ToolCommand::Invoke { name, .. } => {
            // Resolve once and run exactly that version, so the report names what ran.
            let manifest = tools.get(&name).ok_or(DynamicToolError::Unknown(name))?;
            let value = tools.invoke_manifest(&manifest, &input).await?;
            Ok(output::invoked(&manifest, value))
        }
        ToolCommand::List { .. } => Ok(output::listed(&tools.tools())),
        ToolCommand::Versions { name, scope, .. } => Ok(output::versions(
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

fn registry_options(store: &Path, session: &str, project: Option<&str>) -> RegistryOptions {
    let mut options = RegistryOptions::new(session, store);
    options.project_id = project.map(str::to_string);
    options
}

/// Opens the store; the guest is loaded only by commands that run tool code.
fn open(args: &StoreArgs, with_engine: bool) -> Result<DynamicTools, Refusal> {
    let options = registry_options(&args.store, &args.session, args.project.as_deref());
    let opened = if with_engine {
        // One or two runs per process: no instance is made ahead of time.
        let engine = Engine::builder()
            .guest(args.guest)
            .warm_instance(false)
            .build()
            .map_err(|e| Refusal::host(e.to_string()))?;
        DynamicTools::open(engine, options)
    } else {
        DynamicTools::open_offline(options)
    };
    opened.map_err(Refusal::from)
}

/// Host failures are the store's and the runner's own; a missing session id is a bad flag;
/// everything else is codecell refusing or the tool failing.
fn error_code(error: &DynamicToolError) -> u8 {
    match error {
        DynamicToolError::MissingSessionId => BAD_INPUT,
        DynamicToolError::Store(_)
        | DynamicToolError::Run(RunError::Host(_))
        | DynamicToolError::SmokeRun(RunError::Host(_)) => HOST_FAILURE,
        _ => GUEST_FAILED,
    }
}

fn read_spec(file: &str) -> Result<String, Refusal> {
    let mut bytes = Vec::new();
    let result = if file == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_SPEC_BYTES + 1)
            .read_to_end(&mut bytes)
    } else {
        std::fs::File::open(file).and_then(|f| f.take(MAX_SPEC_BYTES + 1).read_to_end(&mut bytes))
    };
    result.map_err(|e| Refusal::input(format!("cannot read {file}: {e}")))?;
    if bytes.len() as u64 > MAX_SPEC_BYTES {
        return Err(Refusal::input(format!(
            "{file} is larger than {MAX_SPEC_BYTES} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|_| Refusal::input(format!("{file} is not UTF-8 text")))
}

/// Parses JSON exactly (integers of any size are refused rather than rounded, so ids match
/// the seed's or the command fails saying why).
fn parse_json(text: &str, what: &str) -> Result<Value, Refusal> {
    canonical::parse_exact(text)
        .map_err(|e| Refusal::input(format!("{what} is not usable JSON: {e}")))
}
