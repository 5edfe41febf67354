//! A catalog file's `"mcpServers"`, in the format Claude Desktop and Cursor use:
//!
//! ```json
//! {"mcpServers": {
//!   "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
//!   "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],
//!                  "timeout_ms": 10000}
//! }}
//! ```
//!
//! Each key becomes a category. A server is a program (`command`, `args`, `env`, `cwd`
//! relative to the catalog file) spoken to over stdio, or a `url` (`http://…`, streamable HTTP,
//! with `headers`). Either takes `description` (the category's, else the server's own title),
//! `timeout_ms` (each call, default [`DEFAULT_CALL_TIMEOUT`]) and `startup_timeout_ms`
//! (`initialize` and `tools/list`, default [`DEFAULT_STARTUP_TIMEOUT`]). `"disabled": true`
//! skips a server; `type` (`"stdio"`, `"http"`, `"streamable-http"`) and the clients' own
//! `autoApprove` / `alwaysAllow` are accepted, so a configuration can be pasted as it is. Any
//! other field is refused. `https://` URLs are refused: this build has no TLS client (put a
//! local proxy in front, or run the server over stdio).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

/// Each call to an upstream tool is cut off after this long unless `timeout_ms` says otherwise
/// (and always by the run's own deadline).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Spawning a server, `initialize` and `tools/list` must be done within this.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest `timeout_ms` / `startup_timeout_ms` accepted.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Most servers in one catalog.
pub const MAX_SERVERS: usize = 64;
/// Most `args` of one server, and most `env` variables.
pub const MAX_ARGS: usize = 256;
/// Longest command, argument, variable or description, in bytes.
pub const MAX_FIELD_BYTES: usize = 16 * 1024;

const FIELDS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "description",
    "timeout_ms",
    "startup_timeout_ms",
    "disabled",
    "type",
];
const IGNORED: &[&str] = &["autoApprove", "alwaysAllow"];

/// One upstream server: how to reach it and how long to wait for it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The key in `"mcpServers"`: the category name.
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// The category description, when given.
    pub description: Option<String>,
    /// Each call's timeout.
    pub call_timeout: Duration,
    /// The startup timeout.
    pub startup_timeout: Duration,
}

