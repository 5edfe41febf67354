//! `_codecell_host`: the WIT imports as a native Python module.
//!
//! `ls`, `read` and `call_tool_json` return `(True, value)` or `(False, message)`, the shape the
//! shared Python (../common/_codecell_api.py, through py/_codecell_binding.py) expects; it turns
//! the latter into FileNotFoundError or ToolError. `tool_caller` makes the guest-facing `call_tool`
//! itself (kwargs in, Python values out), which the shared Python uses instead of its own. `write`
//! sends bytes to the WASI stdout/stderr, which the host captures and bounds.

#[rustpython_vm::pymodule]
pub(crate) mod _codecell_host {
    use std::borrow::Cow;
    use std::cell::OnceCell;
    use std::io::Write;

    use crate::host;
    use rustpython_vm::{
        AsObject, Py, PyObject, PyObjectRef, PyPayload, PyResult, VirtualMachine,
        builtins::{PyBaseExceptionRef, PyStr, PyStrRef, PyTypeRef},
        convert::ToPyObject,
        function::{ArgBytesLike, FuncArgs},
        pyclass,
        types::{Callable, Representable},
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
            let items = entries
                .into_iter()
                .map(|e| vm.ctx.new_str(e).into())
                .collect();
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
    fn call_tool_json(
        category: PyStrRef,
        name: PyStrRef,
        args_json: PyStrRef,
        vm: &VirtualMachine,
    ) -> PyObjectRef {
        let result = host::call_tool(
            &category.to_string_lossy(),
            &name.to_string_lossy(),
            &args_json.to_string_lossy(),
        )
        .map(|json| json.to_pyobject(vm));
        outcome(result, vm)
    }

    /// Starts a call without waiting: `(True, handle)` or `(False, message)`.
    #[pyfunction]
    fn start_tool_call(
        category: PyStrRef,
        name: PyStrRef,
        args_json: PyStrRef,
        vm: &VirtualMachine,
    ) -> PyObjectRef {
        let result = host::start_tool_call(
            &category.to_string_lossy(),
            &name.to_string_lossy(),
            &args_json.to_string_lossy(),
        )
        .map(|handle| vm.ctx.new_int(handle).into());
        outcome(result, vm)
    }

    /// Waits for started calls (at most `timeout_us`, or None: until one completes); gives the
    /// completed ones as `(handle, ok, JSON text or message)` tuples.
    #[pyfunction]
    fn wait_tool_calls(timeout_us: Option<u64>, vm: &VirtualMachine) -> PyObjectRef {
        let done = host::wait_tool_calls(timeout_us)
            .into_iter()
            .map(|c| {
                let (ok, text) = match c.outcome {
                    Ok(text) => (true, text),
                    Err(message) => (false, message),
                };
                vm.new_tuple((vm.ctx.new_int(c.handle), ok, text)).into()
            })
            .collect();
        vm.ctx.new_list(done).into()
    }

    /// Drops a started call that is no longer awaited.
    #[pyfunction]
    fn cancel_tool_call(handle: u64) {
        host::cancel_tool_call(handle);
    }

    thread_local! {
        /// `codecell.ToolError`, handed over once by the shared Python (`tool_caller`).
        static TOOL_ERROR: OnceCell<PyTypeRef> = const { OnceCell::new() };
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
    //
    // The whole round trip in Rust, with the checks and errors of the Python version in
    // ../../common/_codecell_api.py: its frame alone cost RustPython more than the host call.
    // `call_tool_implementations_agree` in tests/all/code_mode.rs keeps the two in agreement.
    // It is an object with its own vectorcall slot rather than a builtin function: a builtin
    // gets its keywords as a FuncArgs, an IndexMap with an owned String per name, which cost
    // about half of the guest's instructions of a one-keyword call.
    #[pyattr]
    #[pyclass(name = "ToolCaller", module = "_codecell_host")]
    #[derive(Debug, PyPayload)]
    struct ToolCaller;

    #[pyclass(with(Callable, Representable))]
    impl ToolCaller {
        #[pygetset]
        fn __name__(_zelf: &Py<Self>) -> &'static str {
            "call_tool"
        }

        #[pygetset]
        fn __qualname__(_zelf: &Py<Self>) -> &'static str {
            "call_tool"
        }
    }

