//! The data a run's `Store` carries: WASI context, capture buffers, limits and the tool record.

use crate::determinism::{VirtualClocks, make_deterministic};
use crate::in_flight::InFlight;
use crate::limits::Limits;
use crate::memory_limit::MemoryLimiter;
use crate::metering::Ticking;
use crate::outcome::ToolCallRecord;
use crate::output::CappedOutput;
use crate::session::CallJournal;
use codecell_catalog::Catalog;
use std::time::Instant;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Per-run host state; dropped with the store at the end of the run.
pub(crate) struct RunState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) stdout: CappedOutput,
    pub(crate) stderr: CappedOutput,
    pub(crate) catalog: Option<Catalog>,
    pub(crate) limits: Limits,
    pub(crate) tool_calls: Vec<ToolCallRecord>,
    /// When the run must end; set as the export is called (a warm instance has none before).
    pub(crate) deadline: Option<Instant>,
    /// Fuel nested runs (dynamic tools this run called) used, charged to this run.
    pub(crate) nested_fuel: u64,
    /// Tool calls started concurrently (`start-tool-call`) and not yet handed back.
    pub(crate) in_flight: InFlight,
    /// A session's record of tool calls, and on restore the calls to answer from it.
    pub(crate) journal: Option<CallJournal>,
    /// A seeded run's virtual clocks, which a wait for timers alone advances instead of sleeping.
    pub(crate) virtual_clocks: Option<VirtualClocks>,
    /// The engine's epoch ticker, held while this store may run guest code (`engine::arm`).
    pub(crate) ticking: Option<Ticking>,
}

impl RunState {
    /// A state whose WASI context holds nothing: no preopened directories, no environment, no
    /// arguments, no network, empty stdin. Only stdout/stderr (captured), clocks and randomness
    /// (seeded generators and virtual clocks when the limits carry a seed).
    pub(crate) fn new(limits: &Limits, catalog: Option<Catalog>) -> Self {
        Self::with_wasi(limits, catalog, |builder| {
            limits.seed.map(|seed| make_deterministic(builder, seed))
        })
    }

    /// A state like [`RunState::new`]'s whose randomness and clocks `configure` chooses (and
    /// returns, when they are virtual).
    pub(crate) fn with_wasi(
        limits: &Limits,
        catalog: Option<Catalog>,
        configure: impl FnOnce(&mut WasiCtxBuilder) -> Option<VirtualClocks>,
    ) -> Self {
        let stdout = CappedOutput::new(limits.max_output_bytes);
        let stderr = CappedOutput::new(limits.max_output_bytes);
        let mut builder = WasiCtx::builder();
        builder
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        let virtual_clocks = configure(&mut builder);
        let wasi = builder.build();
        RunState {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(limits.memory_bytes),
            stdout,
            stderr,
            catalog,
            limits: limits.clone(),
            tool_calls: Vec::new(),
            deadline: None,
            nested_fuel: 0,
            in_flight: InFlight::default(),
            journal: None,
            virtual_clocks,
            ticking: None,
        }
    }
}

impl RunState {
    /// Gives an unused state (of an instance made ahead of time) the limits and catalog of the
    /// run about to use it. False if its memory is already over the cap.
    pub(crate) fn rearm(&mut self, limits: &Limits, catalog: Option<Catalog>) -> bool {
        self.stdout.set_cap(limits.max_output_bytes);
        self.stderr.set_cap(limits.max_output_bytes);
        self.catalog = catalog;
        self.limits = limits.clone();
        self.limiter.rearm(limits.memory_bytes)
    }
}

impl WasiView for RunState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
