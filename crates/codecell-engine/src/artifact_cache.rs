//! The compiled-artifact cache: compile a guest once per machine, not once per process.
//!
//! Compiling the ~20 MB CPython component takes seconds and half a gigabyte; loading a cached
//! `.cwasm` maps it in about 2 ms. The cache key covers everything that makes an artifact valid:
//! the guest's content hash, the wasmtime version, the platform and the engine's compilation
//! settings. Files are named `{guest}-{arch}-{os}-{key}.cwasm`. Processes that miss at the same
//! time compile an artifact once: one holds its `CompileLock`, the others wait and load it.
//!
//! Trust: `Component::deserialize_file` executes what the file contains, so the cache directory
//! must be writable only by the user running codecell (it defaults to the guest's own build
//! directory). A file that fails to load is recompiled and replaced.

use crate::error::EngineError;
use sha2::{Digest, Sha256};
use std::fs::{File, TryLockError};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The content hash of the guest at `wasm`: its `.sha256` side file when present (written by the
/// build script, so a process start does not hash 20 MB), else computed.
fn guest_digest(wasm: &Path) -> Result<String, EngineError> {
    let side = wasm.with_file_name(format!(
        "{}.sha256",
        wasm.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    if let (Ok(text), Ok(side_meta), Ok(wasm_meta)) = (
        std::fs::read_to_string(&side),
        side.metadata(),
        wasm.metadata(),
    ) {
        let digest = text.trim();
        // Only trust the side file if it is not older than the guest it describes.
        let fresh = match (side_meta.modified(), wasm_meta.modified()) {
            (Ok(s), Ok(w)) => s >= w,
            _ => false,
        };
        if fresh && digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(digest.to_ascii_lowercase());
        }
    }
    let bytes = std::fs::read(wasm).map_err(|e| EngineError::io(wasm, e))?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

/// A transformation applied to the bytes of the guest at a path before compiling
/// (pre-initialisation).
pub(crate) type Prepare = fn(&Path, &[u8]) -> Result<Vec<u8>, EngineError>;

/// The platform an artifact is compiled for, part of its file name: machine code for one OS is
/// never loaded by another (a Linux and a Windows build may share a cache directory, as they do
/// when tests run under Wine), and each platform's artifacts are pruned apart.
fn platform() -> String {
    format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS)
}

/// The platform a target triple names, as [`platform`] reads on that platform, or `None` when
/// the triple is of another architecture than this host or of an OS codecell does not build for.
pub(crate) fn platform_of(triple: &str) -> Option<String> {
    let arch = triple.split('-').next()?;
    let os = if triple.contains("-windows") {
        "windows"
    } else if triple.contains("-linux") {
        "linux"
    } else if triple.contains("-apple-darwin") {
        "macos"
    } else {
        return None;
    };
    (arch == std::env::consts::ARCH).then(|| format!("{arch}-{os}"))
}

/// The cache key for `wasm` compiled by `engine`, `prepared` or not.
fn cache_key(engine: &Engine, guest_digest: &str, platform: &str, prepared: bool) -> String {
    let mut config = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut config);
    let mut h = Sha256::new();
    h.update(guest_digest.as_bytes());
    h.update(b"\0wasmtime-48.0.8\0");
    h.update(platform.as_bytes());
    h.update(config.finish().to_le_bytes());
    h.update(if prepared { "\0preinit-v1" } else { "\0plain" });
    hex::encode(&h.finalize()[..12])
}

/// Where the artifact of `wasm` (named `guest`) compiled by `engine` for `platform` lives in
/// `cache_dir`.
fn artifact_path(
    engine: &Engine,
    wasm: &Path,
    cache_dir: &Path,
    guest: &str,
    platform: &str,
    prepared: bool,
) -> Result<PathBuf, EngineError> {
    let key = cache_key(engine, &guest_digest(wasm)?, platform, prepared);
    Ok(cache_dir.join(format!("{guest}-{platform}-{key}.cwasm")))
}

/// Loads the compiled guest from `cache_dir`; on a miss, runs `prepare` on its bytes (if given),
/// compiles the result and stores it.
pub(crate) fn load_or_compile(
    engine: &Engine,
    wasm: &Path,
    cache_dir: &Path,
    guest: &str,
    prepare: Option<Prepare>,
) -> Result<Component, EngineError> {
    let platform = platform();
    let cached = artifact_path(engine, wasm, cache_dir, guest, &platform, prepare.is_some())?;
    if let Some(component) = load_cached(engine, &cached) {
        return Ok(component);
    }
    let _compiling = CompileLock::acquire(cache_dir, &cached, COMPILE_WAIT);
    // Another process may have stored it while this one waited.
    if let Some(component) = load_cached(engine, &cached) {
        return Ok(component);
    }
    let bytes = prepared(wasm, prepare)?;
    let component =
        Component::new(engine, &bytes).map_err(|source| EngineError::compile(wasm, source))?;
    // A cache that cannot be written costs time, not correctness: carry on without it.
    if let Ok(artifact) = component.serialize()
        && store(&artifact, cache_dir, &cached).is_ok()
    {
        prune(cache_dir, &format!("{guest}-{platform}"), KEEP_PER_GUEST);
        remove_unplatformed(cache_dir, guest);
    }
    Ok(component)
}

/// Compiles the guest with `engine`, an engine for another `platform` (which this process
/// cannot load), into `cache_dir`, unless its artifact is there already; returns its path.
pub(crate) fn precompile(
    engine: &Engine,
    wasm: &Path,
    cache_dir: &Path,
    guest: &str,
    platform: &str,
    prepare: Option<Prepare>,
) -> Result<PathBuf, EngineError> {
    let cached = artifact_path(engine, wasm, cache_dir, guest, platform, prepare.is_some())?;
    if cached.is_file() {
        return Ok(cached);
    }
    let _compiling = CompileLock::acquire(cache_dir, &cached, COMPILE_WAIT);
    if cached.is_file() {
        return Ok(cached);
    }
    // `Component::new` would refuse: it compiles to run here.
    let artifact = engine
        .precompile_component(&prepared(wasm, prepare)?)
        .map_err(|source| EngineError::compile(wasm, source))?;
    // Here the artifact is the whole point, so failing to store it is an error.
    store(&artifact, cache_dir, &cached)?;
    prune(cache_dir, &format!("{guest}-{platform}"), KEEP_PER_GUEST);
    Ok(cached)
}

/// The bytes of the guest at `wasm`, after `prepare` (if given): what is compiled.
fn prepared(wasm: &Path, prepare: Option<Prepare>) -> Result<Vec<u8>, EngineError> {
    let bytes = std::fs::read(wasm).map_err(|e| EngineError::io(wasm, e))?;
    match prepare {
        Some(prepare) => prepare(wasm, &bytes),
        None => Ok(bytes),
    }
}

/// The artifact at `cached`, mapped from the file, else read into memory; `None` if it does not
/// load either way (stale, truncated or foreign: the caller recompiles).
///
/// Mapping shares the pages between processes and is the fast path. Some platforms refuse it:
/// Wine rejects the copy-on-write, executable file view wasmtime asks for on Windows ("Access
/// denied" changing its protection), which used to send every process there to recompile the
/// guest. Reading the file costs a copy but keeps the cache working.
fn load_cached(engine: &Engine, cached: &Path) -> Option<Component> {
    if !cached.is_file() {
        return None;
    }
    // SAFETY (both calls): the file was written by `Component::serialize` of an engine with the
    // same key, into a directory that only this user writes (see the module docs).
    if let Ok(component) = unsafe { Component::deserialize_file(engine, cached) } {
        return Some(component);
    }
    let bytes = std::fs::read(cached).ok()?;
    unsafe { Component::deserialize(engine, &bytes) }.ok()
}

/// How long a process waits for another one compiling the same artifact before it compiles the
/// artifact too: a stuck or stopped compiler delays the others this much at most.
const COMPILE_WAIT: Duration = Duration::from_secs(300);

/// How often a waiting process tries the lock again.
const COMPILE_POLL: Duration = Duration::from_millis(50);

/// The right to compile one artifact, held by one process (or thread) at a time, so that the
/// processes starting together on a cold cache (a test suite, a harness's workers) compile a
/// guest once and the rest load it, where each used to compile it for itself (20–40 s of CPU and
/// half a gigabyte each).
///
/// An OS file lock on `.{artifact}.lock` beside the artifact: the OS releases it when its holder
/// exits, however it exits, so a crashed compiler leaves no lock that blocks. Locking is only an
/// economy: whenever it cannot be had (a read-only cache directory, a file system without locks,
/// a symlink in the lock's place, the wait over) the caller compiles without it, and `store`'s
/// write-then-rename keeps concurrent writers correct.
struct CompileLock {
    path: PathBuf,
    _file: File,
}

impl CompileLock {
    /// Takes the lock for the artifact at `cached` in `dir`, waiting up to `wait` while another
    /// holder compiles; `None` when it cannot be had.
    fn acquire(dir: &Path, cached: &Path, wait: Duration) -> Option<CompileLock> {
        std::fs::create_dir_all(dir).ok()?;
        let name = cached.file_name()?.to_string_lossy();
        let path = dir.join(format!(".{name}.lock"));
        // Opening follows a symlink; the lock never writes, but a link is not ours to lock.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.file_type().is_file()) {
            return None;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .ok()?;
        let deadline = Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => return Some(CompileLock { path, _file: file }),
                Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(COMPILE_POLL)
                }
                Err(_) => return None,
            }
        }
    }
}

