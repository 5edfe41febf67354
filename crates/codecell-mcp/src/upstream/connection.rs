//! One upstream MCP server, over stdio or streamable HTTP: connected when the catalog loads (its
//! `tools/list` makes the stubs), reconnected (a program restarted) on the next call after the
//! connection dies, each call under its timeout.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use codecell::{Handler, HandlerError, HandlerFuture};
use http::{HeaderName, HeaderValue};
use process_wrap::tokio::{CommandWrap, KillOnDrop};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, Tool};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::config::{ServerConfig, Transport};

/// How much of a server's stderr is kept, to explain why it failed.
const STDERR_TAIL_BYTES: usize = 2048;
/// How long a server that failed to start gets to finish writing its stderr.
const STDERR_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// The last bytes a server wrote to stderr.
#[derive(Default)]
struct StderrTail(Mutex<VecDeque<u8>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut tail = self.0.lock().unwrap_or_else(|e| e.into_inner());
        tail.extend(bytes);
        let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
        tail.drain(..excess);
    }

    /// `"; stderr: …"` when the server wrote anything, else nothing.
    fn describe(&self) -> String {
        let tail = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let bytes: Vec<u8> = tail.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim();
        if text.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends: {text}")
        }
    }
}

/// A running (or restartable) upstream server.
pub(crate) struct Upstream {
    config: ServerConfig,
    client: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
    stderr: Arc<StderrTail>,
}

/// What a server said about itself when it started.
pub(crate) struct Started {
    pub(crate) upstream: Arc<Upstream>,
    pub(crate) tools: Vec<Tool>,
    pub(crate) title: Option<String>,
}

impl Upstream {
    /// Starts the server and lists its tools, all within its startup timeout.
    pub(crate) async fn start(config: ServerConfig) -> Result<Started, String> {
        let upstream = Arc::new(Upstream {
            config,
            client: tokio::sync::Mutex::new(None),
            stderr: Arc::new(StderrTail::default()),
        });
        let peer = upstream.peer().await?;
        let limit = upstream.config.startup_timeout;
        let tools = match tokio::time::timeout(limit, peer.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => return Err(upstream.failed(&format!("tools/list failed: {e}"))),
            Err(_) => {
                return Err(upstream.failed(&format!(
                    "tools/list did not answer within {} ms",
                    limit.as_millis()
                )));
            }
        };
        let title = peer.peer_info().and_then(|info| {
            let implementation = info.server_info.as_ref()?;
            Some(match &implementation.title {
                Some(title) => title.clone(),
                None => format!("{} {}", implementation.name, implementation.version),
            })
        });
        Ok(Started {
            upstream,
            tools,
            title,
        })
    }

    fn failed(&self, what: &str) -> String {
        format!("{what}{}", self.stderr.describe())
    }

