//! The schema as a graph: subschemas are nodes, keywords are edges that stay on one value or
//! descend into a child of it, and `$ref`s are resolved to the nodes they name.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{ANALYSIS_STEPS, MAX_SCHEMA_BRANCHES};

/// What can reach a child of a value: the key of a descending edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    /// `properties[name]`, by interned name.
    Prop(u32),
    /// `patternProperties`, `additionalProperties`, `unevaluatedProperties`: any property.
    AnyProp,
    /// `prefixItems[i]` (or a draft-7 `items` array).
    Index(u32),
    /// `items`, `additionalItems`, `unevaluatedItems`, `contains`: any item.
    AnyItem,
    /// `propertyNames`: the keys themselves.
    Key,
}

#[derive(Default)]
pub(super) struct Node {
    /// Subschemas applied to the same value.
    pub(super) same: Vec<usize>,
    /// Subschemas applied to a child of the value.
    pub(super) descend: Vec<(Kind, usize)>,
}

/// Every subschema reachable from the root, with `$ref`s resolved to the nodes they name.
pub(super) struct Graph<'v> {
    root: &'v Value,
    pub(super) nodes: Vec<Node>,
    ids: HashMap<*const Value, usize>,
    names: HashMap<&'v str, u32>,
    anchors: HashMap<&'v str, Vec<&'v Value>>,
    dynamic_anchors: HashMap<&'v str, Vec<&'v Value>>,
    recursive_anchors: Vec<&'v Value>,
    root_id: Option<&'v str>,
    steps: u64,
}

