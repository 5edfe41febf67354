//! Per-run limits and their safe defaults.

use std::time::Duration;

/// Every bound a run is held to; [`Limits::default`] is safe for untrusted code.
///
/// | limit | default | when exceeded |
/// | --- | --- | --- |
/// | `fuel` | 3e11 units (20–40 s of compute on the reference machine), enforced only by a [`crate::Metering::Fuel`] engine | run ends, [`crate::LimitKind::Fuel`] |
/// | `memory_bytes` | 128 MiB of linear memory | allocation fails inside the guest (`MemoryError`), run ends as [`crate::LimitKind::Memory`] unless the guest recovers |
/// | `deadline` | 10 s wall clock, host calls included | run ends, [`crate::LimitKind::Deadline`] |
/// | `max_output_bytes` | 10,000 bytes of stdout (and, separately, of stderr) | output is truncated at the cap and the run ends, [`crate::LimitKind::Output`] |
/// | `max_tool_calls` | 1,000 calls | run ends, [`crate::LimitKind::ToolCalls`] |
/// | `max_tool_args_bytes` | 1 MiB per call | that call raises `ToolError` in the guest |
/// | `max_tool_result_bytes` | 1 MiB per call | that call raises `ToolError` in the guest |
/// | `recursion_limit` | 500 Python frames | `RecursionError` in the guest |
/// | `seed` | none: real randomness and clocks | with a seed, the run is deterministic (`determinism.rs`) |
///
/// The deadline is what ends a busy snippet under either metering: the default engine
/// ([`crate::Metering::Epoch`]) has no instruction budget at all, and the default fuel outlasts
/// the default deadline. On the reference machine (shared 2-core x86-64; `codecell bench`
/// reports the figure as `fuel_per_second`) a busy guest burns 0.7e10–1.1e10 units of fuel a
/// second while the machine is loaded and about 1.7e10 when it is quiet, so fuel `F` buys roughly
/// `F / 1e10` seconds of compute: 5e9 is half a second, and the default 3e11 is 20–40 s. Set
/// `fuel` lower when an exact, machine-independent budget is wanted (and build the engine with
/// fuel metering).
///
/// The output cap ends the run rather than silently dropping the rest: a snippet that floods
/// output is burning its budget on text nobody will read, and the caller is told exactly where
/// the output was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Wasm fuel (roughly, instructions) the run may consume; enforced, and reported as
    /// `fuel_used`, only by an engine built with [`crate::Metering::Fuel`].
    pub fuel: u64,
    /// Cap on the guest's linear memory, in bytes.
    pub memory_bytes: usize,
    /// Wall-clock budget for the whole run, including time spent in host calls.
    pub deadline: Duration,
    /// Cap on captured stdout bytes (stderr has its own cap of the same size).
    pub max_output_bytes: usize,
    /// Maximum number of `call_tool` calls in one run.
    pub max_tool_calls: u32,
    /// Maximum size of one call's JSON arguments, in bytes.
    pub max_tool_args_bytes: usize,
    /// Maximum size of one call's JSON result, in bytes.
    pub max_tool_result_bytes: usize,
    /// Python recursion limit set at the start of the run.
    pub recursion_limit: u32,
    /// Makes the run reproducible: WASI random (so `os.urandom`, `random`, `uuid4`) is drawn
    /// from a generator seeded with it, and the clocks the guest sees are virtual.
    pub seed: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: 300_000_000_000,
            memory_bytes: 128 << 20,
            deadline: Duration::from_secs(10),
            max_output_bytes: 10_000,
            max_tool_calls: 1_000,
            max_tool_args_bytes: 1 << 20,
            max_tool_result_bytes: 1 << 20,
            recursion_limit: 500,
            seed: None,
        }
    }
}
