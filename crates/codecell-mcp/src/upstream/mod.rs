//! Upstream MCP servers as categories: a catalog file's `"mcpServers"` (see [`config`]) are
//! started when the catalog loads, their `tools/list` becomes specs, stubs and index entries,
//! and `call_tool` on them sends `tools/call`.

pub mod config;
mod connection;

use std::path::Path;

use codecell::{Catalog, DynamicResolver, ServerCategory, ToolSpec, read_catalog_file};
use rmcp::model::Tool;
use serde_json::Value;

use crate::error::UpstreamError;
use connection::{Started, Upstream, UpstreamTool};

/// Loads a catalog file; each server of its `"mcpServers"` is started (all at once) and
/// becomes a category after the file's own. `resolver` answers `{"dynamic": name}` handlers.
pub async fn load_catalog(
    path: &Path,
    resolver: Option<DynamicResolver<'_>>,
) -> Result<Catalog, UpstreamError> {
    let origin = path.display().to_string();
    let (text, base_dir) = read_catalog_file(path)?;
    let base_dir = std::path::absolute(&base_dir).unwrap_or(base_dir);
    let servers = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(mut root)) => root.remove("mcpServers"),
        // The catalog parser reports what is wrong with it, with its position.
        _ => None,
    };
    let configs = match &servers {
        Some(servers) => config::parse(servers, &base_dir).map_err(|(server, message)| {
            UpstreamError::Config {
                origin: origin.clone(),
                server,
                message,
            }
        })?,
        None => Vec::new(),
    };
    let mut starting = tokio::task::JoinSet::new();
    for (i, config) in configs.into_iter().enumerate() {
        starting.spawn(async move {
            let name = config.name.clone();
            let description = config.description.clone();
            (i, name, description, Upstream::start(config).await)
        });
    }
    let mut started = Vec::new();
    while let Some(joined) = starting.join_next().await {
        let (i, name, description, result) = joined.map_err(|e| UpstreamError::Start {
            server: String::new(),
            message: e.to_string(),
        })?;
        let started_server = result.map_err(|message| UpstreamError::Start {
            server: name.clone(),
            message,
        })?;
        started.push((i, category(name, description, started_server)));
    }
    started.sort_by_key(|(i, _)| *i);
    let categories: Vec<ServerCategory> = started.into_iter().map(|(_, c)| c).collect();
    Ok(Catalog::from_json_with_servers(
        &text,
        &base_dir,
        &origin,
        resolver,
        &categories,
    )?)
}

fn category(name: String, description: Option<String>, started: Started) -> ServerCategory {
    let description = description.unwrap_or_else(|| match &started.title {
        Some(title) => format!("MCP server {title}"),
        None => format!("MCP server {name}"),
    });
    let tools = started
        .tools
        .into_iter()
        .map(|tool| {
            let handler = std::sync::Arc::new(UpstreamTool {
                upstream: started.upstream.clone(),
                name: tool.name.to_string(),
            }) as std::sync::Arc<dyn codecell::Handler>;
            (spec(tool), handler)
        })
        .collect();
    ServerCategory {
        name,
        description,
        tools,
    }
}

/// A listed tool as a spec; its read-only and destructive hints lead its description.
fn spec(tool: Tool) -> ToolSpec {
    let mut description = tool.description.as_deref().unwrap_or_default().to_string();
    if let Some(hints) = &tool.annotations {
        let mut marks = Vec::new();
        if hints.read_only_hint == Some(true) {
            marks.push("read-only");
        }
        if hints.destructive_hint == Some(true) && hints.read_only_hint != Some(true) {
            marks.push("destructive");
        }
        if !marks.is_empty() {
            description = format!("({}) {description}", marks.join(", "));
        }
    }
    ToolSpec {
        name: tool.name.to_string(),
        description,
        input_schema: Value::Object((*tool.input_schema).clone()),
        output_schema: tool.output_schema.map(|s| Value::Object((*s).clone())),
    }
}
