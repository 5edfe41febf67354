//! Collecting categories and tools, then validating all of it at once: names, sizes and schemas
//! are checked, validators compiled and stubs generated before a `Catalog` exists.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::catalog::{Catalog, CategoryEntry, Inner, ToolEntry};
use crate::error::CatalogError;
use crate::handler::Handler;
use crate::naming::{RESERVED_MODULE_NAMES, assign_identifiers};
use crate::schema;
use crate::spec::{CategoryInfo, ToolSpec};
use crate::stub::{self, StubInput};
use crate::tree::Tree;

/// Most categories in one catalog.
pub const MAX_CATEGORIES: usize = 256;
/// Most tools in one catalog, over all categories.
pub const MAX_TOOLS: usize = 2048;
/// Longest category or tool name, in bytes.
pub const MAX_NAME_BYTES: usize = 128;
/// Longest category or tool description, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 16 * 1024;
/// Most properties in one input schema (each becomes a parameter of the stub).
pub const MAX_PARAMETERS: usize = 256;
/// Where a problem found by the builder is; rendered as a JSON path for files, names otherwise.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Where {
    /// The catalog as a whole.
    Catalog,
    /// A field of category `i`.
    Category(usize, &'static str),
    /// A field of tool `j` of category `i`.
    Tool(usize, usize, &'static str),
}

struct PendingCategory {
    name: String,
    description: String,
    declared: bool,
    tools: Vec<(ToolSpec, Arc<dyn Handler>)>,
}

/// Collects categories and tools; `build` validates everything and generates the tree.
#[derive(Default)]
pub struct CatalogBuilder {
    categories: Vec<PendingCategory>,
    duplicate_category: Option<usize>,
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("name must not be empty".to_string());
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(format!(
            "name is {} bytes; the limit is {MAX_NAME_BYTES}",
            name.len()
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(format!("name {name:?} contains a control character"));
    }
    Ok(())
}

fn check_description(d: &str) -> Result<(), String> {
    if d.len() > MAX_DESCRIPTION_BYTES {
        return Err(format!(
            "description is {} bytes; the limit is {MAX_DESCRIPTION_BYTES}",
            d.len()
        ));
    }
    Ok(())
}

impl CatalogBuilder {
    /// Declares a category (tools may also name a category never declared: it gets an empty description).
    pub fn category(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        let name = name.into();
        let description = description.into();
        match self.categories.iter().position(|c| c.name == name) {
            Some(i) if self.categories[i].declared => {
                // Reported by `build`, with the second declaration's position.
                self.duplicate_category.get_or_insert(self.categories.len());
                self.categories.push(PendingCategory {
                    name,
                    description,
                    declared: true,
                    tools: Vec::new(),
                });
            }
            Some(i) => {
                self.categories[i].description = description;
                self.categories[i].declared = true;
            }
            None => self.categories.push(PendingCategory {
                name,
                description,
                declared: true,
                tools: Vec::new(),
            }),
        }
        self
    }

    /// Adds a tool to a category.
    pub fn tool(mut self, category: &str, spec: ToolSpec, handler: Arc<dyn Handler>) -> Self {
        let i = match self.categories.iter().position(|c| c.name == category) {
            Some(i) => i,
            None => {
                self.categories.push(PendingCategory {
                    name: category.to_string(),
                    description: String::new(),
                    declared: false,
                    tools: Vec::new(),
                });
                self.categories.len() - 1
            }
        };
        self.categories[i].tools.push((spec, handler));
        self
    }

    /// Validates names, sizes and schemas, compiles the validators and generates the tree.
    pub fn build(self) -> Result<Catalog, CatalogError> {
        let names: Vec<(String, Vec<String>)> = self
            .categories
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    c.tools.iter().map(|t| t.0.name.clone()).collect(),
                )
            })
            .collect();
        self.build_located("catalog builder", &|w| match w {
            Where::Catalog => "catalog".to_string(),
            Where::Category(i, field) => format!("category {:?}: {field}", names[i].0),
            Where::Tool(i, j, field) => {
                format!(
                    "category {:?}, tool {:?}: {field}",
                    names[i].0, names[i].1[j]
                )
            }
        })
    }

    /// `build`, with positions rendered by `locate` (catalog files render JSON paths).
    pub(crate) fn build_located(
        self,
        origin: &str,
        locate: &dyn Fn(Where) -> String,
    ) -> Result<Catalog, CatalogError> {
        let fail = |w: Where, message: String| CatalogError::Invalid {
            origin: origin.to_string(),
            path: locate(w),
            message,
        };
        if let Some(i) = self.duplicate_category {
            let name = &self.categories[i].name;
            return Err(fail(
                Where::Category(i, "name"),
                format!("duplicate category name {name:?}; category names must be unique"),
            ));
        }
        if self.categories.len() > MAX_CATEGORIES {
            return Err(fail(
                Where::Catalog,
                format!(
                    "{} categories; the limit is {MAX_CATEGORIES}",
                    self.categories.len()
                ),
            ));
        }
        let total: usize = self.categories.iter().map(|c| c.tools.len()).sum();
        if total > MAX_TOOLS {
            return Err(fail(
                Where::Catalog,
                format!("{total} tools; the limit is {MAX_TOOLS}"),
            ));
        }

        let cat_names: Vec<&str> = self.categories.iter().map(|c| c.name.as_str()).collect();
        let modules = assign_identifiers(&cat_names, RESERVED_MODULE_NAMES);
        let mut infos = Vec::with_capacity(self.categories.len());
        let mut entries = Vec::with_capacity(self.categories.len());
        let mut all_stubs = Vec::with_capacity(self.categories.len());
        let mut patterns = schema::Patterns::default();
        for (i, (cat, module)) in self.categories.into_iter().zip(modules).enumerate() {
            check_name(&cat.name).map_err(|m| fail(Where::Category(i, "name"), m))?;
            check_description(&cat.description)
                .map_err(|m| fail(Where::Category(i, "description"), m))?;
            let mut by_name = HashMap::new();
            let mut tools = Vec::with_capacity(cat.tools.len());
            for (j, (spec, _)) in cat.tools.iter().enumerate() {
                check_name(&spec.name).map_err(|m| fail(Where::Tool(i, j, "name"), m))?;
                if by_name.insert(spec.name.clone(), j).is_some() {
                    return Err(fail(
                        Where::Tool(i, j, "name"),
                        format!(
                            "duplicate tool name {:?} in category {:?}; tool names must be unique within a category",
                            spec.name, cat.name
                        ),
                    ));
                }
                check_description(&spec.description)
                    .map_err(|m| fail(Where::Tool(i, j, "description"), m))?;
                let props = spec
                    .input_schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .map_or(0, |p| p.len());
                if props > MAX_PARAMETERS {
                    return Err(fail(
                        Where::Tool(i, j, "inputSchema"),
                        format!("has {props} properties; the limit is {MAX_PARAMETERS}"),
                    ));
                }
                let input = schema::compile_input(&spec.input_schema, &mut patterns)
                    .map_err(|m| fail(Where::Tool(i, j, "inputSchema"), m))?;
                let output = match &spec.output_schema {
                    Some(s) => Some(
                        schema::compile_with(s, &mut patterns)
                            .map_err(|m| fail(Where::Tool(i, j, "outputSchema"), m))?,
                    ),
                    None => None,
                };
                tools.push((input, output));
            }
            let tool_names: Vec<&str> = cat.tools.iter().map(|t| t.0.name.as_str()).collect();
            let functions = assign_identifiers(&tool_names, RESERVED_MODULE_NAMES);
            let stubs: Vec<String> = cat
                .tools
                .iter()
                .zip(&functions)
                .map(|((spec, _), function)| {
                    stub::generate(&StubInput {
                        category: &cat.name,
                        tool: &spec.name,
                        function,
                        description: &spec.description,
                        input_schema: &spec.input_schema,
                        output_schema: spec.output_schema.as_ref(),
                    })
                })
                .collect();
            all_stubs.push(stubs);
            let by_function = functions.iter().cloned().zip(0..).collect();
            let (specs, handlers): (Vec<ToolSpec>, Vec<Arc<dyn Handler>>) =
                cat.tools.into_iter().unzip();
            entries.push(CategoryEntry {
                tools: tools
                    .into_iter()
                    .zip(handlers)
                    .map(|((input, output), handler)| ToolEntry {
                        input,
                        output,
                        handler,
                    })
                    .collect(),
                by_name,
                by_function,
            });
            infos.push(CategoryInfo {
                name: cat.name,
                description: cat.description,
                module,
                tools: specs,
                functions,
            });
        }
        let tree = Tree::build(&infos, all_stubs);
        let by_name = infos
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.clone(), i))
            .collect();
        let by_module = infos
            .iter()
            .enumerate()
            .map(|(i, c)| (c.module.clone(), i))
            .collect();
        Ok(Catalog {
            inner: Arc::new(Inner {
                infos,
                entries,
                by_name,
                by_module,
                tree,
            }),
        })
    }
}
