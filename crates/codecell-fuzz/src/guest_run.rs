//! One engine per guest and one runtime for the oracles that drive real guests
//! ([`crate::host_imports`], [`crate::guest_json`]): built on first use and kept for the
//! process, so a fuzz iteration costs one fresh instance, not an engine.

use codecell_catalog::Catalog;
use codecell_engine::{ALL_GUESTS, Engine, GuestKind, Limits, Outcome};
use std::sync::OnceLock;
use tokio::runtime::Runtime;

/// Output cap of an oracle's run: room for every result an input of libFuzzer's default
/// maximum length can echo (the default 10,000 bytes would end such runs `limit`/`output`).
const ORACLE_OUTPUT_BYTES: usize = 1 << 20;

struct Engines {
    runtime: Runtime,
    engines: Vec<(GuestKind, Engine)>,
}

fn engines() -> &'static Engines {
    static ENGINES: OnceLock<Engines> = OnceLock::new();
    ENGINES.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let engines = {
            let _entered = runtime.enter();
            guests()
                .iter()
                .map(|&guest| {
                    let engine = Engine::builder().guest(guest).build().unwrap_or_else(|e| {
                        panic!("the {guest:?} guest cannot be loaded ({e}): python3 wasm-guests/build.py --guest all")
                    });
                    (guest, engine)
                })
                .collect()
        };
        Engines { runtime, engines }
    })
}

/// The guests an oracle runs on: both, unless `CODECELL_FUZZ_GUEST` names one (`cpython` or
/// `rustpython`), to spend a long fuzz run on one guest's boundary. Read once per process; only
/// these guests' engines are loaded.
pub fn guests() -> &'static [GuestKind] {
    static GUESTS: OnceLock<Vec<GuestKind>> = OnceLock::new();
    GUESTS.get_or_init(|| {
        let only = std::env::var("CODECELL_FUZZ_GUEST").ok();
        let guests: Vec<GuestKind> = ALL_GUESTS
            .iter()
            .copied()
            .filter(|g| only.as_deref().is_none_or(|o| g.name() == o))
            .collect();
        // A misspelt name must not turn every check into a check of nothing.
        assert!(
            !guests.is_empty(),
            "CODECELL_FUZZ_GUEST={only:?} names no guest: cpython or rustpython"
        );
        guests
    })
}

/// Runs `code` on `guest` in a fresh instance with `catalog` behind the host imports; panics
/// if the engine itself fails (an engine error is never a guest's doing).
pub fn run(guest: GuestKind, code: &str, catalog: &Catalog) -> Outcome {
    let all = engines();
    let engine = &all
        .engines
        .iter()
        .find(|(g, _)| *g == guest)
        .unwrap_or_else(|| panic!("{guest:?} is not among the guests CODECELL_FUZZ_GUEST selects"))
        .1;
    let limits = Limits {
        max_output_bytes: ORACLE_OUTPUT_BYTES,
        ..Limits::default()
    };
    all.runtime
        .block_on(engine.run_snippet(code, Some(catalog.clone()), &limits))
        .unwrap_or_else(|e| panic!("{guest:?}: the engine failed: {e}\n{code}"))
}

/// Awaits `future` on the oracles' runtime (a handler called directly, for the expected value).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    engines().runtime.block_on(future)
}
