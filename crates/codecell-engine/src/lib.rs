//! codecell's wasmtime host: runs Python guests with fresh instances under [`Limits`].
//!
//! One [`Engine`] per process loads (or compiles once and caches) the guest component; each
//! [`Engine::run_snippet`] gets a fresh `Store` and instance whose only way out is the three host
//! functions backed by a [`codecell_catalog::Catalog`]. Whatever the guest does, the result is an
//! [`Outcome`]; [`EngineError`] is reserved for failures of the host itself.

mod artifact_cache;
mod bindings;
mod engine;
mod error;
mod guest;
mod host;
mod limits;
mod memory_limit;
mod outcome;
mod output;
mod pool;
mod preinit;
mod run;
mod state;
mod trap;
mod warm;

pub use engine::{Engine, EngineBuilder};
pub use error::EngineError;
pub use guest::{ALL_GUESTS, BUILD_COMMAND, GuestKind};
pub use limits::Limits;
pub use outcome::{GuestError, LimitKind, Outcome, Status, ToolCallRecord};
