//! Differential test: codecell's verdicts against an independent Python re-statement of the
//! seed's rules (`fixtures/seed_checker.py`), run by `python3` over the whole corpus. Verdicts,
//! import roots and positions must agree; for syntax errors only the rule is compared, since
//! CPython and rustpython point at different tokens.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::{Expected, corpus};
use codecell_policy::{RuleId, validate_dynamic_source};
use serde_json::{Value, json};

fn python3() -> Command {
    let probe = Command::new("python3").arg("--version").output();
    match probe {
        Ok(out) if out.status.success() => Command::new("python3"),
        _ => panic!(
            "python3 is required by the differential test (CPython's `ast` is the reference \
             the seed uses); install python3 >= 3.11 and rerun"
        ),
    }
}

/// Runs the oracle over `(name, source)` pairs and returns its verdict objects.
fn oracle(cases: &[(String, String)]) -> Vec<Value> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/seed_checker.py"
    );
    let input: Vec<Value> = cases
        .iter()
        .map(|(name, source)| json!({"name": name, "source": source}))
        .collect();
    let mut child = python3()
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn python3");
    let payload = serde_json::to_vec(&input).expect("encode cases");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&payload));
    let out = child.wait_with_output().expect("run python3");
    writer
        .join()
        .expect("writer thread")
        .expect("write to python3");
    assert!(
        out.status.success(),
        "seed_checker.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("oracle prints JSON")
}

/// The Rust verdict in the oracle's JSON shape.
fn ours(source: &str) -> Value {
    match validate_dynamic_source(source) {
        Ok(validated) => json!({"ok": true, "imports": validated.imports}),
        Err(v) if v.rule == RuleId::SyntaxError => json!({"ok": false, "rule": v.rule}),
        Err(v) => json!({"ok": false, "rule": v.rule, "line": v.line, "column": v.column}),
    }
}

fn theirs(mut verdict: Value) -> Value {
    let map = verdict.as_object_mut().expect("verdict object");
    map.remove("name");
    if map.get("rule").and_then(Value::as_str) == Some("syntax_error") {
        map.remove("line");
        map.remove("column");
    }
    verdict
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs native python3 as the oracle, which a Windows program under Wine cannot start"
)]
fn corpus_agrees_with_python_oracle() {
    let cases = corpus();
    let pairs: Vec<(String, String)> = cases
        .iter()
        .map(|c| (c.name.clone(), c.source.clone()))
        .collect();
    let verdicts = oracle(&pairs);
    assert_eq!(verdicts.len(), cases.len());
    let mut failures = Vec::new();
    for (case, verdict) in cases.iter().zip(verdicts) {
        assert_eq!(verdict["name"], json!(case.name));
        let expected = theirs(verdict);
        let got = ours(&case.source);
        if got != expected {
            failures.push(format!(
                "{}:\n  python: {expected}\n  rust:   {got}",
                case.name
            ));
        }
        // The recorded expectation must be the oracle's too, so EXPECTED cannot drift.
        let recorded = match &case.expected {
            Expected::Ok(roots) => json!({"ok": true, "imports": roots}),
            Expected::Rejected(rule) => json!({"ok": false, "rule": rule}),
        };
        let oracle_verdict = match expected.get("rule") {
            Some(rule) => json!({"ok": false, "rule": rule}),
            None => expected.clone(),
        };
        if recorded != oracle_verdict {
            failures.push(format!(
                "{}: EXPECTED says {recorded}, python says {oracle_verdict}",
                case.name
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
