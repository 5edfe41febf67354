//! Python stubs generated from a tool's JSON Schema: a typed signature, a docstring, and a body
//! that calls `call_tool`. Every name in the source is a mapped identifier (see `naming`) and every
//! piece of text is a literal built by `pylit`, so a stub is valid Python whatever the catalog says.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::naming::{RESERVED_PARAM_NAMES, assign_identifiers};
use crate::pylit;

/// Nesting beyond which a type is rendered as `Any`.
const MAX_TYPE_DEPTH: usize = 6;
/// Most values rendered in a `Literal[...]`; longer enums fall back to their base type.
const MAX_LITERAL_VALUES: usize = 64;
/// Longest default rendered in a signature; longer ones are left to the tool (`= None`, omitted).
const MAX_DEFAULT_CHARS: usize = 200;
/// Schema nodes the annotations of one stub may visit. `$ref`s and `anyOf` branches are followed
/// each time they are reached, so breadth multiplies; past this the stub is generated again with
/// every type `Any` (plainer, still valid, and never a hang).
pub const STUB_WORK_BUDGET: usize = 20_000;
/// Longest annotation rendered; a longer one (a union of many literals, say) becomes `Any`.
const MAX_ANNOTATION_CHARS: usize = 1_000;
/// A `def` line longer than this puts one parameter per line.
const MAX_DEF_LINE: usize = 88;

/// What a stub needs to know about its tool.
pub struct StubInput<'a> {
    /// The category's name as registered (passed to `call_tool`).
    pub category: &'a str,
    /// The tool's name as registered (passed to `call_tool`).
    pub tool: &'a str,
    /// The function's identifier.
    pub function: &'a str,
    /// The tool's description.
    pub description: &'a str,
    /// The input schema.
    pub input_schema: &'a Value,
    /// The output schema, if any.
    pub output_schema: Option<&'a Value>,
}

/// Names imported from `typing` by the annotations of one stub, and the schema that local
/// `$ref`s (`#/$defs/...`) point into.
struct Imports<'r> {
    names: BTreeSet<&'static str>,
    root: &'r Value,
    /// Schema nodes the annotations may still visit (see [`STUB_WORK_BUDGET`]).
    budget: usize,
    /// Set when the budget ran out: the stub is then generated again with plain types.
    exhausted: bool,
}

impl<'r> Imports<'r> {
    fn new(root: &'r Value, budget: usize) -> Self {
        Imports {
            names: BTreeSet::new(),
            root,
            budget,
            exhausted: false,
        }
    }

    fn use_name(&mut self, name: &'static str) -> &'static str {
        self.names.insert(name);
        name
    }
}

/// Renders the Python annotation for a schema, `Any` when it is too long to be useful.
fn annotation(schema: &Value, imports: &mut Imports<'_>, depth: usize) -> String {
    let a = annotation_of(schema, imports, depth);
    if a.len() > MAX_ANNOTATION_CHARS {
        return imports.use_name("Any").to_string();
    }
    a
}

fn annotation_of(schema: &Value, imports: &mut Imports<'_>, depth: usize) -> String {
    if imports.budget == 0 {
        imports.exhausted = true;
        return imports.use_name("Any").to_string();
    }
    imports.budget -= 1;
    let Some(map) = schema.as_object() else {
        return imports.use_name("Any").to_string();
    };
    if depth >= MAX_TYPE_DEPTH {
        return imports.use_name("Any").to_string();
    }
    // Local references only (`#/$defs/Unit`); the depth cap ends reference cycles.
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| imports.root.pointer(pointer));
        return match target {
            Some(target) => annotation(target, imports, depth + 1),
            None => imports.use_name("Any").to_string(),
        };
    }
    if let Some([only]) = map
        .get("allOf")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        return annotation(only, imports, depth + 1);
    }
    if let Some(values) = map.get("enum").and_then(Value::as_array) {
        if let Some(lit) = literal(values, imports) {
            return lit;
        }
    } else if let Some(value) = map.get("const")
        && let Some(lit) = literal(std::slice::from_ref(value), imports)
    {
        return lit;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = map.get(key).and_then(Value::as_array) {
            let parts: Vec<String> = options
                .iter()
                .map(|o| annotation(o, imports, depth + 1))
                .collect();
            return union(parts, imports);
        }
    }
    match map.get("type") {
        Some(Value::String(t)) => single_type(t, map, imports, depth),
        Some(Value::Array(types)) => {
            let parts: Vec<String> = types
                .iter()
                .map(|t| match t.as_str() {
                    Some(t) => single_type(t, map, imports, depth),
                    None => imports.use_name("Any").to_string(),
                })
                .collect();
            union(parts, imports)
        }
        _ => imports.use_name("Any").to_string(),
    }
}

