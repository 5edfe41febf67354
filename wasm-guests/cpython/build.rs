//! Build script: links the static libraries ../build.py prepared (CPython, its bundled
//! libraries, zlib, WASI's emulation libraries and c/shim.c) and enlarges the shadow stack.

use std::path::PathBuf;

/// The libraries in `CODECELL_STATIC_LIBS`, by name (`lib<name>.a`).
const LIBS: &[&str] = &[
    "codecell_shim",
    "python3.13",
    "mpdec",
    "expat",
    "Hacl_Hash_SHA2",
    "z",
    "wasi-emulated",
];

/// Bytes of linear memory reserved for the shadow stack: CPython's own WASI build uses 8 MiB.
const STACK_SIZE: u32 = 8 << 20;

fn main() {
    println!("cargo:rerun-if-env-changed=CODECELL_STATIC_LIBS");
    println!("cargo:rerun-if-env-changed=CODECELL_FROZEN_BLOB");
    let Ok(dir) = std::env::var("CODECELL_STATIC_LIBS") else {
        panic!(
            "CODECELL_STATIC_LIBS is not set: build this guest with `python3 wasm-guests/build.py`"
        );
    };
    let dir = PathBuf::from(dir);
    for lib in LIBS {
        let file = dir.join(format!("lib{lib}.a"));
        println!("cargo:rerun-if-changed={}", file.display());
        assert!(
            file.exists(),
            "{} is missing: run wasm-guests/build.py",
            file.display()
        );
    }
    println!("cargo:rustc-link-search=native={}", dir.display());
    for lib in LIBS {
        println!("cargo:rustc-link-lib=static={lib}");
    }
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg=-zstack-size={STACK_SIZE}");
    }
}
