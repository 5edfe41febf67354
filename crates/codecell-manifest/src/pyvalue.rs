//! Python's coercions (`float(x)`, `str(x or "")`, truthiness) on JSON values, so records are
//! judged as the seed judges them. Containers, which Python would `repr`, are refused instead.

use crate::canonical::float_repr;
use serde_json::Value;

/// Python truthiness of a JSON value.
pub(crate) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// `str(value or "")`; `None` when Python would produce a container's repr.
pub(crate) fn str_or_empty(value: Option<&Value>) -> Option<String> {
    let Some(value) = value.filter(|v| truthy(v)) else {
        return Some(String::new());
    };
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(_) => Some("True".into()),
        Value::Number(n) => Some(match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (_, Some(u)) => u.to_string(),
            _ => float_repr(n.as_f64().unwrap_or(0.0)),
        }),
        _ => None,
    }
}

/// `float(value)`: numbers, booleans and numeric strings; `None` where Python raises.
pub(crate) fn float(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let t = s.trim();
            // Python accepts "inf"/"nan" spellings; Rust's parser accepts the same words.
            t.parse::<f64>()
                .ok()
                .filter(|_| !t.is_empty() && !t.contains('_'))
        }
        _ => None,
    }
}

/// `int(value or 0)` as the seed uses it for record versions; `None` where Python raises.
pub(crate) fn int_or_zero(value: Option<&Value>) -> Option<i64> {
    let Some(value) = value.filter(|v| truthy(v)) else {
        return Some(0);
    };
    match value {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|x| x.abs() < 9.2e18)
                .map(|x| x.trunc() as i64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Python's `value == n` for a JSON value against an integer.
pub(crate) fn equals_int(value: Option<&Value>, n: i64) -> bool {
    match value {
        Some(Value::Bool(b)) => i64::from(*b) == n,
        Some(Value::Number(num)) => match num.as_i64() {
            Some(i) => i == n,
            None => num.as_f64() == Some(n as f64),
        },
        _ => false,
    }
}
