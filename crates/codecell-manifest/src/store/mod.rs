//! The on-disk store, through cap-std:
//!
//! ```text
//! ROOT/sessions/<session key>/dyn-<sha256>.json   session (v1) records, one file per version
//! ROOT/scoped/manifests/dyn-<sha256>.json         project/global (v2) records
//! ROOT/scoped/events.jsonl                        append-only promote/activate/rollback log
//! ROOT/scoped/.lock                               serialises writers across processes
//! ```
//!
//! Manifest files are content-addressed and immutable: written once (atomically), never
//! rewritten. Reading never fails as a whole: each bad file or log line becomes a load error.

pub(crate) mod fsutil;

use crate::clock::{Clock, SystemClock};
use crate::event_log::{self, Event};
use crate::load_errors::{MAX_LOAD_ERROR_BYTES, Sink};
use crate::manifest::Manifest;
use crate::verify;
use cap_std::fs::Dir;
use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Largest manifest file read or written, in bytes: room for a source at the policy's
/// [`MAX_SOURCE_CHARS`](codecell_policy::MAX_SOURCE_CHARS) with every character escaped (6 bytes
/// each), two schemas at [`MAX_SCHEMA_BYTES`](crate::schema::MAX_SCHEMA_BYTES), and a generous
/// rest for the description and ids. (The seed's `_MAX_SOURCE_CHARS * 2` could not hold a legal
/// source of non-ASCII text, so a define could write a file its own load refused.)
pub const MAX_MANIFEST_BYTES: u64 = 2 << 20;
/// Largest event log read, in bytes; past it the log is not loaded (a clear load error) and
/// appends are refused. At a few hundred bytes an event, that is tens of thousands of events.
pub const MAX_EVENT_LOG_BYTES: u64 = 16 << 20;
/// File name of the event log inside `scoped/`.
pub const EVENT_LOG: &str = "events.jsonl";
const LOCK_FILE: &str = ".lock";

/// A store operation that failed outright (not a load error).
#[derive(Debug, thiserror::Error)]
#[error("dynamic tool store: {context}: {source}")]
pub struct StoreError {
    context: String,
    #[source]
    source: io::Error,
}

impl StoreError {
    /// A failure that is not an I/O error of its own (a refusal worded in `message`).
    pub(crate) fn new(context: impl Into<String>, message: impl Into<String>) -> StoreError {
        StoreError {
            context: context.into(),
            source: io::Error::new(io::ErrorKind::InvalidInput, message.into()),
        }
    }

    /// The stable error code the CLI prints for a store failure.
    pub fn code(&self) -> &'static str {
        "store_failure"
    }
}

fn ctx(context: impl Into<String>) -> impl FnOnce(io::Error) -> StoreError {
    let context = context.into();
    move |source| StoreError { context, source }
}

/// How far in the future a manifest's `created_at` may be and still load, in seconds: clocks of
/// the processes sharing a store disagree a little, but a manifest "created" in 2100 would never
/// expire (and would sort as the newest version for decades), so past this it is a load error.
pub const MAX_CLOCK_SKEW_S: f64 = 300.0;

/// An open store rooted at a directory.
pub struct Store {
    clock: Arc<dyn Clock>,
    /// With a key, everything written is signed and everything read must verify.
    key: Option<Arc<[u8]>>,
    sessions: Dir,
    scoped: Dir,
    manifests: Dir,
    /// Verdicts on scoped manifest files by name, valid while the bytes hash the same: every
    /// query re-reads the scoped state, and re-parsing sources and compiling schemas each time
    /// would dominate `invoke`.
    verdicts: Mutex<HashMap<String, Verdict>>,
}

/// The sha256 of a file's bytes and what verifying them gave.
type Verdict = ([u8; 32], Result<Manifest, String>);

/// The directory name of a session: readable when the id is a safe file name, hashed otherwise.
pub fn session_key(session_id: &str) -> String {
    let safe = !session_id.is_empty()
        && session_id.len() <= 64
        && session_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if safe {
        format!("s-{session_id}")
    } else {
        use sha2::Digest as _;
        format!(
            "h-{}",
            hex::encode(sha2::Sha256::digest(session_id.as_bytes()))
        )
    }
}

impl Store {
    /// Opens the store at `root`, creating its directories if needed (system clock).
    pub fn open(root: &Path) -> Result<Store, StoreError> {
        Store::open_with_clock(root, Arc::new(SystemClock))
    }

    /// Opens the store at `root`; `clock` decides which `created_at` lies in the future.
    pub fn open_with_clock(root: &Path, clock: Arc<dyn Clock>) -> Result<Store, StoreError> {
        Store::open_with(root, clock, None)
    }

