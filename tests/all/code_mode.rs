//! Code mode end to end: tree browsing, stub imports and tool calls through real command handlers.

use codecell::{
    CodeMode, HandlerError, Status, ToolDefinition, ToolSpec, async_handler_fn,
    code_mode_from_tools, handler_fn,
};
use codecell_tests::{engine, fixture, run};
use serde_json::json;

codecell_tests::for_each_guest! {
    #[tokio::test]
    async fn demo_snippet_lists_reads_and_calls_tools() {
        let code = std::fs::read_to_string(fixture("snippets/demo.py")).unwrap();
        let outcome = run(GUEST, &code).await;
        assert_eq!(outcome.status(), Status::Ok, "{outcome:#?}");
        assert!(
            outcome
                .stdout
                .contains("categories: ['__index__.md', 'text/', 'units/']"),
            "{}",
            outcome.stdout
        );
        assert!(outcome.stdout.contains("convert"), "{}", outcome.stdout);
        assert!(
            outcome.stdout.contains("100 C = 212.0 F"),
            "{}",
            outcome.stdout
        );
        assert!(
            outcome.stdout.contains("a marathon is 26.22 miles"),
            "{}",
            outcome.stdout
        );
        assert!(
            outcome.stdout.contains("words: 12 sentences: 3"),
            "{}",
            outcome.stdout
        );
        assert_eq!(outcome.tool_calls.len(), 3);
        assert!(outcome.tool_calls.iter().all(|c| c.ok));
        assert_eq!(outcome.tool_calls[0].category, "units");
    }

    #[tokio::test]
    async fn tool_errors_are_catchable_exceptions() {
        let code = std::fs::read_to_string(fixture("snippets/errors.py")).unwrap();
        let outcome = run(GUEST, &code).await;
        assert_eq!(outcome.status(), Status::Ok, "{outcome:#?}");
        assert!(outcome.stdout.contains("refused:"), "{}", outcome.stdout);
        assert!(outcome.stdout.contains("unknown:"), "{}", outcome.stdout);
        assert_eq!(outcome.tool_calls.len(), 2);
        assert!(outcome.tool_calls.iter().all(|c| !c.ok));
    }

    #[tokio::test]
    async fn uncaught_tool_error_is_an_error_with_traceback() {
        let outcome = run(GUEST, "call_tool('units', 'convert', value=1)").await;
        assert_eq!(outcome.status(), Status::Error);
        let error = outcome.error().cloned().expect("error");
        assert_eq!(error.kind, "ToolError");
        assert!(error.traceback.contains("<snippet>"), "{}", error.traceback);
        assert!(
            !error.traceback.contains("_codecell"),
            "guest internals leak: {}",
            error.traceback
        );
    }

    #[tokio::test]
    async fn stubs_are_importable_and_typed() {
        let code = r#"
import tools.text
from tools.text import top_words, stats
import inspect
print(inspect.signature(top_words))
print(top_words("b a b c b a", limit=2))
print(stats.__doc__.splitlines()[0])
"#;
        let outcome = run(GUEST, code).await;
        assert_eq!(outcome.status(), Status::Ok, "{outcome:#?}");
        let lines: Vec<&str> = outcome.stdout.lines().collect();
        assert!(
            lines[0].contains("text: str") && lines[0].contains("limit: int = 5"),
            "{}",
            lines[0]
        );
        // Results cross the host in the order the tool wrote their keys (issue 18).
        assert_eq!(
            lines[1],
            "{'words': [{'word': 'b', 'count': 3}, {'word': 'a', 'count': 2}]}"
        );
        assert!(lines[2].contains("Count characters"), "{}", lines[2]);
    }

    #[tokio::test]
    async fn arguments_are_checked_against_the_schema_before_the_handler() {
        let outcome =
            run(GUEST, "call_tool('units', 'convert', value=1, from_unit='C', to_unit='parsec')").await;
        assert_eq!(outcome.status(), Status::Error);
        let error = outcome.error().cloned().unwrap();
        assert_eq!(error.kind, "ToolError");
        assert!(error.message.contains("parsec"), "{}", error.message);
    }

    #[tokio::test]
    async fn each_run_is_fresh() {
        let first = run(GUEST, "import json\njson.marker = 1\nx = 41\nprint('set')").await;
        assert_eq!(first.status(), Status::Ok);
        let second = run(GUEST, "import json\nprint(hasattr(json, 'marker'), 'x' in globals())").await;
        assert_eq!(second.stdout.trim(), "False False");
    }

    #[tokio::test]
    async fn bytes_written_to_stdout_buffer_arrive_in_order_with_text() {
        let code = "import sys\n\
                    print('text', end=' ')\n\
                    n = sys.stdout.buffer.write(b'bytes\\n')\n\
                    sys.stderr.buffer.write(bytearray(b'err'))\n\
                    print(n, sys.stdout.buffer.fileno(), sys.stderr.buffer.fileno())";
        let outcome = run(GUEST, code).await;
        assert_eq!(outcome.status(), Status::Ok, "{outcome:#?}");
        assert_eq!(outcome.stdout, "text bytes\n6 1 2\n");
        assert_eq!(outcome.stderr, "err");
    }

    #[tokio::test]
    async fn random_is_reseeded_per_run() {
        let a = run(GUEST, "import random; print(random.random())").await;
        let b = run(GUEST, "import random; print(random.random())").await;
        assert_eq!(a.status(), Status::Ok);
        assert_ne!(a.stdout, b.stdout, "two runs drew the same random number");
    }

    #[tokio::test]
    async fn closure_handlers_sync_and_async_through_the_facade() {
        let add = ToolDefinition {
            category: "math".into(),
            spec: ToolSpec::new(
                "add",
                "Add two integers.",
                json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
            ),
            handler: handler_fn(|args| {
                Ok(json!(
                    args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)
                ))
            }),
        };
        let slow_echo = ToolDefinition {
            category: "misc".into(),
            spec: ToolSpec::new(
                "echo",
                "Echo after a short wait.",
                json!({"type": "object"}),
            ),
            handler: async_handler_fn(|args| async move {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                Ok::<_, HandlerError>(args)
            }),
        };
        let mode: CodeMode =
            code_mode_from_tools(engine(GUEST), vec![add, slow_echo], |c| format!("{c} tools")).unwrap();
        let outcome = mode
            .execute_code(
                "print(call_tool('math', 'add', a=2, b=40), call_tool('misc', 'echo', k=[1, 2]))",
            )
            .await
            .unwrap();
        assert_eq!(outcome.stdout.trim(), "42 {'k': [1, 2]}", "{outcome:#?}");
        let prompt = mode.system_prompt();
        assert!(prompt.contains("`math`: math tools (1 tools)"), "{prompt}");
        assert!(prompt.contains("call_tool"));
        assert_eq!(
            CodeMode::render_for_model(&outcome).trim(),
            "42 {'k': [1, 2]}"
        );
    }

    #[tokio::test]
    async fn many_runs_proceed_concurrently() {
        let mut handles = Vec::new();
        for i in 0..8 {
            handles.push(tokio::spawn(async move {
                let outcome = run(GUEST, &format!("print(sum(range({i} * 1000)))")).await;
                (i, outcome)
            }));
        }
        for h in handles {
            let (i, outcome) = h.await.unwrap();
            let expected: u64 = (0..(i * 1000) as u64).sum();
            assert_eq!(outcome.stdout.trim(), expected.to_string());
        }
    }

    /// With a pool of two instance slots, twelve concurrent runs queue for a slot instead of
    /// failing, and each still gets a fresh instance (no state leaks through a reused slot).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_beyond_the_pool_wait_for_a_slot() {
        let engine = codecell::Engine::builder()
            .guest(GUEST)
            .max_concurrent_runs(2)
            .build()
            .expect("guest built");
        let mut handles = Vec::new();
        for i in 0..12 {
            let engine = engine.clone();
            handles.push(tokio::spawn(async move {
                let code = format!("import json\nprint(hasattr(json, 'marker'), {i})\njson.marker = {i}");
                let limits = codecell::Limits::default();
                (i, engine.run_snippet(&code, None, &limits).await)
            }));
        }
        for h in handles {
            let (i, outcome) = h.await.unwrap();
            let outcome = outcome.expect("a queued run is not an engine error");
            assert_eq!(outcome.status(), Status::Ok, "{outcome:#?}");
            assert_eq!(outcome.stdout, format!("False {i}\n"));
        }
    }

    /// Regression (issue 10, class 5): the result-size limit skipped error texts, so a tool's
    /// 3 MB error message reached the guest whole as a `ToolError`.
    #[tokio::test]
    async fn a_tool_error_message_is_held_to_the_result_limit() {
        let loud = ToolDefinition {
            category: "misc".into(),
            spec: ToolSpec::new("loud", "Fails at length.", json!({"type": "object"})),
            handler: handler_fn(|_| Err(HandlerError::new("e".repeat(3 << 20)))),
        };
        let mode = code_mode_from_tools(engine(GUEST), vec![loud], |_| "misc".into())
            .unwrap()
            .with_limits(codecell::Limits {
                max_tool_result_bytes: 4096,
                ..codecell::Limits::default()
            });
        let outcome = mode
            .execute_code("try:\n    call_tool('misc', 'loud')\nexcept ToolError as e:\n    print(len(str(e)))")
            .await
            .unwrap();
        let length: usize = outcome.stdout.trim().parse().expect("a length");
        assert!(length <= 4096, "{length} characters reached the guest");
        assert!(outcome.tool_calls[0].result_bytes <= 4096);
    }

    /// Regression (issue 10, class 6): a call still running at the deadline was missing from
    /// `tool_calls`; it is recorded, with `ok: false`.
    #[tokio::test]
    async fn a_call_cut_off_by_the_deadline_is_recorded() {
        let slow = ToolDefinition {
            category: "misc".into(),
            spec: ToolSpec::new("slow", "Takes its time.", json!({"type": "object"})),
            handler: async_handler_fn(|_| async {
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                Ok::<_, HandlerError>(json!(null))
            }),
        };
        let mode = code_mode_from_tools(engine(GUEST), vec![slow], |_| "misc".into())
            .unwrap()
            .with_limits(codecell::Limits {
                deadline: std::time::Duration::from_millis(300),
                ..codecell::Limits::default()
            });
        let outcome = mode.execute_code("call_tool('misc', 'slow')").await.unwrap();
        assert_eq!(outcome.limit(), Some(codecell::LimitKind::Deadline), "{outcome:#?}");
        assert_eq!(outcome.tool_calls.len(), 1, "{outcome:#?}");
        assert!(!outcome.tool_calls[0].ok);
        assert_eq!(outcome.tool_calls[0].name, "slow");
    }

    /// Regression (issue 10, class 1): a call record kept the names the guest gave, however long.
    #[tokio::test]
    async fn an_over_long_tool_name_is_refused_and_recorded_clipped() {
        let outcome = run(
            GUEST,
            "try:\n    call_tool('c' * 100_000, 'n' * 100_000)\nexcept ToolError as e:\n    print(e)",
        )
        .await;
        assert!(outcome.stdout.contains("over the limit"), "{outcome:#?}");
        let record = &outcome.tool_calls[0];
        assert!(!record.ok);
        assert!(record.category.len() <= codecell_catalog::MAX_NAME_BYTES);
        assert!(record.name.len() <= codecell_catalog::MAX_NAME_BYTES);
    }
}