    /// The connection, (re)started when there is none or the server has gone.
    async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let mut client = self.client.lock().await;
        if let Some(running) = client.as_ref()
            && !running.is_closed()
            && !running.peer().is_transport_closed()
        {
            return Ok(running.peer().clone());
        }
        *client = None;
        let limit = self.config.startup_timeout;
        let running = match tokio::time::timeout(limit, self.connect()).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(self.failed(&format!(
                    "did not finish `initialize` within {} ms",
                    limit.as_millis()
                )));
            }
        };
        let peer = running.peer().clone();
        *client = Some(running);
        Ok(peer)
    }

    async fn connect(&self) -> Result<RunningService<RoleClient, ()>, String> {
        let mut drained = None;
        let served = match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let (transport, drain) = self.spawn(command, args, env, cwd)?;
                drained = drain;
                ().serve(transport).await
            }
            Transport::Http { url, headers } => {
                let headers = headers
                    .iter()
                    .filter_map(|(k, v)| {
                        Some((
                            HeaderName::from_bytes(k.as_bytes()).ok()?,
                            HeaderValue::from_str(v).ok()?,
                        ))
                    })
                    .collect::<HashMap<_, _>>();
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(headers);
                ().serve(StreamableHttpClientTransport::from_config(config))
                    .await
            }
        };
        match served {
            Ok(running) => Ok(running),
            Err(e) => {
                // A server that exited at once has said why on stderr: read it to the end.
                if let Some(drain) = drained {
                    let _ = tokio::time::timeout(STDERR_WAIT, drain).await;
                }
                Err(self.failed(&format!("`initialize` failed: {e}")))
            }
        }
    }

    fn spawn(
        &self,
        program: &Path,
        args: &[String],
        env: &BTreeMap<String, String>,
        cwd: &Path,
    ) -> Result<(TokioChildProcess, Option<tokio::task::JoinHandle<()>>), String> {
        let mut command = tokio::process::Command::new(program);
        command.args(args).current_dir(cwd).env_clear();
        // As for command tools: the host's PATH (so `npx`, `uvx` resolve), nothing else of its
        // environment but what the configuration lists.
        for name in [
            "PATH",
            #[cfg(windows)]
            "SystemRoot",
        ] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command.envs(env);
        let mut command = CommandWrap::from(command);
        command.wrap(KillOnDrop);
        // The server's own children (`npx` starts `node`) go with it.
        #[cfg(unix)]
        command.wrap(process_wrap::tokio::ProcessGroup::leader());
        #[cfg(windows)]
        command.wrap(process_wrap::tokio::JobObject);
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let drain = stderr.map(|mut stderr| {
            let tail = self.stderr.clone();
            tokio::spawn(async move {
                let mut buffer = [0u8; 1024];
                while let Ok(n) = stderr.read(&mut buffer).await {
                    if n == 0 {
                        break;
                    }
                    tail.push(&buffer[..n]);
                }
            })
        });
        Ok((transport, drain))
    }

    async fn call(&self, tool: &str, args: Value) -> Result<Value, HandlerError> {
        let name = &self.config.name;
        let peer = self
            .peer()
            .await
            .map_err(|e| HandlerError::new(format!("MCP server {name:?} is unavailable: {e}")))?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(arguments) = args {
            params = params.with_arguments(arguments);
        }
        let limit = self.config.call_timeout;
        // Dropping the call (timeout, or the run's deadline) tells the server it was cancelled.
        match tokio::time::timeout(limit, peer.call_tool(params)).await {
            Ok(Ok(result)) => tool_result(result),
            Ok(Err(e)) => Err(HandlerError::new(
                self.failed(&format!("MCP server {name:?} failed the call: {e}")),
            )),
            Err(_) => Err(HandlerError::new(format!(
                "MCP server {name:?} did not answer within {} ms",
                limit.as_millis()
            ))),
        }
    }
}

/// A tool result as the guest sees it: `structuredContent` when there is one, else the text
/// (JSON-decoded when it is JSON; a list when there are several); `isError` is a `ToolError`.
pub(crate) fn tool_result(result: CallToolResult) -> Result<Value, HandlerError> {
    let mut texts: Vec<Value> = result.content.iter().map(content_value).collect();
    if result.is_error == Some(true) {
        let message = texts
            .iter()
            .map(|t| match t {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        return Err(HandlerError::new(if message.is_empty() {
            "the tool reported an error".to_string()
        } else {
            message
        }));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    Ok(match texts.len() {
        0 => Value::Null,
        1 => texts.remove(0),
        _ => Value::Array(texts),
    })
}

fn content_value(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text(text) => {
            serde_json::from_str(&text.text).unwrap_or_else(|_| Value::String(text.text.clone()))
        }
        // Binary content is described, not passed: a guest cannot display it.
        other => {
            let mut value = serde_json::to_value(other).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut value
                && let Some(Value::String(data)) = map.get("data")
            {
                let len = data.len();
                map.insert(
                    "data".to_string(),
                    Value::String(format!("<{len} bytes of base64>")),
                );
            }
            value
        }
    }
}

/// The handler behind one upstream tool.
pub(crate) struct UpstreamTool {
    pub(crate) upstream: Arc<Upstream>,
    pub(crate) name: String,
}

impl Handler for UpstreamTool {
    fn call<'a>(&'a self, args: Value) -> HandlerFuture<'a> {
        Box::pin(self.upstream.call(&self.name, args))
    }
}
