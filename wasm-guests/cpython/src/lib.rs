//! codecell's CPython guest: the `sandbox` world of `../wit` over CPython linked statically.
//!
//! CPython (built for WASI with pymalloc, see ../README.md) is one static library here, with the
//! C half of this guest (`c/shim.c`: start-up, the native module `_codecell_host`, the calls
//! into the Python half `py/`). This file is the WIT half: each export converts its arguments,
//! calls the shim, and converts back; `host.rs` gives the shim the WIT imports. The stdlib the
//! guest needs is frozen into a blob (`freeze.py`) the shim installs as CPython's frozen-module
//! table before start-up, so no filesystem is read, then or later.

// The generated bindings (`run-tool`'s lowered signature) and the shim's C entry points take many
// flat arguments by design.
#![allow(clippy::too_many_arguments)]

use std::ffi::c_void;

wit_bindgen::generate!({ path: "../wit", world: "sandbox-preinit" });

mod host;

/// A buffer crossing the FFI boundary; the receiver frees `ptr` with libc's `free`.
#[repr(C)]
pub(crate) struct CcBuf {
    pub(crate) ptr: *mut u8,
    pub(crate) len: usize,
}

impl CcBuf {
    const EMPTY: CcBuf = CcBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
    };

    /// A malloc'd copy of `bytes`, for the shim to free.
    pub(crate) fn from_bytes(bytes: &[u8]) -> CcBuf {
        // SAFETY: malloc of at least one byte; the copy stays within both buffers.
        unsafe {
            let ptr = malloc(bytes.len().max(1)) as *mut u8;
            if ptr.is_null() {
                return CcBuf::EMPTY;
            }
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len());
            CcBuf {
                ptr,
                len: bytes.len(),
            }
        }
    }

    /// Takes the buffer's text (invalid UTF-8 replaced) and frees it.
    fn take(self) -> String {
        if self.ptr.is_null() {
            return String::new();
        }
        // SAFETY: the shim handed over `len` initialised bytes it malloc'd.
        unsafe {
            let text = String::from_utf8_lossy(std::slice::from_raw_parts(self.ptr, self.len))
                .into_owned();
            free(self.ptr as *mut c_void);
            text
        }
    }
}

/// The shim's failure record; `line` is -1 for none.
#[repr(C)]
struct CcFailure {
    kind: CcBuf,
    message: CcBuf,
    traceback: CcBuf,
    line: i64,
}

impl CcFailure {
    const EMPTY: CcFailure = CcFailure {
        kind: CcBuf::EMPTY,
        message: CcBuf::EMPTY,
        traceback: CcBuf::EMPTY,
        line: -1,
    };

    fn take(self) -> Failure {
        Failure {
            kind: self.kind.take(),
            message: self.message.take(),
            traceback: self.traceback.take(),
            line: u32::try_from(self.line).ok(),
        }
    }
}

unsafe extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
    fn cc_init(blob: *const u8, len: usize, out: *mut CcFailure) -> i32;
    fn cc_run_code(
        cell: i32,
        code: *const u8,
        len: usize,
        options: *const u32,
        out: *mut CcFailure,
    ) -> i32;
    fn cc_run_tool(
        source: *const u8,
        source_len: usize,
        imports: *const CcBuf,
        count: usize,
        args: *const u8,
        args_len: usize,
        options: *const u32,
        json: *mut CcBuf,
        out: *mut CcFailure,
        too_large: *mut u64,
    ) -> i32;
    fn cc_python_version(out: *mut CcBuf);
}

/// The frozen stdlib and Python half, marshalled by `freeze.py` at build time.
static FROZEN: &[u8] = include_bytes!(env!("CODECELL_FROZEN_BLOB"));

/// Starts CPython if this instance has not yet (at build time, when pre-initialised).
fn ready() -> Result<(), Failure> {
    let mut failure = CcFailure::EMPTY;
    // SAFETY: the blob is 'static; `failure` is filled only when 1 is returned.
    match unsafe { cc_init(FROZEN.as_ptr(), FROZEN.len(), &mut failure) } {
        0 => Ok(()),
        _ => Err(failure.take()),
    }
}

fn options_array(options: &RunOptions) -> [u32; 4] {
    [
        options.recursion_limit,
        options.max_message_chars,
        options.max_traceback_chars,
        options.max_result_chars,
    ]
}

fn run_code(cell: i32, code: String, options: RunOptions) -> Result<(), Failure> {
    ready()?;
    let options = options_array(&options);
    let mut failure = CcFailure::EMPTY;
    // SAFETY: the pointers are valid for the call; `failure` is filled only when 1 is returned.
    match unsafe {
        cc_run_code(
            cell,
            code.as_ptr(),
            code.len(),
            options.as_ptr(),
            &mut failure,
        )
    } {
        0 => Ok(()),
        _ => Err(failure.take()),
    }
}

struct Component;

impl Guest for Component {
    fn run_snippet(code: String, options: RunOptions) -> Result<(), Failure> {
        run_code(0, code, options)
    }

    fn run_cell(code: String, options: RunOptions) -> Result<(), Failure> {
        run_code(1, code, options)
    }

    fn run_tool(
        source: String,
        imports: Vec<String>,
        args_json: String,
        options: RunOptions,
    ) -> Result<String, ToolFailure> {
        ready().map_err(ToolFailure::Raised)?;
        let names: Vec<CcBuf> = imports
            .iter()
            .map(|s| CcBuf {
                ptr: s.as_ptr() as *mut u8,
                len: s.len(),
            })
            .collect();
        let options = options_array(&options);
        let mut json = CcBuf::EMPTY;
        let mut failure = CcFailure::EMPTY;
        let mut too_large = 0u64;
        // SAFETY: every pointer is valid for the call; the shim only reads `names`' bytes, and
        // fills `json`, `failure` or `too_large` according to what it returns.
        let code = unsafe {
            cc_run_tool(
                source.as_ptr(),
                source.len(),
                names.as_ptr(),
                names.len(),
                args_json.as_ptr(),
                args_json.len(),
                options.as_ptr(),
                &mut json,
                &mut failure,
                &mut too_large,
            )
        };
        match code {
            0 => Ok(json.take()),
            2 => Err(ToolFailure::ResultTooLarge(too_large)),
            _ => Err(ToolFailure::Raised(failure.take())),
        }
    }

    fn python_version() -> String {
        let mut out = CcBuf::EMPTY;
        // SAFETY: the shim fills `out` with a malloc'd copy.
        unsafe { cc_python_version(&mut out) };
        out.take()
    }

    fn wizer_initialize() {
        // A start-up failure is kept by the shim and reported by the first run.
        let _ = ready();
    }
}

export!(Component);
