//! Maps tool, category and parameter names to Python identifiers, deterministically and without
//! collisions, so `from tools.<category> import <tool>` works for any name.
//!
//! The mapping of one name:
//! 1. every character outside ASCII `[A-Za-z0-9_]` becomes `_` (ASCII only: Python NFKC-normalises
//!    non-ASCII identifiers, so two different names could silently become the same identifier);
//! 2. a leading digit gets a `_` prefix; an empty result becomes `_`;
//! 3. a keyword, a dunder name (`__init__`, `__getattr__` would change how the module behaves), or a
//!    name the stub itself uses (`call_tool`, `_kwargs`, …) gets a trailing `_`.
//!
//! Within one scope (categories; tools of a category; parameters of a tool), names that are already
//! identifiers keep them; the others are mapped in sorted order of their original names, and a
//! collision takes the first free suffix `_2`, `_3`, …. The result depends only on the set of names,
//! not on the order they were registered in.

use std::collections::HashSet;

/// Python's hard keywords (3.11 to 3.14); soft keywords (`match`, `case`, `type`, `_`) are valid names.
const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Names a stub module binds itself; a tool function or category named so would shadow them.
pub(crate) const RESERVED_MODULE_NAMES: &[&str] = &["call_tool", "Any", "Literal", "Optional"];

/// Names a stub function body uses; a parameter named so would shadow them.
pub(crate) const RESERVED_PARAM_NAMES: &[&str] = &["call_tool", "_kwargs"];

/// True when `name` is an ASCII Python identifier that is not a keyword.
pub fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name)
        && name != "__debug__"
}

/// True when `name` can be used as-is in a scope that reserves `reserved`.
fn usable(name: &str, reserved: &[&str]) -> bool {
    is_plain_identifier(name) && !is_dunder(name) && !reserved.contains(&name)
}

fn is_dunder(name: &str) -> bool {
    name.len() > 4 && name.starts_with("__") && name.ends_with("__")
}

/// The identifier for one name, before collisions are resolved.
pub fn map_identifier(name: &str, reserved: &[&str]) -> String {
    if usable(name, reserved) {
        return name.to_string();
    }
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if KEYWORDS.contains(&out.as_str())
        || out == "__debug__"
        || is_dunder(&out)
        || reserved.contains(&out.as_str())
    {
        out.push('_');
    }
    out
}

/// Collision-free identifiers for the names of one scope, parallel to `names` (which are unique).
pub fn assign_identifiers(names: &[&str], reserved: &[&str]) -> Vec<String> {
    let mut result: Vec<Option<String>> = vec![None; names.len()];
    let mut taken: HashSet<String> = HashSet::new();
    // Names that are already identifiers keep them: they are what a reader expects.
    for (i, name) in names.iter().enumerate() {
        if usable(name, reserved) && taken.insert(name.to_string()) {
            result[i] = Some(name.to_string());
        }
    }
    let mut rest: Vec<usize> = (0..names.len()).filter(|&i| result[i].is_none()).collect();
    rest.sort_by(|&a, &b| names[a].cmp(names[b]));
    for i in rest {
        let base = map_identifier(names[i], reserved);
        let mut candidate = base.clone();
        let mut n = 2;
        while taken.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        taken.insert(candidate.clone());
        result[i] = Some(candidate);
    }
    result.into_iter().map(Option::unwrap_or_default).collect()
}
