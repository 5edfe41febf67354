//! Every corpus source gets exactly the verdict (and import roots) recorded for the seed.

use crate::common::{Expected, corpus};
use codecell_policy::validate_dynamic_source;

#[test]
fn corpus_is_broad() {
    let cases = corpus();
    assert!(cases.len() >= 80, "only {} corpus cases", cases.len());
    let ok = cases
        .iter()
        .filter(|c| matches!(c.expected, Expected::Ok(_)))
        .count();
    assert!(
        ok >= 30 && cases.len() - ok >= 30,
        "corpus should mix passes and failures"
    );
}

#[test]
fn corpus_verdicts_match_expected() {
    let mut failures = Vec::new();
    for case in corpus() {
        let got = validate_dynamic_source(&case.source);
        if Expected::of(&got) != case.expected {
            failures.push(format!(
                "{}: expected {:?}, got {:?}",
                case.name, case.expected, got
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
