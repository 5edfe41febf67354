//! Fuzz target `manifest_store`: the property is `codecell_fuzz::manifest_store::check`'s.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codecell_fuzz::manifest_store::check(data));
