//! Schema normalisation and checks with the `jsonschema` crate (built without network or file
//! resolution, so a `$ref` can only point inside the schema itself).

use serde_json::{Map, Value};

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
}

/// Normalises a schema the seed's way: `type` defaults to `"object"`; an object schema gets
/// `properties: {}` and `additionalProperties: false` unless given; then it must compile.
pub fn normalize(value: Option<&Value>, name: &str) -> Result<Value, SchemaError> {
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
    compile(&schema).map_err(|message| SchemaError::Invalid {
        name: name.to_string(),
        message,
    })?;
    Ok(schema)
}

fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema).map_err(|e| e.to_string())
}

/// Checks `value` against `schema`; `None` when it conforms, else every problem joined by "; ".
pub fn validation_error(value: &Value, schema: &Value) -> Option<String> {
    let validator = match compile(schema) {
        Ok(v) => v,
        Err(message) => return Some(format!("schema does not compile: {message}")),
    };
    let issues: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!("{path}: {e}")
            }
        })
        .collect();
    (!issues.is_empty()).then(|| issues.join("; "))
}
