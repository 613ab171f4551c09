//! The target's CPU time and context switches, and kiln's own CPU time, read from /proc
//! while the load runs and counted into the series, so every second (and every step of a
//! sweep) says how busy the server was.
use super::driver::M;
use crate::engine::Ctx;
use std::os::unix::ffi::OsStrExt;

/// Reads `/proc/PID/stat` (as bytes: the command name in it need not be UTF-8): (user,
/// system) CPU time in µs.
pub fn cpu_us(pid: &str) -> Option<(u64, u64)> {
    let s = kiln_os::proc::Stat::parse(&kiln_os::proc::read(format!("/proc/{pid}/stat")).ok()?)?;
    let (utime, stime) = (s.field(14)?, s.field(15)?);
    let us = 1_000_000 / ticks_per_second();
    Some((utime * us, stime * us))
}

/// kiln's own CPU time (user + system, every thread), µs, from getrusage: it needs no file
/// descriptor, so a load holding every descriptor it may open (`ulimit -n`) still
/// measures itself.
pub fn own_cpu_us() -> u64 {
    // SAFETY: rusage is plain data; zeroed is a valid value for getrusage to fill.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage with RUSAGE_SELF and a valid out-pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) } != 0 {
        return 0;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(r.ru_utime) + us(r.ru_stime)
}

fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// Context switches (voluntary + involuntary) of every thread of `pid`.
pub fn ctx_switches(pid: &str) -> Option<u64> {
    let mut total = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        // Bytes: the thread's name on its first line need not be UTF-8.
        let Ok(s) = kiln_os::proc::read(t.path().join("status")) else {
            continue;
        };
        for key in ["voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"] {
            total += kiln_os::proc::status_number(&s, key).unwrap_or(0);
        }
    }
    Some(total)
}

/// Time the threads of `pid` spent runnable but waiting for a CPU, µs: the second field
/// of each `/proc/PID/task/TID/schedstat` (ns). `None` without schedstat (a kernel
/// without `CONFIG_SCHED_INFO`).
pub fn runq_wait_us(pid: &str) -> Option<u64> {
    let mut total = 0u64;
    let mut read_any = false;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Some(s) = kiln_os::proc::read_text(t.path().join("schedstat")) else {
            continue;
        };
        if let Some(ns) = s
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse::<u64>().ok())
        {
            total += ns / 1000;
            read_any = true;
        }
    }
    read_any.then_some(total)
}

/// The machine's CPUs as /proc/stat counts them (`cpuN` lines): what its busy time is
/// shared over.
pub fn machine_cores() -> usize {
    kiln_os::proc::read_text("/proc/stat")
        .map(|s| {
            s.lines()
                .filter(|l| {
                    l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit)
                })
                .count()
        })
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// What a target process can use of the CPU, read from /proc and its cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CpuRoom {
    /// Its threads (each runs on one CPU at a time).
    pub threads: Option<u64>,
    /// The machine's CPUs.
    pub cores: usize,
    /// Its cgroup's CPU quota, in CPUs (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`; the
    /// smallest along its cgroup's ancestors); `None`: no quota.
    pub quota: Option<f64>,
}

impl CpuRoom {
    /// The CPUs it can use and what limits them (`its 1 thread`, `the machine's 2
    /// cores`, `its cgroup quota of 0.50 CPU`).
    pub fn usable(&self) -> (f64, String) {
        let mut best = (
            self.cores as f64,
            format!("the machine's {} cores", self.cores),
        );
        if let Some(t) = self.threads.filter(|&t| (t as f64) < best.0) {
            best = (
                t as f64,
                format!("its {t} thread{}", if t == 1 { "" } else { "s" }),
            );
        }
        if let Some(q) = self.quota.filter(|&q| q < best.0) {
            best = (q, format!("its cgroup's CPU quota of {q:.2} CPU"));
        }
        best
    }
}

/// What the processes `pids` can use together: their threads (summed), the machine's
/// cores, their cgroup quotas (summed, each capped by the machine).
pub fn cpu_room(pids: &[u32]) -> CpuRoom {
    let cores = machine_cores();
    let mut room = CpuRoom {
        threads: None,
        cores,
        quota: None,
    };
    for p in pids {
        if let Some(t) = threads(*p) {
            room.threads = Some(room.threads.unwrap_or(0) + t);
        }
        let q = cgroup_quota(*p).map_or(cores as f64, |q| q.min(cores as f64));
        room.quota = Some(room.quota.unwrap_or(0.0) + q);
    }
    // No process had a quota: none.
    if room
        .quota
        .is_some_and(|q| q >= (cores * pids.len().max(1)) as f64)
    {
        room.quota = None;
    }
    room
}

