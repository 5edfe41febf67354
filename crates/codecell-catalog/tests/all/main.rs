//! The crate's integration tests, one binary with a module per concept (as wasmtime's
//! `tests/all/main.rs`), so the crate's dependencies are linked once for all of them.

mod call;
mod command;
mod common;
mod file;
mod limits;
mod naming;
mod stubs;
mod tree;
