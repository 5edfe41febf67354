//! A store writer used by the multi-process tests: defines and promotes tools (and activates
//! versions) against a store directory, as fast as it can.
//!
//! usage: store_writer STORE SESSION PROJECT promote COUNT
//!        store_writer STORE SESSION PROJECT hammer MANIFEST_ID_A MANIFEST_ID_B
//!        store_writer STORE SESSION PROJECT define NAME SALT GO_FILE
//!
//! `promote` defines and promotes COUNT tools named `<session>_<i>`, then exits.
//! `hammer` alternates activations of `shared` between two ids and keeps defining and
//! promoting new tools until it is killed.
//! `define` opens the registry, prints "ready", waits for GO_FILE to exist (so several writers
//! start their defines together), defines NAME once and prints "defined <id>" (exit 0) or
//! "refused <error>" (exit 3).

use codecell_manifest::{Manifest, Registry, RegistryOptions, RunFuture, Scope, ToolRunner};
use serde_json::{Value, json};
use std::sync::Arc;

/// Returns a fixed result without running anything: these tests exercise the store only.
struct FixedRunner;

impl ToolRunner for FixedRunner {
    fn run<'a>(&'a self, _manifest: &'a Manifest, _args: &'a Value) -> RunFuture<'a> {
        Box::pin(async { Ok(json!({"sum": 0.0})) })
    }
}

fn spec(name: &str, salt: &str) -> Value {
    json!({
        "name": name,
        "description": "A tool written by a concurrent test process.",
        "input_schema": {"properties": {"a": {"type": "number"}}},
        "output_schema": {"properties": {"sum": {"type": "number"}}, "required": ["sum"]},
        "implementation": format!("def execute(args):\n    # {salt}\n    return {{\"sum\": 0.0}}\n"),
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 6 {
        eprintln!("usage: store_writer STORE SESSION PROJECT promote COUNT | hammer ID_A ID_B");
        std::process::exit(2);
    }
    let (store, session, project, mode) = (&args[1], &args[2], &args[3], &args[4]);
    let mut options = RegistryOptions::new(session.clone(), store);
    options.project_id = Some(project.clone());
    let registry = Registry::open(options, Arc::new(FixedRunner)).expect("open registry");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let define_and_promote = |i: usize| {
        let name = format!("{session}_{i}");
        runtime
            .block_on(registry.define(&spec(&name, session)))
            .expect("define");
        registry
            .promote(&name, Scope::Project, true)
            .expect("promote");
    };
    match mode.as_str() {
        "promote" => {
            let count: usize = args[5].parse().expect("count");
            for i in 0..count {
                define_and_promote(i);
            }
        }
        "hammer" => {
            let ids = [&args[5], &args[6]];
            println!("ready");
            for i in 0.. {
                registry
                    .activate("shared", Scope::Project, ids[i % 2], true)
                    .expect("activate");
                define_and_promote(i);
            }
        }
        "define" => {
            let [name, salt, go] =
                [5, 6, 7].map(|i| args.get(i).expect("define NAME SALT GO_FILE"));
            let go = std::path::Path::new(go);
            println!("ready");
            while !go.exists() {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            match runtime.block_on(registry.define(&spec(name, salt))) {
                Ok(manifest) => println!("defined {}", manifest.manifest_id),
                Err(error) => {
                    println!("refused {error}");
                    std::process::exit(3);
                }
            }
        }
        other => panic!("unknown mode {other}"),
    }
}
