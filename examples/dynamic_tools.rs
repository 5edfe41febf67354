//! Dynamic tools end to end: a model-written tool is defined (validated, smoke-tested in a fresh
//! guest, stored), invoked, promoted with approval, and called from a code-mode snippet.
//!
//! `cargo run --example dynamic_tools`

use codecell::{Catalog, CodeMode, DynamicTools, Engine, RegistryOptions, Scope, ToolSpec};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), codecell::Error> {
    let store = std::env::temp_dir().join(format!("codecell-example-{}", std::process::id()));
    let engine = Engine::builder().build()?;
    let tools = DynamicTools::open(engine.clone(), RegistryOptions::new("session-1", &store))?;

    let spec = codecell::canonical::parse_exact(
        &std::fs::read_to_string(codecell_tests::fixture("dynamic/word_frequency.json"))
            .expect("the fixture is readable"),
    )
    .expect("the fixture is JSON");
    let manifest = tools.define(&spec).await?;
    println!("defined {} as {}", manifest.name, manifest.manifest_id);

    let result = tools
        .invoke(
            "word_frequency",
            &json!({"text": "the cat and the hat", "top": 2}),
        )
        .await?;
    println!("invoked: {result}");

    // Sharing it beyond this session needs a human's approval.
    let promoted = tools.promote("word_frequency", Scope::Project, true)?;
    println!("promoted to {} scope", promoted.scope.as_str());

    // The same tool inside code mode, as `tools/text/word_frequency.py`.
    let catalog = Catalog::builder()
        .category("text", "Text tools written by the model.")
        .tool(
            "text",
            ToolSpec::new(
                "word_frequency",
                manifest.description.clone(),
                manifest.input_schema.clone(),
            ),
            tools.handler("word_frequency"),
        )
        .build()?;
    let outcome = CodeMode::new(engine, catalog)
        .execute_code(
            "r = call_tool('text', 'word_frequency', text='a b a c a b', top=1)\nprint(r)",
        )
        .await?;
    println!("from code mode: {}", outcome.stdout.trim_end());
    let _ = std::fs::remove_dir_all(&store);
    Ok(())
}
