//! Injectable time source: TTLs and event timestamps read it, so tests can move time.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time.
pub trait Clock: Send + Sync {
    /// Seconds since the Unix epoch (the seed's `time.time()`).
    fn now(&self) -> f64;
    /// Nanoseconds since the Unix epoch, for event timestamps.
    fn now_ns(&self) -> u128 {
        // Derived from `now` so an injected clock stays consistent; real clocks override.
        (self.now().max(0.0) * 1e9) as u128
    }
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    }
    fn now_ns(&self) -> u128 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    }
}

/// A clock that only moves when told to (for tests).
#[derive(Debug)]
pub struct ManualClock(Mutex<f64>);

impl ManualClock {
    /// A clock standing at `now` seconds.
    pub fn new(now: f64) -> Self {
        ManualClock(Mutex::new(now))
    }
    /// Moves the clock forward by `seconds`.
    pub fn advance(&self, seconds: f64) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) += seconds;
    }
    /// Sets the clock to `now` seconds.
    pub fn set(&self, now: f64) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = now;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> f64 {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
