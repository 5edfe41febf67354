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

/// The demo catalog from `fixtures/demo/catalog.json`. On Windows its python3 scripts are
/// swapped for the `demo_tools` example (`examples/demo_tools.rs`), which gives the same
/// results: a test under Wine cannot start a Linux python3.
pub fn demo_catalog() -> Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG
        .get_or_init(|| {
            let path = fixture("demo/catalog.json");
            if !cfg!(windows) {
                return Catalog::from_file(&path).expect("demo catalog loads");
            }
            let text = std::fs::read_to_string(&path).expect("the demo catalog is readable");
            let mut catalog: serde_json::Value =
                serde_json::from_str(&text).expect("the demo catalog is JSON");
            let tools = catalog["categories"]
                .as_array_mut()
                .into_iter()
                .flatten()
                .flat_map(|c| c["tools"].as_array_mut().into_iter().flatten());
            for tool in tools {
                let command = &mut tool["handler"]["command"];
                let sub = match (command[1].as_str(), command[2].as_str()) {
                    (Some("units.py"), _) => "units".to_string(),
                    (Some("text_stats.py"), Some(sub)) => sub.to_string(),
                    other => panic!("no demo_tools command for {other:?}"),
                };
                *command = serde_json::json!([demo_tools_exe(), sub]);
            }
            Catalog::from_json_str(&catalog.to_string(), &fixture("demo"), "demo catalog")
                .expect("the demo catalog loads with demo_tools")
        })
        .clone()
}

/// The `demo_tools` example, which `cargo test` builds next to the test binaries.
pub fn demo_tools_exe() -> String {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("target dir");
    let path = dir
        .join("examples")
        .join(format!("demo_tools{}", std::env::consts::EXE_SUFFIX));
    if !path.is_file() {
        // A filtered run (`cargo test --test all code_mode`) does not build examples: build it.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let built = std::process::Command::new(cargo)
            .args(["build", "-p", "codecell-tests", "--example", "demo_tools"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(built, "building the demo_tools example failed");
    }
    assert!(path.is_file(), "{} is missing", path.display());
    path.to_string_lossy().into_owned()
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