impl Drop for CompileLock {
    /// Removes the lock file, then closes it (which unlocks). A process that opened it before
    /// the removal gets the lock next and finds the artifact stored; one arriving after finds
    /// the artifact before it looks for a lock.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Compiled artifacts kept per guest name: each is 40–90 MB, and every guest rebuild or engine
/// change writes a new one, so older ones are removed after a new one is stored.
const KEEP_PER_GUEST: usize = 3;

/// Removes all but the `keep` most recently written `{stem}-*.cwasm` files in `dir`.
fn prune(dir: &Path, stem: &str, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!("{stem}-");
    let mut artifacts: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with(&prefix) && name.ends_with(".cwasm")
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    artifacts.sort_by_key(|a| std::cmp::Reverse(a.0));
    for (_, path) in artifacts.into_iter().skip(keep) {
        // Another process may be mapping it: on Unix the mapping survives the unlink, and on
        // Windows the removal fails and is retried by the next store.
        let _ = std::fs::remove_file(path);
    }
}

/// Removes `{guest}-{key}.cwasm` files, named before the platform was part of the name, which
/// no build loads any more.
fn remove_unplatformed(dir: &Path, guest: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let key = name
            .strip_prefix(guest)
            .and_then(|n| n.strip_prefix('-'))
            .and_then(|n| n.strip_suffix(".cwasm"));
        if key.is_some_and(|k| k.len() == 24 && k.bytes().all(|b| b.is_ascii_hexdigit())) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes the serialized artifact `bytes` to `path` in `dir`.
fn store(bytes: &[u8], dir: &Path, path: &Path) -> Result<(), EngineError> {
    use std::io::Write;
    std::fs::create_dir_all(dir).map_err(|e| EngineError::io(dir, e))?;
    // Write then rename, so a concurrent reader never maps a half-written file. The temporary
    // file is created afresh (`create_new` never follows a symlink or reuses a file someone
    // planted under a name they guessed), in the cache directory itself so the rename stays on
    // one file system.
    let stem = path.file_name().unwrap_or_default().to_string_lossy();
    let (tmp, mut file) = (0..16)
        .find_map(|attempt| {
            let tmp = dir.join(format!(
                ".{stem}.{}.{}.tmp",
                std::process::id(),
                unique(attempt)
            ));
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
                .ok()?;
            Some((tmp, file))
        })
        .ok_or_else(|| {
            let refused = std::io::Error::other("cannot create a temporary file here");
            EngineError::io(dir, refused)
        })?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    drop(file);
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(EngineError::io(path, e));
    }
    Ok(())
}

/// A name part no other writer is likely to pick: the clock's nanoseconds and the attempt.
fn unique(attempt: u32) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{nanos:08x}{attempt:x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn artifact(dir: &Path, name: &str, age_s: u64) -> PathBuf {
        let path = dir.join(name);
        let file = std::fs::File::create(&path).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(age_s))
            .unwrap();
        path
    }

