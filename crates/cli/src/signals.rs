//! The one owner of SIGINT, SIGTERM and SIGHUP in kiln.
//!
//! Libraries never install handlers; they are handed a [`Stop`]. Commands that produce
//! results over time (`record`, `load`, `run`) *finish* on the first signal: the stop is
//! raised, the recording or load ends, and what was measured so far is written. Commands
//! that transform a file (`collapse`, `flamegraph`, `diff`) have nothing worth keeping
//! half-done: they *exit* at once. Either way a second signal exits at once, and every
//! exit removes the temporary files of unfinished outputs, so Ctrl-C never leaves a
//! `.x.svg.*.kiln-tmp` behind, and kills the process groups of the programs kiln started
//! (set-up commands, loads, ssh), so none is left orphaned. The exit status after a signal is 128 + its number (130
//! for Ctrl-C), in every command, after the results are written.
use kiln_os::stop::Stop;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// What the first signal does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnSignal {
    /// Raise the stop and let the command finish and write its results.
    Finish,
    /// Remove unfinished outputs and exit.
    Exit,
}

fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Installs the handler and returns the stop it raises. Call once, from `main`.
///
/// SIGXFSZ (a write past `ulimit -f`) is caught and does nothing, so that the write fails
/// with EFBIG and kiln handles it as any full disk (a run it cannot save is kept
/// elsewhere) instead of dying without a word. It is caught rather than ignored: an
/// ignored signal stays ignored in the programs kiln starts, a caught one is reset for
/// them.
pub fn install(mode: OnSignal) -> std::io::Result<Stop> {
    signal_hook::flag::register(
        signal_hook::consts::SIGXFSZ,
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    )?;
    let stop = Stop::new();
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let s = stop.clone();
    std::thread::Builder::new()
        .name("kiln-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if mode == OnSignal::Exit || s.is_raised() {
                    // Nothing kiln started outlives it (a set-up command, a load, ssh).
                    kiln_os::child::kill_all();
                    kiln_os::io::remove_temporary_files();
                    eprintln!("kiln: {}: stopped", name(sig));
                    std::process::exit(128 + sig);
                }
                eprintln!(
                    "kiln: {}: finishing and writing results (again to quit at once)",
                    name(sig)
                );
                s.raise_for_signal(sig);
            }
        })?;
    Ok(stop)
}

/// The exit status of a command that `stop` ended: 128 + the signal's number.
pub fn exit_code(stop: &Stop) -> Option<std::process::ExitCode> {
    stop.signal()
        .map(|s| std::process::ExitCode::from((128 + s).clamp(0, 255) as u8))
}
