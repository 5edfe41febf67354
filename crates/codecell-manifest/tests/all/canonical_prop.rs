//! Property test: canonical JSON equals python3's for arbitrary values and texts. One python3
//! process answers every case (one JSON text per line in, one canonical line out).

use crate::common;
use codecell_manifest::canonical;
use proptest::prelude::*;
use serde_json::{Map, Number, Value};
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};

const ORACLE: &str = r#"
import json, sys
for raw in sys.stdin.buffer:
    text = raw.decode("utf-8").rstrip("\n")
    value = json.loads(text)
    out = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    sys.stdout.buffer.write(out.encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()
"#;

struct Oracle {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

fn oracle() -> &'static Mutex<Oracle> {
    static ORACLE_PROCESS: OnceLock<Mutex<Oracle>> = OnceLock::new();
    // The oracle lives as long as the test process; it exits when its stdin closes with us.
    #[allow(clippy::zombie_processes)]
    ORACLE_PROCESS.get_or_init(|| {
        let mut child = Command::new(common::python3())
            .args(["-c", ORACLE])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn python3");
        Mutex::new(Oracle {
            stdin: child.stdin.take().expect("stdin"),
            stdout: BufReader::new(child.stdout.take().expect("stdout")),
        })
    })
}

/// What python3 makes of one JSON text (which must not contain a raw newline).
fn python_canonical(text: &str) -> String {
    let mut oracle = oracle().lock().unwrap_or_else(|e| e.into_inner());
    writeln!(oracle.stdin, "{text}").expect("write to python3");
    oracle.stdin.flush().expect("flush");
    let mut line = String::new();
    oracle.stdout.read_line(&mut line).expect("read python3");
    assert!(line.ends_with('\n'), "python3 died on {text:?}");
    line.pop();
    line
}

fn finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |x| x.is_finite()),
        (-1e6f64..1e6),
        (-20i32..25, 1u64..100_000).prop_map(|(e, m)| m as f64 * 10f64.powi(e)),
        Just(-0.0),
        // Exact binary fractions with 16-17 digits: where shortest-digit ties happen.
        ((1u64 << 44)..(1u64 << 53), 1u32..6).prop_map(|(m, k)| m as f64 / f64::from(1u32 << k)),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        finite_f64().prop_map(|x| Value::Number(Number::from_f64(x).expect("finite"))),
        any::<String>().prop_map(Value::String),
        "[\\x00-\\x20\"\\\\/a\u{e9}\u{2028}\u{1F600}]{0,8}".prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    #[cfg_attr(windows, ignore = "needs native python3 as the oracle, which a Windows program under Wine cannot start")]
    fn value_canonical_json_matches_python(v in value()) {
        let text = serde_json::to_string(&v).expect("serialize");
        prop_assert_eq!(canonical::to_string(&v), python_canonical(&text));
    }

    #[test]
    #[cfg_attr(windows, ignore = "needs native python3 as the oracle, which a Windows program under Wine cannot start")]
    fn text_canonical_json_matches_python_with_big_integers(
        ints in prop::collection::vec("-?[1-9][0-9]{0,60}|0", 1..5),
        floats in prop::collection::vec(finite_f64(), 0..3),
    ) {
        let mut parts: Vec<String> = ints.iter().map(|i| format!("{{\"k{}\": {i}}}", i.len())).collect();
        parts.extend(floats.iter().map(|x| format!("{x:e}")));
        let text = format!("[{}]", parts.join(", "));
        prop_assert_eq!(canonical::canonicalize_str(&text).expect("canonical"), python_canonical(&text));
    }
}

/// 50,000 floats from random bit patterns and tie-prone binary fractions, in one python3 call.
#[test]
#[cfg_attr(
    windows,
    ignore = "needs native python3 as the oracle, which a Windows program under Wine cannot start"
)]
fn float_repr_matches_python_in_bulk() {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut floats = Vec::new();
    while floats.len() < 50_000 {
        let bits = next();
        let x = if floats.len() % 2 == 0 {
            f64::from_bits(bits)
        } else {
            (bits >> 11) as f64 / f64::from(1u32 << (bits % 8))
        };
        if x.is_finite() {
            floats.push(x);
        }
    }
    let text = serde_json::to_string(&floats).expect("serialize");
    let python = python_canonical(&text);
    let python: Vec<&str> = python.trim_matches(['[', ']']).split(',').collect();
    assert_eq!(python.len(), floats.len());
    for (x, want) in floats.iter().zip(python) {
        assert_eq!(canonical::float_repr(*x), want, "bits {:#x}", x.to_bits());
    }
}
