//! codecell's own tokio runtime: every run, sync or async, executes on it, so Python never
//! needs an event-loop bridge library (pyo3-async-runtimes' can crash CPython at exit).

use std::sync::OnceLock;
use tokio::runtime::Runtime;

/// The process-wide runtime, started on first use and never shut down: its threads hold no
/// Python state once the shutdown gate closes, and the OS reclaims them at exit.
pub(crate) fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(
                std::thread::available_parallelism()
                    .map(|n| n.get().clamp(2, 8))
                    .unwrap_or(2),
            )
            .thread_name("codecell")
            .enable_all()
            .build()
            .expect("cannot start codecell's tokio runtime")
    })
}
