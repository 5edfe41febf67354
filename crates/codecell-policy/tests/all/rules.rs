//! Each rule with a source that passes and one that fails, with positions and messages.

use codecell_policy::{
    ALLOWED_IMPORTS, BANNED_ATTRIBUTES, BANNED_CALLS, MAX_SOURCE_CHARS, Options, RuleId,
    Strictness, Validated, Violation, validate_dynamic_source, validate_with,
};

fn reject(source: &str) -> Violation {
    match validate_dynamic_source(source) {
        Ok(v) => panic!("expected a violation, got {v:?} for {source:?}"),
        Err(violation) => violation,
    }
}

fn accept(source: &str) -> Vec<String> {
    match validate_dynamic_source(source) {
        Ok(Validated { imports }) => imports,
        Err(v) => panic!("expected acceptance, got {v} for {source:?}"),
    }
}

fn assert_rule(source: &str, rule: RuleId, line: usize, column: usize) -> Violation {
    let v = reject(source);
    assert_eq!((v.rule, v.line, v.column), (rule, line, column), "{v}");
    v
}

const EXEC: &str = "def execute(args):\n    return args\n";

#[test]
fn empty_source() {
    accept(EXEC);
    assert_rule("", RuleId::EmptySource, 1, 1);
    assert_rule(" \t\r\n\u{1c}\u{3000}", RuleId::EmptySource, 1, 1);
}

#[test]
fn too_long() {
    let at_limit = format!("{EXEC}#{}", "x".repeat(MAX_SOURCE_CHARS - EXEC.len() - 1));
    assert_eq!(at_limit.chars().count(), MAX_SOURCE_CHARS);
    accept(&at_limit);
    let v = assert_rule(&format!("{at_limit}x"), RuleId::TooLong, 1, 1);
    assert!(v.message.contains("100001"), "{}", v.message);
}

#[test]
fn syntax_error() {
    accept("def execute(args):\n    return (1,\n            2)\n");
    let v = reject("def execute(args):\n    return (1,\n");
    assert_eq!(v.rule, RuleId::SyntaxError);
    assert!(v.message.contains("does not parse"), "{}", v.message);
    assert_rule(
        "\u{feff}def execute(args):\n    return 1\n",
        RuleId::SyntaxError,
        1,
        1,
    );
}

#[test]
fn nesting_limits_follow_cpython() {
    let parens = |n: usize| {
        format!(
            "def execute(args):\n    return {}1{}\n",
            "(".repeat(n),
            ")".repeat(n)
        )
    };
    accept(&parens(200));
    assert_rule(&parens(201), RuleId::SyntaxError, 2, 212);
    let indents = |n: usize| {
        let mut s = String::from("def execute(args):\n    return 1\n");
        for i in 0..n {
            s.push_str(&format!("{}if args:\n", " ".repeat(i)));
        }
        s.push_str(&format!("{}pass\n", " ".repeat(n)));
        s
    };
    accept(&indents(99));
    assert_eq!(reject(&indents(100)).rule, RuleId::SyntaxError);
    accept(&format!(
        "def execute(args):\n    return {}1\n",
        "-".repeat(2000)
    ));
    assert_eq!(
        reject(&format!(
            "def execute(args):\n    return {}1\n",
            "-".repeat(3000)
        ))
        .rule,
        RuleId::SyntaxError
    );
}

#[test]
fn missing_execute() {
    assert_rule(
        "def run(args):\n    return 1\n",
        RuleId::MissingExecute,
        1,
        1,
    );
    assert_rule(
        "class T:\n    def execute(self, a):\n        pass\n",
        RuleId::MissingExecute,
        1,
        1,
    );
}

#[test]
fn duplicate_execute() {
    accept("def execute(args):\n    def execute(x):\n        return x\n    return execute(args)\n");
    // Points at the second definition's `def`, not at its decorator (CPython's lineno).
    assert_rule(
        "def execute(a):\n    pass\n@dec\ndef execute(a):\n    pass\n",
        RuleId::DuplicateExecute,
        4,
        1,
    );
}