    impl Callable for ToolCaller {
        type Args = FuncArgs;

        /// Calls that do not come through vectorcall (`call_tool(*a, **kw)`, `map`, …).
        fn call(_zelf: &Py<Self>, args: FuncArgs, vm: &VirtualMachine) -> PyResult {
            let kwargs = args
                .kwargs
                .iter()
                .map(|(name, value)| (name.to_string_lossy(), value));
            call_tool(&args.args, kwargs, vm)
        }
    }

    impl Representable for ToolCaller {
        fn repr_str(_zelf: &Py<Self>, _vm: &VirtualMachine) -> PyResult<String> {
            Ok("<built-in function call_tool>".to_owned())
        }
    }

    /// The vectorcall slot of [`ToolCaller`]: positional arguments first, then the keyword
    /// values, whose names are `kwnames` (always str: the compiler and the frame make them).
    fn tool_caller_vectorcall(
        _zelf: &PyObject,
        args: Vec<PyObjectRef>,
        nargs: usize,
        kwnames: Option<&[PyObjectRef]>,
        vm: &VirtualMachine,
    ) -> PyResult {
        let (positional, values) = args.split_at(nargs.min(args.len()));
        let names =
            kwnames
                .unwrap_or_default()
                .iter()
                .map(|name| match name.downcast_ref::<PyStr>() {
                    Some(name) => name.to_string_lossy(),
                    None => Cow::Borrowed(""),
                });
        call_tool(positional, names.zip(values), vm)
    }

    /// Returns the guest-facing `call_tool`, raising `tool_error` (codecell.ToolError); called
    /// once, before the snapshot.
    #[pyfunction]
    fn tool_caller(tool_error: PyTypeRef, vm: &VirtualMachine) -> PyObjectRef {
        TOOL_ERROR.with(|cell| {
            let _ = cell.set(tool_error);
        });
        ToolCaller::class(&vm.ctx)
            .slots
            .vectorcall
            .store(Some(tool_caller_vectorcall));
        ToolCaller.into_ref(&vm.ctx).into()
    }

    fn call_tool<'a>(
        positional: &[PyObjectRef],
        kwargs: impl Iterator<Item = (Cow<'a, str>, &'a PyObjectRef)>,
        vm: &VirtualMachine,
    ) -> PyResult {
        let (category, name) = match positional {
            [category, name] => (category, name),
            [] => {
                return Err(vm.new_type_error(
                    "call_tool() missing 2 required positional arguments: 'category' and 'name'",
                ));
            }
            [_] => {
                return Err(
                    vm.new_type_error("call_tool() missing 1 required positional argument: 'name'")
                );
            }
            more => {
                return Err(vm.new_type_error(format!(
                    "call_tool() takes 2 positional arguments but {} were given",
                    more.len()
                )));
            }
        };
        let (Some(category), Some(name)) = (
            category.downcast_ref::<PyStr>(),
            name.downcast_ref::<PyStr>(),
        ) else {
            return Err(vm.new_type_error(
                "call_tool(category, name, **kwargs): category and name must be str",
            ));
        };
        let (category, name) = (category.to_string_lossy(), name.to_string_lossy());
        let args_json = match crate::json::encode_kwargs(kwargs, vm) {
            Ok(json) => json,
            Err(e)
                if e.fast_isinstance(vm.ctx.exceptions.type_error)
                    || e.fast_isinstance(vm.ctx.exceptions.value_error) =>
            {
                let detail = e.as_object().str(vm)?.to_string_lossy().into_owned();
                return Err(tool_error(
                    format!("arguments of {category}/{name} are not JSON: {detail}"),
                    vm,
                ));
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
