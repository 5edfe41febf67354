//! Tool-call JSON in Rust: `encode_args(kwargs)` and `decode_result(text)` for `_codecell_host`.
//!
//! They replace `json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode` and
//! `json.JSONDecoder().decode` on the call_tool path, where RustPython's pure-Python json module
//! cost ~35 µs per call. The refusals keep the stdlib's exception types (TypeError for a value
//! that is not JSON, ValueError for NaN/infinity and for nesting too deep or circular), which
//! `_codecell_api.call_tool` turns into ToolError. Number formatting may differ from Python's
//! (the host parses it); the values do not.

use rustpython_vm::{
    AsObject, PyObjectRef, PyResult, VirtualMachine,
    builtins::{PyBaseExceptionRef, PyDict, PyFloat, PyInt, PyList, PyStr, PyTuple},
};
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt::Write as _;

/// Deeper than this is refused (and is how a circular structure ends); the host refuses far
/// shallower nesting anyway (serde_json's limit of 128).
const MAX_DEPTH: usize = 1000;

/// Initial size of an encoding buffer, in bytes.
const ARGS_CAPACITY: usize = 128;

/// Encodes `obj` as compact JSON the way the stdlib encoder would accept it.
pub(crate) fn encode(obj: &PyObjectRef, vm: &VirtualMachine) -> PyResult<String> {
    let mut out = String::with_capacity(ARGS_CAPACITY);
    write_value(obj, &mut out, 0, vm)?;
    Ok(out)
}

/// Encodes a call's keyword arguments (names and values) as a JSON object, in the order given.
pub(crate) fn encode_kwargs<'a>(
    kwargs: impl Iterator<Item = (Cow<'a, str>, &'a PyObjectRef)>,
    vm: &VirtualMachine,
) -> PyResult<String> {
    // Sized for typical arguments, so short ones are written without growing the buffer.
    let mut out = String::with_capacity(ARGS_CAPACITY);
    out.push('{');
    for (n, (key, value)) in kwargs.enumerate() {
        if n > 0 {
            out.push(',');
        }
        write_text(&key, &mut out);
        out.push(':');
        write_value(value, &mut out, 1, vm)?;
    }
    out.push('}');
    Ok(out)
}

fn write_str(s: &PyStr, out: &mut String) {
    // Lone surrogates cannot cross into the host's UTF-8 string: they become U+FFFD, as the
    // binding's `to_string_lossy` did before.
    write_text(&s.to_string_lossy(), out);
}

/// Appends `text` as a JSON string literal, escaped in place (no intermediate allocation).
fn write_text(text: &str, out: &mut String) {
    out.reserve(text.len() + 2);
    out.push('"');
    let mut plain = 0;
    for (i, byte) in text.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[plain..i]);
        if escape.is_empty() {
            out.push_str(&format!("\\u{byte:04x}"));
        } else {
            out.push_str(escape);
        }
        plain = i + 1;
    }
    out.push_str(&text[plain..]);
    out.push('"');
}

/// Machine-sized ints are formatted directly: the bigint formatter costs a dozen times more.
fn write_int(i: &PyInt, out: &mut String) {
    let big = i.as_bigint();
    match i64::try_from(big) {
        Ok(small) => out.push_str(itoa::Buffer::new().format(small)),
        Err(_) => write!(out, "{big}").expect("writing to a String cannot fail"),
    }
}

/// The stdlib encoder's refusal of NaN and infinities (`allow_nan=False`).
fn non_finite(f: f64, vm: &VirtualMachine) -> PyBaseExceptionRef {
    vm.new_value_error(format!(
        "Out of range float values are not JSON compliant: {f}"
    ))
}

fn write_float(f: f64, out: &mut String, vm: &VirtualMachine) -> PyResult<()> {
    if !f.is_finite() {
        return Err(non_finite(f, vm));
    }
    out.push_str(
        &serde_json::Number::from_f64(f)
            .map(|n| n.to_string())
            .unwrap_or_default(),
    );
    Ok(())
}

