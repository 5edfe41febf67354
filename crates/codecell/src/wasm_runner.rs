//! `WasmToolRunner`: runs a dynamic tool's `execute(args)` in a fresh wasm guest, the way the
//! seed's `DynamicToolWorker` runs it in a fresh sandboxed subprocess: the payload is bounded
//! before anything starts, the result is bounded and parsed after, and every failure becomes a
//! [`RunError`] (never a panic).

use codecell_engine::{CallerBudget, Engine, Failure, Limits};
use codecell_manifest::manifest::{MAX_INPUT_CHARS, MAX_OUTPUT_CHARS};
use codecell_manifest::{Manifest, RunError, RunFuture, ToolRunner, canonical};
use serde_json::{Value, json};

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
            return Err(RunError::Limit {
                kind: "input",
                message: format!(
                    "dynamic tool input is too large: {input_chars} characters, over the limit of {MAX_INPUT_CHARS}"
                ),
            });
        }
        let args_json = canonical::to_string(args);
        // Called from a code-mode run, the tool runs under what that run has left, and the
        // fuel it uses is charged to it.
        let caller = CallerBudget::current();
        let limits = match &caller {
            Some(caller) => caller.clamp(&self.limits),
            None => self.limits.clone(),
        };
        let run = self
            .engine
            .run_tool(
                &manifest.implementation,
                &manifest.imports,
                &args_json,
                MAX_OUTPUT_CHARS,
                &limits,
            )
            .await
            .map_err(|e| RunError::Host(e.to_string()))?;
        if caller.is_some() {
            CallerBudget::charge(run.fuel_used);
        }
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
        return Err(RunError::Limit {
            kind: "output",
            message: format!(
                "dynamic tool output is too large: {chars} characters, over the limit of {MAX_OUTPUT_CHARS}"
            ),
        });
    }
    canonical::parse_exact(text).map_err(|e| RunError::InvalidOutput(e.to_string()))
}

/// The registry's error for a run that ended without a result. The failing line of the tool
/// tells its author where to look; the full traceback stays out of the message so it remains
/// short enough for a model to read.
fn run_error(failure: &Failure) -> RunError {
    let report = failure.report();
    if let Some(kind) = failure.limit() {
        return RunError::Limit {
            kind: kind.as_str(),
            message: report.message.clone(),
        };
    }
    let message = match report.line {
        Some(line) => format!("{} (line {line})", report.message),
        None => report.message.clone(),
    };
    RunError::Raised {
        kind: report.kind.clone(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codecell_engine::{ErrorReport, LimitKind};

    fn report(kind: &str, message: &str, line: Option<u32>) -> ErrorReport {
        ErrorReport {
            kind: kind.into(),
            message: message.into(),
            traceback: "Traceback (most recent call last):\n  File \"<tool>\", line 9\n".into(),
            line,
        }
    }

    #[test]
    fn a_limit_is_a_limit_whatever_its_message_says() {
        let failure = Failure::Limit {
            kind: LimitKind::Fuel,
            report: report("OutOfFuel", "the run used all of its fuel", None),
        };
        assert_eq!(
            run_error(&failure),
            RunError::Limit {
                kind: "fuel",
                message: "the run used all of its fuel".into()
            }
        );
        let spoof = Failure::Error(report(
            "RuntimeError",
            "dynamic tool output exceeds 1000000 characters",
            Some(3),
        ));
        assert!(matches!(run_error(&spoof), RunError::Raised { .. }));
    }

    #[test]
    fn the_failing_line_comes_from_the_report_not_the_traceback_text() {
        let raised = run_error(&Failure::Error(report("ValueError", "bad", Some(3))));
        assert_eq!(
            raised,
            RunError::Raised {
                kind: "ValueError".into(),
                message: "bad (line 3)".into()
            }
        );
        let lineless = run_error(&Failure::Error(report("ValueError", "bad", None)));
        assert!(matches!(lineless, RunError::Raised { message, .. } if message == "bad"));
    }

    #[test]
    fn results_over_the_limit_or_not_exact_json_are_refused() {
        let big = format!("\"{}\"", "x".repeat(MAX_OUTPUT_CHARS));
        assert!(matches!(
            parse_result(&big),
            Err(RunError::Limit { kind: "output", .. })
        ));
        assert!(matches!(
            parse_result("NaN"),
            Err(RunError::InvalidOutput(_))
        ));
        assert_eq!(parse_result("{\"a\":1}").unwrap(), json!({"a": 1}));
    }
}
