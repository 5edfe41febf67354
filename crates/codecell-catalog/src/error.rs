//! Every error the catalog reports. Messages are written for two readers: a person fixing a catalog
//! file, and a model reading a `ToolError` inside the guest — both need to know what to do next.

use std::fmt;

/// Building a catalog failed: a bad catalog file, or a builder given bad specs.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The catalog file could not be read.
    #[error("{origin}: cannot read catalog file: {source}")]
    Io {
        /// The file, as given.
        origin: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The catalog file is larger than the limit.
    #[error("{origin}: catalog file is {size} bytes, over the limit of {max} bytes")]
    TooLarge {
        /// The file, as given.
        origin: String,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        max: u64,
    },
    /// The catalog file is not JSON.
    #[error("{origin}: not valid JSON at line {line}, column {column}: {message}")]
    Json {
        /// The file, as given.
        origin: String,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What serde_json said.
        message: String,
    },
    /// A value in the catalog is wrong; `path` says where (a JSON path in a file, names for a builder).
    #[error("{origin}: {path}: {message}")]
    Invalid {
        /// The file, or "catalog builder".
        origin: String,
        /// Where: `categories[1].tools[0].inputSchema`, or `category "weather", tool "forecast"`.
        path: String,
        /// What is wrong and, where possible, how to fix it.
        message: String,
    },
}

/// A path given to `ls` or `read` was refused or does not exist. Never resolved outside the tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path is longer than the limit.
    #[error("path is {len} bytes long; paths are limited to {max} bytes")]
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The path has more segments than the limit.
    #[error("path has {segments} segments; paths are limited to {max}")]
    TooDeep {
        /// Its number of segments.
        segments: usize,
        /// The limit.
        max: usize,
    },
    /// The path contains a `..` segment.
    #[error(
        "path {path:?} contains \"..\"; only paths inside tools/ exist, e.g. \"tools/<category>/<tool>.py\""
    )]
    ParentSegment {
        /// The path as given (shortened).
        path: String,
    },
    /// The path contains a NUL byte.
    #[error("path contains a NUL character")]
    Nul,
    /// The path contains a backslash.
    #[error("path {path:?} contains a backslash; use \"/\" to separate segments")]
    Backslash {
        /// The path as given (shortened).
        path: String,
    },
    /// The path contains a control character.
    #[error("path {path:?} contains a control character")]
    ControlChar {
        /// The path as given (shortened, escaped).
        path: String,
    },
    /// An absolute path that is not under `/tools`.
    #[error("path {path:?} is outside the tree; the only top-level directory is \"tools/\"")]
    OutsideTree {
        /// The path as given (shortened).
        path: String,
    },
    /// Nothing exists at this path.
    #[error("no such file or directory: {path:?}; {hint}")]
    NotFound {
        /// The normalised path.
        path: String,
        /// Where to look instead.
        hint: String,
    },
    /// `ls` of a file.
    #[error("{path:?} is a file, not a directory; use read({path:?})")]
    NotADirectory {
        /// The normalised path.
        path: String,
    },
    /// `read` of a directory.
    #[error("{path:?} is a directory, not a file; use ls({path:?})")]
    IsADirectory {
        /// The normalised path.
        path: String,
    },
}

/// A handler failed. The message is shown to the model as the `ToolError` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerError {
    message: String,
}

impl HandlerError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        HandlerError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HandlerError {}

impl From<String> for HandlerError {
    fn from(message: String) -> Self {
        HandlerError::new(message)
    }
}

impl From<&str> for HandlerError {
    fn from(message: &str) -> Self {
        HandlerError::new(message)
    }
}

/// `Catalog::call` failed. `Display` is the `ToolError` message the guest sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No category by that name (or its Python identifier).
    #[error(
        "unknown category {category:?}; available categories: {}. Use ls(\"tools/\") to explore",
        list(available)
    )]
    UnknownCategory {
        /// The name asked for.
        category: String,
        /// The names that exist (possibly shortened).
        available: Vec<String>,
    },
    /// No tool by that name in the category.
    #[error(
        "unknown tool {tool:?} in category {category:?}; available tools: {}. Use ls(\"tools/{dir}/\") to explore",
        list(available)
    )]
    UnknownTool {
        /// The category's name.
        category: String,
        /// Its directory in the tree.
        dir: String,
        /// The tool name asked for.
        tool: String,
        /// The tools that exist (possibly shortened).
        available: Vec<String>,
    },
    /// The arguments do not match the tool's `inputSchema`; the handler did not run.
    #[error("invalid arguments for {category}/{tool} (the tool was not run): {}. Read tools/{dir}/{function}.py for the parameters", errors.join("; "))]
    InvalidArguments {
        /// The category's name.
        category: String,
        /// The tool's name.
        tool: String,
        /// The category's directory in the tree.
        dir: String,
        /// The tool's Python function (and file) name.
        function: String,
        /// One line per schema violation (bounded).
        errors: Vec<String>,
    },
    /// The handler failed.
    #[error("{0}")]
    Handler(HandlerError),
    /// The handler's result does not match the tool's `outputSchema`.
    #[error("tool {category}/{tool} returned a result that does not match its outputSchema (a fault in the tool, not in your arguments): {}", errors.join("; "))]
    InvalidResult {
        /// The category's name.
        category: String,
        /// The tool's name.
        tool: String,
        /// One line per schema violation (bounded).
        errors: Vec<String>,
    },
}

impl From<HandlerError> for CallError {
    fn from(e: HandlerError) -> Self {
        CallError::Handler(e)
    }
}

/// Names in an error message, quoted, or "(none)".
fn list(names: &[String]) -> String {
    if names.is_empty() {
        return "(none)".to_string();
    }
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Shortens untrusted text echoed in a message to `max` bytes, on a char boundary.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