/// Both guests' `call_tool` (the shared Python one, and RustPython's native twin) refuse the
/// same calls with the same errors and return the same values.
#[tokio::test]
async fn call_tool_implementations_agree() {
    let code = r#"
cases = [
    lambda: call_tool(),
    lambda: call_tool("text"),
    lambda: call_tool("text", "stats", "extra"),
    lambda: call_tool(1, "stats"),
    lambda: call_tool("text", 2),
    lambda: call_tool("nope", "stats"),
    lambda: call_tool("text", "nope"),
    lambda: call_tool("text", "stats", text=5),
    lambda: call_tool("text", "stats", text="Hi. Bye."),
    lambda: call_tool("text", "stats.py", text="one"),
]
for case in cases:
    try:
        print("ok", case())
    except BaseException as e:
        print(type(e).__name__, e)
for bad in (object(), float("nan"), {1j: 2}):
    try:
        call_tool("text", "stats", text=bad)
    except BaseException as e:
        print(type(e).__name__, str(e).split(":")[0])
"#;
    let mut seen = Vec::new();
    for guest in codecell::ALL_GUESTS {
        let outcome = run(guest, code).await;
        assert!(outcome.is_ok(), "{guest}: {outcome:#?}");
        seen.push((guest, outcome.stdout));
    }
    for (guest, stdout) in &seen[1..] {
        assert_eq!(stdout, &seen[0].1, "{guest} differs from {}", seen[0].0);
    }
}

