//! `NativeCodeMode`: code mode over Python tools, run sync (GIL released) or async (resolved
//! on the caller's event loop through `call_soon_threadsafe`, behind the shutdown gate).

use crate::dynamic::NativeDynamicTools;
use crate::py_tool::{PyToolHandler, RUN_LOOP};
use crate::runtime::runtime;
use crate::session::{NativeSession, journal, session_limits};
use crate::{engines, errors, gate, limits};
use codecell::{Catalog, CodeMode, Error, Handler, Outcome, ToolSpec};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;

/// One tool as the Python side hands it over: name, description, input and output schema as
/// JSON text, and either a Python dispatcher or the dynamic-tool store serving it.
type ToolRow<'py> = (
    String,
    String,
    String,
    Option<String>,
    Option<Py<PyAny>>,
    Option<PyRef<'py, NativeDynamicTools>>,
);

/// A category: name, description, tools.
type CategoryRow<'py> = (String, String, Vec<ToolRow<'py>>);

/// Code mode over one catalog; every run gets a fresh guest.
#[pyclass(module = "codecell._native", frozen)]
pub(crate) struct NativeCodeMode {
    mode: CodeMode,
}

fn schema(text: &str, what: &str, tool: &str) -> PyResult<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|e| PyValueError::new_err(format!("tool `{tool}`: {what} is not JSON: {e}")))
}

fn catalog(categories: Vec<CategoryRow<'_>>) -> PyResult<Catalog> {
    let mut builder = Catalog::builder();
    for (name, description, _) in &categories {
        builder = builder.category(name, description);
    }
    for (category, _, tools) in categories {
        for (name, description, input, output, dispatch, dynamic) in tools {
            let mut spec = ToolSpec::new(&name, description, schema(&input, "inputSchema", &name)?);
            if let Some(output) = output {
                spec = spec.with_output_schema(schema(&output, "outputSchema", &name)?);
            }
            let handler: Arc<dyn Handler> = match (dispatch, dynamic) {
                (Some(dispatch), None) => Arc::new(PyToolHandler::new(dispatch)),
                (None, Some(store)) => store.pinned_handler(&name)?,
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "tool `{name}` needs exactly one of a Python function and a dynamic tool"
                    )));
                }
            };
            builder = builder.tool(&category, spec, handler);
        }
    }
    builder
        .build()
        .map_err(|e| errors::to_py(Error::Catalog(e)))
}

