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
pub const TARGETS: [&str; 7] = [
    "policy",
    "canonical_json",
    "manifest_store",
    "catalog",
    "tree_path",
    "host_imports",
    "guest_json",
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

/// Values whose round trip through a guest's JSON codec is easy to get wrong.
const AWKWARD_JSON: [&str; 13] = [
    // Found by the guest_json target: RustPython's decoder (serde_json without float_roundtrip)
    // read the first two as 1.2345678901234564e29 and the third as 1.234567890146785e47, ulps off.
    "123456789012345621087394567890",
    "1.2345678901234563e29",
    "123456789014678523901234567890123456789012347890",
    "18446744073709551615",
    "-9223372036854775808",
    "123456789012345678901234567890",
    "[0.1, -0.0, 1e-320, 1.7976931348623157e308, 5e-324]",
    r#""\u0000\ud83d\ude00\u2028\"\\""#,
    r#"{"zeta": 1, "alpha": {"b": [], "a": {}}, "": null}"#,
    r#"{"a": 1, "a": 2}"#,
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    "true",
    r#"{"\u00e9t\u00e9": "caf\u00e9", "k": [true, false, null, 1.5]}"#,
];

/// Call sequences for `host_imports` besides the ones made from paths and fixtures.
const HOST_CALLS: [&str; 8] = [
    "ls tools/\nls tools/echo/\nread tools/echo/same.py\nread tools/__index__.md",
    "call math add {\"a\": 1, \"b\": 2.5}\ncall math add {\"a\": \"x\"}\ncall math add {}",
    "call echo fail {}\ncall nope nope {}\ncall echo same [1]\ncall echo same NaN",
    "acall echo same {\"k\": 1}\nacall echo fail {}\nacall math add {\"a\": 1e308, \"b\": 1e308}",
    "call echo same {\"zeta\": 1, \"alpha\": 2, \"mid\": 3}",
    "acall echo same {}\nls /\nacall nope x {}\nread ../../etc/passwd",
    "call echo same {\"big\": 123456789012345678901234567890, \"f\": 1e-7}",
    "call echo same {\"a b\": 1, \"\": 2, \"\\u00e9\": 3}",
];

/// The seed corpus of `target`: the fixture files it parses (for `tree_path`, the fixtures'
/// own paths under `tools/`, and hostile ones).
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    match target {
        "policy" => read_all(&files(&["py"])),
        "tree_path" => tree_paths().into_iter().map(String::into_bytes).collect(),
        "host_imports" => host_calls(),
        "guest_json" => read_all(&files(&["json"]))
            .into_iter()
            .chain(AWKWARD_JSON.iter().map(|j| j.as_bytes().to_vec()))
            .collect(),
        _ => read_all(&files(&["json", "jsonl"])),
    }
}

/// The fixtures' own paths under `tools/`, and hostile ones.
fn tree_paths() -> Vec<String> {
    let root = fixtures_dir();
    files(&["py", "md", "json"])
        .iter()
        .filter_map(|p| p.strip_prefix(&root).ok())
        .map(|p| format!("tools/{}", p.to_string_lossy().replace('\\', "/")))
        .chain(HOSTILE_PATHS.iter().map(|p| p.to_string()))
        .collect()
}

/// `host_imports` inputs: each tree path listed and read, each small JSON object fixture sent
/// to the echo tool (directly and concurrently), and [`HOST_CALLS`].
fn host_calls() -> Vec<Vec<u8>> {
    let paths = tree_paths()
        .into_iter()
        .map(|p| format!("ls {p}\nread {p}"));
    let objects = read_all(&files(&["json"]))
        .into_iter()
        .filter_map(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .filter(|v| v.is_object())
        .map(|v| v.to_string())
        .filter(|line| line.len() <= 2_000)
        .map(|line| format!("call echo same {line}\nacall echo same {line}"));
    paths
        .chain(objects)
        .chain(HOST_CALLS.iter().map(|s| s.to_string()))
        .map(String::into_bytes)
        .collect()
}

/// `count` inputs mutated from `seeds`, the same for the same `rng_seed`: each a seed with one to
/// four of libFuzzer's simplest mutations (a byte changed, inserted or removed, a run
/// duplicated, a splice with another seed). `cargo test` runs every oracle over these, the
/// brief fuzzing of each submission that needs no instrumented build.
pub fn mutants(seeds: &[Vec<u8>], count: usize, rng_seed: u64) -> Vec<Vec<u8>> {
    assert!(!seeds.is_empty(), "mutants of no seeds");
    let mut rng = crate::generator::Rng::new(rng_seed);
    let mut below = |n: usize| rng.below(n.max(1) as u64) as usize;
    // Bytes the parsers branch on, besides random ones.
    const INTERESTING: &[u8] = b"\0\n\\\"'{}[]:,.-+/eE0129 \x7f\xc3\xa9\xff";
    (0..count)
        .map(|_| {
            let mut data = seeds[below(seeds.len())].clone();
            for _ in 0..=below(4) {
                let at = below(data.len() + 1);
                match below(6) {
                    0 if at < data.len() => data[at] = below(256) as u8,
                    1 if at < data.len() => data[at] = INTERESTING[below(INTERESTING.len())],
                    2 => data.insert(at, INTERESTING[below(INTERESTING.len())]),
                    3 if at < data.len() => {
                        data.remove(at);
                    }
                    4 => {
                        let len = below(16).min(data.len() - at);
                        let run = data[at..at + len].to_vec();
                        data.splice(at..at, run);
                    }
                    _ => {
                        let other = &seeds[below(seeds.len())];
                        let from = below(other.len());
                        data.truncate(at);
                        data.extend_from_slice(&other[from..]);
                    }
                }
            }
            data
        })
        .collect()
}

/// Runs `target`'s oracle on `data`.
pub fn check(target: &str, data: &[u8]) {
    match target {
        "policy" => crate::policy::check(data),
        "canonical_json" => crate::canonical_json::check(data),
        "manifest_store" => crate::manifest_store::check(data),
        "catalog" => crate::catalog::check(data),
        "tree_path" => crate::tree_path::check(data),
        #[cfg(feature = "engine")]
        "host_imports" => crate::host_imports::check(data),
        #[cfg(feature = "engine")]
        "guest_json" => crate::guest_json::check(data),
        #[cfg(not(feature = "engine"))]
        "host_imports" | "guest_json" => {
            panic!("{target} drives real guests: build codecell-fuzz with its `engine` feature")
        }
        other => panic!("no fuzz target {other}"),
    }
}

fn read_all(paths: &[PathBuf]) -> Vec<Vec<u8>> {
    paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}