/// Decodes `%XX` escapes of a URI fragment (a JSON pointer in a `$ref` may use them).
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl<'v> Graph<'v> {
    /// The graph of `schema`: anchors found, every reachable subschema a node.
    pub(super) fn of(schema: &'v Value) -> Result<Graph<'v>, String> {
        let root_id = schema.get("$id").and_then(Value::as_str);
        let mut g = Graph {
            root: schema,
            nodes: Vec::new(),
            ids: HashMap::new(),
            names: HashMap::new(),
            anchors: HashMap::new(),
            dynamic_anchors: HashMap::new(),
            recursive_anchors: Vec::new(),
            root_id: root_id.map(|id| id.split_once('#').map_or(id, |(base, _)| base)),
            steps: 0,
        };
        g.collect_anchors()?;
        g.build()?;
        Ok(g)
    }

    pub(super) fn step(&mut self, n: u64) -> Result<(), String> {
        self.steps = self.steps.saturating_add(n);
        if self.steps > ANALYSIS_STEPS {
            return Err(format!(
                "is too complex to analyse: its $ref/anyOf/oneOf/allOf structure needs more than {ANALYSIS_STEPS} steps to bound"
            ));
        }
        Ok(())
    }

    /// Finds anchors anywhere in the document (an anchor may sit in `$defs` or deeper).
    fn collect_anchors(&mut self) -> Result<(), String> {
        let mut stack = vec![self.root];
        while let Some(v) = stack.pop() {
            self.step(1)?;
            match v {
                Value::Object(map) => {
                    if let Some(Value::String(a)) = map.get("$anchor") {
                        self.anchors.entry(a).or_default().push(v);
                    }
                    // Drafts 4 to 7 name anchors with a plain-name fragment `$id`/`id`.
                    for key in ["$id", "id"] {
                        if let Some(a) = map.get(key).and_then(Value::as_str)
                            && let Some(name) = a.strip_prefix('#')
                        {
                            self.anchors.entry(name).or_default().push(v);
                        }
                    }
                    if let Some(Value::String(a)) = map.get("$dynamicAnchor") {
                        self.dynamic_anchors.entry(a).or_default().push(v);
                    }
                    if map.get("$recursiveAnchor") == Some(&Value::Bool(true)) {
                        self.recursive_anchors.push(v);
                    }
                    stack.extend(map.values());
                }
                Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
        Ok(())
    }

    /// The subschemas a reference can mean (a dynamic one can mean several; all are counted).
    fn resolve(&self, keyword: &str, reference: &str) -> Result<Vec<&'v Value>, String> {
        let shown = crate::error::shorten(reference, 80);
        let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        if !base.is_empty() && Some(base) != self.root_id {
            return Err(format!(
                "has {keyword} {shown:?}, which is not a local reference; only references into the schema itself (\"#/$defs/...\", \"#anchor\") are allowed"
            ));
        }
        let mut targets = Vec::new();
        if keyword == "$recursiveRef" {
            targets.push(self.root);
            targets.extend(self.recursive_anchors.iter().copied());
            return Ok(targets);
        }
        if fragment.is_empty() {
            targets.push(self.root);
        } else if fragment.starts_with('/') {
            let pointer = percent_decode(fragment)
                .ok_or_else(|| format!("has {keyword} {shown:?}, which is not a valid pointer"))?;
            targets.extend(self.root.pointer(&pointer));
        } else {
            if let Some(found) = self.anchors.get(fragment) {
                targets.extend(found.iter().copied());
            }
            if keyword == "$dynamicRef"
                && let Some(found) = self.dynamic_anchors.get(fragment)
            {
                targets.extend(found.iter().copied());
            }
        }
        if targets.is_empty() {
            return Err(format!(
                "has {keyword} {shown:?}, which points at nothing in the schema"
            ));
        }
        Ok(targets)
    }

    fn intern(&mut self, name: &'v str) -> u32 {
        let next = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        *self.names.entry(name).or_insert(next)
    }

    /// The node of `v`, queued for `build` when new.
    fn id(&mut self, v: &'v Value, queue: &mut Vec<&'v Value>) -> usize {
        let key: *const Value = v;
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.nodes.len();
        self.nodes.push(Node::default());
        self.ids.insert(key, id);
        queue.push(v);
        id
    }

    /// Builds the node of every subschema reachable from the root.
    fn build(&mut self) -> Result<(), String> {
        let mut queue = Vec::new();
        self.id(self.root, &mut queue);
        while let Some(v) = queue.pop() {
            let id = self.ids[&(v as *const Value)];
            let Value::Object(map) = v else { continue };
            let mut node = Node::default();
            self.edges(map, &mut node, &mut queue)?;
            self.step((node.same.len() + node.descend.len()) as u64 + 1)?;
            self.nodes[id] = node;
        }
        Ok(())
    }

    fn edges(
        &mut self,
        map: &'v Map<String, Value>,
        node: &mut Node,
        queue: &mut Vec<&'v Value>,
    ) -> Result<(), String> {
        let is_schema = |v: &Value| v.is_object() || v.is_boolean();
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(key) {
                if branches.len() > MAX_SCHEMA_BRANCHES {
                    return Err(format!(
                        "has an {key} with {} branches; the limit is {MAX_SCHEMA_BRANCHES}",
                        branches.len()
                    ));
                }
                for b in branches.iter().filter(|b| is_schema(b)) {
                    node.same.push(self.id(b, queue));
                }
            }
        }
        for key in ["not", "if", "then", "else"] {
            if let Some(s) = map.get(key).filter(|s| is_schema(s)) {
                node.same.push(self.id(s, queue));
            }
        }
        for key in ["dependentSchemas", "dependencies"] {
            if let Some(Value::Object(deps)) = map.get(key) {
                for s in deps.values().filter(|s| is_schema(s)) {
                    node.same.push(self.id(s, queue));
                }
            }
        }
        for key in ["$ref", "$dynamicRef", "$recursiveRef"] {
            if let Some(Value::String(reference)) = map.get(key) {
                for target in self.resolve(key, reference)? {
                    node.same.push(self.id(target, queue));
                }
            }
        }
        if let Some(Value::Object(props)) = map.get("properties") {
            for (name, s) in props.iter().filter(|(_, s)| is_schema(s)) {
                let kind = Kind::Prop(self.intern(name));
                node.descend.push((kind, self.id(s, queue)));
            }
        }
        if let Some(Value::Object(patterns)) = map.get("patternProperties") {
            for s in patterns.values().filter(|s| is_schema(s)) {
                node.descend.push((Kind::AnyProp, self.id(s, queue)));
            }
        }
        let single = [
            ("additionalProperties", Kind::AnyProp),
            ("unevaluatedProperties", Kind::AnyProp),
            ("propertyNames", Kind::Key),
            ("items", Kind::AnyItem),
            ("additionalItems", Kind::AnyItem),
            ("unevaluatedItems", Kind::AnyItem),
            ("contains", Kind::AnyItem),
        ];
        for (key, kind) in single {
            if let Some(s) = map.get(key).filter(|s| is_schema(s)) {
                node.descend.push((kind, self.id(s, queue)));
            }
        }
        for key in ["prefixItems", "items"] {
            if let Some(Value::Array(tuple)) = map.get(key) {
                for (i, s) in tuple.iter().enumerate().filter(|(_, s)| is_schema(s)) {
                    let kind = Kind::Index(u32::try_from(i).unwrap_or(u32::MAX));
                    node.descend.push((kind, self.id(s, queue)));
                }
            }
        }
        Ok(())
    }

    /// Nodes ordered so that every same-value child comes before its parent; `Err` on a cycle
    /// of same-value edges (a `$ref` loop that never descends would recurse forever).
    pub(super) fn same_value_order(&mut self) -> Result<Vec<usize>, String> {
        const NEW: u8 = 0;
        const OPEN: u8 = 1;
        const DONE: u8 = 2;
        let n = self.nodes.len();
        let mut state = vec![NEW; n];
        let mut order = Vec::with_capacity(n);
        for start in 0..n {
            if state[start] != NEW {
                continue;
            }
            // Iterative, so a long chain of `$ref`s cannot overflow the stack.
            let mut stack = vec![(start, 0usize)];
            state[start] = OPEN;
            while let Some((s, next)) = stack.pop() {
                if let Some(&t) = self.nodes[s].same.get(next) {
                    stack.push((s, next + 1));
                    match state[t] {
                        NEW => {
                            state[t] = OPEN;
                            stack.push((t, 0));
                        }
                        OPEN => {
                            return Err(
                                "has a $ref cycle that never descends into a property or item, so checking a value against it would never end".to_string(),
                            );
                        }
                        _ => {}
                    }
                } else {
                    state[s] = DONE;
                    order.push(s);
                }
            }
            self.step(1)?;
        }
        self.step(n as u64)?;
        Ok(order)
    }
}
