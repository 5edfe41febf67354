//! Errors of the public API.

/// Anything that can go wrong setting up or running code mode (guest failures are in `Outcome`).
#[derive(Debug, thiserror::Error)]
pub enum CodecellError {
    /// The engine failed (guest not built, compile or instantiate failure).
    #[error(transparent)]
    Engine(#[from] codecell_engine::EngineError),
    /// The tool catalog is invalid.
    #[error(transparent)]
    Catalog(#[from] codecell_catalog::CatalogError),
}
