//! Which guest interpreter to run, and where its component comes from.

use std::path::{Path, PathBuf};

/// A guest interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GuestKind {
    /// CPython compiled for WASI, componentized with componentize-py.
    CPython,
}

impl GuestKind {
    /// The short name used on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            GuestKind::CPython => "cpython",
        }
    }

    /// The environment variable that overrides where this guest's `.wasm` is found.
    pub fn env_var(self) -> &'static str {
        match self {
            GuestKind::CPython => "CODECELL_CPYTHON_WASM",
        }
    }

    /// Where `python3 wasm-guests/build.py` puts this guest in this source tree.
    pub fn built_path(self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/guests")
            .join(format!("{}.wasm", self.name()))
    }

    /// The guest's component file: `$CODECELL_<GUEST>_WASM` if set, else the build output path.
    pub fn default_path(self) -> PathBuf {
        match std::env::var_os(self.env_var()) {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => self.built_path(),
        }
    }
}

impl std::str::FromStr for GuestKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpython" => Ok(GuestKind::CPython),
            other => Err(format!("unknown guest `{other}` (available: cpython)")),
        }
    }
}

/// The command that builds the guests, quoted in "not built" errors.
pub const BUILD_COMMAND: &str = "python3 wasm-guests/build.py";
