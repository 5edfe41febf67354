//! The `codecell` command's contract, run as a process: one test binary, a module per command.

mod attacks;
mod batch;
mod common;
mod dynamic;
mod found;
mod repl;
mod run;
mod serve;
