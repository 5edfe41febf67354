//! Reading the one input file a command takes: a path, or `-` for stdin, never past a bound.

use crate::failure::Failure;
use std::io::Read;

/// Reads `file` (or stdin for `-`) as UTF-8 text of at most `max_bytes` bytes.
pub fn read_text(file: &str, max_bytes: u64) -> Result<String, Failure> {
    let mut bytes = Vec::new();
    let result = if file == "-" {
        std::io::stdin()
            .lock()
            .take(max_bytes + 1)
            .read_to_end(&mut bytes)
    } else {
        std::fs::File::open(file).and_then(|f| f.take(max_bytes + 1).read_to_end(&mut bytes))
    };
    result.map_err(|e| Failure::input(format!("cannot read {file}: {e}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(Failure::input(format!(
            "{file} is larger than {max_bytes} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|_| Failure::input(format!("{file} is not UTF-8 text")))
}
