//! The error a rejected source produces.

use serde::{Deserialize, Serialize};

use crate::rules::RuleId;

/// Why a source was rejected and where: `line` is 1-based; `column` is 1-based and counted in
/// characters (CPython's `col_offset` + 1, after converting its UTF-8 byte offset to characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{rule} at line {line}, column {column}: {message}")]
pub struct Violation {
    /// The rule that was broken.
    pub rule: RuleId,
    /// 1-based line of the offending node (CPython's `lineno`).
    pub line: usize,
    /// 1-based character column of the offending node.
    pub column: usize,
    /// A sentence a model can act on: what is wrong and what to do instead.
    pub message: String,
}

impl Violation {
    pub(crate) fn new(rule: RuleId, (line, column): (usize, usize), message: String) -> Self {
        Violation {
            rule,
            line,
            column,
            message,
        }
    }
}
