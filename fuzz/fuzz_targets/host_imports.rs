//! Fuzz target `host_imports`: the property is `codecell_fuzz::host_imports::check`'s (it runs real guests:
//! build them first with `python3 wasm-guests/build.py --guest all`; run it with
//! `cargo fuzz run host_imports --features engine`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codecell_fuzz::host_imports::check(data));
