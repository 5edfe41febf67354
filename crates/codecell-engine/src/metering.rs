//! How a running guest is metered: what ends a busy guest at its deadline, and what lets it
//! yield to the async runtime.
//!
//! Two ways, chosen per engine ([`crate::EngineBuilder::metering`]) because wasmtime compiles the
//! checks into the guest's code:
//!
//! - [`Metering::Epoch`] (the default): a ticker thread per engine advances wasmtime's epoch every
//!   [`EPOCH_TICK`]; the check compiled into every loop and function entry makes the guest yield
//!   at each tick, and the run loop then checks the wall clock against the deadline. There is no
//!   instruction budget: [`crate::Limits::fuel`] is not enforced and `fuel_used` is 0.
//! - [`Metering::Fuel`]: every wasm instruction is counted; the run ends when
//!   [`crate::Limits::fuel`] is used up, the guest yields every [`YIELD_FUEL`] units, and
//!   `fuel_used` is exact and deterministic. It costs guest speed (figures in
//!   `docs/performance.md`: a third of a tight loop's time on CPython).

use std::sync::mpsc;
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

/// The thread advancing an engine's epoch; it stops when this is dropped (with the engine).
#[derive(Debug)]
pub(crate) struct EpochTicker {
    _stop: mpsc::Sender<()>,
}

impl EpochTicker {
    /// Starts advancing `engine`'s epoch every [`EPOCH_TICK`].
    pub(crate) fn start(engine: &wasmtime::Engine) -> std::io::Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let engine = engine.clone();
        std::thread::Builder::new()
            .name("codecell-epoch".into())
            .spawn(move || {
                // Nothing is ever sent: the loop ends when the sender is dropped.
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(EPOCH_TICK) {
                    engine.increment_epoch();
                }
            })?;
        Ok(EpochTicker { _stop: stop })
    }
}
