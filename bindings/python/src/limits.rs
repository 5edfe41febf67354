//! `codecell.Limits` (a Python dataclass, checked there) as the engine's `Limits`.

use codecell::Limits;
use pyo3::prelude::*;
use std::time::Duration;

/// Reads the fields of a `codecell.Limits`; missing attributes keep the secure defaults.
pub(crate) fn from_py(limits: Option<&Bound<'_, PyAny>>) -> PyResult<Limits> {
    let mut out = Limits::default();
    let Some(limits) = limits.filter(|l| !l.is_none()) else {
        return Ok(out);
    };
    out.fuel = limits.getattr("fuel")?.extract()?;
    out.memory_bytes = limits.getattr("memory_bytes")?.extract()?;
    let deadline_s: f64 = limits.getattr("deadline_s")?.extract()?;
    out.deadline = Duration::try_from_secs_f64(deadline_s).map_err(|e| {
        pyo3::exceptions::PyValueError::new_err(format!("deadline_s={deadline_s}: {e}"))
    })?;
    out.max_output_bytes = limits.getattr("max_output_bytes")?.extract()?;
    out.max_tool_calls = limits.getattr("max_tool_calls")?.extract()?;
    out.max_tool_args_bytes = limits.getattr("max_tool_args_bytes")?.extract()?;
    out.max_tool_result_bytes = limits.getattr("max_tool_result_bytes")?.extract()?;
    out.recursion_limit = limits.getattr("recursion_limit")?.extract()?;
    Ok(out)
}
