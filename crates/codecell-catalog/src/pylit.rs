//! Python source literals from untrusted text and JSON. Everything a catalog author (or a model
//! defining a tool) writes reaches a stub only through these functions, so no description or name
//! can end a string early, inject code, or hide text with bidirectional or invisible characters.

use serde_json::Value;

/// Characters that are escaped even though Python would accept them raw: line and paragraph
/// separators, bidirectional overrides and invisible format characters ("Trojan Source").
fn is_suspicious(c: char) -> bool {
    matches!(c,
        '\u{0085}' | '\u{00AD}' | '\u{061C}' | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{2069}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}')
}

fn push_escape(out: &mut String, c: char) {
    let n = c as u32;
    if n <= 0xFF {
        out.push_str(&format!("\\x{n:02x}"));
    } else if n <= 0xFFFF {
        out.push_str(&format!("\\u{n:04x}"));
    } else {
        out.push_str(&format!("\\U{n:08x}"));
    }
}

/// A double-quoted Python string literal for `text`.
pub fn string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || is_suspicious(c) => push_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The body of a `"""` docstring for `text`: newlines and tabs stay readable, everything that could
/// close or corrupt the string is escaped. A `"` is escaped when another `"` or the end follows it,
/// so no run of unescaped quotes can ever form the closing `"""`.
pub fn docstring_body(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' if chars.get(i + 1).is_none_or(|&n| n == '"') => out.push_str("\\\""),
            '\n' | '\t' => out.push(c),
            '\r' => out.push_str("\\r"),
            c if c.is_control() || is_suspicious(c) => push_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// A Python literal for a JSON value (None/True/False, numbers, strings, lists, dicts).
pub fn value(v: &Value) -> String {
    match v {
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        // serde_json prints finite numbers as valid Python literals (`1`, `-2.5`, `1e+100`).
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(value).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", string(k), value(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_string_cannot_end_early_or_hide_text() {
        assert_eq!(string("a\"b\\c\nd"), r#""a\"b\\c\nd""#);
        assert_eq!(string("x\u{202E}y\u{0}z"), r#""x\u202ey\x00z""#);
    }

    #[test]
    fn a_docstring_body_never_forms_its_closing_quotes() {
        let body = docstring_body("say \"\"\"hi\"\"\" then \"");
        assert!(!body.contains("\"\"\""), "{body}");
        assert!(
            body.ends_with("\\\""),
            "a trailing quote is escaped: {body}"
        );
        assert_eq!(docstring_body("keep\n\tlines"), "keep\n\tlines");
        assert_eq!(docstring_body("a\rb"), "a\\rb");
    }

    #[test]
    fn json_values_become_python_literals() {
        let v = json!({"k\"": [null, true, false, 1, -2.5, "s"]});
        assert_eq!(value(&v), r#"{"k\"": [None, True, False, 1, -2.5, "s"]}"#);
    }
}
