//! Schema normalisation and checks with the `jsonschema` crate (built without network or file
//! resolution, so a `$ref` can only point inside the schema itself). Every schema is bounded in
//! size, depth and fan-out before it is compiled (the same limits as a catalog's), and compiled
//! once: [`CompiledSchema`] is what the registry caches per manifest.

pub use codecell_catalog::{MAX_INSTANCE_DEPTH, MAX_SCHEMA_BRANCHES, MAX_SCHEMA_EXPANSION};
use serde_json::{Map, Value};

/// A dynamic tool's schemas are held to a catalog's size and depth limits.
pub use codecell_catalog::{MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH};
/// Largest compiled form of one `pattern`, in bytes.
pub const PATTERN_SIZE_LIMIT: usize = 1024 * 1024;
/// Lazy-DFA cache of one `pattern`, in bytes (bounds memory; matching stays linear past it).
const PATTERN_DFA_SIZE_LIMIT: usize = 256 * 1024;
/// Most violations listed in one validation error; the rest are counted.
const MAX_REPORTED_ISSUES: usize = 16;
/// Longest text of one violation, in bytes.
const MAX_ISSUE_BYTES: usize = 300;

/// Why a schema or a value against it was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The schema is not a JSON object.
    #[error("dynamic tool {0} must be a JSON schema object")]
    NotAnObject(String),
    /// The schema does not compile (invalid against its meta-schema, or a bad reference).
    #[error("dynamic tool {name} is not a valid JSON schema: {message}")]
    Invalid {
        /// Which schema (`input_schema` or `output_schema`).
        name: String,
        /// The validator's complaint.
        message: String,
    },
    /// The schema is over a size, depth or fan-out limit; the message names the limit.
    #[error("dynamic tool {name} {message}")]
    TooComplex {
        /// Which schema (`input_schema` or `output_schema`).
        name: String,
        /// What is over which limit, e.g. "is 70000 bytes; the limit is 65536".
        message: String,
    },
}

impl SchemaError {
    /// The stable error code the CLI prints for a refused schema.
    pub fn code(&self) -> &'static str {
        "invalid_schema"
    }
}

/// A schema checked against the limits and compiled, ready to validate many values.
pub struct CompiledSchema {
    validator: jsonschema::Validator,
    /// Instances nested deeper are refused before validation: the schema is recursive and its
    /// cost per value was only bounded up to this depth.
    depth_limit: Option<usize>,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompiledSchema")
    }
}

use codecell_catalog::json_depth as depth;

/// Why a schema is over a limit, or `None`; checked before compiling, since compiling and
/// validating a schema with wide `anyOf`/`$ref` fan-out took seconds and gigabytes.
fn over_limits(schema: &Value) -> Result<Option<usize>, String> {
    let d = depth(schema);
    if d > MAX_SCHEMA_DEPTH {
        return Err(format!(
            "is nested {d} levels deep; the limit is {MAX_SCHEMA_DEPTH}"
        ));
    }
    let size = serde_json::to_vec(schema).map_or(usize::MAX, |v| v.len());
    if size > MAX_SCHEMA_BYTES {
        return Err(format!("is {size} bytes; the limit is {MAX_SCHEMA_BYTES}"));
    }
    // The catalog's own analysis: one bound for every schema codecell validates against.
    codecell_catalog::instance_depth_limit(schema)
}

impl CompiledSchema {
    /// Checks the limits, then compiles; `Err` is a [`SchemaError`] naming `name`.
    pub fn new(schema: &Value, name: &str) -> Result<CompiledSchema, SchemaError> {
        let depth_limit = over_limits(schema).map_err(|message| SchemaError::TooComplex {
            name: name.to_string(),
            message,
        })?;
        let validator = jsonschema::options()
            // Linear-time matching, as in a catalog: a backtracking engine with a step limit
            // still cost seconds per large argument (issue 10 class 3); look-around and
            // backreferences, which need backtracking, are refused when the schema compiles.
            .with_pattern_options(
                jsonschema::PatternOptions::regex()
                    .size_limit(PATTERN_SIZE_LIMIT)
                    .dfa_size_limit(PATTERN_DFA_SIZE_LIMIT),
            )
            .build(schema)
            .map_err(|e| SchemaError::Invalid {
                name: name.to_string(),
                message: e.to_string(),
            })?;
        Ok(CompiledSchema {
            validator,
            depth_limit,
        })
    }

    /// `None` when `value` conforms, else its problems joined by "; " (at most
    /// 16 listed, each clipped, then a count of the rest).
    pub fn validation_error(&self, value: &Value) -> Option<String> {
        if let Some(limit) = self.depth_limit {
            let d = depth(value);
            if d > limit {
                return Some(format!(
                    "the value is nested {d} levels deep; this recursive schema accepts at most {limit}"
                ));
            }
        }
        // The common case, a valid value, without building the error iterator.
        if self.validator.is_valid(value) {
            return None;
        }
        let mut issues = Vec::new();
        let mut total = 0usize;
        for e in self.validator.iter_errors(value) {
            total += 1;
            if issues.len() < MAX_REPORTED_ISSUES {
                let path = e.instance_path().to_string();
                let text = if path.is_empty() {
                    e.to_string()
                } else {
                    format!("{path}: {e}")
                };
                issues.push(crate::load_errors::clip(text, MAX_ISSUE_BYTES));
            }
        }
        if total > issues.len() {
            issues.push(format!("… and {} more", total - issues.len()));
        }
        (!issues.is_empty()).then(|| issues.join("; "))
    }
}

/// Normalises a schema the seed's way: `type` defaults to `"object"`; an object schema gets
/// `properties: {}` and `additionalProperties: false` unless given; then it must be within the
/// limits and compile.
pub fn normalize(value: Option<&Value>, name: &str) -> Result<Value, SchemaError> {
    normalize_compiled(value, name).map(|(schema, _)| schema)
}

/// [`normalize`], also returning the compiled schema so it need not be compiled again.
pub fn normalize_compiled(
    value: Option<&Value>,
    name: &str,
) -> Result<(Value, CompiledSchema), SchemaError> {
    let Some(Value::Object(given)) = value else {
        return Err(SchemaError::NotAnObject(name.to_string()));
    };
    let mut schema: Map<String, Value> = given.clone();
    if schema.get("type").is_none_or(Value::is_null) {
        schema.insert("type".into(), Value::from("object"));
    }
    if schema.get("type") == Some(&Value::from("object")) {
        schema
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        schema
            .entry("additionalProperties")
            .or_insert(Value::Bool(false));
    }
    let schema = Value::Object(schema);
    let compiled = CompiledSchema::new(&schema, name)?;
    Ok((schema, compiled))
}

/// Checks `value` against `schema`, compiling it for this one check (the registry caches
/// compiled schemas instead); `None` when it conforms.
pub fn validation_error(value: &Value, schema: &Value) -> Option<String> {
    match CompiledSchema::new(schema, "schema") {
        Ok(compiled) => compiled.validation_error(value),
        Err(e) => Some(format!("schema does not compile: {e}")),
    }
}
