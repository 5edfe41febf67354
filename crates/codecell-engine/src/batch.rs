//! Batch runs: a stream of programs in, a stream of outcomes out, a bounded number in flight.
//!
//! [`run_batch`] takes programs from a bounded channel and gives back a channel of outcomes. At
//! most `concurrency` programs run at once, and at most `2 × concurrency` are running or
//! finished and waiting to be collected; both channels are bounded, so memory stays flat however
//! long the input is: a producer that reads a file line by line blocks once the batch is that
//! far ahead of the consumer. The second `concurrency` places let a run start while earlier
//! outcomes are still on their way out. Programs not yet started are taken from the input
//! channel as many at once as are waiting there (at most its capacity), so a producer on a
//! thread of its own is woken once per handful of programs. Every program runs in a fresh
//! instance, exactly as [`Engine::run_snippet`].
//!
//! In order mode a finished program waits (holding its place) until every program before it has
//! been handed out, so one slow program holds the others back by at most `2 × concurrency`
//! programs; in completion order each outcome is handed out as soon as it exists.

use crate::engine::Engine;
use crate::error::EngineError;
use crate::limits::Limits;
use crate::outcome::Outcome;
use codecell_catalog::Catalog;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore, mpsc};

/// One program of a batch: what to run and where.
#[derive(Debug, Clone)]
pub struct BatchRun {
    /// The engine (and so the guest) that runs it.
    pub engine: Engine,
    /// The snippet's source.
    pub code: String,
    /// The catalog behind `ls`/`read`/`call_tool`, if any.
    pub catalog: Option<Catalog>,
    /// Its limits (and seed).
    pub limits: Limits,
}

/// An entry of a batch: a program to run, or an outcome the producer already knows (a line it
/// could not parse), which keeps its place in the output like any other.
#[derive(Debug)]
pub enum BatchItem {
    /// Run this program.
    Run(BatchRun),
    /// Hand this result out as it is.
    Ready(Result<Outcome, EngineError>),
}

/// How a batch is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOptions {
    /// How many programs run at once (at least 1).
    pub concurrency: usize,
    /// Hand outcomes out in input order (default: completion order).
    pub ordered: bool,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            concurrency: std::thread::available_parallelism().map_or(1, |n| n.get()),
            ordered: false,
        }
    }
}

/// Runs every item received on `items`, each program in a fresh instance, and sends each
/// `(tag, result)` on the returned channel; the channel closes after the last one.
///
/// Must be called inside a tokio runtime with timers enabled. Dropping the returned receiver
/// stops the batch: programs in flight finish, nothing more is taken from `items`.
pub fn run_batch<T: Send + 'static>(
    items: mpsc::Receiver<(T, BatchItem)>,
    options: BatchOptions,
) -> mpsc::Receiver<(T, Result<Outcome, EngineError>)> {
    let concurrency = options.concurrency.max(1);
    let (out_tx, out_rx) = mpsc::channel(concurrency);
    let places = Arc::new(Semaphore::new(concurrency.saturating_mul(2)));
    let items = Arc::new(Mutex::new(Numbered {
        items,
        taken: Vec::new(),
        next: 0,
    }));
    // In completion order a runner hands its outcome out itself; in input order it goes through
    // the collector, which puts outcomes back in order. Each hop between tasks is a wake-up that
    // can cost a context switch per run, so completion order has none after the run.
    let (sink, collector) = if options.ordered {
        let (done_tx, done_rx) = mpsc::channel::<Done<T>>(concurrency);
        (Sink::Collector(done_tx), Some((done_rx, out_tx)))
    } else {
        (Sink::Out(out_tx), None)
    };
    // `concurrency` runners, each taking the next item as soon as its last run ends: starting a
    // run costs no hop between tasks. With runs of a fraction of a millisecond, a feeder that
    // spawned a task per program, woken only once an outcome was handed out, left the cores idle
    // between runs (docs/batch-and-fuzzing.md).
    for _ in 0..concurrency {
        let (items, places, sink) = (items.clone(), places.clone(), sink.clone());
        tokio::spawn(async move {
            loop {
                let Ok(place) = places.clone().acquire_owned().await else {
                    break;
                };
                if sink.is_closed() {
                    break; // the receiver of outcomes went away
                }
                let Some((seq, tag, item)) = items.lock().await.next().await else {
                    break;
                };
                let result = match item {
                    BatchItem::Ready(result) => result,
                    BatchItem::Run(run) => {
                        run.engine
                            .run_snippet(&run.code, run.catalog, &run.limits)
                            .await
                    }
                };
                let done = Done {
                    seq,
                    tag,
                    result,
                    _place: place,
                };
                if sink.send(done).await.is_err() {
                    break;
                }
                // Let the task just woken by that outcome (the consumer, or the collector) run
                // now on this worker, rather than after the next run or on a thread woken for it.
                // Not with one runner: its worker would then also make the engine's next warm
                // instance before the next run, which otherwise overlaps it on another worker
                // (CPython's `--jobs 1` ran 1,150 instead of 1,700 runs/s).
                if concurrency > 1 {
                    tokio::task::yield_now().await;
                }
            }
        });
    }
    drop(sink);
    if let Some((mut done_rx, out_tx)) = collector {
        // The collector: hands results out in input order; a result's place is given back only
        // once it has been handed out.
        tokio::spawn(async move {
            let mut next = 0u64;
            let mut waiting: BTreeMap<u64, Done<T>> = BTreeMap::new();
            while let Some(done) = done_rx.recv().await {
                waiting.insert(done.seq, done);
                while let Some(done) = waiting.remove(&next) {
                    next += 1;
                    if out_tx.send((done.tag, done.result)).await.is_err() {
                        return;
                    }
                }
            }
        });
    }
    out_rx
}

