//! How much work one schema can make a validator do, worked out before the schema is compiled.
//!
//! Byte size and nesting depth do not bound validation: a 10 KB schema whose `$defs` each hold
//! `anyOf` branches pointing at the next `$def` is checked against `40^12` schema nodes for one
//! wrong value, and a recursive `$def` with two branches that both descend into the same array
//! costs `2^depth` for an array nested `depth` deep. So every schema is read as a graph (subschemas
//! are nodes; combinators, `not`, `if`/`then`/`else` and `$ref`s are edges that stay on the same
//! value; `properties`, `items` and friends are edges that descend into a child of it) and the
//! number of schema nodes that can apply to one value of an instance is counted, following every
//! `$ref` and every branch each time it is reached, for values at every depth up to
//! [`MAX_INSTANCE_DEPTH`]. A schema over [`MAX_SCHEMA_EXPANSION`] is refused at the door, so
//! checking an instance costs at most its number of values times that bound.
//!
//! Children of one value are told apart by what can reach them (the property `a`, any property,
//! array index `i`, any item, a property name), so the recursive shapes real schemas use (a JSON
//! value type with an `array` and an `object` branch, a binary tree with `left` and `right`)
//! count once per level, not twice.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Most schema nodes that can apply to one value of an instance (each `$ref` target and each
/// combinator branch counted every time it is reached). Real schemas need a handful (every
/// schema in this repository's fixtures needs at most 4): properties and items split the work.
pub const MAX_SCHEMA_EXPANSION: u64 = 1_000;
/// Most branches in one `anyOf`, `oneOf` or `allOf`.
pub const MAX_SCHEMA_BRANCHES: usize = 128;
/// Deepest instance the count covers; a recursive schema whose cost still grows at this depth
/// refuses instances nested deeper than this (serde_json's own parser stops at 128).
pub const MAX_INSTANCE_DEPTH: usize = 128;
/// Steps the analysis itself may take; a schema needing more is refused rather than analysed
/// slowly (every real schema needs a tiny fraction of it).
const ANALYSIS_STEPS: u64 = 4_000_000;

/// What can reach a child of a value: the key of a descending edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
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
struct Node {
    /// Subschemas applied to the same value.
    same: Vec<usize>,
    /// Subschemas applied to a child of the value.
    descend: Vec<(Kind, usize)>,
}

/// The result of [`analyse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Analysis {
    /// The most schema nodes that apply to one value of an instance.
    pub(crate) expansion: u64,
    /// Instances deeper than this may cost more than `expansion` per value, so are refused.
    pub(crate) depth_limit: Option<usize>,
}

