//! Smoke arguments synthesised exactly as the seed's `_minimal_smoke_args` does.

use serde_json::{Map, Value};

/// A required property for which no smoke value can be made up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot synthesize smoke value for required {0:?}")]
pub struct SmokeError(pub String);

impl SmokeError {
    /// The stable error code the CLI prints when no smoke arguments can be made.
    pub fn code(&self) -> &'static str {
        "invalid_smoke_args"
    }
}

/// Minimal arguments for the schema's required properties: the default, else the first enum
/// member, else a value by type ("smoke", max(0, minimum), false, [], {}).
pub fn minimal_smoke_args(schema: &Value) -> Result<Value, SmokeError> {
    let mut result = Map::new();
    let empty = Map::new();
    let properties = match schema.get("properties") {
        Some(Value::Object(p)) => p,
        _ => &empty,
    };
    let required: Vec<&Value> = match schema.get("required") {
        Some(Value::Array(names)) => names.iter().collect(),
        _ => Vec::new(),
    };
    for name_value in required {
        let name = match name_value {
            Value::String(s) => s.clone(),
            other => return Err(SmokeError(other.to_string())),
        };
        // `properties.get(name) or {}`: a missing or falsy property is an empty schema; a
        // non-object truthy one (e.g. `true`) makes the seed raise.
        let prop = match properties.get(&name) {
            Some(Value::Object(p)) => p,
            Some(v) if crate::pyvalue::truthy(v) => return Err(SmokeError(name)),
            _ => &empty,
        };
        let kind = prop.get("type").and_then(Value::as_str);
        let value = if let Some(default) = prop.get("default") {
            default.clone()
        } else if let Some(first) = prop
            .get("enum")
            .filter(|e| crate::pyvalue::truthy(e))
            .and_then(|e| e.as_array())
            .and_then(|e| e.first())
        {
            first.clone()
        } else if kind == Some("string") {
            Value::from("smoke")
        } else if matches!(kind, Some("number" | "integer")) {
            python_max_zero(prop.get("minimum")).ok_or_else(|| SmokeError(name.clone()))?
        } else if kind == Some("boolean") {
            Value::Bool(false)
        } else if kind == Some("array") {
            Value::Array(Vec::new())
        } else if kind == Some("object") {
            Value::Object(Map::new())
        } else {
            return Err(SmokeError(name));
        };
        result.insert(name, value);
    }
    Ok(Value::Object(result))
}

/// Python's `max(0, minimum)`: the first argument wins ties, so `0` beats `0.0` and `False`.
fn python_max_zero(minimum: Option<&Value>) -> Option<Value> {
    match minimum {
        None => Some(Value::from(0)),
        Some(Value::Bool(b)) => Some(if *b {
            Value::Bool(true)
        } else {
            Value::from(0)
        }),
        Some(Value::Number(n)) => {
            let x = n.as_f64()?;
            Some(if x > 0.0 {
                Value::Number(n.clone())
            } else {
                Value::from(0)
            })
        }
        // Python cannot compare 0 with a string, list, dict or None.
        Some(_) => None,
    }
}
