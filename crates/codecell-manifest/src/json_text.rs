//! A small JSON text parser that follows Python's `json.loads` (strict mode) but keeps integer
//! digits exactly, so canonical JSON of text with huge integers matches Python byte for byte.

use crate::canonical::{CanonicalError, MAX_DEPTH, float_repr, write_str};
use serde_json::{Map, Number, Value};

/// A parsed JSON node: integers stay as their (validated) digits.
enum Node {
    Null,
    Bool(bool),
    Int(String),
    Float(f64),
    Str(String),
    Array(Vec<Node>),
    /// Keys in order of first appearance; a repeated key replaces the earlier value (Python's dict).
    Object(Vec<(String, Node)>),
}

/// Recursive-descent parser over the text's bytes.
pub(crate) struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    /// A parser at the start of `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    /// Parses a whole document and writes its canonical form.
    pub(crate) fn canonicalize(mut self, out: &mut String) -> Result<(), CanonicalError> {
        let node = self.document()?;
        write_node(out, &node);
        Ok(())
    }

    /// Parses a whole document into a `Value`, refusing integers beyond 64 bits.
    pub(crate) fn parse_value_document(mut self) -> Result<Value, CanonicalError> {
        let node = self.document()?;
        to_value(node)
    }

    fn document(&mut self) -> Result<Node, CanonicalError> {
        self.skip_ws();
        let node = self.value(0)?;
        self.skip_ws();
        if self.pos != self.bytes.len() {
            return Err(self.err("extra data after the value"));
        }
        Ok(node)
    }

    fn err(&self, message: &str) -> CanonicalError {
        CanonicalError::Syntax {
            offset: self.pos,
            message: message.to_string(),
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn eat_literal(&mut self, lit: &str) -> bool {
        if self.text[self.pos..].starts_with(lit) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, CanonicalError> {
        if depth > MAX_DEPTH {
            return Err(CanonicalError::TooDeep(MAX_DEPTH));
        }
        match self.bytes.get(self.pos) {
            None => Err(self.err("expected a value")),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Node::Str(self.string()?)),
            Some(b'-' | b'0'..=b'9') => {
                // Python accepts -Infinity as a literal; it has no canonical JSON form.
                if self.text[self.pos..].starts_with("-Infinity") {
                    return Err(CanonicalError::NonFinite("-Infinity".into()));
                }
                self.number()
            }
            Some(_) => {
                if self.eat_literal("null") {
                    Ok(Node::Null)
                } else if self.eat_literal("true") {
                    Ok(Node::Bool(true))
                } else if self.eat_literal("false") {
                    Ok(Node::Bool(false))
                } else if self.eat_literal("NaN") {
                    Err(CanonicalError::NonFinite("NaN".into()))
                } else if self.eat_literal("Infinity") {
                    Err(CanonicalError::NonFinite("Infinity".into()))
                } else {
                    Err(self.err("expected a value"))
                }
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Node, CanonicalError> {
        self.pos += 1;
        let mut entries: Vec<(String, Node)> = Vec::new();
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Node::Object(entries));
        }
        loop {
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return Err(self.err("expected a property name in double quotes"));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b':') {
                return Err(self.err("expected ':'"));
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth + 1)?;
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => entries.push((key, value)),
            }
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Node::Object(entries));
                }
                _ => return Err(self.err("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Node, CanonicalError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(Node::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Node::Array(items));
                }
                _ => return Err(self.err("expected ',' or ']'")),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Node, CanonicalError> {
        let start = self.pos;
        if self.bytes[self.pos] == b'-' {
            self.pos += 1;
        }
        match self.bytes.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("expected a digit")),
        }
        let mut is_float = false;
        // Like Python's scanner, "1." and "1e" end the number early; the rest is extra data.
        if self.bytes.get(self.pos) == Some(&b'.')
            && matches!(self.bytes.get(self.pos + 1), Some(b'0'..=b'9'))
        {
            self.pos += 1;
            self.digits();
            is_float = true;
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            let save = self.pos;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                self.pos = save;
            } else {
                is_float = true;
            }
        }
        let text = &self.text[start..self.pos];
        if is_float {
            // Rust's parse is correctly rounded, like Python's float().
            let x: f64 = text.parse().map_err(|_| self.err("bad number"))?;
            if !x.is_finite() {
                return Err(CanonicalError::NonFinite(text.to_string()));
            }
            Ok(Node::Float(x))
        } else if text == "-0" {
            Ok(Node::Int("0".into()))
        } else {
            Ok(Node::Int(text.to_string()))
        }
    }

    fn hex4(&mut self) -> Result<u32, CanonicalError> {
        let chunk = self
            .text
            .get(self.pos..self.pos + 4)
            .filter(|c| c.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.err("invalid \\uXXXX escape"))?;
        self.pos += 4;
        u32::from_str_radix(chunk, 16).map_err(|_| self.err("invalid \\uXXXX escape"))
    }

    fn string(&mut self) -> Result<String, CanonicalError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let run_start = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(&self.text[run_start..self.pos]);
            match self.bytes.get(self.pos) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let esc = self.bytes.get(self.pos).copied();
                    self.pos += 1;
                    match esc {
                        Some(b'"') => out.push('"'),
                        Some(b'\\') => out.push('\\'),
                        Some(b'/') => out.push('/'),
                        Some(b'b') => out.push('\u{08}'),
                        Some(b'f') => out.push('\u{0c}'),
                        Some(b'n') => out.push('\n'),
                        Some(b'r') => out.push('\r'),
                        Some(b't') => out.push('\t'),
                        Some(b'u') => out.push(self.unicode_escape()?),
                        _ => {
                            self.pos -= 1;
                            return Err(self.err("invalid escape"));
                        }
                    }
                }
                Some(_) => return Err(self.err("invalid control character in string")),
            }
        }
    }

    fn unicode_escape(&mut self) -> Result<char, CanonicalError> {
        let first = self.hex4()?;
        if (0xd800..0xdc00).contains(&first) {
            // A high surrogate combines with an immediately following low surrogate escape.
            if self.text[self.pos..].starts_with("\\u") {
                let save = self.pos;
                self.pos += 2;
                let second = self.hex4()?;
                if (0xdc00..0xe000).contains(&second) {
                    let c = 0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00);
                    return char::from_u32(c).ok_or(CanonicalError::LoneSurrogate(first));
                }
                self.pos = save;
            }
            return Err(CanonicalError::LoneSurrogate(first));
        }
        char::from_u32(first).ok_or(CanonicalError::LoneSurrogate(first))
    }
}

