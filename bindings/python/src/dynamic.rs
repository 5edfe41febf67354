//! `NativeDynamicTools`: a dynamic-tool store for one session, its runs off the GIL.

use crate::runtime::runtime;
use crate::{engines, errors, limits};
use codecell::{DynamicTools, Handler, Manifest, RegistryOptions, Scope};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// Model-authored tools in a store, for one session (and project).
#[pyclass(module = "codecell._native", frozen)]
pub(crate) struct NativeDynamicTools {
    tools: DynamicTools,
}

fn json(text: &str, what: &str) -> PyResult<Value> {
    serde_json::from_str(text)
        .map_err(|e| PyValueError::new_err(format!("{what} is not JSON: {e}")))
}

fn scope(text: &str) -> PyResult<Scope> {
    Scope::parse(text).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown scope `{text}` (available: session, project, global)"
        ))
    })
}

fn record(manifest: &Manifest) -> String {
    manifest.record().to_string()
}

#[pymethods]
impl NativeDynamicTools {
    /// Opens (or creates) the store at `store` for `session`.
    #[new]
    #[pyo3(signature = (guest, wasm, cache_dir, store, session, project=None, limits=None, store_key_file=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        guest: &str,
        wasm: PathBuf,
        cache_dir: PathBuf,
        store: PathBuf,
        session: String,
        project: Option<String>,
        limits: Option<&Bound<'_, PyAny>>,
        store_key_file: Option<PathBuf>,
    ) -> PyResult<Self> {
        let limits = limits::from_py(limits)?;
        let engine = engines::engine(py, guest, wasm, cache_dir)?;
        let mut options = RegistryOptions::new(session, store);
        options.project_id = project;
        if let Some(key) = store_key_file {
            options = options
                .with_store_key_file(&key)
                .map_err(|e| errors::dynamic(e.into()))?;
        }
        let tools = py
            .detach(|| DynamicTools::open_with_limits(engine, options, limits))
            .map_err(errors::dynamic)?;
        Ok(NativeDynamicTools { tools })
    }

    /// Validates, smoke-tests and stores a tool spec (JSON); returns its manifest record.
    fn define(&self, py: Python<'_>, spec: &str) -> PyResult<String> {
        let spec = json(spec, "the spec")?;
        let tools = self.tools.clone();
        py.detach(move || runtime().block_on(async move { tools.define(&spec).await }))
            .map(|m| record(&m))
            .map_err(errors::dynamic)
    }

    /// Runs the effective version of `name` on `args` (JSON); returns the result as JSON.
    fn invoke(&self, py: Python<'_>, name: String, args: &str) -> PyResult<String> {
        let args = json(args, "the arguments")?;
        let tools = self.tools.clone();
        py.detach(move || runtime().block_on(async move { tools.invoke(&name, &args).await }))
            .map(|v| v.to_string())
            .map_err(errors::dynamic)
    }

    /// The manifest records of every tool the session can see, as a JSON list.
    fn list(&self) -> String {
        Value::Array(self.tools.tools().iter().map(Manifest::record).collect()).to_string()
    }

    /// The effective version of `name`, if any.
    fn get(&self, name: &str) -> Option<String> {
        self.tools.get(name).map(|m| record(&m))
    }

    /// Project and global versions (of one name, in one scope) and the audit events, as JSON.
    #[pyo3(signature = (name=None, scope_name=None))]
    fn versions(&self, name: Option<&str>, scope_name: Option<&str>) -> PyResult<String> {
        let scope = scope_name.map(scope).transpose()?;
        serde_json::to_string(&self.tools.versions(name, scope))
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Promotes the session's `name` to `scope` (needs `approve`).
    fn promote(&self, name: &str, scope_name: &str, approve: bool) -> PyResult<String> {
        self.tools
            .promote(name, scope(scope_name)?, approve)
            .map(|m| record(&m))
            .map_err(errors::dynamic)
    }

    /// Activates version `manifest_id` of `name` in `scope` (needs `approve`).
    fn activate(
        &self,
        name: &str,
        scope_name: &str,
        manifest_id: &str,
        approve: bool,
    ) -> PyResult<String> {
        self.tools
            .activate(name, scope(scope_name)?, manifest_id, approve)
            .map(|m| record(&m))
            .map_err(errors::dynamic)
    }

    /// Re-activates the previous version of `name` in `scope` (needs `approve`).
    fn rollback(&self, name: &str, scope_name: &str, approve: bool) -> PyResult<String> {
        self.tools
            .rollback(name, scope(scope_name)?, approve)
            .map(|m| record(&m))
            .map_err(errors::dynamic)
    }

    /// What the store could not load (unsigned, corrupt or foreign files).
    fn load_errors(&self) -> Vec<String> {
        self.tools.load_errors()
    }
}

impl NativeDynamicTools {
    /// A code-mode handler bound to the version `name` resolves to now.
    pub(crate) fn pinned_handler(&self, name: &str) -> PyResult<Arc<dyn Handler>> {
        let manifest = self.tools.get(name).ok_or_else(|| {
            errors::dynamic(codecell::DynamicToolError::Unknown(name.to_string()))
        })?;
        Ok(self.tools.pinned_handler(manifest))
    }
}
