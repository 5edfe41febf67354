//! codecell-policy: the dynamic-tool source policy of the seed (`validate_dynamic_source`),
//! re-implemented over rustpython-parser. Pure: no I/O, no wasm.
//!
//! The default verdict is exactly the seed's: the same checks, in the same order, reporting the
//! violation the seed would raise first (the seed walks the tree breadth-first with `ast.walk`;
//! see [`walker`](crate::walker)). Positions follow CPython's `ast`: `line` is `lineno`, `column`
//! is `col_offset` converted from UTF-8 bytes to characters, plus one.
//!
//! Differences from the seed that cannot be avoided are documented where they arise: the
//! grammar is rustpython-parser 0.4's (about CPython 3.11, plus 3.12 type parameters), and
//! the seed's message text is replaced by messages a model can act on.

mod check;
mod dismantle;
mod grammar;
mod parse;
mod rules;
mod text;
mod violation;
mod walker;

pub use rules::{ALLOWED_IMPORTS, BANNED_ATTRIBUTES, BANNED_CALLS, MAX_SOURCE_CHARS, RuleId};
pub use violation::Violation;

use serde::{Deserialize, Serialize};

/// How strict validation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strictness {
    /// Exactly the seed's verdict.
    #[default]
    Seed,
    /// The seed's checks, then extra ones (`banned_name`, `execute_required_keyword`).
    Strict,
}

/// Validation options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Options {
    /// Which rule set applies.
    pub strictness: Strictness,
}

/// A source that passed: the sorted, deduplicated import roots it uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validated {
    /// Root module of every import (`import a.b` and `from a.b import c` give `a`), sorted.
    pub imports: Vec<String>,
}

/// Validates dynamic-tool source with the seed's rules.
pub fn validate_dynamic_source(source: &str) -> Result<Validated, Violation> {
    validate_with(source, &Options::default())
}

/// Validates dynamic-tool source with explicit options.
pub fn validate_with(source: &str, options: &Options) -> Result<Validated, Violation> {
    check::validate(source, options)
}
