//! The catalog file parser and the stub generator on arbitrary JSON.

use codecell_catalog::Catalog;

/// Most tree entries walked per input: a catalog within the parser's own bounds has fewer.
const MAX_WALK: usize = 100_000;

/// Parses `data` as a catalog file; when it is accepted, walks the whole tree and panics if a
/// `.py` file in it (a stub) is not valid Python.
pub fn check(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let base = std::env::temp_dir();
    let Ok(catalog) = Catalog::from_json_str(text, &base, "<fuzz>") else {
        return;
    };
    let mut pending = vec![String::new()];
    let mut walked = 0;
    while let Some(dir) = pending.pop() {
        let entries = catalog.ls(&dir).expect("a listed directory lists");
        for entry in entries {
            walked += 1;
            assert!(
                walked <= MAX_WALK,
                "the tree has more than {MAX_WALK} entries"
            );
            let path = format!("{dir}{entry}");
            if entry.ends_with('/') {
                pending.push(path);
                continue;
            }
            let file = catalog.read(&path).expect("a listed file reads");
            if path.ends_with(".py") {
                assert_parses(&path, &file);
            }
        }
    }
}

/// Panics unless `source` parses as a Python module.
pub fn assert_parses(path: &str, source: &str) {
    if let Err(e) = rustpython_parser::parse(source, rustpython_parser::Mode::Module, path) {
        panic!("the stub {path} does not parse: {e}\n{source}");
    }
}
