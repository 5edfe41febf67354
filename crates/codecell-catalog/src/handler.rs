//! The one async trait behind every handler, and adapters from Rust closures.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::error::HandlerError;

/// The future a handler returns.
pub type HandlerFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, HandlerError>> + Send + 'a>>;

/// One async trait behind every handler.
pub trait Handler: Send + Sync {
    /// Runs the tool on arguments already checked against its `inputSchema`.
    fn call<'a>(&'a self, args: Value) -> HandlerFuture<'a>;
}

/// A handler from a synchronous closure (it runs on the caller's task: keep it quick).
pub fn handler_fn(
    f: impl Fn(Value) -> Result<Value, HandlerError> + Send + Sync + 'static,
) -> Arc<dyn Handler> {
    Arc::new(SyncFn(f))
}

/// A handler from a closure returning a future.
pub fn async_handler_fn<F, Fut>(f: F) -> Arc<dyn Handler>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
{
    Arc::new(AsyncFn(f))
}

struct SyncFn<F>(F);

impl<F> Handler for SyncFn<F>
where
    F: Fn(Value) -> Result<Value, HandlerError> + Send + Sync,
{
    fn call<'a>(&'a self, args: Value) -> HandlerFuture<'a> {
        let result = (self.0)(args);
        Box::pin(std::future::ready(result))
    }
}

struct AsyncFn<F>(F);

impl<F, Fut> Handler for AsyncFn<F>
where
    F: Fn(Value) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
{
    fn call<'a>(&'a self, args: Value) -> HandlerFuture<'a> {
        Box::pin((self.0)(args))
    }
}
