//! The crate's integration tests as one binary (one link instead of one per file), a module per
//! concept, as wasmtime's `tests/all/main.rs` does.

mod canonical_golden;
mod canonical_prop;
mod common;
mod define_race;
mod define_rules;
mod manifest_ids;
mod processes;
mod schema_limits;
mod scopes;
mod store_files;
mod store_key;
mod tamper;
mod tamper_edges;
