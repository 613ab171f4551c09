//! An external command as the load: `kiln run ... exec -- wrk -c 48 -d 40 URL`.
//!
//! The command runs in its own process group ([`kiln_os::child`]), so that stopping it at
//! the end of the measurement reaches the processes it started too: SIGINT first (load
//! tools such as wrk, vegeta and PerfTest print their results on Ctrl-C), SIGTERM and then
//! SIGKILL if it lingers; when a signal stopped kiln, within a second. It never outlives
//! kiln: the kernel kills it when kiln dies (`PR_SET_PDEATHSIG`), a watcher kills its
//! whole group, and so does kiln's signal handler before it exits. Its standard output
//! and error are kept with the run (their first and last bytes, up to
//! [`kiln_os::child::CAPTURE_LIMIT`] each; the bytes between are counted, not kept), and its CPU is
//! sampled beside the target's: on a 2-core machine a load generator's own CPU decides
//! what the numbers mean.
use crate::{LoadEvents, LoadOutcome, Workload};
use kiln_os::child::{Capture, Captured, GroupWatch, Registered};
use kiln_os::stop::Stop;
use kiln_store::{Attachment, LoadInfo};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Time a stopped command gets between SIGINT, SIGTERM and SIGKILL at the end of a
/// measurement (a load tool printing its results).
const GRACE: Duration = Duration::from_secs(5);

/// An external command driving the load.
#[derive(Debug, Clone)]
pub struct ExecLoad {
    argv: Vec<OsString>,
}

impl ExecLoad {
    /// The command `argv[0]` with arguments `argv[1..]`.
    pub fn new(argv: Vec<OsString>) -> Self {
        ExecLoad { argv }
    }
}

/// The load command, its output piped, in a process group of its own, killed if kiln
/// dies.
fn command(prog: &OsString, args: &[OsString]) -> Command {
    let mut cmd = Command::new(prog);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The load dies with kiln, however kiln ends (kill -9, the OOM killer): it must not
    // go on hammering the server unwatched.
    kiln_os::child::own_group(&mut cmd);
    cmd
}

/// The captured outputs as attachments, and a note for each that was cut.
fn collected(outputs: [(&str, Option<Capture>); 2]) -> (Vec<Attachment>, Vec<String>) {
    let mut attachments = Vec::new();
    let mut notes = Vec::new();
    for (name, c) in outputs {
        if let Some(Captured {
            data,
            total,
            left_out,
        }) = c.map(Capture::finish)
        {
            if left_out > 0 {
                notes.push(format!(
                    "{name}: {total} bytes written; the first and the last {} MiB kept, the {left_out} bytes between left out",
                    kiln_os::child::KEEP_EACH >> 20
                ));
            }
            attachments.push(Attachment {
                name: name.into(),
                data,
            });
        }
    }
    (attachments, notes)
}

/// The last lines (at most 3, 400 characters) a stream of the load command carried, on
/// one line, control characters escaped; `None` when it wrote nothing.
fn last_words(attachments: &[Attachment], name: &str) -> Option<String> {
    let a = attachments.iter().find(|a| a.name == name)?;
    let text = String::from_utf8_lossy(&a.data);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let last = lines[lines.len().saturating_sub(3)..].join(" | ");
    if last.is_empty() {
        return None;
    }
    let mut out: String = last.escape_debug().collect();
    if out.chars().count() > 400 {
        out = format!(
            "…{}",
            out.chars()
                .rev()
                .take(400)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<String>()
        );
    }
    Some(out)
}

/// Why the load command's end is a failure: none when kiln stopped it or it exited 0.
fn failure(
    shown: &str,
    stopped_by_us: bool,
    code: Option<i32>,
    signal: Option<i32>,
) -> Option<String> {
    match (stopped_by_us, code, signal) {
        (true, _, _) => None,
        (false, Some(0), _) => None,
        (false, Some(c), _) => Some(format!("the load command '{shown}' exited with status {c}")),
        (false, None, Some(s)) => Some(format!(
            "the load command '{shown}' was killed by signal {s}"
        )),
        (false, None, None) => Some(format!(
            "the load command '{shown}' could not be waited for"
        )),
    }
}

