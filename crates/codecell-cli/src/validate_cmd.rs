//! `codecell validate`: the dynamic-tool source policy on a file.

use crate::failure::{Failure, GUEST_FAILED};
use crate::input::read_text;
use crate::out;
use clap::Args;
use serde_json::json;
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
    /// After the seed's rules, also refuse what they let through: a banned call's name used at
    /// all, even uncalled (`banned_name`), and a keyword-only parameter of `execute` without a
    /// default (`execute_required_keyword`). `codecell tool define` applies the seed's rules.
    #[arg(long)]
    strict: bool,
}

pub fn run(args: ValidateArgs) -> Result<ExitCode, Failure> {
    let source = read_text(&args.file, MAX_FILE_BYTES)?;
    let strictness = if args.strict {
        codecell::Strictness::Strict
    } else {
        codecell::Strictness::Seed
    };
    let verdict = codecell::validate_with(&source, &codecell::PolicyOptions { strictness });
    let text = match (&verdict, args.json) {
        (Ok(v), true) => json!({"ok": true, "imports": v.imports}).to_string(),
        (Ok(v), false) => format!("ok: imports [{}]", v.imports.join(", ")),
        (Err(e), true) => json!({"ok": false, "rule": e.rule.as_str(), "line": e.line, "column": e.column, "message": e.message}).to_string(),
        (Err(e), false) => format!(
            "{}:{}:{}: {}: {}",
            args.file,
            e.line,
            e.column,
            e.rule.as_str(),
            out::guest_stdout(&e.message)
        ),
    };
    out::line(&text)?;
    Ok(if verdict.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(GUEST_FAILED)
    })
}
