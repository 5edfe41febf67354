//! `codecell tools`: the tree and the prompt exactly as the guest and the model will see them.

use crate::failure::Failure;
use crate::out;
use clap::{Args, Subcommand};
use codecell::Catalog;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CatalogArg {
    /// Tool catalog (JSON).
    #[arg(long)]
    tools: PathBuf,
}

#[derive(Subcommand, Debug)]
pub enum CatalogCommand {
    /// List a directory of the tree (default `tools/`).
    Ls {
        /// Directory path.
        path: Option<String>,
        #[command(flatten)]
        catalog: CatalogArg,
    },
    /// Print a file of the tree.
    Read {
        /// File path, e.g. `tools/__index__.md`.
        path: String,
        #[command(flatten)]
        catalog: CatalogArg,
    },
    /// Print the code-mode system prompt for the catalog.
    Prompt {
        #[command(flatten)]
        catalog: CatalogArg,
    },
}

async fn load(arg: &CatalogArg) -> Result<Catalog, Failure> {
    crate::store_args::load_catalog(&arg.tools, None).await
}

pub async fn run(cmd: CatalogCommand) -> Result<ExitCode, Failure> {
    match cmd {
        CatalogCommand::Ls { path, catalog } => {
            let path = path.unwrap_or_else(|| "tools/".to_string());
            let entries = load(&catalog)
                .await?
                .ls(&path)
                .map_err(|e| Failure::input(e.to_string()))?;
            for entry in entries {
                out::line(&entry)?;
            }
        }
        CatalogCommand::Read { path, catalog } => {
            let text = load(&catalog)
                .await?
                .read(&path)
                .map_err(|e| Failure::input(e.to_string()))?;
            out::stdout(&text)?;
        }
        CatalogCommand::Prompt { catalog } => {
            out::line(&codecell::system_prompt_for(&load(&catalog).await?))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
