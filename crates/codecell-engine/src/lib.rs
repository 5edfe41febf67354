//! codecell's wasmtime host: runs Python guests in fresh instances under [`Limits`].
//!
//! One [`Engine`] per process loads (or compiles once and caches) the guest component; each
//! [`Engine::run_snippet`] or [`Engine::run_tool`] gets a fresh `Store` and instance whose only
//! way out is the three host functions backed by a [`codecell_catalog::Catalog`]. Whatever the
//! guest does, the result is an [`Outcome`] (or a [`ToolRun`]); [`EngineError`] is reserved for
//! failures of the host itself.
//!
//! # How the pieces fit
//!
//! | type / module | what it is, and why it exists |
//! | --- | --- |
//! | [`EngineBuilder`] (`builder.rs`) | the secure defaults and the choices an embedder can make |
//! | `config.rs` | the wasmtime configuration and linker shared by every engine and the pre-initialiser |
//! | [`Engine`] (`engine.rs`) | the compiled guest, the instance pool's slots and the warm instance, behind one `Arc`; sets up each run's `Store` |
//! | `RunState` (`state.rs`) | what a run's `Store` carries: an empty WASI context, the capped output streams, the memory limiter, the catalog, the tool-call records |
//! | `run.rs` | the run loop: instantiate (or take the warm instance), call the export under the deadline, classify |
//! | `ending.rs` | how a run ends: the one limit signal (`LimitStop`), its classification and wording, the host-side clip of error reports |
//! | `host.rs` | `ls`, `read`, `call_tool`: the guest's only way out, with every guest-sized buffer bounded |
//! | [`CallerBudget`] (`budget.rs`) | what a run has left, for a tool that starts a nested run (a dynamic tool): its fuel is charged back |
//! | [`Metering`] (`metering.rs`) | what ends a busy guest at its deadline: epoch interruption (default) or fuel |
//! | `output.rs`, `memory_limit.rs` | the output cap and the memory cap, enforced on the host side of the wall |
//! | [`run_batch`] (`batch.rs`) | a stream of programs in, outcomes out, a bounded number in flight |
//! | `determinism.rs` | a seeded run's generators and virtual clocks ([`Limits::seed`]) |
//! | [`Session`] (`session/`) | one instance kept across turns, its journal, and [`SessionManager`] for servers |
//! | `warm.rs` | the next run's instance, made ahead of time; never called before its run |
//! | `pool.rs`, `artifact_cache.rs`, `preinit.rs` | the pooling allocator, the compiled-artifact cache, and RustPython's one-time snapshot |
//! | [`Outcome`], [`Failure`], [`ErrorReport`] (`outcome.rs`) | what the caller gets; its `--json` form is the CLI contract |
//!
//! # The rule for host-side costs
//!
//! Every host-side buffer whose size a guest controls has a cap derived from [`Limits`] (output
//! streams, tool arguments, results and error texts) or a fixed one (call-record names, error
//! reports: [`MAX_REPORT_KIND_BYTES`], [`MAX_REPORT_MESSAGE_BYTES`],
//! [`MAX_REPORT_TRACEBACK_BYTES`]); and host work done for a guest counts against its deadline
//! — a run past its deadline is never reported `ok`.

mod artifact_cache;
mod batch;
mod bindings;
mod budget;
mod builder;
mod config;
mod determinism;
mod ending;
mod engine;
mod error;
mod guest;
mod host;
mod in_flight;
mod limits;
mod memory_limit;
mod metering;
mod outcome;
mod output;
mod pool;
mod preinit;
mod run;
mod session;
mod state;
mod warm;

pub use batch::{BatchItem, BatchOptions, BatchRun, run_batch};
pub use budget::CallerBudget;
pub use builder::EngineBuilder;
pub use determinism::{VIRTUAL_EPOCH_SECS, VIRTUAL_TICK};
pub use ending::{MAX_REPORT_KIND_BYTES, MAX_REPORT_MESSAGE_BYTES, MAX_REPORT_TRACEBACK_BYTES};
pub use engine::Engine;
pub use error::EngineError;
pub use guest::{ALL_GUESTS, BUILD_COMMAND, GuestKind};
pub use limits::Limits;
pub use metering::Metering;
pub use outcome::{ErrorReport, Failure, LimitKind, Outcome, Status, ToolCallRecord};
pub use run::ToolRun;
pub use session::{
    JOURNAL_FORMAT, Journal, JournalCall, JournalCell, JournalClocks, JournalResult,
    MAX_RECORDED_CLOCK_READS, Session, SessionLimits, SessionManager, SessionManagerLimits,
    SessionState, Turn,
};
