//! Bounded load errors. A store file is attacker-controlled text: a 20 MB log of junk lines
//! made one message per line (900 MB printed, 4.5 GB held), and a message quoting a field could
//! be as long as the field. So each source keeps at most [`MAX_LOAD_ERRORS`] messages of at most
//! [`MAX_LOAD_ERROR_BYTES`] bytes, then one summary line counting the rest.

/// Most load errors kept from one source (a directory of manifests, the event log) and in total
/// by one registry; the rest are counted in a summary line.
pub const MAX_LOAD_ERRORS: usize = 100;
/// Longest load error kept, in bytes; longer ones are clipped and end with `…`.
pub const MAX_LOAD_ERROR_BYTES: usize = 500;

/// `text` clipped to at most `max` bytes (at a character boundary), marked with `…` if clipped.
pub(crate) fn clip(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push('…');
    text
}

/// The load errors of one source: the first [`MAX_LOAD_ERRORS`], clipped, then a count.
pub(crate) struct Sink {
    source: String,
    kept: Vec<String>,
    more: usize,
}

impl Sink {
    /// An empty sink whose summary line names `source`.
    pub(crate) fn new(source: impl Into<String>) -> Sink {
        Sink {
            source: source.into(),
            kept: Vec::new(),
            more: 0,
        }
    }

    /// Records one error; the message is only built while there is room for it, so a million
    /// bad lines cost a counter, not a million formatted strings.
    pub(crate) fn push_with(&mut self, message: impl FnOnce() -> String) {
        if self.kept.len() < MAX_LOAD_ERRORS {
            self.kept.push(clip(message(), MAX_LOAD_ERROR_BYTES));
        } else {
            self.more += 1;
        }
    }

    /// Records one error already built.
    pub(crate) fn push(&mut self, message: String) {
        self.push_with(|| message);
    }

    /// The kept errors, then `"<source>: … and N more load errors"` if any were dropped.
    pub(crate) fn finish(mut self) -> Vec<String> {
        if self.more > 0 {
            self.kept.push(summary(&self.source, self.more));
        }
        self.kept
    }
}

/// The line standing for `more` errors that were counted but not kept.
pub(crate) fn summary(source: &str, more: usize) -> String {
    format!("{source}: … and {more} more load errors")
}

/// The source and count of a line made by [`summary`], if `line` is one.
pub(crate) fn parse_summary(line: &str) -> Option<(&str, usize)> {
    let (source, rest) = line.split_once(": … and ")?;
    let count = rest.strip_suffix(" more load errors")?.parse().ok()?;
    Some((source, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_char_boundaries_and_marks_the_cut() {
        assert_eq!(clip("short".into(), 10), "short");
        let clipped = clip("é".repeat(400), 101);
        assert!(clipped.len() <= 101 && clipped.ends_with('…'), "{clipped}");
    }

    #[test]
    fn a_sink_keeps_the_first_hundred_and_counts_the_rest() {
        let mut sink = Sink::new("events.jsonl");
        let mut built = 0;
        for i in 0..10_000 {
            sink.push_with(|| {
                built += 1;
                format!("line {i} {}", "x".repeat(2_000))
            });
        }
        let errors = sink.finish();
        assert_eq!(
            built, MAX_LOAD_ERRORS,
            "messages past the cap are never built"
        );
        assert_eq!(errors.len(), MAX_LOAD_ERRORS + 1);
        assert!(errors.iter().all(|e| e.len() <= MAX_LOAD_ERROR_BYTES));
        assert_eq!(
            errors.last().unwrap(),
            "events.jsonl: … and 9900 more load errors"
        );
        assert_eq!(
            parse_summary(errors.last().unwrap()),
            Some(("events.jsonl", 9900))
        );
        assert_eq!(parse_summary(&errors[0][..40]), None);
    }
}
