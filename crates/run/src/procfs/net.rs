//! The target's listening sockets and its cgroup's CPU quota: where work waits before the
//! server takes it (the accept queue), and a limit on the CPU it may use.
//!
//! * A TCP socket in LISTEN holds the connections the kernel completed and the server
//!   has not accepted yet: `/proc/PID/net/tcp{,6}` gives it as the socket's receive queue
//!   (what `ss -lnt` prints as Recv-Q), its limit as the send queue. The socket is the
//!   target's when one of its file descriptors is that socket (`socket:[INODE]`).
//! * A full accept queue drops connections: the kernel counts them in
//!   `/proc/PID/net/netstat` (`TcpExt: ListenOverflows ListenDrops`, what `nstat -az
//!   TcpExtListenOverflows` reads) for the target's network namespace.
//! * A cgroup v2 `cpu.max` quota stops the target's threads when they have used it
//!   (`cpu.stat`: `nr_throttled`, `throttled_usec`): they are then neither running nor
//!   waiting on a run queue the scheduler counts as theirs.
use super::read::read;
use std::collections::HashSet;

/// `socket:[12345]` → 12345.
pub(crate) fn socket_inode(link: &[u8]) -> Option<u64> {
    let rest = link.strip_prefix(b"socket:[")?.strip_suffix(b"]")?;
    std::str::from_utf8(rest).ok()?.parse().ok()
}

/// The listening TCP sockets among `inodes`, read from `pid`'s network namespace: how
/// many connections wait to be accepted (summed), and how many listeners there are.
pub(crate) fn listen_queue(pid: u32, inodes: &HashSet<u64>) -> Option<(u64, u64)> {
    let mut found: Option<(u64, u64)> = None;
    for f in ["tcp", "tcp6"] {
        let Some(text) = read(format!("/proc/{pid}/net/{f}")) else {
            continue;
        };
        for (waiting, inode) in listening(&text) {
            if inodes.contains(&inode) {
                let e = found.get_or_insert((0, 0));
                e.0 += waiting;
                e.1 += 1;
            }
        }
    }
    found
}

/// The sockets in LISTEN in the text of `/proc/net/tcp{,6}`: (receive queue, inode).
fn listening(text: &[u8]) -> impl Iterator<Item = (u64, u64)> + '_ {
    const LISTEN: &[u8] = b"0A";
    text.split(|&b| b == b'\n').skip(1).filter_map(|line| {
        let mut f = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|x| !x.is_empty());
        // sl local remote st tx_queue:rx_queue tr:when retrnsmt uid timeout inode
        let state = f.nth(3)?;
        if state != LISTEN {
            return None;
        }
        let queues = f.next()?;
        let rx = queues.split(|&b| b == b':').nth(1)?;
        let rx = u64::from_str_radix(std::str::from_utf8(rx).ok()?, 16).ok()?;
        let inode = std::str::from_utf8(f.nth(4)?).ok()?.parse().ok()?;
        Some((rx, inode))
    })
}

/// `TcpExt: ListenOverflows` and `ListenDrops` of `pid`'s network namespace.
pub(crate) fn listen_overflows(pid: u32) -> Option<(u64, u64)> {
    let text = read(format!("/proc/{pid}/net/netstat"))?;
    let lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"TcpExt:"))
        .collect();
    let (names, values) = (lines.first()?, lines.get(1)?);
    let field = |want: &[u8]| -> Option<u64> {
        let i = names.split(|&b| b == b' ').position(|n| n == want)?;
        let v = values.split(|&b| b == b' ').nth(i)?;
        std::str::from_utf8(v).ok()?.trim().parse().ok()
    };
    Some((field(b"ListenOverflows")?, field(b"ListenDrops")?))
}

/// The cgroup v2 `cpu.stat` of `pid`'s cgroup, when the cgroup has a CPU quota
/// (`cpu.max` not `max`): (the quota in CPUs, throttled µs so far).
pub(crate) fn throttling(pid: u32) -> Option<(f64, u64)> {
    let cg = read(format!("/proc/{pid}/cgroup"))?;
    let path = cg
        .split(|&b| b == b'\n')
        .find_map(|l| l.strip_prefix(b"0::"))?;
    let dir = std::path::Path::new("/sys/fs/cgroup").join(
        std::str::from_utf8(path)
            .ok()?
            .trim()
            .trim_start_matches('/'),
    );
    let max = read(dir.join("cpu.max"))?;
    let quota = quota_cpus(&max)?;
    let stat = read(dir.join("cpu.stat"))?;
    let us = stat.split(|&b| b == b'\n').find_map(|l| {
        let v = l.strip_prefix(b"throttled_usec ")?;
        std::str::from_utf8(v).ok()?.trim().parse().ok()
    })?;
    Some((quota, us))
}

/// `cpu.max` (`QUOTA PERIOD`, or `max PERIOD`) as CPUs; `None` without a quota.
fn quota_cpus(max: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(max).ok()?;
    let mut it = s.split_ascii_whitespace();
    let quota: f64 = it.next()?.parse().ok()?;
    let period: f64 = it.next()?.parse().ok()?;
    (period > 0.0).then(|| quota / period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_sockets_and_their_queues() {
        let t = b"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000080:00000003 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4243 1 0000000000000000 20 4 30 10 -1\n";
        let v: Vec<_> = listening(t).collect();
        assert_eq!(v, [(3, 4242)]);
        assert_eq!(socket_inode(b"socket:[4242]"), Some(4242));
        assert_eq!(socket_inode(b"pipe:[4242]"), None);
        assert_eq!(quota_cpus(b"50000 100000\n"), Some(0.5));
        assert_eq!(quota_cpus(b"max 100000\n"), None);
    }

    /// The inodes of the sockets among `pid`'s open files.
    fn socket_inodes(pid: u32, into: &mut HashSet<u64>) {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return;
        };
        for e in dir.flatten() {
            if let Ok(l) = std::fs::read_link(e.path()) {
                if let Some(i) = socket_inode(l.as_os_str().as_encoded_bytes()) {
                    into.insert(i);
                }
            }
        }
    }

    /// A real listener of this process: its accept queue holds the connections made and
    /// not accepted, as `ss -lnt` counts them.
    #[test]
    fn a_real_accept_queue_is_counted() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let me = std::process::id();
        let mut inodes = HashSet::new();
        socket_inodes(me, &mut inodes);
        assert_eq!(listen_queue(me, &inodes), Some((0, 1)));
        let _c: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        // The handshakes complete in the kernel as connect returns.
        assert_eq!(listen_queue(me, &inodes), Some((3, 1)));
        let _ = l.accept().unwrap();
        assert_eq!(listen_queue(me, &inodes), Some((2, 1)));
        assert!(listen_overflows(me).is_some());
    }
}
