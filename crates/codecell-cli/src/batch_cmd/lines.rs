//! The input of `codecell batch`: bounded lines, each parsed into a program or an error outcome.

use crate::failure::Failure;
use crate::run_cmd::LimitArgs;
use codecell::{
    BatchItem, BatchRun, Catalog, Engine, ErrorReport, Failure as RunFailure, GuestKind, Limits,
    Metering, Outcome,
};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};

/// Longest input line accepted, in bytes: a 1 MiB snippet with room for its JSON escapes.
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// Largest snippet accepted, in bytes (as `codecell run`).
const MAX_CODE_BYTES: usize = 1 << 20;

/// One program line as written: unknown fields are refused, so a typo is not a silent default.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgramLine {
    id: Value,
    code: String,
    #[serde(default)]
    limits: Option<LimitArgs>,
    #[serde(default)]
    guest: Option<String>,
    #[serde(default)]
    seed: Option<u64>,
}

/// An entry of the batch: the id to echo and what to do.
pub struct Entry {
    /// The program's `id` (null when the line had none that could be read).
    pub id: Value,
    /// Its line number in the input, from 1.
    pub line: u64,
    /// The run, or the error outcome of a bad line.
    pub item: BatchItem,
}

/// The programs of an input file or stdin, read one bounded line at a time.
pub struct Programs {
    input: Box<dyn BufRead + Send>,
    line_no: u64,
    default_guest: GuestKind,
    default_limits: Limits,
    catalog: Option<Catalog>,
    engines: HashMap<GuestKind, Result<Engine, String>>,
    concurrency: u32,
    done: bool,
}

impl Programs {
    /// Opens `file` (`-`: stdin); the defaults apply to programs that set nothing themselves.
    pub fn open(
        file: &str,
        default_guest: GuestKind,
        default_limits: Limits,
        catalog: Option<Catalog>,
        concurrency: usize,
    ) -> Result<Self, Failure> {
        let input: Box<dyn BufRead + Send> = if file == "-" {
            Box::new(BufReader::new(std::io::stdin()))
        } else {
            let f = std::fs::File::open(file)
                .map_err(|e| Failure::input(format!("cannot read {file}: {e}")))?;
            Box::new(BufReader::new(f))
        };
        let mut programs = Programs {
            input,
            line_no: 0,
            default_guest,
            default_limits,
            catalog,
            engines: HashMap::new(),
            concurrency: u32::try_from(concurrency).unwrap_or(u32::MAX),
            done: false,
        };
        // The default guest must exist: a batch that cannot run anything fails up front.
        if let Err(message) = programs.engine(default_guest) {
            return Err(Failure::host(message));
        }
        Ok(programs)
    }

    /// The engine of `guest`, built on first use (an instance per program in flight, plus the
    /// warm one).
    fn engine(&mut self, guest: GuestKind) -> Result<Engine, String> {
        let concurrency = self.concurrency;
        self.engines
            .entry(guest)
            .or_insert_with(|| {
                // Fuel metering: a program may set its own fuel budget, and a batch's outcomes
                // (fuel_used included) are meant to be compared run against run.
                Engine::builder()
                    .guest(guest)
                    .metering(Metering::Fuel)
                    .max_concurrent_runs(concurrency.saturating_add(1))
                    .build()
                    .map_err(|e| e.to_string())
            })
            .clone()
    }

    /// Parses one line into its entry.
    fn entry(&mut self, line: &[u8]) -> Entry {
        let at = self.line_no;
        let parsed: ProgramLine = match serde_json::from_slice(line) {
            Ok(p) => p,
            Err(e) => {
                // Echo the id when the line is an object that has one.
                let id = serde_json::from_slice::<Value>(line)
                    .ok()
                    .and_then(|v| v.get("id").cloned())
                    .unwrap_or(Value::Null);
                return bad(id, at, format!("not a program: {e}"));
            }
        };
        if parsed.code.len() > MAX_CODE_BYTES {
            return bad(
                parsed.id,
                at,
                format!("code is larger than {MAX_CODE_BYTES} bytes"),
            );
        }
        let guest = match parsed.guest.as_deref().map(str::parse::<GuestKind>) {
            None => self.default_guest,
            Some(Ok(g)) => g,
            Some(Err(e)) => return bad(parsed.id, at, e.to_string()),
        };
        let mut limits = match &parsed.limits {
            Some(own) => own.apply_to(self.default_limits.clone()),
            None => self.default_limits.clone(),
        };
        if parsed.seed.is_some() {
            limits.seed = parsed.seed;
        }
        let engine = match self.engine(guest) {
            Ok(engine) => engine,
            Err(message) => return bad(parsed.id, at, message),
        };
        Entry {
            id: parsed.id,
            line: at,
            item: BatchItem::Run(BatchRun {
                engine,
                code: parsed.code,
                catalog: self.catalog.clone(),
                limits,
            }),
        }
    }
}