/// Parses `"mcpServers"`; `base_dir` is the catalog file's directory. Errors name the server.
pub fn parse(servers: &Value, base_dir: &Path) -> Result<Vec<ServerConfig>, (String, String)> {
    let Value::Object(servers) = servers else {
        return Err((
            String::new(),
            "must be an object of servers by name".to_string(),
        ));
    };
    if servers.len() > MAX_SERVERS {
        return Err((
            String::new(),
            format!("{} servers; the limit is {MAX_SERVERS}", servers.len()),
        ));
    }
    let mut out = Vec::with_capacity(servers.len());
    for (name, entry) in servers {
        let fail = |message: String| (clip(name).to_string(), message);
        let Value::Object(entry) = entry else {
            return Err(fail("must be an object".to_string()));
        };
        if entry.get("disabled") == Some(&Value::Bool(true)) {
            continue;
        }
        out.push(server(name, entry, base_dir).map_err(fail)?);
    }
    Ok(out)
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Transport {
    /// A program spoken to over its stdin and stdout.
    Stdio {
        /// The program; looked up on `PATH` unless it contains a path separator (then
        /// relative to the catalog file's directory).
        command: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Its whole environment besides `PATH` (and `SystemRoot` on Windows).
        env: BTreeMap<String, String>,
        /// Its working directory (default: the catalog file's directory).
        cwd: PathBuf,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// `http://host:port/path`.
        url: String,
        /// Sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

fn server(name: &str, entry: &Map<String, Value>, base_dir: &Path) -> Result<ServerConfig, String> {
    if name.is_empty() || name.len() > 128 || name.chars().any(char::is_control) {
        return Err("a server name must be 1 to 128 bytes without control characters".to_string());
    }
    if let Some(key) = entry
        .keys()
        .find(|k| !FIELDS.contains(&k.as_str()) && !IGNORED.contains(&k.as_str()))
    {
        return Err(format!(
            "unknown field {:?} (expected {})",
            clip(key),
            FIELDS.join(", ")
        ));
    }
    let http = match entry.get("type") {
        None => entry.contains_key("url"),
        Some(Value::String(t)) if t == "stdio" => false,
        Some(Value::String(t)) if t == "http" || t == "streamable-http" => true,
        Some(other) => {
            return Err(format!(
                "type must be \"stdio\", \"http\" or \"streamable-http\", found {}",
                clip(&other.to_string())
            ));
        }
    };
    let transport = if http {
        http_transport(entry)?
    } else {
        stdio_transport(entry, base_dir)?
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        description: string(entry, "description")?.map(str::to_string),
        call_timeout: timeout(entry, "timeout_ms")?.unwrap_or(DEFAULT_CALL_TIMEOUT),
        startup_timeout: timeout(entry, "startup_timeout_ms")?.unwrap_or(DEFAULT_STARTUP_TIMEOUT),
    })
}

fn refuse_fields(entry: &Map<String, Value>, fields: &[&str], kind: &str) -> Result<(), String> {
    match fields.iter().find(|f| entry.contains_key(**f)) {
        Some(field) => Err(format!(
            "{field:?} does not apply to a server reached by {kind}"
        )),
        None => Ok(()),
    }
}

fn http_transport(entry: &Map<String, Value>) -> Result<Transport, String> {
    refuse_fields(entry, &["command", "args", "env", "cwd"], "url")?;
    let url = string(entry, "url")?.ok_or("missing field \"url\"")?;
    if url.starts_with("https://") {
        return Err(
            "https:// servers need a TLS client, which this build does not have: reach the \
             server through a local proxy, or run it over stdio"
                .to_string(),
        );
    }
    if !url.starts_with("http://") {
        return Err(format!(
            "url must start with http://, found {:?}",
            clip(url)
        ));
    }
    let headers = match entry.get("headers") {
        None => BTreeMap::new(),
        Some(Value::Object(headers)) if headers.len() <= MAX_ARGS => headers
            .iter()
            .map(|(k, v)| match v {
                Value::String(s)
                    if http::HeaderName::from_bytes(k.as_bytes()).is_ok()
                        && http::HeaderValue::from_str(s).is_ok() =>
                {
                    Ok((k.clone(), s.clone()))
                }
                _ => Err(format!(
                    "headers {:?}: must be a valid header name with a string value of visible \
                     ASCII",
                    clip(k)
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(format!(
                "headers must be an object of at most {MAX_ARGS} strings"
            ));
        }
    };
    Ok(Transport::Http {
        url: url.to_string(),
        headers,
    })
}

fn stdio_transport(entry: &Map<String, Value>, base_dir: &Path) -> Result<Transport, String> {
    refuse_fields(entry, &["url", "headers"], "command")?;
    let command = string(entry, "command")?.ok_or("missing field \"command\"")?;
    if command.is_empty() {
        return Err("command must not be empty".to_string());
    }
    let command = PathBuf::from(command);
    let command = if command.components().count() > 1 && command.is_relative() {
        base_dir.join(command)
    } else {
        command
    };
    let args = match entry.get("args") {
        None => Vec::new(),
        Some(Value::Array(items)) if items.len() <= MAX_ARGS => items
            .iter()
            .map(|a| match a {
                Value::String(s) if s.len() <= MAX_FIELD_BYTES && !s.contains('\0') => {
                    Ok(s.clone())
                }
                _ => Err(format!(
                    "args must be strings of at most {MAX_FIELD_BYTES} bytes without NUL"
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(format!(
                "args must be an array of at most {MAX_ARGS} strings"
            ));
        }
    };
    let env = match entry.get("env") {
        None => BTreeMap::new(),
        Some(Value::Object(vars)) if vars.len() <= MAX_ARGS => vars
            .iter()
            .map(|(k, v)| match v {
                Value::String(s)
                    if !k.is_empty()
                        && !k.contains(['=', '\0'])
                        && s.len() <= MAX_FIELD_BYTES
                        && !s.contains('\0') =>
                {
                    Ok((k.clone(), s.clone()))
                }
                _ => Err(format!(
                    "env {:?}: names must be non-empty without '=' or NUL, values strings \
                     without NUL of at most {MAX_FIELD_BYTES} bytes",
                    clip(k)
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(format!(
                "env must be an object of at most {MAX_ARGS} strings"
            ));
        }
    };
    let cwd = match string(entry, "cwd")? {
        Some(dir) => base_dir.join(dir),
        None => base_dir.to_path_buf(),
    };
    Ok(Transport::Stdio {
        command,
        args,
        env,
        cwd,
    })
}

fn string<'v>(entry: &'v Map<String, Value>, key: &str) -> Result<Option<&'v str>, String> {
    match entry.get(key) {
        None => Ok(None),
        Some(Value::String(s)) if s.len() <= MAX_FIELD_BYTES && !s.contains('\0') => {
            Ok(Some(s.as_str()))
        }
        Some(_) => Err(format!(
            "{key} must be a string of at most {MAX_FIELD_BYTES} bytes without NUL"
        )),
    }
}

fn timeout(entry: &Map<String, Value>, key: &str) -> Result<Option<Duration>, String> {
    let max = MAX_TIMEOUT.as_millis() as u64;
    match entry.get(key) {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(ms) if (1..=max).contains(&ms) => Ok(Some(Duration::from_millis(ms))),
            _ => Err(format!("{key} must be an integer from 1 to {max}")),
        },
    }
}

fn clip(text: &str) -> &str {
    crate::execute::clip(text, 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pasted_claude_desktop_entry_parses_with_its_client_fields_ignored() {
        let servers = json!({"time": {"command": "uvx", "args": ["mcp-server-time"],
            "env": {"TZ": "UTC"}, "autoApprove": [], "type": "stdio"}});
        let parsed = parse(&servers, Path::new("/cat")).unwrap();
        let Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } = &parsed[0].transport
        else {
            panic!("a stdio server: {parsed:?}");
        };
        assert_eq!(command, &PathBuf::from("uvx"));
        assert_eq!(args, &["mcp-server-time"]);
        assert_eq!(env["TZ"], "UTC");
        assert_eq!(cwd, &PathBuf::from("/cat"));
        assert_eq!(parsed[0].call_timeout, DEFAULT_CALL_TIMEOUT);
    }

    #[test]
    fn a_misspelt_field_a_url_server_and_a_bad_timeout_are_refused_naming_the_server() {
        for (entry, needle) in [
            (json!({"command": "x", "arg": []}), "unknown field \"arg\""),
            (json!({"url": "https://h/mcp"}), "TLS"),
            (json!({"url": "ftp://h"}), "must start with http://"),
            (
                json!({"url": "http://h", "command": "x"}),
                "\"command\" does not apply",
            ),
            (
                json!({"url": "http://h", "headers": {"bad name": "x"}}),
                "headers \"bad name\"",
            ),
            (json!({"command": "x", "type": "sse"}), "type must be"),
            (
                json!({"command": "x", "timeout_ms": 0}),
                "timeout_ms must be",
            ),
            (json!({"command": "x", "env": {"A=B": "c"}}), "env \"A=B\""),
            (json!({"args": []}), "missing field \"command\""),
        ] {
            let (server, message) = parse(&json!({"s": entry}), Path::new(".")).unwrap_err();
            assert_eq!(server, "s");
            assert!(message.contains(needle), "{message}");
        }
    }

    #[test]
    fn disabled_servers_are_skipped_and_relative_commands_resolve_against_the_catalog() {
        let servers = json!({"off": {"command": "x", "disabled": true},
                             "local": {"command": "./bin/server", "cwd": "work"}});
        let parsed = parse(&servers, Path::new("/cat")).unwrap();
        assert_eq!(parsed.len(), 1);
        let Transport::Stdio { command, cwd, .. } = &parsed[0].transport else {
            panic!("a stdio server: {parsed:?}");
        };
        assert_eq!(command, &PathBuf::from("/cat/./bin/server"));
        assert_eq!(cwd, &PathBuf::from("/cat/work"));
    }

    #[test]
    fn a_url_server_takes_headers_and_a_cursor_style_entry_needs_no_type() {
        let servers = json!({"remote": {"url": "http://127.0.0.1:3001/mcp",
                                        "headers": {"Authorization": "Bearer t"}}});
        let parsed = parse(&servers, Path::new(".")).unwrap();
        let Transport::Http { url, headers } = &parsed[0].transport else {
            panic!("an HTTP server: {parsed:?}");
        };
        assert_eq!(url, "http://127.0.0.1:3001/mcp");
        assert_eq!(headers["Authorization"], "Bearer t");
    }
}
