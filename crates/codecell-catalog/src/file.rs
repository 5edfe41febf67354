//! The catalog file the CLI reads:
//!
//! ```json
//! {"categories": [{"name": "...", "description": "...", "tools": [
//!   {"name": "...", "description": "...", "inputSchema": {...}, "outputSchema": {...},
//!    "handler": {"command": ["./tool.py", "--flag"], "timeout_ms": 5000, "max_output_bytes": 65536,
//!                "env": {"TOOL_MODE": "fast"}}}
//! ]}]}
//! ```
//!
//! A handler is `{"command": [argv…], "timeout_ms"?, "max_output_bytes"?, "env"?}` or
//! `{"dynamic": "name"}`. A command runs with the catalog file's directory as its working
//! directory, and an `argv[0]` starting with `./` or `../` is resolved against that directory
//! too. Its environment is empty but for the host's `PATH` (and `SystemRoot` on Windows) and what
//! `"env"` lists: an object of strings, at most [`MAX_ENV_VARS`] of them, names without `=` or
//! NUL, values without NUL and at most [`MAX_ARG_BYTES`] bytes; a listed `PATH` replaces the
//! host's. Nothing else of the host's environment reaches a tool. Unknown fields are refused
//! (a misspelt `input_schema` must not silently become "no schema"), except MCP's `title` and
//! `annotations` and a top-level `$schema`, which are ignored. Every error names the file, the JSON
//! path and the problem.
//!
//! A top-level `"mcpServers"` (upstream MCP servers, as Claude Desktop and Cursor list them) may
//! join or replace `"categories"`: codecell-mcp starts the servers and passes their tools to
//! [`Catalog::from_json_with_servers`]; the other loaders refuse it, since they cannot start them.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::builder::{CatalogBuilder, Where};
use crate::catalog::Catalog;
use crate::command::{CommandHandler, MAX_OUTPUT_BYTES, MAX_TIMEOUT};
use crate::error::{CatalogError, shorten};
use crate::handler::Handler;
use crate::spec::ToolSpec;

/// Largest catalog file accepted, in bytes.
pub const MAX_CATALOG_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Most entries in one command's argv.
pub const MAX_ARGV: usize = 256;
/// Longest argv entry, in bytes.
pub const MAX_ARG_BYTES: usize = 4096;

/// Most variables in one command's `"env"`.
pub const MAX_ENV_VARS: usize = 64;

/// Resolves `{"dynamic": name}` handlers to handlers, or `None` when no such tool exists.
pub type DynamicResolver<'r> = &'r dyn Fn(&str) -> Option<Arc<dyn Handler>>;

type Problem = (String, String);

fn problem(path: impl Into<String>, message: impl Into<String>) -> Problem {
    (path.into(), message.into())
}

/// Refuses keys outside `allowed` (and `ignored`), naming the first one found.
fn check_keys(
    obj: &Map<String, Value>,
    path: &str,
    allowed: &[&str],
    ignored: &[&str],
) -> Result<(), Problem> {
    for key in obj.keys() {
        if !allowed.contains(&key.as_str()) && !ignored.contains(&key.as_str()) {
            return Err(problem(
                path,
                format!(
                    "unknown field {:?} (expected {})",
                    shorten(key, 60),
                    allowed.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn object<'v>(v: &'v Value, path: &str) -> Result<&'v Map<String, Value>, Problem> {
    v.as_object()
        .ok_or_else(|| problem(path, format!("must be an object, found {}", kind(v))))
}

fn string<'v>(obj: &'v Map<String, Value>, path: &str, key: &str) -> Result<&'v str, Problem> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(problem(
            format!("{path}.{key}"),
            format!("must be a string, found {}", kind(v)),
        )),
        None => Err(problem(path, format!("missing field {key:?}"))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A positive integer field no larger than `max`, if present.
fn bounded(
    obj: &Map<String, Value>,
    path: &str,
    key: &str,
    max: u64,
) -> Result<Option<u64>, Problem> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if (1..=max).contains(&n) => Ok(Some(n)),
            _ => Err(problem(
                format!("{path}.{key}"),
                format!(
                    "must be an integer from 1 to {max}, found {}",
                    shorten(&v.to_string(), 40)
                ),
            )),
        },
    }
}

