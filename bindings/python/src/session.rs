//! `NativeSession`: one interpreter kept across turns (`CodeMode.session()`), run with the GIL
//! released like `NativeCodeMode::execute`.

use crate::code_mode::texts;
use crate::errors;
use crate::py_tool::RUN_LOOP;
use crate::runtime::runtime;
use codecell::{Journal, Session, SessionLimits, SessionState};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::Arc;
use std::time::Duration;

/// A session: its turns share globals; see `codecell::Session` for the limits.
#[pyclass(module = "codecell._native", frozen)]
pub(crate) struct NativeSession {
    session: Arc<tokio::sync::Mutex<Session>>,
}

impl NativeSession {
    pub(crate) fn new(session: Session) -> Self {
        NativeSession {
            session: Arc::new(tokio::sync::Mutex::new(session)),
        }
    }
}

/// The session-wide limits from the keyword arguments `CodeMode.session()` passes on.
pub(crate) fn session_limits(
    max_turns: Option<u32>,
    idle_ttl_s: Option<f64>,
    max_total_fuel: Option<u64>,
    restart_on_trap: bool,
) -> PyResult<SessionLimits> {
    let mut limits = SessionLimits::default();
    if let Some(v) = max_turns {
        limits.max_turns = v;
    }
    if let Some(v) = idle_ttl_s {
        limits.idle_ttl = Duration::try_from_secs_f64(v).map_err(|_| {
            PyValueError::new_err(format!(
                "idle_ttl must be a non-negative number of seconds, got {v}"
            ))
        })?;
    }
    if let Some(v) = max_total_fuel {
        limits.max_total_fuel = v;
    }
    limits.restart_on_trap = restart_on_trap;
    Ok(limits)
}

/// A journal from its JSON text.
pub(crate) fn journal(text: &str) -> PyResult<Journal> {
    serde_json::from_str(text)
        .map_err(|e| PyValueError::new_err(format!("not a codecell session journal: {e}")))
}

#[pymethods]
impl NativeSession {
    /// Runs `code` as the next turn; returns (outcome JSON, rendered text, state, reason), the
    /// state being `live`, `restarted` or `ended` (with its reason).
    fn execute(&self, py: Python<'_>, code: String) -> PyResult<(String, String, String, String)> {
        let session = self.session.clone();
        let turn = py.detach(move || {
            runtime().block_on(RUN_LOOP.scope(None, async move {
                session.lock().await.execute(&code).await
            }))
        });
        let turn = turn.map_err(errors::engine)?;
        let (json, rendered) = texts(&turn.outcome);
        let (state, reason) = match turn.state {
            SessionState::Live => ("live", String::new()),
            SessionState::Restarted => ("restarted", String::new()),
            SessionState::Ended(reason) => ("ended", reason),
            _ => ("ended", String::new()),
        };
        Ok((json, rendered, state.to_string(), reason))
    }

    /// The journal of every turn so far, as JSON.
    fn save(&self, py: Python<'_>) -> PyResult<String> {
        let session = self.session.clone();
        let journal =
            py.detach(move || runtime().block_on(async move { session.lock().await.save() }));
        let journal = journal.map_err(errors::engine)?;
        serde_json::to_string(&journal).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Ends the session and frees its interpreter.
    fn close(&self, py: Python<'_>) {
        let session = self.session.clone();
        py.detach(move || runtime().block_on(async move { session.lock().await.close() }));
    }

    /// Why the session ended, or None while it runs on.
    fn ended(&self, py: Python<'_>) -> Option<String> {
        let session = self.session.clone();
        py.detach(move || {
            runtime().block_on(async move { session.lock().await.ended().map(str::to_string) })
        })
    }

    /// Turns run so far.
    fn turns(&self, py: Python<'_>) -> u32 {
        let session = self.session.clone();
        py.detach(move || runtime().block_on(async move { session.lock().await.turns() }))
    }
}
