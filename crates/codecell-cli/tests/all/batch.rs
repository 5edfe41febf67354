//! `codecell batch`: JSON Lines in, one outcome line per program out, bad lines as outcomes,
//! input order on request, flat memory on long inputs, reproducible seeded runs.

use crate::common::{codecell, run};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::Command;

/// Every guest, by its `--guest` name.
fn guests() -> impl Iterator<Item = &'static str> {
    codecell::ALL_GUESTS
        .into_iter()
        .map(codecell::GuestKind::name)
}

/// The outcome lines of a batch, parsed; panics on a line that is not one JSON object.
fn outcomes(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn lines_of(programs: &[Value]) -> String {
    programs.iter().map(|p| format!("{p}\n")).collect()
}

/// A batch of `programs` on stdin with `args`; its exit status must be 0.
fn batch(args: &[&str], programs: &[Value]) -> Vec<Value> {
    let mut all = vec!["batch"];
    all.extend_from_slice(args);
    let out = codecell(&all, &lines_of(programs));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    outcomes(&out.stdout)
}

/// Lines per guest: 10,000 (issue 11's figure); 300 on Windows, where a fresh run copies the
/// guest's whole initial heap (wasmtime has no copy-on-write memory images there) and 10,000
/// RustPython runs take six minutes under Wine.
const PRINT_LINES: usize = if cfg!(windows) { 300 } else { 10_000 };

#[test]
fn ten_thousand_print_lines_give_ten_thousand_ok_outcomes_on_each_guest() {
    for guest in guests() {
        let mut input = tempfile::NamedTempFile::new().unwrap();
        for i in 0..PRINT_LINES {
            writeln!(input, "{}", json!({"id": i, "code": "print(1+1)"})).unwrap();
        }
        let path = input.path().to_string_lossy().into_owned();
        let out = codecell(&["batch", &path, "--jobs", "2", "--guest", guest], "");
        assert_eq!(out.status.code(), Some(0), "{guest}");
        let got = outcomes(&out.stdout);
        assert_eq!(got.len(), PRINT_LINES, "{guest}");
        let mut ids = BTreeSet::new();
        for o in &got {
            assert_eq!(o["status"], "ok", "{guest}: {o}");
            assert_eq!(o["stdout"], "2\n", "{guest}: {o}");
            assert!(
                ids.insert(o["id"].as_u64().unwrap()),
                "{guest}: id twice: {o}"
            );
        }
        assert_eq!(ids, (0..PRINT_LINES as u64).collect(), "{guest}");
        let summary = String::from_utf8_lossy(&out.stderr);
        assert!(
            summary.contains(&format!(
                "{PRINT_LINES} runs, {PRINT_LINES} ok, 0 error, 0 limit"
            )),
            "{guest}: {summary}"
        );
    }
}

#[test]
fn each_outcome_line_is_the_id_and_exactly_the_run_json_fields() {
    let got = batch(&[], &[json!({"id": {"k": [1]}, "code": "print('hi')"})]);
    let fields: BTreeSet<&str> = got[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let expected: BTreeSet<&str> = [
        "id",
        "status",
        "stdout",
        "stderr",
        "truncated",
        "error",
        "limit",
        "fuel_used",
        "duration_ms",
        "tool_calls",
    ]
    .into();
    assert_eq!(fields, expected);
    assert_eq!(got[0]["id"], json!({"k": [1]}));
    assert_eq!(got[0]["stdout"], "hi\n");
}

#[test]
fn bad_lines_are_error_outcomes_and_the_batch_goes_on() {
    let long = format!("{{\"id\": 9, \"code\": \"{}\"}}", "x".repeat(5 << 20));
    let input = [
        "not json",
        "",
        "   ",
        r#"{"id": 1}"#,
        r#"{"id": 2, "code": "print(1)", "fule": 5}"#,
        r#"{"id": 3, "code": "print(1)", "guest": "jython"}"#,
        r#"{"id": 4, "code": "print(1)", "limits": {"memory_mb": 1}}"#,
        r#"{"id": 5, "code": "print(1)", "limits": {"fuel": "lots"}}"#,
        &long,
        r#"{"id": 6, "code": "print('still here')"}"#,
    ]
    .join("\n");
    let out = codecell(&["batch", "--ordered", "--jobs", "2"], &input);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = outcomes(&out.stdout);
    assert_eq!(
        got.len(),
        8,
        "blank lines are skipped, every other line answered: {got:?}"
    );
    let ids: Vec<Value> = got.iter().map(|o| o["id"].clone()).collect();
    assert_eq!(
        ids,
        [
            json!(null),
            json!(1),
            json!(2),
            json!(3),
            json!(4),
            json!(5),
            json!(null),
            json!(6)
        ]
    );
    for (o, line) in got[..7].iter().zip([1, 4, 5, 6, 7, 8, 9]) {
        assert_eq!(o["status"], "error", "{o}");
        assert_eq!(o["error"]["type"], "BatchInputError", "{o}");
        let message = o["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("line {line}:")), "{o}");
    }
    assert!(
        got[4]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("memory"),
        "{}",
        got[4]
    );
    assert!(
        got[6]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than"),
        "{}",
        got[6]
    );
    assert_eq!(got[7]["status"], "ok");
    assert_eq!(got[7]["stdout"], "still here\n");
}

#[test]
fn ordered_keeps_input_order_when_an_early_program_finishes_last() {
    // The first program is slow: in completion order it comes out after the others.
    let slow = "n = 0\nfor i in range(300000):\n    n += i\nprint(n)";
    let mut programs = vec![json!({"id": 0, "code": slow})];
    programs.extend((1..20).map(|i| json!({"id": i, "code": format!("print({i})")})));
    let ordered = batch(&["--ordered", "--jobs", "2"], &programs);
    let ids: Vec<u64> = ordered.iter().map(|o| o["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, (0..20).collect::<Vec<_>>());
    let unordered = batch(&["--jobs", "2"], &programs);
    let ids: Vec<u64> = unordered
        .iter()
        .map(|o| o["id"].as_u64().unwrap())
        .collect();
    assert_ne!(
        ids[0], 0,
        "the slow program finished first: the test shows nothing"
    );
    assert_eq!(
        ids.iter().copied().collect::<BTreeSet<_>>(),
        (0..20).collect()
    );
}

#[test]
fn per_program_limits_and_guest_replace_the_flags() {
    let spin = "while True:\n    pass";
    let programs = [
        json!({"id": "flag", "code": spin}),
        json!({"id": "own", "code": spin, "limits": {"fuel": 1_000_000}}),
        json!({"id": "rp", "code": "import sys\nprint(sys.implementation.name)", "guest": "rustpython"}),
    ];
    let got = batch(
        &["--ordered", "--timeout-ms", "300", "--fuel", "100000000000"],
        &programs,
    );
    assert_eq!(got[0]["limit"], "deadline", "{}", got[0]);
    assert_eq!(got[1]["limit"], "fuel", "{}", got[1]);
    assert_eq!(got[2]["stdout"], "rustpython\n", "{}", got[2]);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "calls the demo catalog file's python3 command tools, which a Windows program under Wine cannot start"
)]
fn the_tools_flag_puts_a_catalog_behind_every_program() {
    let catalog = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/demo/catalog.json")
        .to_string_lossy()
        .into_owned();
    let code = "print(call_tool('units', 'convert', value=100, from_unit='C', to_unit='F'))";
    let got = batch(&["--tools", &catalog], &[json!({"id": 1, "code": code})]);
    assert_eq!(got[0]["status"], "ok", "{}", got[0]);
    assert_eq!(got[0]["tool_calls"].as_array().unwrap().len(), 1);
}

/// Prints what a run cannot know in advance unless it is seeded.
const UNPREDICTABLE: &str = "import random, time, uuid, os\n\
print(random.random(), random.randint(0, 10**9))\n\
print(time.time(), time.monotonic(), time.perf_counter())\n\
print(uuid.uuid4(), os.urandom(8).hex())\n\
import datetime\nprint(datetime.datetime.now().year)";

#[test]
fn the_same_seed_gives_byte_identical_stdout_across_100_runs_on_each_guest() {
    for guest in guests() {
        let mut programs: Vec<Value> = (0..100)
            .map(|i| json!({"id": i, "code": UNPREDICTABLE, "seed": 7}))
            .collect();
        programs.push(json!({"id": "other", "code": UNPREDICTABLE, "seed": 8}));
        programs.push(json!({"id": "unseeded-a", "code": UNPREDICTABLE}));
        programs.push(json!({"id": "unseeded-b", "code": UNPREDICTABLE}));
        let got = batch(&["--guest", guest, "--jobs", "2", "--ordered"], &programs);
        let by_id: BTreeMap<String, &Value> =
            got.iter().map(|o| (o["id"].to_string(), o)).collect();
        let first = &got[0]["stdout"];
        assert_eq!(got[0]["status"], "ok", "{guest}: {}", got[0]);
        for o in &got[..100] {
            assert_eq!(&o["stdout"], first, "{guest}: seed 7 differs: {o}");
        }
        let text = first.as_str().unwrap();
        assert!(
            text.contains("2026"),
            "{guest}: the virtual clock starts in 2026: {text}"
        );
        assert_ne!(
            &by_id["\"other\""]["stdout"], first,
            "{guest}: seed 8 gave seed 7's output"
        );
        assert_ne!(
            by_id["\"unseeded-a\""]["stdout"], by_id["\"unseeded-b\""]["stdout"],
            "{guest}: unseeded runs must differ"
        );
    }
}

#[test]
fn the_seed_flag_makes_codecell_run_reproducible() {
    let a = codecell(&["run", "-", "--seed", "3"], UNPREDICTABLE);
    let b = codecell(&["run", "-", "--seed", "3"], UNPREDICTABLE);
    assert_eq!(
        a.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    assert_eq!(a.stdout, b.stdout);
}

/// Peak RSS of a RustPython batch of `lines` programs, each padded with 8 KiB of comment.
fn peak_rss_of_batch(lines: usize) -> (u64, usize) {
    let mut input = tempfile::NamedTempFile::new().unwrap();
    let pad = "#".repeat(8 << 10);
    for i in 0..lines {
        writeln!(
            input,
            "{}",
            json!({"id": i, "code": format!("print({i})\n{pad}")})
        )
        .unwrap();
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_codecell"));
    command
        .args(["batch", "--guest", "rustpython", "--jobs", "2"])
        .arg(input.path());
    let ran = run(command);
    assert_eq!(
        ran.code,
        Some(0),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let answered = String::from_utf8_lossy(&ran.stdout).lines().count();
    (ran.peak_rss, answered)
}

#[test]
#[cfg_attr(
    windows,
    ignore = "peak RSS is measured on Unix only, and 10,000 fresh runs take minutes under Wine"
)]
fn memory_stays_flat_however_long_the_input_is() {
    let (short, answered_short) = peak_rss_of_batch(250);
    // 10,000 programs of 8 KiB: 80 MiB of input, which a batch holding its input would keep,
    // and 10,000 runs, over which a leak of 2.4 KiB a run would show. (It was 40,000 programs
    // of 2 KiB: the same input for four times the runs, a minute of CI.)
    let (long, answered_long) = peak_rss_of_batch(10_000);
    assert_eq!((answered_short, answered_long), (250, 10_000));
    if cfg!(unix) {
        assert!(
            long < short + (24 << 20),
            "peak RSS grew with the input: {short} bytes for 250 lines, {long} for 10,000"
        );
    }
}

/// A harness that sends one program and waits for its outcome before sending the next: each
/// outcome line reaches it while stdin is still open (outcomes are written out in bursts, but
/// never held back waiting for more input).
#[test]
fn each_outcome_is_written_out_while_the_harness_waits_with_stdin_open() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_codecell"))
        .args(["batch", "--jobs", "2"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("codecell starts");
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    for i in 0..3 {
        writeln!(
            stdin,
            "{}",
            json!({"id": i, "code": format!("print({i} * 7)")})
        )
        .unwrap();
        stdin.flush().unwrap();
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("no outcome for program {i} while stdin is open"));
        let got: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(got["id"], i, "{got}");
        assert_eq!(got["stdout"], format!("{}\n", i * 7), "{got}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
