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
    builtins::{PyDict, PyFloat, PyInt, PyList, PyStr, PyTuple},
};
use serde_json::Value;

/// Deeper than this is refused (and is how a circular structure ends); the host refuses far
/// shallower nesting anyway (serde_json's limit of 128).
const MAX_DEPTH: usize = 1000;

/// Encodes `obj` as compact JSON the way the stdlib encoder would accept it.
pub(crate) fn encode(obj: &PyObjectRef, vm: &VirtualMachine) -> PyResult<String> {
    let mut out = String::new();
    write_value(obj, &mut out, 0, vm)?;
    Ok(out)
}

fn write_str(s: &PyStr, out: &mut String) {
    // Lone surrogates cannot cross into the host's UTF-8 string: they become U+FFFD, as the
    // binding's `to_string_lossy` did before.
    let text = s.to_string_lossy();
    out.push_str(&serde_json::to_string(text.as_ref()).unwrap_or_else(|_| "\"\"".into()));
}

fn write_float(f: f64, out: &mut String, vm: &VirtualMachine) -> PyResult<()> {
    if !f.is_finite() {
        return Err(vm.new_value_error(format!(
            "Out of range float values are not JSON compliant: {f}"
        )));
    }
    out.push_str(&serde_json::Number::from_f64(f).map(|n| n.to_string()).unwrap_or_default());
    Ok(())
}

fn write_value(obj: &PyObjectRef, out: &mut String, depth: usize, vm: &VirtualMachine) -> PyResult<()> {
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
        out.push_str(&i.as_bigint().to_string());
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

fn write_array(items: &[PyObjectRef], out: &mut String, depth: usize, vm: &VirtualMachine) -> PyResult<()> {
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
    let text = if let Some(s) = key.downcast_ref::<PyStr>() {
        return {
            write_str(s, out);
            Ok(())
        };
    } else if vm.is_none(key) {
        "null".to_owned()
    } else if key.is(&vm.ctx.true_value) {
        "true".to_owned()
    } else if key.is(&vm.ctx.false_value) {
        "false".to_owned()
    } else if let Some(i) = key.downcast_ref::<PyInt>() {
        i.as_bigint().to_string()
    } else if let Some(f) = key.downcast_ref::<PyFloat>() {
        let f = f.to_f64();
        if !f.is_finite() {
            return Err(vm.new_value_error(format!(
                "Out of range float values are not JSON compliant: {f}"
            )));
        }
        key.repr(vm)?.to_string_lossy().into_owned()
    } else {
        return Err(vm.new_type_error(format!(
            "keys must be str, int, float, bool or None, not {}",
            key.class().name()
        )));
    };
    out.push_str(&serde_json::to_string(&text).unwrap_or_default());
    Ok(())
}

/// Parses the host's JSON result into Python values (dict, list, str, int, float, bool, None).
pub(crate) fn decode(text: &str, vm: &VirtualMachine) -> PyResult<PyObjectRef> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| vm.new_value_error(format!("the tool result is not JSON: {e}")))?;
    Ok(to_python(&value, vm))
}

fn to_python(value: &Value, vm: &VirtualMachine) -> PyObjectRef {
    match value {
        Value::Null => vm.ctx.none(),
        Value::Bool(b) => vm.ctx.new_bool(*b).into(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                vm.ctx.new_int(i).into()
            } else if let Some(u) = n.as_u64() {
                vm.ctx.new_int(u).into()
            } else {
                vm.ctx.new_float(n.as_f64().unwrap_or(f64::NAN)).into()
            }
        }
        Value::String(s) => vm.ctx.new_str(s.as_str()).into(),
        Value::Array(items) => vm
            .ctx
            .new_list(items.iter().map(|v| to_python(v, vm)).collect())
            .into(),
        Value::Object(map) => {
            let dict = vm.ctx.new_dict();
            for (k, v) in map {
                // Setting a str key on a fresh dict cannot fail.
                let _ = dict.set_item(k.as_str(), to_python(v, vm), vm);
            }
            dict.into()
        }
    }
}
