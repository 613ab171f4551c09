//! `kiln collapse`.
use std::process::ExitCode;

/// Flags.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not yet")
}
