//! Tree path normalisation (what `ls` and `read` accept) on arbitrary strings.

use codecell_catalog::TreePath;

/// Panics if an accepted path could name anything outside `tools/`, or does not re-parse to
/// itself.
pub fn check(data: &[u8]) {
    let Some(raw) = crate::text(data) else {
        return;
    };
    let Ok(path) = TreePath::parse(raw) else {
        return;
    };
    let key = path.as_key();
    for segment in key.split('/').filter(|_| !key.is_empty()) {
        assert!(
            !segment.is_empty() && segment != "." && segment != "..",
            "{raw:?} normalised to {key:?}"
        );
        assert!(
            !segment.contains(['\\', '\0']),
            "{raw:?} normalised to {key:?}"
        );
    }
    if raw.starts_with('/') {
        assert!(
            key.is_empty() || key == "tools" || key.starts_with("tools/"),
            "absolute {raw:?} left the tree as {key:?}"
        );
    }
    let again = TreePath::parse(&key).expect("a normal form is accepted");
    assert_eq!(again.as_key(), key, "normalisation is not idempotent");
}
