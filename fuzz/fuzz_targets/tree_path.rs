//! Fuzz target `tree_path`: the property is `codecell_fuzz::tree_path::check`'s.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codecell_fuzz::tree_path::check(data));
