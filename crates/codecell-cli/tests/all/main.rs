//! The `codecell` command's contract, run as a process: one test binary, a module per command.

mod attacks;
mod batch;
mod bench;
mod common;
mod dynamic;
mod found;
mod precompile;
mod repl;
mod run;
mod serve;
