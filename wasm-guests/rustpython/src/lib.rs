//! codecell's RustPython guest: the `sandbox` world of `../wit` over rustpython-vm.
//!
//! The interpreter is built once per instance, on the first export call (or at build time when the
//! image is pre-initialised), with the frozen stdlib, the native module `_codecell_host` (the WIT
//! imports) and the frozen Python half in `py/`, which mirrors the CPython guest module for module.
//! Every export catches everything: a Python exception or a failed start-up becomes a `failure`
//! record; only a Rust panic (a RustPython bug) traps the instance.

use std::cell::OnceCell;

use rustpython_vm::{
    AsObject, Interpreter, InterpreterBuilder, PyObjectRef, PyResult, Settings, VirtualMachine,
    builtins::{PyBaseExceptionRef, PyInt, PyStr, PyTuple},
};

wit_bindgen::generate!({ path: "../wit", world: "sandbox-preinit" });

use codecell::guest::host;

mod json;
mod native;

/// The interpreter and the `_codecell_app` module, made once per instance.
struct State {
    interp: Interpreter,
    app: PyObjectRef,
}

thread_local! {
    static STATE: OnceCell<Result<State, Failure>> = const { OnceCell::new() };
}

fn settings() -> Settings {
    let mut s = Settings::default();
    s.isolated = true;
    s.ignore_environment = true;
    s.import_site = false;
    s.user_site_directory = false;
    s.safe_path = true;
    s.write_bytecode = false;
    s.install_signal_handlers = false;
    s.argv = vec![String::new()];
    s
}

fn build() -> Result<State, Failure> {
    let builder = InterpreterBuilder::new().settings(settings());
    let stdlib = rustpython_stdlib::stdlib_module_defs(&builder.ctx);
    let host_module = native::_codecell_host::module_def(&builder.ctx);
    let interp = builder
        .add_native_modules(&stdlib)
        .add_native_module(host_module)
        .add_frozen_modules(rustpython_pylib::FROZEN_STDLIB)
        .add_frozen_modules(rustpython_vm::py_freeze!(dir = "../py"))
        .add_frozen_modules(rustpython_vm::py_freeze!(dir = "../../common"))
        .build();
    let app = interp
        .enter(|vm| vm.import("_codecell_app", 0))
        .map_err(|e| interp.enter(|vm| start_failure(vm, &e)))?;
    Ok(State { interp, app })
}

/// Builds the interpreter if this instance has not yet, then runs `f` inside it.
fn with_app<T>(
    f: impl FnOnce(&VirtualMachine, &PyObjectRef) -> Result<T, Failure>,
) -> Result<T, Failure> {
    reseed_thread_rng()?;
    STATE.with(|cell| match cell.get_or_init(build) {
        Ok(state) => state.interp.enter(|vm| f(vm, &state.app)),
        Err(failure) => Err(failure.clone()),
    })
}

/// Draws a new key for rand's thread-local generator from WASI's random source (fresh per
/// instance). Without it every run would continue the generator state frozen in the snapshot,
/// and `random.Random()` would give the same numbers in every run.
fn reseed_thread_rng() -> Result<(), Failure> {
    rand::rng().reseed().map_err(|e| Failure {
        kind: "GuestStartError".to_owned(),
        message: format!("the RustPython guest could not seed its random generator: {e}"),
        traceback: String::new(),
        line: None,
    })
}

/// A failure for an exception that escaped the Python half: kind and message only, no frames
/// (they would all be the guest's own).
fn describe(vm: &VirtualMachine, exc: &PyBaseExceptionRef) -> Failure {
    let kind = exc.class().name().to_string();
    let message = match exc.as_object().str(vm) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => "<unprintable exception>".to_owned(),
    };
    let traceback = format!("{kind}: {message}\n");
    Failure {
        kind,
        message,
        traceback,
        line: None,
    }
}

fn start_failure(vm: &VirtualMachine, exc: &PyBaseExceptionRef) -> Failure {
    let mut detail = String::new();
    let _ = vm.write_exception(&mut detail, exc);
    let inner = describe(vm, exc);
    Failure {
        kind: "GuestStartError".to_owned(),
        message: format!(
            "the RustPython guest failed to start: {}: {}",
            inner.kind, inner.message
        ),
        traceback: detail,
        line: None,
    }
}

fn text(obj: &PyObjectRef) -> String {
    match obj.downcast_ref::<PyStr>() {
        Some(s) => s.to_string_lossy().into_owned(),
        None => String::new(),
    }
}

