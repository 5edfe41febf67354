//! The virtual tree: listings, files, and every refusal of a path.

use codecell_catalog::{
    Catalog, MAX_PATH_BYTES, MAX_PATH_SEGMENTS, PathError, ToolSpec, handler_fn,
};
use serde_json::json;

fn catalog() -> Catalog {
    let schema =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    Catalog::builder()
        .category("weather", "Forecasts | and observations\nsecond line")
        .tool(
            "weather",
            ToolSpec::new(
                "forecast",
                "Forecast for a city.\nMore detail.",
                schema.clone(),
            ),
            handler_fn(Ok),
        )
        .tool(
            "weather",
            ToolSpec::new("current-obs", "Current observation.", schema.clone()),
            handler_fn(Ok),
        )
        .category("text-tools", "Text utilities")
        .tool(
            "text-tools",
            ToolSpec::new("count", "Count words.", schema),
            handler_fn(Ok),
        )
        .build()
        .unwrap()
}

#[test]
fn root_and_tools_listings() {
    let c = catalog();
    for root in ["", ".", "/", "./", "//"] {
        assert_eq!(c.ls(root).unwrap(), vec!["tools/"], "ls({root:?})");
    }
    let expected = vec!["__index__.md", "text_tools/", "weather/"];
    for p in [
        "tools",
        "tools/",
        "/tools",
        "/tools/",
        "./tools//",
        "tools/.",
    ] {
        assert_eq!(c.ls(p).unwrap(), expected, "ls({p:?})");
    }
    assert_eq!(
        c.ls("tools/weather/").unwrap(),
        vec!["__index__.md", "current_obs.py", "forecast.py"]
    );
    assert_eq!(
        c.ls("tools/text_tools").unwrap(),
        vec!["__index__.md", "count.py"]
    );
}

#[test]
fn index_files() {
    let c = catalog();
    let root = c.read("tools/__index__.md").unwrap();
    assert!(
        root.contains("| `weather/` | Forecasts \\| and observations | 2 |"),
        "{root}"
    );
    assert!(
        root.contains("| `text_tools/` (name \"text-tools\") | Text utilities | 1 |"),
        "{root}"
    );
    assert!(!root.contains("second line"));
    let weather = c.read("/tools/weather/__index__.md").unwrap();
    assert!(
        weather.contains("| `forecast.py` | Forecast for a city. |"),
        "{weather}"
    );
    assert!(
        weather.contains("| `current_obs.py` (name \"current-obs\") | Current observation. |"),
        "{weather}"
    );
    assert!(!weather.contains("More detail."));
    assert!(
        c.read("tools/weather/forecast.py")
            .unwrap()
            .starts_with("from codecell import call_tool\n")
    );
    // Same file by every spelling of its path.
    assert_eq!(
        c.read("./tools//weather/./forecast.py").unwrap(),
        c.read("/tools/weather/forecast.py").unwrap()
    );
}

#[test]
fn files_and_directories_are_not_confused() {
    let c = catalog();
    assert!(matches!(
        c.ls("tools/__index__.md"),
        Err(PathError::NotADirectory { .. })
    ));
    assert!(matches!(
        c.read("tools/weather"),
        Err(PathError::IsADirectory { .. })
    ));
    assert!(matches!(
        c.read("tools/"),
        Err(PathError::IsADirectory { .. })
    ));
    let e = c.read("tools/weather/nope.py").unwrap_err();
    assert!(matches!(e, PathError::NotFound { .. }));
    assert!(e.to_string().contains("ls(\"tools/weather/\")"), "{e}");
    let e = c.ls("tools/nope/deeper").unwrap_err();
    assert!(e.to_string().contains("ls(\"tools/\")"), "{e}");
    let e = c.read("etc/passwd").unwrap_err();
    assert!(e.to_string().contains("tools/"), "{e}");
}

