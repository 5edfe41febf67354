//! The virtual tree the guest explores, generated once at build time:
//!
//! ```text
//! tools/
//!   __index__.md            table of categories: name, description, tool count
//!   <module>/
//!     __index__.md          each tool with the first line of its description
//!     <function>.py         the stub
//! ```
//!
//! `ls` and `read` are map lookups on normalised paths (see `path`).

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::PathError;
use crate::path::TreePath;
use crate::spec::CategoryInfo;

/// Longest summary line shown in an index.
const MAX_SUMMARY_CHARS: usize = 160;

/// Files and directory listings keyed by canonical path (`""` is the root).
#[derive(Debug, Default)]
pub(crate) struct Tree {
    files: HashMap<String, Arc<str>>,
    dirs: HashMap<String, Vec<String>>,
}

/// Text for one markdown table cell: one line, no `|` breaking the table.
fn cell(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut out: String = line
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_SUMMARY_CHARS)
        .collect();
    if line.chars().count() > MAX_SUMMARY_CHARS {
        out.push('…');
    }
    out.replace('|', "\\|")
}

/// How a registered name is shown beside its identifier when the two differ.
fn also_named(ident: &str, name: &str) -> String {
    if ident == name {
        String::new()
    } else {
        format!(" (name {})", cell(&format!("{name:?}")))
    }
}

fn root_index(categories: &[CategoryInfo]) -> String {
    let mut s = String::from(
        "# Tool categories\n\n| Category | Description | Tools |\n| --- | --- | --- |\n",
    );
    let mut sorted: Vec<&CategoryInfo> = categories.iter().collect();
    sorted.sort_by(|a, b| a.module.cmp(&b.module));
    for c in sorted {
        s.push_str(&format!(
            "| `{}/`{} | {} | {} |\n",
            c.module,
            also_named(&c.module, &c.name),
            cell(&c.description),
            c.tools.len()
        ));
    }
    s.push_str(concat!(
        "\nList a category with `ls(\"tools/<category>/\")`; read a tool's signature and documentation ",
        "with `read(\"tools/<category>/<tool>.py\")`; call it with `from tools.<category> import <tool>` ",
        "or `call_tool(\"<category>\", \"<tool>\", **arguments)`.\n"
    ));
    s
}

fn category_index(c: &CategoryInfo) -> String {
    let mut s = format!("# {}{}\n\n", c.module, also_named(&c.module, &c.name));
    let description = c.description.trim();
    if !description.is_empty() {
        s.push_str(description);
        s.push_str("\n\n");
    }
    s.push_str("| Tool | Description |\n| --- | --- |\n");
    let mut rows: Vec<(&String, &crate::spec::ToolSpec)> =
        c.functions.iter().zip(&c.tools).collect();
    rows.sort_by(|a, b| a.0.cmp(b.0));
    for (function, tool) in rows {
        s.push_str(&format!(
            "| `{function}.py`{} | {} |\n",
            also_named(function, &tool.name),
            cell(&tool.description)
        ));
    }
    s.push_str(&format!(
        "\nRead a tool with `read(\"tools/{m}/<tool>.py\")`; import it with `from tools.{m} import <tool>`.\n",
        m = c.module
    ));
    s
}

impl Tree {
    /// Builds every file: indexes and stubs (`stubs[i][j]` is the stub of tool `j` of category `i`).
    pub(crate) fn build(categories: &[CategoryInfo], stubs: Vec<Vec<String>>) -> Tree {
        let mut tree = Tree::default();
        tree.dirs.insert(String::new(), vec!["tools/".to_string()]);
        tree.files.insert(
            "tools/__index__.md".to_string(),
            root_index(categories).into(),
        );
        let mut top = vec!["__index__.md".to_string()];
        for (c, stubs) in categories.iter().zip(stubs) {
            top.push(format!("{}/", c.module));
            let dir = format!("tools/{}", c.module);
            tree.files
                .insert(format!("{dir}/__index__.md"), category_index(c).into());
            let mut entries = vec!["__index__.md".to_string()];
            for (function, stub) in c.functions.iter().zip(stubs) {
                entries.push(format!("{function}.py"));
                tree.files
                    .insert(format!("{dir}/{function}.py"), stub.into());
            }
            entries.sort();
            tree.dirs.insert(dir, entries);
        }
        top.sort();
        tree.dirs.insert("tools".to_string(), top);
        tree
    }

    /// The sorted entries of a directory; subdirectories end with `/`.
    pub(crate) fn ls(&self, raw: &str) -> Result<Vec<String>, PathError> {
        let key = TreePath::parse(raw)?.as_key();
        if let Some(entries) = self.dirs.get(&key) {
            return Ok(entries.clone());
        }
        if self.files.contains_key(&key) {
            return Err(PathError::NotADirectory { path: key });
        }
        Err(self.not_found(key))
    }

    /// The content of a file.
    pub(crate) fn read(&self, raw: &str) -> Result<Arc<str>, PathError> {
        let key = TreePath::parse(raw)?.as_key();
        if let Some(text) = self.files.get(&key) {
            return Ok(text.clone());
        }
        if self.dirs.contains_key(&key) {
            return Err(PathError::IsADirectory { path: key });
        }
        Err(self.not_found(key))
    }

    /// A not-found error pointing at the nearest directory that exists.
    fn not_found(&self, key: String) -> PathError {
        let mut parent = key.as_str();
        let hint = loop {
            parent = parent.rsplit_once('/').map_or("", |(p, _)| p);
            if self.dirs.contains_key(parent) {
                break if parent.is_empty() {
                    "everything is under \"tools/\": try ls(\"tools/\")".to_string()
                } else {
                    format!("ls({:?}) lists what exists there", format!("{parent}/"))
                };
            }
        };
        PathError::NotFound {
            path: crate::error::shorten(&key, 120),
            hint,
        }
    }
}
