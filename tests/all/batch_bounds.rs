//! `run_batch`'s bounds: how many programs run at once, and how far the batch gets ahead of a
//! consumer that does not read.

use codecell::{
    BatchItem, BatchOptions, BatchRun, Catalog, HandlerError, Limits, Status, ToolSpec,
    async_handler_fn, run_batch,
};
use codecell_tests::engine;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

/// Calls in flight now, the most seen at once, and calls started.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    most: AtomicUsize,
    started: AtomicUsize,
}

/// A catalog whose one tool, `t/hold`, counts itself on `gauge` while it sleeps `ms`.
fn holding_catalog(gauge: Arc<Gauge>) -> Catalog {
    let spec = ToolSpec::new("hold", "Sleeps ms milliseconds.", json!({"type": "object"}));
    Catalog::builder()
        .category("t", "Test tools.")
        .tool(
            "t",
            spec,
            async_handler_fn(move |args| {
                let gauge = gauge.clone();
                async move {
                    gauge.started.fetch_add(1, Ordering::SeqCst);
                    let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
                    gauge.most.fetch_max(now, Ordering::SeqCst);
                    let ms = args["ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    gauge.now.fetch_sub(1, Ordering::SeqCst);
                    Ok::<_, HandlerError>(json!(ms))
                }
            }),
        )
        .build()
        .expect("catalog")
}

/// Sends `count` programs, each calling `t/hold` for `ms`, into a batch of `concurrency`.
fn start(
    guest: codecell::GuestKind,
    catalog: &Catalog,
    count: usize,
    ms: u64,
    options: BatchOptions,
) -> mpsc::Receiver<(usize, Result<codecell::Outcome, codecell::EngineError>)> {
    let (tx, rx) = mpsc::channel(count.max(1));
    let engine = engine(guest);
    for i in 0..count {
        let run = BatchRun {
            engine: engine.clone(),
            code: format!("print(call_tool('t', 'hold', ms={ms}))"),
            catalog: Some(catalog.clone()),
            limits: Limits::default(),
        };
        tx.try_send((i, BatchItem::Run(run)))
            .expect("room for every program");
    }
    run_batch(rx, options)
}

codecell_tests::for_each_guest! {
    /// Twelve programs that each hold a tool call for 200 ms (long beside a fresh run, even
    /// under Wine), three at a time: never more than three calls at once, and more than one (the
    /// runs do overlap); every outcome arrives.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn at_most_concurrency_programs_run_at_once() {
        let gauge = Arc::new(Gauge::default());
        let catalog = holding_catalog(gauge.clone());
        let options = BatchOptions { concurrency: 3, ordered: false };
        let mut outcomes = start(GUEST, &catalog, 12, 200, options);
        let mut seen = Vec::new();
        while let Some((i, result)) = outcomes.recv().await {
            let outcome = result.expect("ran");
            assert_eq!(outcome.status(), Status::Ok, "{outcome:#?}");
            seen.push(i);
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..12).collect::<Vec<_>>());
        let most = gauge.most.load(Ordering::SeqCst);
        assert!((2..=3).contains(&most), "{most} calls at once");
    }

    /// A consumer that reads nothing: the batch starts at most three times its concurrency
    /// (two places per runner inside the batch, one in the channel it hands outcomes to), then
    /// waits; once read, every program runs, in input order when asked. Both orders: in
    /// completion order the runners hand outcomes out themselves, with no collector between.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_consumer_that_does_not_read_holds_the_batch_back() {
        for ordered in [true, false] {
            let gauge = Arc::new(Gauge::default());
            let catalog = holding_catalog(gauge.clone());
            let options = BatchOptions {
                concurrency: 2,
                ordered,
            };
            let mut outcomes = start(GUEST, &catalog, 20, 0, options);
            // Until both runners have started a program (however slow the machine), then long
            // enough for a batch without a bound to run ahead.
            let waited = std::time::Instant::now();
            while gauge.started.load(Ordering::SeqCst) < 2
                && waited.elapsed() < Duration::from_secs(60)
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tokio::time::sleep(Duration::from_millis(1000)).await;
            let started = gauge.started.load(Ordering::SeqCst);
            assert!(
                (2..=6).contains(&started),
                "ordered {ordered}: {started} programs started unread"
            );
            let mut seen = Vec::new();
            while let Some((i, result)) = outcomes.recv().await {
                assert_eq!(result.expect("ran").stdout, "0\n");
                seen.push(i);
            }
            if !ordered {
                seen.sort_unstable();
            }
            assert_eq!(seen, (0..20).collect::<Vec<_>>(), "ordered {ordered}");
            assert_eq!(gauge.started.load(Ordering::SeqCst), 20);
        }
    }
}
