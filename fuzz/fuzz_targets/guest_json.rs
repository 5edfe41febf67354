//! Fuzz target `guest_json`: the property is `codecell_fuzz::guest_json::check`'s (it runs real guests:
//! build them first with `python3 wasm-guests/build.py --guest all`; run it with
//! `cargo fuzz run guest_json --features engine`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codecell_fuzz::guest_json::check(data));
