//! One engine per (guest, component file, cache directory) per process: loading a guest costs
//! a compile (first time) or a cache read, and an engine is shared by every `CodeMode`.

use crate::errors;
use codecell::{Engine, GuestKind, Metering};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

type Key = (GuestKind, PathBuf, PathBuf);

/// The engine for `guest` loaded from `wasm`, caching compiled artifacts in `cache_dir`.
/// Loading runs without the GIL (a first compile takes seconds).
pub(crate) fn engine(
    py: Python<'_>,
    guest: &str,
    wasm: PathBuf,
    cache_dir: PathBuf,
) -> PyResult<Engine> {
    static ENGINES: Mutex<Option<HashMap<Key, Engine>>> = Mutex::new(None);
    let kind: GuestKind = guest
        .parse()
        .map_err(pyo3::exceptions::PyValueError::new_err)?;
    let key = (kind, wasm, cache_dir);
    py.detach(|| {
        // Held while loading, so two threads asking for the same guest compile it once.
        let mut engines = ENGINES.lock().unwrap_or_else(|p| p.into_inner());
        let engines = engines.get_or_insert_with(HashMap::new);
        if let Some(engine) = engines.get(&key) {
            return Ok(engine.clone());
        }
        let _runtime = crate::runtime::runtime().enter();
        // Fuel metering: the package's `Limits.fuel` is a budget its callers rely on.
        let engine = Engine::builder()
            .guest(kind)
            .metering(Metering::Fuel)
            .wasm_path(key.1.clone())
            .cache_dir(key.2.clone())
            .build()
            .map_err(errors::engine)?;
        engines.insert(key, engine.clone());
        Ok(engine)
    })
}
