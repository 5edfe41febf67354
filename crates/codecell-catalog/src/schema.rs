//! JSON Schema checks: schemas are bounded and compiled once at build time; instances are checked
//! on every call, and violations become short lines a model can act on.

use serde_json::Value;

use crate::error::shorten;

/// Largest schema accepted, in bytes of compact JSON.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// Deepest nesting of arrays/objects accepted in a schema.
pub const MAX_SCHEMA_DEPTH: usize = 48;
/// Most violations reported for one instance.
const MAX_REPORTED_ERRORS: usize = 8;
/// Longest line reported for one violation.
const MAX_ERROR_LINE: usize = 300;

/// A compiled schema.
pub(crate) struct Compiled {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Compiled")
    }
}

/// Nesting depth of a JSON value (a scalar is 0). Iterative so a hostile value cannot overflow the stack.
pub(crate) fn depth(value: &Value) -> usize {
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

/// Checks size and depth, then compiles. `Err` is a message for a catalog error.
pub(crate) fn compile(schema: &Value) -> Result<Compiled, String> {
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
    // Default options validate the schema against its meta-schema; with the crate's default
    // features off there is no HTTP or file retriever, so external `$ref`s fail here.
    let validator = jsonschema::validator_for(schema).map_err(|e| {
        format!(
            "is not a valid JSON Schema: {}",
            shorten(&e.to_string(), 400)
        )
    })?;
    Ok(Compiled { validator })
}

/// Checks an input schema: an object schema (MCP requires `"type": "object"`; absent is accepted).
pub(crate) fn compile_input(schema: &Value) -> Result<Compiled, String> {
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
    compile(schema)
}

impl Compiled {
    /// The violations of `instance`, bounded in number and length; empty when valid.
    pub(crate) fn violations(&self, instance: &Value) -> Vec<String> {
        // The common case, a valid instance, without building error iterators (3x cheaper).
        if self.validator.is_valid(instance) {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut total = 0usize;
        for error in self.validator.iter_errors(instance) {
            total += 1;
            if out.len() < MAX_REPORTED_ERRORS {
                let at = error.instance_path().to_string();
                let place = if at.is_empty() {
                    "at the top level".to_string()
                } else {
                    format!("at {at}")
                };
                out.push(shorten(&format!("{place}: {error}"), MAX_ERROR_LINE));
            }
        }
        if total > out.len() {
            out.push(format!("… and {} more", total - out.len()));
        }
        out
    }
}
