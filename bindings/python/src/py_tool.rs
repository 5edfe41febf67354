//! Host tools written in Python: the catalog handler that calls back into Python.
//!
//! A call runs the tool's Python dispatcher on tokio's blocking pool, attached to the
//! interpreter (so a slow tool never stalls a runtime worker, and the run's deadline still
//! holds while the tool runs), and awaits the [`Reply`] the dispatcher fills: at once for a
//! plain function, later (from the event loop) for an `async def` tool.

use crate::gate;
use codecell::{Handler, HandlerError, HandlerFuture};
use pyo3::prelude::*;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

tokio::task_local! {
    /// The asyncio loop of the `execute_code_async` call whose run is being served, if any:
    /// its async tools run on that loop.
    pub(crate) static RUN_LOOP: Option<Arc<Py<PyAny>>>;
}

/// What the dispatcher sends back: the result as JSON text, or the message of a `ToolError`.
type Answer = Result<String, String>;

/// Where a tool's Python dispatcher puts its answer; the first answer wins.
#[pyclass(module = "codecell._native", frozen)]
pub(crate) struct Reply {
    sender: Mutex<Option<oneshot::Sender<Answer>>>,
}

impl Reply {
    fn send(&self, answer: Answer) -> bool {
        let sender = self.sender.lock().unwrap_or_else(|p| p.into_inner()).take();
        sender.is_some_and(|s| s.send(answer).is_ok())
    }
}

#[pymethods]
impl Reply {
    /// Answers with a result, as JSON text; false when the run no longer waits for it.
    fn ok(&self, json: String) -> bool {
        self.send(Ok(json))
    }

    /// Answers with a failure the guest sees as `ToolError(message)`.
    fn error(&self, message: String) -> bool {
        self.send(Err(message))
    }
}

/// A catalog handler calling `dispatch(args_json, reply, loop)` in Python.
pub(crate) struct PyToolHandler {
    dispatch: Arc<Py<PyAny>>,
}

impl PyToolHandler {
    /// A handler over a Python dispatcher (`codecell._tool.Tool._dispatch`).
    pub(crate) fn new(dispatch: Py<PyAny>) -> Self {
        PyToolHandler {
            dispatch: Arc::new(dispatch),
        }
    }
}

impl Handler for PyToolHandler {
    fn call<'a>(&'a self, args: Value) -> HandlerFuture<'a> {
        Box::pin(async move {
            let args = args.to_string();
            let run_loop = RUN_LOOP.try_with(Clone::clone).ok().flatten();
            let (sender, receiver) = oneshot::channel();
            let reply = Reply {
                sender: Mutex::new(Some(sender)),
            };
            let dispatch = self.dispatch.clone();
            let started = tokio::task::spawn_blocking(move || {
                gate::with_python(|py| -> PyResult<()> {
                    let run_loop = match &run_loop {
                        Some(l) => l.bind(py).clone(),
                        None => py.None().into_bound(py),
                    };
                    dispatch.call1(py, (args, Bound::new(py, reply)?, run_loop))?;
                    Ok(())
                })
            })
            .await;
            match started {
                Ok(Some(Ok(()))) => {}
                Ok(Some(Err(e))) => {
                    return Err(HandlerError::new(format!(
                        "the tool's dispatcher failed: {e}"
                    )));
                }
                Ok(None) => {
                    return Err(HandlerError::new("the Python interpreter is shutting down"));
                }
                Err(_) => return Err(HandlerError::new("the tool's dispatcher panicked")),
            }
            match receiver.await {
                Ok(Ok(json)) => serde_json::from_str(&json)
                    .map_err(|e| HandlerError::new(format!("the tool returned invalid JSON: {e}"))),
                Ok(Err(message)) => Err(HandlerError::new(message)),
                Err(_) => Err(HandlerError::new("the tool ended without a result")),
            }
        })
    }
}
