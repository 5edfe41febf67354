//! `CodeMode`: the `execute_code` tool and the prompt that teaches a model to use it.

use crate::error::Error;
use crate::prompt;
use codecell_catalog::{Catalog, ToolSpec};
use codecell_engine::{Engine, Journal, Limits, Outcome, Session, SessionLimits};
use serde_json::json;

/// Code mode over one catalog: every `execute_code` runs in a fresh guest. Cheap to clone.
#[derive(Clone, Debug)]
pub struct CodeMode {
    engine: Engine,
    catalog: Option<Catalog>,
    limits: Limits,
}

impl CodeMode {
    /// Code mode over `catalog`, with [`Limits::default`].
    pub fn new(engine: Engine, catalog: Catalog) -> Self {
        CodeMode {
            engine,
            catalog: Some(catalog),
            limits: Limits::default(),
        }
    }

    /// Code mode with no tools: `ls`, `read` and `call_tool` raise in the guest.
    pub fn without_tools(engine: Engine) -> Self {
        CodeMode {
            engine,
            catalog: None,
            limits: Limits::default(),
        }
    }

    /// Replaces the limits every run is held to.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits every run is held to.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The catalog behind `ls`, `read` and `call_tool`.
    pub fn catalog(&self) -> Option<&Catalog> {
        self.catalog.as_ref()
    }

    /// The engine every run uses.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Runs `code` in a fresh guest; guest errors and limits are in the [`Outcome`].
    pub async fn execute_code(&self, code: &str) -> Result<Outcome, Error> {
        Ok(self
            .engine
            .run_snippet(code, self.catalog.clone(), &self.limits)
            .await?)
    }

    /// A session over this code mode's catalog: turns keep their globals, each held to this
    /// code mode's limits (see [`Session`]).
    pub async fn session(&self, session_limits: SessionLimits) -> Result<Session, Error> {
        Ok(Session::new(
            &self.engine,
            self.catalog.clone(),
            self.limits.clone(),
            session_limits,
        )
        .await?)
    }

    /// A session restored from `journal` (saved by [`Session::save`]) over this catalog.
    pub async fn restore_session(
        &self,
        session_limits: SessionLimits,
        journal: Journal,
    ) -> Result<Session, Error> {
        Ok(Session::restore(
            &self.engine,
            self.catalog.clone(),
            self.limits.clone(),
            session_limits,
            journal,
        )
        .await?)
    }

    /// The system-prompt section that teaches a model the tree and `call_tool`.
    pub fn system_prompt(&self) -> String {
        prompt::prompt(self.catalog.as_ref())
    }

    /// The `execute_code` tool definition to hand to the model (MCP field names).
    pub fn execute_code_tool(&self) -> ToolSpec {
        ToolSpec {
            name: "execute_code".to_string(),
            description:
                "Run Python code that explores the tools with ls() and read(), calls them with \
                          call_tool(), and print()s the results."
                    .to_string(),
            input_schema: json!({
                "type": "object",
                "properties": {"code": {"type": "string", "description": "Python source code to run."}},
                "required": ["code"],
                "additionalProperties": false
            }),
            output_schema: None,
        }
    }

    /// Renders an outcome as the text a model reads back: its output, then what went wrong.
    pub fn render_for_model(outcome: &Outcome) -> String {
        let mut text = outcome.stdout.clone();
        if outcome.truncated {
            text.push_str("\n... (output truncated)");
        }
        if let Some(error) = outcome.error() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            if error.traceback.is_empty() {
                text.push_str(&format!("{}: {}", error.kind, error.message));
            } else {
                text.push_str(error.traceback.trim_end());
            }
        }
        if text.is_empty() {
            text.push_str("(no output)");
        }
        text
    }
}
