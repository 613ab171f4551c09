//! The target's CPU time and context switches, and kiln's own CPU time, read from /proc
//! while the load runs and counted into the series, so every second (and every step of a
//! sweep) says how busy the server was.
use super::driver::M;
use crate::engine::Ctx;

/// Reads `/proc/PID/stat`: (user, system) CPU time in µs.
pub fn cpu_us(pid: &str) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces), from field 3 on.
    let rest = s.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    let us = 1_000_000 / ticks_per_second();
    Some((utime * us, stime * us))
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
        let Ok(s) = std::fs::read_to_string(t.path().join("status")) else {
            continue;
        };
        for l in s.lines() {
            if let Some(v) = l
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                total += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    Some(total)
}

/// The machine's busy CPU time (all CPUs, everything but idle and iowait), µs.
pub fn machine_busy_us() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
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
    let text = std::fs::read_to_string(file).ok()?;
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

/// Samples the targets (and kiln) and adds what changed since the last sample.
#[derive(Debug)]
pub(crate) struct Sampler {
    pids: Vec<String>,
    last: Vec<Option<(u64, u64, u64)>>,
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
        s.client_last = cpu_us("self").map(|(u, s)| u + s);
        s
    }

    fn read(&mut self, i: usize) -> Option<(u64, u64, u64)> {
        let p = &self.pids[i];
        match (cpu_us(p), ctx_switches(p)) {
            (Some((u, s)), Some(c)) => Some((u, s, c)),
            _ => {
                if self.error.is_none() {
                    self.error = Some(format!(
                        "target process {p} could not be read from /proc (it ended?); its CPU is counted up to then"
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
            }
            self.last[i] = Some(now);
        }
        if let Some((u, s)) = cpu_us("self") {
            if let Some(prev) = self.client_last {
                ctx.add(0, M.client_cpu_us, (u + s).saturating_sub(prev));
            }
            self.client_last = Some(u + s);
        }
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
}
