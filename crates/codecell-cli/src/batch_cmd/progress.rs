//! What `codecell batch` tells a person on stderr: a progress bar on a terminal, one summary
//! line at the end either way.

use codecell::{Outcome, Status};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

/// Counts per status, the start time, and the bar when stderr is a terminal.
pub struct Progress {
    started: Instant,
    ok: u64,
    error: u64,
    limit: u64,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Starts counting; draws a bar only when stderr is a terminal.
    pub fn start() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {pos} runs, {per_sec} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        });
        Progress {
            started: Instant::now(),
            ok: 0,
            error: 0,
            limit: 0,
            bar,
        }
    }

    /// Counts one outcome.
    pub fn record(&mut self, outcome: &Outcome) {
        match outcome.status() {
            Status::Ok => self.ok += 1,
            Status::Limit => self.limit += 1,
            _ => self.error += 1,
        }
        if let Some(bar) = &self.bar {
            bar.inc(1);
            bar.set_message(format!(
                "ok {} error {} limit {}",
                self.ok, self.error, self.limit
            ));
        }
    }

    /// Clears the bar and writes the summary line.
    pub fn finish(self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let runs = self.ok + self.error + self.limit;
        let seconds = self.started.elapsed().as_secs_f64();
        let rate = if seconds > 0.0 {
            runs as f64 / seconds
        } else {
            0.0
        };
        crate::out::stderr(&format!(
            "codecell batch: {runs} runs, {} ok, {} error, {} limit, {rate:.1} runs/s\n",
            self.ok, self.error, self.limit
        ));
    }
}
