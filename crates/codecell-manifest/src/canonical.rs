//! Canonical JSON, byte-identical to Python's
//! `json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":"))`.
//!
//! Numbers: a `serde_json::Value` holds integers as i64/u64 (exact) and everything else as f64,
//! which we print the way Python's `repr(float)` does (`3600.0`, `1e+16`, `1e-07`, `-0.0`).
//! Integers beyond 64 bits cannot live in a `serde_json::Value` without serde_json's
//! `arbitrary_precision` feature, which is workspace-wide (feature unification) and changes how
//! numbers deserialize through untagged enums in every other crate, so we do not enable it.
//! Instead [`canonicalize_str`] canonicalises JSON *text* with its own parser that keeps integer
//! digits exactly (any size), and [`parse_exact`] parses text into a `Value` but refuses integers
//! that a `Value` would silently turn into floats — so an id never differs from the seed's
//! without an error saying why. NaN and infinities (which Python would print as the non-JSON
//! `NaN`/`Infinity`) are refused everywhere.

use serde_json::Value;
use std::fmt::Write as _;

/// Why a value or text has no canonical JSON form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    /// The text is not JSON (Python's `json.loads` would refuse it too).
    #[error("invalid JSON at byte {offset}: {message}")]
    Syntax {
        /// Byte offset of the problem.
        offset: usize,
        /// What was expected.
        message: String,
    },
    /// A number is NaN or infinite, or overflows to infinity when parsed.
    #[error("non-finite number {0} has no JSON form")]
    NonFinite(String),
    /// An integer that a `serde_json::Value` cannot hold exactly.
    #[error(
        "integer {0} does not fit in 64 bits; codecell keeps such integers only as text (write it as a float if approximation is fine)"
    )]
    IntegerTooLarge(String),
    /// A `\u` escape names a lone surrogate, which has no UTF-8 encoding.
    #[error("lone surrogate \\u{0:04x} in a string has no UTF-8 form")]
    LoneSurrogate(u32),
    /// Nesting deeper than we are willing to recurse.
    #[error("JSON nested deeper than {0} levels")]
    TooDeep(usize),
}

/// Deepest nesting accepted by the text parser (Python's own limit is about 1000).
pub const MAX_DEPTH: usize = 512;

/// Canonical JSON of a value.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// sha256 hex digest of the canonical JSON's UTF-8 bytes (the seed's `_manifest_hash`).
pub fn hash(value: &Value) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(to_string(value).as_bytes()))
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else {
                // A serde_json Number is always finite; fall back to 0.0 defensively.
                out.push_str(&float_repr(n.as_f64().unwrap_or(0.0)));
            }
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sort explicitly: serde_json's map order depends on a workspace-wide feature.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                write_value(out, v);
            }
            out.push('}');
        }
    }
}

/// Writes a string the way Python's encoder does with `ensure_ascii=False`.
pub(crate) fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: shortest round-tripping digits, fixed notation for decimal exponents
/// in [-4, 16), scientific with a signed two-digit-minimum exponent otherwise.
/// Non-finite input yields Python's spellings, which callers refuse before getting here.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // Rust's `{:e}` gives the shortest round-tripping digit count, e.g. "1.5e-7", "-0e0". When
    // two strings of that length round-trip, Python keeps the one closest to the exact value,
    // ties to even (-977669004256545.25 prints as ...545.2); Rust's shortest mode may take the
    // other. Rust's exact mode with that many digits rounds half to even, so use it whenever it
    // still round-trips.
    let shortest = format!("{x:e}");
    let digit_count = shortest
        .split('e')
        .next()
        .unwrap_or("")
        .bytes()
        .filter(u8::is_ascii_digit)
        .count()
        .max(1);
    let closest = format!("{x:.prec$e}", prec = digit_count - 1);
    let sci = if closest.parse::<f64>().ok() == Some(x) {
        closest
    } else {
        shortest
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    // Python's decpt: value = 0.DIGITS * 10^decpt.
    let decpt = exp + 1;
    let mut out = String::from(sign);
    if (-4 < decpt) && (decpt <= 16) {
        let n = digits.len() as i32;
        if decpt <= 0 {
            out.push_str("0.");
            for _ in 0..(-decpt) {
                out.push('0');
            }
            out.push_str(&digits);
        } else if decpt >= n {
            out.push_str(&digits);
            for _ in 0..(decpt - n) {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            let (int, frac) = digits.split_at(decpt as usize);
            out.push_str(int);
            out.push('.');
            out.push_str(frac);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    out
}

/// Canonicalises JSON text exactly as Python would `json.loads` then `json.dumps` it, keeping
/// integers of any size digit for digit.
pub fn canonicalize_str(text: &str) -> Result<String, CanonicalError> {
    let mut out = String::with_capacity(text.len());
    crate::json_text::Parser::new(text).canonicalize(&mut out)?;
    Ok(out)
}

/// Parses JSON text into a `Value`, refusing what a `Value` cannot hold exactly
/// (integers beyond 64 bits, non-finite numbers, lone surrogates).
pub fn parse_exact(text: &str) -> Result<Value, CanonicalError> {
    crate::json_text::Parser::new(text).parse_value_document()
}
