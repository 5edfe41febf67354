//! The `codecell` command's contract, run as a process: one test binary, a module per command.

mod attacks;
mod common;
mod dynamic;
mod run;
mod serve;