#[test]
fn async_execute() {
    accept("async def helper():\n    pass\ndef execute(args):\n    return 1\n");
    assert_rule(
        "async def execute(args):\n    return 1\n",
        RuleId::AsyncExecute,
        1,
        1,
    );
}

#[test]
fn execute_signature() {
    accept("def execute(args, /, *, k=1):\n    return args\n");
    accept("def execute(args=None):\n    return args\n");
    assert_rule("def execute():\n    pass\n", RuleId::ExecuteSignature, 1, 1);
    assert_rule(
        "\n  \ndef execute(a, *r):\n    pass\n",
        RuleId::ExecuteSignature,
        3,
        1,
    );
    let v = assert_rule(
        "def execute(a, **k):\n    pass\n",
        RuleId::ExecuteSignature,
        1,
        1,
    );
    assert!(v.message.contains("`**kwargs`"), "{}", v.message);
}

#[test]
fn relative_import() {
    accept(&format!("from json import loads\n{EXEC}"));
    assert_rule(
        &format!("{EXEC}from .x import y\n"),
        RuleId::RelativeImport,
        3,
        1,
    );
    assert_rule(
        &format!("{EXEC}if 1:\n    from ... import y\n"),
        RuleId::RelativeImport,
        4,
        5,
    );
}

#[test]
fn import_allowlist() {
    let all = ALLOWED_IMPORTS
        .iter()
        .map(|m| format!("import {m}.sub as x_{m}\n"))
        .collect::<String>();
    assert_eq!(accept(&format!("{all}{EXEC}")), ALLOWED_IMPORTS);
    assert_eq!(
        accept(&format!("import re, json\nfrom math import pi\n{EXEC}")),
        ["json", "math", "re"]
    );
    // The first refused import in source order is pointed at; every refused root is named.
    let v = assert_rule(
        &format!("import json\n{EXEC}import sys\nimport os.path\nfrom os import sep\n"),
        RuleId::ImportNotAllowed,
        4,
        1,
    );
    assert!(v.message.contains("`os`, `sys`"), "{}", v.message);
    assert_eq!(
        reject(&format!("import operator\n{EXEC}")).rule,
        RuleId::ImportNotAllowed
    );
    assert_eq!(
        reject(&format!("from string import Formatter\n{EXEC}")).rule,
        RuleId::ImportNotAllowed
    );
}

#[test]
fn banned_calls() {
    accept("def execute(args):\n    return args.eval(1), args.open, [getattr]\n");
    for name in BANNED_CALLS {
        let v = assert_rule(
            &format!("def execute(args):\n    return 1 + {name}(args)\n"),
            RuleId::BannedCall,
            2,
            16,
        );
        assert!(
            v.message
                .starts_with(&format!("call to `{name}` is not allowed")),
            "{}",
            v.message
        );
    }
    // Identifiers are compared after NFKC, like CPython: fullwidth `ｅｖａｌ` is `eval`.
    assert_rule(
        "def execute(args):\n    return ｅｖａｌ('1')\n",
        RuleId::BannedCall,
        2,
        12,
    );
    // Inside an f-string, at CPython's position of the call.
    assert_rule(
        "def execute(args):\n    return f\"a{eval('1')}\"\n",
        RuleId::BannedCall,
        2,
        16,
    );
}

#[test]
fn banned_attributes() {
    accept("def execute(args):\n    return args.items(), args.class_, args.x__\n");
    for attr in BANNED_ATTRIBUTES {
        let v = assert_rule(
            &format!("def execute(args):\n    return args.{attr}\n"),
            RuleId::BannedAttribute,
            2,
            12,
        );
        assert!(v.message.contains(&format!("`.{attr}`")), "{}", v.message);
    }
    // Python's `ast.Attribute` starts at its value: `(a).b` starts at the parenthesis.
    assert_rule(
        "def execute(args):\n    return (args).__dict__\n",
        RuleId::BannedAttribute,
        2,
        12,
    );
}

