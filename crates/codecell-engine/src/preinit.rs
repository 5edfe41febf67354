//! Pre-initialisation: run a guest's `wizer-initialize` export once and snapshot the result.
//!
//! Both guests start their interpreter and import the stdlib in `wizer-initialize`; wasmtime-wizer
//! instruments the component so its memories and globals can be read back, we instantiate it with
//! the same linker the runs use, call the export, and wizer rewrites the component with that state
//! as its initial image. This happens once per guest and machine, on an artifact-cache miss: every
//! run then starts from the snapshot instead of paying a billion instructions of start-up.
//!
//! The init runs under generous fixed limits (it is our own code, but a broken guest must still
//! fail with an error rather than hang the process).

use crate::error::EngineError;
use crate::limits::Limits;
use crate::state::RunState;
use std::path::Path;
use wasmparser::Payload;
use wasmtime::Store;
use wasmtime::component::{Component, Instance, Lift, WasmList};
use wasmtime::format_err;
use wasmtime_wizer::{ComponentInstanceState, Wizer};

/// The export a pre-initialisable guest provides (`world sandbox-preinit`).
pub(crate) const INIT_EXPORT: &str = "wizer-initialize";

/// Start-up limits: far above what the guest needs (about 1e9 fuel and 100 MiB), still finite.
fn init_limits() -> Limits {
    Limits {
        fuel: 50_000_000_000,
        memory_bytes: 1 << 30,
        ..Limits::default()
    }
}

/// The engine that runs the init once: the instrumented code runs a single time, so it is
/// compiled without optimisation (several times faster to compile for a 30 MB guest). Fuel,
/// not a wall clock, bounds it: a guest that loops in its init fails after `init_limits().fuel`.
fn init_engine() -> wasmtime::Result<wasmtime::Engine> {
    let mut config = crate::config::base_config(crate::metering::Metering::Fuel);
    config.cranelift_opt_level(wasmtime::OptLevel::None);
    wasmtime::Engine::new(&config)
}

/// Whether the component in `wasm` exports `wizer-initialize` itself (not merely one of its core
/// modules). Bytes that do not parse export nothing: compiling them reports the error.
pub(crate) fn exports_init(wasm: &[u8]) -> bool {
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload {
            Ok(Payload::ModuleSection { .. } | Payload::ComponentSection { .. }) => depth += 1,
            Ok(Payload::End(_)) if depth == 0 => return false,
            Ok(Payload::End(_)) => depth -= 1,
            Ok(Payload::ComponentExportSection(exports)) if depth == 0 => {
                let found = exports
                    .into_iter()
                    .any(|e| e.is_ok_and(|e| e.name.name == INIT_EXPORT));
                if found {
                    return true;
                }
            }
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

/// Returns the pre-initialised form of the component in `wasm` (the bytes of the file at `path`),
/// or the bytes as they are when it does not export `wizer-initialize`.
///
/// Runs on a thread of its own with its own runtime, so callers may be inside a tokio runtime.
pub(crate) fn preinitialize(path: &Path, wasm: &[u8]) -> Result<Vec<u8>, EngineError> {
    if !exports_init(wasm) {
        return Ok(wasm.to_vec());
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| preinitialize_here(path, wasm))
            .join()
            .unwrap_or_else(|_| {
                Err(EngineError::Preinit {
                    path: path.to_path_buf(),
                    stage: "running the pre-initialiser",
                    source: format_err!("the pre-initialiser panicked"),
                })
            })
    })
}

