//! Opens a store the way `codecell tool list` does and reports what loading it cost: the tools
//! that resolve, and the number and total size of the load errors (which the CLI prints).
//! Used to measure hostile stores (e.g. a 20 MB event log of junk lines) with `/usr/bin/time -v`.
//!
//! usage: load_store STORE [SESSION] [--define SPEC.json]
//!
//! With `--define`, the spec is then defined (validation and smoke-argument checks run; the
//! smoke run itself fails, as nothing runs), to measure a hostile schema at define.

use codecell_manifest::{Manifest, Registry, RegistryOptions, RunFuture, ToolRunner};
use serde_json::Value;
use std::sync::Arc;

/// Listing runs nothing.
struct NoRunner;

impl ToolRunner for NoRunner {
    fn run<'a>(&'a self, _: &'a Manifest, _: &'a Value) -> RunFuture<'a> {
        Box::pin(std::future::ready(Err(codecell_manifest::RunError::Host(
            "load_store runs nothing".into(),
        ))))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(store) = args.get(1) else {
        eprintln!("usage: load_store STORE [SESSION]");
        std::process::exit(2);
    };
    let session = args.get(2).map_or("reader", String::as_str);
    let started = std::time::Instant::now();
    let registry = Registry::open(RegistryOptions::new(session, store), Arc::new(NoRunner))
        .unwrap_or_else(|e| {
            eprintln!("load_store: {e}");
            std::process::exit(3)
        });
    let tools = registry.tools();
    let errors = registry.load_errors();
    let bytes: usize = errors.iter().map(|e| e.len() + 1).sum();
    println!(
        "tools {} load_errors {} error_bytes {} ms {}",
        tools.len(),
        errors.len(),
        bytes,
        started.elapsed().as_millis()
    );
    if let (Some(flag), Some(spec)) = (args.get(3), args.get(4))
        && flag == "--define"
    {
        let text = std::fs::read_to_string(spec).expect("read the spec");
        let spec: Value = serde_json::from_str(&text).expect("spec is JSON");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let started = std::time::Instant::now();
        let result = runtime.block_on(registry.define(&spec));
        let shown = match result {
            Ok(m) => format!("defined {}", m.manifest_id),
            Err(e) => {
                let text = e.to_string();
                format!("refused: {}", &text[..text.len().min(160)])
            }
        };
        println!("{shown} ms {}", started.elapsed().as_millis());
    }
}
