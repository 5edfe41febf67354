//! The WIT imports as the shim (`c/shim.c`) calls them: plain C functions over byte buffers.
//!
//! Each returns 1 with the value in `out` or 0 with the host's error message there; lists are
//! encoded as the shim's comment says. Arguments are UTF-8 (the shim takes them from Python
//! `str`s); bytes that are not are replaced rather than trusted.

use crate::CcBuf;
use crate::codecell::guest::host;
use std::borrow::Cow;

/// The `len` bytes at `ptr` as text.
///
/// # Safety
/// `ptr` must point to `len` readable bytes (or be dangling with `len` 0).
unsafe fn text<'a>(ptr: *const u8, len: usize) -> Cow<'a, str> {
    if len == 0 {
        return Cow::Borrowed("");
    }
    // SAFETY: per the function's contract.
    String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Writes `result` to `out`: the value's bytes (encoded by `ok`) or the error message.
fn answer<T>(result: Result<T, String>, out: &mut CcBuf, ok: impl FnOnce(T) -> Vec<u8>) -> i32 {
    match result {
        Ok(value) => {
            *out = CcBuf::from_bytes(&ok(value));
            1
        }
        Err(message) => {
            *out = CcBuf::from_bytes(message.as_bytes());
            0
        }
    }
}

fn push_str(bytes: &mut Vec<u8>, s: &str) {
    let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(&s.as_bytes()[..len as usize]);
}

/// `host.ls`.
///
/// # Safety
/// `path` must point to `len` bytes and `out` to a writable buffer record.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cc_host_ls(path: *const u8, len: usize, out: *mut CcBuf) -> i32 {
    // SAFETY: per the function's contract.
    let (path, out) = unsafe { (text(path, len), &mut *out) };
    answer(host::ls(&path), out, |names| {
        let mut bytes = Vec::new();
        for name in &names {
            push_str(&mut bytes, name);
        }
        bytes
    })
}

/// `host.read`.
///
/// # Safety
/// As for [`cc_host_ls`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cc_host_read(path: *const u8, len: usize, out: *mut CcBuf) -> i32 {
    // SAFETY: per the function's contract.
    let (path, out) = unsafe { (text(path, len), &mut *out) };
    answer(host::read(&path), out, String::into_bytes)
}

/// `host.call-tool`.
///
/// # Safety
/// Each pointer must point to its length in bytes, and `out` to a writable buffer record.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cc_host_call_tool(
    category: *const u8,
    category_len: usize,
    name: *const u8,
    name_len: usize,
    args: *const u8,
    args_len: usize,
    out: *mut CcBuf,
) -> i32 {
    // SAFETY: per the function's contract.
    let (category, name, args, out) = unsafe {
        (
            text(category, category_len),
            text(name, name_len),
            text(args, args_len),
            &mut *out,
        )
    };
    answer(
        host::call_tool(&category, &name, &args),
        out,
        String::into_bytes,
    )
}

/// `host.start-tool-call`: 1 with the handle in `handle`, or 0 with the refusal in `out`.
///
/// # Safety
/// As for [`cc_host_call_tool`], and `handle` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cc_host_start_tool_call(
    category: *const u8,
    category_len: usize,
    name: *const u8,
    name_len: usize,
    args: *const u8,
    args_len: usize,
    handle: *mut u64,
    out: *mut CcBuf,
) -> i32 {
    // SAFETY: per the function's contract.
    let (category, name, args, handle, out) = unsafe {
        (
            text(category, category_len),
            text(name, name_len),
            text(args, args_len),
            &mut *handle,
            &mut *out,
        )
    };
    answer(
        host::start_tool_call(&category, &name, &args),
        out,
        |started| {
            *handle = started;
            Vec::new()
        },
    )
}

/// `host.wait-tool-calls`: the completions as (u64 handle, u8 ok, u32 length, bytes)*.
///
/// # Safety
/// `out` must point to a writable buffer record.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cc_host_wait_tool_calls(
    has_timeout: i32,
    timeout_us: u64,
    out: *mut CcBuf,
) {
    let done = host::wait_tool_calls((has_timeout != 0).then_some(timeout_us));
    let mut bytes = Vec::new();
    for completion in &done {
        bytes.extend_from_slice(&completion.handle.to_le_bytes());
        let (ok, value) = match &completion.outcome {
            Ok(v) => (1u8, v),
            Err(e) => (0u8, e),
        };
        bytes.push(ok);
        push_str(&mut bytes, value);
    }
    // SAFETY: per the function's contract.
    unsafe { *out = CcBuf::from_bytes(&bytes) };
}

/// `host.cancel-tool-call`.
#[unsafe(no_mangle)]
pub extern "C" fn cc_host_cancel_tool_call(handle: u64) {
    host::cancel_tool_call(handle);
}
