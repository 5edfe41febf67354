//! Shared helpers for the integration tests and benchmarks: one engine per process, fixture paths.

use codecell::{Catalog, Engine, Limits, Outcome};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A path under `fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    root().join("fixtures").join(rel)
}

/// The process-wide CPython engine; panics with the build command when the guest is not built.
pub fn engine() -> Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE
        .get_or_init(|| match Engine::builder().build() {
            Ok(engine) => engine,
            Err(e) => panic!(
                "{e}\n(the integration tests need the guest: run `python3 wasm-guests/build.py`)"
            ),
        })
        .clone()
}

/// The demo catalog from `fixtures/demo/catalog.json`.
pub fn demo_catalog() -> Arc<Catalog> {
    static CATALOG: OnceLock<Arc<Catalog>> = OnceLock::new();
    CATALOG
        .get_or_init(|| {
            Arc::new(Catalog::from_file(&fixture("demo/catalog.json")).expect("demo catalog loads"))
        })
        .clone()
}

/// Runs `code` against the demo catalog with `limits`.
pub async fn run_with(code: &str, limits: &Limits) -> Outcome {
    engine()
        .run_snippet(code, Some(demo_catalog()), limits)
        .await
        .expect("the host itself does not fail")
}

/// Runs `code` against the demo catalog with default limits.
pub async fn run(code: &str) -> Outcome {
    run_with(code, &Limits::default()).await
}