impl Iterator for Programs {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        while !self.done {
            self.line_no += 1;
            let at = self.line_no;
            match read_bounded_line(&mut self.input, MAX_LINE_BYTES) {
                Ok(Line::End) => self.done = true,
                Ok(Line::TooLong) => {
                    return Some(bad(
                        Value::Null,
                        at,
                        format!("longer than {MAX_LINE_BYTES} bytes"),
                    ));
                }
                Ok(Line::Text(line)) if line.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(Line::Text(line)) => return Some(self.entry(&line)),
                Err(e) => {
                    self.done = true;
                    return Some(bad(Value::Null, at, format!("cannot read: {e}")));
                }
            }
        }
        None
    }
}

/// A line of input as read.
#[derive(Debug, PartialEq)]
enum Line {
    /// A whole line, without its newline.
    Text(Vec<u8>),
    /// A line over the bound; the rest of it was skipped.
    TooLong,
    /// No more input.
    End,
}

/// Reads one line of at most `max` bytes; a longer one is skipped to its end without keeping
/// it (memory stays bounded by `max`).
fn read_bounded_line(input: &mut impl BufRead, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    let mut any = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        any = true;
        let (chunk, found) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long && line.len() + chunk.len() <= max {
            line.extend_from_slice(chunk);
        } else {
            too_long = true;
            line = Vec::new();
        }
        let used = found.unwrap_or(buf.len());
        input.consume(used);
        if found.is_some() {
            break;
        }
    }
    Ok(match (any, too_long) {
        (false, _) => Line::End,
        (true, true) => Line::TooLong,
        (true, false) => {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            Line::Text(line)
        }
    })
}

/// The entry of line `line`, which is not a program.
fn bad(id: Value, line: u64, message: String) -> Entry {
    Entry {
        id,
        line,
        item: BatchItem::Ready(Ok(error_outcome(
            "BatchInputError",
            format!("line {line}: {message}"),
        ))),
    }
}

/// An `error` outcome that ran nothing, with `kind` as its error type.
pub fn error_outcome(kind: &str, message: String) -> Outcome {
    Outcome {
        result: Err(RunFailure::Error(ErrorReport {
            kind: kind.to_string(),
            message,
            traceback: String::new(),
            line: None,
        })),
        stdout: String::new(),
        stderr: String::new(),
        truncated: false,
        fuel_used: 0,
        duration_ms: 0.0,
        tool_calls: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[u8], max: usize) -> Vec<Line> {
        let mut input = BufReader::with_capacity(3, text);
        let mut out = Vec::new();
        loop {
            match read_bounded_line(&mut input, max).unwrap() {
                Line::End => return out,
                line => out.push(line),
            }
        }
    }

    #[test]
    fn an_over_long_line_is_skipped_to_its_end_and_the_next_one_is_read() {
        let got = lines(b"ab\n0123456789\r\ncd\r\nlast", 4);
        assert_eq!(
            got,
            vec![
                Line::Text(b"ab".to_vec()),
                Line::TooLong,
                Line::Text(b"cd".to_vec()),
                Line::Text(b"last".to_vec()),
            ]
        );
    }

    #[test]
    fn a_line_of_exactly_the_bound_is_accepted() {
        assert_eq!(lines(b"abcd\n", 4), vec![Line::Text(b"abcd".to_vec())]);
        assert_eq!(lines(b"abcde\n", 4), vec![Line::TooLong]);
    }
}
