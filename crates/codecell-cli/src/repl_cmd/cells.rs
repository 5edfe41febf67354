//! Cells on a non-terminal stdin: separated by lines that are exactly `# %%` (the cell marker of
//! Jupytext and VS Code), read as they arrive and never past a bound.

use crate::failure::Failure;
use std::io::{BufRead, Read};

/// The line that separates cells.
pub const CELL_MARKER: &str = "# %%";

/// Reads cells from `input`, one at a time.
pub struct Cells<R> {
    input: R,
    max_cell_bytes: usize,
    done: bool,
}

impl<R: BufRead> Cells<R> {
    /// Cells of `input`, each of at most `max_cell_bytes` bytes.
    pub fn new(input: R, max_cell_bytes: usize) -> Self {
        Cells {
            input,
            max_cell_bytes,
            done: false,
        }
    }

    /// The next cell that has code in it (blank cells are skipped), or None at the end.
    pub fn next_cell(&mut self) -> Result<Option<String>, Failure> {
        while !self.done {
            let cell = self.read_cell()?;
            if !cell.trim().is_empty() {
                return Ok(Some(cell));
            }
        }
        Ok(None)
    }

    /// Reads up to the next marker line or the end of input.
    fn read_cell(&mut self) -> Result<String, Failure> {
        let mut cell = Vec::new();
        loop {
            let mut line = Vec::new();
            let room = (self.max_cell_bytes + 1).saturating_sub(cell.len()) as u64;
            // A line longer than what is left of the cap is cut there, and then refused below.
            let read = self
                .input
                .by_ref()
                .take(room.max(1) + CELL_MARKER.len() as u64 + 2)
                .read_until(b'\n', &mut line)
                .map_err(|e| Failure::input(format!("cannot read stdin: {e}")))?;
            if read == 0 {
                self.done = true;
                break;
            }
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text == CELL_MARKER.as_bytes() {
                break;
            }
            cell.extend_from_slice(&line);
            if cell.len() > self.max_cell_bytes {
                return Err(Failure::input(format!(
                    "a cell on stdin is larger than {} bytes",
                    self.max_cell_bytes
                )));
            }
        }
        String::from_utf8(cell).map_err(|_| Failure::input("a cell on stdin is not UTF-8".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(text: &str, cap: usize) -> Result<Vec<String>, Failure> {
        let mut cells = Cells::new(text.as_bytes(), cap);
        let mut all = Vec::new();
        while let Some(cell) = cells.next_cell()? {
            all.push(cell);
        }
        Ok(all)
    }

    #[test]
    fn markers_split_cells_and_blank_cells_are_skipped() {
        let got = cells(
            "# %%\nx = 1\n# %%\n\n# %%\r\nprint(x)\n# %% not a marker\n",
            100,
        )
        .unwrap();
        assert_eq!(got, ["x = 1\n", "print(x)\n# %% not a marker\n"]);
        assert_eq!(cells("print(1)", 100).unwrap(), ["print(1)"]);
    }

    #[test]
    fn a_cell_over_the_cap_is_refused_even_without_a_newline() {
        let refused = cells(&"x".repeat(10_000), 100).unwrap_err();
        assert!(
            refused.message.contains("larger than 100 bytes"),
            "{}",
            refused.message
        );
    }
}