/// Where a runner puts a finished program: straight out (completion order) or to the collector
/// (input order).
enum Sink<T> {
    /// The batch's output channel.
    Out(mpsc::Sender<(T, Result<Outcome, EngineError>)>),
    /// The collector, which restores input order.
    Collector(mpsc::Sender<Done<T>>),
}

impl<T> Clone for Sink<T> {
    fn clone(&self) -> Self {
        match self {
            Sink::Out(tx) => Sink::Out(tx.clone()),
            Sink::Collector(tx) => Sink::Collector(tx.clone()),
        }
    }
}

impl<T> Sink<T> {
    /// Whether whoever was to receive outcomes has gone away.
    fn is_closed(&self) -> bool {
        match self {
            Sink::Out(tx) => tx.is_closed(),
            Sink::Collector(tx) => tx.is_closed(),
        }
    }

    /// Passes `done` on; its place is given back once the outcome is handed out (at once here in
    /// completion order, by the collector in input order). Err when the receiver went away.
    async fn send(&self, done: Done<T>) -> Result<(), ()> {
        match self {
            Sink::Out(tx) => {
                let Done {
                    tag,
                    result,
                    _place,
                    ..
                } = done;
                tx.send((tag, result)).await.map_err(drop)
            }
            Sink::Collector(tx) => tx.send(done).await.map_err(drop),
        }
    }
}

/// The batch's input, numbering items in the order they are taken (input order).
///
/// Items are taken from the channel as many at once as are there (up to its capacity), so a
/// producer blocked on a full channel is woken once per handful of programs, not once per
/// program: on a thread of its own (`codecell batch`'s reader) every wake-up can cost a context
/// switch, a large share of a run of a tenth of a millisecond.
struct Numbered<T> {
    items: mpsc::Receiver<(T, BatchItem)>,
    /// Taken but not yet handed to a runner, the next one last.
    taken: Vec<(T, BatchItem)>,
    next: u64,
}

impl<T> Numbered<T> {
    /// The next item and its number.
    async fn next(&mut self) -> Option<(u64, T, BatchItem)> {
        if self.taken.is_empty() {
            let most = self.items.max_capacity().max(1);
            self.items.recv_many(&mut self.taken, most).await;
            self.taken.reverse();
        }
        let (tag, item) = self.taken.pop()?;
        let seq = self.next;
        self.next += 1;
        Some((seq, tag, item))
    }
}

/// A finished program, holding its place until it is handed out.
struct Done<T> {
    seq: u64,
    tag: T,
    result: Result<Outcome, EngineError>,
    _place: OwnedSemaphorePermit,
}