/// Every subschema reachable from the root, with `$ref`s resolved to the nodes they name.
struct Graph<'v> {
    root: &'v Value,
    nodes: Vec<Node>,
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
    fn step(&mut self, n: u64) -> Result<(), String> {
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
    fn same_value_order(&mut self) -> Result<Vec<usize>, String> {
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

/// The most that `kinds` (what reaches the children of one value, summed) can apply to one
/// child: a property gets its own `properties` entry plus the any-property edges, an item its
/// index's entry plus the any-item edges.
fn worst_child(kinds: &[(Kind, u64)]) -> u64 {
    let mut any_prop = 0u64;
    let mut any_item = 0u64;
    let mut key = 0u64;
    let mut prop = 0u64;
    let mut index = 0u64;
    for &(kind, n) in kinds {
        match kind {
            Kind::AnyProp => any_prop = n,
            Kind::AnyItem => any_item = n,
            Kind::Key => key = n,
            Kind::Prop(_) => prop = prop.max(n),
            Kind::Index(_) => index = index.max(n),
        }
    }
    (any_prop.saturating_add(prop))
        .max(any_item.saturating_add(index))
        .max(key)
}

/// Adds `n` at `kind` in a sorted sparse vector.
fn add(kinds: &mut Vec<(Kind, u64)>, kind: Kind, n: u64) {
    match kinds.binary_search_by(|(k, _)| k.cmp(&kind)) {
        Ok(i) => kinds[i].1 = kinds[i].1.saturating_add(n),
        Err(i) => kinds.insert(i, (kind, n)),
    }
}

/// Bounds the work `schema` can cause per instance value, or says which limit it exceeds.
pub(crate) fn analyse(schema: &Value) -> Result<Analysis, String> {
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
    let order = g.same_value_order()?;
    let n = g.nodes.len();
    let over = |d: usize, cost: u64| {
        let at = if d == 0 {
            "the top-level value".to_string()
        } else {
            format!("a value {d} level{} down", if d == 1 { "" } else { "s" })
        };
        Err(format!(
            "is too complex: counting every $ref target and anyOf/oneOf/allOf branch each time it is reached, {at} would be checked against {} schema nodes; the limit is {MAX_SCHEMA_EXPANSION}",
            if cost == u64::MAX {
                "more than 2^64".to_string()
            } else {
                cost.to_string()
            }
        ))
    };

    // Depth 0: the nodes that apply to the value itself — each node plus its same-value closure.
    let mut cost = vec![0u64; n];
    for &s in &order {
        let mut c = 1u64;
        for &t in &g.nodes[s].same {
            c = c.saturating_add(cost[t]);
        }
        cost[s] = c;
    }
    g.step(n as u64)?;
    let mut worst = cost[0];
    if worst > MAX_SCHEMA_EXPANSION {
        return over(0, worst);
    }
    // Depth d: what applies to a child at depth d of a value the node applies to, worst child first.
    let mut kinds: Vec<Vec<(Kind, u64)>> = vec![Vec::new(); n];
    let mut next = vec![0u64; n];
    // The last levels' costs: a level equal to one of them starts a repeating cycle.
    const PERIODS: usize = 4;
    let mut history: std::collections::VecDeque<Vec<u64>> = std::collections::VecDeque::new();
    history.push_back(cost.clone());
    for d in 1..=MAX_INSTANCE_DEPTH {
        for &s in &order {
            let mut k: Vec<(Kind, u64)> = Vec::new();
            let mut steps = 1u64;
            for &t in &g.nodes[s].same {
                for &(kind, c) in &kinds[t] {
                    add(&mut k, kind, c);
                }
                steps += kinds[t].len() as u64 + 1;
            }
            for &(kind, t) in &g.nodes[s].descend {
                if cost[t] > 0 {
                    add(&mut k, kind, cost[t]);
                }
            }
            steps += g.nodes[s].descend.len() as u64;
            g.step(steps)?;
            next[s] = worst_child(&k);
            kinds[s] = k;
        }
        if next[0] > MAX_SCHEMA_EXPANSION {
            return over(d, next[0]);
        }
        worst = worst.max(next[0]);
        if next.iter().all(|&c| c == 0) {
            // Nothing reaches this deep: every deeper value costs nothing.
            return Ok(Analysis {
                expansion: worst,
                depth_limit: None,
            });
        }
        if history.contains(&next) {
            // A cycle (a fixed point, or object/array levels alternating as in a tree with a
            // `children` array): every deeper level repeats levels already counted.
            return Ok(Analysis {
                expansion: worst,
                depth_limit: None,
            });
        }
        if history.len() == PERIODS {
            history.pop_front();
        }
        history.push_back(next.clone());
        cost = std::mem::take(&mut next);
        next = vec![0u64; n];
    }
    // Still changing at the deepest level counted: deeper instances are not covered.
    Ok(Analysis {
        expansion: worst,
        depth_limit: Some(MAX_INSTANCE_DEPTH),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn expansion(schema: Value) -> Result<Analysis, String> {
        analyse(&schema)
    }

    #[test]
    fn plain_schemas_count_their_nodes() {
        let a = expansion(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
        assert_eq!(
            a,
            Ok(Analysis {
                expansion: 1,
                depth_limit: None
            })
        );
        let a = expansion(json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})).unwrap();
        assert_eq!(a.expansion, 3);
    }

    #[test]
    fn refs_are_counted_each_time_they_are_reached() {
        let a = expansion(json!({
            "$defs": {"u": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "properties": {"x": {"allOf": [{"$ref": "#/$defs/u"}, {"$ref": "#/$defs/u"}]}}
        }))
        .unwrap();
        // x, two refs, two visits of u with two branches each.
        assert_eq!(a.expansion, 1 + 2 * (1 + 3));
    }

    #[test]
    fn a_json_value_type_and_a_binary_tree_are_linear() {
        let json_type = json!({"$defs": {"v": {"anyOf": [
            {"type": "string"},
            {"type": "array", "items": {"$ref": "#/$defs/v"}},
            {"type": "object", "additionalProperties": {"$ref": "#/$defs/v"}}
        ]}}, "type": "object", "properties": {"x": {"$ref": "#/$defs/v"}}});
        let a = expansion(json_type).unwrap();
        assert!(a.expansion < 20, "{a:?}");
        let tree = json!({"$defs": {"n": {"type": "object", "properties": {
            "left": {"$ref": "#/$defs/n"}, "right": {"$ref": "#/$defs/n"}, "v": {"type": "integer"}
        }}}, "$ref": "#/$defs/n"});
        let a = expansion(tree).unwrap();
        assert!(a.expansion < 10, "{a:?}");
    }

    #[test]
    fn branching_recursion_on_one_child_is_refused() {
        let e = expansion(json!({"$defs": {"t": {"anyOf": [
            {"type": "array", "items": {"$ref": "#/$defs/t"}},
            {"type": "array", "items": {"$ref": "#/$defs/t"}},
            {"type": "string"}
        ]}}, "properties": {"x": {"$ref": "#/$defs/t"}}}))
        .unwrap_err();
        assert!(e.contains("the limit is 1000"), "{e}");
    }

    #[test]
    fn alternating_levels_are_a_cycle_too() {
        // Object, array, object, …: the costs alternate, which is as bounded as a fixed point.
        let tree = json!({"$defs": {"Tree": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
        }}}, "$ref": "#/$defs/Tree"});
        assert_eq!(expansion(tree).unwrap().depth_limit, None);
    }

    #[test]
    fn a_same_value_cycle_is_refused() {
        let e = expansion(json!({"anyOf": [{"$ref": "#"}]})).unwrap_err();
        assert!(e.contains("never descends"), "{e}");
        let e = expansion(json!({"$defs": {
            "a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}
        }, "$ref": "#/$defs/a"}))
        .unwrap_err();
        assert!(e.contains("never descends"), "{e}");
    }

    #[test]
    fn polynomial_recursion_bounds_instance_depth() {
        // Each level adds one: cost grows without a fixed point, so deep instances are refused.
        let a = expansion(json!({"$defs": {"t": {"anyOf": [
            {"type": "array", "items": {"$ref": "#/$defs/t"}},
            {"type": "array", "items": {"$ref": "#/$defs/s"}}
        ]}, "s": {"type": "array", "items": {"$ref": "#/$defs/s"}}}, "$ref": "#/$defs/t"}))
        .unwrap();
        assert_eq!(a.depth_limit, Some(MAX_INSTANCE_DEPTH));
    }

    #[test]
    fn references_must_be_local_and_resolve() {
        let e = expansion(json!({"$ref": "https://example.com/s.json"})).unwrap_err();
        assert!(e.contains("not a local reference"), "{e}");
        let e = expansion(json!({"$ref": "#/$defs/missing"})).unwrap_err();
        assert!(e.contains("points at nothing"), "{e}");
        let a = expansion(json!({"$defs": {"a": {"$anchor": "A", "type": "string"}},
            "properties": {"x": {"$ref": "#A"}, "y": {"$ref": "#/$defs/a%20b"}, "z": {"$ref": "#/$defs/a"}}}));
        assert!(a.unwrap_err().contains("a%20b"));
    }

    #[test]
    fn wide_combinators_are_refused() {
        let branches: Vec<Value> = (0..=MAX_SCHEMA_BRANCHES)
            .map(|i| json!({"const": i}))
            .collect();
        let e = expansion(json!({"oneOf": branches})).unwrap_err();
        assert!(e.contains("the limit is 128"), "{e}");
    }
}
