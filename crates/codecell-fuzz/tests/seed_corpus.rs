//! Every fuzz oracle over its seed corpus: a property broken by a known input fails here, in
//! the ordinary test suite, not only under cargo-fuzz.

use codecell_fuzz::corpus::{TARGETS, check, mutants, seeds};

#[test]
fn every_oracle_holds_on_its_seed_corpus() {
    for target in TARGETS {
        let seeds = seeds(target);
        assert!(seeds.len() >= 5, "{target}: only {} seeds", seeds.len());
        for seed in &seeds {
            check(target, seed);
        }
    }
}

/// Mutants per target: a few seconds for the engine-driven targets (both guests, a fresh
/// instance each), far less for the pure ones.
const MUTANTS: usize = 200;

#[test]
fn every_oracle_holds_on_mutants_of_its_seeds() {
    // A fixed seed: a failure here is the same input on every run (printed when it fails).
    for (i, target) in TARGETS.into_iter().enumerate() {
        for input in mutants(&seeds(target), MUTANTS, 0x5eed + i as u64) {
            let caught = std::panic::catch_unwind(|| check(target, &input));
            if let Err(panic) = caught {
                let text = String::from_utf8_lossy(&input);
                eprintln!("{target}: the oracle failed on the mutant {text:?} ({input:?})");
                std::panic::resume_unwind(panic);
            }
        }
    }
}

#[test]
fn mutants_are_reproducible_and_differ_from_their_seeds() {
    let seeds = seeds("canonical_json");
    let first = mutants(&seeds, 50, 7);
    assert_eq!(first, mutants(&seeds, 50, 7));
    assert_ne!(first, mutants(&seeds, 50, 8));
    let changed = first.iter().filter(|m| !seeds.contains(m)).count();
    assert!(
        changed >= 40,
        "only {changed} of 50 mutants differ from every seed"
    );
}

#[test]
fn the_demo_catalog_is_accepted_so_its_stubs_are_parsed() {
    let demo =
        std::fs::read(codecell_fuzz::corpus::fixtures_dir().join("demo/catalog.json")).unwrap();
    let text = std::str::from_utf8(&demo).unwrap();
    let catalog = codecell_catalog::Catalog::from_json_str(text, &std::env::temp_dir(), "demo")
        .expect("the demo catalog parses");
    let stub = catalog.read("tools/units/convert.py").unwrap();
    codecell_fuzz::catalog::assert_parses("convert.py", &stub);
    codecell_fuzz::catalog::check(&demo);
}

#[test]
#[should_panic(expected = "does not parse")]
fn a_stub_that_is_not_python_is_caught() {
    codecell_fuzz::catalog::assert_parses("bad.py", "def f(:\n");
}

#[test]
fn hostile_paths_are_refused_or_stay_in_the_tree() {
    for raw in [
        "/tools/../x",
        "tools/../../x",
        "/etc/passwd",
        "tools/\0",
        "a\\b",
    ] {
        codecell_fuzz::tree_path::check(raw.as_bytes());
        if let Ok(path) = codecell_catalog::TreePath::parse(raw) {
            assert!(!path.as_key().contains(".."), "{raw:?}");
            assert!(
                !raw.starts_with('/') || path.as_key().starts_with("tools"),
                "{raw:?}"
            );
        }
    }
}

#[test]
fn canonical_json_holds_on_escapes_huge_floats_and_big_integers() {
    codecell_fuzz::canonical_json::check(br#"{"b": [1, 2.5, "\u00e9"], "a": null}"#);
    codecell_fuzz::canonical_json::check(b"1e400");
    codecell_fuzz::canonical_json::check(b"123456789012345678901234567890");
    // Past f64's range: canonical JSON keeps it, serde_json refuses it (found by the fuzzer).
    let huge = format!("{}1", "9".repeat(482));
    codecell_fuzz::canonical_json::check(huge.as_bytes());
    codecell_fuzz::canonical_json::check(format!("[{huge}, -{huge}]").as_bytes());
}
