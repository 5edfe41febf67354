//! The transports: stdio, and stateless streamable HTTP at `/mcp`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::error::ServeError;
use crate::server::CodecellServer;

/// The path [`serve_http`] answers at.
pub const MCP_PATH: &str = "/mcp";

/// Most HTTP connections served at once; more wait to be accepted.
pub const MAX_CONNECTIONS: usize = 512;

/// A connection that has not sent its request headers by then is closed.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `server` over stdin and stdout until the client closes them.
pub async fn serve_stdio(server: CodecellServer) -> Result<(), ServeError> {
    let running =
        server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServeError::Transport {
                context: "cannot start the MCP session on stdio",
                source: Box::new(e),
            })?;
    running.waiting().await.map_err(|e| ServeError::Transport {
        context: "the MCP session on stdio failed",
        source: Box::new(e),
    })?;
    Ok(())
}

/// Options of the HTTP transport.
///
/// Secure defaults:
/// - only requests whose `Host` is a loopback name (`localhost`, `127.0.0.1`, `::1`) are
///   served, against DNS rebinding; a public deployment lists its own host names;
/// - stateless: no session is kept between requests, so copies behind a load balancer share
///   nothing;
/// - request bodies are bounded (rmcp's limit).
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// `Host` names (or `host:port`) served; empty means any host.
    pub allowed_hosts: Vec<String>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
        }
    }
}

/// The MCP endpoint as a tower service, to mount in an application of your own, e.g. with
/// axum: `Router::new().nest_service("/mcp", http_service(server, options, token))`.
/// Cancelling `shutdown` ends every request in flight.
pub fn http_service(
    server: CodecellServer,
    options: &HttpOptions,
    shutdown: CancellationToken,
) -> StreamableHttpService<CodecellServer, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_cancellation_token(shutdown);
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// Serves `server` over HTTP/1.1 at [`MCP_PATH`] on `listener` until `shutdown` is cancelled.
pub async fn serve_http(
    server: CodecellServer,
    listener: TcpListener,
    options: &HttpOptions,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let service = http_service(server, options, shutdown.child_token());
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let permit = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            permit = slots.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
        };
        let (stream, _) = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of descriptors or a reset before accept: the listener itself is fine.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let service = service.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let route = hyper::service::service_fn(move |request: Request<Incoming>| {
                let service = service.clone();
                async move { Ok::<_, Infallible>(route(&service, request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), route);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = shutdown.cancelled() => connection.as_mut().graceful_shutdown(),
            }
        });
    }
}

async fn route(
    service: &StreamableHttpService<CodecellServer, NeverSessionManager>,
    request: Request<Incoming>,
) -> Response<http_body_util::combinators::BoxBody<Bytes, Infallible>> {
    if request.uri().path() == MCP_PATH {
        return service.handle(request).await;
    }
    let mut response = Response::new(
        Full::new(Bytes::from_static(b"not found: the MCP endpoint is /mcp\n")).boxed(),
    );
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}
