//! The manifest store's loader on arbitrary store files.

use codecell_manifest::store::{EVENT_LOG, Store, session_key};

/// Session the fuzzed files are filed under.
const SESSION: &str = "fuzz";

/// Writes `data` as a session manifest, a scoped manifest and the event log of a fresh store,
/// then loads all three; panics if loading panics or yields a manifest without a `dyn-` id.
pub fn check(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    let session = root.join("sessions").join(session_key(SESSION));
    let scoped = root.join("scoped");
    std::fs::create_dir_all(&session).expect("store directories");
    std::fs::create_dir_all(scoped.join("manifests")).expect("store directories");
    let name = "dyn-0000000000000000000000000000000000000000000000000000000000000000.json";
    std::fs::write(session.join(name), data).expect("a store file");
    std::fs::write(scoped.join("manifests").join(name), data).expect("a store file");
    std::fs::write(scoped.join(EVENT_LOG), data).expect("a store file");
    let store = Store::open(root).expect("the store opens");
    let (session_manifests, _) = store.load_session_manifests(SESSION);
    let (scoped_manifests, _) = store.scoped_manifests();
    let _ = store.events();
    for manifest in session_manifests.iter().chain(&scoped_manifests) {
        assert!(
            manifest.manifest_id.starts_with("dyn-"),
            "{}",
            manifest.manifest_id
        );
    }
}
