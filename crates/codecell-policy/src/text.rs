//! Python's notions of whitespace, identifiers and line/column positions.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;

/// Python's `str.isspace()`: wider than `char::is_whitespace` (it includes U+001C..U+001F).
/// The list was produced by `[c for c in range(0x110000) if chr(c).isspace()]` on CPython 3.11.
fn python_isspace(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | '\u{1c}'..='\u{20}'
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Whether `source.strip()` would be empty in Python.
pub(crate) fn is_blank(source: &str) -> bool {
    source.chars().all(python_isspace)
}

/// CPython stores every non-ASCII identifier in NFKC form (PEP 3131), so `ｅｖａｌ` *is* `eval`
/// to both the seed's `ast` and the interpreter; rustpython-parser keeps the raw spelling.
pub(crate) fn identifier(raw: &str) -> Cow<'_, str> {
    if raw.is_ascii() {
        Cow::Borrowed(raw)
    } else {
        Cow::Owned(raw.nfkc().collect())
    }
}

/// Maps byte offsets to CPython-style positions. Lines end at `\n`, `\r\n` or a lone `\r`
/// (CPython translates all three before tokenising a string).
pub(crate) struct LineIndex<'a> {
    source: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub(crate) fn new(source: &'a str) -> Self {
        let bytes = source.as_bytes();
        let mut starts = vec![0];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => starts.push(i + 1),
                b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                    starts.push(i + 2);
                    i += 1;
                }
                b'\r' => starts.push(i + 1),
                _ => {}
            }
            i += 1;
        }
        LineIndex { source, starts }
    }

    /// 1-based line and 1-based character column of a byte offset (clamped to the source).
    pub(crate) fn position(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.source.len());
        let line = self.starts.partition_point(|&start| start <= offset).max(1);
        let start = self.starts[line - 1];
        let column = self
            .source
            .get(start..offset)
            .map_or(0, |prefix| prefix.chars().count());
        (line, column + 1)
    }
}
