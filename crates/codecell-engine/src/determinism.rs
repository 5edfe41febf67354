//! Deterministic runs: what a run with a seed sees instead of the host's randomness and clocks.
//!
//! With [`crate::Limits::seed`] set, the run's WASI context gets
//!
//! - a secure and an insecure random generator (ChaCha12, `rand`'s `StdRng`) seeded from the
//!   seed, and a fixed `insecure-seed`: every `os.urandom`, so Python's `random` (which the
//!   guest reseeds from `os.urandom` at the start of every run), `uuid.uuid4()`, `secrets` and
//!   the RustPython guest's Rust generator draw the same bytes in every run;
//! - a virtual wall clock starting at [`VIRTUAL_EPOCH_SECS`] and a virtual monotonic clock
//!   starting at zero, each advanced by [`VIRTUAL_TICK`] on every read: `time.time()`,
//!   `datetime.now()`, `time.monotonic()` and `time.perf_counter()` give the same sequence in
//!   every run.
//!
//! Not virtual: the deadline (always the host's real clock), `time.sleep` and other WASI waits
//! (they wait in real time; the virtual clock does not jump by what they waited), and the
//! host-side fields of the outcome (`duration_ms`, each tool call's `duration_us`). Tool
//! handlers run on the host and are as deterministic as they are. The hash seed of `str` is
//! part of the guest's pre-initialised snapshot, so it is the same in every run with or without
//! a seed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtxBuilder};

/// Where a seeded run's wall clock starts: 2026-01-01T00:00:00Z, in seconds since the Unix epoch.
pub const VIRTUAL_EPOCH_SECS: u64 = 1_767_225_600;

/// How far a seeded run's clocks advance on every read.
pub const VIRTUAL_TICK: Duration = Duration::from_millis(1);

/// Gives `builder` the seeded generators and the virtual clocks of a run seeded with `seed`.
pub(crate) fn make_deterministic(builder: &mut WasiCtxBuilder, seed: u64) {
    seed_random(builder, seed);
    builder
        .wall_clock(VirtualClock::new(VIRTUAL_EPOCH_SECS * 1_000_000_000))
        .monotonic_clock(VirtualClock::new(0));
}

/// Gives `builder` random generators seeded with `seed` (a session without a seed of its own
/// uses them with recorded real clocks, `session/clocks.rs`).
pub(crate) fn seed_random(builder: &mut WasiCtxBuilder, seed: u64) {
    use rand::SeedableRng;
    // Distinct streams for the two interfaces, so one's draws do not shift the other's.
    let secure = rand::rngs::StdRng::seed_from_u64(seed);
    let insecure = rand::rngs::StdRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
    builder
        .secure_random(secure)
        .insecure_random(insecure)
        .insecure_random_seed(u128::from(seed) << 64 | u128::from(!seed));
}

/// A clock that reads `start`, then `start + tick`, `start + 2 tick`, … in nanoseconds.
struct VirtualClock {
    next_ns: AtomicU64,
}

impl VirtualClock {
    fn new(start_ns: u64) -> Self {
        VirtualClock {
            next_ns: AtomicU64::new(start_ns),
        }
    }

    fn read_ns(&self) -> u64 {
        let tick = VIRTUAL_TICK.as_nanos() as u64;
        // Saturates instead of wrapping: a guest reading the clock 2^44 times sees it stop.
        let mut now = self.next_ns.load(Ordering::Relaxed);
        loop {
            match self.next_ns.compare_exchange_weak(
                now,
                now.saturating_add(tick),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return now,
                Err(seen) => now = seen,
            }
        }
    }
}

impl HostWallClock for VirtualClock {
    fn resolution(&self) -> Duration {
        VIRTUAL_TICK
    }

    fn now(&self) -> Duration {
        Duration::from_nanos(self.read_ns())
    }
}

impl HostMonotonicClock for VirtualClock {
    fn resolution(&self) -> u64 {
        VIRTUAL_TICK.as_nanos() as u64
    }

    fn now(&self) -> u64 {
        self.read_ns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_clock_advances_one_tick_per_read_and_saturates() {
        let clock = VirtualClock::new(5);
        assert_eq!(HostMonotonicClock::now(&clock), 5);
        assert_eq!(HostMonotonicClock::now(&clock), 5 + 1_000_000);
        let end = VirtualClock::new(u64::MAX - 1);
        assert_eq!(HostMonotonicClock::now(&end), u64::MAX - 1);
        assert_eq!(HostMonotonicClock::now(&end), u64::MAX);
        assert_eq!(HostMonotonicClock::now(&end), u64::MAX);
    }
}
