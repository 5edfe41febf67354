//! The interactive prompt: line editing and history (rustyline), and multi-line input the way
//! Python's REPL takes it.

use crate::failure::Failure;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

/// What the prompt gave.
pub enum Entry {
    /// A cell of code.
    Cell(String),
    /// A `%` command line (`%reset`, `%limits`, …), without the `%`.
    Magic(String),
    /// Ctrl-C on an empty prompt: nothing to run.
    Interrupted,
    /// Ctrl-D, or the terminal closed.
    End,
}

/// A line editor with in-memory history (nothing is written to disk).
pub struct Prompt {
    editor: DefaultEditor,
}

impl Prompt {
    /// A prompt on the terminal.
    pub fn new() -> Result<Self, Failure> {
        let editor = DefaultEditor::new()
            .map_err(|e| Failure::host(format!("cannot start the line editor: {e}")))?;
        Ok(Prompt { editor })
    }

    /// Reads one entry: a line, or lines while the block is open (an empty line closes it).
    pub fn read(&mut self) -> Result<Entry, Failure> {
        let mut block = String::new();
        loop {
            let prompt = if block.is_empty() { ">>> " } else { "... " };
            let line = match tokio::task::block_in_place(|| self.editor.readline(prompt)) {
                Ok(line) => line,
                Err(ReadlineError::Interrupted) => return Ok(Entry::Interrupted),
                Err(ReadlineError::Eof) if block.is_empty() => return Ok(Entry::End),
                Err(ReadlineError::Eof) => return Ok(Entry::Cell(block)),
                Err(e) => return Err(Failure::host(format!("cannot read the terminal: {e}"))),
            };
            if block.is_empty() {
                if let Some(magic) = line.trim().strip_prefix('%') {
                    let _ = self.editor.add_history_entry(line.as_str());
                    return Ok(Entry::Magic(magic.trim().to_string()));
                }
                if line.trim().is_empty() {
                    continue;
                }
            }
            let closes = !block.is_empty() && line.trim().is_empty();
            if !line.trim().is_empty() {
                let _ = self.editor.add_history_entry(line.as_str());
            }
            block.push_str(&line);
            block.push('\n');
            if closes || (!opens_block(&line) && block_is_closed(&block)) {
                return Ok(Entry::Cell(block));
            }
        }
    }
}

/// Whether `line` starts an indented block (ends with `:` outside a comment) or continues (`\`).
fn opens_block(line: &str) -> bool {
    let code = line.split('#').next().unwrap_or("").trim_end();
    code.ends_with(':') || code.ends_with('\\')
}

/// Whether `block` is complete as typed: no open bracket or triple-quoted string, and if it has
/// an indented block, only once an empty line ends it (the caller sees that).
fn block_is_closed(block: &str) -> bool {
    let first_line_opened = block.lines().next().is_some_and(opens_block);
    if first_line_opened || block.lines().count() > 1 && block.lines().any(opens_block) {
        return false;
    }
    let (mut depth, mut quote) = (0i32, None::<&str>);
    let mut rest = block;
    while let Some(c) = rest.chars().next() {
        let mut step = c.len_utf8();
        match quote {
            Some(_) if c == '\\' => step += rest[1..].chars().next().map_or(0, char::len_utf8),
            Some(q) if rest.starts_with(q) => {
                step = q.len();
                quote = None;
            }
            // A one-quote string ends at the line's end (Python would say it is unterminated).
            Some(q) if c == '\n' && q.len() == 1 => quote = None,
            Some(_) => {}
            None => {
                if let Some(q) = ["\"\"\"", "\'\'\'", "\"", "\'"]
                    .into_iter()
                    .find(|q| rest.starts_with(q))
                {
                    step = q.len();
                    quote = Some(q);
                } else if c == '#' {
                    step = rest.find('\n').unwrap_or(rest.len());
                } else if "([{".contains(c) {
                    depth += 1;
                } else if ")]}".contains(c) {
                    depth -= 1;
                }
            }
        }
        rest = rest.get(step..).unwrap_or("");
    }
    depth <= 0 && quote.is_none_or(|q| q.len() == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_stays_open_until_its_brackets_strings_and_colons_close() {
        assert!(block_is_closed("x = 1\n"));
        assert!(block_is_closed("print('(')  # (\n"));
        assert!(!block_is_closed("xs = [1,\n"));
        assert!(block_is_closed("xs = [1,\n2]\n"));
        assert!(!block_is_closed("s = \"\"\"a\n"));
        assert!(block_is_closed("s = \"\"\"a\nb\"\"\"\n"));
        assert!(!block_is_closed("def f():\n"));
        assert!(!block_is_closed("def f():\n    return 1\n"));
        assert!(opens_block("for i in range(3):  # loop"));
        assert!(!opens_block("d = {'a': 1}"));
    }
}
