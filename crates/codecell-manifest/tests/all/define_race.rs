//! Concurrent defines of one name in one session (issue 10, class 8): the uniqueness check and
//! the write happen under the store's lock, so exactly one succeeds. Four registries of one
//! session (as four processes would hold) are made to finish their smoke runs together.

use crate::common::{add_spec, clock, open};
use codecell_manifest::{
    DynamicToolError, Manifest, Registry, RegistryOptions, RunFuture, ToolRunner,
};
use serde_json::{Value, json};
use std::sync::{Arc, Barrier};

/// Holds every smoke run until all four are in one, then answers a valid result.
struct TogetherRunner(Arc<Barrier>);

impl ToolRunner for TogetherRunner {
    fn run<'a>(&'a self, _: &'a Manifest, _: &'a Value) -> RunFuture<'a> {
        self.0.wait();
        Box::pin(std::future::ready(Ok(json!({"sum": 1.0}))))
    }
}

#[test]
fn four_registries_racing_to_define_one_name_yield_one_tool() {
    let dir = tempfile::tempdir().unwrap();
    let barrier = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let mut options = RegistryOptions::new("one-session", dir.path());
            options.clock = clock();
            let registry =
                Registry::open(options, Arc::new(TogetherRunner(barrier.clone()))).unwrap();
            std::thread::spawn(move || {
                let mut spec = add_spec("contested");
                spec["implementation"] = json!(format!(
                    "def execute(args):\n    return {{\"sum\": {i}.0}}\n"
                ));
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                let result = runtime.block_on(registry.define(&spec));
                (result, registry)
            })
        })
        .collect();
    let results: Vec<(Result<Manifest, DynamicToolError>, Registry)> =
        threads.into_iter().map(|t| t.join().unwrap()).collect();
    let winners: Vec<&Manifest> = results
        .iter()
        .filter_map(|(r, _)| r.as_ref().ok())
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "{results:#?}",
        results = results.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
    let winner = winners[0].manifest_id.clone();
    for (result, registry) in &results {
        if let Err(error) = result {
            assert!(
                matches!(error, DynamicToolError::AlreadyDefined(name) if name == "contested"),
                "{error}"
            );
        }
        // Every registry of the session now resolves the one that was written.
        assert_eq!(registry.get("contested").unwrap().manifest_id, winner);
    }
    let reopened = open(
        dir.path(),
        "one-session",
        None,
        clock(),
        Arc::new(crate::common::PythonRunner::default()),
    );
    assert_eq!(reopened.tools().len(), 1);
    assert!(
        reopened.load_errors().is_empty(),
        "{:#?}",
        reopened.load_errors()
    );
}

#[tokio::test]
async fn a_define_after_an_expired_tool_of_that_name_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let runner = Arc::new(crate::common::PythonRunner::default());
    let first = open(dir.path(), "s", None, c.clone(), runner.clone());
    let mut spec = add_spec("short");
    spec["ttl_s"] = json!(10);
    first.define(&spec).await.unwrap();
    let second = open(dir.path(), "s", None, c.clone(), runner.clone());
    assert!(matches!(
        second.define(&add_spec("short")).await,
        Err(DynamicToolError::AlreadyDefined(_))
    ));
    c.advance(11.0);
    // On disk the old one is still there, but expired: it does not block the name.
    second.define(&add_spec("short")).await.unwrap();
}
