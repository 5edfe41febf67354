//! `codecell serve`, driven by MCP clients nobody here wrote: the official Python SDK
//! (`fixtures/mcp/sdk_client.py`) and the MCP inspector's CLI, over stdio and over HTTP.
//! `.ci/install-mcp` installs both under `target/mcp/`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn installed(rel: &str) -> PathBuf {
    let path = root().join("target/mcp").join(rel);
    assert!(
        path.exists(),
        "{} is missing: run `bash .ci/install-mcp` (as .ci/run does; needs node, npm and python3)",
        path.display()
    );
    path
}

fn python() -> PathBuf {
    installed(if cfg!(windows) {
        "venv/Scripts/python.exe"
    } else {
        "venv/bin/python"
    })
}

fn inspector() -> PathBuf {
    installed("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js")
}

fn fixture(rel: &str) -> String {
    root().join("fixtures").join(rel).display().to_string()
}

/// `codecell serve --http 127.0.0.1:0 ARGS`, killed on drop, and the URL it serves.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(args: &[&str]) -> HttpServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_codecell"))
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("codecell serve starts");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let url = line
            .trim()
            .strip_prefix("codecell: serving MCP at ")
            .unwrap_or_else(|| panic!("no address announced: {line:?}"))
            .to_string();
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in stderr.lines() {});
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn report(output: Output) -> Value {
    assert!(
        output.status.success(),
        "client failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the client prints JSON")
}

fn sdk_client(args: &[&str]) -> Value {
    let output = Command::new(python())
        .arg(fixture("mcp/sdk_client.py"))
        .arg(fixture("snippets/demo.py"))
        .args(args)
        .output()
        .expect("python runs");
    report(output)
}

fn check_demo_and_limit(report: &Value) {
    assert_eq!(report["tools"], serde_json::json!(["execute_code"]));
    assert_eq!(report["output_schema"], true);
    assert_eq!(report["demo"]["status"], "ok", "{report}");
    assert_eq!(report["demo"]["is_error"], false);
    assert!(
        report["demo"]["text"]
            .as_str()
            .unwrap()
            .contains("100 C = 212.0 F")
    );
    assert_eq!(report["limit"]["is_error"], true);
    assert_eq!(report["limit"]["limit"], "output");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs the MCP SDK and reference servers (python3 and node under target/mcp), which a Windows program under Wine cannot start"
)]
fn the_python_sdk_over_stdio_lists_execute_code_runs_the_demo_and_sees_a_limit_as_is_error() {
    let report = sdk_client(&[
        "--stdio",
        env!("CARGO_BIN_EXE_codecell"),
        "serve",
        "--tools",
        &fixture("demo/catalog.json"),
    ]);
    check_demo_and_limit(&report);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs the MCP SDK and reference servers (python3 and node under target/mcp), which a Windows program under Wine cannot start"
)]
fn the_python_sdk_over_http_runs_16_requests_at_once_and_a_cancelled_run_stops() {
    let server = HttpServer::start(&[
        "--tools",
        &fixture("demo/catalog.json"),
        "--fuel",
        "100000000000000",
        "--timeout-ms",
        "60000",
    ]);
    let mut args = vec!["--url", &server.url, "--concurrent", "16"];
    let pid = server.child.id().to_string();
    if cfg!(target_os = "linux") {
        args.extend(["--cancel-pid", &pid]);
    }
    let report = sdk_client(&args);
    check_demo_and_limit(&report);
    let expected: Vec<String> = (0..16).map(|i| format!("{i}\n")).collect();
    assert_eq!(report["concurrent"], serde_json::json!(expected));
    if cfg!(target_os = "linux") {
        let cancel = &report["cancel"];
        assert!(
            cancel["busy_cpu_s"].as_f64().unwrap() > 0.05,
            "the loop never ran: {cancel}"
        );
        assert!(
            cancel["idle_cpu_s"].as_f64().unwrap() < 0.1,
            "the server kept computing after the cancellation: {cancel}"
        );
        assert_eq!(report["after_cancel"]["stdout"], "still serving\n");
    }
}

fn inspector_cli(target: &[&str], method: &[&str]) -> Value {
    let output = Command::new("node")
        .arg(inspector())
        .arg("--cli")
        .args(target)
        .args(method)
        .current_dir(root().join("target/mcp"))
        .output()
        .expect("node runs the inspector");
    report(output)
}

