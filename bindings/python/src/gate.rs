//! The shutdown gate: runtime threads touch Python only through [`with_python`], and
//! [`close_for_shutdown`] (registered with `atexit`) shuts the gate before the interpreter
//! finalises, so no thread attaches to a dying interpreter, however many runs are in flight.

use pyo3::prelude::*;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

struct State {
    open: bool,
    inside: usize,
}

static STATE: Mutex<State> = Mutex::new(State {
    open: true,
    inside: 0,
});
static LEFT: Condvar = Condvar::new();

fn state() -> MutexGuard<'static, State> {
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `f` attached to the interpreter, or returns `None` when it is shutting down.
pub(crate) fn with_python<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    {
        let mut state = state();
        if !state.open {
            return None;
        }
        state.inside += 1;
    }
    let result = Python::try_attach(f);
    let mut state = state();
    state.inside -= 1;
    if state.inside == 0 {
        LEFT.notify_all();
    }
    result
}

/// Closes the gate and waits (without the GIL) up to `timeout_s` for threads inside it to leave.
/// Returns how many were still inside. Called by `atexit`; idempotent.
#[pyfunction]
#[pyo3(signature = (timeout_s = 5.0))]
pub(crate) fn close_for_shutdown(py: Python<'_>, timeout_s: f64) -> usize {
    py.detach(|| {
        let mut guard = state();
        guard.open = false;
        let wait = Duration::try_from_secs_f64(timeout_s).unwrap_or(Duration::ZERO);
        let (guard, _) = LEFT
            .wait_timeout_while(guard, wait, |s| s.inside > 0)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        guard.inside
    })
}
