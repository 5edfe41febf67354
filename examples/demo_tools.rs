//! The demo catalog's tools (`fixtures/demo/units.py` and `text_stats.py`) as one Rust program,
//! for Windows: a Windows test binary under Wine cannot start a Linux `python3`, so there the
//! tests' demo catalog runs `demo_tools units|stats|top_words` instead (`tests/support/lib.rs`).
//! Same protocol and results: JSON arguments on stdin, a JSON result on stdout, a non-zero exit
//! with a message on stderr for a failure.

use serde_json::{Value, json};
use std::io::Read;

fn main() {
    let mut input = String::new();
    let args: Value = match std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| e.to_string())
        .and_then(|_| serde_json::from_str(&input).map_err(|e| e.to_string()))
    {
        Ok(args) => args,
        Err(e) => fail(&format!("invalid JSON arguments: {e}")),
    };
    let text = || args["text"].as_str().unwrap_or_else(|| fail("'text'"));
    let result = match std::env::args().nth(1).as_deref().unwrap_or("stats") {
        "units" => units(&args),
        "stats" => stats(text()),
        "top_words" => top_words(text(), args["limit"].as_i64().unwrap_or(5)),
        other => fail(&format!("unknown command {other}")),
    };
    println!("{result}");
}

fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(1)
}

/// Python's `round(x, digits)`: the double nearest to `x` correctly rounded to `digits` places.
fn round(x: f64, digits: usize) -> f64 {
    format!("{x:.digits$}").parse().unwrap_or(x)
}

/// `units/convert`, as `units.py`.
fn units(args: &Value) -> Value {
    const LENGTH: &[(&str, f64)] = &[
        ("mm", 0.001),
        ("cm", 0.01),
        ("m", 1.0),
        ("km", 1000.0),
        ("in", 0.0254),
        ("ft", 0.3048),
        ("mi", 1609.344),
    ];
    const MASS: &[(&str, f64)] = &[
        ("g", 0.001),
        ("kg", 1.0),
        ("lb", 0.45359237),
        ("oz", 0.028349523125),
    ];
    let field = |name: &str| {
        args[name]
            .as_str()
            .unwrap_or_else(|| fail(&format!("units/convert: '{name}'")))
    };
    let value = args["value"]
        .as_f64()
        .unwrap_or_else(|| fail("units/convert: 'value'"));
    let (source, target) = (field("from_unit"), field("to_unit"));
    let kelvin = |v: f64, unit: &str| match unit {
        "C" => Some(v + 273.15),
        "F" => Some((v - 32.0) * 5.0 / 9.0 + 273.15),
        "K" => Some(v),
        _ => None,
    };
    let from_kelvin = |v: f64, unit: &str| match unit {
        "C" => Some(v - 273.15),
        "F" => Some((v - 273.15) * 9.0 / 5.0 + 32.0),
        "K" => Some(v),
        _ => None,
    };
    let factor =
        |table: &[(&str, f64)], unit: &str| table.iter().find(|(u, _)| *u == unit).map(|(_, f)| *f);
    let converted = kelvin(value, source)
        .and_then(|k| from_kelvin(k, target))
        .or_else(|| {
            [LENGTH, MASS]
                .iter()
                .find_map(|table| Some(value * factor(table, source)? / factor(table, target)?))
        })
        .unwrap_or_else(|| {
            fail(&format!(
                "units/convert: cannot convert {source} to {target}: different dimensions"
            ))
        });
    json!({"value": round(converted, 6), "unit": target})
}

/// The words of `text`, as `text_stats.py`'s `[A-Za-z0-9']+`.
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect()
}

/// `text/stats`.
fn stats(text: &str) -> Value {
    let words = words(text);
    let sentences = text
        .split(['.', '!', '?'])
        .filter(|s| !s.trim().is_empty())
        .count();
    let lines = text.matches('\n').count() + usize::from(!text.is_empty() && !text.ends_with('\n'));
    let average = if words.is_empty() {
        0.0
    } else {
        let letters: usize = words.iter().map(|w| w.len()).sum();
        round(letters as f64 / words.len() as f64, 3)
    };
    json!({
        "characters": text.chars().count(),
        "words": words.len(),
        "lines": lines,
        "sentences": sentences,
        "average_word_length": average,
    })
}

/// `text/top_words`.
fn top_words(text: &str, limit: i64) -> Value {
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for word in words(text) {
        *counts.entry(word.to_ascii_lowercase()).or_default() += 1;
    }
    let mut ranked: Vec<(String, usize)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(usize::try_from(limit).unwrap_or(0));
    let words: Vec<Value> = ranked
        .into_iter()
        .map(|(word, count)| json!({"word": word, "count": count}))
        .collect();
    json!({"words": words})
}
