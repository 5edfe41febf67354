//! The store flags (`--store`, `--session`, `--project`) shared by `codecell tool` and
//! `codecell run`, and opening the store they name.

use crate::failure::{BAD_INPUT, Failure, GUEST_FAILED, HOST_FAILURE};
use clap::Args;
use codecell::{
    Catalog, DynamicToolError, DynamicTools, Engine, GuestKind, RegistryOptions, RunError,
};
use std::path::{Path, PathBuf};

/// Where the store is and who is acting: required by every `tool` subcommand.
#[derive(Args, Debug)]
pub struct StoreArgs {
    /// Manifest store directory (created if missing).
    #[arg(long)]
    pub store: PathBuf,
    /// Root session id: session tools belong to it.
    #[arg(long)]
    pub session: String,
    /// Project id for project scope (default: the session id, as in the seed).
    #[arg(long)]
    pub project: Option<String>,
    /// A file holding the store key: manifests and events are signed with it (HMAC-SHA256),
    /// and anything unsigned or mis-signed is inert and reported.
    #[arg(long, env = "CODECELL_STORE_KEY_FILE")]
    pub store_key_file: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Guest interpreter that runs the tool code.
    #[arg(long, default_value = "cpython")]
    pub guest: GuestKind,
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
    /// The store key for `--store` (see `codecell tool --help`).
    #[arg(long, env = "CODECELL_STORE_KEY_FILE")]
    store_key_file: Option<PathBuf>,
}

impl DynamicStoreArgs {
    /// Opens the store the flags name, if they name one, with an engine for `guest`.
    pub fn open(&self, guest: GuestKind) -> Result<Option<DynamicTools>, Failure> {
        let (Some(store), Some(session)) = (&self.store, &self.session) else {
            return Ok(None);
        };
        let options = registry_options(
            store,
            session,
            self.project.as_deref(),
            self.store_key_file.as_deref(),
        )?;
        open(options, Some(guest)).map(Some)
    }
}

/// Loads a catalog file, starting its `"mcpServers"`; `store` answers `{"dynamic": name}`.
pub async fn load_catalog(path: &Path, store: Option<&DynamicTools>) -> Result<Catalog, Failure> {
    let resolver = store.map(|store| store.resolver());
    let resolver = resolver
        .as_ref()
        .map(|r| r as codecell::DynamicResolver<'_>);
    codecell_mcp::load_catalog(path, resolver)
        .await
        .map_err(|e| match e {
            codecell_mcp::UpstreamError::Start { .. } => Failure::host(e.to_string()),
            _ => Failure::input(e.to_string()),
        })
}

impl StoreArgs {
    /// Opens the store; the guest is loaded only when `with_engine` (commands that run code).
    pub fn open(&self, with_engine: bool) -> Result<DynamicTools, Failure> {
        let options = registry_options(
            &self.store,
            &self.session,
            self.project.as_deref(),
            self.store_key_file.as_deref(),
        )?;
        open(options, with_engine.then_some(self.guest))
    }
}

fn registry_options(
    store: &Path,
    session: &str,
    project: Option<&str>,
    key_file: Option<&Path>,
) -> Result<RegistryOptions, Failure> {
    let mut options = RegistryOptions::new(session, store);
    options.project_id = project.map(str::to_string);
    match key_file {
        Some(path) => options
            .with_store_key_file(path)
            .map_err(|e| Failure::input(e.to_string())),
        None => Ok(options),
    }
}

/// Opens the store, with an engine for `guest` when given.
fn open(options: RegistryOptions, guest: Option<GuestKind>) -> Result<DynamicTools, Failure> {
    let opened = match guest {
        Some(guest) => {
            // One or two runs per process: no instance is made ahead of time.
            let engine = Engine::builder()
                .guest(guest)
                .warm_instance(false)
                .build()
                .map_err(Failure::engine)?;
            DynamicTools::open(engine, options)
        }
        None => DynamicTools::open_offline(options),
    };
    opened.map_err(refusal)
}

/// A registry error as the CLI reports it. Host failures are the store's and the runner's own;
/// a missing session id is a bad flag; everything else is codecell refusing or the tool failing.
pub fn refusal(error: DynamicToolError) -> Failure {
    let code = match &error {
        DynamicToolError::MissingSessionId => BAD_INPUT,
        DynamicToolError::Store(_)
        | DynamicToolError::Run(RunError::Host(_))
        | DynamicToolError::SmokeRun(RunError::Host(_)) => HOST_FAILURE,
        _ => GUEST_FAILED,
    };
    Failure {
        code,
        kind: error.code(),
        message: crate::dynamic_cmd::report::explain(&error),
    }
}