fn threads(pid: u32) -> Option<u64> {
    let s = kiln_os::proc::read(format!("/proc/{pid}/status")).ok()?;
    kiln_os::proc::status_number(&s, "Threads")
}

/// The CPU quota of a process's cgroup in CPUs, the smallest along its ancestors:
/// cgroup v2 (`0::/path`, `cpu.max`: "QUOTA PERIOD" or "max PERIOD") or v1 (the `cpu`
/// controller's `cpu.cfs_quota_us` / `cpu.cfs_period_us`, -1 for none).
fn cgroup_quota(pid: u32) -> Option<f64> {
    // Bytes: a cgroup's path need not be UTF-8, and is used as it is.
    let cg = kiln_os::proc::read(format!("/proc/{pid}/cgroup")).ok()?;
    let mut best: Option<f64> = None;
    let mut take = |q: Option<f64>| {
        if let Some(q) = q.filter(|q| *q > 0.0) {
            best = Some(best.map_or(q, |b| b.min(q)));
        }
    };
    for line in cg.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
        let mut f = line.splitn(3, |&c| c == b':');
        let (_, controllers, path) = (f.next(), f.next().unwrap_or(b""), f.next().unwrap_or(b""));
        let controllers = String::from_utf8_lossy(controllers);
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
        let (base, v2) = if controllers.is_empty() {
            // The unified hierarchy: at /sys/fs/cgroup, or beside v1's (hybrid).
            let b = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
                .into_iter()
                .find(|b| std::path::Path::new(b).join("cgroup.controllers").exists());
            match b {
                Some(b) => (b.to_string(), true),
                None => continue,
            }
        } else if controllers.split(',').any(|c| c == "cpu") {
            let b = ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"]
                .into_iter()
                .find(|b| std::path::Path::new(b).is_dir());
            match b {
                Some(b) => (b.to_string(), false),
                None => continue,
            }
        } else {
            continue;
        };
        let mut dir = std::path::PathBuf::from(&base);
        dir.push(path.strip_prefix("/").unwrap_or(path));
        // The cgroup and its ancestors up to the mount point.
        loop {
            take(if v2 {
                kiln_os::proc::read_text(dir.join("cpu.max")).and_then(|s| parse_cpu_max(&s))
            } else {
                let q = kiln_os::proc::read_text(dir.join("cpu.cfs_quota_us"));
                let p = kiln_os::proc::read_text(dir.join("cpu.cfs_period_us"));
                q.zip(p).and_then(|(q, p)| {
                    let q: f64 = q.trim().parse().ok()?;
                    let p: f64 = p.trim().parse().ok()?;
                    (q > 0.0 && p > 0.0).then(|| q / p)
                })
            });
            if dir.as_os_str().len() <= base.len() || !dir.pop() {
                break;
            }
        }
    }
    best
}

/// `cpu.max` ("50000 100000" → 0.5 CPU; "max 100000" → none).
fn parse_cpu_max(s: &str) -> Option<f64> {
    let mut f = s.split_whitespace();
    let q: f64 = f.next()?.parse().ok()?;
    let p: f64 = f.next()?.parse().ok()?;
    (q > 0.0 && p > 0.0).then(|| q / p)
}

/// The machine's busy CPU time (all CPUs, everything but idle and iowait), µs.
pub fn machine_busy_us() -> Option<u64> {
    let s = kiln_os::proc::read_text("/proc/stat")?;
    let line = s.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let busy: u64 = v.iter().take(8).sum::<u64>() - v.get(3)? - v.get(4).unwrap_or(&0);
    Some(busy * (1_000_000 / ticks_per_second()))
}

/// Connections waiting in the accept queue of the server listening at `addr` on this host
/// (its listening sockets' receive queue in `/proc/net/tcp` or `tcp6`: for a socket in
/// LISTEN, the connections completed and not yet accepted); `None` when nothing on this
/// host (in this network namespace) listens there.
pub(crate) fn accept_backlog(addr: std::net::SocketAddr) -> Option<u64> {
    let file = if addr.is_ipv4() {
        "/proc/net/tcp"
    } else {
        "/proc/net/tcp6"
    };
    let text = kiln_os::proc::read_text(file)?;
    listen_queue(&text, addr)
}

