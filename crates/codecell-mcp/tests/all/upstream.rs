//! Upstream MCP servers nobody here wrote (`server-everything`, `mcp-server-time`) and one
//! written with the official Python SDK (`fixtures/mcp/flaky_server.py`), as categories.

use std::path::Path;

use codecell::{Catalog, CodeMode, Outcome};
use codecell_mcp::{UpstreamError, load_catalog};

use crate::common::{engine, fixture, require_mcp_servers};

async fn run(catalog: &Catalog, code: &str) -> Outcome {
    CodeMode::new(engine(), catalog.clone())
        .execute_code(code)
        .await
        .expect("the host runs the code")
}

async fn upstream_catalog() -> Catalog {
    require_mcp_servers();
    load_catalog(&fixture("mcp/upstream.json"), None)
        .await
        .expect("both upstream servers start")
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "needs the MCP SDK and reference servers (python3 and node under target/mcp), which a Windows program under Wine cannot start"
)]
async fn each_server_becomes_a_category_with_typed_stubs_and_annotated_index_entries() {
    let catalog = upstream_catalog().await;
    assert_eq!(
        catalog.ls("tools/").unwrap(),
        ["__index__.md", "everything/", "time/"]
    );
    // server-everything's schemas are draft-07, mcp-server-time's 2020-12: both compile.
    let echo = catalog.read("tools/everything/echo.py").unwrap();
    assert!(echo.contains("def echo(message: str)"), "{echo}");
    assert!(
        echo.contains("call_tool(\"everything\", \"echo\", message=message)"),
        "{echo}"
    );
    let sum = catalog.read("tools/everything/get_sum.py").unwrap();
    assert!(
        sum.contains("call_tool(\"everything\", \"get-sum\""),
        "{sum}"
    );
    let index = catalog.read("tools/everything/__index__.md").unwrap();
    assert!(
        index.contains("(read-only) Echoes back the input"),
        "{index}"
    );
    let time = catalog.read("tools/time/get_current_time.py").unwrap();
    assert!(time.contains("timezone: str"), "{time}");
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "needs the MCP SDK and reference servers (python3 and node under target/mcp), which a Windows program under Wine cannot start"
)]
async fn a_snippet_calls_upstream_tools_through_call_tool_and_through_imported_stubs() {
    let catalog = upstream_catalog().await;
    let outcome = run(
        &catalog,
        "print(call_tool('everything', 'echo', message='hi'))\n\
         print(call_tool('everything', 'get-sum', a=2, b=3))\n\
         from tools.everything import get_structured_content\n\
         print(sorted(get_structured_content(location='New York')))\n\
         from tools.time import get_current_time\n\
         print(get_current_time(timezone='UTC')['timezone'])\n",
    )
    .await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(
        outcome.stdout,
        "Echo: hi\nThe sum of 2 and 3 is 5.\n['conditions', 'humidity', 'temperature']\nUTC\n"
    );
    assert_eq!(outcome.tool_calls.len(), 4);
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "needs the MCP SDK and reference servers (python3 and node under target/mcp), which a Windows program under Wine cannot start"
)]
async fn an_upstream_is_error_result_is_a_tool_error_in_the_guest() {
    let catalog = upstream_catalog().await;
    let outcome = run(
        &catalog,
        "try:\n    call_tool('time', 'convert_time', source_timezone='Nowhere/X', time='10:00', \
         target_timezone='UTC')\nexcept ToolError as e:\n    print('ToolError', 'Nowhere/X' in str(e))\n",
    )
    .await;
    assert_eq!(outcome.stdout, "ToolError True\n", "{outcome:?}");
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "needs the MCP SDK and reference servers (python3 and node under target/mcp), which a Windows program under Wine cannot start"
)]
async fn an_upstream_server_sees_only_path_and_the_environment_its_entry_lists() {
    require_mcp_servers();
    assert!(
        std::env::var_os("CARGO_PKG_NAME").is_some(),
        "cargo sets it for tests"
    );
    let dir = tempfile::tempdir().unwrap();
    let server = fixture("mcp/upstream.json");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&server).unwrap()).unwrap();
    let mut everything = config["mcpServers"]["everything"].clone();
    let script = fixture("mcp")
        .join(everything["args"][0].as_str().unwrap())
        .canonicalize()
        .unwrap();
    everything["args"][0] = serde_json::json!(script);
    everything["env"] = serde_json::json!({"LISTED": "yes"});
    let catalog_file = dir.path().join("catalog.json");
    std::fs::write(
        &catalog_file,
        serde_json::json!({"mcpServers": {"everything": everything}}).to_string(),
    )
    .unwrap();
    let catalog = load_catalog(&catalog_file, None).await.unwrap();
    let outcome = run(&catalog, "print(call_tool('everything', 'get-env'))").await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let text = &outcome.stdout;
    assert!(text.contains("'LISTED': 'yes'"), "{text}");
    assert!(text.contains("'PATH'"), "{text}");
    assert!(
        !text.contains("CARGO_PKG_NAME"),
        "the host's environment leaked: {text}"
    );
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "needs the MCP SDK and reference servers (python3 and node under target/mcp), which a Windows program under Wine cannot start"
)]
async fn a_dead_server_is_restarted_on_the_next_call_and_a_slow_call_is_cut_off_at_its_timeout() {
    require_mcp_servers();
    let catalog = load_catalog(&fixture("mcp/flaky.json"), None)
        .await
        .unwrap();
    let outcome = run(
        &catalog,
        "first = call_tool('flaky', 'pid')['result']\n\
         try:\n    call_tool('flaky', 'die')\nexcept ToolError as e:\n    print('died:', e)\n\
         print('restarted:', call_tool('flaky', 'pid')['result'] != first)\n\
         try:\n    call_tool('flaky', 'nap', seconds=30)\nexcept ToolError as e:\n    print('nap:', e)\n\
         try:\n    call_tool('flaky', 'fail', reason='no')\nexcept ToolError as e:\n    print('fail: ToolError')\n",
    )
    .await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let lines: Vec<&str> = outcome.stdout.lines().collect();
    assert!(
        lines[0].starts_with("died: MCP server \"flaky\""),
        "{lines:?}"
    );
    assert_eq!(lines[1], "restarted: True");
    assert_eq!(
        lines[2],
        "nap: MCP server \"flaky\" did not answer within 1000 ms"
    );
    assert_eq!(lines[3], "fail: ToolError");
    // The whole run took about the nap's timeout, not its 30 s.
    assert!(outcome.duration_ms < 20_000.0, "{}", outcome.duration_ms);
}

