//! The optional store key (issue 10, class 8): with one, manifests and events are signed and
//! anything unsigned or mis-signed is inert, so a forged scoped manifest plus an appended
//! `activate` line does not become active. Without one, nothing changes.

use crate::common::{PythonRunner, add_spec, add_spec_v2, clock, open};
use codecell_manifest::{Registry, RegistryOptions, Scope};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

const KEY: &[u8] = b"a store key of the host, 32 bytes";

fn open_keyed(dir: &Path, session: &str, key: &[u8]) -> Registry {
    let mut options = RegistryOptions::new(session, dir);
    options.project_id = Some("proj".into());
    options.clock = clock();
    options.store_key = Some(key.to_vec());
    Registry::open(options, Arc::new(PythonRunner::default())).unwrap()
}

fn log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("scoped/events.jsonl")).unwrap()
}

#[tokio::test]
async fn a_keyed_store_round_trips_and_stays_readable_without_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let registry = open_keyed(dir.path(), "sess", KEY);
    let session = registry.define(&add_spec("add")).await.unwrap();
    let promoted = registry.promote("add", Scope::Project, true).unwrap();
    let reader = open_keyed(dir.path(), "sess", KEY);
    assert!(
        reader.load_errors().is_empty(),
        "{:#?}",
        reader.load_errors()
    );
    assert_eq!(reader.get("add").unwrap().manifest_id, session.manifest_id);
    let other = open_keyed(dir.path(), "other", KEY);
    assert_eq!(other.get("add").unwrap().manifest_id, promoted.manifest_id);
    // Ids do not depend on the key; the files carry the MAC.
    let file = dir
        .path()
        .join(format!("scoped/manifests/{}.json", promoted.manifest_id));
    let record: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    assert!(record["hmac"].as_str().is_some_and(|h| h.len() == 64));
    assert!(log(dir.path()).contains("\"hmac\":"));
    // A reader without the key checks nothing and sees the same tools.
    let plain = open(
        dir.path(),
        "other",
        Some("proj"),
        clock(),
        Arc::new(PythonRunner::default()),
    );
    assert!(plain.load_errors().is_empty(), "{:#?}", plain.load_errors());
    assert_eq!(plain.get("add").unwrap().manifest_id, promoted.manifest_id);
}

#[tokio::test]
async fn without_a_key_nothing_is_signed() {
    let dir = tempfile::tempdir().unwrap();
    let registry = open(
        dir.path(),
        "sess",
        Some("proj"),
        clock(),
        Arc::new(PythonRunner::default()),
    );
    let session = registry.define(&add_spec("add")).await.unwrap();
    let promoted = registry.promote("add", Scope::Project, true).unwrap();
    let session_file = dir
        .path()
        .join(format!("sessions/s-sess/{}.json", session.manifest_id));
    assert_eq!(
        std::fs::read_to_string(session_file).unwrap(),
        session.record_json()
    );
    let scoped_file = dir
        .path()
        .join(format!("scoped/manifests/{}.json", promoted.manifest_id));
    assert_eq!(
        std::fs::read_to_string(scoped_file).unwrap(),
        promoted.record_json()
    );
    assert!(!log(dir.path()).contains("hmac"));
}

/// The attack of issue 10: a scoped manifest with a recomputed id is written straight into the
/// store and one `activate` line appended. Unsigned, or signed with another key, it stays inert.
#[tokio::test]
async fn a_forged_version_and_activation_stay_inert() {
    for forger_key in [None, Some(b"the attacker's own key, 32 bytes".as_slice())] {
        let dir = tempfile::tempdir().unwrap();
        let registry = open_keyed(dir.path(), "sess", KEY);
        registry.define(&add_spec("add")).await.unwrap();
        let genuine = registry.promote("add", Scope::Project, true).unwrap();
        // The forger runs codecell against the same directory with no key (or its own).
        let forger = match forger_key {
            None => open(
                dir.path(),
                "evil",
                Some("proj"),
                clock(),
                Arc::new(PythonRunner::default()),
            ),
            Some(key) => open_keyed(dir.path(), "evil", key),
        };
        forger.define(&add_spec_v2("add")).await.unwrap();
        let forged = forger.promote("add", Scope::Project, true).unwrap();
        forger
            .activate("add", Scope::Project, &forged.manifest_id, true)
            .unwrap();
        let victim = open_keyed(dir.path(), "victim", KEY);
        assert_eq!(
            victim.get("add").unwrap().manifest_id,
            genuine.manifest_id,
            "the forged version must not be active"
        );
        let errors = victim.load_errors();
        let forged_file = format!("{}.json", forged.manifest_id);
        assert!(
            errors.iter().any(|e| e.starts_with(&forged_file)
                && (e.contains("not signed") || e.contains("does not match"))),
            "{errors:#?}"
        );
        assert!(
            errors.iter().any(|e| e.starts_with("events.jsonl: line 2")),
            "{errors:#?}"
        );
        let versions = victim.versions(Some("add"), None).versions;
        assert_eq!(versions.len(), 1, "only the signed version is listed");
    }
}