    #[test]
    fn prune_keeps_the_newest_artifacts_of_one_guest_only() {
        let dir = tempfile::tempdir().unwrap();
        let newest = artifact(dir.path(), "cpython-aaa.cwasm", 10);
        let second = artifact(dir.path(), "cpython-bbb.cwasm", 20);
        let oldest = artifact(dir.path(), "cpython-ccc.cwasm", 30);
        let other_guest = artifact(dir.path(), "rustpython-ddd.cwasm", 40);
        let not_an_artifact = artifact(dir.path(), "cpython-eee.tmp", 50);
        prune(dir.path(), "cpython", 2);
        assert!(newest.exists() && second.exists());
        assert!(!oldest.exists(), "the oldest cpython artifact is removed");
        assert!(
            other_guest.exists(),
            "another guest's artifacts are untouched"
        );
        assert!(not_an_artifact.exists(), "only .cwasm files are pruned");
    }

    #[test]
    fn artifacts_named_without_a_platform_are_removed_and_no_others() {
        let dir = tempfile::tempdir().unwrap();
        let legacy = artifact(dir.path(), "cpython-0123456789abcdef01234567.cwasm", 10);
        let current = artifact(
            dir.path(),
            &format!("cpython-{}-0123456789abcdef01234567.cwasm", platform()),
            10,
        );
        let other_guest = artifact(dir.path(), "rustpython-0123456789abcdef01234567.cwasm", 10);
        let not_a_key = artifact(dir.path(), "cpython-mine.cwasm", 10);
        remove_unplatformed(dir.path(), "cpython");
        assert!(!legacy.exists(), "the old-style name is removed");
        assert!(current.exists() && other_guest.exists() && not_a_key.exists());
    }

