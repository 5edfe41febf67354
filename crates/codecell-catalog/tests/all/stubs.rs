//! Stub generation against golden files in fixtures/stubs (schema in, .py out), validity of every
//! stub as Python, and the behaviour of generated stubs under a fake `codecell` module.

use crate::common;

use std::fs;
use std::path::Path;

use codecell_catalog::{Catalog, ToolSpec, handler_fn};
use serde_json::{Value, json};

/// Builds a one-tool catalog from a fixture and returns (stub path, stub source, function name).
fn stub_of(case: &Value) -> (String, String, String) {
    let category = case["category"].as_str().unwrap();
    let spec: ToolSpec = serde_json::from_value(case["tool"].clone()).unwrap();
    let catalog = Catalog::builder()
        .category(category, "fixture")
        .tool(category, spec, handler_fn(Ok))
        .build()
        .unwrap();
    let info = &catalog.categories()[0];
    let path = format!("tools/{}/{}.py", info.module, info.functions[0]);
    let source = catalog.read(&path).unwrap().to_string();
    (path, source, info.functions[0].clone())
}

fn cases() -> Vec<(String, Value)> {
    let dir = common::fixtures().join("stubs");
    let mut out = Vec::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let case: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
            out.push((stem, case));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        out.len() >= 5,
        "expected the stub fixtures in {}",
        dir.display()
    );
    out
}

