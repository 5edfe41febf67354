//! Schema complexity is bounded when a catalog is built (issue 10 classes 3 and 4): `$ref` and
//! combinator fan-out, recursion, backtracking patterns, and the stub generator's work. Each test
//! feeds a schema built to break one bound; before the bounds, the fan-out catalogs hung stub
//! generation or validation, branching recursion took 25 s (and 14 GB) for a 20-deep array and
//! 10000 keys against a backtracking `patternProperties` took over 60 s.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use codecell_catalog::{
    Catalog, MAX_INSTANCE_DEPTH, MAX_PATTERNS, MAX_SCHEMA_BRANCHES, MAX_SCHEMA_EXPANSION,
    PATTERN_SIZE_LIMIT, StubInput, ToolSpec, generate_stub, handler_fn,
};
use serde_json::{Value, json};

use crate::common;

/// Generous for a debug build on a loaded machine; the work measured is in milliseconds.
const QUICK: Duration = Duration::from_secs(1);

fn with_input(schema: Value) -> Result<Catalog, String> {
    Catalog::builder()
        .tool("c", ToolSpec::new("t", "", schema), handler_fn(Ok))
        .build()
        .map_err(|e| e.to_string())
}

/// `{"x": {"anyOf": [width refs to b]}}` with `b` an `anyOf` of `inner` strings: `x` expands
/// to `1 + width * (1 + 1 + inner)` nodes.
fn fan(width: usize, inner: usize) -> Value {
    json!({
        "type": "object",
        "properties": {"x": {"anyOf": vec![json!({"$ref": "#/$defs/b"}); width]}},
        "$defs": {"b": {"anyOf": vec![json!({"type": "string"}); inner]}}
    })
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

#[test]
fn hostile_fanout_catalog_files_are_refused_quickly_naming_the_limit() {
    for (file, limit) in [
        (
            "fanout-64k.json",
            format!("the limit is {MAX_SCHEMA_EXPANSION}"),
        ),
        (
            "wide-anyof-64k.json",
            format!("the limit is {MAX_SCHEMA_BRANCHES}"),
        ),
        (
            "branching-recursion.json",
            format!("the limit is {MAX_SCHEMA_EXPANSION}"),
        ),
    ] {
        let path = common::fixtures().join("catalogs").join(file);
        let (result, took) = timed(|| Catalog::from_file(&path));
        let e = result.unwrap_err().to_string();
        assert!(e.contains(&limit), "{file}: {e}");
        assert!(e.contains("inputSchema"), "{file} names where: {e}");
        assert!(took < QUICK, "{file} took {took:?}");
    }
}

#[test]
fn the_expansion_limit_is_exact() {
    // 1 + 27 * (2 + 35) = 1000: at the limit, builds; one more branch inside `b` is over it.
    assert_eq!(MAX_SCHEMA_EXPANSION, 1_000);
    let (c, took) = timed(|| with_input(fan(27, 35)));
    c.unwrap();
    assert!(took < QUICK, "{took:?}");
    let e = with_input(fan(27, 36)).unwrap_err();
    assert!(
        e.contains("checked against 1027 schema nodes; the limit is 1000"),
        "{e}"
    );
    assert!(e.contains("1 level down"), "{e}");
}

#[test]
fn output_schemas_are_bounded_too() {
    let spec = ToolSpec::new("t", "", json!({"type": "object"})).with_output_schema(fan(27, 36));
    let e = Catalog::builder()
        .tool("c", spec, handler_fn(Ok))
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("outputSchema") && e.contains("the limit is 1000"),
        "{e}"
    );
}

#[test]
fn combinator_branches_are_capped() {
    let branches = |n: usize| (0..n).map(|i| json!({"const": i})).collect::<Vec<_>>();
    for key in ["anyOf", "oneOf", "allOf"] {
        let ok =
            json!({"type": "object", "properties": {"x": {key: branches(MAX_SCHEMA_BRANCHES)}}});
        with_input(ok).unwrap();
        let over = json!({"type": "object", "properties": {"x": {key: branches(MAX_SCHEMA_BRANCHES + 1)}}});
        let e = with_input(over).unwrap_err();
        assert!(
            e.contains(&format!("{key} with 129 branches; the limit is 128")),
            "{e}"
        );
    }
}

