//! The seed's constants and the stable rule identifiers.

use serde::{Deserialize, Serialize};

/// Largest accepted source, counted in Unicode scalar values like Python's `len(str)`.
pub const MAX_SOURCE_CHARS: usize = 100_000;

/// Top-level modules a dynamic tool may import (the seed's `_SAFE_IMPORTS`).
///
/// `operator` and `string` are deliberately absent: `attrgetter`, `methodcaller` and
/// `Formatter.get_field` perform attribute access from string literals the AST guard never sees.
pub const ALLOWED_IMPORTS: &[&str] = &[
    "collections",
    "csv",
    "datetime",
    "decimal",
    "fractions",
    "functools",
    "hashlib",
    "heapq",
    "itertools",
    "json",
    "math",
    "random",
    "re",
    "statistics",
];

/// Names that may not be called as a bare name (`eval(...)`); the seed checks `__import__` beside
/// its `_BANNED_CALLS` set, so it is listed here too.
pub const BANNED_CALLS: &[&str] = &[
    "__import__",
    "breakpoint",
    "compile",
    "delattr",
    "dir",
    "eval",
    "exec",
    "getattr",
    "globals",
    "input",
    "locals",
    "open",
    "setattr",
    "vars",
];

/// Attribute names that may never be accessed (the seed's `_BANNED_ATTRIBUTES`); every other
/// attribute starting with `_` is refused as well, under its own rule.
pub const BANNED_ATTRIBUTES: &[&str] = &[
    "__class__",
    "__dict__",
    "__globals__",
    "__mro__",
    "__subclasses__",
    "__code__",
    "__closure__",
    "__getattribute__",
    "attrgetter",
    "methodcaller",
    "get_field",
];

/// Stable identifier of the rule a source broke; serialised as its snake_case string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleId {
    /// The source is empty or only whitespace.
    EmptySource,
    /// The source is longer than [`MAX_SOURCE_CHARS`].
    TooLong,
    /// The source is not valid Python (or is nested too deeply to parse).
    SyntaxError,
    /// No top-level `def execute` exists.
    MissingExecute,
    /// More than one top-level `def execute` / `async def execute` exists.
    DuplicateExecute,
    /// The only top-level `execute` is `async def`.
    AsyncExecute,
    /// `execute` does not take exactly one positional parameter, or takes `*args`/`**kwargs`.
    ExecuteSignature,
    /// `from . import x` or any import with a leading dot.
    RelativeImport,
    /// An import whose root module is not in [`ALLOWED_IMPORTS`].
    ImportNotAllowed,
    /// A call by bare name to one of [`BANNED_CALLS`].
    BannedCall,
    /// Access to one of [`BANNED_ATTRIBUTES`].
    BannedAttribute,
    /// Access to any other attribute whose name starts with `_`.
    PrivateAttribute,
    /// A `global` statement.
    GlobalStatement,
    /// A `nonlocal` statement.
    NonlocalStatement,
    /// Strict mode only: a banned builtin referenced without being called (`f = eval`).
    BannedName,
    /// Strict mode only: `execute` has a keyword-only parameter without a default.
    ExecuteRequiredKeyword,
}

impl RuleId {
    /// Every rule, in declaration order.
    pub const ALL: &'static [RuleId] = &[
        RuleId::EmptySource,
        RuleId::TooLong,
        RuleId::SyntaxError,
        RuleId::MissingExecute,
        RuleId::DuplicateExecute,
        RuleId::AsyncExecute,
        RuleId::ExecuteSignature,
        RuleId::RelativeImport,
        RuleId::ImportNotAllowed,
        RuleId::BannedCall,
        RuleId::BannedAttribute,
        RuleId::PrivateAttribute,
        RuleId::GlobalStatement,
        RuleId::NonlocalStatement,
        RuleId::BannedName,
        RuleId::ExecuteRequiredKeyword,
    ];

    /// The stable snake_case identifier (identical to the serde form).
    pub const fn as_str(self) -> &'static str {
        match self {
            RuleId::EmptySource => "empty_source",
            RuleId::TooLong => "too_long",
            RuleId::SyntaxError => "syntax_error",
            RuleId::MissingExecute => "missing_execute",
            RuleId::DuplicateExecute => "duplicate_execute",
            RuleId::AsyncExecute => "async_execute",
            RuleId::ExecuteSignature => "execute_signature",
            RuleId::RelativeImport => "relative_import",
            RuleId::ImportNotAllowed => "import_not_allowed",
            RuleId::BannedCall => "banned_call",
            RuleId::BannedAttribute => "banned_attribute",
            RuleId::PrivateAttribute => "private_attribute",
            RuleId::GlobalStatement => "global_statement",
            RuleId::NonlocalStatement => "nonlocal_statement",
            RuleId::BannedName => "banned_name",
            RuleId::ExecuteRequiredKeyword => "execute_required_keyword",
        }
    }

    /// Parses a stable identifier back into a rule.
    pub fn from_name(name: &str) -> Option<RuleId> {
        RuleId::ALL
            .iter()
            .copied()
            .find(|rule| rule.as_str() == name)
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `root` is an allowlisted import root.
pub(crate) fn import_allowed(root: &str) -> bool {
    ALLOWED_IMPORTS.contains(&root)
}

/// Whether a bare-name call to `name` is banned.
pub(crate) fn call_banned(name: &str) -> bool {
    BANNED_CALLS.contains(&name)
}

/// The rule an attribute name breaks, if any (the seed tests the list before the `_` prefix).
pub(crate) fn attribute_rule(attr: &str) -> Option<RuleId> {
    if BANNED_ATTRIBUTES.contains(&attr) {
        Some(RuleId::BannedAttribute)
    } else if attr.starts_with('_') {
        Some(RuleId::PrivateAttribute)
    } else {
        None
    }
}