fn check_inspector(target: &[&str]) {
    let listed = inspector_cli(target, &["--method", "tools/list"]);
    assert_eq!(listed["tools"][0]["name"], "execute_code", "{listed}");
    let demo = std::fs::read_to_string(fixture("snippets/demo.py")).unwrap();
    let code = format!("code={demo}");
    let called = inspector_cli(
        target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "execute_code",
            "--tool-arg",
            &code,
        ],
    );
    assert_eq!(called["isError"], false, "{called}");
    assert_eq!(called["structuredContent"]["status"], "ok");
    let text = called["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("a marathon is 26.22 miles"), "{text}");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs the MCP SDK and reference servers (python3 and node under target/mcp), which a Windows program under Wine cannot start"
)]
fn the_mcp_inspector_cli_lists_and_calls_execute_code_over_stdio() {
    let codecell = env!("CARGO_BIN_EXE_codecell");
    let demo = fixture("demo/catalog.json");
    check_inspector(&[codecell, "serve", "--tools", &demo]);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs the MCP SDK and reference servers (python3 and node under target/mcp), which a Windows program under Wine cannot start"
)]
fn the_mcp_inspector_cli_lists_and_calls_execute_code_over_http() {
    let server = HttpServer::start(&["--tools", &fixture("demo/catalog.json")]);
    check_inspector(&[&server.url, "--transport", "http"]);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs the MCP SDK and reference servers (python3 and node under target/mcp), which a Windows program under Wine cannot start"
)]
fn served_code_reaches_upstream_mcp_servers_listed_in_the_catalog() {
    installed("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let codecell = env!("CARGO_BIN_EXE_codecell");
    let upstream = fixture("mcp/upstream.json");
    let called = inspector_cli(
        &[codecell, "serve", "--tools", &upstream],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "execute_code",
            "--tool-arg",
            "code=from tools.everything import echo\nprint(echo(message='up'))\n\
             print(call_tool('time', 'get_current_time', timezone='UTC')['timezone'])",
        ],
    );
    assert_eq!(called["content"][0]["text"], "Echo: up\nUTC\n", "{called}");
}

/// `codecell serve` is itself an upstream MCP server of another codecell: a snippet's `call_tool`
/// crosses two processes and two guests, over stdio. Neither Python nor node is involved, so on
/// Windows (under Wine) this is the test of the MCP client and server talking to each other.
#[test]
fn codecell_serve_is_an_upstream_server_of_another_codecell() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = serde_json::Map::new();
    // An upstream server sees only the environment its entry lists, and a program Wine starts
    // finds its prefix (and the ProcessPrng stand-in installed there) through WINEPREFIX.
    if let Ok(prefix) = std::env::var("WINEPREFIX") {
        env.insert("WINEPREFIX".into(), prefix.into());
    }
    // With its drive: on Windows the built-in path has none, and the catalog's directory (the
    // temporary one) may be on another drive.
    let exe = std::path::absolute(env!("CARGO_BIN_EXE_codecell")).unwrap();
    let catalog = serde_json::json!({
        "mcpServers": {"inner": {"command": exe, "args": ["serve"], "env": env}},
        "categories": []
    });
    let path = dir.path().join("catalog.json");
    std::fs::write(&path, catalog.to_string()).unwrap();
    let code = "r = call_tool('inner', 'execute_code', code='print(6 * 7)')\n\
                print(r['status'], repr(r['stdout']))";
    let output = crate::common::codecell(&["run", "-", "--tools", path.to_str().unwrap()], code);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, "ok '42\\n'\n", "{stderr}");
}

#[test]
fn a_taken_or_bad_listen_address_is_bad_input() {
    let server = HttpServer::start(&[]);
    let taken = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_codecell"))
        .args(["serve", "--http", &taken])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot listen on"));
}

/// One raw HTTP/1.1 request; returns the status line.
fn raw_request(url: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.lines().next().unwrap_or_default().to_string()
}

#[test]
fn http_refuses_a_foreign_host_header_and_answers_404_off_the_mcp_path() {
    let server = HttpServer::start(&[]);
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let rebinding = format!(
        "POST /mcp HTTP/1.1\r\nHost: attacker.example\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let status = raw_request(&server.url, &rebinding);
    assert!(
        status.contains(" 403 ") || status.contains(" 421 "),
        "{status}"
    );
    let elsewhere = "GET /admin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    let status = raw_request(&server.url, elsewhere);
    assert!(status.contains(" 404 "), "{status}");
}
