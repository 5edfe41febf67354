//! Writes each fuzz target's seed corpus (from `fixtures/`) to `DIR/TARGET/`, for
//! `cargo fuzz run TARGET DIR/TARGET`.

use std::path::PathBuf;

fn main() {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: codecell-fuzz-corpus DIR");
        std::process::exit(2);
    };
    for target in codecell_fuzz::corpus::TARGETS {
        let out = dir.join(target);
        if let Err(e) = std::fs::create_dir_all(&out) {
            eprintln!("cannot create {}: {e}", out.display());
            std::process::exit(1);
        }
        let seeds = codecell_fuzz::corpus::seeds(target);
        for (i, seed) in seeds.iter().enumerate() {
            if let Err(e) = std::fs::write(out.join(format!("seed-{i:04}")), seed) {
                eprintln!("cannot write into {}: {e}", out.display());
                std::process::exit(1);
            }
        }
        println!("{target}: {} seeds", seeds.len());
    }
}