    /// Opens the store at `root` with a clock and an optional store key (see [`crate::auth`]).
    pub fn open_with(
        root: &Path,
        clock: Arc<dyn Clock>,
        key: Option<Vec<u8>>,
    ) -> Result<Store, StoreError> {
        let dir = fsutil::open_ambient(root).map_err(ctx(format!("open {}", root.display())))?;
        let sessions = fsutil::open_sub(&dir, "sessions").map_err(ctx("open sessions/"))?;
        let scoped = fsutil::open_sub(&dir, "scoped").map_err(ctx("open scoped/"))?;
        let manifests = fsutil::open_sub(&scoped, "manifests").map_err(ctx("open manifests/"))?;
        Ok(Store {
            clock,
            key: key.map(Arc::from),
            sessions,
            scoped,
            manifests,
            verdicts: Mutex::new(HashMap::new()),
        })
    }

    fn session_dir(&self, session_id: &str) -> io::Result<Dir> {
        fsutil::open_sub(&self.sessions, &session_key(session_id))
    }

    /// Writes a session manifest atomically unless its (content-addressed) file exists.
    pub fn write_session_manifest(&self, manifest: &Manifest) -> Result<(), StoreError> {
        let dir = self
            .session_dir(&manifest.session_id)
            .map_err(ctx("open session directory"))?;
        write_once(&dir, manifest, self.key.as_deref())
    }

    /// Every valid session manifest of `session_id` (expired ones included), plus load errors.
    pub fn load_session_manifests(&self, session_id: &str) -> (Vec<Manifest>, Vec<String>) {
        self.load_session_manifests_except(session_id, &|_| false)
    }

    /// As [`Store::load_session_manifests`], skipping the files whose stem `known` accepts
    /// (manifests already verified and in memory need not be verified again).
    pub(crate) fn load_session_manifests_except(
        &self,
        session_id: &str,
        known: &dyn Fn(&str) -> bool,
    ) -> (Vec<Manifest>, Vec<String>) {
        let now = self.clock.now();
        let dir = match self.session_dir(session_id) {
            Ok(dir) => dir,
            Err(e) => return (Vec::new(), vec![format!("session directory: {e}")]),
        };
        let mut manifests = Vec::new();
        let mut errors = Sink::new(format!("sessions/{}", session_key(session_id)));
        for (file, stem) in manifest_files(&dir, &mut errors) {
            if known(&stem) {
                continue;
            }
            match read_record(&dir, &file)
                .and_then(|record| self.authenticated(record))
                .and_then(|record| verify::session_record(&record, &stem, session_id))
                .and_then(|found| match found {
                    Some(manifest) => not_from_the_future(manifest, now).map(Some),
                    None => Ok(None),
                }) {
                Ok(Some(manifest)) => manifests.push(manifest),
                Ok(None) => {}
                Err(e) => errors.push_with(|| format!("{file}: {e}")),
            }
        }
        (manifests, errors.finish())
    }

    /// Every valid project/global manifest, plus load errors.
    pub fn scoped_manifests(&self) -> (Vec<Manifest>, Vec<String>) {
        let now = self.clock.now();
        let mut manifests = Vec::new();
        let mut errors = Sink::new("scoped/manifests");
        let mut verdicts = self.verdicts.lock().unwrap_or_else(|e| e.into_inner());
        let files = manifest_files(&self.manifests, &mut errors);
        verdicts.retain(|name, _| files.iter().any(|(file, _)| file == name));
        for (file, stem) in files {
            let verdict = match read_bytes(&self.manifests, &file) {
                Err(e) => Err(e),
                Ok(bytes) => {
                    use sha2::Digest as _;
                    let digest: [u8; 32] = sha2::Sha256::digest(&bytes).into();
                    match verdicts.get(&file) {
                        Some((seen, verdict)) if *seen == digest => verdict.clone(),
                        _ => {
                            let verdict = parse_record(bytes)
                                .and_then(|record| self.authenticated(record))
                                .and_then(|record| verify::scoped_record(&record, &stem));
                            verdicts.insert(file.clone(), (digest, verdict.clone()));
                            verdict
                        }
                    }
                }
            };
            // Outside the cached verdict: a manifest from the future becomes valid as time passes.
            match verdict.and_then(|manifest| not_from_the_future(manifest, now)) {
                Ok(manifest) => manifests.push(manifest),
                Err(e) => errors.push_with(|| format!("{file}: {e}")),
            }
        }
        (manifests, errors.finish())
    }

    /// Every valid event in log order, plus a message for each bad or torn line.
    /// A log over [`MAX_EVENT_LOG_BYTES`], or anything but a regular file, loads no events.
    pub fn events(&self) -> (Vec<Event>, Vec<String>) {
        match fsutil::read_bounded(&self.scoped, EVENT_LOG, MAX_EVENT_LOG_BYTES) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => (Vec::new(), Vec::new()),
            Err(e) => (Vec::new(), vec![clip(format!("{EVENT_LOG}: {e}"))]),
            Ok(None) => (
                Vec::new(),
                vec![format!(
                    "{EVENT_LOG}: larger than the limit of {MAX_EVENT_LOG_BYTES} bytes; no events loaded"
                )],
            ),
            Ok(Some(bytes)) => event_log::parse_log_keyed(&bytes, EVENT_LOG, self.key.as_deref()),
        }
    }

    /// With a key: the record without its MAC if the MAC verifies, else why not.
    fn authenticated(&self, mut record: serde_json::Value) -> Result<serde_json::Value, String> {
        if let Some(key) = &self.key {
            crate::auth::verify(key, crate::auth::MANIFEST_DOMAIN, &mut record)
                .map_err(|e| format!("manifest {e}"))?;
        }
        Ok(record)
    }

    /// Takes the store's exclusive writer lock (blocks until other writers are done).
    pub fn lock(&self) -> Result<WriteLock<'_>, StoreError> {
        let guard =
            fsutil::LockGuard::acquire(&self.scoped, LOCK_FILE).map_err(ctx("lock the store"))?;
        Ok(WriteLock {
            store: self,
            _guard: guard,
        })
    }
}

