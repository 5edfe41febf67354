//! Fuzz target `catalog`: the property is `codecell_fuzz::catalog::check`'s.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codecell_fuzz::catalog::check(data));