    /// The empty component, in binary: wasmtime's `wat` feature (its text parser) is off.
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    /// A guest file holding the empty component, in a fresh cache directory.
    fn guest_in(dir: &Path) -> PathBuf {
        let wasm = dir.join("guest.wasm");
        std::fs::write(&wasm, EMPTY_COMPONENT).unwrap();
        wasm
    }

    static COMPILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// A `prepare` that counts compiles and makes each take long enough to overlap.
    fn counted_slow_compile(_: &Path, bytes: &[u8]) -> Result<Vec<u8>, EngineError> {
        COMPILES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(300));
        Ok(bytes.to_vec())
    }

    fn lock_files(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".lock"))
            .collect()
    }

    #[test]
    fn loads_starting_together_on_a_cold_cache_compile_the_guest_once() {
        // Regression: every process of a test suite started on an empty cache compiled both
        // guests itself (CI's CLI tests: 245 s, of which 27 s were the tests).
        let dir = tempfile::tempdir().unwrap();
        let wasm = guest_in(dir.path());
        let engine = Engine::default();
        let before = COMPILES.load(std::sync::atomic::Ordering::SeqCst);
        std::thread::scope(|s| {
            let loads: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        load_or_compile(&engine, &wasm, dir.path(), "g", Some(counted_slow_compile))
                    })
                })
                .collect();
            for load in loads {
                assert!(load.join().unwrap().is_ok());
            }
        });
        let compiles = COMPILES.load(std::sync::atomic::Ordering::SeqCst) - before;
        assert_eq!(compiles, 1, "one compile, three loads");
        assert!(lock_files(dir.path()).is_empty(), "no lock file is left");
    }

    #[test]
    fn a_lock_file_left_by_a_dead_compiler_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let wasm = guest_in(dir.path());
        let engine = Engine::default();
        let cached = artifact_path(&engine, &wasm, dir.path(), "g", &platform(), false).unwrap();
        let name = cached.file_name().unwrap().to_string_lossy();
        // What a killed process leaves: the file, without the lock (the OS dropped it).
        std::fs::write(dir.path().join(format!(".{name}.lock")), b"").unwrap();
        let started = Instant::now();
        load_or_compile(&engine, &wasm, dir.path(), "g", None).unwrap();
        assert!(
            started.elapsed() < COMPILE_WAIT,
            "it did not wait out the lock"
        );
        assert!(cached.is_file(), "the artifact is stored");
        assert!(
            lock_files(dir.path()).is_empty(),
            "the stale lock file is removed"
        );
    }

    #[test]
    fn a_compiler_holding_the_lock_delays_another_by_the_wait_at_most() {
        let dir = tempfile::tempdir().unwrap();
        let cached = dir.path().join("g.cwasm");
        let held = CompileLock::acquire(dir.path(), &cached, Duration::ZERO).expect("the lock");
        let wait = Duration::from_millis(200);
        let started = Instant::now();
        let second = CompileLock::acquire(dir.path(), &cached, wait);
        assert!(second.is_none(), "not while it is held");
        assert!(started.elapsed() >= wait, "it waited for the holder");
        drop(held);
        assert!(CompileLock::acquire(dir.path(), &cached, Duration::ZERO).is_some());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_in_the_locks_place_is_not_locked() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join(".g.cwasm.lock")).unwrap();
        let lock = CompileLock::acquire(dir.path(), &dir.path().join("g.cwasm"), Duration::ZERO);
        assert!(lock.is_none(), "compiling goes on without the lock");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_never_written_through() {
        // Regression (issue 10, class 11): the temporary name was predictable and opened with a
        // call that follows symlinks, so a planted link could redirect the write.
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let target = dir.path().join("guest.cwasm");
        let engine = wasmtime::Engine::default();
        let component = Component::new(&engine, EMPTY_COMPONENT).unwrap();
        // Plant links under every name of the old scheme.
        let old = dir
            .path()
            .join(format!(".{}.guest.cwasm.tmp", std::process::id()));
        std::os::unix::fs::symlink(&victim, &old).unwrap();
        store(&component.serialize().unwrap(), dir.path(), &target).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(target.is_file());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp") && e.path() != old)
            .collect();
        assert!(leftovers.is_empty(), "no temporary file is left behind");
    }
}