fn command_handler(
    obj: &Map<String, Value>,
    path: &str,
    base_dir: &Path,
) -> Result<Arc<dyn Handler>, Problem> {
    check_keys(
        obj,
        path,
        &["command", "timeout_ms", "max_output_bytes", "env"],
        &[],
    )?;
    let cpath = format!("{path}.command");
    let items = obj
        .get("command")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            problem(
                &cpath,
                "must be an array of strings: the program and its arguments",
            )
        })?;
    if items.is_empty() || items.len() > MAX_ARGV {
        return Err(problem(
            &cpath,
            format!("must have 1 to {MAX_ARGV} entries, found {}", items.len()),
        ));
    }
    let mut argv = Vec::with_capacity(items.len());
    for (k, item) in items.iter().enumerate() {
        let at = format!("{cpath}[{k}]");
        let s = item
            .as_str()
            .ok_or_else(|| problem(&at, format!("must be a string, found {}", kind(item))))?;
        if s.contains('\0') || s.len() > MAX_ARG_BYTES || (k == 0 && s.is_empty()) {
            return Err(problem(
                &at,
                format!("must be a non-empty string without NUL, at most {MAX_ARG_BYTES} bytes"),
            ));
        }
        argv.push(s.to_string());
    }
    if argv[0].starts_with("./") || argv[0].starts_with("../") {
        argv[0] = base_dir.join(&argv[0]).to_string_lossy().into_owned();
    }
    let mut handler = CommandHandler::new(argv).current_dir(base_dir);
    let max_ms = u64::try_from(MAX_TIMEOUT.as_millis()).unwrap_or(u64::MAX);
    if let Some(ms) = bounded(obj, path, "timeout_ms", max_ms)? {
        handler = handler.timeout(Duration::from_millis(ms));
    }
    if let Some(n) = bounded(obj, path, "max_output_bytes", MAX_OUTPUT_BYTES as u64)? {
        handler = handler.max_output_bytes(usize::try_from(n).unwrap_or(MAX_OUTPUT_BYTES));
    }
    if let Some(env) = obj.get("env") {
        for (name, value) in environment(env, &format!("{path}.env"))? {
            handler = handler.env(name, value);
        }
    }
    Ok(Arc::new(handler))
}

/// A command's `"env"`: an object of strings, with names and values the OS can take.
fn environment<'v>(v: &'v Value, path: &str) -> Result<Vec<(&'v str, &'v str)>, Problem> {
    let vars = object(v, path)?;
    if vars.len() > MAX_ENV_VARS {
        return Err(problem(
            path,
            format!("has {} variables; the limit is {MAX_ENV_VARS}", vars.len()),
        ));
    }
    let mut out = Vec::with_capacity(vars.len());
    for (name, value) in vars {
        let at = format!("{path}.{}", shorten(name, 60));
        // `=` would split the name; NUL cannot be passed to the OS at all.
        if name.is_empty() || name.contains(['=', '\0']) || name.len() > MAX_ARG_BYTES {
            return Err(problem(
                &at,
                format!(
                    "is not a usable variable name: non-empty, without '=' or NUL, at most {MAX_ARG_BYTES} bytes"
                ),
            ));
        }
        let value = value
            .as_str()
            .ok_or_else(|| problem(&at, format!("must be a string, found {}", kind(value))))?;
        if value.contains('\0') || value.len() > MAX_ARG_BYTES {
            return Err(problem(
                &at,
                format!("must be a string without NUL, at most {MAX_ARG_BYTES} bytes"),
            ));
        }
        out.push((name.as_str(), value));
    }
    Ok(out)
}

fn handler(
    v: &Value,
    path: &str,
    base_dir: &Path,
    resolver: Option<DynamicResolver<'_>>,
) -> Result<Arc<dyn Handler>, Problem> {
    let obj = object(v, path)?;
    match (obj.get("command"), obj.get("dynamic")) {
        (Some(_), None) => command_handler(obj, path, base_dir),
        (None, Some(_)) => {
            check_keys(obj, path, &["dynamic"], &[])?;
            let name = string(obj, path, "dynamic")?;
            let dpath = format!("{path}.dynamic");
            let Some(resolve) = resolver else {
                return Err(problem(
                    dpath,
                    format!(
                        "dynamic tool {name:?} cannot be used here: this catalog was loaded without a dynamic-tool store"
                    ),
                ));
            };
            resolve(name).ok_or_else(|| problem(dpath, format!("no dynamic tool named {name:?}")))
        }
        (Some(_), Some(_)) => Err(problem(
            path,
            "has both \"command\" and \"dynamic\"; a handler is exactly one of them",
        )),
        (None, None) => Err(problem(
            path,
            "must be {\"command\": [argv…]} or {\"dynamic\": \"tool-name\"}",
        )),
    }
}

