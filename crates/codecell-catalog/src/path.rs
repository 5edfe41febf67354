//! Guards the tree's only entrance: every path from the guest is normalised here, once, and
//! anything that could name something outside the tree is refused before any lookup.
//!
//! Rules:
//! - at most [`MAX_PATH_BYTES`] bytes and [`MAX_PATH_SEGMENTS`] non-empty segments;
//! - NUL, backslashes and other control characters are refused (no Windows separators, no
//!   truncation tricks);
//! - a `..` segment is refused wherever it appears — never resolved, even when it would stay inside;
//! - `.` segments and empty segments (repeated or trailing `/`) are dropped;
//! - a leading `/` names the tree's root, so `/tools/x` is `tools/x`; any other absolute path
//!   (`/etc/passwd`) is refused as outside the tree;
//! - `""`, `"."` and `"/"` are the root, which holds only `tools/`.

use crate::error::{PathError, shorten};

/// Longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Most segments accepted in one path.
pub const MAX_PATH_SEGMENTS: usize = 32;

/// How much of a refused path is echoed back in an error.
const ECHO_BYTES: usize = 120;

/// A path that passed every rule: segments without `.`, `..` or empty ones. Root is no segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreePath {
    segments: Vec<String>,
}

impl TreePath {
    /// Normalises `raw`, or says why it is refused.
    pub fn parse(raw: &str) -> Result<TreePath, PathError> {
        if raw.len() > MAX_PATH_BYTES {
            return Err(PathError::TooLong {
                len: raw.len(),
                max: MAX_PATH_BYTES,
            });
        }
        if raw.contains('\0') {
            return Err(PathError::Nul);
        }
        if raw.contains('\\') {
            return Err(PathError::Backslash {
                path: shorten(raw, ECHO_BYTES),
            });
        }
        if raw.chars().any(char::is_control) {
            return Err(PathError::ControlChar {
                path: shorten(&raw.escape_debug().to_string(), ECHO_BYTES),
            });
        }
        let raw_segments: Vec<&str> = raw.split('/').filter(|s| !s.is_empty()).collect();
        if raw_segments.len() > MAX_PATH_SEGMENTS {
            return Err(PathError::TooDeep {
                segments: raw_segments.len(),
                max: MAX_PATH_SEGMENTS,
            });
        }
        if raw_segments.contains(&"..") {
            return Err(PathError::ParentSegment {
                path: shorten(raw, ECHO_BYTES),
            });
        }
        let segments: Vec<String> = raw_segments
            .into_iter()
            .filter(|s| *s != ".")
            .map(str::to_string)
            .collect();
        if raw.starts_with('/') && segments.first().is_some_and(|s| s != "tools") {
            return Err(PathError::OutsideTree {
                path: shorten(raw, ECHO_BYTES),
            });
        }
        Ok(TreePath { segments })
    }

    /// The canonical form: segments joined by `/`, no leading or trailing `/`; `""` for the root.
    pub fn as_key(&self) -> String {
        self.segments.join("/")
    }
}
