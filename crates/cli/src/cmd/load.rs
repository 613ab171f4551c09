//! `kiln load` (being built).
use std::process::ExitCode;

/// Load generators.
#[derive(Debug, clap::Subcommand)]
pub enum LoadCommand {
    /// AMQP 0.9.1 (RabbitMQ), PerfTest-compatible flags.
    Amqp(AmqpArgs),
}

/// `kiln load amqp` flags.
#[derive(Debug, clap::Args)]
pub struct AmqpArgs {}

pub fn run(_cmd: LoadCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("kiln load is not available in this build")
}