/// Walks the parsed file into a builder, or the first problem with its JSON path.
fn walk(
    root: &Value,
    base_dir: &Path,
    resolver: Option<DynamicResolver<'_>>,
    servers: Option<&[ServerCategory]>,
) -> Result<CatalogBuilder, Problem> {
    let top = object(root, "$")?;
    check_keys(top, "$", &["categories", "mcpServers"], &["$schema"])?;
    if servers.is_none() && top.contains_key("mcpServers") {
        return Err(problem(
            "mcpServers",
            "upstream MCP servers are started by codecell-mcp (`codecell_mcp::load_catalog`, \
             which the codecell CLI uses); this loader cannot start them",
        ));
    }
    let empty = Vec::new();
    let cats = match top.get("categories") {
        Some(Value::Array(c)) => c,
        Some(v) => {
            return Err(problem(
                "categories",
                format!("must be an array, found {}", kind(v)),
            ));
        }
        None if top.contains_key("mcpServers") => &empty,
        None => return Err(problem("$", "missing field \"categories\"")),
    };
    let mut builder = Catalog::builder();
    for (i, cat) in cats.iter().enumerate() {
        let cpath = format!("categories[{i}]");
        let c = object(cat, &cpath)?;
        check_keys(c, &cpath, &["name", "description", "tools"], &[])?;
        let name = string(c, &cpath, "name")?;
        builder = builder.category(name, string(c, &cpath, "description")?);
        let tools = match c.get("tools") {
            Some(Value::Array(t)) => t,
            Some(v) => {
                return Err(problem(
                    format!("{cpath}.tools"),
                    format!("must be an array, found {}", kind(v)),
                ));
            }
            None => return Err(problem(&cpath, "missing field \"tools\"")),
        };
        for (j, tool) in tools.iter().enumerate() {
            let tpath = format!("{cpath}.tools[{j}]");
            let t = object(tool, &tpath)?;
            check_keys(
                t,
                &tpath,
                &[
                    "name",
                    "description",
                    "inputSchema",
                    "outputSchema",
                    "handler",
                ],
                &["title", "annotations"],
            )?;
            let input = t
                .get("inputSchema")
                .ok_or_else(|| problem(&tpath, "missing field \"inputSchema\""))?;
            let h = t
                .get("handler")
                .ok_or_else(|| problem(&tpath, "missing field \"handler\""))?;
            let spec = ToolSpec {
                name: string(t, &tpath, "name")?.to_string(),
                description: string(t, &tpath, "description")?.to_string(),
                input_schema: input.clone(),
                output_schema: t.get("outputSchema").cloned(),
            };
            let handler = handler(h, &format!("{tpath}.handler"), base_dir, resolver)?;
            builder = builder.tool(name, spec, handler);
        }
    }
    for server in servers.unwrap_or_default() {
        builder = builder.category(&server.name, &server.description);
        for (spec, handler) in &server.tools {
            builder = builder.tool(&server.name, spec.clone(), handler.clone());
        }
    }
    Ok(builder)
}

/// Where a problem is, as a JSON path: the file's categories come first, then the servers'.
fn json_path(w: Where, file_categories: usize, servers: &[ServerCategory]) -> String {
    let server = |i: usize| {
        let name = servers
            .get(i - file_categories)
            .map_or("", |s| s.name.as_str());
        format!("mcpServers.{}", shorten(name, 60))
    };
    match w {
        Where::Catalog => "categories".to_string(),
        Where::Category(i, field) if i >= file_categories => format!("{}.{field}", server(i)),
        Where::Tool(i, j, field) if i >= file_categories => {
            let tool = servers
                .get(i - file_categories)
                .and_then(|s| s.tools.get(j))
                .map_or("", |t| t.0.name.as_str());
            format!("{} tool {:?}: {field}", server(i), shorten(tool, 60))
        }
        Where::Category(i, field) => format!("categories[{i}].{field}"),
        Where::Tool(i, j, field) => format!("categories[{i}].tools[{j}].{field}"),
    }
}