fn single_type(
    t: &str,
    map: &Map<String, Value>,
    imports: &mut Imports<'_>,
    depth: usize,
) -> String {
    match t {
        "string" => "str".to_string(),
        "integer" => "int".to_string(),
        "number" => "float".to_string(),
        "boolean" => "bool".to_string(),
        "null" => "None".to_string(),
        "object" => "dict".to_string(),
        "array" => match map.get("items") {
            Some(items @ Value::Object(_)) => {
                format!("list[{}]", annotation(items, imports, depth + 1))
            }
            _ => format!("list[{}]", imports.use_name("Any")),
        },
        _ => imports.use_name("Any").to_string(),
    }
}

/// `Literal[...]` for scalar enum values, or `None` when a value cannot be a literal.
fn literal(values: &[Value], imports: &mut Imports<'_>) -> Option<String> {
    if values.is_empty() || values.len() > MAX_LITERAL_VALUES {
        return None;
    }
    let has_null = values.iter().any(Value::is_null);
    let mut parts = Vec::new();
    for v in values.iter().filter(|v| !v.is_null()) {
        match v {
            // Literal accepts str, int, bool; floats, lists and dicts are not allowed in it.
            Value::String(_) | Value::Bool(_) => parts.push(pylit::value(v)),
            Value::Number(n) if n.is_i64() || n.is_u64() => parts.push(pylit::value(v)),
            _ => return None,
        }
    }
    if parts.is_empty() {
        return Some("None".to_string());
    }
    let lit = format!("{}[{}]", imports.use_name("Literal"), parts.join(", "));
    Some(if has_null {
        format!("{}[{lit}]", imports.use_name("Optional"))
    } else {
        lit
    })
}

/// A union of annotations; a `None` member makes it `Optional[...]`.
fn union(parts: Vec<String>, imports: &mut Imports<'_>) -> String {
    let mut seen = Vec::new();
    let mut nullable = false;
    for p in parts {
        if p == "None" {
            nullable = true;
        } else if !seen.contains(&p) {
            seen.push(p);
        }
    }
    if seen.iter().any(|p| p == "Any") {
        return "Any".to_string();
    }
    let inner = match seen.len() {
        0 => return "None".to_string(),
        _ => seen.join(" | "),
    };
    if nullable {
        format!("{}[{inner}]", imports.use_name("Optional"))
    } else {
        inner
    }
}

/// One parameter of the generated function.
struct Param {
    original: String,
    ident: String,
    annotation: String,
    /// The rendered default, or `None` for a required parameter.
    default: Option<String>,
    /// Optional without a usable default: `= None` in the signature, omitted from the call.
    omit_when_none: bool,
    description: String,
    notes: Vec<String>,
}

/// Constraints worth telling the model, as `keyword value` notes.
fn constraint_notes(schema: &Value) -> Vec<String> {
    const KEYS: &[&str] = &[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minItems",
        "maxItems",
    ];
    let Some(map) = schema.as_object() else {
        return Vec::new();
    };
    KEYS.iter()
        .filter_map(|k| map.get(*k).map(|v| format!("{k} {}", short_json(v))))
        .collect()
}

fn short_json(v: &Value) -> String {
    crate::error::shorten(&v.to_string(), 80)
}

fn params(input: &Value, imports: &mut Imports<'_>) -> Vec<Param> {
    let empty = Map::new();
    let props = input
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = input
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // Required first, in the order of `required`; then optional ones sorted by name, so the
    // signature never depends on how a JSON map happens to be ordered.
    let mut order: Vec<&str> = Vec::new();
    for r in &required {
        if !order.contains(r) {
            order.push(r);
        }
    }
    let mut optional: Vec<&str> = props
        .keys()
        .map(String::as_str)
        .filter(|k| !required.contains(k))
        .collect();
    optional.sort_unstable();
    order.extend(optional);
    let idents = assign_identifiers(&order, RESERVED_PARAM_NAMES);
    let null = Value::Null;
    order
        .iter()
        .zip(idents)
        .map(|(name, ident)| {
            let schema = props.get(*name).unwrap_or(&null);
            let mut annotation = annotation(schema, imports, 0);
            let description = schema
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let is_required = required.contains(name);
            let default = schema
                .get("default")
                .filter(|d| !d.is_null())
                .map(pylit::value)
                .filter(|d| d.len() <= MAX_DEFAULT_CHARS);
            let (default, omit_when_none) = match (is_required, default) {
                (true, _) => (None, false),
                (false, Some(d)) => (Some(d), false),
                (false, None) => {
                    if !annotation.starts_with("Optional[") && annotation != "Any" {
                        annotation = format!("{}[{annotation}]", imports.use_name("Optional"));
                    }
                    (Some("None".to_string()), true)
                }
            };
            let mut notes = constraint_notes(schema);
            if ident != *name {
                notes.insert(0, format!("sent as {}", pylit::string(name)));
            }
            Param {
                original: name.to_string(),
                ident,
                annotation,
                default,
                omit_when_none,
                description,
                notes,
            }
        })
        .collect()
}