/// Proof that the writer lock is held; scoped writes go through it.
pub struct WriteLock<'a> {
    store: &'a Store,
    _guard: fsutil::LockGuard,
}

impl WriteLock<'_> {
    /// Writes a project/global manifest atomically unless its file already exists.
    pub fn write_scoped_manifest(&self, manifest: &Manifest) -> Result<(), StoreError> {
        write_once(&self.store.manifests, manifest, self.store.key.as_deref())
    }

    /// Appends one event to the log and fsyncs it.
    pub fn append_event(&self, event: &Event) -> Result<(), StoreError> {
        let key = self.store.key.as_deref();
        fsutil::append_line(
            &self.store.scoped,
            EVENT_LOG,
            MAX_EVENT_LOG_BYTES,
            |number| match key {
                None => event.to_line(),
                Some(key) => {
                    let value = serde_json::to_value(event).unwrap_or_default();
                    let domain = crate::auth::event_domain(number);
                    crate::canonical::to_string(&crate::auth::sign(key, &domain, value))
                }
            },
        )
        .map_err(ctx("append to the event log"))
    }
}

fn not_from_the_future(manifest: Manifest, now: f64) -> Result<Manifest, String> {
    if manifest.created_at > now + MAX_CLOCK_SKEW_S {
        return Err(format!(
            "manifest created_at {} is in the future (more than {MAX_CLOCK_SKEW_S} s ahead of now, {now})",
            manifest.created_at
        ));
    }
    Ok(manifest)
}

fn write_once(dir: &Dir, manifest: &Manifest, key: Option<&[u8]>) -> Result<(), StoreError> {
    let name = format!("{}.json", manifest.manifest_id);
    if dir.exists(&name) {
        // With a key, a file already there counts only if it verifies: otherwise a forged file
        // planted under the id of a coming promotion would make the real version inert.
        let Some(key) = key else { return Ok(()) };
        let verifies = read_record(dir, &name).is_ok_and(|mut record| {
            crate::auth::verify(key, crate::auth::MANIFEST_DOMAIN, &mut record).is_ok()
        });
        if verifies {
            return Ok(());
        }
    }
    let bytes = match key {
        None => manifest.record_json(),
        Some(key) => crate::canonical::to_string(&crate::auth::sign(
            key,
            crate::auth::MANIFEST_DOMAIN,
            manifest.record(),
        )),
    };
    // Never write what a load would refuse as too large.
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(StoreError::new(
            format!("write {name}"),
            format!(
                "the manifest is {} bytes, over the limit of {MAX_MANIFEST_BYTES}",
                bytes.len()
            ),
        ));
    }
    fsutil::write_atomic(dir, &name, bytes.as_bytes()).map_err(ctx(format!("write {name}")))
}

/// `dyn-*.json` files of a directory, sorted, as (file name, stem).
fn manifest_files(dir: &Dir, errors: &mut Sink) -> Vec<(String, String)> {
    let entries = match dir.entries() {
        Ok(entries) => entries,
        Err(e) => {
            errors.push(format!("list manifests: {e}"));
            return Vec::new();
        }
    };
    let mut files: Vec<(String, String)> = entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("dyn-") && name.ends_with(".json"))
        .map(|name| {
            let stem = name.strip_suffix(".json").unwrap_or(&name).to_string();
            (name, stem)
        })
        .collect();
    files.sort();
    files
}

fn clip(message: String) -> String {
    crate::load_errors::clip(message, MAX_LOAD_ERROR_BYTES)
}

fn read_record(dir: &Dir, file: &str) -> Result<serde_json::Value, String> {
    parse_record(read_bytes(dir, file)?)
}

fn read_bytes(dir: &Dir, file: &str) -> Result<Vec<u8>, String> {
    fsutil::read_bounded(dir, file, MAX_MANIFEST_BYTES)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("manifest is too large (over {MAX_MANIFEST_BYTES} bytes)"))
}

fn parse_record(bytes: Vec<u8>) -> Result<serde_json::Value, String> {
    let text = String::from_utf8(bytes).map_err(|_| "manifest is not UTF-8")?;
    crate::canonical::parse_exact(&text).map_err(|e| e.to_string())
}
