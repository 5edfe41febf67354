//! codecell-mcp's integration tests: one binary, a module per concept.
//! `server`: the `execute_code` server driven in-process by rmcp's client.
//! `upstream`: real MCP servers (`server-everything`, `mcp-server-time`, an SDK-written
//! flaky one) as catalog categories; `.ci/install-mcp` installs them under `target/mcp/`.

mod common;
mod server;
mod sessions;
mod upstream;
