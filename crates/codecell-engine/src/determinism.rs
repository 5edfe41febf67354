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
//! A wait of the guest's event loop for its timers alone (`asyncio.sleep` with no tool call in
//! flight) is virtual too: the clocks jump by the wait and the host does not sleep, so a seeded
//! `asyncio.sleep(5)` returns at once, five virtual seconds later. A wait that times out with
//! calls in flight also advances the clocks by what it waited.
//!
//! Not virtual: the deadline (always the host's real clock), `time.sleep` and other WASI waits
//! (they wait in real time; the virtual clock does not jump by what they waited), and the
//! host-side fields of the outcome (`duration_ms`, each tool call's `duration_us`). Tool
//! handlers run on the host and are as deterministic as they are. The hash seed of `str` is
//! part of the guest's pre-initialised snapshot, so it is the same in every run with or without
//! a seed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtxBuilder};

/// Where a seeded run's wall clock starts: 2026-01-01T00:00:00Z, in seconds since the Unix epoch.
pub const VIRTUAL_EPOCH_SECS: u64 = 1_767_225_600;

/// How far a seeded run's clocks advance on every read.
pub const VIRTUAL_TICK: Duration = Duration::from_millis(1);

/// Gives `builder` the seeded generators and the virtual clocks of a run seeded with `seed`;
/// the handle returned moves those clocks.
pub(crate) fn make_deterministic(builder: &mut WasiCtxBuilder, seed: u64) -> VirtualClocks {
    seed_random(builder, seed);
    let clocks = VirtualClocks {
        wall: Arc::new(VirtualClock::new(VIRTUAL_EPOCH_SECS * 1_000_000_000)),
        monotonic: Arc::new(VirtualClock::new(0)),
    };
    builder
        .wall_clock(SharedClock(clocks.wall.clone()))
        .monotonic_clock(SharedClock(clocks.monotonic.clone()));
    clocks
}

/// A seeded run's two virtual clocks, held by the host to advance them by a virtual wait.
#[derive(Clone)]
pub(crate) struct VirtualClocks {
    wall: Arc<VirtualClock>,
    monotonic: Arc<VirtualClock>,
}

impl VirtualClocks {
    /// Moves both clocks `by` forward, as if that much time had passed.
    pub(crate) fn advance(&self, by: Duration) {
        let ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        for clock in [&self.wall, &self.monotonic] {
            // Saturating, as reads are: fetch_add would wrap.
            let _ = clock
                .next_ns
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
                    Some(now.saturating_add(ns))
                });
        }
    }
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

/// A virtual clock as WASI's context holds it, shared with the run's [`VirtualClocks`].
struct SharedClock(Arc<VirtualClock>);

impl HostWallClock for SharedClock {
    fn resolution(&self) -> Duration {
        VIRTUAL_TICK
    }

    fn now(&self) -> Duration {
        Duration::from_nanos(self.0.read_ns())
    }
}

impl HostMonotonicClock for SharedClock {
    fn resolution(&self) -> u64 {
        VIRTUAL_TICK.as_nanos() as u64
    }

    fn now(&self) -> u64 {
        self.0.read_ns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_clock_advances_one_tick_per_read_and_saturates() {
        let clock = VirtualClock::new(5);
        assert_eq!(clock.read_ns(), 5);
        assert_eq!(clock.read_ns(), 5 + 1_000_000);
        let end = VirtualClock::new(u64::MAX - 1);
        assert_eq!(end.read_ns(), u64::MAX - 1);
        assert_eq!(end.read_ns(), u64::MAX);
        assert_eq!(end.read_ns(), u64::MAX);
    }

    #[test]
    fn advancing_moves_both_clocks_and_saturates() {
        let mut builder = wasmtime_wasi::WasiCtx::builder();
        let clocks = make_deterministic(&mut builder, 1);
        let before = clocks.monotonic.read_ns();
        clocks.advance(Duration::from_secs(5));
        assert_eq!(
            clocks.monotonic.read_ns(),
            before + 1_000_000 + 5_000_000_000
        );
        assert_eq!(
            clocks.wall.read_ns(),
            VIRTUAL_EPOCH_SECS * 1_000_000_000 + 5_000_000_000
        );
        clocks.advance(Duration::MAX);
        assert_eq!(clocks.wall.read_ns(), u64::MAX);
    }
}
