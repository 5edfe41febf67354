//! Dynamic tools through the real engine: define → invoke in a fresh guest, both schemas, the
//! guest's restricted builtins and import guard, limits, and a code-mode snippet calling a
//! dynamic tool through a catalog.

use codecell::{
    Catalog, CodeMode, DynamicToolError, DynamicTools, GuestKind, Limits, Manifest,
    RegistryOptions, RunError, Status, ToolRunner, ToolSpec, WasmToolRunner, canonical,
};
use codecell_tests::{engine, fuel_engine};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> Value {
    let path = codecell_tests::fixture(&format!("dynamic/{name}.json"));
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    canonical::parse_exact(&text).expect("fixture is JSON")
}

fn open(guest: GuestKind, dir: &Path) -> DynamicTools {
    DynamicTools::open(engine(guest), RegistryOptions::new("session-1", dir)).expect("store opens")
}

/// Counts guest runs, to show what is refused before one starts.
struct Counting {
    inner: WasmToolRunner,
    runs: AtomicUsize,
}

impl ToolRunner for Counting {
    fn run<'a>(&'a self, m: &'a Manifest, args: &'a Value) -> codecell::RunFuture<'a> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.inner.run(m, args)
    }
}

fn counting(guest: GuestKind, dir: &Path, limits: Limits) -> (DynamicTools, Arc<Counting>) {
    let runner = Arc::new(Counting {
        inner: WasmToolRunner::new(engine(guest)).with_limits(limits),
        runs: AtomicUsize::new(0),
    });
    let tools =
        DynamicTools::open_with_runner(RegistryOptions::new("session-1", dir), runner.clone())
            .expect("store opens");
    (tools, runner)
}

/// A spec with an integer-to-object tool around `body` (the body of `execute(args)`).
fn spec(name: &str, imports: &str, body: &str, output_schema: Value) -> Value {
    json!({
        "name": name,
        "description": "test tool",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer", "default": 1}}, "required": ["n"]},
        "output_schema": output_schema,
        "implementation": format!("{imports}\ndef execute(args):\n{body}\n"),
    })
}

fn any_object() -> Value {
    json!({"type": "object", "additionalProperties": true})
}

