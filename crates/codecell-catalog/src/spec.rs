//! The public shapes of tools and categories, with MCP's field names on the wire.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool as MCP describes it: a name, a description and JSON Schemas for input and output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name, unique within its category; any text (mapped to a Python identifier for stubs).
    pub name: String,
    /// What the tool does; the first line is its summary in the category index.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    /// JSON Schema of the result, checked after every call when given.
    #[serde(
        rename = "outputSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<Value>,
}

impl ToolSpec {
    /// A spec with no output schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
        }
    }

    /// The same spec with an output schema.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }
}

/// A category as built: its names in the tree and its tools, in registration order.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryInfo {
    /// The category's name, as registered (what `call_tool` takes).
    pub name: String,
    /// What the category holds.
    pub description: String,
    /// Its Python identifier: the directory `tools/<module>/` and the package `tools.<module>`.
    pub module: String,
    /// Its tools.
    pub tools: Vec<ToolSpec>,
    /// The Python function name of each tool (its stub is `tools/<module>/<function>.py`), parallel to `tools`.
    pub functions: Vec<String>,
}
