//! Shared helpers for the integration tests and benchmarks: one engine per process, fixture paths.

use codecell::{ALL_GUESTS, BUILD_COMMAND, Catalog, Engine, GuestKind, Limits, Metering, Outcome};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A path under `fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    root().join("fixtures").join(rel)
}

/// The process-wide engine for `guest` (default metering: the deadline by epoch interruption);
/// panics with the build command when it is not built.
pub fn engine(guest: GuestKind) -> Engine {
    metered_engine(guest, Metering::Epoch)
}

/// The process-wide fuel-metered engine for `guest`: for tests of the fuel limit and of
/// `fuel_used`.
pub fn fuel_engine(guest: GuestKind) -> Engine {
    metered_engine(guest, Metering::Fuel)
}

fn metered_engine(guest: GuestKind, metering: Metering) -> Engine {
    const METERINGS: [Metering; 2] = [Metering::Epoch, Metering::Fuel];
    static ENGINES: [[OnceLock<Engine>; METERINGS.len()]; ALL_GUESTS.len()] =
        [const { [const { OnceLock::new() }; METERINGS.len()] }; ALL_GUESTS.len()];
    let slot = ALL_GUESTS
        .iter()
        .position(|g| *g == guest)
        .expect("every guest is in ALL_GUESTS");
    let kind = METERINGS
        .iter()
        .position(|m| *m == metering)
        .expect("every metering is in METERINGS");
    ENGINES[slot][kind]
        .get_or_init(|| match Engine::builder().guest(guest).metering(metering).build() {
            Ok(engine) => engine,
            Err(e) => panic!(
                "{e}\n(the integration tests run on every guest: build them with `{BUILD_COMMAND}`)"
            ),
        })
        .clone()
}

/// Expands the test items once per guest, in modules `cpython` and `rustpython`, each with a
/// `GUEST` constant, so every test runs (and is reported) on both interpreters.
#[macro_export]
macro_rules! for_each_guest {
    ($($item:item)*) => {
        mod cpython {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            const GUEST: codecell::GuestKind = codecell::GuestKind::CPython;
            $($item)*
        }
        mod rustpython {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            const GUEST: codecell::GuestKind = codecell::GuestKind::RustPython;
            $($item)*
        }
    };
}

/// The demo catalog from `fixtures/demo/catalog.json`.
pub fn demo_catalog() -> Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG
        .get_or_init(|| {
            Catalog::from_file(&fixture("demo/catalog.json")).expect("demo catalog loads")
        })
        .clone()
}

/// Runs `code` on `guest` against the demo catalog with `limits`.
pub async fn run_with(guest: GuestKind, code: &str, limits: &Limits) -> Outcome {
    engine(guest)
        .run_snippet(code, Some(demo_catalog()), limits)
        .await
        .expect("the host itself does not fail")
}

/// Runs `code` on `guest`'s fuel-metered engine against the demo catalog with `limits`.
pub async fn run_fueled(guest: GuestKind, code: &str, limits: &Limits) -> Outcome {
    fuel_engine(guest)
        .run_snippet(code, Some(demo_catalog()), limits)
        .await
        .expect("the host itself does not fail")
}

/// Runs `code` on `guest` against the demo catalog with default limits.
pub async fn run(guest: GuestKind, code: &str) -> Outcome {
    run_with(guest, code, &Limits::default()).await
}

/// The `[GUEST] [COUNT]` arguments of the profiling loops in `examples/` (RustPython and
/// `default_count` when absent); exits with `usage` when either is not understood.
pub fn example_args(default_count: u64, usage: &str) -> (GuestKind, u64) {
    let mut args = std::env::args().skip(1);
    let guest = args.next().unwrap_or_else(|| "rustpython".into()).parse();
    let count = args.next().map_or(Ok(default_count), |s| s.parse());
    match (guest, count) {
        (Ok(guest), Ok(count)) if count > 0 => (guest, count),
        _ => {
            eprintln!("usage: {usage}");
            std::process::exit(2);
        }
    }
}