#[tokio::test]
async fn a_signed_line_replayed_elsewhere_in_the_log_does_not_verify() {
    let dir = tempfile::tempdir().unwrap();
    let first = open_keyed(dir.path(), "one", KEY);
    first.define(&add_spec("add")).await.unwrap();
    let v1 = first.promote("add", Scope::Project, true).unwrap();
    let second = open_keyed(dir.path(), "two", KEY);
    second.define(&add_spec_v2("add")).await.unwrap();
    let v2 = second.promote("add", Scope::Project, true).unwrap();
    assert_eq!(
        open_keyed(dir.path(), "r", KEY)
            .get("add")
            .unwrap()
            .manifest_id,
        v2.manifest_id
    );
    // Replay the first promotion (of v1) at the end: a valid MAC, but for line 1.
    let text = log(dir.path());
    let first_line = text.lines().next().unwrap().to_string();
    std::fs::write(
        dir.path().join("scoped/events.jsonl"),
        format!("{text}{first_line}\n"),
    )
    .unwrap();
    let reader = open_keyed(dir.path(), "r", KEY);
    assert_eq!(
        reader.get("add").unwrap().manifest_id,
        v2.manifest_id,
        "v1 is not re-activated"
    );
    assert!(
        reader
            .load_errors()
            .iter()
            .any(|e| e.starts_with("events.jsonl: line 3") && e.contains("does not match")),
        "{:#?}",
        reader.load_errors()
    );
    assert_ne!(v1.manifest_id, v2.manifest_id);
    // The store stays writable: the next signed line is numbered after the replayed one.
    reader
        .activate("add", Scope::Project, &v1.manifest_id, true)
        .unwrap();
    assert_eq!(
        open_keyed(dir.path(), "r", KEY)
            .get("add")
            .unwrap()
            .manifest_id,
        v1.manifest_id
    );
}

#[tokio::test]
async fn a_forged_file_planted_under_a_coming_id_is_replaced_by_the_signed_one() {
    let dir = tempfile::tempdir().unwrap();
    let registry = open_keyed(dir.path(), "sess", KEY);
    let session = registry.define(&add_spec("add")).await.unwrap();
    // The attacker predicts the scoped id (it is content-addressed) and plants an unsigned copy.
    let plain = open(
        dir.path(),
        "sess",
        Some("proj"),
        clock(),
        Arc::new(PythonRunner::default()),
    );
    let predicted = plain.promote("add", Scope::Project, true).unwrap();
    std::fs::remove_file(dir.path().join("scoped/events.jsonl")).unwrap();
    let promoted = registry.promote("add", Scope::Project, true).unwrap();
    assert_eq!(promoted.manifest_id, predicted.manifest_id);
    let reader = open_keyed(dir.path(), "other", KEY);
    assert_eq!(reader.get("add").unwrap().manifest_id, promoted.manifest_id);
    assert!(
        reader.load_errors().is_empty(),
        "{:#?}",
        reader.load_errors()
    );
    assert_ne!(session.manifest_id, promoted.manifest_id);
}

#[test]
fn store_keys_are_read_from_regular_files_of_sane_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    std::fs::write(&path, b"0123456789abcdef0123\n").unwrap();
    let options = RegistryOptions::new("s", dir.path())
        .with_store_key_file(&path)
        .unwrap();
    assert_eq!(
        options.store_key.as_deref(),
        Some(&b"0123456789abcdef0123"[..])
    );
    std::fs::write(&path, b"short\n").unwrap();
    let error = codecell_manifest::read_store_key(&path).unwrap_err();
    assert!(error.to_string().contains("at least 16"), "{error}");
    std::fs::write(&path, vec![b'k'; 5000]).unwrap();
    let error = codecell_manifest::read_store_key(&path).unwrap_err();
    assert!(error.to_string().contains("larger than 4096"), "{error}");
    assert!(codecell_manifest::read_store_key(&dir.path().join("missing")).is_err());
    #[cfg(unix)]
    {
        let fifo = dir.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let error = codecell_manifest::read_store_key(&fifo).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }
}

#[tokio::test]
async fn an_unsigned_store_opened_with_a_key_is_all_reported() {
    let dir = tempfile::tempdir().unwrap();
    let registry = open(
        dir.path(),
        "sess",
        Some("proj"),
        clock(),
        Arc::new(PythonRunner::default()),
    );
    registry.define(&add_spec("add")).await.unwrap();
    registry.promote("add", Scope::Project, true).unwrap();
    let keyed = open_keyed(dir.path(), "sess", KEY);
    assert!(keyed.get("add").is_none());
    let errors = keyed.load_errors();
    assert_eq!(
        errors.len(),
        3,
        "session manifest, scoped manifest, event: {errors:#?}"
    );
    assert!(
        errors.iter().all(|e| e.contains("not signed")),
        "{errors:#?}"
    );
}