fn write_node(out: &mut String, node: &Node) {
    match node {
        Node::Null => out.push_str("null"),
        Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Node::Int(digits) => out.push_str(digits),
        Node::Float(x) => out.push_str(&float_repr(*x)),
        Node::Str(s) => write_str(out, s),
        Node::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_node(out, item);
            }
            out.push(']');
        }
        Node::Object(entries) => {
            let mut sorted: Vec<&(String, Node)> = entries.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('{');
            for (i, (k, v)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                write_node(out, v);
            }
            out.push('}');
        }
    }
}

fn to_value(node: Node) -> Result<Value, CanonicalError> {
    Ok(match node {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(b),
        Node::Int(digits) => {
            if let Ok(i) = digits.parse::<i64>() {
                Value::from(i)
            } else if let Ok(u) = digits.parse::<u64>() {
                Value::from(u)
            } else {
                return Err(CanonicalError::IntegerTooLarge(digits));
            }
        }
        Node::Float(x) => Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| CanonicalError::NonFinite(x.to_string()))?,
        Node::Str(s) => Value::String(s),
        Node::Array(items) => Value::Array(
            items
                .into_iter()
                .map(to_value)
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Node::Object(entries) => {
            let mut map = Map::new();
            for (k, v) in entries {
                map.insert(k, to_value(v)?);
            }
            Value::Object(map)
        }
    })
}
