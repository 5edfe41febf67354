//! [`CodecellServer`]: the MCP server handler. `execute_code` always; with dynamic tools, the
//! three tools a model may use to author and call them.

use std::sync::Arc;

use codecell::{CodeMode, DynamicTools, EngineError, Outcome, SessionManager};
use rmcp::ErrorData;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};

use crate::dynamic_tools;
use crate::error::ServeError;
use crate::execute;

/// The MCP server: one engine behind every request, each `execute_code` a fresh guest.
///
/// Cheap to clone (the HTTP transport makes one per request). Promotion, activation and
/// rollback of dynamic tools need approval and are never offered to the model.
#[derive(Clone)]
pub struct CodecellServer {
    code_mode: CodeMode,
    sessions: Option<SessionManager>,
    dynamic: Option<Arc<DynamicTools>>,
    tools: Arc<Vec<Tool>>,
    instructions: Arc<str>,
}

impl std::fmt::Debug for CodecellServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodecellServer")
            .field(
                "tools",
                &self.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl CodecellServer {
    /// A server offering `execute_code` over `code_mode`'s catalog and limits.
    pub fn new(code_mode: CodeMode) -> Self {
        let tools = vec![execute::tool(&code_mode, false)];
        let instructions = code_mode.system_prompt().into();
        CodecellServer {
            code_mode,
            sessions: None,
            dynamic: None,
            tools: Arc::new(tools),
            instructions,
        }
    }

    /// Lets `execute_code` take a `session_id` (`"new"` starts one) whose turns share one
    /// interpreter; `sessions` holds them, under its caps.
    pub fn with_sessions(mut self, sessions: SessionManager) -> Self {
        let mut tools = (*self.tools).clone();
        tools[0] = execute::tool(&self.code_mode, true);
        self.tools = Arc::new(tools);
        self.sessions = Some(sessions);
        self
    }

    /// Also offers `define_tool`, `list_dynamic_tools` and `invoke_dynamic_tool` on `store`.
    pub fn with_dynamic_tools(mut self, store: DynamicTools) -> Self {
        let mut tools = (*self.tools).clone();
        tools.extend(dynamic_tools::tools());
        self.tools = Arc::new(tools);
        self.dynamic = Some(Arc::new(store));
        self
    }

    /// The tools `tools/list` returns.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The server's `instructions`: the code-mode system prompt.
    pub fn instructions(&self) -> &str {
        &self.instructions
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ServeError> {
        let arguments = request.arguments.as_ref();
        match (request.name.as_ref(), &self.dynamic) {
            ("execute_code", _) => {
                let args = execute::arguments(arguments, self.sessions.is_some())?;
                match (args.session_id, &self.sessions) {
                    (Some(id), Some(sessions)) => {
                        self.session_turn(sessions, id, &args.code, &context).await
                    }
                    _ => {
                        let run = async {
                            self.code_mode
                                .execute_code(&args.code)
                                .await
                                .map_err(ServeError::Run)
                        };
                        let outcome = execute::run(run, &context).await?;
                        log(&outcome, None);
                        Ok(execute::result(&outcome).into())
                    }
                }
            }
            (name, Some(store)) if dynamic_tools::NAMES.contains(&name) => {
                Ok(dynamic_tools::call(store, name, arguments, &context)
                    .await?
                    .into())
            }
            (name, _) => Err(ServeError::UnknownTool(
                execute::clip(name, 128).to_string(),
            )),
        }
    }
}

impl CodecellServer {
    /// One turn of session `id` (`"new"`: a session started for it). A session that ended, or
    /// an unknown id, is a tool error the model can read, not a protocol error.
    async fn session_turn(
        &self,
        sessions: &SessionManager,
        id: String,
        code: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ServeError> {
        let id = if id == "new" {
            match sessions.create().await {
                Ok(id) => id,
                Err(e) => return Ok(refusal(&e.to_string())),
            }
        } else {
            id
        };
        let turn = execute::run(async { Ok(sessions.execute(&id, code).await) }, context).await?;
        match turn {
            Ok(turn) => {
                log(&turn.outcome, Some(&id));
                Ok(execute::session_result(&turn, &id).into())
            }
            Err(e @ (EngineError::UnknownSession { .. } | EngineError::SessionEnded { .. })) => {
                Ok(refusal(&format!(
                    "{e}. Start a new session with session_id \"new\"."
                )))
            }
            Err(e) => Err(ServeError::Run(e.into())),
        }
    }
}

/// A tool error result with `message` for the model.
fn refusal(message: &str) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(message.to_string())]).into()
}

fn log(outcome: &Outcome, session: Option<&str>) {
    tracing::info!(
        status = outcome.status().as_str(),
        duration_ms = outcome.duration_ms,
        tool_calls = outcome.tool_calls.len(),
        session,
        "execute_code"
    );
}

impl ServerHandler for CodecellServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("codecell", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.instructions.to_string())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items((*self.tools).clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(request, context)
            .await
            .map_err(ServeError::into_error_data)
    }
}
