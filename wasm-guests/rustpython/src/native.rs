//! `_codecell_host`: the WIT imports as a native Python module.
//!
//! `ls`, `read` and `call_tool` return `(True, value)` or `(False, message)`, the shape the
//! shared Python (../common/_codecell_api.py, through py/_codecell_binding.py) expects; it turns
//! the latter into FileNotFoundError or ToolError. `write` sends bytes to the WASI stdout/stderr,
//! which the host captures and bounds.

#[rustpython_vm::pymodule]
pub(crate) mod _codecell_host {
    use std::io::Write;

    use crate::host;
    use rustpython_vm::{
        PyObjectRef, PyResult, VirtualMachine, builtins::PyStrRef, convert::ToPyObject, function::ArgBytesLike,
    };

    fn outcome(result: Result<PyObjectRef, String>, vm: &VirtualMachine) -> PyObjectRef {
        match result {
            Ok(value) => vm.new_tuple((true, value)).into(),
            Err(message) => vm.new_tuple((false, message)).into(),
        }
    }

    #[pyfunction]
    fn ls(path: PyStrRef, vm: &VirtualMachine) -> PyObjectRef {
        let result = host::ls(&path.to_string_lossy()).map(|entries| {
            let items = entries.into_iter().map(|e| vm.ctx.new_str(e).into()).collect();
            vm.ctx.new_list(items).into()
        });
        outcome(result, vm)
    }

    #[pyfunction]
    fn read(path: PyStrRef, vm: &VirtualMachine) -> PyObjectRef {
        let result = host::read(&path.to_string_lossy()).map(|text| text.to_pyobject(vm));
        outcome(result, vm)
    }

    #[pyfunction]
    fn call_tool(category: PyStrRef, name: PyStrRef, args_json: PyStrRef, vm: &VirtualMachine) -> PyObjectRef {
        let result = host::call_tool(
            &category.to_string_lossy(),
            &name.to_string_lossy(),
            &args_json.to_string_lossy(),
        )
        .map(|json| json.to_pyobject(vm));
        outcome(result, vm)
    }

    /// Tool-call arguments as compact JSON (TypeError/ValueError as the stdlib encoder raises).
    #[pyfunction]
    fn encode_args(obj: PyObjectRef, vm: &VirtualMachine) -> PyResult<String> {
        crate::json::encode(&obj, vm)
    }

    /// A tool result (JSON text from the host) as Python values.
    #[pyfunction]
    fn decode_result(text: PyStrRef, vm: &VirtualMachine) -> PyResult<PyObjectRef> {
        crate::json::decode(&text.to_string_lossy(), vm)
    }

    /// Writes all of `data` to fd 1 (stdout) or 2 (stderr); false if the stream refused it.
    #[pyfunction]
    fn write(fd: i32, data: ArgBytesLike) -> bool {
        data.with_ref(|bytes| {
            let result = if fd == 2 {
                let mut err = std::io::stderr().lock();
                err.write_all(bytes).and_then(|()| err.flush())
            } else {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes).and_then(|()| out.flush())
            };
            result.is_ok()
        })
    }
}
