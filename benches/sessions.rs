//! Session benchmarks, every guest side by side in one run: a turn of `print(1+1)` and of
//! `x += 1` in a live session, beside a fresh run of `print(1+1)` measured in the same run;
//! then the host memory one idle session holds (Linux: RSS growth over 32 sessions ÷ 32).
//!
//! `cargo bench --bench sessions`. Bench ids end in the guest's name.

use codecell::{ALL_GUESTS, Limits, Session, SessionLimits};
use codecell_tests::engine;
use criterion::{Criterion, criterion_group, criterion_main};

/// Limits for a session that runs as many turns as criterion asks for.
fn unbounded() -> SessionLimits {
    SessionLimits {
        max_turns: u32::MAX,
        max_total_fuel: u64::MAX,
        ..SessionLimits::default()
    }
}

fn turns(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    for guest in ALL_GUESTS {
        let engine = engine(guest);
        let limits = Limits::default();
        c.bench_function(&format!("session/fresh_run_print/{}", guest.name()), |b| {
            b.iter(|| {
                rt.block_on(engine.run_snippet("print(1+1)", None, &limits))
                    .expect("run")
            })
        });
        let mut session = rt
            .block_on(Session::new(&engine, None, limits.clone(), unbounded()))
            .expect("session");
        rt.block_on(session.execute("x = 0")).expect("turn");
        for (name, code) in [("turn_print", "print(1+1)"), ("turn_increment", "x += 1")] {
            c.bench_function(&format!("session/{name}/{}", guest.name()), |b| {
                b.iter(|| rt.block_on(session.execute(code)).expect("turn"))
            });
        }
        idle_memory(&rt, guest);
    }
}

/// Prints the resident memory 32 idle sessions add, per session.
fn idle_memory(rt: &tokio::runtime::Runtime, guest: codecell::GuestKind) {
    let Some(before) = rss_bytes() else {
        return;
    };
    let sessions: Vec<Session> = (0..32)
        .map(|_| {
            let mut s = rt
                .block_on(Session::new(
                    &engine(guest),
                    None,
                    Limits::default(),
                    unbounded(),
                ))
                .expect("session");
            rt.block_on(s.execute("x = 1")).expect("turn");
            s
        })
        .collect();
    let after = rss_bytes().unwrap_or(before);
    println!(
        "session/idle_memory/{}: {:.1} MiB of host RSS per idle session (32 live)",
        guest.name(),
        after.saturating_sub(before) as f64 / 32.0 / f64::from(1 << 20)
    );
    drop(sessions);
}

/// This process's resident set size, where the OS reports it.
fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

criterion_group!(benches, turns);
criterion_main!(benches);