codecell_tests::for_each_guest! {
    #[tokio::test]
    async fn fixtures_define_and_invoke_in_a_fresh_guest() {
        let dir = tempfile::tempdir().unwrap();
        let tools = open(GUEST, dir.path());
        for name in ["word_frequency", "date_difference", "stats_summary"] {
            let manifest = tools.define(&fixture(name)).await.expect(name);
            assert_eq!(manifest.name, name);
            assert!(manifest.manifest_id.starts_with("dyn-"));
        }
        let words = tools
            .invoke(
                "word_frequency",
                &json!({"text": "It's the cat, the HAT and the bat's hat.", "top": 2}),
            )
            .await
            .expect("word_frequency runs");
        assert_eq!(
            words,
            json!({"total_words": 9, "unique_words": 6, "top": [{"word": "the", "count": 3}, {"word": "hat", "count": 2}]})
        );
        let dates = tools
            .invoke(
                "date_difference",
                &json!({"start": "2024-02-01", "end": "2024-03-15"}),
            )
            .await
            .expect("date_difference runs");
        assert_eq!(
            dates,
            json!({"days": 43, "weeks": 6, "remaining_days": 1, "start_weekday": "Thursday", "end_weekday": "Friday", "business_days": 31})
        );
        let stats = tools
            .invoke(
                "stats_summary",
                &json!({"values": [2, 4, 4, 4, 5, 5, 7, 9]}),
            )
            .await
            .expect("stats_summary runs");
        assert_eq!(stats["count"], 8);
        assert_eq!(stats["mean"], 5.0);
        assert_eq!(stats["pstdev"], 2.0);
        assert_eq!(stats["median"], 4.5);
        assert_eq!(stats["quartiles"], json!([4.0, 4.5, 6.5]));
        assert_eq!(stats["stdev"], json!(2.138089935299395));

        // A second store on the same directory sees the session's manifests.
        let reopened = open(GUEST, dir.path());
        assert_eq!(reopened.tools().len(), 3);
        assert!(
            reopened.load_errors().is_empty(),
            "{:?}",
            reopened.load_errors()
        );
    }

    #[tokio::test]
    async fn arguments_are_checked_before_the_guest_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (tools, runner) = counting(GUEST, dir.path(), Limits::default());
        tools.define(&fixture("word_frequency")).await.unwrap();
        let after_define = runner.runs.load(Ordering::SeqCst);
        assert_eq!(after_define, 1, "define runs the smoke test once");
        for bad in [
            json!({"top": 3}),
            json!({"text": 7}),
            json!({"text": "a", "top": 0}),
            json!({"text": "a", "extra": true}),
        ] {
            let err = tools.invoke("word_frequency", &bad).await.unwrap_err();
            assert!(
                matches!(err, DynamicToolError::Arguments(_)),
                "{bad}: {err}"
            );
        }
        assert_eq!(runner.runs.load(Ordering::SeqCst), after_define);
        // Too large for the runner (the seed's 200,000 characters): refused before a guest starts.
        let err = tools
            .invoke("word_frequency", &json!({"text": "a".repeat(200_001)}))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, DynamicToolError::Run(RunError::Limit { kind: "input", message }) if message.contains("input is too large")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_result_violating_the_output_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let tools = open(GUEST, dir.path());
        let output = json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]});
        tools
            .define(&spec(
                "echo_n",
                "",
                "    return {\"n\": args[\"n\"]}",
                output,
            ))
            .await
            .expect("smoke n=1 passes");
        assert_eq!(
            tools.invoke("echo_n", &json!({"n": 4})).await.unwrap(),
            json!({"n": 4})
        );
        let err = tools.invoke("echo_n", &json!({"n": -1})).await.unwrap_err();
        assert!(matches!(err, DynamicToolError::Output(_)), "{err}");

        // At define time the same check refuses the smoke output, and nothing is stored.
        let bad = spec(
            "wrong_shape",
            "",
            "    return [args[\"n\"]]",
            json!({"type": "object"}),
        );
        let err = tools.define(&bad).await.unwrap_err();
        assert!(matches!(err, DynamicToolError::SmokeOutput(_)), "{err}");
        assert!(tools.get("wrong_shape").is_none());
    }

    #[tokio::test]
    async fn restricted_builtins_and_the_import_guard_apply_in_the_guest() {
        let dir = tempfile::tempdir().unwrap();
        let tools = open(GUEST, dir.path());
        // Each source passes the policy (so only the guest can stop it) and fails at run time.
        let cases = [
            // `__builtins__` is a plain name and the call goes through a subscript, so neither the
            // banned-call rule nor the import allowlist sees it; the guard admits only `json`.
            (
                "sneaky_import",
                "import json",
                "    loader = __builtins__[\"__import__\"]\n    os = loader(\"os\")\n    return {\"cwd\": json.dumps(os.getcwd())}",
                "ImportError",
                "dynamic tool import denied: os",
            ),
            (
                "uses_print",
                "",
                "    print(\"hello\")\n    return {}",
                "NameError",
                "print",
            ),
            (
                "uses_type",
                "",
                "    return {\"t\": str(type(args))}",
                "NameError",
                "type",
            ),
        ];
        for (name, imports, body, kind, needle) in cases {
            let spec = spec(name, imports, body, any_object());
            let source = spec["implementation"].as_str().unwrap();
            assert!(
                codecell::validate_dynamic_source(source).is_ok(),
                "{name} must pass the validator for this test to mean anything"
            );
            let err = tools.define(&spec).await.unwrap_err();
            match &err {
                DynamicToolError::SmokeRun(RunError::Raised { kind: k, message }) => {
                    assert_eq!(k, kind, "{name}: {message}");
                    assert!(message.contains(needle), "{name}: {message}");
                    assert!(
                        message.contains("line "),
                        "{name} names the line: {message}"
                    );
                }
                other => panic!("{name}: expected a raised {kind}, got {other}"),
            }
            assert!(tools.get(name).is_none(), "{name} was not stored");
        }
    }

    #[tokio::test]
    async fn an_infinite_loop_ends_at_a_limit() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            deadline: Duration::from_millis(1500),
            ..Limits::default()
        };
        let (tools, _) = counting(GUEST, dir.path(), limits);
        let body = "    n = args[\"n\"]\n    while n > 0:\n        n = n + 1\n    return {\"n\": n}";
        let mut spec = spec("spin", "", body, any_object());
        spec["smoke_args"] = json!({"n": 0});
        tools.define(&spec).await.expect("n=0 returns at once");
        let started = Instant::now();
        let err = tools.invoke("spin", &json!({"n": 1})).await.unwrap_err();
        assert!(
            matches!(&err, DynamicToolError::Run(RunError::Limit { kind: "deadline" | "fuel", .. })),
            "{err}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "stopped promptly"
        );
        // The store is fine afterwards and the tool still answers when it terminates.
        assert_eq!(
            tools.invoke("spin", &json!({"n": -3})).await.unwrap(),
            json!({"n": -3})
        );
    }

    #[tokio::test]
    async fn outputs_that_are_too_large_or_not_json_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let tools = open(GUEST, dir.path());
        let big = spec(
            "big",
            "",
            "    return {\"s\": \"x\" * (1000000 * args[\"n\"])}",
            any_object(),
        );
        let err = tools.define(&big).await.unwrap_err();
        assert!(
            matches!(&err, DynamicToolError::SmokeRun(RunError::Limit { kind: "output", .. })),
            "{err}"
        );
        // Results that are not JSON the host can take: infinity, and an int past 64 bits.
        for (name, body) in [
            ("not_finite", "    return {\"x\": float(\"inf\") * args[\"n\"]}"),
            ("huge_int", "    return {\"x\": 10 ** 30 * args[\"n\"]}"),
        ] {
            let err = tools
                .define(&spec(name, "", body, any_object()))
                .await
                .unwrap_err();
            assert!(
                matches!(err, DynamicToolError::SmokeRun(RunError::InvalidOutput(_))),
                "{name}: {err}"
            );
        }
    }

    /// Regression (issue 16, item 6): the guest's output limit was recognised by the prefix of
    /// a RuntimeError's message, so a tool raising that text was reported as a limit; and the
    /// failing line was parsed out of traceback text. Both are fields now.
    #[tokio::test]
    async fn a_limit_is_a_field_not_a_message_and_so_is_the_failing_line() {
        let dir = tempfile::tempdir().unwrap();
        let tools = open(GUEST, dir.path());
        let fake = spec(
            "fake_limit",
            "",
            "    raise RuntimeError(\"dynamic tool output exceeds 1000000 characters\")",
            any_object(),
        );
        match tools.define(&fake).await.unwrap_err() {
            DynamicToolError::SmokeRun(RunError::Raised { kind, message }) => {
                assert_eq!(kind, "RuntimeError");
                assert!(message.ends_with("(line 3)"), "{message}");
            }
            other => panic!("a raised RuntimeError, not {other}"),
        }
    }

    /// Regression (issue 10, class 7): a dynamic tool called from code mode ran with the
    /// default limits whatever the caller had left: an outer 3e7-fuel run drove ten inner runs
    /// of 5e9 fuel each and reported `ok`. Now each inner run gets what is left and its fuel is
    /// charged to the caller, which ends on the fuel limit once the charge reaches its budget.
    #[tokio::test]
    async fn a_nested_dynamic_tool_runs_under_what_its_caller_has_left() {
        let dir = tempfile::tempdir().unwrap();
        // Fuel budgets are only kept by fuel-metered engines, the caller's and the tool's.
        let tools = DynamicTools::open(fuel_engine(GUEST), RegistryOptions::new("session-1", dir.path()))
            .expect("store opens");
        let body = "    n = args[\"n\"]\n    while n > 0:\n        n = n + 1\n    return {\"n\": n}";
        let mut spin = spec("spin", "", body, any_object());
        spin["smoke_args"] = json!({"n": 0});
        tools.define(&spin).await.expect("n=0 returns at once");
        let catalog = Catalog::builder()
            .category("text", "Tools written by a model.")
            .tool(
                "text",
                ToolSpec::new("spin", "Spins.", json!({"type": "object"})),
                tools.handler("spin"),
            )
            .build()
            .unwrap();
        let fuel = 200_000_000;
        let mode = CodeMode::new(fuel_engine(GUEST), catalog).with_limits(Limits {
            fuel,
            ..Limits::default()
        });
        let snippet = "\
refused = 0
for _ in range(10):
    try:
        call_tool('text', 'spin', n=1)
    except ToolError:
        refused += 1
print(refused)
";
        let started = Instant::now();
        let outcome = mode.execute_code(snippet).await.expect("run");
        assert_eq!(outcome.limit(), Some(codecell::LimitKind::Fuel), "{outcome:#?}");
        assert!(outcome.fuel_used >= fuel, "the nested fuel is charged: {outcome:#?}");
        assert!(
            outcome.fuel_used < 3 * fuel,
            "no more than the caller's budget ran: {}",
            outcome.fuel_used
        );
        assert_eq!(outcome.tool_calls.len(), 1, "the first call used it all");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    fn catalog_text(tool: &str) -> String {
        json!({"categories": [{"name": "text", "description": "Text tools written by a model.", "tools": [{
            "name": tool,
            "description": "Most frequent words of a text.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "top": {"type": "integer"}}, "required": ["text"]},
            "handler": {"dynamic": tool}
        }]}]})
        .to_string()
    }

    #[tokio::test]
    async fn a_code_mode_snippet_calls_a_dynamic_tool_through_a_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let tools = open(GUEST, dir.path());
        tools.define(&fixture("word_frequency")).await.unwrap();
        let catalog = Catalog::from_json_with(
            &catalog_text("word_frequency"),
            dir.path(),
            "test catalog",
            &tools.resolver(),
        )
        .expect("catalog resolves the dynamic handler");
        let code_mode = CodeMode::new(engine(GUEST), catalog);
        let snippet = "\
from tools.text import word_frequency
r = call_tool('text', 'word_frequency', text='b a b c b a', top=2)
print(r['top'])
print(word_frequency(text='z z y')['total_words'])
try:
    call_tool('text', 'word_frequency', text='x', top=0)
except ToolError as e:
    print('refused:', e)
    ";
        let outcome = code_mode.execute_code(snippet).await.expect("run");
        assert_eq!(outcome.status(), Status::Ok, "{outcome:?}");
        let lines: Vec<&str> = outcome.stdout.lines().collect();
        assert_eq!(
            lines[0],
            "[{'count': 3, 'word': 'b'}, {'count': 2, 'word': 'a'}]"
        );
        assert_eq!(lines[1], "3");
        // The catalog's schema allows top=0; the manifest's (minimum 1) refuses it.
        assert!(
            lines[2].starts_with("refused:") && lines[2].contains("dynamic tool arguments"),
            "{}",
            lines[2]
        );
        assert_eq!(outcome.tool_calls.len(), 3);

        // An unknown dynamic tool is refused when the catalog is built, not at call time.
        let err = Catalog::from_json_with(
            &catalog_text("no_such_tool"),
            dir.path(),
            "test catalog",
            &tools.resolver(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("no_such_tool"), "{err}");
    }

    #[tokio::test]
    async fn a_by_name_handler_runs_whatever_resolves_now() {
        let dir = tempfile::tempdir().unwrap();
        let tools = open(GUEST, dir.path());
        let spec_v = |answer: i64| {
            spec(
                "answer",
                "",
                &format!("    return {{\"a\": {answer}}}"),
                any_object(),
            )
        };
        tools.define(&spec_v(1)).await.unwrap();
        let tool_spec = ToolSpec::new(
            "answer",
            "The answer.",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        );
        let catalog = Catalog::builder()
            .category("dyn", "Dynamic tools.")
            .tool("dyn", tool_spec, tools.handler("answer"))
            .build()
            .unwrap();
        let code_mode = CodeMode::new(engine(GUEST), catalog);
        let outcome = code_mode
            .execute_code("print(call_tool('dyn', 'answer', n=1))")
            .await
            .unwrap();
        assert_eq!(outcome.stdout.trim(), "{'a': 1}", "{outcome:?}");

        // Promote v1 globally, then a new session defines v2: the same handler of that session
        // would now see its own session version first.
        tools
            .promote("answer", codecell::Scope::Global, true)
            .unwrap();
        let other =
            DynamicTools::open(engine(GUEST), RegistryOptions::new("session-2", dir.path())).unwrap();
        let handler = other.handler("answer");
        assert_eq!(
            handler.call(json!({"n": 1})).await.unwrap(),
            json!({"a": 1})
        );
        other.define(&spec_v(2)).await.unwrap();
        assert_eq!(
            handler.call(json!({"n": 1})).await.unwrap(),
            json!({"a": 2})
        );
        let missing = other.handler("missing");
        let err = missing.call(json!({})).await.unwrap_err();
        assert!(err.message().contains("unknown or expired"), "{err}");
    }
}
