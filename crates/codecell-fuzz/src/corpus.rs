//! Seed corpora: the files of `fixtures/` each oracle starts from.

use std::path::{Path, PathBuf};

/// The repository's `fixtures/` directory.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Every file under `fixtures/` whose name ends with one of `extensions`, sorted.
pub fn files(extensions: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![fixtures_dir()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| extensions.contains(&e))
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The fuzz targets, by name (each has a file `fuzz/fuzz_targets/NAME.rs`).
pub const TARGETS: [&str; 5] = [
    "policy",
    "canonical_json",
    "manifest_store",
    "catalog",
    "tree_path",
];

/// Paths tried against the tree whatever the fixtures hold: escapes and odd spellings.
const HOSTILE_PATHS: [&str; 10] = [
    "tools/",
    "/tools/../etc/passwd",
    "tools/./a//b/",
    "./",
    "/",
    "..",
    "tools/a\\b",
    "/etc",
    "tools/\u{202e}x",
    "tools/a/./../b",
];

/// The seed corpus of `target`: the fixture files it parses (for `tree_path`, the fixtures'
/// own paths under `tools/`, and hostile ones).
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    let root = fixtures_dir();
    match target {
        "policy" => read_all(&files(&["py"])),
        "tree_path" => files(&["py", "md", "json"])
            .iter()
            .filter_map(|p| p.strip_prefix(&root).ok())
            .map(|p| format!("tools/{}", p.to_string_lossy().replace('\\', "/")).into_bytes())
            .chain(HOSTILE_PATHS.iter().map(|p| p.as_bytes().to_vec()))
            .collect(),
        _ => read_all(&files(&["json", "jsonl"])),
    }
}

/// Runs `target`'s oracle on `data`.
pub fn check(target: &str, data: &[u8]) {
    match target {
        "policy" => crate::policy::check(data),
        "canonical_json" => crate::canonical_json::check(data),
        "manifest_store" => crate::manifest_store::check(data),
        "catalog" => crate::catalog::check(data),
        "tree_path" => crate::tree_path::check(data),
        other => panic!("no fuzz target {other}"),
    }
}

fn read_all(paths: &[PathBuf]) -> Vec<Vec<u8>> {
    paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}
