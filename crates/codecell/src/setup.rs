//! Builds code mode from a plain list of tools and handlers (an agent's existing tools).

use crate::code_mode::CodeMode;
use crate::error::Error;
use codecell_catalog::{Catalog, Handler, ToolSpec};
use codecell_engine::Engine;
use std::sync::Arc;

/// A tool an agent already has: where it goes in the tree, its spec and the handler doing the work.
pub struct ToolDefinition {
    /// Category (directory) name in the tree.
    pub category: String,
    /// Name, description and schemas.
    pub spec: ToolSpec,
    /// The real implementation.
    pub handler: Arc<dyn Handler>,
}

/// Groups `tools` by category into a catalog and returns code mode over it.
///
/// `describe` gives each category's description (categories keep their first-seen order).
pub fn code_mode_from_tools(
    engine: Engine,
    tools: Vec<ToolDefinition>,
    describe: impl Fn(&str) -> String,
) -> Result<CodeMode, Error> {
    let mut builder = Catalog::builder();
    let mut seen: Vec<String> = Vec::new();
    for tool in &tools {
        if !seen.contains(&tool.category) {
            seen.push(tool.category.clone());
            builder = builder.category(&tool.category, describe(&tool.category));
        }
    }
    for tool in tools {
        builder = builder.tool(&tool.category, tool.spec, tool.handler);
    }
    Ok(CodeMode::new(engine, builder.build()?))
}
