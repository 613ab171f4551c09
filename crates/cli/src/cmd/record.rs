//! `kiln record` (being built).
use std::process::ExitCode;

/// Sample a live process.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("kiln record is not available in this build")
}
