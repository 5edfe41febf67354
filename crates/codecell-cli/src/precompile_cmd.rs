//! `codecell precompile`: compile the guests for another platform into their cache, so that
//! platform's first run loads them instead of compiling (seconds per guest, minutes under Wine).

use crate::failure::Failure;
use crate::out;
use clap::Args;
use codecell::{ALL_GUESTS, Engine, GuestKind, Metering};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct PrecompileArgs {
    /// The target triple of the platform that will run the guests, of this host's architecture
    /// (for example `x86_64-pc-windows-gnu`).
    #[arg(long)]
    target: String,
    /// Only this guest (default: every guest).
    #[arg(long)]
    guest: Option<GuestKind>,
}

/// Compiles each guest asked for, under both meterings (each has its own artifact), printing
/// one line per artifact.
pub async fn run(args: PrecompileArgs) -> Result<ExitCode, Failure> {
    let guests = args.guest.map_or(ALL_GUESTS.to_vec(), |guest| vec![guest]);
    for guest in guests {
        for metering in [Metering::Epoch, Metering::Fuel] {
            let started = Instant::now();
            let artifact = Engine::builder()
                .guest(guest)
                .metering(metering)
                .precompile_for(&args.target)
                .map_err(Failure::engine)?;
            out::stdout(&format!(
                "{guest} ({}): {} ({:.1} s)\n",
                metering.as_str(),
                artifact.display(),
                started.elapsed().as_secs_f64()
            ))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
