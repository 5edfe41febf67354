//! Code mode over a catalog file whose tools are programs (`fixtures/demo/catalog.json`): each
//! call runs the program with JSON on stdin and reads its JSON answer from stdout.
//!
//! `cargo run --example command_catalog [SNIPPET.py]` (default: `fixtures/snippets/demo.py`)

use codecell::{Catalog, CodeMode, Engine};

#[tokio::main]
async fn main() -> Result<(), codecell::Error> {
    let snippet = std::env::args()
        .nth(1)
        .map_or_else(|| codecell_tests::fixture("snippets/demo.py"), Into::into);
    let code = std::fs::read_to_string(&snippet).unwrap_or_else(|e| {
        eprintln!("cannot read {}: {e}", snippet.display());
        std::process::exit(2)
    });
    let catalog = Catalog::from_file(&codecell_tests::fixture("demo/catalog.json"))?;
    let mode = CodeMode::new(Engine::builder().build()?, catalog);
    let outcome = mode.execute_code(&code).await?;
    print!("{}", outcome.stdout);
    for call in &outcome.tool_calls {
        eprintln!(
            "called {}/{} ({} µs, ok: {})",
            call.category, call.name, call.duration_us, call.ok
        );
    }
    eprintln!("status: {}", outcome.status().as_str());
    Ok(())
}
