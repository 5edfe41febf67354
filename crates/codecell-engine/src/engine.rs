//! `Engine`: one per process. Holds the wasmtime engine, the compiled guest and the instance pool.

use crate::artifact_cache;
use crate::bindings::SandboxPre;
use crate::error::EngineError;
use crate::guest::GuestKind;
use crate::pool;
use crate::preinit;
use crate::state::RunState;
use crate::warm::Warm;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use wasmtime::component::{HasSelf, Linker};

/// Fuel a running guest burns between yields to the async runtime (about 1–3 ms of guest
/// work): how often a CPU-bound guest lets other tasks run and has its deadline checked.
///
/// Deadlines ride on fuel rather than on epoch interruption: the epoch checks compiled into
/// every loop and function entry cost 5–10% of guest speed, where the fuel checks are already
/// there for the fuel limit.
pub(crate) const YIELD_FUEL: u64 = 10_000_000;

/// Native wasm stack per run (virtual memory, committed only as used).
const MAX_WASM_STACK: usize = 8 << 20;

/// Builds an [`Engine`].
///
/// Secure defaults: the guest gets no preopened directories, no environment, no arguments, no
/// network and an empty stdin; fuel metering is always on, and a running guest yields to the
/// async runtime every 10 million units of fuel, where its deadline is checked; every run gets a
/// fresh instance, never used before, even when it was made ahead of time (the warm instance).
/// The choices are which guest to load, where to cache its compiled form, how many runs may hold
/// an instance at once (64; more wait their turn) and whether to keep a warm instance (the
/// guest's default: CPython yes, RustPython no).
#[derive(Debug, Clone)]
pub struct EngineBuilder {
    guest: GuestKind,
    wasm_path: Option<PathBuf>,
    cache_dir: Option<PathBuf>,
    max_concurrent_runs: u32,
    warm_instance: Option<bool>,
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

        let mut config = base_config();
        config.allocation_strategy(pool::strategy(self.max_concurrent_runs));
        let wasmtime = wasmtime::Engine::new(&config).map_err(EngineError::wasmtime)?;

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
        let pre = linker
            .instantiate_pre(&component)
            .map_err(EngineError::wasmtime)?;
        let pre = SandboxPre::new(pre).map_err(EngineError::wasmtime)?;

        Ok(Engine {
            inner: Arc::new(Inner {
                wasmtime,
                pre,
                guest: self.guest,
                wasm,
                slots: Arc::new(Semaphore::new(self.max_concurrent_runs as usize)),
                warm: (self
                    .warm_instance
                    .unwrap_or_else(|| self.guest.warm_by_default())
                    && self.max_concurrent_runs >= 2)
                    .then(|| Mutex::new(None)),
                refilling: AtomicBool::new(false),
            }),
        })
    }
}

/// The wasmtime settings every engine running a guest shares, the pre-initialiser's included:
/// fuel metering, the component model and the wasm stack sizes.
pub(crate) fn base_config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.consume_fuel(true);
    config.wasm_component_model(true);
    // CPython's own C-recursion guard (about 1 MB of its shadow stack) must trip before wasm's
    // native stack runs out, so deep nesting in json/repr is a catchable RecursionError rather
    // than a trap; 8 MiB was measured to be enough for json.dumps, and a trap is still handled.
    config.max_wasm_stack(MAX_WASM_STACK);
    config.async_stack_size(MAX_WASM_STACK + (1 << 20));
    config
}

/// A linker with WASI (an empty context is supplied per run) and the three host functions.
pub(crate) fn linker(engine: &wasmtime::Engine) -> Result<Linker<RunState>, EngineError> {
    let mut linker: Linker<RunState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(EngineError::wasmtime)?;
    crate::bindings::Sandbox::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
        .map_err(EngineError::wasmtime)?;
    Ok(linker)
}

pub(crate) struct Inner {
    pub(crate) wasmtime: wasmtime::Engine,
    pub(crate) pre: SandboxPre<RunState>,
    pub(crate) guest: GuestKind,
    pub(crate) wasm: PathBuf,
    /// One permit per pool slot: a run holds one from before instantiation until its store is
    /// dropped, so the pool is never exhausted.
    pub(crate) slots: Arc<Semaphore>,
    /// The next run's instance, made ahead of time (None: warm instances are off).
    pub(crate) warm: Option<Mutex<Option<Warm>>>,
    /// Set while a background task is making the warm instance.
    pub(crate) refilling: AtomicBool,
}

/// The code-mode engine: cheap to clone, shared by every run in the process.
///
/// Runs are futures: they must be polled inside a tokio runtime with timers enabled (the
/// deadline of a guest blocked in a host call is a tokio timeout). Many may run concurrently; a
/// CPU-bound guest yields to the runtime every 10 million units of fuel (a few milliseconds).
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("guest", &self.inner.guest)
            .field("wasm", &self.inner.wasm)
            .finish()
    }
}

impl Engine {
    /// A builder with the secure defaults described on [`EngineBuilder`].
    pub fn builder() -> EngineBuilder {
        EngineBuilder {
            guest: GuestKind::CPython,
            wasm_path: None,
            cache_dir: None,
            max_concurrent_runs: pool::DEFAULT_MAX_CONCURRENT_RUNS,
            warm_instance: None,
        }
    }

    /// The guest this engine runs.
    pub fn guest(&self) -> GuestKind {
        self.inner.guest
    }
}