/// The demo catalog's tools run as `examples/demo_tools.rs` on Windows: the port must give the
/// results the python3 scripts give, failures included.
#[test]
#[cfg_attr(
    windows,
    ignore = "needs native python3 as the oracle, which a Windows program under Wine cannot start"
)]
fn demo_tools_agree_with_the_python_demo_scripts() {
    use std::io::Write as _;
    let exec = |argv: &[&str], args: &serde_json::Value| {
        let mut child = std::process::Command::new(argv[0])
            .args(&argv[1..])
            .current_dir(fixture("demo"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        child
            .stdin
            .take()
            .unwrap()
            .write_all(args.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let result: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
        (out.status.success(), result)
    };
    let exe = codecell_tests::demo_tools_exe();
    let text =
        "Code mode runs Python. Tools are stubs! Calls go to the host?\nIt's 2 lines... or 3\n\n";
    let cases = [
        (
            "units",
            "units.py",
            json!({"value": 100, "from_unit": "C", "to_unit": "F"}),
        ),
        (
            "units",
            "units.py",
            json!({"value": 42.195, "from_unit": "km", "to_unit": "mi"}),
        ),
        (
            "units",
            "units.py",
            json!({"value": 1.5, "from_unit": "lb", "to_unit": "oz"}),
        ),
        (
            "units",
            "units.py",
            json!({"value": -40, "from_unit": "F", "to_unit": "K"}),
        ),
        (
            "units",
            "units.py",
            json!({"value": 3, "from_unit": "C", "to_unit": "kg"}),
        ),
        ("units", "units.py", json!({"value": 3, "from_unit": "m"})),
        ("stats", "text_stats.py", json!({"text": text})),
        ("stats", "text_stats.py", json!({"text": ""})),
        ("stats", "text_stats.py", json!({"text": "one"})),
        (
            "top_words",
            "text_stats.py",
            json!({"text": text, "limit": 3}),
        ),
        (
            "top_words",
            "text_stats.py",
            json!({"text": "b a B a c", "limit": 50}),
        ),
        ("top_words", "text_stats.py", json!({"text": text})),
    ];
    for (sub, script, args) in cases {
        let python: Vec<&str> = if script == "units.py" {
            vec!["python3", script]
        } else {
            vec!["python3", script, sub]
        };
        assert_eq!(
            exec(&[exe.as_str(), sub], &args),
            exec(&python, &args),
            "{sub} {args}"
        );
    }
}
