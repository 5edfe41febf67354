//! The policy's integration tests: one binary, a module per concept.

mod common;
mod corpus;
mod differential;
mod no_panic;
mod rules;