/// Reads the `(kind, message, traceback, line)` tuple the Python half returns for a failure.
fn failure_from(obj: &PyObjectRef) -> Failure {
    match obj.downcast_ref::<PyTuple>().map(|t| t.as_slice().to_vec()) {
        Some(items) if items.len() == 4 => Failure {
            kind: text(&items[0]),
            message: text(&items[1]),
            traceback: text(&items[2]),
            line: small_int(&items[3]),
        },
        _ => Failure {
            kind: "SystemError".to_owned(),
            message: "the guest returned a malformed failure".to_owned(),
            traceback: String::new(),
            line: None,
        },
    }
}

/// An int that fits in a `u32`, or None (for None or anything else).
fn small_int(obj: &PyObjectRef) -> Option<u32> {
    obj.downcast_ref::<PyInt>()
        .and_then(|i| u32::try_from(i.as_bigint()).ok())
}

/// The run options as the Python half reads them (`_codecell_exports._prepare`).
fn options_tuple(vm: &VirtualMachine, options: &RunOptions) -> PyObjectRef {
    let items = [
        options.recursion_limit,
        options.max_message_chars,
        options.max_traceback_chars,
        options.max_result_chars,
    ];
    vm.ctx
        .new_tuple(items.iter().map(|n| vm.ctx.new_int(*n).into()).collect())
        .into()
}

fn call(
    vm: &VirtualMachine,
    app: &PyObjectRef,
    name: &'static str,
    args: Vec<PyObjectRef>,
) -> PyResult {
    app.get_attr(name, vm)?.call(args, vm)
}

/// Calls `run_snippet` or `run_cell` of the app module: None is success, a tuple the failure.
fn run_code(export: &'static str, code: String, options: RunOptions) -> Result<(), Failure> {
    with_app(|vm, app| {
        let args = vec![vm.ctx.new_str(code).into(), options_tuple(vm, &options)];
        match call(vm, app, export, args) {
            Ok(r) if vm.is_none(&r) => Ok(()),
            Ok(r) => Err(failure_from(&r)),
            Err(e) => Err(describe(vm, &e)),
        }
    })
}

struct Component;

impl Guest for Component {
    fn run_snippet(code: String, options: RunOptions) -> Result<(), Failure> {
        run_code("run_snippet", code, options)
    }

    fn run_cell(code: String, options: RunOptions) -> Result<(), Failure> {
        run_code("run_cell", code, options)
    }

    fn run_tool(
        source: String,
        imports: Vec<String>,
        args_json: String,
        options: RunOptions,
    ) -> Result<String, ToolFailure> {
        let ran = with_app(|vm, app| {
            let imports = imports
                .into_iter()
                .map(|s| vm.ctx.new_str(s).into())
                .collect();
            let args = vec![
                vm.ctx.new_str(source).into(),
                vm.ctx.new_list(imports).into(),
                vm.ctx.new_str(args_json).into(),
                options_tuple(vm, &options),
            ];
            let r = call(vm, app, "run_tool", args).map_err(|e| describe(vm, &e))?;
            let items = r.downcast_ref::<PyTuple>().map(|t| t.as_slice().to_vec());
            Ok(match items.as_deref() {
                Some([ok, value]) if ok.is(&vm.ctx.true_value) => Ok(text(value)),
                Some([_, chars]) if chars.downcast_ref::<PyInt>().is_some() => {
                    let chars = chars.downcast_ref::<PyInt>().map(|i| i.as_bigint());
                    let chars = chars.and_then(|c| u64::try_from(c).ok()).unwrap_or(u64::MAX);
                    Err(ToolFailure::ResultTooLarge(chars))
                }
                Some([_, failure]) => Err(ToolFailure::Raised(failure_from(failure))),
                _ => Err(ToolFailure::Raised(failure_from(&r))),
            })
        });
        ran.map_err(ToolFailure::Raised).and_then(|result| result)
    }

    fn wizer_initialize() {
        // Build errors are kept in STATE and reported by the first run, as without pre-init.
        STATE.with(|cell| {
            let _ = cell.get_or_init(build);
        });
    }

    fn python_version() -> String {
        with_app(|vm, app| match call(vm, app, "python_version", vec![]) {
            Ok(v) => Ok(text(&v)),
            Err(e) => Err(describe(vm, &e)),
        })
        .unwrap_or_else(|_| "unknown".to_owned())
    }
}

export!(Component);