/// One upstream MCP server of a catalog file's `"mcpServers"`, as the category a loader made
/// of it (codecell-mcp does); it comes after the file's own categories.
pub struct ServerCategory {
    /// The server's key in `"mcpServers"`: the category name.
    pub name: String,
    /// The category description.
    pub description: String,
    /// Its tools, each with the handler that calls the server.
    pub tools: Vec<(ToolSpec, Arc<dyn Handler>)>,
}

impl std::fmt::Debug for ServerCategory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerCategory")
            .field("name", &self.name)
            .field(
                "tools",
                &self.tools.iter().map(|t| &t.0.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// Parses catalog text; `origin` names it in errors, `base_dir` anchors relative commands.
pub(crate) fn parse(
    text: &str,
    base_dir: &Path,
    origin: &str,
    resolver: Option<DynamicResolver<'_>>,
    servers: Option<&[ServerCategory]>,
) -> Result<Catalog, CatalogError> {
    if text.len() as u64 > MAX_CATALOG_FILE_BYTES {
        return Err(CatalogError::TooLarge {
            origin: origin.to_string(),
            size: text.len() as u64,
            max: MAX_CATALOG_FILE_BYTES,
        });
    }
    let root: Value = serde_json::from_str(text).map_err(|e| CatalogError::Json {
        origin: origin.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    // Commands run with this as their working directory: it must not depend on ours.
    let base: PathBuf = std::path::absolute(base_dir).unwrap_or_else(|_| base_dir.to_path_buf());
    let builder =
        walk(&root, &base, resolver, servers).map_err(|(path, message)| CatalogError::Invalid {
            origin: origin.to_string(),
            path,
            message,
        })?;
    let file_categories = root
        .get("categories")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let servers = servers.unwrap_or_default();
    builder.build_located(origin, &|w| json_path(w, file_categories, servers))
}

/// Reads a catalog file, bounded by [`MAX_CATALOG_FILE_BYTES`]: its text, and the directory
/// its relative commands resolve against.
pub fn read_catalog_file(path: &Path) -> Result<(String, PathBuf), CatalogError> {
    let origin = path.display().to_string();
    let io = |source| CatalogError::Io {
        origin: origin.clone(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut text = String::new();
    file.take(MAX_CATALOG_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(io)?;
    let base_dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((text, base_dir))
}

/// Reads a catalog file (bounded) and parses it.
pub(crate) fn load(
    path: &Path,
    resolver: Option<DynamicResolver<'_>>,
) -> Result<Catalog, CatalogError> {
    let (text, base_dir) = read_catalog_file(path)?;
    parse(
        &text,
        &base_dir,
        &path.display().to_string(),
        resolver,
        None,
    )
}

impl Catalog {
    /// Loads the CLI's catalog file; `{"dynamic": …}` handlers are refused (no resolver).
    pub fn from_file(path: &Path) -> Result<Catalog, CatalogError> {
        load(path, None)
    }

    /// Loads a catalog file, resolving `{"dynamic": name}` handlers with `resolver`.
    pub fn from_file_with(
        path: &Path,
        resolver: DynamicResolver<'_>,
    ) -> Result<Catalog, CatalogError> {
        load(path, Some(resolver))
    }

    /// Parses catalog text; `origin` names it in errors; `./` commands resolve against `base_dir`.
    pub fn from_json_str(
        text: &str,
        base_dir: &Path,
        origin: &str,
    ) -> Result<Catalog, CatalogError> {
        parse(text, base_dir, origin, None, None)
    }

    /// Parses catalog text, resolving `{"dynamic": name}` handlers with `resolver`.
    pub fn from_json_with(
        text: &str,
        base_dir: &Path,
        origin: &str,
        resolver: DynamicResolver<'_>,
    ) -> Result<Catalog, CatalogError> {
        parse(text, base_dir, origin, Some(resolver), None)
    }

    /// Parses catalog text whose `"mcpServers"` the caller has already turned into `servers`,
    /// one category each (codecell-mcp does; the other loaders refuse `"mcpServers"`).
    pub fn from_json_with_servers(
        text: &str,
        base_dir: &Path,
        origin: &str,
        resolver: Option<DynamicResolver<'_>>,
        servers: &[ServerCategory],
    ) -> Result<Catalog, CatalogError> {
        parse(text, base_dir, origin, resolver, Some(servers))
    }
}