#[test]
fn private_attributes() {
    accept("def execute(args):\n    _x = args\n    return _x\n");
    assert_rule(
        "def execute(args):\n    return args._x\n",
        RuleId::PrivateAttribute,
        2,
        12,
    );
    assert_rule(
        "def execute(args):\n    return args.__len__()\n",
        RuleId::PrivateAttribute,
        2,
        12,
    );
    // Columns count characters, not UTF-8 bytes.
    assert_rule(
        "def execute(args):\n    é = 'é'; return é._x\n",
        RuleId::PrivateAttribute,
        2,
        21,
    );
}

#[test]
fn global_and_nonlocal() {
    accept("g = 1\ndef execute(args):\n    return g\n");
    assert_rule(
        "def execute(args):\n    global g\n    return 1\n",
        RuleId::GlobalStatement,
        2,
        5,
    );
    assert_rule(
        "def execute(args):\n    n = 1\n    def f():\n        nonlocal n\n    return n\n",
        RuleId::NonlocalStatement,
        4,
        9,
    );
}

#[test]
fn breadth_first_order_decides_the_rule() {
    // `args._x` is shallower (depth 3) than `eval(...)` (depth 4) though it comes later.
    assert_rule(
        "def execute(args):\n    if args:\n        return eval('1')\n    return args._x\n",
        RuleId::PrivateAttribute,
        4,
        12,
    );
    // A refused import loses to any walk-time violation, wherever it is.
    assert_eq!(
        reject(&format!("import os\n{EXEC}x = a._b\n")).rule,
        RuleId::PrivateAttribute
    );
}

#[test]
fn strict_mode_is_opt_in_and_stricter() {
    let strict = Options {
        strictness: Strictness::Strict,
    };
    let sneaky = "def execute(args):\n    f = eval\n    return f\n";
    accept(sneaky);
    let v = validate_with(sneaky, &strict).unwrap_err();
    assert_eq!((v.rule, v.line, v.column), (RuleId::BannedName, 2, 9));
    let kw = "def execute(args, *, k):\n    return k\n";
    accept(kw);
    assert_eq!(
        validate_with(kw, &strict).unwrap_err().rule,
        RuleId::ExecuteRequiredKeyword
    );
    // Seed violations are reported unchanged in strict mode.
    assert_eq!(
        validate_with("", &strict).unwrap_err().rule,
        RuleId::EmptySource
    );
    assert!(validate_with(EXEC, &strict).is_ok());
    assert_eq!(Options::default().strictness, Strictness::Seed);
}

#[test]
fn rule_ids_are_stable_strings() {
    for rule in RuleId::ALL {
        let json = serde_json::to_string(rule).unwrap();
        assert_eq!(json, format!("\"{}\"", rule.as_str()));
        assert_eq!(serde_json::from_str::<RuleId>(&json).unwrap(), *rule);
        assert_eq!(RuleId::from_name(rule.as_str()), Some(*rule));
        assert_eq!(rule.to_string(), rule.as_str());
    }
    assert_eq!(RuleId::BannedCall.as_str(), "banned_call");
    assert_eq!(RuleId::from_name("nope"), None);
}

#[test]
fn violation_is_an_error_with_useful_display() {
    let v = reject("def execute(args):\n    return eval(args)\n");
    let err: Box<dyn std::error::Error> = Box::new(v.clone());
    assert_eq!(
        err.to_string(),
        format!("banned_call at line 2, column 12: {}", v.message)
    );
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["rule"], "banned_call");
    assert_eq!(json["line"], 2);
}

#[test]
fn known_parser_differences_refuse_rather_than_accept() {
    // CPython's `ast.parse` accepts these (its compiler refuses them later, so the seed's smoke
    // run fails); rustpython-parser refuses them up front. Pinned so a change is noticed.
    for source in ["f(a=1, a=2)\n", "def f(a, a):\n    pass\n"] {
        let v = reject(&format!("{source}{EXEC}"));
        assert_eq!(v.rule, RuleId::SyntaxError, "{v}");
    }
}