/// Stops a running command: SIGINT, then SIGTERM, then SIGKILL, `grace` apart.
fn stop_child(child: &mut Child, grace: Duration) -> Option<std::process::ExitStatus> {
    'signals: for sig in [libc::SIGINT, libc::SIGTERM] {
        kiln_os::child::signal_group(child.id() as i32, sig);
        let t = Instant::now();
        while t.elapsed() < grace {
            if kiln_os::child::has_exited(child) {
                break 'signals;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // The leader ended or lingered: its group goes with it, then it is reaped.
    kiln_os::child::end_group(child, Duration::ZERO)
}

impl Workload for ExecLoad {
    /// An external command reports no seconds: nothing to align.
    fn align_ticks(&mut self, _origin_mono_ns: u64) {}

    fn info(&self) -> LoadInfo {
        LoadInfo {
            protocol: "exec".into(),
            argv: self
                .argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            unit: String::new(),
            completed: String::new(),
            report: serde_json::Value::Null,
            rate: None,
            concurrency: None,
        }
    }

    fn run(&mut self, stop: &Stop, events: &mut dyn LoadEvents) -> LoadOutcome {
        let shown = self.info().argv.join(" ");
        let Some((prog, args)) = self.argv.split_first() else {
            return LoadOutcome::failed_to_start("no load command given after `exec --`".into());
        };
        let mut cmd = command(prog, args);
        let watch = GroupWatch::start();
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                return LoadOutcome::failed_to_start(format!(
                    "cannot start the load command '{}': {e}",
                    prog.to_string_lossy()
                ))
            }
        };
        let watch = watch.map(|w| w.watch(child.id()));
        let registered = Registered::new(child.id());
        let out = child.stdout.take().map(Capture::start);
        let err = child.stderr.take().map(Capture::start);
        events.started(Some(child.id()));
        let mut stopped_by_us = false;
        let status = loop {
            if kiln_os::child::has_exited(&child) {
                // What it left running in its group goes with it.
                break kiln_os::child::end_group(&mut child, Duration::ZERO);
            }
            if stop.sleep(Duration::from_millis(50)) {
                stopped_by_us = true;
                // A signal stopped kiln: the person waits, the load ends within a second.
                let grace = match stop.signal() {
                    Some(_) => kiln_os::child::STOP_GRACE / 2,
                    None => GRACE,
                };
                break stop_child(&mut child, grace);
            }
        };
        if let Some(w) = watch {
            w.release();
        }
        drop(registered);
        let (attachments, notes) = collected([("load.stdout", out), ("load.stderr", err)]);
        let code = status.and_then(|s| s.code());
        let signal = status.and_then(|s| s.signal());
        // What it said last, with the failure: why it failed is in its own words.
        let failure = failure(&shown, stopped_by_us, code, signal).map(|f| {
            match ["load.stderr", "load.stdout"]
                .iter()
                .find_map(|n| last_words(&attachments, n))
            {
                Some(w) => format!("{f}, saying: {w}"),
                None => f,
            }
        });
        let text = |name: &str| {
            attachments
                .iter()
                .find(|a| a.name == name)
                .map(|a| String::from_utf8_lossy(&a.data).into_owned())
                .unwrap_or_default()
        };
        LoadOutcome {
            failure,
            ended_by_itself: !stopped_by_us,
            report: serde_json::json!({
                "exit_code": code,
                "signal": signal,
                "stopped_by_kiln": stopped_by_us,
                "notes": notes,
                "parsed": crate::summary::parse(&text("load.stdout"), &text("load.stderr")),
            }),
            attachments,
            started: true,
            ..Default::default()
        }
    }
}
