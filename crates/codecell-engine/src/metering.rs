//! How a running guest is metered: what ends a busy guest at its deadline, and what lets it
//! yield to the async runtime.
//!
//! Two ways, chosen per engine ([`crate::EngineBuilder::metering`]) because wasmtime compiles the
//! checks into the guest's code:
//!
//! - [`Metering::Epoch`] (the default): a ticker thread per engine advances wasmtime's epoch every
//!   [`EPOCH_TICK`] while any of its stores is armed, and parks when none is; the check compiled
//!   into every loop and function entry makes the guest yield at each tick, and the run loop then
//!   checks the wall clock against the deadline. There is no instruction budget:
//!   [`crate::Limits::fuel`] is not enforced and `fuel_used` is 0.
//! - [`Metering::Fuel`]: every wasm instruction is counted; the run ends when
//!   [`crate::Limits::fuel`] is used up, the guest yields every [`YIELD_FUEL`] units, and
//!   `fuel_used` is exact and deterministic. It costs guest speed (figures in
//!   `docs/performance.md`: a third of a tight loop's time on CPython).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::Thread;
use std::time::Duration;

/// What meters a running guest; see the module docs of `metering.rs` for the trade.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Metering {
    /// Deadline by epoch interruption: fastest; no instruction budget, `fuel_used` is 0.
    #[default]
    Epoch,
    /// Fuel: an exact, deterministic instruction budget ([`crate::Limits::fuel`]) and `fuel_used`.
    Fuel,
}

impl Metering {
    /// The name used on the command line and in reports: `epoch` or `fuel`.
    pub fn as_str(self) -> &'static str {
        match self {
            Metering::Epoch => "epoch",
            Metering::Fuel => "fuel",
        }
    }
}

/// Fuel a running guest burns between yields to the async runtime (about 1 ms of guest work on
/// the reference machine): how often a fuel-metered guest lets other tasks run and has its
/// deadline checked.
pub(crate) const YIELD_FUEL: u64 = 10_000_000;

/// How often the epoch advances, and so how often an epoch-metered guest yields and has its
/// deadline checked.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(1);

/// The thread advancing an engine's epoch while some store may run guest code, and parked
/// otherwise: an idle engine (a warm instance waiting, a session between turns) wakes nothing.
/// A store holds a [`Ticking`] from [`crate::engine::arm`] (which every entry into guest code
/// needs: an epoch-metered store without a deadline traps at once) until it is idle again or
/// dropped. The thread stops when this is dropped (with the engine).
#[derive(Debug)]
pub(crate) struct EpochTicker {
    shared: Arc<Shared>,
    thread: Thread,
}

/// What the ticker thread and the stores holding it share.
#[derive(Debug, Default)]
struct Shared {
    /// Stores that may run guest code now; the thread ticks while this is above 0.
    holders: AtomicUsize,
    /// Set when the engine is dropped: the thread ends.
    stop: AtomicBool,
    /// Ticks so far, for tests to see whether the thread ticks.
    ticks: AtomicU64,
}

/// A store's hold on its engine's ticker: the epoch advances while any exists.
#[derive(Debug)]
pub(crate) struct Ticking {
    shared: Arc<Shared>,
}

impl EpochTicker {
    /// Starts the thread that advances `engine`'s epoch every [`EPOCH_TICK`] while held.
    pub(crate) fn start(engine: &wasmtime::Engine) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let engine = engine.clone();
        let seen = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("codecell-epoch".into())
            .spawn(move || {
                while !seen.stop.load(Ordering::Acquire) {
                    if seen.holders.load(Ordering::Acquire) == 0 {
                        // `hold` unparks after raising the count, and an unpark that comes
                        // before this park makes it return at once: no wake-up is lost.
                        std::thread::park();
                        continue;
                    }
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                    seen.ticks.fetch_add(1, Ordering::Relaxed);
                }
            })?
            .thread()
            .clone();
        Ok(EpochTicker { shared, thread })
    }

    /// Keeps the epoch advancing until the returned hold is dropped.
    pub(crate) fn hold(&self) -> Ticking {
        if self.shared.holders.fetch_add(1, Ordering::AcqRel) == 0 {
            self.thread.unpark();
        }
        Ticking {
            shared: Arc::clone(&self.shared),
        }
    }

    /// How many times the epoch has advanced.
    #[cfg(test)]
    pub(crate) fn ticks(&self) -> u64 {
        self.shared.ticks.load(Ordering::Relaxed)
    }
}

