//! codecell-manifest: canonical JSON, dynamic-tool manifests, schema checks, the on-disk store
//! with its append-only event log, and the scope-aware registry. It knows nothing of wasm:
//! running tool code is delegated to a [`ToolRunner`].

#![warn(missing_docs)]

pub mod auth;
pub mod canonical;
pub mod clock;
pub mod error;
pub mod event_log;
mod json_text;
pub mod load_errors;
pub mod manifest;
mod pyvalue;
pub mod registry;
pub mod runner;
pub mod schema;
pub mod smoke;
pub mod store;
pub mod ttl;
mod verify;

pub use auth::read_store_key;
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::DynamicToolError;
pub use event_log::{Event, Operation};
pub use manifest::{Manifest, Scope};
pub use registry::{Approval, Registry, RegistryOptions, VersionsReport};
pub use runner::{RunError, RunFuture, ToolRunner};