#[test]
fn refusals() {
    let c = catalog();
    type Check = fn(&PathError) -> bool;
    let cases: Vec<(String, Check)> = vec![
        ("..".into(), |e| {
            matches!(e, PathError::ParentSegment { .. })
        }),
        ("tools/..".into(), |e| {
            matches!(e, PathError::ParentSegment { .. })
        }),
        ("tools/../../etc/passwd".into(), |e| {
            matches!(e, PathError::ParentSegment { .. })
        }),
        ("tools/weather/../weather/forecast.py".into(), |e| {
            matches!(e, PathError::ParentSegment { .. })
        }),
        ("/tools/../etc".into(), |e| {
            matches!(e, PathError::ParentSegment { .. })
        }),
        ("tools/\0/x".into(), |e| matches!(e, PathError::Nul)),
        ("tools/weather/forecast.py\0.md".into(), |e| {
            matches!(e, PathError::Nul)
        }),
        ("tools\\weather".into(), |e| {
            matches!(e, PathError::Backslash { .. })
        }),
        ("..\\..\\windows".into(), |e| {
            matches!(e, PathError::Backslash { .. })
        }),
        ("tools/\n".into(), |e| {
            matches!(e, PathError::ControlChar { .. })
        }),
        ("tools/\u{1b}[2J".into(), |e| {
            matches!(e, PathError::ControlChar { .. })
        }),
        ("/etc/passwd".into(), |e| {
            matches!(e, PathError::OutsideTree { .. })
        }),
        ("/".to_string() + "proc/self/environ", |e| {
            matches!(e, PathError::OutsideTree { .. })
        }),
        ("//etc".into(), |e| {
            matches!(e, PathError::OutsideTree { .. })
        }),
        ("tools/".to_string() + &"a".repeat(MAX_PATH_BYTES), |e| {
            matches!(e, PathError::TooLong { .. })
        }),
        (vec!["tools"; MAX_PATH_SEGMENTS + 1].join("/"), |e| {
            matches!(e, PathError::TooDeep { .. })
        }),
        (vec!["."; MAX_PATH_SEGMENTS + 1].join("/"), |e| {
            matches!(e, PathError::TooDeep { .. })
        }),
    ];
    for (path, check) in &cases {
        let e = c.read(path).unwrap_err();
        assert!(check(&e), "read({path:?}) gave {e:?}");
        let e = c.ls(path).unwrap_err();
        assert!(check(&e), "ls({path:?}) gave {e:?}");
        assert!(!e.to_string().is_empty());
    }
    // Exactly at the limits is accepted (and simply not found).
    let at_limit = "tools/".to_string() + &"a".repeat(MAX_PATH_BYTES - 6);
    assert!(matches!(c.read(&at_limit), Err(PathError::NotFound { .. })));
    let deep = vec!["tools"; MAX_PATH_SEGMENTS].join("/");
    assert!(matches!(c.read(&deep), Err(PathError::NotFound { .. })));
}

#[test]
fn refusal_messages_are_clear_and_bounded() {
    let c = catalog();
    let e = c.read("tools/../../etc/passwd").unwrap_err().to_string();
    assert!(e.contains("\"..\"") && e.contains("tools/"), "{e}");
    let e = c.read("/etc/passwd").unwrap_err().to_string();
    assert!(e.contains("outside the tree"), "{e}");
    let e = c.read(&"x".repeat(5000)).unwrap_err().to_string();
    assert!(e.contains("5000") && e.len() < 200, "{e}");
    let long_bad = format!("/{}/..", "y".repeat(900));
    let e = c.read(&long_bad).unwrap_err().to_string();
    assert!(e.len() < 300, "echo of a refused path is shortened: {e}");
}

#[test]
fn empty_catalog_has_a_tree() {
    let c = Catalog::builder().build().unwrap();
    assert_eq!(c.ls("tools/").unwrap(), vec!["__index__.md"]);
    assert!(
        c.read("tools/__index__.md")
            .unwrap()
            .contains("| Category |")
    );
}
