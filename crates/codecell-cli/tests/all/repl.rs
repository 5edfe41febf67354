//! `codecell repl` with cells on stdin: each cell's outcome, state shared between cells, and a
//! journal saved by one process and restored by the next.

use crate::common::codecell;
use serde_json::Value;

fn outcomes(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON outcome per line"))
        .collect()
}

#[test]
fn a_cell_that_defines_x_is_seen_by_the_next_on_both_guests() {
    for guest in codecell::ALL_GUESTS.map(codecell::GuestKind::name) {
        let cells = "# %%\nx = 40\ndef f():\n    return x + 2\n# %%\n\n# %%\nprint(f())\n";
        let out = codecell(&["repl", "--guest", guest], cells);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n", "{guest}");
        let json = codecell(&["repl", "--json", "--guest", guest], cells);
        let got = outcomes(&json.stdout);
        assert_eq!(got.len(), 2, "a blank cell is skipped: {got:?}");
        assert_eq!(got[0]["status"], "ok");
        assert_eq!(got[1]["stdout"], "42\n");
    }
}

#[test]
fn a_failing_cell_is_reported_and_the_next_cell_still_runs() {
    let out = codecell(
        &["repl", "--json"],
        "x = 1\n# %%\nraise KeyError('k')\n# %%\nprint(x)\n",
    );
    let got = outcomes(&out.stdout);
    assert_eq!(got[1]["status"], "error");
    assert_eq!(got[1]["error"]["type"], "KeyError");
    assert_eq!(got[2]["stdout"], "1\n");
    assert_eq!(out.status.code(), Some(1), "a failed cell fails the run");
}

#[test]
fn a_trapped_session_ends_and_the_rest_of_the_cells_are_refused() {
    let out = codecell(
        &["repl", "--json", "--fuel", "200000000"],
        "x = 1\n# %%\nwhile True:\n    pass\n# %%\nprint(x)\n",
    );
    let got = outcomes(&out.stdout);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1]["limit"], "fuel");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the session has ended"), "{stderr}");
    let restarted = codecell(
        &["repl", "--json", "--fuel", "200000000", "--restart-on-trap"],
        "x = 1\n# %%\nwhile True:\n    pass\n# %%\nprint('x' in globals())\n",
    );
    assert_eq!(outcomes(&restarted.stdout)[2]["stdout"], "False\n");
}

#[test]
fn a_session_saved_by_one_process_restores_in_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("session.json");
    let journal = journal.to_str().unwrap();
    let first = codecell(
        &["repl", "--save", journal],
        "import random, time\nr = random.random()\nt = time.time()\n# %%\nprint(r, t)\n",
    );
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let printed = String::from_utf8_lossy(&first.stdout).into_owned();
    let second = codecell(&["repl", "--restore", journal], "print(r, t)\n");
    assert_eq!(second.status.code(), Some(0), "{second:?}");
    // The replayed cells print to nobody; the new cell sees the same r and t.
    assert_eq!(String::from_utf8_lossy(&second.stdout), printed);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("restored 2 cell(s)"), "{stderr}");
    std::fs::write(journal, r#"{"format": 1}"#).unwrap();
    let bad = codecell(&["repl", "--restore", journal], "print(1)\n");
    assert_eq!(
        bad.status.code(),
        Some(2),
        "a broken journal is bad input: {bad:?}"
    );
}
