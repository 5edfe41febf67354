//! `codecell serve`: `execute_code` (and, with `--store`, dynamic tools) as an MCP server.
//! Stdout is the protocol on stdio, so everything else goes to stderr, at `--log-level`.

use crate::failure::Failure;
use crate::run_cmd::SandboxArgs;
use crate::store_args::DynamicStoreArgs;
use clap::{Args, ValueEnum};
use codecell::{SessionLimits, SessionManager, SessionManagerLimits};
use codecell_mcp::{CodecellServer, HttpOptions};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    sandbox: SandboxArgs,
    /// Serve streamable HTTP at `http://ADDR/mcp` instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// With `--http`: a `Host` name (or `host:port`) to serve besides the loopback names;
    /// repeatable. Needed when clients reach the server by another name.
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// Sessions `execute_code` may keep alive at once (`session_id`); 0 turns sessions off.
    #[arg(long, default_value_t = 16)]
    max_sessions: usize,
    /// Seconds a session may wait between turns before it is dropped.
    #[arg(long, default_value_t = 600)]
    session_idle_s: u64,
    /// What to log on stderr.
    #[arg(long, default_value = "warn")]
    log_level: LogLevel,
    /// `--store DIR --session ID [--project ID]`: also offer define_tool, list_dynamic_tools
    /// and invoke_dynamic_tool, and resolve the catalog's `{"dynamic": name}` handlers.
    #[command(flatten)]
    dynamic: DynamicStoreArgs,
}

/// How much `codecell serve` logs.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
}

impl LogLevel {
    fn filter(self) -> tracing::level_filters::LevelFilter {
        use tracing::level_filters::LevelFilter;
        match self {
            LogLevel::Error => LevelFilter::ERROR,
            LogLevel::Warn => LevelFilter::WARN,
            LogLevel::Info => LevelFilter::INFO,
            LogLevel::Debug => LevelFilter::DEBUG,
        }
    }
}

pub async fn run(args: ServeArgs) -> Result<ExitCode, Failure> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(args.log_level.filter())
        .with_ansi(false)
        .init();
    let store = args.dynamic.open(args.sandbox.guest)?;
    let catalog = args.sandbox.catalog(store.as_ref()).await?;
    let code_mode = args.sandbox.code_mode(catalog, true)?;
    let sessions = (args.max_sessions > 0).then(|| {
        let session_limits = SessionLimits {
            idle_ttl: Duration::from_secs(args.session_idle_s),
            ..SessionLimits::default()
        };
        let caps = SessionManagerLimits {
            max_sessions: args.max_sessions,
            ..SessionManagerLimits::default()
        };
        SessionManager::new(
            code_mode.engine(),
            code_mode.catalog().cloned(),
            code_mode.limits().clone(),
            session_limits,
            caps,
        )
    });
    let mut server = CodecellServer::new(code_mode);
    if let Some(sessions) = sessions {
        // Idle sessions are dropped on every request; this also frees them when none comes.
        let sweeper = sessions.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(30));
            loop {
                every.tick().await;
                sweeper.evict_idle();
            }
        });
        server = server.with_sessions(sessions);
    }
    if let Some(store) = store {
        server = server.with_dynamic_tools(store);
    }
    let served = match args.http {
        None => codecell_mcp::serve_stdio(server).await,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| Failure::input(format!("cannot listen on {addr}: {e}")))?;
            let local = listener.local_addr().unwrap_or(addr);
            let mut options = HttpOptions::default();
            options.allowed_hosts.extend(args.allow_hosts);
            // Scripts that bind port 0 read the address from here.
            crate::out::stderr(&format!("codecell: serving MCP at http://{local}/mcp\n"));
            // Runs until the process is ended (Ctrl-C, SIGTERM): the server holds no state to save.
            codecell_mcp::serve_http(server, listener, &options, CancellationToken::new()).await
        }
    };
    served.map_err(|e| Failure::host(e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}
