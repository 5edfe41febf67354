//! Loads a catalog file and optionally calls one tool, printing how long each step took; used to
//! measure hostile catalogs (`/usr/bin/time -v` gives the peak memory).
//!
//! `cargo run --release -p codecell-catalog --example load_catalog -- CATALOG [CATEGORY TOOL ARGS_JSON|@FILE]`

use std::time::Instant;

use codecell_catalog::Catalog;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: load_catalog CATALOG [CATEGORY TOOL ARGS_JSON]");
        std::process::exit(2);
    };
    let start = Instant::now();
    let catalog = Catalog::from_file(path.as_ref());
    println!("load: {:?}", start.elapsed());
    let catalog = match catalog {
        Ok(c) => c,
        Err(e) => {
            println!("refused: {e}");
            return;
        }
    };
    if let [_, category, tool, json] = args.as_slice() {
        // `@FILE` reads the arguments from a file (hostile ones are too long for a command line).
        let text = match json.strip_prefix('@') {
            Some(file) => std::fs::read_to_string(file).expect("ARGS_JSON file is readable"),
            None => json.clone(),
        };
        let value: serde_json::Value = serde_json::from_str(&text).expect("ARGS_JSON is JSON");
        let start = Instant::now();
        let result = catalog.call(category, tool, value).await;
        println!("call: {:?}", start.elapsed());
        match result {
            Ok(v) => println!(
                "ok: {}",
                v.to_string().chars().take(200).collect::<String>()
            ),
            Err(e) => println!(
                "error: {}",
                e.to_string().chars().take(300).collect::<String>()
            ),
        }
    }
}
