//! codecell's fuzz oracles: for each parser or loader that faces untrusted input, one function
//! that feeds it arbitrary bytes and panics when a property it must keep is broken.
//!
//! The cargo-fuzz targets under `fuzz/` (outside the workspace) are one line each over these,
//! as in wasmtime's layout; `cargo test -p codecell-fuzz` runs every oracle over its seed corpus
//! ([`corpus`], the files of `fixtures/`), so a property broken by a known input fails the
//! ordinary test suite too.
//!
//! | oracle | input | property |
//! | --- | --- | --- |
//! | [`policy::check`] | dynamic-tool source | never panics; the verdict is the same on a second run and on the source with a trailing newline |
//! | [`canonical_json::check`] | JSON text | canonical form is a fixed point; equals serde_json's parse |
//! | [`manifest_store::check`] | store files | loading never panics; every manifest loaded carries a `dyn-` id |
//! | [`catalog::check`] | catalog JSON | never panics; every file of the tree a catalog builds (each stub) parses as Python |
//! | [`tree_path::check`] | a path | an accepted path has no `..`, `.` or empty segment, stays under `tools/` and re-parses to itself |
//! | [`host_imports::check`] | lines of `ls`/`read`/`call`/`acall` calls | through a real engine, on both guests, each call returns or raises what the catalog itself answers; the run ends `ok` |
//! | [`guest_json::check`] | JSON text | a tool result decoded by each guest and sent back as an argument arrives unchanged |
//!
//! The last two drive real guests ([`guest_run`]: one engine per guest per process), so they
//! need the guests built (`python3 wasm-guests/build.py --guest all`) and the `engine` feature
//! (on by default).
//!
//! The differential fuzzer's pure half is here too: the program [`generator`], the [`oracle`]
//! that compares native python3 with both guests, and the statement-level [`reduce`]r. The
//! runs themselves are `codecell fuzz diff`.

pub mod canonical_json;
pub mod catalog;
pub mod corpus;
pub mod generator;
#[cfg(feature = "engine")]
pub mod guest_json;
#[cfg(feature = "engine")]
pub mod guest_run;
#[cfg(feature = "engine")]
pub mod host_imports;
pub mod manifest_store;
pub mod oracle;
pub mod policy;
pub mod reduce;
pub mod tree_path;

/// The input as text, when it is UTF-8 (the oracles over text skip other bytes).
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}