#[test]
fn refs_hidden_in_other_keywords_are_followed() {
    // The fan-out sits under `items`, `not`, `then` and `additionalProperties`: all counted.
    let b = json!({"anyOf": vec![json!({"type": "string"}); 100]});
    let refs = vec![json!({"$ref": "#/$defs/b"}); 100];
    for wrap in [
        json!({"items": {"anyOf": refs}}),
        json!({"not": {"anyOf": refs}}),
        json!({"if": true, "then": {"allOf": refs}}),
        json!({"additionalProperties": {"oneOf": refs}}),
    ] {
        let schema = json!({"type": "object", "properties": {"x": wrap}, "$defs": {"b": b}});
        let e = with_input(schema.clone()).unwrap_err();
        assert!(e.contains("the limit is 1000"), "{schema}: {e}");
    }
}

#[test]
fn recursive_schemas_that_descend_once_per_level_work() {
    // A JSON value type: one branch per kind of value, so each level costs the same.
    let schema = json!({
        "type": "object",
        "properties": {"v": {"$ref": "#/$defs/json"}},
        "$defs": {"json": {"anyOf": [
            {"type": ["string", "number", "boolean", "null"]},
            {"type": "array", "items": {"$ref": "#/$defs/json"}},
            {"type": "object", "additionalProperties": {"$ref": "#/$defs/json"}}
        ]}}
    });
    let c = with_input(schema).unwrap();
    let mut deep = json!(1);
    for i in 0..200 {
        deep = if i % 2 == 0 {
            json!([deep])
        } else {
            json!({"k": deep})
        };
    }
    // Deeper than MAX_INSTANCE_DEPTH is fine here: the cost per level reached a fixed point.
    let (r, took) = timed(|| block_on(c.call("c", "t", json!({"v": deep}))));
    r.unwrap();
    assert!(took < QUICK, "{took:?}");
}

#[tokio::test]
async fn growing_recursion_refuses_instances_deeper_than_the_limit() {
    // `t` applies itself and `s` to every item: the cost grows by one per level, no fixed point.
    let schema = json!({
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/t"}},
        "$defs": {
            "t": {"anyOf": [
                {"type": "array", "items": {"$ref": "#/$defs/t"}},
                {"type": "array", "items": {"$ref": "#/$defs/s"}}
            ]},
            "s": {"type": "array", "items": {"$ref": "#/$defs/s"}}
        }
    });
    let c = with_input(schema).unwrap();
    let nested = |depth: usize| {
        let mut v = json!([]);
        for _ in 1..depth {
            v = json!([v]);
        }
        json!({"x": v})
    };
    // `nested(n)` is n arrays inside the arguments object: its innermost array is n levels down.
    c.call("c", "t", nested(MAX_INSTANCE_DEPTH)).await.unwrap();
    let e = c
        .call("c", "t", nested(MAX_INSTANCE_DEPTH + 1))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("nested 129 levels deep; this recursive schema accepts at most 128"),
        "{e}"
    );
}