impl Drop for Ticking {
    fn drop(&mut self) {
        // The thread sees 0 after its current tick and parks.
        self.shared.holders.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Waits up to a second for `ticker` to have ticked more than `after` times.
    fn ticks_past(ticker: &EpochTicker, after: u64) -> bool {
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until {
            if ticker.ticks() > after {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn an_unheld_ticker_does_not_tick_and_a_held_one_does() {
        let ticker = EpochTicker::start(&wasmtime::Engine::default()).expect("thread starts");
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(ticker.ticks(), 0, "nothing holds it");
        let hold = ticker.hold();
        assert!(ticks_past(&ticker, 5), "held, it ticks");
        drop(hold);
        std::thread::sleep(Duration::from_millis(10));
        let parked = ticker.ticks();
        std::thread::sleep(Duration::from_millis(30));
        assert!(ticker.ticks() <= parked + 1, "released, it parks");
        let again = ticker.hold();
        assert!(
            ticks_past(&ticker, parked + 5),
            "held again, it ticks again"
        );
        drop(again);
    }

    #[test]
    fn the_ticker_ticks_while_any_hold_remains() {
        let ticker = EpochTicker::start(&wasmtime::Engine::default()).expect("thread starts");
        let first = ticker.hold();
        let second = ticker.hold();
        drop(first);
        let now = ticker.ticks();
        assert!(ticks_past(&ticker, now + 5), "one hold is left");
        drop(second);
    }

    /// Ticks of `engine`'s ticker over `idle` with nothing running, after the warm instance
    /// (if the engine keeps one) has been made.
    async fn ticks_while_idle(engine: &crate::Engine, idle: Duration) -> u64 {
        if let Some(warm) = &engine.inner.warm {
            let until = Instant::now() + Duration::from_secs(30);
            while warm.lock().map(|w| w.is_none()).unwrap_or(true) && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            assert!(
                warm.lock().is_ok_and(|w| w.is_some()),
                "the warm instance was made"
            );
        }
        let ticker = engine
            .inner
            .ticker
            .as_ref()
            .expect("epoch metering has a ticker");
        // A tick already under way when the last hold went may still land.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let before = ticker.ticks();
        tokio::time::sleep(idle).await;
        ticker.ticks() - before
    }

    /// Guards the wake-up an idle engine used to cost: its ticker woke every millisecond for as
    /// long as the engine lived, with a warm instance waiting or a session between turns.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_idle_engine_with_a_warm_instance_or_a_live_session_does_not_tick() {
        for guest in crate::ALL_GUESTS {
            let engine = crate::Engine::builder()
                .guest(guest)
                .warm_instance(true)
                .build()
                .expect("the guests are built (python3 wasm-guests/build.py --guest all)");
            let limits = crate::Limits::default();
            let ran = engine
                .run_snippet("print(1)", None, &limits)
                .await
                .expect("runs");
            assert_eq!(ran.stdout, "1\n", "{guest:?}");
            let idle = Duration::from_millis(60);
            assert_eq!(
                ticks_while_idle(&engine, idle).await,
                0,
                "{guest:?} after a run"
            );

            let mut session = crate::Session::new(&engine, None, limits, Default::default())
                .await
                .expect("session starts");
            let turn = session.execute("x = 1").await.expect("turn runs");
            assert_eq!(turn.outcome.status(), crate::Status::Ok, "{guest:?}");
            assert_eq!(
                ticks_while_idle(&engine, idle).await,
                0,
                "{guest:?} between turns"
            );
        }
    }
}