/// The accept queue of `addr` in the text of `/proc/net/tcp{,6}`: the listening sockets on
/// its port bound to its address or to every address, summed (SO_REUSEPORT).
fn listen_queue(text: &str, addr: std::net::SocketAddr) -> Option<u64> {
    const LISTEN: &str = "0A";
    let port = format!("{:04X}", addr.port());
    let mut found = None;
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(local), Some(state), Some(queues)) = (f.get(1), f.get(3), f.get(4)) else {
            continue;
        };
        let Some((ip, p)) = local.rsplit_once(':') else {
            continue;
        };
        if *state != LISTEN || p != port {
            continue;
        }
        let any = ip.bytes().all(|b| b == b'0');
        if !any && !ip_matches(ip, addr.ip()) {
            continue;
        }
        let rx = queues
            .split_once(':')
            .and_then(|(_, rx)| u64::from_str_radix(rx, 16).ok())?;
        *found.get_or_insert(0) += rx;
    }
    found
}

/// Whether `hex` (an address as `/proc/net/tcp` writes it: 32-bit words in host order)
/// is `ip`.
fn ip_matches(hex: &str, ip: std::net::IpAddr) -> bool {
    let words = |b: &[u8]| -> String {
        b.chunks(4)
            .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
            .collect()
    };
    match ip {
        std::net::IpAddr::V4(v4) => hex == words(&v4.octets()),
        std::net::IpAddr::V6(v6) => hex == words(&v6.octets()),
    }
}

/// One target's user and system CPU (µs), context switches and run-queue wait (µs).
type Reading = (u64, u64, u64, Option<u64>);

/// Samples the targets (and kiln) and adds what changed since the last sample.
#[derive(Debug)]
pub(crate) struct Sampler {
    pids: Vec<String>,
    last: Vec<Option<Reading>>,
    client_last: Option<u64>,
    machine_last: Option<u64>,
    error: Option<String>,
    server: std::net::SocketAddr,
}

impl Sampler {
    pub fn new(pids: &[u32], server: std::net::SocketAddr) -> Self {
        let pids: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
        let mut s = Sampler {
            last: vec![None; pids.len()],
            pids,
            client_last: None,
            machine_last: machine_busy_us(),
            error: None,
            server,
        };
        for i in 0..s.pids.len() {
            s.last[i] = s.read(i);
        }
        s.client_last = Some(own_cpu_us());
        s
    }

