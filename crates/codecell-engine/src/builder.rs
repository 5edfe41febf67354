//! `EngineBuilder`: the secure defaults, and the choices an embedder can make.

use crate::artifact_cache;
use crate::bindings::SandboxPre;
use crate::config::{base_config, linker};
use crate::engine::{Engine, Inner};
use crate::error::EngineError;
use crate::guest::GuestKind;
use crate::metering::{EpochTicker, Metering};
use crate::pool;
use crate::preinit;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// Builds an [`Engine`].
///
/// Secure defaults, none of which can be turned off:
///
/// - the guest gets no preopened directories, no environment, no arguments, no network and an
///   empty stdin; stdout and stderr are captured in memory up to the run's output cap;
/// - its only imports beyond that are `ls`, `read` and `call_tool`, backed by the run's catalog;
/// - every run has a wall-clock deadline, and a running guest yields to the async runtime about
///   every millisecond, where the deadline is checked (by epoch interruption, or by fuel when
///   the engine meters fuel: [`EngineBuilder::metering`]);
/// - the store's limiter holds linear memory to the run's cap and bounds tables and instances;
/// - every run gets a fresh instance, never used before, even when it was made ahead of time
///   (the warm instance).
///
/// What can be chosen: which guest to load and from where, where to cache its compiled form,
/// how many runs may hold an instance at once (64; more wait their turn), whether to keep a
/// warm instance (the guest's default: CPython yes, RustPython no) and the metering (default
/// [`Metering::Epoch`]: the deadline only; [`Metering::Fuel`] adds an exact instruction budget
/// at a cost in guest speed).
///
/// ```
/// use codecell_engine::{Engine, GuestKind, Limits};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let engine = Engine::builder()
///     .guest(GuestKind::RustPython)
///     .max_concurrent_runs(4)
///     .build()
///     .expect("the guest is built: python3 wasm-guests/build.py --guest all");
/// let outcome = engine
///     .run_snippet("print(6 * 7)", None, &Limits::default())
///     .await
///     .unwrap();
/// assert_eq!(outcome.stdout, "42\n");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct EngineBuilder {
    guest: GuestKind,
    wasm_path: Option<PathBuf>,
    cache_dir: Option<PathBuf>,
    max_concurrent_runs: u32,
    warm_instance: Option<bool>,
    metering: Metering,
}

impl Engine {
    /// A builder with the secure defaults described on [`EngineBuilder`].
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }
}

impl Default for EngineBuilder {
    fn default() -> Self {
        EngineBuilder {
            guest: GuestKind::CPython,
            wasm_path: None,
            cache_dir: None,
            max_concurrent_runs: pool::DEFAULT_MAX_CONCURRENT_RUNS,
            warm_instance: None,
            metering: Metering::default(),
        }
    }
}

impl EngineBuilder {
    /// Selects the guest interpreter (default: CPython).
    pub fn guest(mut self, guest: GuestKind) -> Self {
        self.guest = guest;
        self
    }

    /// Loads the guest component from `path` instead of the default location.
    pub fn wasm_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.wasm_path = Some(path.into());
        self
    }

    /// Stores compiled artifacts in `dir` (default: `$CODECELL_CACHE_DIR`, else the guest's directory).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// How many runs may hold a guest instance at the same time (default 64, at least 1).
    ///
    /// Instances come from a pool sized for this many; further runs wait for a free slot before
    /// their deadline starts. Each slot reserves address space for a 4 GiB linear memory.
    pub fn max_concurrent_runs(mut self, runs: u32) -> Self {
        self.max_concurrent_runs = runs.max(1);
        self
    }

    /// Whether to instantiate each run's fresh instance ahead of time, after the previous run
    /// (default: the guest's choice, [`GuestKind::warm_by_default`]; never with a pool of one
    /// slot). It costs one idle instance and one pool slot, and takes instantiation out of a
    /// run's latency; see `warm.rs`.
    pub fn warm_instance(mut self, on: bool) -> Self {
        self.warm_instance = Some(on);
        self
    }

    /// How running guests are metered (default [`Metering::Epoch`]): epoch interruption keeps
    /// the deadline at full guest speed but enforces no [`crate::Limits::fuel`] and reports
    /// `fuel_used` as 0; [`Metering::Fuel`] enforces the fuel budget exactly and reports it, at
    /// about a third of a tight loop's time (`docs/performance.md`). Each has its own compiled
    /// artifact in the cache.
    pub fn metering(mut self, metering: Metering) -> Self {
        self.metering = metering;
        self
    }

    /// Loads (or compiles and caches) the guest.
    pub fn build(self) -> Result<Engine, EngineError> {
        let wasm = self.wasm_path.unwrap_or_else(|| self.guest.default_path());
        if !wasm.is_file() {
            return Err(EngineError::GuestNotBuilt { path: wasm });
        }
        let cache_dir = self
            .cache_dir
            .or_else(|| {
                std::env::var_os("CODECELL_CACHE_DIR")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            })
            .unwrap_or_else(|| {
                wasm.parent()
                    .map(|p| p.join("cache"))
                    .unwrap_or_else(|| PathBuf::from("cache"))
            });

        let mut config = base_config(self.metering);
        config.allocation_strategy(pool::strategy(self.max_concurrent_runs));
        let wasmtime = wasmtime::Engine::new(&config)?;
        let ticker = match self.metering {
            Metering::Epoch => {
                Some(EpochTicker::start(&wasmtime).map_err(EngineError::EpochTicker)?)
            }
            Metering::Fuel => None,
        };

        let linker = linker(&wasmtime)?;
        let prepare = |bytes: &[u8]| preinit::preinitialize(&wasm, bytes);
        let component = artifact_cache::load_or_compile(
            &wasmtime,
            &wasm,
            &cache_dir,
            self.guest.name(),
            self.guest
                .needs_preinit()
                .then_some(&prepare as &artifact_cache::Prepare<'_>),
        )?;
        let pre = SandboxPre::new(linker.instantiate_pre(&component)?)?;
        let warm = self
            .warm_instance
            .unwrap_or_else(|| self.guest.warm_by_default())
            && self.max_concurrent_runs >= 2;

        Ok(Engine {
            inner: Arc::new(Inner {
                wasmtime,
                pre,
                guest: self.guest,
                wasm,
                slots: Arc::new(Semaphore::new(self.max_concurrent_runs as usize)),
                warm: warm.then(|| Mutex::new(None)),
                refilling: AtomicBool::new(false),
                metering: self.metering,
                ticker,
            }),
        })
    }
}