fn preinitialize_here(path: &Path, wasm: &[u8]) -> Result<Vec<u8>, EngineError> {
    let fail = |stage: &'static str, source: wasmtime::Error| EngineError::Preinit {
        path: path.to_path_buf(),
        stage,
        source,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail("starting a runtime", e.into()))?;
    runtime.block_on(async {
        let mut wizer = Wizer::new();
        // Removing the export from the core module but not from the component's lifts gives an
        // invalid component in wasmtime-wizer 48; a second call is a no-op in the guest anyway.
        wizer.keep_init_func(true);
        let (cx, instrumented) = wizer
            .instrument_component(wasm)
            .map_err(|e| fail("instrumenting", e))?;
        let engine = &init_engine().map_err(|e| fail("configuring wasmtime", e))?;
        let linker = crate::config::linker(engine)?;
        let component = Component::new(engine, &instrumented)
            .map_err(|e| fail("compiling the instrumented guest", e))?;
        let limits = init_limits();
        let state = crate::state::RunState::new(&limits, None);
        let mut store = crate::engine::store_with(engine, state, &limits, None)?;
        let instance = linker
            .instantiate_async(&mut store, &component)
            .await
            .map_err(|e| fail("instantiating", e))?;
        let init = instance
            .get_typed_func::<(), ()>(&mut store, INIT_EXPORT)
            .map_err(|e| fail("finding `wizer-initialize`", e))?;
        init.call_async(&mut store, ())
            .await
            .map_err(|e| fail("running `wizer-initialize`", e))?;
        let written = store.data().stdout.take().0.len() + store.data().stderr.take().0.len();
        if written > 0 {
            // Output during init means a stdio stream handle may be cached in the snapshot,
            // which would be dangling in every later instance.
            return Err(fail(
                "checking the snapshot",
                format_err!("the guest wrote {written} bytes to stdio during initialisation"),
            ));
        }
        let mut state = SnapshotState {
            store: &mut store,
            instance,
            error: None,
        };
        let snapshot = wizer
            .snapshot_component(&cx, &mut state)
            .await
            .map_err(|e| fail("snapshotting", e))?;
        match state.error {
            Some(e) => Err(fail("reading the guest's state", format_err!("{e}"))),
            None => Ok(snapshot),
        }
    })
}

/// Reads an instrumented instance's state for wizer; the first failure is kept in `error`
/// (wizer's trait cannot return one) and the snapshot is then discarded.
struct SnapshotState<'a> {
    store: &'a mut Store<RunState>,
    instance: Instance,
    error: Option<String>,
}

impl SnapshotState<'_> {
    async fn call<R, O>(
        &mut self,
        instance: &str,
        func: &str,
        default: O,
        use_ret: impl FnOnce(&Store<RunState>, R) -> O,
    ) -> O
    where
        R: Lift + Send + Sync + 'static,
    {
        if self.error.is_some() {
            return default;
        }
        match self.try_call::<R>(instance, func).await {
            Ok(ret) => use_ret(self.store, ret),
            Err(e) => {
                self.error = Some(format!("{instance}#{func}: {e:#}"));
                default
            }
        }
    }

    async fn try_call<R>(&mut self, instance: &str, func: &str) -> wasmtime::Result<R>
    where
        R: Lift + Send + Sync + 'static,
    {
        let (_, outer) = self
            .instance
            .get_export(&mut *self.store, None, instance)
            .ok_or_else(|| wasmtime::format_err!("no export `{instance}`"))?;
        let (_, inner) = self
            .instance
            .get_export(&mut *self.store, Some(&outer), func)
            .ok_or_else(|| wasmtime::format_err!("no export `{func}`"))?;
        let typed = self
            .instance
            .get_typed_func::<(), (R,)>(&mut *self.store, inner)?;
        Ok(typed.call_async(&mut *self.store, ()).await?.0)
    }
}

impl ComponentInstanceState for SnapshotState<'_> {
    async fn call_func_ret_list_u8(
        &mut self,
        instance: &str,
        func: &str,
        contents: impl FnOnce(&[u8]) + Send,
    ) {
        let bytes = self
            .call(instance, func, None, |store, list: WasmList<u8>| {
                Some(list.as_le_slice(store).to_vec())
            })
            .await;
        contents(bytes.as_deref().unwrap_or_default());
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.call(instance, func, 0, |_, r| r).await
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.call(instance, func, 0, |_, r| r).await
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.call(instance, func, 0, |_, r: f32| r.to_bits()).await
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.call(instance, func, 0, |_, r: f64| r.to_bits()).await
    }
}

#[cfg(test)]
mod tests {
    use super::exports_init;
    use crate::guest::{ALL_GUESTS, BUILD_COMMAND};

    /// Both built guests are pre-initialised (a guest that is not would start its interpreter in
    /// every run); an empty component and bytes that are not wasm are compiled as they are.
    #[test]
    fn the_built_guests_export_the_init_and_nothing_else_is_taken_for_one() {
        for guest in ALL_GUESTS {
            let path = guest.built_path();
            let wasm = std::fs::read(&path).unwrap_or_else(|e| {
                panic!("{}: {e}; build it with `{BUILD_COMMAND}`", path.display())
            });
            assert!(
                exports_init(&wasm),
                "{guest:?} does not export `wizer-initialize`"
            );
        }
        assert!(!exports_init(b"\0asm\x0d\0\x01\0"));
        assert!(!exports_init(b"\0asm not really"));
    }
}
