//! Code mode over tools that are Rust closures: the model's Python calls them through the tree.
//!
//! `cargo run --example code_mode_closures [cpython|rustpython]`

use codecell::{
    CodeMode, Engine, GuestKind, HandlerError, ToolDefinition, ToolSpec, async_handler_fn,
    code_mode_from_tools, handler_fn,
};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), codecell::Error> {
    let guest: GuestKind = std::env::args()
        .nth(1)
        .map_or(Ok(GuestKind::CPython), |g| g.parse())
        .unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        });
    let engine = Engine::builder().guest(guest).build()?;
    let tools = vec![
        ToolDefinition {
            category: "weather".into(),
            spec: ToolSpec::new(
                "forecast",
                "Forecast for a city: temperature in °C and a one-word sky.",
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            ),
            handler: handler_fn(|args| {
                let city = args["city"].as_str().unwrap_or_default();
                Ok(json!({"city": city, "celsius": 11 + city.len() as i64, "sky": "cloudy"}))
            }),
        },
        ToolDefinition {
            category: "weather".into(),
            spec: ToolSpec::new(
                "alerts",
                "Active weather alerts for a city (may fail).",
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            ),
            handler: async_handler_fn(|args| async move {
                match args["city"].as_str() {
                    Some("Atlantis") => Err(HandlerError::new("no such city")),
                    _ => Ok(json!([])),
                }
            }),
        },
    ];
    let mode = code_mode_from_tools(engine, tools, |_| "Forecasts and alerts.".into())?;
    // What the model is told, then a snippet such a model would write.
    println!("{}", mode.system_prompt());
    let code = r#"
from tools.weather import forecast, alerts
for city in ["Oslo", "Lima", "Atlantis"]:
    f = forecast(city)
    try:
        warned = alerts(city)
    except ToolError as e:
        warned = f"unknown ({e})"
    print(f"{city}: {f['celsius']} °C, {f['sky']}, alerts: {warned}")
"#;
    let outcome = mode.execute_code(code).await?;
    println!("{}", CodeMode::render_for_model(&outcome));
    Ok(())
}
