//! Captures the guest's stdout and stderr in memory, up to a cap.
//!
//! The cap is enforced here, on the host side of WASI, not in the guest: guest code can replace
//! `sys.stdout` or write to fd 1 directly, but every byte still crosses this stream. A write past
//! the cap keeps what fits and stops the run with the output limit (`ending.rs`).

use crate::ending::LimitStop;
use crate::outcome::LimitKind;
use bytes::Bytes;
use std::sync::{Arc, Mutex};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// Largest write permit handed to the guest at once, so one write never forces a big allocation.
const WRITE_PERMIT: usize = 64 * 1024;

#[derive(Debug, Default)]
struct Buffer {
    cap: usize,
    bytes: Vec<u8>,
    truncated: bool,
}

/// A capped in-memory output stream; clones share the same buffer and cap.
#[derive(Debug, Clone)]
pub(crate) struct CappedOutput {
    buffer: Arc<Mutex<Buffer>>,
}

impl CappedOutput {
    pub(crate) fn new(cap: usize) -> Self {
        CappedOutput {
            buffer: Arc::new(Mutex::new(Buffer {
                cap,
                ..Buffer::default()
            })),
        }
    }

    /// Sets the cap of a stream nothing has been written to yet (a warm instance's run).
    pub(crate) fn set_cap(&self, cap: usize) {
        lock(&self.buffer).cap = cap;
    }

    /// Empties the stream and gives it `cap` for the next turn of a session.
    pub(crate) fn reset(&self, cap: usize) {
        let mut buf = lock(&self.buffer);
        *buf = Buffer {
            cap,
            ..Buffer::default()
        };
    }

    /// The captured text (cut at a UTF-8 boundary, never longer than the cap) and whether it was truncated.
    pub(crate) fn take(&self) -> (String, bool) {
        let buf = lock(&self.buffer);
        (utf8_within(&buf.bytes, buf.cap), buf.truncated)
    }
}

fn lock(m: &Mutex<Buffer>) -> std::sync::MutexGuard<'_, Buffer> {
    // A poisoned lock only means another thread panicked mid-append; the bytes are still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Decodes `bytes` as UTF-8 (lossily) and cuts the result to at most `cap` bytes on a char boundary.
fn utf8_within(bytes: &[u8], cap: usize) -> String {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    if text.len() > cap {
        let mut end = cap;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

impl IsTerminal for CappedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl CappedOutput {
    /// Appends what fits; returns false when something had to be dropped.
    fn append(&self, data: &[u8]) -> bool {
        let mut buf = lock(&self.buffer);
        let room = buf.cap.saturating_sub(buf.bytes.len());
        if data.len() <= room {
            buf.bytes.extend_from_slice(data);
            return true;
        }
        buf.bytes.extend_from_slice(&data[..room]);
        buf.truncated = true;
        false
    }
}

#[async_trait::async_trait]
impl Pollable for CappedOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for CappedOutput {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        if self.append(&bytes) {
            Ok(())
        } else {
            Err(StreamError::Trap(LimitStop::trap(LimitKind::Output)))
        }
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(WRITE_PERMIT)
    }
}

impl tokio::io::AsyncWrite for CappedOutput {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.append(buf) {
            std::task::Poll::Ready(Ok(buf.len()))
        } else {
            std::task::Poll::Ready(Err(std::io::Error::other(LimitStop(LimitKind::Output))))
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_never_exceeds_cap_nor_splits_a_char() {
        let out = CappedOutput::new(5);
        assert!(out.append("abc".as_bytes()));
        assert!(!out.append("ééé".as_bytes()));
        let (text, truncated) = out.take();
        assert!(truncated);
        assert_eq!(text, "abcé");
        assert!(text.len() <= 5);
    }
}
