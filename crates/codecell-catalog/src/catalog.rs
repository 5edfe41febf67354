//! The catalog: categories of tools, their compiled schemas and handlers, and the generated tree.
//! Immutable once built (see `builder`), cheap to clone and share.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::builder::CatalogBuilder;
use crate::error::{CallError, PathError};
use crate::handler::Handler;
use crate::schema::Compiled;
use crate::spec::CategoryInfo;
use crate::tree::Tree;

/// Most names listed in an unknown-category or unknown-tool error.
const MAX_LISTED: usize = 40;
/// Values an argument or result may hold to be checked on the caller's task; a larger one is
/// checked on tokio's blocking pool (up to `MAX_SCHEMA_EXPANSION` nodes per value is too long
/// to hold an executor thread, and with it a run's deadline, while it runs).
const INLINE_CHECK_VALUES: u64 = 10_000;

pub(crate) struct ToolEntry {
    pub(crate) input: Compiled,
    pub(crate) output: Option<Compiled>,
    pub(crate) handler: Arc<dyn Handler>,
}

pub(crate) struct CategoryEntry {
    pub(crate) tools: Vec<ToolEntry>,
    pub(crate) by_name: HashMap<String, usize>,
    pub(crate) by_function: HashMap<String, usize>,
}

pub(crate) struct Inner {
    pub(crate) infos: Vec<CategoryInfo>,
    pub(crate) entries: Vec<CategoryEntry>,
    pub(crate) by_name: HashMap<String, usize>,
    pub(crate) by_module: HashMap<String, usize>,
    pub(crate) tree: Tree,
}

/// An immutable catalog of tools: the virtual tree for `ls`/`read` and dispatch for `call`.
#[derive(Clone)]
pub struct Catalog {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("categories", &self.inner.infos)
            .finish_non_exhaustive()
    }
}

/// Tool `(i, j)`'s output schema, or its input schema.
fn schema_of(inner: &Inner, i: usize, j: usize, output: bool) -> Option<&Compiled> {
    let tool = &inner.entries[i].tools[j];
    if output {
        tool.output.as_ref()
    } else {
        Some(&tool.input)
    }
}

/// Names for an error message, cut to a readable number.
fn listed(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    if names.len() > MAX_LISTED {
        let more = names.len() - MAX_LISTED;
        names.truncate(MAX_LISTED);
        names.push(format!("… and {more} more"));
    }
    names
}

impl Catalog {
    /// A builder for a catalog of Rust handlers.
    pub fn builder() -> CatalogBuilder {
        CatalogBuilder::default()
    }

    /// Lists a directory of the tree; subdirectories end with `/`; sorted.
    pub fn ls(&self, path: &str) -> Result<Vec<String>, PathError> {
        self.inner.tree.ls(path)
    }

    /// Reads a file of the tree.
    pub fn read(&self, path: &str) -> Result<Arc<str>, PathError> {
        self.inner.tree.read(path)
    }

    /// The categories, in registration order.
    pub fn categories(&self) -> &[CategoryInfo] {
        &self.inner.infos
    }

    fn locate(&self, category: &str, name: &str) -> Result<(usize, usize), CallError> {
        let inner = &self.inner;
        let i = inner
            .by_name
            .get(category)
            .or_else(|| inner.by_module.get(category))
            .copied()
            .ok_or_else(|| CallError::UnknownCategory {
                category: crate::error::shorten(category, 120),
                available: listed(inner.infos.iter().map(|c| c.name.clone()).collect()),
            })?;
        let entry = &inner.entries[i];
        // Exact names win over identifiers; the seed's "<tool>.py" spelling is accepted too.
        let stem = name.strip_suffix(".py");
        let j = entry
            .by_name
            .get(name)
            .or_else(|| entry.by_function.get(name))
            .or_else(|| {
                stem.and_then(|s| entry.by_name.get(s).or_else(|| entry.by_function.get(s)))
            })
            .copied()
            .ok_or_else(|| CallError::UnknownTool {
                category: inner.infos[i].name.clone(),
                dir: inner.infos[i].module.clone(),
                tool: crate::error::shorten(name, 120),
                available: listed(
                    inner.infos[i]
                        .tools
                        .iter()
                        .map(|t| t.name.clone())
                        .collect(),
                ),
            })?;
        Ok((i, j))
    }

    /// The violations of `value` against tool `(i, j)`'s input or output schema; a large value is
    /// checked on the blocking pool when a tokio runtime is running (the future then waits on
    /// it, and dropping the future leaves the check to finish on its own).
    async fn check(&self, i: usize, j: usize, output: bool, value: Value) -> (Value, Vec<String>) {
        if schema_of(&self.inner, i, j, output).is_none() {
            return (value, Vec::new());
        }
        if crate::schema::within(&value, INLINE_CHECK_VALUES)
            || tokio::runtime::Handle::try_current().is_err()
        {
            let errors = schema_of(&self.inner, i, j, output)
                .map_or_else(Vec::new, |s| s.violations(&value));
            return (value, errors);
        }
        let inner = Arc::clone(&self.inner);
        let checked = tokio::task::spawn_blocking(move || {
            let errors =
                schema_of(&inner, i, j, output).map_or_else(Vec::new, |s| s.violations(&value));
            (value, errors)
        });
        match checked.await {
            Ok(done) => done,
            // The check panicked (it does not: jsonschema catches regex panics) or the runtime
            // is shutting down: either way the value is not known to be valid.
            Err(e) => (
                Value::Null,
                vec![format!("the check could not complete: {e}")],
            ),
        }
    }

    /// Checks `args` against the tool's input schema, runs its handler, checks the result.
    pub async fn call(&self, category: &str, name: &str, args: Value) -> Result<Value, CallError> {
        let (i, j) = self.locate(category, name)?;
        let (args, errors) = self.check(i, j, false, args).await;
        let info = &self.inner.infos[i];
        let tool = &self.inner.entries[i].tools[j];
        if !errors.is_empty() {
            return Err(CallError::InvalidArguments {
                category: info.name.clone(),
                tool: info.tools[j].name.clone(),
                dir: info.module.clone(),
                function: info.functions[j].clone(),
                errors,
            });
        }
        let result = tool.handler.call(args).await?;
        let (result, errors) = self.check(i, j, true, result).await;
        if !errors.is_empty() {
            return Err(CallError::InvalidResult {
                category: info.name.clone(),
                tool: info.tools[j].name.clone(),
                errors,
            });
        }
        Ok(result)
    }
}