/// The outcome as its JSON contract and as the text a model reads back.
pub(crate) fn texts(outcome: &Outcome) -> (String, String) {
    let json = serde_json::to_string(outcome).unwrap_or_else(|e| {
        format!(r#"{{"status":"error","stdout":"","stderr":"","truncated":false,"error":{{"type":"HostError","message":"cannot encode the outcome: {e}","traceback":""}},"limit":null,"fuel_used":0,"duration_ms":0,"tool_calls":[]}}"#)
    });
    (json, CodeMode::render_for_model(outcome))
}

#[pymethods]
impl NativeCodeMode {
    /// Loads (or reuses) the engine and builds the catalog; `categories` may be empty.
    #[new]
    #[pyo3(signature = (guest, wasm, cache_dir, categories, limits=None))]
    fn new(
        py: Python<'_>,
        guest: &str,
        wasm: PathBuf,
        cache_dir: PathBuf,
        categories: Vec<CategoryRow<'_>>,
        limits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let limits = limits::from_py(limits)?;
        let engine = engines::engine(py, guest, wasm, cache_dir)?;
        let mode = if categories.is_empty() {
            CodeMode::without_tools(engine)
        } else {
            CodeMode::new(engine, catalog(categories)?)
        };
        Ok(NativeCodeMode {
            mode: mode.with_limits(limits),
        })
    }

    /// Runs `code` with the GIL released; returns (outcome JSON, rendered text).
    fn execute(&self, py: Python<'_>, code: String) -> PyResult<(String, String)> {
        let mode = self.mode.clone();
        let outcome = py.detach(move || {
            runtime().block_on(RUN_LOOP.scope(None, async move { mode.execute_code(&code).await }))
        });
        outcome.map(|o| texts(&o)).map_err(errors::to_py)
    }

    /// Starts `code` on the runtime and returns at once; when it ends, calls
    /// `loop.call_soon_threadsafe(deliver, future, ok, value)` unless the interpreter is
    /// shutting down. Async tools of this run execute on `loop`.
    fn start(
        &self,
        code: String,
        event_loop: Py<PyAny>,
        future: Py<PyAny>,
        deliver: Py<PyAny>,
    ) -> RunHandle {
        let mode = self.mode.clone();
        let event_loop = Arc::new(event_loop);
        let task = runtime().spawn(RUN_LOOP.scope(Some(event_loop.clone()), async move {
            let result = mode.execute_code(&code).await;
            gate::with_python(move |py| {
                let (ok, value) = match result {
                    Ok(outcome) => match texts(&outcome).into_pyobject(py) {
                        Ok(v) => (true, v.into_any().unbind()),
                        Err(e) => (false, e.into_value(py).into_any()),
                    },
                    Err(e) => (false, errors::to_py(e).into_value(py).into_any()),
                };
                // A closed loop refuses the callback: its caller is gone, nobody waits.
                let _ = event_loop.call_method1(
                    py,
                    "call_soon_threadsafe",
                    (deliver, future, ok, value),
                );
            });
        }));
        RunHandle {
            abort: task.abort_handle(),
        }
    }

    /// A session over this code mode's catalog and limits (see `codecell::SessionLimits`).
    #[pyo3(signature = (max_turns=None, idle_ttl_s=None, max_total_fuel=None, restart_on_trap=false))]
    fn session(
        &self,
        py: Python<'_>,
        max_turns: Option<u32>,
        idle_ttl_s: Option<f64>,
        max_total_fuel: Option<u64>,
        restart_on_trap: bool,
    ) -> PyResult<NativeSession> {
        let limits = session_limits(max_turns, idle_ttl_s, max_total_fuel, restart_on_trap)?;
        let mode = self.mode.clone();
        let session = py.detach(move || {
            runtime().block_on(RUN_LOOP.scope(None, async move { mode.session(limits).await }))
        });
        session.map(NativeSession::new).map_err(errors::to_py)
    }

    /// A session restored from a journal's JSON text (`NativeSession::save`).
    #[pyo3(signature = (journal_json, max_turns=None, idle_ttl_s=None, max_total_fuel=None, restart_on_trap=false))]
    fn restore_session(
        &self,
        py: Python<'_>,
        journal_json: &str,
        max_turns: Option<u32>,
        idle_ttl_s: Option<f64>,
        max_total_fuel: Option<u64>,
        restart_on_trap: bool,
    ) -> PyResult<NativeSession> {
        let limits = session_limits(max_turns, idle_ttl_s, max_total_fuel, restart_on_trap)?;
        let journal = journal(journal_json)?;
        let mode = self.mode.clone();
        let session = py.detach(move || {
            runtime().block_on(RUN_LOOP.scope(None, async move {
                mode.restore_session(limits, journal).await
            }))
        });
        session.map(NativeSession::new).map_err(errors::to_py)
    }

    /// The system-prompt section that teaches a model the tree and `call_tool`.
    fn system_prompt(&self) -> String {
        self.mode.system_prompt()
    }

    /// The `execute_code` tool definition as JSON (MCP field names).
    fn execute_code_tool(&self) -> PyResult<String> {
        serde_json::to_string(&self.mode.execute_code_tool())
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// `ls(path)` of the tree the guest sees.
    fn ls(&self, path: &str) -> PyResult<Vec<String>> {
        let catalog = self.catalog()?;
        catalog
            .ls(path)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// `read(path)` of the tree the guest sees.
    fn read(&self, path: &str) -> PyResult<String> {
        let catalog = self.catalog()?;
        catalog
            .read(path)
            .map(|text| text.to_string())
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }
}

impl NativeCodeMode {
    fn catalog(&self) -> PyResult<&Catalog> {
        self.mode
            .catalog()
            .ok_or_else(|| PyValueError::new_err("this CodeMode has no tools"))
    }
}

/// A run started by [`NativeCodeMode::start`].
#[pyclass(module = "codecell._native", frozen)]
pub(crate) struct RunHandle {
    abort: tokio::task::AbortHandle,
}

#[pymethods]
impl RunHandle {
    /// Stops the run (its guest is dropped at its next yield); its future is never resolved.
    fn cancel(&self) {
        self.abort.abort();
    }

    /// Whether the run has ended (finished or cancelled).
    fn done(&self) -> bool {
        self.abort.is_finished()
    }
}
