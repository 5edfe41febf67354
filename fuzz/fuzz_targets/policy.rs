//! Fuzz target `policy`: the property is `codecell_fuzz::policy::check`'s.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| codecell_fuzz::policy::check(data));
