//! `codecell validate`: the dynamic-tool source policy on a file.

use crate::exit::{Failure, GUEST_FAILED};
use clap::Args;
use codecell::policy;
use serde_json::json;
use std::io::Read;
use std::process::ExitCode;

/// Largest file read; the policy itself refuses sources over 100,000 characters.
const MAX_FILE_BYTES: u64 = 4 << 20;

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// The Python source file, or `-` for stdin.
    file: String,
    /// Print `{"ok": true, "imports": [...]}` or `{"ok": false, "rule", "line", "column", "message"}`.
    #[arg(long)]
    json: bool,
}

pub fn run(args: ValidateArgs) -> Result<ExitCode, Failure> {
    let source = read_source(&args.file)?;
    let verdict = policy::validate_dynamic_source(&source);
    match (&verdict, args.json) {
        (Ok(v), true) => println!("{}", json!({"ok": true, "imports": v.imports})),
        (Ok(v), false) => println!("ok: imports [{}]", v.imports.join(", ")),
        (Err(e), true) => println!(
            "{}",
            json!({"ok": false, "rule": e.rule.as_str(), "line": e.line, "column": e.column, "message": e.message})
        ),
        (Err(e), false) => println!(
            "{}:{}:{}: {}: {}",
            args.file,
            e.line,
            e.column,
            e.rule.as_str(),
            e.message
        ),
    }
    Ok(if verdict.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(GUEST_FAILED)
    })
}

fn read_source(file: &str) -> Result<String, Failure> {
    let mut bytes = Vec::new();
    let result = if file == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
    } else {
        std::fs::File::open(file).and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
    };
    result.map_err(|e| Failure::input(format!("cannot read {file}: {e}")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Failure::input(format!(
            "{file} is larger than {MAX_FILE_BYTES} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|_| Failure::input(format!("{file} is not UTF-8 text")))
}
