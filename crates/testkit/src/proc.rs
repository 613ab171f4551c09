//! Stopping servers the tests started, by PID, whatever way the test binary ends.
use crate::Error;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// Sends `sig` to `pid` (never to a group or by name).
pub fn signal(pid: u32, sig: i32) {
    if pid > 1 {
        // SAFETY: kill(2) with a positive pid addresses one process.
        unsafe {
            libc::kill(pid as libc::pid_t, sig);
        }
    }
}

/// Whether `pid` still exists (a zombie counts as gone). Read as bytes: a process whose
/// name is not UTF-8 exists too.
pub fn alive(pid: u32) -> bool {
    match std::fs::read(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .iter()
            .rposition(|&c| c == b')')
            .is_some_and(|i| s[i + 1..].trim_ascii_start().starts_with(b"Z")),
        Err(_) => false,
    }
}

/// Asks `child` to stop with `sig`, waits up to `grace`, then kills it and the other `pids`
/// (its workers) with SIGKILL.
pub(crate) fn terminate(child: &mut Child, sig: i32, grace: Duration, pids: &[u32]) {
    signal(child.id(), sig);
    let t = Instant::now();
    while t.elapsed() < grace {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if !matches!(child.try_wait(), Ok(Some(_))) {
        let _ = child.kill();
        let _ = child.wait();
    }
    for &p in pids {
        if alive(p) {
            signal(p, libc::SIGKILL);
        }
    }
}

/// A guard process that kills `pids` (and removes `dir`) when this process exits, however
/// it exits: it blocks reading a pipe whose write end only this process holds. Dropping the
/// returned handle ends the guard without killing anything once the caller stopped the
/// servers itself ([`Reaper::disarm`]).
#[derive(Debug)]
pub(crate) struct Reaper {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Reaper {
    pub fn spawn(pids: &[u32], dir: Option<&Path>) -> Result<Self, Error> {
        let list: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
        let rm = dir.map_or(String::new(), |d| {
            format!("; rm -rf '{}'", d.display().to_string().replace('\'', ""))
        });
        // Reading "disarm" means the servers were stopped cleanly: exit without killing.
        let script = format!(
            "read line; [ \"$line\" = disarm ] && exit 0; kill -KILL {} 2>/dev/null{rm}",
            list.join(" ")
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| Error::Io {
                what: "starting a reaper".into(),
                source,
            })?;
        let stdin = child.stdin.take();
        Ok(Reaper { child, stdin })
    }

    /// The servers were stopped: let the guard exit without killing.
    pub fn disarm(&mut self) {
        if let Some(mut s) = self.stdin.take() {
            use std::io::Write;
            let _ = s.write_all(b"disarm\n");
        }
        let _ = self.child.wait();
    }
}

/// A busy loop pinned to one CPU (`taskset` execs the shell, so the child's pid is the
/// loop's), stopped when dropped: two of them make each wait for the CPU about half
/// the time.
pub struct Hog(Child);

impl Hog {
    /// Starts a busy loop on CPU `cpu`.
    pub fn on_cpu(cpu: u32) -> Hog {
        Hog(Command::new("taskset")
            .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("taskset (util-linux) runs"))
    }

    /// The loop's pid.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `(time on a CPU, time waiting on a run queue)` of a thread, ns, by the scheduler's own
/// accounting (`/proc/PID/schedstat`).
pub fn schedstat(pid: u32) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .unwrap_or_else(|e| panic!("reading /proc/{pid}/schedstat: {e}"));
    let f: Vec<u64> = s
        .split_whitespace()
        .map(|x| x.parse().expect("schedstat holds numbers"))
        .collect();
    (f[0], f[1])
}

/// CLOCK_MONOTONIC now, ns: the clock of perf samples and off-CPU blocks.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Direct children of `pid`, whichever of its threads started them.
pub fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|t| {
            std::fs::read_to_string(t.path().join("children"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// How many eBPF links `pid` holds open (one per attached program: a recorder is
/// collecting once its programs' links are there).
pub fn bpf_links(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == "anon_inode:bpf_link")
        })
        .count()
}
