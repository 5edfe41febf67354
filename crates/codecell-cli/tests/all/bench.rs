//! `codecell bench --json --quick`: every row of the table, for both guests.

use crate::common::codecell;
use serde_json::Value;

/// The rows a harness reads, each present for every guest.
const ROWS: [&str; 21] = [
    "fresh_run",
    "fresh_run_after_10ms",
    "native_after_10ms_slowdown",
    "fresh_run_fuel",
    "memory_per_live_instance",
    "memory_per_idle_slot",
    "tool_call",
    "tool_call_awaited",
    "tool_calls_100",
    "loop_1e6",
    "loop_1e6_fuel",
    "metering_fuel_vs_epoch",
    "fuel_per_second",
    "json_1mb",
    "regex_1mb",
    "sort_100k_dicts",
    "string_format",
    "decimal_arith",
    "compute_suite_median_ratio",
    "runs_per_second_1_job",
    "runs_per_second_all_cores",
];

/// Rows compared with native python3 (a ratio whenever it is on PATH).
const NATIVE_ROWS: [&str; 7] = [
    "loop_1e6",
    "loop_1e6_fuel",
    "json_1mb",
    "regex_1mb",
    "sort_100k_dicts",
    "string_format",
    "decimal_arith",
];

#[test]
#[cfg_attr(
    windows,
    ignore = "needs native python3 as the oracle, which a Windows program under Wine cannot start"
)]
fn bench_json_quick_has_every_row_for_both_guests() {
    let out = codecell(&["bench", "--json", "--quick"], "");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let guests = report["guests"].as_array().expect("guests");
    let names: Vec<&str> = guests.iter().filter_map(|g| g["guest"].as_str()).collect();
    assert_eq!(names, ["cpython", "rustpython"]);
    let native = report["native_python"].is_string();
    for guest in guests {
        let rows = guest["rows"].as_array().expect("rows");
        for name in ROWS {
            let row = rows
                .iter()
                .find(|r| r["name"] == name)
                .unwrap_or_else(|| panic!("{}: no row {name}", guest["guest"]));
            let memory = name.starts_with("memory_");
            // Memory is only read on Linux; every other figure is measured everywhere.
            if !memory || cfg!(target_os = "linux") {
                let median = row["median"].as_f64();
                assert!(median.is_some_and(|m| m >= 0.0), "{row}");
                assert!(row["p10"].as_f64() <= row["p90"].as_f64(), "{row}");
            }
            if native && NATIVE_ROWS.contains(&name) {
                assert!(row["ratio"].as_f64().is_some_and(|r| r > 0.0), "{row}");
            }
        }
        let awaited = rows
            .iter()
            .find(|r| r["name"] == "tool_call_awaited")
            .unwrap();
        assert!(
            awaited["ratio"].as_f64().is_some_and(|r| r > 0.0),
            "{awaited}"
        );
        let after = rows
            .iter()
            .find(|r| r["name"] == "fresh_run_after_10ms")
            .unwrap();
        assert!(after["ratio"].as_f64().is_some_and(|r| r > 0.0), "{after}");
        let fresh = rows.iter().find(|r| r["name"] == "fresh_run").unwrap();
        assert!(fresh["samples"].as_u64().unwrap() >= 3, "{fresh}");
    }
}

#[test]
fn bench_refuses_an_unknown_guest() {
    let out = codecell(&["bench", "--guest", "jython", "--quick"], "");
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
}
