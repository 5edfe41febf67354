//! Canonical JSON (the manifest ids' hash input) on arbitrary text.

use codecell_manifest::canonical::{canonicalize_str, parse_exact, to_string};

/// Panics if canonical JSON is not a fixed point, or disagrees with serde_json on a document
/// both accept.
pub fn check(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    if let Ok(canonical) = canonicalize_str(text) {
        assert_eq!(
            canonicalize_str(&canonical).as_deref(),
            Ok(canonical.as_str()),
            "canonical form is not a fixed point"
        );
        let reparsed = match serde_json::from_str::<serde_json::Value>(&canonical) {
            Ok(value) => value,
            // Canonical JSON keeps integers exactly, however long; serde_json reads one past
            // u64 as an f64 and refuses it beyond f64's range (a 483-digit integer, found by
            // the fuzzer). It must then refuse the original document too.
            Err(e) => {
                assert!(
                    serde_json::from_str::<serde_json::Value>(text).is_err(),
                    "serde_json refuses the canonical form ({e}) of a document it reads"
                );
                return;
            }
        };
        if let Ok(exact) = parse_exact(text) {
            assert_eq!(
                to_string(&exact),
                canonical,
                "two canonical forms of one document"
            );
            assert!(same(&exact, &reparsed), "{exact} != {reparsed}");
        }
    }
    if let (Ok(exact), Ok(theirs)) = (
        parse_exact(text),
        serde_json::from_str::<serde_json::Value>(text),
    ) {
        assert!(
            same(&exact, &theirs),
            "parse_exact {exact} != serde_json {theirs}"
        );
    }
}

/// Equal values, numbers compared by value (serde_json's float parsing is not always the
/// correctly rounded one without its `float_roundtrip` feature: one ULP is allowed).
fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value::*;
    match (a, b) {
        (Number(x), Number(y)) => match (x.as_f64(), y.as_f64()) {
            _ if x == y => true,
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() => {
                x == y || (x - y).abs() <= f64::EPSILON * x.abs().max(y.abs())
            }
            _ => false,
        },
        (Array(x), Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Object(x), Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
