//! `_codecell_host`: the WIT imports as a native Python module.
//!
//! `ls`, `read` and `call_tool_json` return `(True, value)` or `(False, message)`, the shape the
//! shared Python (../common/_codecell_api.py, through py/_codecell_binding.py) expects; it turns
//! the latter into FileNotFoundError or ToolError. `call_tool` is the guest-facing function
//! itself (kwargs in, Python values out), which the shared Python uses instead of its own. `write` sends bytes to the WASI stdout/stderr,
//! which the host captures and bounds.

#[rustpython_vm::pymodule]
pub(crate) mod _codecell_host {
    use std::cell::OnceCell;
    use std::io::Write;

    use crate::host;
    use rustpython_vm::{
        AsObject, PyObjectRef, PyResult, VirtualMachine,
        builtins::{PyBaseExceptionRef, PyStr, PyStrRef, PyTypeRef},
        convert::ToPyObject,
        function::{ArgBytesLike, FuncArgs},
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

    /// The raw host import: JSON text in, `(True, JSON text)` or `(False, message)` out.
    #[pyfunction]
    fn call_tool_json(category: PyStrRef, name: PyStrRef, args_json: PyStrRef, vm: &VirtualMachine) -> PyObjectRef {
        let result = host::call_tool(
            &category.to_string_lossy(),
            &name.to_string_lossy(),
            &args_json.to_string_lossy(),
        )
        .map(|json| json.to_pyobject(vm));
        outcome(result, vm)
    }

    thread_local! {
        /// `codecell.ToolError`, handed over once by the shared Python (`set_tool_error`).
        static TOOL_ERROR: OnceCell<PyTypeRef> = const { OnceCell::new() };
    }

    /// Sets the exception class `call_tool` raises; called once, before the snapshot.
    #[pyfunction]
    fn set_tool_error(cls: PyTypeRef) {
        TOOL_ERROR.with(|cell| {
            let _ = cell.set(cls);
        });
    }

    /// A ToolError with `message`, raised as `raise ToolError(message) from None` would be.
    fn tool_error(message: String, vm: &VirtualMachine) -> PyBaseExceptionRef {
        let cls = TOOL_ERROR.with(|cell| cell.get().cloned());
        let exc = match cls {
            Some(cls) => vm.new_exception_msg(cls, message.into()),
            None => vm.new_runtime_error(format!("codecell.ToolError is not set up: {message}")),
        };
        exc.set_cause(None);
        exc
    }

    /// call_tool(category, name, /, **kwargs): calls tool `name` of `category` with keyword
    /// arguments and returns its JSON result as Python values; raises codecell.ToolError when
    /// the arguments are not JSON, the tool is unknown, the host refuses the arguments or the
    /// tool fails.
    ///
    /// The whole round trip in Rust, with the checks and errors of the Python version in
    /// ../../common/_codecell_api.py: its frame alone cost RustPython more than the host call.
    #[pyfunction]
    fn call_tool(args: FuncArgs, vm: &VirtualMachine) -> PyResult {
        let (category, name) = match args.args.as_slice() {
            [category, name] => (category, name),
            [] => {
                return Err(vm.new_type_error(
                    "call_tool() missing 2 required positional arguments: 'category' and 'name'",
                ));
            }
            [_] => return Err(vm.new_type_error("call_tool() missing 1 required positional argument: 'name'")),
            more => {
                return Err(vm.new_type_error(format!(
                    "call_tool() takes 2 positional arguments but {} were given",
                    more.len()
                )));
            }
        };
        let (Some(category), Some(name)) = (category.downcast_ref::<PyStr>(), name.downcast_ref::<PyStr>()) else {
            return Err(vm.new_type_error("call_tool(category, name, **kwargs): category and name must be str"));
        };
        let (category, name) = (category.to_string_lossy(), name.to_string_lossy());
        let args_json = match crate::json::encode_kwargs(&args.kwargs, vm) {
            Ok(json) => json,
            Err(e)
                if e.fast_isinstance(vm.ctx.exceptions.type_error)
                    || e.fast_isinstance(vm.ctx.exceptions.value_error) =>
            {
                let detail = e.as_object().str(vm)?.to_string_lossy().into_owned();
                return Err(tool_error(format!("arguments of {category}/{name} are not JSON: {detail}"), vm));
            }
            Err(e) => return Err(e),
        };
        match host::call_tool(&category, &name, &args_json) {
            Ok(json) => crate::json::decode(&json, vm),
            Err(message) => Err(tool_error(message, vm)),
        }
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
