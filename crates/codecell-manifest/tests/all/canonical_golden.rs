//! Canonical JSON against goldens produced by python3 (`tests/golden/gen_canonical.py`).

use codecell_manifest::canonical;
use serde_json::Value;

#[test]
fn canonical_text_matches_python_goldens() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/canonical.json"
    ))
    .expect("golden file");
    let cases: Vec<Value> = serde_json::from_str(&text).expect("golden JSON");
    assert!(cases.len() > 700, "golden corpus unexpectedly small");
    let (mut ok, mut errors, mut via_value) = (0, 0, 0);
    for case in &cases {
        let input = case["input"].as_str().expect("input");
        if let Some(expected) = case.get("canonical").and_then(Value::as_str) {
            let got = canonical::canonicalize_str(input)
                .unwrap_or_else(|e| panic!("{input:?} refused: {e}"));
            assert_eq!(got, expected, "text path for {input:?}");
            ok += 1;
            // The Value path must agree whenever the value fits in a serde_json::Value.
            match canonical::parse_exact(input) {
                Ok(value) => {
                    assert_eq!(
                        canonical::to_string(&value),
                        expected,
                        "value path for {input:?}"
                    );
                    via_value += 1;
                }
                Err(canonical::CanonicalError::IntegerTooLarge(_)) => {}
                Err(e) => panic!("{input:?}: parse_exact refused: {e}"),
            }
        } else {
            assert!(
                canonical::canonicalize_str(input).is_err(),
                "{input:?} should be refused"
            );
            assert!(
                canonical::parse_exact(input).is_err(),
                "{input:?} should be refused"
            );
            errors += 1;
        }
    }
    assert!(
        ok > 700 && errors >= 10 && via_value > 600,
        "{ok} {errors} {via_value}"
    );
}

#[test]
fn float_repr_examples() {
    for (x, s) in [
        (3600.0, "3600.0"),
        (1e16, "1e+16"),
        (1e15, "1000000000000000.0"),
        (1e-7, "1e-07"),
        (1e-4, "0.0001"),
        (1e-5, "1e-05"),
        (-0.0, "-0.0"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1.5e300, "1.5e+300"),
        (5e-324, "5e-324"),
        (253402300799.0, "253402300799.0"),
    ] {
        assert_eq!(canonical::float_repr(x), s);
    }
}

#[test]
fn non_finite_and_big_integers_are_refused_where_they_cannot_be_exact() {
    assert!(matches!(
        canonical::canonicalize_str("[1e999]"),
        Err(canonical::CanonicalError::NonFinite(_))
    ));
    assert!(matches!(
        canonical::parse_exact("{\"a\": 123456789012345678901234567890}"),
        Err(canonical::CanonicalError::IntegerTooLarge(_))
    ));
    assert_eq!(
        canonical::canonicalize_str("{\"a\": 123456789012345678901234567890}").unwrap(),
        "{\"a\":123456789012345678901234567890}"
    );
    assert_eq!(
        canonical::hash(&serde_json::json!({"a": 1})),
        "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    );
}

// The literal is the exact binary value on purpose: it sits halfway between two 16-digit strings.
#[allow(clippy::excessive_precision)]
#[test]
fn float_repr_breaks_ties_to_even_like_python() {
    assert_eq!(
        canonical::float_repr(-977669004256545.25),
        "-977669004256545.2"
    );
    assert_eq!(
        canonical::float_repr(977669004256545.25),
        "977669004256545.2"
    );
}