fn write_value(
    obj: &PyObjectRef,
    out: &mut String,
    depth: usize,
    vm: &VirtualMachine,
) -> PyResult<()> {
    if depth > MAX_DEPTH {
        return Err(vm.new_value_error(format!(
            "Circular reference detected or nesting deeper than {MAX_DEPTH} levels"
        )));
    }
    if vm.is_none(obj) {
        out.push_str("null");
    } else if obj.is(&vm.ctx.true_value) {
        out.push_str("true");
    } else if obj.is(&vm.ctx.false_value) {
        out.push_str("false");
    } else if let Some(s) = obj.downcast_ref::<PyStr>() {
        write_str(s, out);
    } else if let Some(i) = obj.downcast_ref::<PyInt>() {
        write_int(i, out);
    } else if let Some(f) = obj.downcast_ref::<PyFloat>() {
        write_float(f.to_f64(), out, vm)?;
    } else if let Some(list) = obj.downcast_ref::<PyList>() {
        let items = list.borrow_vec().to_vec();
        write_array(&items, out, depth, vm)?;
    } else if let Some(tuple) = obj.downcast_ref::<PyTuple>() {
        write_array(tuple.as_slice(), out, depth, vm)?;
    } else if let Some(dict) = obj.downcast_ref::<PyDict>() {
        out.push('{');
        for (n, (key, value)) in dict.items_vec().iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            write_key(key, out, vm)?;
            out.push(':');
            write_value(value, out, depth + 1, vm)?;
        }
        out.push('}');
    } else {
        return Err(vm.new_type_error(format!(
            "Object of type {} is not JSON serializable",
            obj.class().name()
        )));
    }
    Ok(())
}

fn write_array(
    items: &[PyObjectRef],
    out: &mut String,
    depth: usize,
    vm: &VirtualMachine,
) -> PyResult<()> {
    out.push('[');
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        write_value(item, out, depth + 1, vm)?;
    }
    out.push(']');
    Ok(())
}

/// Keys as the stdlib encoder converts them: str as is; int, float, bool and None as text.
fn write_key(key: &PyObjectRef, out: &mut String, vm: &VirtualMachine) -> PyResult<()> {
    // bool is an int here too: True/False are checked before PyInt.
    let text: Cow<'_, str> = if let Some(s) = key.downcast_ref::<PyStr>() {
        s.to_string_lossy()
    } else if vm.is_none(key) {
        "null".into()
    } else if key.is(&vm.ctx.true_value) {
        "true".into()
    } else if key.is(&vm.ctx.false_value) {
        "false".into()
    } else if let Some(i) = key.downcast_ref::<PyInt>() {
        let mut digits = String::new();
        write_int(i, &mut digits);
        digits.into()
    } else if let Some(f) = key.downcast_ref::<PyFloat>() {
        let f = f.to_f64();
        if !f.is_finite() {
            return Err(non_finite(f, vm));
        }
        key.repr(vm)?.to_string_lossy().into_owned().into()
    } else {
        return Err(vm.new_type_error(format!(
            "keys must be str, int, float, bool or None, not {}",
            key.class().name()
        )));
    };
    write_text(&text, out);
    Ok(())
}

/// Parses the host's JSON result into Python values (dict, list, str, int, float, bool, None),
/// building them as the parser goes, in document order.
pub(crate) fn decode(text: &str, vm: &VirtualMachine) -> PyResult<PyObjectRef> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = PyValue(vm)
        .deserialize(&mut de)
        .and_then(|value| de.end().map(|()| value))
        .map_err(|e| vm.new_value_error(format!("the tool result is not JSON: {e}")))?;
    Ok(value)
}

/// A serde seed and visitor that makes the Python value of one JSON value.
#[derive(Clone, Copy)]
struct PyValue<'vm>(&'vm VirtualMachine);

impl<'de> DeserializeSeed<'de> for PyValue<'_> {
    type Value = PyObjectRef;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<PyObjectRef, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PyValue<'_> {
    type Value = PyObjectRef;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<PyObjectRef, E> {
        Ok(self.0.ctx.none())
    }

    fn visit_bool<E>(self, v: bool) -> Result<PyObjectRef, E> {
        Ok(self.0.ctx.new_bool(v).into())
    }

    fn visit_i64<E>(self, v: i64) -> Result<PyObjectRef, E> {
        Ok(self.0.ctx.new_int(v).into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<PyObjectRef, E> {
        Ok(self.0.ctx.new_int(v).into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<PyObjectRef, E> {
        Ok(self.0.ctx.new_float(v).into())
    }

    fn visit_str<E>(self, v: &str) -> Result<PyObjectRef, E> {
        Ok(self.0.ctx.new_str(v).into())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PyObjectRef, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(self.0.ctx.new_list(items).into())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PyObjectRef, A::Error> {
        let dict = self.0.ctx.new_dict();
        // Keys go straight to str objects (through `visit_str`): no intermediate String.
        while let Some(key) = map.next_key_seed(self)? {
            let value = map.next_value_seed(self)?;
            // A later duplicate key replaces the earlier one, as in Python's json. The dict is a
            // plain new one, so its storage is written directly.
            dict.inner_setitem(&*key, value, self.0)
                .map_err(|_| A::Error::custom("a key could not be set"))?;
        }
        Ok(dict.into())
    }
}