#[test]
fn backtracking_patterns_run_in_linear_time() {
    let path = common::fixtures().join("catalogs/backtracking-patterns.json");
    let c = Catalog::from_file(&path).unwrap();
    // `^(a+)+$` against "a"*30 + "b": 2^30 paths for a backtracking engine, none for this one.
    let evil = format!("{}b", "a".repeat(30));
    let (r, took) = timed(|| block_on(c.call("regex", "match", json!({"nested": evil}))));
    let e = r.unwrap_err().to_string();
    assert!(e.contains("does not match"), "{e}");
    assert!(took < Duration::from_millis(100), "{took:?}");
    // A 1 MiB argument of such strings, as items and as keys: the whole argument in linear time
    // (with a backtracking engine limited to 1000 steps, 33000 keys took 3.2 s).
    let n = 33_000;
    let strings = vec![json!(format!("{}b", "a".repeat(24))); n];
    let keys: serde_json::Map<String, Value> = (0..n)
        .map(|i| (format!("{}{i}", "a".repeat(24)), json!(1)))
        .collect();
    let args = json!({"alternation": strings, "keys": keys});
    assert!(args.to_string().len() > 1024 * 1024);
    let (r, took) = timed(|| block_on(c.call("regex", "match", args)));
    let e = r.unwrap_err().to_string();
    assert!(e.contains("does not match"), "{e}");
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn patterns_that_need_backtracking_are_refused() {
    let path = common::fixtures().join("catalogs/backreference-pattern.json");
    let e = Catalog::from_file(&path).unwrap_err().to_string();
    assert!(
        e.contains("categories[0].tools[0].inputSchema") && e.contains("no backreferences"),
        "{e}"
    );
    for pattern in ["^(?=.*\\d)\\w+$", "(?<!a)b", "(a)\\1"] {
        let e = with_input(json!({"type": "object", "properties": {
            "p": {"type": "string", "pattern": pattern}
        }}))
        .unwrap_err();
        assert!(e.contains("matched in linear time"), "{pattern}: {e}");
    }
    // ECMA-262 syntax the linear engine has is kept: classes, escapes, anchors, counted repeats.
    let c = with_input(json!({"type": "object", "properties": {
        "p": {"type": "string", "pattern": "^[A-Z][a-z0-9_-]{2,15}\\d?$"}
    }}))
    .unwrap();
    block_on(c.call("c", "t", json!({"p": "Abc1"}))).unwrap();
    assert!(block_on(c.call("c", "t", json!({"p": "abc"}))).is_err());
}

#[test]
fn huge_compiled_patterns_are_refused() {
    let (r, took) = timed(|| {
        with_input(json!({"type": "object", "properties": {
            "p": {"type": "string", "pattern": "((a{100}){100}){100}"}
        }}))
    });
    let e = r.unwrap_err();
    assert!(
        e.contains("inputSchema")
            && e.contains(&format!("at most {PATTERN_SIZE_LIMIT} bytes compiled")),
        "{e}"
    );
    assert!(took < QUICK, "{took:?}");
}

/// A catalog of `tools` tools, each with `per_tool` patterns numbered from the tool's offset.
fn pattern_catalog(tools: usize, per_tool: usize, pattern: impl Fn(usize) -> String) -> Catalog {
    let mut b = Catalog::builder();
    for t in 0..tools {
        let props: serde_json::Map<String, Value> = (0..per_tool)
            .map(|i| {
                let p = pattern(t * per_tool + i);
                (format!("p{i}"), json!({"type": "string", "pattern": p}))
            })
            .collect();
        let spec = ToolSpec::new(
            format!("t{t}"),
            "",
            json!({"type": "object", "properties": props}),
        );
        b = b.tool("c", spec, handler_fn(Ok));
    }
    b.build().map_err(|e| e.to_string()).unwrap()
}

#[test]
fn patterns_are_counted_over_the_whole_catalog() {
    // Near the size limit each: 512 compile in bounded time and memory (about 0.4 ms, 256 KB each).
    let heavy = |i: usize| format!("(a{{100}}){{20}}{i}");
    let (c, took) = timed(|| pattern_catalog(8, MAX_PATTERNS / 8, heavy));
    assert_eq!(c.categories()[0].tools.len(), 8);
    assert!(took < Duration::from_secs(5), "{took:?}");
    // One more distinct pattern anywhere in the catalog is refused, naming the limit.
    let e =
        std::panic::catch_unwind(|| pattern_catalog(9, MAX_PATTERNS / 8, |i| format!("^x{i}$")))
            .unwrap_err();
    let e = e.downcast_ref::<String>().unwrap();
    assert!(
        e.contains(&format!("over {MAX_PATTERNS} distinct patterns")),
        "{e}"
    );
    // The same pattern repeated is one pattern, compiled once.
    pattern_catalog(40, 50, |_| "^[a-z]+$".to_string());
}

#[test]
fn stub_generation_has_a_work_budget() {
    // Three levels of 1000 branches: 10^9 annotations without a budget (the stub never came).
    let path = common::fixtures().join("catalogs/wide-anyof-64k.json");
    let text = std::fs::read_to_string(path).unwrap();
    let catalog: Value = serde_json::from_str(&text).unwrap();
    let schema = &catalog["categories"][0]["tools"][0]["inputSchema"];
    let (stub, took) = timed(|| {
        generate_stub(&StubInput {
            category: "wide",
            tool: "wide",
            function: "wide",
            description: "",
            input_schema: schema,
            output_schema: Some(schema),
        })
    });
    assert!(took < QUICK, "{took:?}");
    assert!(
        stub.contains("def wide(x: Any = None) -> Any:"),
        "plain types: {stub}"
    );
    common::assert_valid_python("wide.py", &stub);
    // Within the budget the same shape keeps its types.
    let small = fan(3, 2);
    let stub = generate_stub(&StubInput {
        category: "c",
        tool: "t",
        function: "t",
        description: "",
        input_schema: &small,
        output_schema: None,
    });
    assert!(stub.contains("x: Optional[str] = None"), "{stub}");
}

#[test]
fn the_analysis_itself_is_quick_on_a_large_recursive_schema() {
    // 120 branches of 60 properties each, all recursive, with growing cost: the analysis walks
    // every level of it and must still answer at once (refusing or accepting).
    let props: serde_json::Map<String, Value> = (0..60)
        .map(|i| (format!("p{i}"), json!({"$ref": "#/$defs/t"})))
        .collect();
    let mut branches = vec![json!({"type": "object", "properties": props}); 120];
    branches.push(json!({"type": "array", "items": {"$ref": "#/$defs/t"}}));
    branches.push(json!({"type": "array", "items": {"$ref": "#/$defs/s"}}));
    let schema = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/t"}}, "$defs": {
        "t": {"anyOf": branches},
        "s": {"type": "array", "items": {"$ref": "#/$defs/s"}}
    }});
    let (_, took) = timed(|| with_input(schema));
    assert!(took < QUICK, "{took:?}");
}

