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
use cranelift_codegen::settings::{Configurable, SetResult};
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
        let (wasm, cache_dir) = self.locations()?;
        let wasmtime = wasmtime::Engine::new(&self.wasmtime_config())?;
        let ticker = match self.metering {
            Metering::Epoch => {
                Some(EpochTicker::start(&wasmtime).map_err(EngineError::EpochTicker)?)
            }
            Metering::Fuel => None,
        };

        let linker = linker(&wasmtime)?;
        let component = artifact_cache::load_or_compile(
            &wasmtime,
            &wasm,
            &cache_dir,
            self.guest.name(),
            self.prepare(),
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

    /// Compiles the guest for another platform's engine into the cache, without loading it, and
    /// returns the artifact's path: that platform's first run then loads instead of compiling.
    ///
    /// `target` is a target triple of this host's architecture, such as
    /// `x86_64-pc-windows-gnu` on an x86-64 Linux machine; the artifact is compiled for this
    /// CPU's features, as an engine on the other OS would detect them on this same machine (CI
    /// compiles the Windows artifacts on Linux, then runs the Windows build under Wine). The
    /// metering is part of the artifact, so precompile once per [`Metering`] that will be used.
    /// An artifact already in the cache is not compiled again.
    pub fn precompile_for(self, target: &str) -> Result<PathBuf, EngineError> {
        let unsupported = || EngineError::UnsupportedTarget {
            target: target.to_owned(),
            arch: std::env::consts::ARCH,
        };
        let platform = artifact_cache::platform_of(target).ok_or_else(unsupported)?;
        let (wasm, cache_dir) = self.locations()?;
        let config = self.cross_config(target).map_err(|_| unsupported())?;
        let wasmtime = wasmtime::Engine::new(&config)?;
        artifact_cache::precompile(
            &wasmtime,
            &wasm,
            &cache_dir,
            self.guest.name(),
            &platform,
            self.prepare(),
        )
    }

    /// What is done to the guest's bytes before compiling: pre-initialisation, when the
    /// component exports `wizer-initialize` (both guests do).
    fn prepare(&self) -> Option<artifact_cache::Prepare> {
        Some(preinit::preinitialize as artifact_cache::Prepare)
    }

    /// The guest component's path (which must exist) and the cache directory.
    fn locations(&self) -> Result<(PathBuf, PathBuf), EngineError> {
        let wasm = self
            .wasm_path
            .clone()
            .unwrap_or_else(|| self.guest.default_path());
        if !wasm.is_file() {
            return Err(EngineError::GuestNotBuilt { path: wasm });
        }
        let cache_dir = self
            .cache_dir
            .clone()
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
        Ok((wasm, cache_dir))
    }

    /// The wasmtime configuration of this builder's engine: everything the artifact depends on.
    fn wasmtime_config(&self) -> wasmtime::Config {
        let mut config = base_config(self.metering);
        config.allocation_strategy(pool::strategy(self.max_concurrent_runs));
        config
    }
}

impl EngineBuilder {
    /// [`EngineBuilder::wasmtime_config`] for `target`, with this host's CPU features.
    fn cross_config(&self, target: &str) -> wasmtime::Result<wasmtime::Config> {
        let mut config = self.wasmtime_config();
        config.target(target)?;
        for (flag, value) in host_cpu_features() {
            // SAFETY: the flags are CPU features this host has; an engine that loads the
            // artifact on a CPU without one refuses it (wasmtime checks every enabled feature).
            unsafe {
                config.cranelift_flag_set(&flag, &value);
            }
        }
        Ok(config)
    }
}

/// The cranelift flags (name, value) of the CPU features this host has, as cranelift-native
/// sets them for a native wasmtime engine.
fn host_cpu_features() -> Vec<(String, String)> {
    /// Records the flags instead of applying them.
    struct Recorder(Vec<(String, String)>);
    impl Configurable for Recorder {
        fn set(&mut self, name: &str, value: &str) -> SetResult<()> {
            self.0.push((name.to_owned(), value.to_owned()));
            Ok(())
        }
        fn enable(&mut self, name: &str) -> SetResult<()> {
            self.set(name, "true")
        }
    }
    let mut recorder = Recorder(Vec::new());
    // Without detection (an architecture cranelift-native does not probe), the baseline.
    let _ = cranelift_native::infer_native_flags(&mut recorder);
    recorder.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{DefaultHasher, Hash, Hasher};

    fn compatibility(config: &wasmtime::Config) -> u64 {
        let engine = wasmtime::Engine::new(config).unwrap();
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn an_engine_precompiling_for_this_very_host_matches_a_native_one() {
        // The cross engine of `precompile_for` must compile what the other OS's native engine
        // would (same settings, same CPU features), or that engine misses the cache and
        // compiles anyway. Aimed at this host, the two can be compared here.
        for metering in [Metering::Epoch, Metering::Fuel] {
            let builder = Engine::builder().metering(metering).max_concurrent_runs(1);
            let native = compatibility(&builder.wasmtime_config());
            let host = target_lexicon::HOST.to_string();
            let cross = compatibility(&builder.cross_config(&host).unwrap());
            assert_eq!(native, cross, "{host}, {metering:?}");
            let other_os = if cfg!(windows) {
                "x86_64-unknown-linux-gnu"
            } else {
                "x86_64-pc-windows-gnu"
            };
            let other = compatibility(&builder.cross_config(other_os).unwrap());
            assert_ne!(
                native, other,
                "the OS is part of what an artifact is compiled for"
            );
        }
    }
}
