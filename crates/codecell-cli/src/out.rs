//! Writing to the terminal or a pipe: a closed pipe ends the command quietly, and guest text
//! shown on a terminal cannot drive it.

use crate::failure::Failure;
use std::io::{IsTerminal, Write};

/// Writes `text` to stdout; a reader that went away is [`Failure::closed_pipe`].
pub fn stdout(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe => Failure::closed_pipe(),
            _ => Failure::host(format!("cannot write to stdout: {e}")),
        })
}

/// Writes `text` and a newline to stdout.
pub fn line(text: &str) -> Result<(), Failure> {
    stdout(&format!("{text}\n"))
}

/// Writes `text` to stderr; failures are ignored (there is nowhere left to report them).
pub fn stderr(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Guest-written text as it may be shown on stdout: escaped when stdout is a terminal.
pub fn guest_stdout(text: &str) -> std::borrow::Cow<'_, str> {
    escape_if(std::io::stdout().is_terminal(), text)
}

/// Guest-written text as it may be shown on stderr: escaped when stderr is a terminal.
pub fn guest_stderr(text: &str) -> std::borrow::Cow<'_, str> {
    escape_if(std::io::stderr().is_terminal(), text)
}

fn escape_if(terminal: bool, text: &str) -> std::borrow::Cow<'_, str> {
    if terminal {
        escape_controls(text)
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Control characters other than newline and tab (escape sequences, carriage returns,
/// backspaces, C1 controls) written as `\x1b`-style escapes, so a guest cannot move the cursor,
/// rewrite what was printed before it, or send the terminal commands.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let is_control = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_control(c) {
            escaped.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            escaped.push(c);
        }
    }
    std::borrow::Cow::Owned(escaped)
}

#[cfg(test)]
mod tests {
    use super::escape_controls;

    #[test]
    fn escape_sequences_are_shown_not_sent() {
        assert_eq!(escape_controls("a\x1b[2Jb\r\n\tc"), "a\\x1b[2Jb\\x0d\n\tc");
        assert_eq!(escape_controls("\u{9b}31m"), "\\x9b31m");
        assert!(matches!(
            escape_controls("plain\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