#[test]
fn the_same_limits_hold_for_catalog_text() {
    let catalog = json!({"categories": [{"name": "c", "description": "", "tools": [{
        "name": "t", "description": "", "inputSchema": fan(27, 36),
        "handler": {"command": ["true"]}
    }]}]});
    let e = Catalog::from_json_str(&catalog.to_string(), ".".as_ref(), "inline")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("categories[0].tools[0].inputSchema") && e.contains("the limit is 1000"),
        "{e}"
    );
}

/// Runs a catalog call to completion on the current thread (the closures never await).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn a_large_invalid_argument_reports_its_first_error_without_collecting_all() {
    // Items at the expansion limit, each failing every branch: collecting every error (each
    // `anyOf` error carries its branches') took 80 s and 22 GB for 500000 items before the
    // process was killed. Now the first error is reported, found without building the rest.
    let schema = json!({
        "type": "object",
        "properties": {"x": {"type": "array", "items": {"anyOf": vec![json!({"$ref": "#/$defs/b"}); 27]}}},
        "$defs": {"b": {"anyOf": vec![json!({"type": "string"}); 35]}}
    });
    let c = with_input(schema).unwrap();
    let args = json!({"x": vec![1; 200_000]});
    let (r, took) = timed(|| block_on(c.call("c", "t", args)));
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("at /x/0: ") && e.contains("… and possibly more"),
        "{e}"
    );
    assert!(took < QUICK, "{took:?}");
    // A small invalid argument still gets every violation, up to the reported number.
    let e = block_on(c.call("c", "t", json!({"x": [1, 2, 3]})))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/x/0") && e.contains("/x/1") && e.contains("/x/2"),
        "{e}"
    );
}

#[test]
fn a_large_check_runs_off_the_callers_task() {
    // Items at the expansion limit that match only the last branch: the costliest valid argument.
    // Checked inline it would hold the runtime's one thread (and a run's deadline) until done.
    let schema = json!({
        "type": "object",
        "properties": {"x": {"type": "array", "items": {"anyOf":
            vec![json!({"$ref": "#/$defs/b"}); 27].into_iter().chain([json!({"type": "integer"})]).collect::<Vec<_>>()
        }}},
        "$defs": {"b": {"anyOf": vec![json!({"type": "string"}); 34]}}
    });
    let c = with_input(schema).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let (ticks, result) = rt.block_on(async {
        let counter = Arc::new(AtomicU32::new(0));
        let seen = Arc::clone(&counter);
        let watcher = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(1)).await;
                seen.fetch_add(1, Ordering::Relaxed);
            }
        });
        let result = c.call("c", "t", json!({"x": vec![1; 40_000]})).await;
        watcher.abort();
        (counter.load(Ordering::Relaxed), result)
    });
    assert_eq!(result.unwrap()["x"].as_array().unwrap().len(), 40_000);
    assert!(
        ticks > 5,
        "the runtime's other tasks ran only {ticks} times during the check"
    );
}