    fn read(&mut self, i: usize) -> Option<Reading> {
        let p = &self.pids[i];
        match (cpu_us(p), ctx_switches(p)) {
            (Some((u, s)), Some(c)) => Some((u, s, c, runq_wait_us(p))),
            _ => {
                if self.error.is_none() {
                    // Why: the process ended, or kiln could not open /proc (every file
                    // descriptor it may open in use: `ulimit -n`).
                    let why = match std::fs::File::open(format!("/proc/{p}/stat")) {
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                            "it ended".to_string()
                        }
                        Err(e) => e.to_string(),
                        Ok(_) => "its files did not parse".to_string(),
                    };
                    self.error = Some(format!(
                        "target process {p} could not be read from /proc ({why}); its CPU is counted up to then"
                    ));
                }
                None
            }
        }
    }

    pub fn sample(&mut self, ctx: &Ctx) {
        for i in 0..self.pids.len() {
            let Some(now) = self.read(i) else { continue };
            if let Some(prev) = self.last[i] {
                ctx.add(0, M.target_cpu_user_us, now.0.saturating_sub(prev.0));
                ctx.add(0, M.target_cpu_sys_us, now.1.saturating_sub(prev.1));
                ctx.add(0, M.target_ctx_switches, now.2.saturating_sub(prev.2));
                if let (Some(n), Some(p)) = (now.3, prev.3) {
                    ctx.add(0, M.target_runq_wait_us, n.saturating_sub(p));
                }
            }
            self.last[i] = Some(now);
        }
        let own = own_cpu_us();
        if let Some(prev) = self.client_last {
            ctx.add(0, M.client_cpu_us, own.saturating_sub(prev));
        }
        self.client_last = Some(own);
        ctx.set_level(
            M.accept_backlog,
            accept_backlog(self.server).map(|n| n as f64),
        );
        if let Some(m) = machine_busy_us() {
            if let Some(prev) = self.machine_last {
                ctx.add(0, M.machine_busy_us, m.saturating_sub(prev));
            }
            self.machine_last = Some(m);
        }
    }

    pub fn error(&self) -> Option<String> {
        self.error.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_queue_of_a_listening_socket() {
        // /proc/net/tcp on a little-endian host: 127.0.0.1:8080 listening with 3 waiting,
        // 0.0.0.0:9090 listening (two SO_REUSEPORT sockets), one established connection.
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000     0        0 1 1
   1: 00000000:2382 00000000:0000 0A 00000000:00000002 00:00000000 00000000     0        0 2 1
   2: 00000000:2382 00000000:0000 0A 00000000:00000005 00:00000000 00000000     0        0 3 1
   3: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4 1
";
        let local = |p: u16| std::net::SocketAddr::from(([127, 0, 0, 1], p));
        if cfg!(target_endian = "little") {
            assert_eq!(listen_queue(text, local(8080)), Some(3));
        }
        assert_eq!(listen_queue(text, local(9090)), Some(7));
        assert_eq!(listen_queue(text, local(7070)), None);
    }

    /// A real listening socket that accepts nothing: the clients the kernel has connected
    /// wait in its queue, and /proc says how many.
    #[test]
    fn the_kernel_counts_connections_not_yet_accepted() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        assert_eq!(accept_backlog(addr), Some(0));
        let clients: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        assert_eq!(accept_backlog(addr), Some(3));
        let _ = l.accept().unwrap();
        assert_eq!(accept_backlog(addr), Some(2));
        drop(clients);
    }

    #[test]
    fn what_a_target_can_use() {
        assert_eq!(parse_cpu_max("50000 100000\n"), Some(0.5));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        let room = |threads, quota| CpuRoom {
            threads,
            cores: 4,
            quota,
        };
        assert_eq!(room(Some(1), None).usable(), (1.0, "its 1 thread".into()));
        assert_eq!(
            room(Some(40), None).usable(),
            (4.0, "the machine's 4 cores".into())
        );
        assert_eq!(
            room(Some(40), Some(1.5)).usable(),
            (1.5, "its cgroup's CPU quota of 1.50 CPU".into())
        );
        // This process: its threads, this machine's cores.
        let me = cpu_room(&[std::process::id()]);
        assert!(me.threads.is_some_and(|t| t >= 1), "{me:?}");
        assert_eq!(me.cores, machine_cores());
        assert!(runq_wait_us("self").is_some());
    }

    /// A process in a cgroup with a CPU quota of half a CPU: read as 0.5 (v1's cpu
    /// controller or v2's cpu.max, whichever this machine lets a test make).
    #[test]
    fn a_cgroup_quota_is_what_a_target_can_use() {
        let name = format!("kiln-test-quota-{}", std::process::id());
        let v1 = std::path::Path::new("/sys/fs/cgroup/cpu").join(&name);
        let v2 = std::path::Path::new("/sys/fs/cgroup").join(&name);
        let (dir, files): (_, &[(&str, &str)]) = if std::fs::create_dir(&v1).is_ok() {
            (
                v1,
                &[
                    ("cpu.cfs_period_us", "100000"),
                    ("cpu.cfs_quota_us", "50000"),
                ],
            )
        } else if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
            && std::fs::create_dir(&v2).is_ok()
        {
            (v2, &[("cpu.max", "50000 100000")])
        } else {
            kiln_testkit::skip("no cgroup can be made here (not root?): the quota is not tested");
            return;
        };
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep starts");
        let pid = child.id();
        let set = files
            .iter()
            .try_for_each(|(f, v)| std::fs::write(dir.join(f), v))
            .and_then(|_| std::fs::write(dir.join("cgroup.procs"), pid.to_string()));
        let room = cpu_room(&[pid]);
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir(&dir);
        set.expect("the quota and the process are written to the cgroup");
        assert_eq!(room.quota, Some(0.5), "{room:?}");
        assert_eq!(room.threads, Some(1), "{room:?}");
        assert_eq!(
            room.usable(),
            (0.5, "its cgroup's CPU quota of 0.50 CPU".into())
        );
    }
}
