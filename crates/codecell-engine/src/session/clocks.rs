//! The clocks of a session without a seed: the host's real clocks, every read recorded for the
//! journal, and on restore the recorded reads given back first, in order.
//!
//! Replaying the reads (rather than the real time of the restore) is what makes a restored cell
//! print what it printed the first time. Once the recorded reads are used up the clocks are real
//! again; the monotonic one is shifted so it never goes back past the last replayed read.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtxBuilder};

/// Reads of one clock a session records at most; past it the session can no longer be saved.
pub const MAX_RECORDED_CLOCK_READS: usize = 1 << 20;

/// Which clock a log belongs to.
#[derive(Clone, Copy)]
enum Which {
    Wall,
    Monotonic,
}

/// What one clock has given the guest, and what it still has to give back on restore.
#[derive(Debug, Default)]
pub(crate) struct ClockLog {
    /// Every value read, in nanoseconds, in read order (replayed ones included).
    pub(crate) recorded: Vec<u64>,
    /// Values still to give back before the clock is real again.
    replay: VecDeque<u64>,
    /// Added to the real monotonic clock once the replay is used up.
    offset: Option<u64>,
    /// Set once a read was not recorded because the log was full.
    pub(crate) overflowed: bool,
}

/// The two logs a session's clocks share with the session.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClockLogs {
    pub(crate) wall: Arc<Mutex<ClockLog>>,
    pub(crate) monotonic: Arc<Mutex<ClockLog>>,
}

impl ClockLogs {
    /// Logs that give back `wall` and `monotonic` (a journal's reads) before real time.
    pub(crate) fn replaying(wall: Vec<u64>, monotonic: Vec<u64>) -> Self {
        let log = |values: Vec<u64>| {
            Arc::new(Mutex::new(ClockLog {
                replay: values.into(),
                ..ClockLog::default()
            }))
        };
        ClockLogs {
            wall: log(wall),
            monotonic: log(monotonic),
        }
    }

    /// Installs recording clocks over these logs in `builder`.
    pub(crate) fn install(&self, builder: &mut WasiCtxBuilder) {
        builder
            .wall_clock(RecordingClock {
                log: self.wall.clone(),
                which: Which::Wall,
            })
            .monotonic_clock(RecordingClock {
                log: self.monotonic.clone(),
                which: Which::Monotonic,
            });
    }

    /// The recorded reads of both clocks, and whether either log overflowed.
    pub(crate) fn snapshot(&self) -> (Vec<u64>, Vec<u64>, bool) {
        let wall = lock(&self.wall);
        let monotonic = lock(&self.monotonic);
        (
            wall.recorded.clone(),
            monotonic.recorded.clone(),
            wall.overflowed || monotonic.overflowed,
        )
    }
}

fn lock(log: &Mutex<ClockLog>) -> std::sync::MutexGuard<'_, ClockLog> {
    // A poisoned log only means a reader panicked mid-push; the values are still usable.
    log.lock().unwrap_or_else(|e| e.into_inner())
}

/// A real clock that records what it reads, after giving back what it must replay.
struct RecordingClock {
    log: Arc<Mutex<ClockLog>>,
    which: Which,
}

/// The process's origin for the real monotonic clock.
fn monotonic_origin() -> Instant {
    static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl RecordingClock {
    fn real_ns(&self) -> u64 {
        let elapsed = match self.which {
            Which::Wall => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
            Which::Monotonic => monotonic_origin().elapsed(),
        };
        u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
    }

    fn read_ns(&self) -> u64 {
        let mut log = lock(&self.log);
        let value = match log.replay.pop_front() {
            Some(value) => value,
            None => {
                let real = self.real_ns();
                match self.which {
                    Which::Wall => real,
                    Which::Monotonic => {
                        let last = log.recorded.last().copied().unwrap_or(0);
                        let offset = *log.offset.get_or_insert(last.saturating_sub(real));
                        real.saturating_add(offset).max(last)
                    }
                }
            }
        };
        if log.recorded.len() < MAX_RECORDED_CLOCK_READS {
            log.recorded.push(value);
        } else {
            log.overflowed = true;
        }
        value
    }
}

impl HostWallClock for RecordingClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        Duration::from_nanos(self.read_ns())
    }
}

impl HostMonotonicClock for RecordingClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        self.read_ns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replayed_reads_come_back_first_and_the_monotonic_clock_never_goes_back() {
        let far = u64::MAX / 2;
        let logs = ClockLogs::replaying(vec![7, 8], vec![far]);
        let wall = RecordingClock {
            log: logs.wall.clone(),
            which: Which::Wall,
        };
        let mono = RecordingClock {
            log: logs.monotonic.clone(),
            which: Which::Monotonic,
        };
        assert_eq!(HostWallClock::now(&wall), Duration::from_nanos(7));
        assert_eq!(HostWallClock::now(&wall), Duration::from_nanos(8));
        assert!(HostWallClock::now(&wall) > Duration::from_secs(1_700_000_000));
        assert_eq!(HostMonotonicClock::now(&mono), far);
        let after = HostMonotonicClock::now(&mono);
        assert!(after >= far, "{after} went back past {far}");
        let (walls, monos, overflowed) = logs.snapshot();
        assert_eq!((walls.len(), monos.len(), overflowed), (3, 2, false));
        assert_eq!(&walls[..2], &[7, 8]);
    }
}
