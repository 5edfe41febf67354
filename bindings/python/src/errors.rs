//! codecell's host-side failures as Python exception classes (never bare strings).

use codecell::{DynamicToolError as RustDynamicError, EngineError as RustEngineError, Error};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    codecell,
    CodecellError,
    PyException,
    "Base class of every codecell error."
);
create_exception!(
    codecell,
    GuestNotBuilt,
    CodecellError,
    "The guest interpreter's .wasm file is missing."
);
create_exception!(
    codecell,
    EngineError,
    CodecellError,
    "The engine failed to load, compile or instantiate a guest."
);
create_exception!(
    codecell,
    CatalogError,
    CodecellError,
    "The tools do not make a valid catalog (names, schemas)."
);
create_exception!(
    codecell,
    DynamicToolError,
    CodecellError,
    "A dynamic-tool operation was refused or failed."
);
create_exception!(
    codecell,
    ApprovalRequired,
    DynamicToolError,
    "Promotion, activation or rollback without approve=True."
);
create_exception!(
    codecell,
    ToolNotFound,
    DynamicToolError,
    "No dynamic tool (or version) of that name."
);
create_exception!(
    codecell,
    PolicyViolation,
    DynamicToolError,
    "A dynamic tool's source breaks the policy."
);
create_exception!(
    codecell,
    InvalidArguments,
    DynamicToolError,
    "Arguments (or a result) do not match the tool's schema."
);
create_exception!(
    codecell,
    InterpreterShuttingDown,
    CodecellError,
    "The run's result arrived after the interpreter began shutting down."
);

/// Adds the exception classes to the module under their public names.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CodecellError", py.get_type::<CodecellError>())?;
    m.add("GuestNotBuilt", py.get_type::<GuestNotBuilt>())?;
    m.add("EngineError", py.get_type::<EngineError>())?;
    m.add("CatalogError", py.get_type::<CatalogError>())?;
    m.add("DynamicToolError", py.get_type::<DynamicToolError>())?;
    m.add("ApprovalRequired", py.get_type::<ApprovalRequired>())?;
    m.add("ToolNotFound", py.get_type::<ToolNotFound>())?;
    m.add("PolicyViolation", py.get_type::<PolicyViolation>())?;
    m.add("InvalidArguments", py.get_type::<InvalidArguments>())?;
    m.add(
        "InterpreterShuttingDown",
        py.get_type::<InterpreterShuttingDown>(),
    )?;
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
pub(crate) fn engine(error: RustEngineError) -> PyErr {
    match error {
        RustEngineError::GuestNotBuilt { .. } => GuestNotBuilt::new_err(error.to_string()),
        other => EngineError::new_err(other.to_string()),
    }
}

/// The exception for a dynamic-tool error, by what the caller can do about it.
pub(crate) fn dynamic(error: RustDynamicError) -> PyErr {
    let text = error.to_string();
    match error {
        RustDynamicError::ApprovalRequired(_) => ApprovalRequired::new_err(text),
        RustDynamicError::Unknown(_)
        | RustDynamicError::NoSessionTool(_)
        | RustDynamicError::NotAVersion { .. }
        | RustDynamicError::NoRollbackTarget { .. } => ToolNotFound::new_err(text),
        RustDynamicError::Source(_) => PolicyViolation::new_err(text),
        RustDynamicError::Arguments(_) | RustDynamicError::Output(_) => {
            InvalidArguments::new_err(text)
        }
        _ => DynamicToolError::new_err(text),
    }
}
