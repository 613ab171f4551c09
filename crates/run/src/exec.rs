//! An external command as the load: `kiln run ... exec -- wrk -c 48 -d 40 URL`.
//!
//! The command runs in its own process group, so that stopping it at the end of the
//! measurement reaches the processes it started too: SIGINT first (load tools such as wrk,
//! vegeta and PerfTest print their results on Ctrl-C), SIGTERM and then SIGKILL if it
//! lingers. It never outlives kiln: the kernel kills it when kiln dies
//! (`PR_SET_PDEATHSIG`), and a watcher kills its whole group ([`GroupWatch`]). Its standard output and error are kept with the run (up to
//! [`CAPTURE_LIMIT`] bytes each; bytes beyond are counted, not kept), and its CPU is
//! sampled beside the target's: on a 2-core machine a load generator's own CPU decides
//! what the numbers mean.
use crate::{LoadEvents, LoadOutcome, Workload};
use kiln_os::stop::Stop;
use kiln_store::{Attachment, LoadInfo};
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Bytes of each of stdout and stderr kept with a run.
pub const CAPTURE_LIMIT: usize = 16 << 20;

/// Time a stopped command gets between SIGTERM and SIGKILL.
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
    let parent = std::process::id() as libc::pid_t;
    let mut cmd = Command::new(prog);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: the hook runs in the child between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            // The load dies with kiln, however kiln ends (kill -9, the OOM killer): it
            // must not go on hammering the server unwatched.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // kiln died before the line above: nobody would kill us then.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    cmd
}

/// An output being captured: its bytes kept and the count of those dropped.
type Captured = Option<std::thread::JoinHandle<(Vec<u8>, u64)>>;

/// The captured outputs as attachments, and a note for each that was cut.
fn collected(outputs: [(&str, Captured); 2]) -> (Vec<Attachment>, Vec<String>) {
    let mut attachments = Vec::new();
    let mut notes = Vec::new();
    for (name, h) in outputs {
        if let Some(Ok((data, dropped))) = h.map(|h| h.join()) {
            if dropped > 0 {
                notes.push(format!(
                    "{name}: {dropped} bytes beyond the first {CAPTURE_LIMIT} were not kept"
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

/// A captured stream: the bytes kept and how many more there were.
fn capture(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<(Vec<u8>, u64)> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut dropped = 0u64;
        let mut buf = [0u8; 64 * 1024];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = CAPTURE_LIMIT.saturating_sub(kept.len()).min(n);
                    kept.extend_from_slice(&buf[..room]);
                    dropped += (n - room) as u64;
                }
            }
        }
        (kept, dropped)
    })
}

/// A watcher that kills the load's whole process group if kiln dies first, however it
/// dies (`kill -9`, the OOM killer): the load's own child gets SIGKILL from the kernel
/// then (`PR_SET_PDEATHSIG`), but what it started in turn (a shell's commands) would
/// otherwise go on loading the server, orphaned. The watcher is a shell reading a line
/// from kiln: `done` when kiln has stopped the load itself, end of file when kiln died.
/// It sits in a group of its own and ignores the terminal's signals, so that only kiln's
/// word or kiln's death ends it.
struct GroupWatch {
    tell: Option<std::process::ChildStdin>,
    child: Child,
}

impl GroupWatch {
    fn start(pgid: u32) -> Option<GroupWatch> {
        let mut child = Command::new("/bin/sh")
            .args([
                "-c",
                "trap '' INT TERM HUP; read x; [ \"$x\" = done ] || kill -s KILL -- \"-$1\"",
                "kiln-load-watch",
                &pgid.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .ok()?;
        Some(GroupWatch {
            tell: child.stdin.take(),
            child,
        })
    }

    /// The load has ended under kiln's eyes: the watcher goes without killing anything.
    fn release(mut self) {
        use std::io::Write;
        if let Some(mut w) = self.tell.take() {
            let _ = w.write_all(b"done\n");
        }
        let _ = self.child.wait();
    }
}

fn signal_group(child: &Child, sig: i32) {
    // SAFETY: signalling the process group we created for our own child (pgid = its pid).
    unsafe { libc::kill(-(child.id() as i32), sig) };
}

/// Stops a running command: SIGINT, then SIGTERM, then SIGKILL, a grace period apart.
fn stop_child(child: &mut Child) -> Option<std::process::ExitStatus> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        signal_group(child, sig);
        let t = Instant::now();
        while t.elapsed() < GRACE {
            if let Ok(Some(s)) = child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    signal_group(child, libc::SIGKILL);
    child.wait().ok()
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
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                return LoadOutcome::failed_to_start(format!(
                    "cannot start the load command '{}': {e}",
                    prog.to_string_lossy()
                ))
            }
        };
        let watch = GroupWatch::start(child.id());
        let out = child.stdout.take().map(capture);
        let err = child.stderr.take().map(capture);
        events.started(Some(child.id()));
        let mut stopped_by_us = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) => {}
                Err(_) => break None,
            }
            if stop.sleep(Duration::from_millis(50)) {
                stopped_by_us = true;
                break stop_child(&mut child);
            }
        };
        if let Some(w) = watch {
            w.release();
        }
        let (attachments, notes) = collected([("load.stdout", out), ("load.stderr", err)]);
        let code = status.and_then(|s| s.code());
        let signal = status.and_then(|s| s.signal());
        let failure = failure(&shown, stopped_by_us, code, signal);
        let stdout = attachments
            .iter()
            .find(|a| a.name == "load.stdout")
            .map(|a| String::from_utf8_lossy(&a.data).into_owned())
            .unwrap_or_default();
        LoadOutcome {
            failure,
            ended_by_itself: !stopped_by_us,
            report: serde_json::json!({
                "exit_code": code,
                "signal": signal,
                "stopped_by_kiln": stopped_by_us,
                "notes": notes,
                "parsed": crate::wrk::parse(&stdout),
            }),
            attachments,
            started: true,
            ..Default::default()
        }
    }
}
