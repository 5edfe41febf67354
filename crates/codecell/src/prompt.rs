//! The system prompt for code mode, generated from the catalog so it names the real categories.

use codecell_catalog::Catalog;
use std::fmt::Write;

const PROMPT_HEAD: &str = "\
## Code mode

You have one tool, `execute_code`. It runs Python 3 in a fresh sandbox each time: no files, no
network, no processes, and nothing survives between calls. Inside the sandbox these are built in:

- `ls(path)` lists a directory of the tool tree; directories end with `/`. Start with `ls(\"tools/\")`.
- `read(path)` returns a file of the tree: `tools/__index__.md` lists the categories,
  `tools/<category>/__index__.md` lists a category's tools, and `tools/<category>/<tool>.py` is a
  tool's typed Python signature with its documentation.
- `call_tool(category, tool, **arguments)` calls a tool and returns its JSON result as Python values.
  Arguments are checked against the tool's schema first; any failure raises `ToolError`.
- Tool stubs are importable: `from tools.<category> import <tool>` gives a function with the
  signature shown in its file.
- To call tools concurrently, await them: `await call_tool_async(category, tool, **arguments)`,
  or a stub's twin `<tool>_async`, under `asyncio.gather(...)`. Top-level `await` works.
- `print()` is how you see results: only what you print comes back, and output is capped.

Work in small steps: explore with `ls` and `read`, then call tools and print what you need.
Catch `ToolError` when a call may fail. The standard library (json, re, datetime, collections,
math, itertools, statistics, decimal, ...) is available.
";

/// The code-mode system prompt for `catalog`.
pub fn system_prompt(catalog: &Catalog) -> String {
    prompt(Some(catalog))
}

/// The prompt, for a catalog or for a run with no tools (no categories listed).
pub(crate) fn prompt(catalog: Option<&Catalog>) -> String {
    let mut text = String::from(PROMPT_HEAD);
    text.push_str("\nCategories available now:\n");
    for category in catalog.into_iter().flat_map(Catalog::categories) {
        let _ = writeln!(
            text,
            "- `{}`: {} ({} tools)",
            category.name,
            category.description,
            category.tools.len()
        );
    }
    text.push_str(
        "\nExample:\n```python\nprint(ls(\"tools/\"))\nprint(read(\"tools/__index__.md\"))\n```\n",
    );
    text
}