#[test]
fn stubs_match_golden_files() {
    let dir = common::fixtures().join("stubs");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut mismatches = Vec::new();
    for (stem, case) in cases() {
        let (_, source, _) = stub_of(&case);
        let golden = dir.join(format!("{stem}.py"));
        if update {
            fs::write(&golden, &source).unwrap();
            continue;
        }
        let expected = fs::read_to_string(&golden).unwrap_or_else(|_| {
            panic!(
                "missing golden file {} (run with UPDATE_GOLDEN=1)",
                golden.display()
            )
        });
        if expected != source {
            mismatches.push(format!(
                "--- {stem}.py expected ---\n{expected}\n--- got ---\n{source}"
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn every_generated_stub_is_valid_python() {
    for (stem, case) in cases() {
        let (path, source, _) = stub_of(&case);
        assert!(
            source.starts_with("from codecell import call_tool\n"),
            "{path}"
        );
        common::assert_valid_python(&stem, &source);
    }
    // The golden files themselves, as committed.
    for (stem, _) in cases() {
        let golden = common::fixtures().join("stubs").join(format!("{stem}.py"));
        common::assert_valid_python(&stem, &fs::read_to_string(golden).unwrap());
    }
}

/// Executes a stub under a fake `codecell` module, calls its function, returns the recorded calls
/// and the function's docstring.
fn exercise(source: &str, function: &str, args: Value, kwargs: Value) -> Value {
    let script = r#"
import json, sys, types
req = json.loads(sys.stdin.read())
calls = []
fake = types.ModuleType("codecell")
def call_tool(category, name, /, **kwargs):
    calls.append([category, name, kwargs])
    return "result"
fake.call_tool = call_tool
sys.modules["codecell"] = fake
ns = {}
exec(compile(req["src"], "stub.py", "exec"), ns)
f = ns[req["function"]]
result = f(*req["args"], **req["kwargs"])
names = sorted(k for k in ns if not k.startswith("__") and k not in ("Any", "Literal", "Optional"))
print(json.dumps({"calls": calls, "result": result, "doc": f.__doc__, "names": names}))
"#;
    let req = json!({"src": source, "function": function, "args": args, "kwargs": kwargs});
    let (ok, out, err) = common::run_python(script, &req.to_string());
    assert!(ok, "stub failed to run:\n{err}\n{source}");
    serde_json::from_str(&out).unwrap()
}

fn case(name: &str) -> Value {
    let path = common::fixtures()
        .join("stubs")
        .join(format!("{name}.json"));
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the stub in native python3, which a Windows program under Wine cannot start"
)]
fn simple_stub_passes_defaults_and_omits_unset_optionals() {
    let (_, source, function) = stub_of(&case("weather_forecast"));
    assert_eq!(function, "forecast");
    let out = exercise(&source, &function, json!(["Paris"]), json!({}));
    assert_eq!(
        out["calls"],
        json!([["weather", "forecast", {"city": "Paris", "days": 3}]])
    );
    assert_eq!(out["result"], "result");
    let out = exercise(
        &source,
        &function,
        json!(["Oslo", 5]),
        json!({"units": "metric"}),
    );
    assert_eq!(
        out["calls"],
        json!([["weather", "forecast", {"city": "Oslo", "days": 5, "units": "metric"}]])
    );
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the stub in native python3, which a Windows program under Wine cannot start"
)]
fn nasty_names_map_to_identifiers_and_pass_original_names() {
    let c = case("nasty_names");
    let (path, source, function) = stub_of(&c);
    assert_eq!(function, "class_");
    assert_eq!(path, "tools/my_cat_2/class_.py");
    let out = exercise(
        &source,
        &function,
        json!([]),
        json!({"from_": "x", "user_id": 7, "a_b": "1", "a_b_2": "2", "_2fa": true}),
    );
    let expected_kwargs = json!({
        "from": "x", "user-id": 7, "a_b": "1", "a b": "2", "2fa": true,
        "ok": "\"\"\"); import os #"
    });
    assert_eq!(
        out["calls"],
        json!([["my-cat 2", "class", expected_kwargs]])
    );
    // The description reached the docstring as text: nothing in it ran, nothing was imported.
    let doc = out["doc"].as_str().unwrap();
    assert!(
        doc.contains("\"\"\" + __import__('os').system('id') + \"\"\""),
        "{doc}"
    );
    assert!(
        doc.contains("\\N{BULLET}") && doc.contains('\u{202e}') && doc.contains('\0'),
        "{doc}"
    );
    assert!(doc.contains("Ends with a quote\""), "{doc}");
    assert_eq!(out["names"], json!(["call_tool", "class_"]));
    // The raw bidi override and NUL never appear in the source, only their escapes.
    assert!(!source.contains('\u{202e}') && !source.contains('\0'));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the stub in native python3, which a Windows program under Wine cannot start"
)]
fn parameter_named_like_the_body_locals_does_not_shadow_them() {
    let c = case("nasty_names");
    let (_, source, function) = stub_of(&c);
    let out = exercise(
        &source,
        &function,
        json!(["f", 1]),
        json!({"call_tool_": "shadow?", "_kwargs_": "shadow?"}),
    );
    let kwargs = &out["calls"][0][2];
    assert_eq!(kwargs["call_tool"], "shadow?");
    assert_eq!(kwargs["_kwargs"], "shadow?");
    assert_eq!(kwargs["from"], "f");
}

#[test]
fn all_types_stub_renders_every_annotation() {
    let (_, source, _) = stub_of(&case("all_types"));
    for needle in [
        "s: str",
        "i: int",
        "either: str | int",
        "n: float = 0.5",
        "b: bool = True",
        "strings: Optional[list[str]] = None",
        "anything: Optional[list[Any]] = None",
        "matrix: Optional[list[list[float]]] = None",
        "obj: dict = {\"k\": [1, None, False]}",
        "level: Literal[1, 2, 3] = 2",
        "mode: Optional[Literal[\"fast\", \"slow\"]] = None",
        "fixed: Optional[Literal[\"v1\"]] = None",
        "maybe_s: Optional[str] = None",
        "maybe_i: Optional[int] = None",
        "tags: list[Literal[\"a\", \"b\"]] = [\"a\"]",
        "free: Any = None",
        "quote: str = \"say \\\"hi\\\"\\\\n\"",
        "ratio: Optional[float] = None",
        ") -> dict:",
        "from typing import Any, Literal, Optional",
    ] {
        assert!(source.contains(needle), "missing {needle:?} in:\n{source}");
    }
    // Required parameters come first, in the order of "required".
    let s = source.find("    s: str").unwrap();
    let i = source.find("    i: int").unwrap();
    let e = source.find("    either:").unwrap();
    let b = source.find("    b: bool").unwrap();
    assert!(s < i && i < e && e < b, "{source}");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the stub in native python3, which a Windows program under Wine cannot start"
)]
fn stub_strings_cannot_break_out_of_literals() {
    // Category and tool names end up in call_tool's string literals; try to break them.
    let category = "a\"); import os; (\"";
    let tool = "t\\\"\n#";
    let spec = ToolSpec::new(tool, "\"\"\"\\", json!({"type": "object"}));
    let catalog = Catalog::builder()
        .category(category, "x")
        .tool(category, spec, handler_fn(Ok));
    // A newline in a tool name is refused at build time...
    assert!(catalog.build().is_err());
    let tool = "t\\\"#'''";
    let spec = ToolSpec::new(tool, "\"\"\"\\", json!({"type": "object"}));
    let catalog = Catalog::builder()
        .category(category, "x")
        .tool(category, spec, handler_fn(Ok))
        .build()
        .unwrap();
    let info = &catalog.categories()[0];
    let source = catalog
        .read(&format!("tools/{}/{}.py", info.module, info.functions[0]))
        .unwrap();
    common::assert_valid_python("breakout", &source);
    let out = exercise(&source, &info.functions[0], json!([]), json!({}));
    // ...and the rest arrive in call_tool exactly as registered.
    assert_eq!(out["calls"], json!([[category, tool, {}]]));
    assert_eq!(out["doc"].as_str().unwrap().trim(), "\"\"\"\\");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the stub in native python3, which a Windows program under Wine cannot start"
)]
fn separators_and_bidi_controls_in_names_are_escaped() {
    // U+2028/U+2029 and bidi overrides are not control characters, so names may contain them;
    // in source they would hide or reorder text, so stubs spell them as escapes.
    let category = "cat\u{2028}x";
    let tool = "t\u{202e}gnp.exe\u{2029}";
    let param = "p\u{2066}q";
    let schema =
        json!({"type": "object", "properties": {param: {"type": "string"}}, "required": [param]});
    let c = Catalog::builder()
        .tool(
            category,
            ToolSpec::new(tool, "d\u{2028}e", schema),
            handler_fn(Ok),
        )
        .build()
        .unwrap();
    let info = &c.categories()[0];
    let source = c
        .read(&format!("tools/{}/{}.py", info.module, info.functions[0]))
        .unwrap();
    for raw in ['\u{2028}', '\u{2029}', '\u{202e}', '\u{2066}'] {
        assert!(!source.contains(raw), "raw {raw:?} in:\n{source}");
    }
    common::assert_valid_python("separators", &source);
    let out = exercise(&source, &info.functions[0], json!(["v"]), json!({}));
    assert_eq!(out["calls"], json!([[category, tool, {param: "v"}]]));
}

#[test]
fn tool_spec_uses_mcp_field_names() {
    let spec: ToolSpec = serde_json::from_value(json!({
        "name": "t", "inputSchema": {"type": "object"}, "outputSchema": {"type": "string"}
    }))
    .unwrap();
    assert_eq!(spec.description, "");
    assert_eq!(spec.output_schema, Some(json!({"type": "string"})));
    let back = serde_json::to_value(ToolSpec::new("t", "d", json!({"type": "object"}))).unwrap();
    assert_eq!(
        back,
        json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}})
    );
}

#[test]
fn golden_fixture_dir_exists() {
    assert!(Path::new(&common::fixtures().join("stubs")).is_dir());
}
