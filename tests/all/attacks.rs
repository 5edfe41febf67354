//! The attack corpus (`fixtures/attacks/*.py`): each snippet states the outcome it must end with.
//!
//! Header lines: `# expect: ok`, `# expect: error [ExceptionType]`, or
//! `# expect: limit kind1|kind2 [truncated]`. A line `# expect[rustpython]: …` replaces the
//! expectation for that guest only; each such line must say why on the line after it.
//!
//! Every attack is also held to bounds on what the host spends for it: the size of its `--json`
//! outcome (`# bound: json<=BYTES`, default [`DEFAULT_JSON_BOUND`]) and its wall time (the
//! deadline plus [`WALL_SLACK`], for every attack).

use codecell::{GuestKind, Limits, Outcome, Status};
use codecell_tests::{fixture, run_with};
use std::time::{Duration, Instant};

/// Largest `--json` outcome an attack may produce unless its header says otherwise: two output
/// caps (1,000 bytes each here), the clipped error report, and 1,000 call records.
const DEFAULT_JSON_BOUND: usize = 200_000;

/// How far past its deadline a run may end: the bound is 250 ms on an idle machine; the
/// suite runs tests in parallel, so this leaves room for the scheduler, not for host work.
const WALL_SLACK: Duration = Duration::from_millis(1000);

codecell_tests::for_each_guest! {
    struct Expectation {
        status: Status,
        detail: Vec<String>,
        truncated: bool,
        json_bound: usize,
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
        let json_bound = source
            .lines()
            .find_map(|l| l.strip_prefix("# bound: json<="))
            .map_or(DEFAULT_JSON_BOUND, |n| {
                n.trim().parse().unwrap_or_else(|_| panic!("{}: bad bound {n:?}", path.display()))
            });
        Expectation {
            status,
            detail,
            truncated,
            json_bound,
        }
    }

    fn check(name: &str, exp: &Expectation, outcome: &Outcome) -> Result<(), String> {
        let json = serde_json::to_string(outcome).expect("an outcome serialises").len();
        if json > exp.json_bound {
            return Err(format!(
                "{name}: the --json outcome is {json} bytes, over its bound of {}",
                exp.json_bound
            ));
        }
        if outcome.status() != exp.status {
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
            Status::Limit => outcome.limit().map(|l| l.as_str().to_string()),
            _ => outcome.error().map(|e| e.kind.clone()),
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
            let started = Instant::now();
            let outcome = run_with(GUEST, &source, &limits).await;
            let took = started.elapsed();
            let name = path.file_name().unwrap().to_string_lossy();
            if took > limits.deadline + WALL_SLACK {
                failures.push(format!("{name}: took {took:?}, past the deadline of {:?}", limits.deadline));
            }
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
