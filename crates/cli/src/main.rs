//! `kiln`: load it, profile it, see why.
//!
//! The command line over the library crates: each subcommand (`cmd/`) parses its flags,
//! turns them into the options of the crates that do the work (collapse, record, run,
//! store, report…) and prints what they return; the orchestration a command needs (a run's
//! load, recorder and store together, the agents of several hosts) lives in `kiln-run`.
//! Signals have one owner (`signals`). Errors are printed once, here.
use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cmd;
mod signals;

/// kiln drives a load against a server, profiles it, renders flame graphs and compares runs.
///
/// Exit codes: 0 success; 1 error (bad input with --strict, unreadable file, failed
/// recording or load); 2 bad command line; 3 a kiln compare --fail-if condition fired (past
/// its limit and beyond noise); 4 one cannot tell (past its limit, not provably beyond
/// noise); 141, quietly, when the reader of standard output went away (| head -1).
#[derive(Debug, Parser)]
#[command(name = "kiln", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,

    /// The most bytes one input may be read whole as or inflate to: a pprof or .kiln file,
    /// gzip or zstd data (kiln collapse bomb.gz), a stored run's blob (an imported .kiln
    /// run), an answer of kiln run --pprof. Past it kiln stops with an error naming the
    /// input instead of filling the memory. Text streamed (perf script, folded) has no
    /// limit unless compressed. A size in bytes or with K, M, G, T (powers of 1024).
    /// Example: --max-input 4G
    #[arg(long, global = true, value_name = "SIZE", default_value = "1G", value_parser = kiln_model::input::parse_size)]
    max_input: u64,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Turn profiler output (perf script text, perf.data, folded, bpftrace/bcc, pprof, .kiln) into folded stacks or another format (pprof, speedscope, Firefox Profiler, OTLP).
    Collapse(cmd::collapse::Args),
    /// Render folded stacks or a profile as an SVG flame graph (or an HTML viewer with -o x.html).
    Flamegraph(cmd::flamegraph::Args),
    /// Compare two profiles: differential folded stacks, a flame graph, and a table of changes.
    Diff(cmd::diff::Args),
    /// Sample a live process (CPU, off-CPU, memory events) straight to a profile (.kiln, pprof, speedscope, Firefox Profiler, OTLP) or flame graph.
    Record(cmd::record::Args),
    /// Drive a load against a server (AMQP 0.9.1 with PerfTest's flags, MQTT with emqtt-bench's, HTTP/1.1 with wrk's).
    #[command(subcommand)]
    Load(cmd::load::LoadCommand),
    /// Drive a load and profile the server under it on one clock; every run is stored.
    Run(cmd::run::Args),
    /// List, show, remove, export and import stored runs.
    Runs(cmd::runs::Args),
    /// Serve a controlling kiln over stdin/stdout (what kiln run starts on other hosts over ssh).
    #[command(hide = true)]
    Agent(cmd::agent::Args),
    /// Compare stored runs or groups of repeats: settings held or not, outcomes improved, regressed, no change or cannot tell, functions judged alike; --fail-if exits 3 (fired) or 4 (cannot tell).
    Compare(cmd::compare::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let max_input = cli.max_input;
    let on_signal = match cli.command {
        Command::Record(_) | Command::Load(_) | Command::Run(_) => signals::OnSignal::Finish,
        Command::Collapse(_)
        | Command::Flamegraph(_)
        | Command::Diff(_)
        | Command::Runs(_)
        | Command::Compare(_)
        | Command::Agent(_) => signals::OnSignal::Exit,
    };
    let stop = match signals::install(on_signal) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("Error: cannot install the signal handler: {e}");
            return ExitCode::from(1);
        }
    };
    let result = match cli.command {
        Command::Collapse(a) => cmd::collapse::run(a, max_input),
        Command::Flamegraph(a) => cmd::flamegraph::run(a, max_input),
        Command::Diff(a) => cmd::diff::run(a, max_input),
        Command::Record(a) => cmd::record::run(a, &stop),
        Command::Load(a) => cmd::load::run(a, &stop),
        Command::Run(a) => cmd::run::run(a, max_input, &stop),
        Command::Runs(a) => cmd::runs::run(a, max_input),
        Command::Compare(a) => cmd::compare::run(a, max_input),
        Command::Agent(a) => cmd::agent::run(a, max_input),
    };
    match result {
        // Results are written; a signal still says the command was cut short.
        Ok(code) => signals::exit_code(&stop).unwrap_or(code),
        // The reader of standard output went away (`kiln collapse big.folded | head -1`):
        // nothing is wrong, and nothing is said; 141 (128 + SIGPIPE) as a shell reports a
        // program SIGPIPE ended, the same in every command.
        Err(e) if broken_pipe(&e) => {
            kiln_os::io::remove_temporary_files();
            ExitCode::from(141)
        }
        Err(e) => {
            // Errors quote names, files and servers: shown without their control
            // characters.
            eprintln!("Error: {}", kiln_model::text::clean_lines(&error_text(&e)));
            // Cut short by a signal (a load still in its handshake, say): the signal's
            // code, as when the command completes.
            signals::exit_code(&stop).unwrap_or(ExitCode::from(1))
        }
    }
}

/// Whether `e`, or any of its causes, is a write to a pipe whose reader is gone (EPIPE):
/// an I/O error, or one kept inside a JSON writer's or the store's error.
fn broken_pipe(e: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    e.chain().any(|cause| {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return io.kind() == BrokenPipe;
        }
        if let Some(j) = cause.downcast_ref::<serde_json::Error>() {
            return j.io_error_kind() == Some(BrokenPipe);
        }
        matches!(
            cause.downcast_ref::<kiln_store::StoreError>(),
            Some(kiln_store::StoreError::Io { error, .. }) if error.kind() == BrokenPipe
        )
    })
}

/// An error and its causes, `: `-joined as `{:#}` prints them, each said once: many
/// errors quote their cause in their own message (SQLite's "disk I/O error" in the
/// store's), which would otherwise be printed twice.
fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if s.is_empty() || out.contains(&s) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_broken_pipe_is_found_anywhere_in_the_chain() {
        let pipe = || std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(broken_pipe(&anyhow::Error::new(pipe())));
        let e = anyhow::Error::new(kiln_model::ModelError::Io(pipe())).context("Failed to write");
        assert!(broken_pipe(&e));
        let j = serde_json::to_writer(Failing, &[1, 2]).unwrap_err();
        assert!(broken_pipe(&anyhow::Error::new(j).context("json")));
        assert!(!broken_pipe(&anyhow::anyhow!("Broken pipe").context("x")));
        let other = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert!(!broken_pipe(&anyhow::Error::new(other)));
    }

    /// A writer whose reader is gone.
    struct Failing;

    impl std::io::Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_cause_quoted_by_its_error_is_said_once() {
        let io = std::io::Error::other("disk I/O error");
        let e = anyhow::Error::new(io)
            .context("run store 'x.db': disk I/O error")
            .context("Cannot save the run in 'x.db'");
        assert_eq!(
            error_text(&e),
            "Cannot save the run in 'x.db': run store 'x.db': disk I/O error"
        );
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_text(&e), "outer: inner");
    }
}
