//! Children kiln starts — a variant's set-up command, `--after-each`, an `exec` load, the
//! `ssh` of an agent — and how they end.
//!
//! Each runs in a process group of its own, so that ending it reaches what it started (a
//! shell's commands, a load tool's workers), and so that a Ctrl-C at the terminal is
//! kiln's to handle, not theirs. It never outlives kiln:
//!
//! * the kernel kills it when kiln dies (`PR_SET_PDEATHSIG`, [`own_group`]);
//! * a watcher kills its whole group when kiln dies by `kill -9` ([`GroupWatch`]);
//! * the binary's signal handler kills every group still registered ([`kill_all`]) before
//!   it exits on a second signal;
//! * and whoever waits for it ends it ([`end_group`]) on the first stop or at its deadline
//!   ([`run`]).
//!
//! Its output is captured within a bound ([`Capture`]): the first and the last
//! [`KEEP_EACH`] bytes of each stream, the bytes between counted and said, so that no
//! stored run holds more than its readers accept and a command that writes a gigabyte
//! does not hold a gigabyte of kiln's memory.
use crate::stop::Stop;
use std::collections::VecDeque;
use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bytes kept of each end of a captured stream: at most twice this is kept in all.
pub const KEEP_EACH: usize = 8 << 20;

/// The most bytes a captured stream keeps ([`Capture`]).
pub const CAPTURE_LIMIT: usize = 2 * KEEP_EACH;

/// How long a group gets between SIGTERM and SIGKILL when kiln ends it on a stop: the
/// whole end stays within a second of the signal.
pub const STOP_GRACE: Duration = Duration::from_millis(500);

/// Process groups of children now running, for [`kill_all`].
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn groups() -> std::sync::MutexGuard<'static, Vec<i32>> {
    GROUPS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Kills (SIGKILL) the process group of every child still registered. For the signal
/// handler about to exit the process: nothing kiln started may be left running, orphaned
/// under PID 1.
pub fn kill_all() {
    for pgid in groups().drain(..) {
        signal_group(pgid, libc::SIGKILL);
    }
}

/// Registers the process group `pgid` (a child started with [`own_group`]: its pid) for
/// [`kill_all`], until [`unregister`].
pub fn register(pgid: u32) {
    groups().push(pgid as i32);
}

/// The group `pgid` was ended: [`kill_all`] leaves it alone.
pub fn unregister(pgid: u32) {
    let mut g = groups();
    if let Some(i) = g.iter().position(|&p| p == pgid as i32) {
        g.swap_remove(i);
    }
}

/// A child's process group, registered for [`kill_all`] while this lives.
#[derive(Debug)]
pub struct Registered(u32);

impl Registered {
    /// Registers the group `pgid` (a child started with [`own_group`]: its pid).
    pub fn new(pgid: u32) -> Registered {
        register(pgid);
        Registered(pgid)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        unregister(self.0);
    }
}

/// Sends `sig` to the process group `pgid` (never to a group kiln did not make: `pgid`
/// is a child's own, [`own_group`]).
pub fn signal_group(pgid: i32, sig: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) with a negative pid addresses one process group; the group is a
        // child's own and the child is reaped only after its group was signalled, so the
        // id cannot have been reused.
        unsafe { libc::kill(-pgid, sig) };
    }
}

/// Makes `cmd` start in a process group of its own and die with kiln (SIGKILL when the
/// thread that starts it ends: start it from a thread that waits for it, or lives as long
/// as the process).
pub fn own_group(cmd: &mut Command) {
    cmd.process_group(0);
    // SAFETY: getpid is async-signal-safe and has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the hook runs in the child between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid); nothing is allocated.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // kiln died before the line above: nobody would kill us then.
            if libc::getppid() != parent {
                return Err(io::Error::other("kiln ended"));
            }
            Ok(())
        });
    }
}

/// Whether `child` has exited, without reaping it (`waitid` with `WNOWAIT`): while it is
/// not reaped its pid — its group's id — cannot be reused, so its group can still be
/// signalled safely.
pub fn has_exited(child: &Child) -> bool {
    // SAFETY: siginfo_t is plain data; zeroed is a valid value for waitid to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid on our own child's pid with a valid out-pointer; WNOWAIT leaves it
    // waitable.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            child.id() as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: si_pid is filled (nonzero) by waitid when a child changed state.
    r != 0 || unsafe { info.si_pid() } != 0
}

/// Ends `child`'s process group (it was started with [`own_group`]): SIGTERM, then
/// SIGKILL after `grace` (at once when `grace` is zero), and reaps the child. How it
/// ended.
pub fn end_group(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    let pgid = child.id() as i32;
    if !grace.is_zero() {
        signal_group(pgid, libc::SIGTERM);
        let t = Instant::now();
        while t.elapsed() < grace {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(_) => break,
            }
        }
    }
    // The group whatever the leader did: what it started may linger after it.
    signal_group(pgid, libc::SIGKILL);
    child.wait().ok()
}