fn write_catalog(dir: &Path, servers: serde_json::Value) -> std::path::PathBuf {
    let path = dir.join("catalog.json");
    std::fs::write(
        &path,
        serde_json::json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    path
}

#[tokio::test]
async fn a_server_that_cannot_start_or_exits_at_once_is_named_with_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let missing = write_catalog(
        dir.path(),
        serde_json::json!({"ghost": {"command": "codecell-no-such-server"}}),
    );
    let error = load_catalog(&missing, None).await.unwrap_err();
    assert!(
        matches!(error, UpstreamError::Start { ref server, .. } if server == "ghost"),
        "{error}"
    );
    assert!(error.to_string().contains("cannot start"), "{error}");

    if cfg!(unix) {
        let quitter = write_catalog(
            dir.path(),
            serde_json::json!({"quitter": {"command": "sh", "args": ["-c", "echo broken config >&2; exit 4"]}}),
        );
        let error = load_catalog(&quitter, None).await.unwrap_err();
        assert!(error.to_string().contains("quitter"), "{error}");
        assert!(error.to_string().contains("broken config"), "{error}");
    }
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_fails_at_its_startup_timeout() {
    if !cfg!(unix) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let silent = write_catalog(
        dir.path(),
        serde_json::json!({"silent": {"command": "sleep", "args": ["60"], "startup_timeout_ms": 300}}),
    );
    let started = std::time::Instant::now();
    let error = load_catalog(&silent, None).await.unwrap_err();
    assert!(error.to_string().contains("within 300 ms"), "{error}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[tokio::test]
async fn mcp_servers_entries_are_checked_and_the_plain_loader_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write_catalog(
        dir.path(),
        serde_json::json!({"x": {"command": "y", "argz": []}}),
    );
    let error = load_catalog(&bad, None).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("mcpServers.x: unknown field \"argz\""),
        "{error}"
    );
    let error = Catalog::from_file(&bad).unwrap_err();
    assert!(
        error.to_string().contains("codecell_mcp::load_catalog"),
        "{error}"
    );
}

/// server-everything in its streamable-HTTP mode on a free port, killed on drop.
struct HttpEverything(std::process::Child, u16);

impl HttpEverything {
    fn start() -> HttpEverything {
        use std::io::BufRead;
        require_mcp_servers();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script = crate::common::root()
            .join("target/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        let mut child = std::process::Command::new("node")
            .arg(script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("node starts");
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        for line in stderr.lines() {
            if line.unwrap().contains("listening on port") {
                break;
            }
        }
        HttpEverything(child, port)
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "needs the MCP SDK and reference servers (python3 and node under target/mcp), which a Windows program under Wine cannot start"
)]
async fn a_server_reached_by_url_over_streamable_http_is_a_category_too() {
    let server = HttpEverything::start();
    let dir = tempfile::tempdir().unwrap();
    let catalog_file = write_catalog(
        dir.path(),
        serde_json::json!({"remote": {"url": format!("http://127.0.0.1:{}/mcp", server.1),
                                      "headers": {"X-Codecell-Test": "1"}}}),
    );
    let catalog = load_catalog(&catalog_file, None).await.unwrap();
    let echo = catalog.read("tools/remote/echo.py").unwrap();
    assert!(echo.contains("def echo(message: str)"), "{echo}");
    let outcome = run(
        &catalog,
        "from tools.remote import echo\nprint(echo(message='over http'))\n\
         print(call_tool('remote', 'get-sum', a=1, b=2))",
    )
    .await;
    assert_eq!(
        outcome.stdout, "Echo: over http\nThe sum of 1 and 2 is 3.\n",
        "{outcome:?}"
    );

    let https = write_catalog(
        dir.path(),
        serde_json::json!({"r": {"url": "https://example.com/mcp"}}),
    );
    let error = load_catalog(&https, None).await.unwrap_err();
    assert!(error.to_string().contains("TLS"), "{error}");
}
