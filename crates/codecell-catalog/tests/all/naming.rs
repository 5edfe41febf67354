//! Name mapping: identifiers for any name, no collisions, independent of registration order.

use codecell_catalog::naming::{assign_identifiers, is_plain_identifier, map_identifier};
use codecell_catalog::{Catalog, ToolSpec, handler_fn};
use serde_json::json;

#[test]
fn single_names() {
    let cases = [
        ("forecast", "forecast"),
        ("get-weather", "get_weather"),
        ("a.b c", "a_b_c"),
        ("2fa", "_2fa"),
        ("class", "class_"),
        ("None", "None_"),
        ("__init__", "__init___"),
        ("__debug__", "__debug___"),
        ("call_tool", "call_tool_"),
        ("météo", "m_t_o"),
        ("λ", "_"),
        ("match", "match"),
        ("_", "_"),
    ];
    for (name, expected) in cases {
        let got = map_identifier(name, &["call_tool"]);
        assert_eq!(got, expected, "{name}");
        assert!(is_plain_identifier(&got), "{got}");
    }
    assert!(!is_plain_identifier("def") && !is_plain_identifier("") && !is_plain_identifier("1x"));
}

#[test]
fn collisions_get_numbered_suffixes_and_identifiers_keep_their_names() {
    let names = ["a-b", "a_b", "a.b", "a b", "a_b_2"];
    let ids = assign_identifiers(&names, &[]);
    // Valid names keep themselves; the rest are numbered in sorted order of their originals
    // ("a b" < "a-b" < "a.b"), skipping the taken "a_b_2".
    assert_eq!(ids, ["a_b_4", "a_b", "a_b_5", "a_b_3", "a_b_2"]);
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len());
}

#[test]
fn mapping_does_not_depend_on_registration_order() {
    let names = ["x-y", "x.y", "x_y", "if", "if_", "1", "_1"];
    let forward = assign_identifiers(&names, &[]);
    let mut reversed_names = names;
    reversed_names.reverse();
    let mut backward = assign_identifiers(&reversed_names, &[]);
    backward.reverse();
    assert_eq!(forward, backward);
    for id in &forward {
        assert!(is_plain_identifier(id), "{id}");
    }
}

#[test]
fn category_and_tool_paths_use_the_mapping() {
    let schema = json!({"type": "object"});
    let c = Catalog::builder()
        .tool(
            "weather-eu",
            ToolSpec::new("get forecast", "", schema.clone()),
            handler_fn(Ok),
        )
        .tool(
            "weather_eu",
            ToolSpec::new("import", "", schema.clone()),
            handler_fn(Ok),
        )
        .tool("Any", ToolSpec::new("Literal", "", schema), handler_fn(Ok))
        .build()
        .unwrap();
    assert_eq!(
        c.ls("tools/").unwrap(),
        ["Any_/", "__index__.md", "weather_eu/", "weather_eu_2/"]
    );
    assert_eq!(
        c.ls("tools/weather_eu_2/").unwrap(),
        ["__index__.md", "get_forecast.py"]
    );
    assert_eq!(
        c.ls("tools/weather_eu/").unwrap(),
        ["__index__.md", "import_.py"]
    );
    assert_eq!(
        c.ls("tools/Any_/").unwrap(),
        ["Literal_.py", "__index__.md"]
    );
}
