//! `kiln agent` (hidden): what `kiln run --agent` and `-p HOST:PID` start on other hosts
//! over ssh. It speaks kiln's agent protocol on stdin/stdout; people never run it.
use super::load::LoadCommand;
use anyhow::Result;
use clap::Parser;
use std::process::ExitCode;

/// Serve a controlling kiln on this host over stdin and stdout (started by kiln run over ssh).
#[derive(Debug, clap::Args)]
pub struct Args {}

/// A load's command line as the agent receives it (`amqp -x 1 …`, as after `kiln load`).
#[derive(Debug, Parser)]
#[command(name = "kiln load", no_binary_name = true)]
struct AgentLoad {
    #[command(subcommand)]
    load: LoadCommand,
}

fn make_load(argv: &[String]) -> Result<Box<dyn kiln_run::Workload>, String> {
    let mut argv = argv.to_vec();
    // MQTT client ids are PREFIX_PID_N: the host's name in the prefix keeps agents on
    // different hosts apart, unless the load names its own prefix.
    if argv.first().map(String::as_str) == Some("mqtt")
        && !argv
            .iter()
            .any(|a| a == "--prefix" || a.starts_with("--prefix="))
    {
        let host = kiln_os::proc::read_text("/proc/sys/kernel/hostname").unwrap_or_default();
        let host: String = host
            .trim()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        argv.push("--prefix".into());
        argv.push(format!("kiln-{host}"));
    }
    let mut parsed = AgentLoad::try_parse_from(&argv).map_err(|e| e.to_string())?;
    // The controlling kiln stops the load when its run ends.
    super::load_http::lasts_the_run(&mut parsed.load);
    let (load, _) = super::load::into_load(parsed.load).map_err(|e| format!("{e:#}"))?;
    let mut rest = argv;
    if rest.first().map(String::as_str) == Some(load.protocol()) {
        rest.remove(0);
    }
    Ok(Box::new(kiln_run::EngineLoad::new(load, rest)))
}

pub fn run(_args: Args, max_input: u64) -> Result<ExitCode> {
    let code = kiln_run::remote::agent::serve(&make_load, max_input);
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}
