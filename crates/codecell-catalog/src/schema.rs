//! JSON Schema checks: schemas are bounded and compiled once at build time; instances are checked
//! on every call, and violations become short lines a model can act on.

use serde_json::Value;

use crate::error::shorten;

/// Largest schema accepted, in bytes of compact JSON.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// Deepest nesting of arrays/objects accepted in a schema.
pub const MAX_SCHEMA_DEPTH: usize = 48;
/// Largest compiled form of one `pattern`, in bytes (a schema with `a{1000}{1000}` is refused).
/// Compiling costs time and memory in proportion, about 3 ms and 1 MB per MiB.
pub const PATTERN_SIZE_LIMIT: usize = 256 * 1024;
/// Most distinct `pattern`s and `patternProperties` keys in one catalog: with
/// [`PATTERN_SIZE_LIMIT`], compiling them all stays within about 128 MB and half a second.
pub const MAX_PATTERNS: usize = 512;
/// Cache of the lazy DFA of one `pattern`, in bytes; past it matching falls back to a slower
/// engine that is still linear, so this bounds memory, not correctness.
const PATTERN_DFA_SIZE_LIMIT: usize = 256 * 1024;
/// Error records `iter_errors` may build for one instance (values times the schema's
/// expansion); past it only the first violation is reported.
const MAX_ERROR_RECORDS: u64 = 100_000;
/// Most violations reported for one instance.
const MAX_REPORTED_ERRORS: usize = 8;
/// Longest line reported for one violation.
const MAX_ERROR_LINE: usize = 300;

/// A compiled schema.
pub(crate) struct Compiled {
    validator: jsonschema::Validator,
    /// Instances nested deeper are refused before validation: the schema is recursive and its
    /// cost per value was only bounded up to this depth (see `complexity`).
    depth_limit: Option<usize>,
    /// The most schema nodes that apply to one instance value (see `complexity`).
    expansion: u64,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Compiled")
    }
}

/// Nesting depth of a JSON value (a scalar is 0). Iterative so a hostile value cannot overflow the stack.
pub fn depth(value: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, d)) = stack.pop() {
        max = max.max(d);
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, d + 1))),
            _ => {}
        }
    }
    max
}

/// What the schemas of one catalog share while it is built: compiled patterns (each distinct
/// pattern is compiled once) and their count against [`MAX_PATTERNS`].
#[derive(Default)]
pub(crate) struct Patterns {
    cache: jsonschema::PatternCache,
    seen: std::collections::HashSet<String>,
}

impl Patterns {
    /// Counts the patterns of `schema`; `Err` when the catalog would hold too many.
    fn admit(&mut self, schema: &Value) -> Result<(), String> {
        let mut stack = vec![schema];
        while let Some(v) = stack.pop() {
            match v {
                Value::Object(map) => {
                    if let Some(Value::String(p)) = map.get("pattern") {
                        self.seen.insert(p.clone());
                    }
                    if let Some(Value::Object(props)) = map.get("patternProperties") {
                        self.seen.extend(props.keys().cloned());
                    }
                    stack.extend(map.values());
                }
                Value::Array(items) => stack.extend(items),
                _ => {}
            }
            if self.seen.len() > MAX_PATTERNS {
                return Err(format!(
                    "brings the catalog over {MAX_PATTERNS} distinct patterns (pattern and patternProperties), the limit"
                ));
            }
        }
        Ok(())
    }
}