/// A watcher that kills a child's whole process group if kiln dies first, however it
/// dies (`kill -9`, the OOM killer): the child gets SIGKILL from the kernel then
/// (`PR_SET_PDEATHSIG`), but what it started in turn (a shell's commands) would otherwise
/// go on, orphaned. The watcher is a shell reading lines from kiln: the group to watch,
/// then `done` when kiln has ended the child itself, or end of file when kiln died. It
/// sits in a group of its own and ignores the terminal's signals, so that only kiln's word
/// or kiln's death ends it. It is started before the child ([`GroupWatch::start`]) and
/// told its group as soon as the child is ([`GroupWatch::watch`]): a watcher started
/// after the child would leave a window, as long as a shell takes to start on a busy
/// machine, in which kiln's death orphans what the child has started.
#[derive(Debug)]
pub struct GroupWatch {
    tell: Option<std::process::ChildStdin>,
    child: Child,
}

impl GroupWatch {
    /// A watcher watching nothing yet; `None` when no shell could be started.
    pub fn start() -> Option<GroupWatch> {
        let mut child = Command::new("/bin/sh")
            .args([
                "-c",
                "trap '' INT TERM HUP; read g || exit 0; read x; [ \"$x\" = done ] || kill -s KILL -- \"-$g\"",
                "kiln-group-watch",
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

    /// Watches the process group `pgid` (the pipe holds the line: the shell need not
    /// have started yet).
    pub fn watch(mut self, pgid: u32) -> GroupWatch {
        use std::io::Write;
        if let Some(w) = self.tell.as_mut() {
            let _ = writeln!(w, "{pgid}");
        }
        self
    }

    /// The child has ended under kiln's eyes: the watcher goes without killing anything.
    pub fn release(mut self) {
        use std::io::Write;
        if let Some(mut w) = self.tell.take() {
            let _ = w.write_all(b"done\n");
        }
    }
}

impl Drop for GroupWatch {
    /// Unreleased, its group is killed (kiln is going down); unarmed, it just ends.
    fn drop(&mut self) {
        drop(self.tell.take());
        let _ = self.child.wait();
    }
}

/// A stream's output as captured: its first and last bytes, and how many there were.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Captured {
    /// What was kept: everything when it fit; else the first [`KEEP_EACH`] bytes, a line
    /// saying how many bytes were left out, and the last [`KEEP_EACH`].
    pub data: Vec<u8>,
    /// Bytes the stream carried in all.
    pub total: u64,
    /// Bytes left out between the head and the tail (0: the whole stream is kept).
    pub left_out: u64,
}

impl Captured {
    /// What was left out, in words (`stdout: 1181116006 bytes written; the first … kept`);
    /// `None` when nothing was.
    pub fn note(&self, name: &str) -> Option<String> {
        (self.left_out > 0).then(|| {
            format!(
                "{name}: {} bytes written; the first and the last {} MiB kept, the {} bytes between left out",
                self.total,
                KEEP_EACH >> 20,
                self.left_out
            )
        })
    }
}

/// Reads a stream on a thread of its own, keeping its head and its tail within
/// [`CAPTURE_LIMIT`].
#[derive(Debug)]
pub struct Capture(std::thread::JoinHandle<Captured>);

impl Capture {
    /// Starts reading `r` until it ends.
    pub fn start(r: impl Read + Send + 'static) -> Capture {
        Capture(std::thread::spawn(move || capture(r, KEEP_EACH)))
    }

    /// Waits for the stream to end: what was captured.
    pub fn finish(self) -> Captured {
        self.0.join().unwrap_or_default()
    }
}

/// The head and tail of `r`, `keep` bytes each.
fn capture(mut r: impl Read, keep: usize) -> Captured {
    let mut head = Vec::new();
    let mut tail: VecDeque<u8> = VecDeque::new();
    let mut total = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        total += n as u64;
        let room = keep.saturating_sub(head.len()).min(n);
        head.extend_from_slice(&buf[..room]);
        let rest = &buf[room..n];
        if rest.len() >= keep {
            tail.clear();
            tail.extend(&rest[rest.len() - keep..]);
        } else {
            let over = (tail.len() + rest.len()).saturating_sub(keep);
            tail.drain(..over);
            tail.extend(rest);
        }
    }
    let left_out = total - head.len() as u64 - tail.len() as u64;
    let mut data = head;
    if left_out > 0 {
        data.extend_from_slice(format!("\n[kiln: {left_out} bytes left out here]\n").as_bytes());
    }
    data.extend(tail);
    Captured {
        data,
        total,
        left_out,
    }
}

/// Why kiln ended a command before it ended by itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// It ended by itself.
    Itself,
    /// The stop was raised (by `signal`, when a signal raised it).
    Stopped(Option<i32>),
    /// It ran past its deadline.
    TimedOut(Duration),
}

