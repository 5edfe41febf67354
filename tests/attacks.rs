//! The attack corpus (`fixtures/attacks/*.py`): each snippet states the outcome it must end with.
//!
//! Header lines: `# expect: ok`, `# expect: error [ExceptionType]`, or
//! `# expect: limit kind1|kind2 [truncated]`. A line `# expect[rustpython]: …` replaces the
//! expectation for that guest only; each such line must say why on the line after it.

use codecell::{GuestKind, Limits, Outcome, Status};
use codecell_tests::{fixture, run_with};
use std::time::Duration;

codecell_tests::for_each_guest! {
    struct Expectation {
        status: Status,
        detail: Vec<String>,
        truncated: bool,
    }

    fn expectation(path: &std::path::Path, source: &str, guest: GuestKind) -> Expectation {
        let for_guest = format!("# expect[{guest}]:");
        let line = source
            .lines()
            .find_map(|l| l.strip_prefix(for_guest.as_str()))
            .or_else(|| source.lines().find_map(|l| l.strip_prefix("# expect:")))
            .unwrap_or_else(|| panic!("{} has no `# expect:` line", path.display()));
        let mut words = line.split_whitespace();
        let status = match words.next() {
            Some("ok") => Status::Ok,
            Some("error") => Status::Error,
            Some("limit") => Status::Limit,
            other => panic!("{}: bad status {other:?}", path.display()),
        };
        let mut detail = Vec::new();
        let mut truncated = false;
        for w in words {
            if w == "truncated" {
                truncated = true;
            } else {
                detail.extend(w.split('|').map(str::to_string));
            }
        }
        Expectation {
            status,
            detail,
            truncated,
        }
    }

    fn check(name: &str, exp: &Expectation, outcome: &Outcome) -> Result<(), String> {
        if outcome.status != exp.status {
            return Err(format!(
                "{name}: expected {:?}, got {outcome:#?}",
                exp.status
            ));
        }
        if exp.truncated && !outcome.truncated {
            return Err(format!("{name}: expected truncated output"));
        }
        if outcome.stdout.len() > 1000 {
            return Err(format!(
                "{name}: stdout over the cap ({} bytes)",
                outcome.stdout.len()
            ));
        }
        if outcome.stdout.contains("root:") {
            return Err(format!("{name}: host data leaked: {}", outcome.stdout));
        }
        if exp.detail.is_empty() {
            return Ok(());
        }
        let got = match exp.status {
            Status::Limit => outcome.limit.map(|l| l.as_str().to_string()),
            _ => outcome.error.as_ref().map(|e| e.kind.clone()),
        };
        match got {
            Some(g) if exp.detail.contains(&g) => Ok(()),
            other => Err(format!(
                "{name}: expected one of {:?}, got {other:?} ({outcome:#?})",
                exp.detail
            )),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_attack_ends_as_expected() {
        let limits = Limits {
            deadline: Duration::from_millis(1500),
            max_output_bytes: 1000,
            fuel: 2_000_000_000,
            ..Limits::default()
        };
        let mut entries: Vec<_> = std::fs::read_dir(fixture("attacks"))
            .expect("fixtures/attacks exists")
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "py"))
            .collect();
        entries.sort();
        assert!(
            entries.len() >= 20,
            "the attack corpus has only {} snippets",
            entries.len()
        );
        let mut failures = Vec::new();
        for path in &entries {
            let source = std::fs::read_to_string(path).unwrap();
            let exp = expectation(path, &source, GUEST);
            let outcome = run_with(GUEST, &source, &limits).await;
            let name = path.file_name().unwrap().to_string_lossy();
            if let Err(e) = check(&name, &exp, &outcome) {
                failures.push(e);
            }
        }
        assert!(
            failures.is_empty(),
            "{} attack(s) did not end as expected:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}
