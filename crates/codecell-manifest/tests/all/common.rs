//! Test support: a python3 subprocess runner and helpers shared by the integration tests.
#![allow(dead_code)]

#[cfg(not(windows))]
use codecell_manifest::RunError;
use codecell_manifest::{Manifest, ManualClock, Registry, RegistryOptions, RunFuture, ToolRunner};
use serde_json::{Value, json};
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `execute(args)` in a fresh `python3 -I -S` with restricted builtins and an import guard
/// limited to the manifest's imports (a stand-in for the wasm guest).
const WORKER: &str = r#"
import builtins, json, sys
allowed = set(name for name in sys.argv[1].split(",") if name)
keep = ("ArithmeticError AssertionError Exception IndexError KeyError LookupError RuntimeError "
        "TypeError ValueError ZeroDivisionError abs all any bool bytes callable chr complex dict "
        "divmod enumerate filter float format frozenset hash hex int isinstance issubclass iter "
        "len list map max min next oct ord pow range repr reversed round set slice sorted str sum "
        "tuple zip").split()
restricted = {name: getattr(builtins, name) for name in keep}
original_import = builtins.__import__
def guarded(name, globals=None, locals=None, fromlist=(), level=0):
    root = str(name).split(".", 1)[0]
    if level or root not in allowed:
        raise ImportError("import not allowed in a dynamic tool: " + root)
    return original_import(name, globals, locals, fromlist, level)
restricted["__import__"] = guarded
request = json.load(sys.stdin)
scope = {"__name__": "dynamic_tool", "__builtins__": restricted}
try:
    exec(compile(request["source"], "<dynamic tool>", "exec"), scope, scope)
    value = scope["execute"](request["args"])
    sys.stdout.write(json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False))
except BaseException as error:
    sys.stderr.write(type(error).__name__ + "\n" + str(error))
    sys.exit(1)
"#;

/// The python3 executable; fails loudly (never skips) when it is missing.
pub fn python3() -> &'static str {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "python3 is required by this test but was not found on PATH"
    );
    "python3"
}

/// Runs a Python script with `input` on stdin and returns stdout.
pub fn run_python(script: &str, args: &[&str], input: &str) -> String {
    let mut child = Command::new(python3())
        .arg(script)
        .args(args)
        .env("PYTHONIOENCODING", "utf-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write to python3");
    let out = child.wait_with_output().expect("python3 output");
    assert!(
        out.status.success(),
        "python3 {script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 from python3")
}

/// A [`ToolRunner`] backed by a python3 subprocess; counts its runs.
#[derive(Default)]
pub struct PythonRunner {
    pub runs: AtomicUsize,
}

/// On Windows the tools run in the CPython guest instead (`codecell::WasmToolRunner`): a test
/// under Wine cannot start a Linux python3, and the store's behaviour is what these tests check.
#[cfg(windows)]
impl ToolRunner for PythonRunner {
    fn run<'a>(&'a self, manifest: &'a Manifest, args: &'a Value) -> RunFuture<'a> {
        static RUNNER: std::sync::OnceLock<codecell::WasmToolRunner> = std::sync::OnceLock::new();
        self.runs.fetch_add(1, Ordering::SeqCst);
        let runner = RUNNER.get_or_init(|| {
            // No warm instance: it would be made on the runtime of whichever test came first.
            let engine = codecell::Engine::builder()
                .warm_instance(false)
                .build()
                .unwrap_or_else(|e| panic!("{e} (build it with `{}`)", codecell::BUILD_COMMAND));
            codecell::WasmToolRunner::new(engine)
        });
        runner.run(manifest, args)
    }
}

#[cfg(not(windows))]
impl ToolRunner for PythonRunner {
    fn run<'a>(&'a self, manifest: &'a Manifest, args: &'a Value) -> RunFuture<'a> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let request = json!({"source": manifest.implementation, "args": args}).to_string();
            let mut child = Command::new(python3())
                .args(["-I", "-S", "-c", WORKER, &manifest.imports.join(",")])
                .env("PYTHONIOENCODING", "utf-8")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| RunError::Host(e.to_string()))?;
            if let Some(mut stdin) = child.stdin.take() {
                stdin
                    .write_all(request.as_bytes())
                    .map_err(|e| RunError::Host(e.to_string()))?;
            }
            let out = child
                .wait_with_output()
                .map_err(|e| RunError::Host(e.to_string()))?;
            if !out.status.success() {
                let err = String::from_utf8_lossy(&out.stderr).to_string();
                let (kind, message) = err.split_once('\n').unwrap_or((&err, ""));
                return Err(RunError::Raised {
                    kind: kind.to_string(),
                    message: message.to_string(),
                });
            }
            serde_json::from_slice(&out.stdout).map_err(|e| RunError::InvalidOutput(e.to_string()))
        })
    }
}

/// A small valid spec: `add(a, b) -> {"sum": ...}`.
pub fn add_spec(name: &str) -> Value {
    json!({
        "name": name,
        "description": "Add   two\n numbers.",
        "input_schema": {
            "properties": {"a": {"type": "number"}, "b": {"type": "number", "minimum": 2}},
            "required": ["a", "b"]
        },
        "output_schema": {
            "properties": {"sum": {"type": "number"}},
            "required": ["sum"]
        },
        "implementation": "import math\n\ndef execute(args):\n    return {\"sum\": math.fsum([args[\"a\"], args[\"b\"]])}\n",
    })
}

/// The same tool with a different body (a new version).
pub fn add_spec_v2(name: &str) -> Value {
    let mut spec = add_spec(name);
    spec["implementation"] =
        json!("def execute(args):\n    return {\"sum\": args[\"a\"] + args[\"b\"] + 0.0}\n");
    spec
}

/// Opens a registry on `dir` with a manual clock.
pub fn open(
    dir: &std::path::Path,
    session: &str,
    project: Option<&str>,
    clock: Arc<ManualClock>,
    runner: Arc<PythonRunner>,
) -> Registry {
    let mut options = RegistryOptions::new(session, dir);
    options.project_id = project.map(str::to_string);
    options.clock = clock;
    Registry::open(options, runner).expect("open registry")
}

/// A manual clock at a fixed, realistic time.
pub fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(1_712_345_678.25))
}

/// A manual clock at the real time, for tests sharing a store with processes that use the
/// system clock (a reader at [`clock`]'s 2024 would see their manifests as from the future).
pub fn clock_now() -> Arc<ManualClock> {
    use codecell_manifest::Clock as _;
    Arc::new(ManualClock::new(codecell_manifest::SystemClock.now()))
}