/// A command [`run`] waited for.
#[derive(Debug)]
pub struct Finished {
    /// How it ended (`None`: it could not be waited for).
    pub status: Option<ExitStatus>,
    /// Whether kiln ended it.
    pub ended: Ended,
    /// Its standard output.
    pub stdout: Captured,
    /// Its standard error.
    pub stderr: Captured,
}

impl Finished {
    /// Its exit code, when it exited.
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// The signal that ended it, when one did.
    pub fn signal(&self) -> Option<i32> {
        self.status.and_then(|s| s.signal())
    }
}

/// Runs `cmd` (its stdin empty, its output captured) in a group of its own until it ends,
/// `stop` is raised or `timeout` passes; then its group is ended within [`STOP_GRACE`]
/// and reaped. Errors only when it cannot be started.
pub fn run(mut cmd: Command, stop: &Stop, timeout: Duration) -> io::Result<Finished> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    own_group(&mut cmd);
    let watch = GroupWatch::start();
    let mut child = cmd.spawn()?;
    let watch = watch.map(|w| w.watch(child.id()));
    let registered = Registered::new(child.id());
    let out = child.stdout.take().map(Capture::start);
    let err = child.stderr.take().map(Capture::start);
    let deadline = Instant::now().checked_add(timeout);
    let (status, ended) = loop {
        if has_exited(&child) {
            // The leader is gone; what it left in its group goes too (its output pipes
            // would otherwise stay open).
            break (end_group(&mut child, Duration::ZERO), Ended::Itself);
        }
        let next = Instant::now() + Duration::from_millis(20);
        let wake = deadline.map_or(next, |d| d.min(next));
        if stop.sleep_until(wake) {
            break (
                end_group(&mut child, STOP_GRACE),
                Ended::Stopped(stop.signal()),
            );
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break (end_group(&mut child, STOP_GRACE), Ended::TimedOut(timeout));
        }
    };
    if let Some(w) = watch {
        w.release();
    }
    drop(registered);
    Ok(Finished {
        status,
        ended,
        stdout: out.map(Capture::finish).unwrap_or_default(),
        stderr: err.map(Capture::finish).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn capture_keeps_head_and_tail_and_counts_the_rest() {
        let small = capture(&b"hello"[..], 4);
        assert_eq!(small.data, b"hello");
        assert_eq!((small.total, small.left_out), (5, 0));
        assert_eq!(small.note("stdout"), None);
        let data: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
        let c = capture(&data[..], 100);
        assert_eq!(c.total, 1000);
        assert_eq!(c.left_out, 800);
        assert!(c.data.starts_with(&data[..100]));
        assert!(c.data.ends_with(&data[900..]));
        let marker = b"\n[kiln: 800 bytes left out here]\n";
        assert_eq!(&c.data[100..100 + marker.len()], marker);
        assert!(c.note("stderr").unwrap().contains("1000 bytes written"));
        // Exactly twice the bound: all kept, nothing said.
        let c = capture(&data[..200], 100);
        assert_eq!((c.data, c.left_out), (data[..200].to_vec(), 0));
    }

    #[test]
    fn a_command_that_ends_keeps_its_output_and_status() {
        let f = run(
            sh("echo out; echo err >&2; exit 3"),
            &Stop::new(),
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(f.code(), Some(3));
        assert_eq!(f.ended, Ended::Itself);
        assert_eq!(f.stdout.data, b"out\n");
        assert_eq!(f.stderr.data, b"err\n");
    }

    #[test]
    fn a_stop_or_a_deadline_ends_the_whole_group() {
        // The shell's background sleep keeps the pipes open: only its group's end ends it.
        let stop = Stop::new();
        let s = stop.clone();
        let raiser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            s.raise_for_signal(libc::SIGTERM);
        });
        let f = run(
            sh("sleep 100000 & sleep 100000"),
            &stop,
            Duration::from_secs(3600),
        )
        .unwrap();
        raiser.join().unwrap();
        assert_eq!(f.ended, Ended::Stopped(Some(libc::SIGTERM)));
        assert!(f.status.is_some());
        let f = run(
            sh("trap '' TERM; sleep 100000 & wait"),
            &Stop::new(),
            Duration::from_millis(100),
        )
        .unwrap();
        assert_eq!(f.ended, Ended::TimedOut(Duration::from_millis(100)));
        assert_eq!(f.signal(), Some(libc::SIGKILL));
    }
}
