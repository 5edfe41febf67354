//! Batch runs: a stream of programs in, a stream of outcomes out, a bounded number in flight.
//!
//! [`run_batch`] takes programs from a bounded channel and gives back a channel of outcomes. At
//! most `concurrency` programs run at once, and at most `2 × concurrency` are running or
//! finished and waiting to be collected; both channels are bounded, so memory stays flat however
//! long the input is: a producer that reads a file line by line blocks once the batch is that
//! far ahead of the consumer. The second `concurrency` places let a run start while earlier
//! outcomes are still on their way out. Every program runs in a fresh instance, exactly as
//! [`Engine::run_snippet`].
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
    let (done_tx, mut done_rx) = mpsc::channel::<Done<T>>(concurrency);
    let places = Arc::new(Semaphore::new(concurrency.saturating_mul(2)));
    let items = Arc::new(Mutex::new(Numbered { items, next: 0 }));
    // `concurrency` runners, each taking the next item as soon as its last run ends: starting a
    // run costs no hop between tasks. With runs of a fraction of a millisecond, a feeder that
    // spawned a task per program, woken only once an outcome was handed out, left the cores idle
    // between runs (docs/batch-and-fuzzing.md).
    for _ in 0..concurrency {
        let (items, places, done_tx) = (items.clone(), places.clone(), done_tx.clone());
        tokio::spawn(async move {
            loop {
                let Ok(place) = places.clone().acquire_owned().await else {
                    break;
                };
                if done_tx.is_closed() {
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
                if done_tx.send(done).await.is_err() {
                    break;
                }
            }
        });
    }
    drop(done_tx);
    // The collector: hands results out, in input order when asked; a result's place is given
    // back only once it has been handed out.
    tokio::spawn(async move {
        let mut next = 0u64;
        let mut waiting: BTreeMap<u64, Done<T>> = BTreeMap::new();
        while let Some(done) = done_rx.recv().await {
            if !options.ordered {
                if out_tx.send((done.tag, done.result)).await.is_err() {
                    return;
                }
                continue;
            }
            waiting.insert(done.seq, done);
            while let Some(done) = waiting.remove(&next) {
                next += 1;
                if out_tx.send((done.tag, done.result)).await.is_err() {
                    return;
                }
            }
        }
    });
    out_rx
}

/// The batch's input, numbering items in the order they are taken (input order).
struct Numbered<T> {
    items: mpsc::Receiver<(T, BatchItem)>,
    next: u64,
}

impl<T> Numbered<T> {
    /// The next item and its number.
    async fn next(&mut self) -> Option<(u64, T, BatchItem)> {
        let (tag, item) = self.items.recv().await?;
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
