//! codecell's host-side failures as Python exception classes (never bare strings).

use codecell::{DynamicToolError, EngineError, Error};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(_native, CodecellError, PyException, "Base class of every codecell error.");
create_exception!(_native, GuestNotBuilt, CodecellError, "The guest interpreter's .wasm file is missing.");
create_exception!(_native, EngineError_, CodecellError, "The engine failed to load, compile or instantiate a guest.");
create_exception!(_native, CatalogError, CodecellError, "The tools do not make a valid catalog (names, schemas).");
create_exception!(_native, DynamicToolError_, CodecellError, "A dynamic-tool operation was refused or failed.");
create_exception!(_native, ApprovalRequired, DynamicToolError_, "Promotion, activation or rollback without approve=True.");
create_exception!(_native, ToolNotFound, DynamicToolError_, "No dynamic tool (or version) of that name.");
create_exception!(_native, PolicyViolation, DynamicToolError_, "A dynamic tool's source breaks the policy.");
create_exception!(_native, InvalidArguments, DynamicToolError_, "Arguments (or a result) do not match the tool's schema.");
create_exception!(_native, InterpreterShuttingDown, CodecellError, "The run's result arrived after the interpreter began shutting down.");

/// Adds the exception classes to the module under their public names.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CodecellError", py.get_type::<CodecellError>())?;
    m.add("GuestNotBuilt", py.get_type::<GuestNotBuilt>())?;
    m.add("EngineError", py.get_type::<EngineError_>())?;
    m.add("CatalogError", py.get_type::<CatalogError>())?;
    m.add("DynamicToolError", py.get_type::<DynamicToolError_>())?;
    m.add("ApprovalRequired", py.get_type::<ApprovalRequired>())?;
    m.add("ToolNotFound", py.get_type::<ToolNotFound>())?;
    m.add("PolicyViolation", py.get_type::<PolicyViolation>())?;
    m.add("InvalidArguments", py.get_type::<InvalidArguments>())?;
    m.add("InterpreterShuttingDown", py.get_type::<InterpreterShuttingDown>())?;
    Ok(())
}

/// The exception for a facade error.
pub(crate) fn to_py(error: Error) -> PyErr {
    match error {
        Error::Engine(e) => engine(e),
        Error::Catalog(e) => CatalogError::new_err(e.to_string()),
        Error::DynamicTool(e) => dynamic(e),
        other => CodecellError::new_err(other.to_string()),
    }
}

/// The exception for an engine error.
pub(crate) fn engine(error: EngineError) -> PyErr {
    match error {
        EngineError::GuestNotBuilt { .. } => GuestNotBuilt::new_err(error.to_string()),
        other => EngineError_::new_err(other.to_string()),
    }
}

/// The exception for a dynamic-tool error, by what the caller can do about it.
pub(crate) fn dynamic(error: DynamicToolError) -> PyErr {
    let text = error.to_string();
    match error {
        DynamicToolError::ApprovalRequired(_) => ApprovalRequired::new_err(text),
        DynamicToolError::Unknown(_)
        | DynamicToolError::NoSessionTool(_)
        | DynamicToolError::NotAVersion { .. }
        | DynamicToolError::NoRollbackTarget { .. } => ToolNotFound::new_err(text),
        DynamicToolError::Source(_) => PolicyViolation::new_err(text),
        DynamicToolError::Arguments(_) | DynamicToolError::Output(_) => {
            InvalidArguments::new_err(text)
        }
        _ => DynamicToolError_::new_err(text),
    }
}