/// Checks size, depth and complexity, then compiles, sharing compiled patterns (and their
/// count) with the rest of the catalog. `Err` is a message for a catalog error.
pub(crate) fn compile_with(schema: &Value, patterns: &mut Patterns) -> Result<Compiled, String> {
    if !schema.is_object() && !schema.is_boolean() {
        return Err("must be a JSON Schema (an object)".to_string());
    }
    let d = depth(schema);
    if d > MAX_SCHEMA_DEPTH {
        return Err(format!(
            "is nested {d} levels deep; the limit is {MAX_SCHEMA_DEPTH}"
        ));
    }
    let size = serde_json::to_vec(schema)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if size > MAX_SCHEMA_BYTES {
        return Err(format!("is {size} bytes; the limit is {MAX_SCHEMA_BYTES}"));
    }
    // Before compiling: the cost of fan-out shows at validation, and bounding it first means a
    // hostile schema never reaches the compiler either.
    let analysis = crate::complexity::analyse(schema)?;
    patterns.admit(schema)?;
    // The options validate the schema against its meta-schema; with the crate's default features
    // off there is no HTTP or file retriever, so external `$ref`s fail here.
    let validator = jsonschema::options()
        // The linear-time engine: it cannot backtrack, so no string makes a pattern slow. A
        // backtracking engine with a step limit still cost 90 us per string at 1000 steps, over
        // 3 s for the 33000 keys of one 1 MiB argument (issue 10 class 3), so look-around and
        // backreferences, which need one, are refused instead.
        .with_pattern_options(
            jsonschema::PatternOptions::regex()
                .size_limit(PATTERN_SIZE_LIMIT)
                .dfa_size_limit(PATTERN_DFA_SIZE_LIMIT),
        )
        .with_pattern_cache(patterns.cache.clone())
        .build(schema)
        .map_err(|e| {
            let text = e.to_string();
            // A pattern the engine refuses is reported by jsonschema as "not a regex".
            let hint = if text.contains("is not a \"regex\"") {
                format!(
                    " (patterns are matched in linear time: no look-around such as (?=…) or (?!…), no backreferences such as \\1, and at most {PATTERN_SIZE_LIMIT} bytes compiled)"
                )
            } else {
                String::new()
            };
            format!("is not a valid JSON Schema: {}{hint}", shorten(&text, 400))
        })?;
    Ok(Compiled {
        validator,
        depth_limit: analysis.depth_limit,
        expansion: analysis.expansion,
    })
}

/// Checks an input schema: an object schema (MCP requires `"type": "object"`; absent is accepted).
pub(crate) fn compile_input(schema: &Value, patterns: &mut Patterns) -> Result<Compiled, String> {
    let Some(map) = schema.as_object() else {
        return Err("must be a JSON object (a JSON Schema with \"type\": \"object\")".to_string());
    };
    match map.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "must describe an object (\"type\": \"object\"), found \"type\": {}",
                shorten(&other.to_string(), 60)
            ));
        }
    }
    if let Some(props) = map.get("properties")
        && !props.is_object()
    {
        return Err("\"properties\" must be an object".to_string());
    }
    compile_with(schema, patterns)
}

impl Compiled {
    /// The violations of `instance`, bounded in number and length; empty when valid.
    pub(crate) fn violations(&self, instance: &Value) -> Vec<String> {
        if let Some(limit) = self.depth_limit {
            let d = depth(instance);
            if d > limit {
                return vec![format!(
                    "the value is nested {d} levels deep; this recursive schema accepts at most {limit}"
                )];
            }
        }
        // The common case, a valid instance, without building error iterators (3x cheaper).
        if self.validator.is_valid(instance) {
            return Vec::new();
        }
        // Every error, as `iter_errors` collects them, costs up to `expansion` error records per
        // value (an `anyOf` error carries its branches'); for a 1 MiB argument that took 80 s
        // and 22 GB before the process was killed (issue 10 class 3). Past a small budget only
        // the first error is reported, which `validate` finds without collecting the rest.
        if !within(instance, MAX_ERROR_RECORDS / self.expansion.max(1)) {
            return match self.validator.validate(instance) {
                Ok(()) => Vec::new(),
                Err(error) => vec![line(&error), "… and possibly more".to_string()],
            };
        }
        let mut out = Vec::new();
        for error in self.validator.iter_errors(instance) {
            if out.len() == MAX_REPORTED_ERRORS {
                out.push("… and more".to_string());
                break;
            }
            out.push(line(&error));
        }
        out
    }
}

/// One violation as a line: where, then what.
fn line(error: &jsonschema::ValidationError<'_>) -> String {
    let at = error.instance_path().to_string();
    let place = if at.is_empty() {
        "at the top level".to_string()
    } else {
        format!("at {at}")
    };
    shorten(&format!("{place}: {error}"), MAX_ERROR_LINE)
}

/// Whether `value` holds at most `max` values (itself included); stops counting past `max`.
pub(crate) fn within(value: &Value, max: u64) -> bool {
    let mut count = 0u64;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        count += 1;
        if count > max {
            return false;
        }
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    true
}
