//! `DynamicTools`: model-authored tools (the seed's `DynamicToolRegistry`) wired to the wasm
//! engine. Policy, manifests and governance live in `codecell-manifest`'s [`Registry`], whose
//! methods (`define`, `invoke`, `tools`, `versions`, `promote`, `activate`, `rollback`, …) a
//! `DynamicTools` offers as its own; what this type adds is the runner (a fresh guest per run)
//! and the bridge that makes dynamic tools code-mode catalog handlers.

use crate::wasm_runner::WasmToolRunner;
use codecell_catalog::{Catalog, CatalogError, Handler, HandlerError, HandlerFuture};
use codecell_engine::{Engine, Limits};
use codecell_manifest::{
    DynamicToolError, Manifest, Registry, RegistryOptions, RunError, RunFuture, ToolRunner,
};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// Dynamic tools over one store and session: define, invoke, govern (the [`Registry`]'s methods,
/// through `Deref`), and hand to code mode. Cheap to clone; clones share the registry.
#[derive(Clone)]
pub struct DynamicTools {
    registry: Arc<Registry>,
}

impl std::fmt::Debug for DynamicTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicTools")
            .field("session_id", &self.registry.session_id())
            .field("project_id", &self.registry.project_id())
            .finish()
    }
}

/// The runner of a store opened without an engine: it refuses every run.
struct NoEngine;

impl ToolRunner for NoEngine {
    fn run<'a>(&'a self, _: &'a Manifest, _: &'a Value) -> RunFuture<'a> {
        Box::pin(std::future::ready(Err(RunError::Host(
            "this store was opened without an engine, so it cannot run tools".to_string(),
        ))))
    }
}

impl DynamicTools {
    /// Opens the store for a session; every run gets a fresh guest of `engine` with
    /// [`Limits::default`] (10 s deadline).
    pub fn open(engine: Engine, options: RegistryOptions) -> Result<Self, DynamicToolError> {
        Self::open_with_limits(engine, options, Limits::default())
    }

    /// Opens the store for a session; every run is held to `limits`.
    pub fn open_with_limits(
        engine: Engine,
        options: RegistryOptions,
        limits: Limits,
    ) -> Result<Self, DynamicToolError> {
        let runner = WasmToolRunner::new(engine).with_limits(limits);
        Self::open_with_runner(options, Arc::new(runner))
    }

    /// Opens the store with any runner (tests, or a host with its own isolation).
    pub fn open_with_runner(
        options: RegistryOptions,
        runner: Arc<dyn ToolRunner>,
    ) -> Result<Self, DynamicToolError> {
        Ok(DynamicTools {
            registry: Arc::new(Registry::open(options, runner)?),
        })
    }

    /// Opens the store without loading the guest: listing and governance (`tools`, `versions`,
    /// `promote`, `activate`, `rollback`) work; `define` and `invoke` fail with a host error.
    pub fn open_offline(options: RegistryOptions) -> Result<Self, DynamicToolError> {
        Self::open_with_runner(options, Arc::new(NoEngine))
    }

    /// A catalog handler that resolves `name` at every call, so it always runs the version
    /// that is effective now.
    pub fn handler(&self, name: &str) -> Arc<dyn Handler> {
        Arc::new(DynamicHandler {
            registry: self.registry.clone(),
            target: Target::Name(name.to_string()),
        })
    }

    /// A catalog handler bound to exactly this version (the seed's `ProxyDynamicTool`).
    pub fn pinned_handler(&self, manifest: Manifest) -> Arc<dyn Handler> {
        Arc::new(DynamicHandler {
            registry: self.registry.clone(),
            target: Target::Pinned(Box::new(manifest)),
        })
    }

    /// A resolver for catalog files' `{"dynamic": name}` handlers. A catalog is immutable and
    /// its stubs describe one version, so each handler is pinned to the version `name`
    /// resolves to when the catalog is built; unknown names are refused then, not at call time.
    pub fn resolver(&self) -> impl Fn(&str) -> Option<Arc<dyn Handler>> + '_ {
        move |name: &str| self.get(name).map(|m| self.pinned_handler(m))
    }

    /// Loads a catalog file whose `{"dynamic": name}` handlers are this store's tools.
    pub fn load_catalog(&self, path: &Path) -> Result<Catalog, CatalogError> {
        Catalog::from_file_with(path, &self.resolver())
    }
}

impl std::ops::Deref for DynamicTools {
    type Target = Registry;

    fn deref(&self) -> &Registry {
        &self.registry
    }
}

/// Which version a handler runs.
enum Target {
    /// Whatever the name resolves to at call time.
    Name(String),
    /// Exactly this version.
    Pinned(Box<Manifest>),
}

/// A dynamic tool as a code-mode handler; failures become the guest's `ToolError` text.
struct DynamicHandler {
    registry: Arc<Registry>,
    target: Target,
}

impl Handler for DynamicHandler {
    fn call<'a>(&'a self, args: Value) -> HandlerFuture<'a> {
        Box::pin(async move {
            let result = match &self.target {
                Target::Name(name) => self.registry.invoke(name, &args).await,
                Target::Pinned(manifest) => self.registry.invoke_manifest(manifest, &args).await,
            };
            result.map_err(|e| HandlerError::new(e.to_string()))
        })
    }
}
