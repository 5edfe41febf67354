//! `codecell._native`: the Rust half of the `codecell` Python package. The Python half
//! (`python/codecell/`) turns functions into tools and wraps these classes in the public API.

mod code_mode;
mod dynamic;
mod engines;
mod errors;
mod gate;
mod limits;
mod py_tool;
mod runtime;
mod session;

use pyo3::prelude::*;

/// The native module; `codecell/__init__.py` re-exports what users see.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<code_mode::NativeCodeMode>()?;
    m.add_class::<code_mode::RunHandle>()?;
    m.add_class::<session::NativeSession>()?;
    m.add_class::<dynamic::NativeDynamicTools>()?;
    m.add_class::<py_tool::Reply>()?;
    m.add_function(wrap_pyfunction!(gate::close_for_shutdown, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