/// Appends `text` to a docstring, indented by `indent` after the first line.
fn push_indented(out: &mut String, text: &str, indent: &str) {
    let body = pylit::docstring_body(text.trim());
    for (i, line) in body.lines().enumerate() {
        if i > 0 {
            out.push('\n');
            if !line.trim().is_empty() {
                out.push_str(indent);
            }
        }
        out.push_str(line.trim_end());
    }
}

/// The full stub source for one tool; within [`STUB_WORK_BUDGET`] whatever the schema.
pub fn generate(input: &StubInput<'_>) -> String {
    generate_within(input, STUB_WORK_BUDGET).unwrap_or_else(|| {
        // Over budget: the same stub with every parameter and the result typed `Any`.
        generate_within(input, 0).unwrap_or_default()
    })
}

/// The stub, or `None` when its annotations needed more than `budget` (0 means plain types).
fn generate_within(input: &StubInput<'_>, budget: usize) -> Option<String> {
    let plain = budget == 0;
    let mut imports = Imports::new(input.input_schema, budget);
    let params = params(input.input_schema, &mut imports);
    let returns = match input.output_schema {
        Some(schema) => {
            imports.root = schema;
            annotation(schema, &mut imports, 0)
        }
        None => imports.use_name("Any").to_string(),
    };
    if imports.exhausted && !plain {
        return None;
    }

    let rendered: Vec<String> = params
        .iter()
        .map(|p| match &p.default {
            Some(d) => format!("{}: {} = {d}", p.ident, p.annotation),
            None => format!("{}: {}", p.ident, p.annotation),
        })
        .collect();
    let one_line = format!(
        "def {}({}) -> {returns}:",
        input.function,
        rendered.join(", ")
    );
    let def = if one_line.len() <= MAX_DEF_LINE {
        one_line
    } else {
        let mut s = format!("def {}(\n", input.function);
        for r in &rendered {
            s.push_str(&format!("    {r},\n"));
        }
        s.push_str(&format!(") -> {returns}:"));
        s
    };

    let mut out = String::from("from codecell import call_tool\n");
    if !imports.names.is_empty() {
        let names: Vec<&str> = imports.names.iter().copied().collect();
        out.push_str(&format!("from typing import {}\n", names.join(", ")));
    }
    out.push_str("\n\n");
    out.push_str(&def);
    out.push_str("\n    \"\"\"");
    push_indented(&mut out, input.description, "    ");
    if !params.is_empty() {
        out.push_str("\n\n    Args:");
        for p in &params {
            out.push_str(&format!("\n        {}", p.ident));
            if !p.notes.is_empty() {
                // The parentheses go through the escaper with the notes, so a quote at the end
                // of a note is not mistaken for the end of the text.
                out.push(' ');
                push_indented(
                    &mut out,
                    &format!("({})", p.notes.join("; ")),
                    "            ",
                );
            }
            out.push(':');
            if !p.description.trim().is_empty() {
                out.push(' ');
                push_indented(&mut out, &p.description, "            ");
            }
        }
    }
    if let Some(desc) = input
        .output_schema
        .and_then(|s| s.get("description"))
        .and_then(Value::as_str)
        .filter(|d| !d.trim().is_empty())
    {
        out.push_str("\n\n    Returns:\n        ");
        push_indented(&mut out, desc, "        ");
    }
    out.push_str("\n    \"\"\"\n");
    out.push_str(&body(input, &params));
    Some(out)
}

/// The function body: keyword arguments when every name is its own identifier and nothing is
/// omitted; otherwise a dict keyed by the original names.
fn body(input: &StubInput<'_>, params: &[Param]) -> String {
    let head = format!(
        "call_tool({}, {}",
        pylit::string(input.category),
        pylit::string(input.tool)
    );
    let simple = params
        .iter()
        .all(|p| p.ident == p.original && !p.omit_when_none);
    if simple {
        let mut call = head.clone();
        for p in params {
            call.push_str(&format!(", {}={}", p.ident, p.ident));
        }
        let line = format!("    return {call})\n");
        if line.len() <= MAX_DEF_LINE + 4 || params.is_empty() {
            return line;
        }
        let mut s = format!(
            "    return call_tool(\n        {},\n        {},\n",
            pylit::string(input.category),
            pylit::string(input.tool)
        );
        for p in params {
            s.push_str(&format!("        {}={},\n", p.ident, p.ident));
        }
        s.push_str("    )\n");
        return s;
    }
    let mut s = String::from("    _kwargs = {\n");
    for p in params.iter().filter(|p| !p.omit_when_none) {
        s.push_str(&format!(
            "        {}: {},\n",
            pylit::string(&p.original),
            p.ident
        ));
    }
    s.push_str("    }\n");
    for p in params.iter().filter(|p| p.omit_when_none) {
        s.push_str(&format!(
            "    if {} is not None:\n        _kwargs[{}] = {}\n",
            p.ident,
            pylit::string(&p.original),
            p.ident
        ));
    }
    s.push_str(&format!("    return {head}, **_kwargs)\n"));
    s
}
