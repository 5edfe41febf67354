//! Which guest interpreter to run, and where its component comes from.

use std::path::{Path, PathBuf};

/// A guest interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GuestKind {
    /// CPython compiled for WASI and linked statically with this guest's glue, for wasm32-wasip2.
    CPython,
    /// RustPython (rustpython-vm with its stdlib frozen in), built with cargo for wasm32-wasip2.
    RustPython,
}

/// Every guest, in the order the CLI and the test suite list them.
pub const ALL_GUESTS: [GuestKind; 2] = [GuestKind::CPython, GuestKind::RustPython];

impl GuestKind {
    /// The short name used on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            GuestKind::CPython => "cpython",
            GuestKind::RustPython => "rustpython",
        }
    }

    /// Whether an engine keeps a warm instance for this guest unless told otherwise.
    ///
    /// Neither guest does: both are one core module that instantiates in a few hundredths of a
    /// millisecond, and making the next instance on another thread while a run executes cost
    /// both runs more (page-table contention) than it saved. The measurements are in
    /// `docs/performance.md`.
    pub fn warm_by_default(self) -> bool {
        false
    }

    /// The environment variable that overrides where this guest's `.wasm` is found.
    pub fn env_var(self) -> &'static str {
        match self {
            GuestKind::CPython => "CODECELL_CPYTHON_WASM",
            GuestKind::RustPython => "CODECELL_RUSTPYTHON_WASM",
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
            "rustpython" => Ok(GuestKind::RustPython),
            other => Err(format!(
                "unknown guest `{other}` (available: cpython, rustpython)"
            )),
        }
    }
}

impl std::fmt::Display for GuestKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The command that builds every guest, quoted in "not built" errors.
pub const BUILD_COMMAND: &str = "python3 wasm-guests/build.py --guest all";
