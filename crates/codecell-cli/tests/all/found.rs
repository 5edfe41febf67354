//! The differential fuzzer's found cases (`fixtures/differential/found/`) as regression tests:
//! each guest still prints exactly what the case's `.json` records for it (seeded, so
//! byte-identical), and the oracle explains every difference from the recorded native output
//! by a known, documented difference.

use crate::common::codecell;
use codecell_fuzz::oracle::{Observed, Verdict, compare};
use serde_json::{Value, json};
use std::path::PathBuf;

fn found_cases() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/differential/found");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures/differential/found exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    cases.sort();
    cases
}

fn observed(value: &Value) -> Observed {
    serde_json::from_value(value.clone()).expect("an observed output")
}

#[test]
fn every_found_case_still_prints_its_recorded_outputs_and_is_explained() {
    let cases = found_cases();
    assert!(!cases.is_empty(), "the fuzzer's found cases are missing");
    for case in cases {
        let code = std::fs::read_to_string(&case).unwrap();
        let recorded: Value =
            serde_json::from_str(&std::fs::read_to_string(case.with_extension("json")).unwrap())
                .unwrap();
        let mut seen = Vec::new();
        for guest in ["cpython", "rustpython"] {
            let line = json!({"id": guest, "code": code, "guest": guest, "seed": recorded["seed"]});
            let out = codecell(&["batch"], &format!("{line}\n"));
            let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
            let error = match outcome["status"].as_str() {
                Some("ok") => None,
                _ => outcome["error"]["type"].as_str().map(String::from),
            };
            let guest_seen = Observed {
                stdout: outcome["stdout"].as_str().unwrap().to_string(),
                error,
            };
            assert_eq!(
                guest_seen,
                observed(&recorded[guest]),
                "{}: {guest} no longer prints what was recorded",
                case.display()
            );
            seen.push(guest_seen);
        }
        let verdict = compare(&observed(&recorded["native"]), &seen[0], &seen[1]);
        assert!(
            !matches!(verdict, Verdict::Diverges(_)),
            "{}: an unexplained divergence: {verdict:?}",
            case.display()
        );
    }
}
