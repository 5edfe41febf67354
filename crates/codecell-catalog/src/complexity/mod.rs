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

mod graph;

use serde_json::Value;

use graph::{Graph, Kind};

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

/// The result of [`analyse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Analysis {
    /// The most schema nodes that apply to one value of an instance.
    pub(crate) expansion: u64,
    /// Instances deeper than this may cost more than `expansion` per value, so are refused.
    pub(crate) depth_limit: Option<usize>,
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

/// Bounds the work `schema` can cause per instance value: the depth past which instances must
/// be refused (for a recursive schema whose cost was bounded only that far), or which limit it
/// exceeds. The same analysis guards catalogs and dynamic-tool schemas (`codecell-manifest`).
pub fn instance_depth_limit(schema: &Value) -> Result<Option<usize>, String> {
    analyse(schema).map(|a| a.depth_limit)
}

/// Bounds the work `schema` can cause per instance value, or says which limit it exceeds.
pub(crate) fn analyse(schema: &Value) -> Result<Analysis, String> {
    let mut g = Graph::of(schema)?;
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
