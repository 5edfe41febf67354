//! `WasmToolRunner`: runs a dynamic tool's `execute(args)` in a fresh wasm guest, the way the
//! seed's `DynamicToolWorker` runs it in a fresh sandboxed subprocess: the payload is bounded
//! before anything starts, the result is bounded and parsed after, and every failure becomes a
//! [`RunError`] (never a panic).

use codecell_engine::{Engine, Failure, Limits};
use codecell_manifest::manifest::{MAX_INPUT_CHARS, MAX_OUTPUT_CHARS};
use codecell_manifest::{Manifest, RunError, RunFuture, ToolRunner, canonical};
use serde_json::{Value, json};

/// The guest's own output check raises this (see `wasm-guests/common/restricted.py`); it is a
/// limit, not a bug in the tool, so it is reported as one.
const GUEST_OUTPUT_LIMIT_PREFIX: &str = "dynamic tool output exceeds";

/// Runs dynamic tools in fresh guests of one [`Engine`], under code mode's [`Limits`].
#[derive(Debug, Clone)]
pub struct WasmToolRunner {
    engine: Engine,
    limits: Limits,
}

impl WasmToolRunner {
    /// A runner with [`Limits::default`] (10 s deadline, the same caps as code mode).
    pub fn new(engine: Engine) -> Self {
        WasmToolRunner {
            engine,
            limits: Limits::default(),
        }
    }

    /// Replaces the limits every tool run is held to.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits every tool run is held to.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    async fn run_manifest(&self, manifest: &Manifest, args: &Value) -> Result<Value, RunError> {
        // The seed measures the whole payload (source + arguments) in characters.
        let payload = json!({"implementation": manifest.implementation, "arguments": args});
        let input_chars = canonical::to_string(&payload).chars().count();
        if input_chars > MAX_INPUT_CHARS {
            return Err(RunError::Limit(format!(
                "dynamic tool input is too large: {input_chars} characters, over the limit of {MAX_INPUT_CHARS}"
            )));
        }
        let args_json = canonical::to_string(args);
        let run = self
            .engine
            .run_tool(
                &manifest.implementation,
                &manifest.imports,
                &args_json,
                &self.limits,
            )
            .await
            .map_err(|e| RunError::Host(e.to_string()))?;
        match run.result {
            Ok(text) => parse_result(&text),
            Err(failure) => Err(run_error(&failure)),
        }
    }
}

impl ToolRunner for WasmToolRunner {
    fn run<'a>(&'a self, manifest: &'a Manifest, args: &'a Value) -> RunFuture<'a> {
        Box::pin(self.run_manifest(manifest, args))
    }
}

/// Bounds and parses the guest's canonical JSON; big integers and non-finite numbers (which
/// Python's `json.dumps` writes as `NaN`/`Infinity`) are refused rather than approximated.
fn parse_result(text: &str) -> Result<Value, RunError> {
    let chars = text.chars().count();
    if chars > MAX_OUTPUT_CHARS {
        return Err(RunError::Limit(format!(
            "dynamic tool output is too large: {chars} characters, over the limit of {MAX_OUTPUT_CHARS}"
        )));
    }
    canonical::parse_exact(text).map_err(|e| RunError::InvalidOutput(e.to_string()))
}

/// The registry's error for a run that ended without a result.
fn run_error(failure: &Failure) -> RunError {
    let report = failure.report();
    if let Some(kind) = failure.limit() {
        return RunError::Limit(format!("{}: {}", kind.as_str(), report.message));
    }
    if report.kind == "RuntimeError" && report.message.starts_with(GUEST_OUTPUT_LIMIT_PREFIX) {
        return RunError::Limit(format!("output: {}", report.message));
    }
    // The last traceback frame tells the tool's author which line failed; the full traceback
    // stays out of the message so it remains short enough for a model to read.
    let message = match last_frame(&report.traceback) {
        Some(frame) => format!("{} ({frame})", report.message),
        None => report.message.clone(),
    };
    RunError::Raised {
        kind: report.kind.clone(),
        message,
    }
}

/// `line N` of the innermost `<tool>` frame of a traceback, if there is one.
fn last_frame(traceback: &str) -> Option<String> {
    traceback
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("File \"<tool>\""))
        .and_then(|l| l.split(", ").find(|part| part.starts_with("line ")))
        .map(str::to_string)
}
