//! Shared helpers: the engine, fixture paths, and an rmcp client connected in-process.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use codecell::{BUILD_COMMAND, Engine};
use codecell_mcp::CodecellServer;
use rmcp::ClientHandler;
use rmcp::ServiceExt;
use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RoleClient, RunningService};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A path under `fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    root().join("fixtures").join(rel)
}

/// The process-wide CPython engine; panics with the build command when it is not built.
pub fn engine() -> Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE
        .get_or_init(|| match Engine::builder().build() {
            Ok(engine) => engine,
            Err(e) => panic!("{e}\n(build the guests with `{BUILD_COMMAND}`)"),
        })
        .clone()
}

/// Fails, naming the installer, when the upstream MCP servers are not installed.
pub fn require_mcp_servers() {
    let node_server = root()
        .join("target/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let python = root().join(if cfg!(windows) {
        "target/mcp/venv/Scripts/python.exe"
    } else {
        "target/mcp/venv/bin/python"
    });
    assert!(
        node_server.exists() && python.exists(),
        "the upstream MCP servers are not installed: run `bash .ci/install-mcp` (as .ci/run does; \
         needs node, npm and python3 with venv)"
    );
}

/// A client that records the progress notifications it receives.
#[derive(Clone, Default)]
pub struct Recorder {
    pub progress: Arc<Mutex<Vec<f64>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.progress);
    }
}

/// `server` served over an in-memory pipe, and a recording client connected to it.
pub async fn connect(server: CodecellServer) -> (RunningService<RoleClient, Recorder>, Recorder) {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let recorder = Recorder::default();
    let client = recorder
        .clone()
        .serve(client_io)
        .await
        .expect("the client connects to the in-process server");
    (client, recorder)
}

/// The text blocks of a tool result, joined.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}
