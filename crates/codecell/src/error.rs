//! The one error of the public API.

use codecell_catalog::CatalogError;
use codecell_engine::EngineError;
use codecell_manifest::DynamicToolError;

/// Anything that can go wrong setting up or running codecell; what the guest's code does wrong
/// is never an `Error` but part of the run's [`crate::Outcome`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The engine failed (guest not built, compile or instantiate failure).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The tool catalog is invalid.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// A dynamic-tool operation was refused or failed.
    #[error(transparent)]
    DynamicTool(#[from] DynamicToolError),
}

impl Error {
    /// A stable name for this kind of failure, for machine-readable output.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Engine(e) => e.code(),
            Error::Catalog(_) => "bad_catalog",
            Error::DynamicTool(_) => "dynamic_tool",
        }
    }
}
