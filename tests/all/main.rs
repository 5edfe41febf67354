//! codecell's integration tests: one binary (wasmtime is linked once), a module per concept.
//! Every test that runs guest code runs on each guest (`codecell_tests::for_each_guest!`).

mod asyncio;
mod attacks;
mod batch_bounds;
mod code_mode;
mod differential;
mod dynamic_tools;
mod limits;
mod regressions;
mod sessions;
mod stdlib;
