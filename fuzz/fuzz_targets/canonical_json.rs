//! Fuzz target `canonical_json`: the property is `codecell_fuzz::canonical_json::check`'s.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codecell_fuzz::canonical_json::check(data));
