//! Shared test support: the corpus of sources with their expected (seed) verdicts.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use codecell_policy::{MAX_SOURCE_CHARS, RuleId, Validated, Violation};

/// One source of the corpus and the verdict the seed gives it.
pub struct Case {
    pub name: String,
    pub source: String,
    pub expected: Expected,
}

/// The seed's verdict: accepted with these import roots, or refused under this rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    Ok(Vec<String>),
    Rejected(RuleId),
}

impl Expected {
    pub fn of(result: &Result<Validated, Violation>) -> Expected {
        match result {
            Ok(validated) => Expected::Ok(validated.imports.clone()),
            Err(violation) => Expected::Rejected(violation.rule),
        }
    }
}

pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn parse_expected(word: &str, roots: Option<&str>) -> Expected {
    if word == "ok" {
        let roots = roots
            .map(|r| r.split(',').map(str::to_owned).collect())
            .unwrap_or_default();
        Expected::Ok(roots)
    } else {
        Expected::Rejected(
            RuleId::from_name(word).unwrap_or_else(|| panic!("unknown rule id {word:?}")),
        )
    }
}

/// Every corpus file (read byte-for-byte, so CRLF and tabs survive) plus generated cases.
pub fn corpus() -> Vec<Case> {
    let dir = corpus_dir();
    let listing = std::fs::read_to_string(dir.join("EXPECTED")).expect("read corpus/EXPECTED");
    let mut cases = Vec::new();
    for line in listing.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut words = line.split(' ');
        let name = words.next().expect("name").to_owned();
        let expected = parse_expected(words.next().expect("verdict"), words.next());
        let bytes = std::fs::read(dir.join(format!("{name}.py")))
            .unwrap_or_else(|e| panic!("read corpus file {name}.py: {e}"));
        let source = String::from_utf8(bytes).expect("corpus files are UTF-8");
        cases.push(Case {
            name,
            source,
            expected,
        });
    }
    // Every .py file must be listed, so nothing silently drops out of the corpus.
    let files = std::fs::read_dir(&dir)
        .expect("list corpus")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "py"))
        })
        .count();
    assert_eq!(
        files,
        cases.len(),
        "every corpus/*.py must appear in EXPECTED"
    );
    cases.extend(generated());
    cases
}

fn generated_case(name: &str, source: String, expected: Expected) -> Case {
    Case {
        name: name.to_owned(),
        source,
        expected,
    }
}

/// Pads `body` with a trailing comment so that it is exactly `chars` characters long.
fn padded(body: &str, fill: char, chars: usize) -> String {
    let mut source = format!("{body}#");
    let missing = chars - source.chars().count();
    source.extend(std::iter::repeat_n(fill, missing));
    assert_eq!(source.chars().count(), chars);
    source
}

/// Large or deeply nested sources, built here rather than stored.
pub fn generated() -> Vec<Case> {
    let body = "import json\ndef execute(args):\n    return json.dumps(args)\n";
    let ok_json = || Expected::Ok(vec!["json".to_owned()]);
    vec![
        generated_case(
            "gen_at_limit_ascii",
            padded(body, 'x', MAX_SOURCE_CHARS),
            ok_json(),
        ),
        generated_case(
            "gen_over_limit_ascii",
            padded(body, 'x', MAX_SOURCE_CHARS + 1),
            Expected::Rejected(RuleId::TooLong),
        ),
        // The limit counts characters, not bytes: 100,000 two-byte characters still pass.
        generated_case(
            "gen_at_limit_multibyte",
            padded(body, 'é', MAX_SOURCE_CHARS),
            ok_json(),
        ),
        generated_case(
            "gen_over_limit_multibyte",
            padded(body, '日', MAX_SOURCE_CHARS + 1),
            Expected::Rejected(RuleId::TooLong),
        ),
        // Too long wins over a missing execute: size is checked before parsing.
        generated_case(
            "gen_over_limit_garbage",
            "(".repeat(MAX_SOURCE_CHARS + 1),
            Expected::Rejected(RuleId::TooLong),
        ),
        generated_case(
            "gen_many_functions",
            (0..2000)
                .map(|i| format!("def f{i}(x):\n    return x + {i}\n"))
                .chain(std::iter::once(body.to_owned()))
                .collect(),
            ok_json(),
        ),
        generated_case(
            "gen_banned_call_late_in_long_file",
            (0..3000)
                .map(|i| format!("v{i} = {i}\n"))
                .chain(std::iter::once(
                    "def execute(args):\n    return eval('1')\n".to_owned(),
                ))
                .collect(),
            Expected::Rejected(RuleId::BannedCall),
        ),
        generated_case(
            "gen_nesting_50",
            format!(
                "def execute(args):\n    return {}1{}\n",
                "(".repeat(50),
                ")".repeat(50)
            ),
            Expected::Ok(vec![]),
        ),
        generated_case(
            "gen_parens_too_deep",
            format!(
                "def execute(args):\n    return {}1{}\n",
                "(".repeat(250),
                ")".repeat(250)
            ),
            Expected::Rejected(RuleId::SyntaxError),
        ),
        generated_case(
            "gen_unary_too_deep",
            format!("def execute(args):\n    return {}1\n", "-".repeat(40_000)),
            Expected::Rejected(RuleId::SyntaxError),
        ),
        generated_case(
            "gen_attribute_chain_too_deep",
            format!(
                "def execute(args):\n    return args{}\n",
                ".a".repeat(40_000)
            ),
            Expected::Rejected(RuleId::SyntaxError),
        ),
        generated_case(
            "gen_binop_chain_too_deep",
            format!("def execute(args):\n    return 1{}\n", "+1".repeat(40_000)),
            Expected::Rejected(RuleId::SyntaxError),
        ),
    ]
}
