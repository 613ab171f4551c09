//! The target's listening sockets and its cgroup's limits: where work waits before the
//! server takes it (the accept queue), and limits on the CPU and memory it may use.
//!
//! * A TCP socket in LISTEN holds the connections the kernel completed and the server
//!   has not accepted yet: `/proc/PID/net/tcp{,6}` gives it as the socket's receive queue
//!   (what `ss -lnt` prints as Recv-Q), its limit as the send queue. The socket is the
//!   target's when one of its file descriptors is that socket (`socket:[INODE]`).
//! * A full accept queue drops connections: the kernel counts them in
//!   `/proc/PID/net/netstat` (`TcpExt: ListenOverflows ListenDrops`, what `nstat -az
//!   TcpExtListenOverflows` reads) for the target's network namespace.
//! * A cgroup's memory limit (v2 `memory.max`, v1 `memory.limit_in_bytes`) holds its
//!   processes' memory and their file cache: under it, files read are evicted and read
//!   from the disk again (`memory.stat`: `workingset_refault_file`).
//! * A cgroup's CPU quota (v2 `cpu.max`, v1 `cpu.cfs_quota_us`) stops the target's threads
//!   when they have used it (`cpu.stat`: `throttled_usec`, or v1's `throttled_time`):
//!   they then wait on a throttled run queue.
use super::read::read;
use std::collections::HashSet;

/// `socket:[12345]` → 12345.
pub(crate) fn socket_inode(link: &[u8]) -> Option<u64> {
    let rest = link.strip_prefix(b"socket:[")?.strip_suffix(b"]")?;
    std::str::from_utf8(rest).ok()?.parse().ok()
}

/// The TCP listeners of the network namespaces `pids` are in: (connections waiting to be
/// accepted, inode) each. Read once per namespace (`/proc/PID/net/tcp{,6}` walks the
/// kernel's whole table of connections, which is slow when it is large: a server's
/// copies share one namespace and are not read again).
pub(crate) fn listeners_of(pids: &[u32]) -> Vec<(u64, u64)> {
    let mut namespaces = HashSet::new();
    let mut out = Vec::new();
    for &pid in pids {
        let ns = std::fs::read_link(format!("/proc/{pid}/ns/net")).ok();
        if !namespaces.insert(ns) {
            continue;
        }
        for f in ["tcp", "tcp6"] {
            if let Some(text) = read(format!("/proc/{pid}/net/{f}")) {
                out.extend(listening(&text));
            }
        }
    }
    out
}

/// The listening TCP sockets among `inodes` ([`listeners_of`]): how many connections wait
/// to be accepted (summed, each listener counted once however many of the target's
/// processes hold it: a pre-forking server's master and workers share one), and how many
/// listeners there are; `None` when none is the target's.
pub(crate) fn listen_queues(listeners: &[(u64, u64)], inodes: &HashSet<u64>) -> Option<(u64, u64)> {
    let mut counted = HashSet::new();
    let mut found: Option<(u64, u64)> = None;
    for &(waiting, inode) in listeners {
        if inodes.contains(&inode) && counted.insert(inode) {
            let e = found.get_or_insert((0, 0));
            e.0 += waiting;
            e.1 += 1;
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

/// One line of `/proc/net/tcp{,6}`: local and remote address (`127.0.0.1:80`,
/// `[::1]:80`), state (hex, `01` established, `0A` listening) and inode.
struct TcpLine {
    local: String,
    local_port: u16,
    remote: String,
    remote_port: u16,
    state: u8,
    inode: u64,
}

/// An address of `/proc/net/tcp{,6}` (`0100007F:1F90`: each 32-bit word in the host's
/// order, here little-endian) as `127.0.0.1` or `[::1]`, and its port.
fn address(field: &[u8]) -> Option<(String, u16)> {
    let s = std::str::from_utf8(field).ok()?;
    let (ip, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let words: Vec<u32> = (0..ip.len() / 8)
        .map(|i| u32::from_str_radix(&ip[i * 8..i * 8 + 8], 16).map(u32::from_be))
        .collect::<Result<_, _>>()
        .ok()?;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
    let ip = match bytes.len() {
        4 => std::net::Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).to_string(),
        16 => {
            let a: [u8; 16] = bytes.try_into().ok()?;
            let v6 = std::net::Ipv6Addr::from(a);
            match v6.to_ipv4_mapped() {
                Some(v4) => v4.to_string(),
                None => format!("[{v6}]"),
            }
        }
        _ => return None,
    };
    Some((ip, port))
}

fn tcp_lines(text: &[u8]) -> impl Iterator<Item = TcpLine> + '_ {
    text.split(|&b| b == b'\n').skip(1).filter_map(|line| {
        let mut f = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|x| !x.is_empty());
        // sl local remote st tx_queue:rx_queue tr:when retrnsmt uid timeout inode
        let (local, local_port) = address(f.nth(1)?)?;
        let (remote, remote_port) = address(f.next()?)?;
        let state = u8::from_str_radix(std::str::from_utf8(f.next()?).ok()?, 16).ok()?;
        let inode = std::str::from_utf8(f.nth(5)?).ok()?.parse().ok()?;
        Some(TcpLine {
            local,
            local_port,
            remote,
            remote_port,
            state,
            inode,
        })
    })
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

/// The target's own sockets that could carry work from outside it: its distinct sockets
/// (one however many of its processes or descriptors hold it), less the TCP listeners
/// (where connections arrive, not connections) and less the Unix sockets whose peer it
/// holds too (a socket pair of its own: asyncio's self-pipe, nginx's channels between
/// master and workers). The listeners are [`listeners_of`]'s; the Unix sockets' peers are
/// read in kiln's namespace through the kernel's socket diagnostics, as `ss -x` reads
/// them (without those, its Unix sockets count as they are).
pub(crate) fn outward_sockets(listeners: &[(u64, u64)], inodes: &HashSet<u64>) -> u64 {
    let listeners: HashSet<u64> = listeners.iter().map(|l| l.1).collect();
    let peers = unix_peers().unwrap_or_default();
    inodes
        .iter()
        .filter(|i| !listeners.contains(*i))
        .filter(|i| !peers.get(*i).is_some_and(|p| inodes.contains(p)))
        .count() as u64
}

/// Every connected Unix socket's peer in kiln's network namespace, by inode, from one
/// `NETLINK_SOCK_DIAG` dump (`UDIAG_SHOW_PEER`); `None` when the kernel refuses it.
pub(crate) fn unix_peers() -> Option<std::collections::HashMap<u64, u64>> {
    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const UDIAG_SHOW_PEER: u32 = 0x4;
    const UNIX_DIAG_PEER: u16 = 2;
    const NLMSG_DONE: u16 = 3;
    const NLMSG_ERROR: u16 = 2;
    // SAFETY: a plain socket(2); the descriptor is owned at once.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: fd is a new descriptor no one else owns.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    use std::os::fd::AsRawFd;
    // nlmsghdr (16 bytes) then unix_diag_req (24): family, protocol, pad, states, inode,
    // show, cookie.
    let mut req = Vec::with_capacity(40);
    req.extend_from_slice(&40u32.to_ne_bytes());
    req.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16).to_ne_bytes());
    req.extend_from_slice(&1u32.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    req.extend_from_slice(&[libc::AF_UNIX as u8, 0, 0, 0]);
    req.extend_from_slice(&u32::MAX.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    req.extend_from_slice(&UDIAG_SHOW_PEER.to_ne_bytes());
    req.extend_from_slice(&[0xff; 8]);
    // SAFETY: req is a live buffer of req.len() bytes.
    let sent = unsafe { libc::send(fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) };
    if sent != req.len() as isize {
        return None;
    }
    let mut out = std::collections::HashMap::new();
    let mut buf = vec![0u8; 32 * 1024];
    let u16_at = |b: &[u8], i: usize| b.get(i..i + 2).map(|x| u16::from_ne_bytes([x[0], x[1]]));
    let u32_at = |b: &[u8], i: usize| {
        b.get(i..i + 4)
            .map(|x| u32::from_ne_bytes([x[0], x[1], x[2], x[3]]))
    };
    // (A dump ends with NLMSG_DONE; a bound on the reads keeps a kernel that never says
    // so from holding the sampler.)
    for _ in 0..10_000 {
        // SAFETY: buf is a live buffer of buf.len() bytes.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            return None;
        }
        let b = &buf[..n as usize];
        let mut at = 0;
        while at + 16 <= b.len() {
            let len = u32_at(b, at)? as usize;
            let kind = u16_at(b, at + 4)?;
            if len < 16 || at + len > b.len() {
                return None;
            }
            match kind {
                NLMSG_DONE => return Some(out),
                NLMSG_ERROR => return None,
                _ => {}
            }
            // unix_diag_msg: family, type, state, pad, inode, cookie[2]; then attributes.
            let msg = &b[at + 16..at + len];
            if let Some(inode) = u32_at(msg, 4) {
                let mut a = 16;
                while a + 4 <= msg.len() {
                    let (alen, atype) = (u16_at(msg, a)? as usize, u16_at(msg, a + 2)?);
                    if alen < 4 || a + alen > msg.len() {
                        break;
                    }
                    if atype == UNIX_DIAG_PEER {
                        if let Some(peer) = u32_at(msg, a + 4) {
                            out.insert(inode as u64, peer as u64);
                        }
                    }
                    a += (alen + 3) & !3;
                }
            }
            at += (len + 3) & !3;
        }
    }
    None
}

/// The services `pids` are connected to as clients: their established TCP connections
/// from ports they do not listen on (the connections their own clients opened to them
/// are left out), by remote address, the most connections first; with the process that
/// listens there when it is on this host (`/proc/*/fd`). Read from the first process's
/// network namespace. A connection to Erlang's port mapper (epmd) is not one.
pub fn peers(pids: &[u32]) -> Vec<kiln_store::Peer> {
    const ESTABLISHED: u8 = 0x01;
    const LISTEN: u8 = 0x0A;
    let Some(&first) = pids.first() else {
        return Vec::new();
    };
    let mut inodes = HashSet::new();
    for &pid in pids {
        socket_inodes(pid, &mut inodes);
    }
    let mut lines = Vec::new();
    for f in ["tcp", "tcp6"] {
        if let Some(text) = read(format!("/proc/{first}/net/{f}")) {
            lines.extend(tcp_lines(&text));
        }
    }
    let listens: HashSet<u16> = lines
        .iter()
        .filter(|l| l.state == LISTEN && inodes.contains(&l.inode))
        .map(|l| l.local_port)
        .collect();
    let mut by: Vec<(String, u16, String, u32)> = Vec::new();
    for l in lines.iter().filter(|l| {
        l.state == ESTABLISHED && inodes.contains(&l.inode) && !listens.contains(&l.local_port)
    }) {
        match by
            .iter_mut()
            .find(|b| b.0 == l.remote && b.1 == l.remote_port)
        {
            Some(b) => b.3 += 1,
            None => by.push((l.remote.clone(), l.remote_port, l.local.clone(), 1)),
        }
    }
    by.sort_by(|a, b| b.3.cmp(&a.3).then_with(|| (&a.0, a.1).cmp(&(&b.0, b.1))));
    // (Erlang's port mapper: every distributed BEAM node holds a connection to it, on its
    // port or one of the node's choosing, and it serves none of the node's work.)
    by.retain(|b| b.1 != EPMD_PORT);
    // (Each listener is looked for through every process's files: a few at the most.)
    by.truncate(9);
    let mut out: Vec<kiln_store::Peer> = by
        .into_iter()
        .map(|(ip, port, _, n)| {
            // The listener on this host: a listening socket on that port (any address).
            let listener = lines
                .iter()
                .find(|l| {
                    l.state == LISTEN
                        && l.local_port == port
                        && (l.local == ip || l.local == "0.0.0.0" || l.local == "[::]")
                })
                .map(|l| l.inode);
            kiln_store::Peer {
                address: format!("{ip}:{port}"),
                connections: n,
                process: listener.and_then(owner_of),
            }
        })
        .filter(|p| {
            !p.process
                .as_deref()
                .is_some_and(|x| x.starts_with("epmd ("))
        })
        .collect();
    out.truncate(8);
    out
}

/// epmd's port, which every distributed Erlang node is connected to.
const EPMD_PORT: u16 = 4369;

/// The process that holds socket `inode` open: `name (pid N)`.
fn owner_of(inode: u64) -> Option<String> {
    let want = format!("socket:[{inode}]");
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|l| l.as_os_str().as_encoded_bytes() == want.as_bytes())
        });
        if holds {
            // (A name is the process's to choose: control characters are escaped.)
            let comm = kiln_os::proc::comm(pid)
                .map(|b| {
                    let t = kiln_model::text::from_bytes(b.trim_ascii_end()).into_owned();
                    kiln_model::text::clean(&t).into_owned()
                })
                .unwrap_or_default();
            return Some(format!("{comm} (pid {pid})"));
        }
    }
    None
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

/// The cgroups of `pid` (`/proc/PID/cgroup`): each line's controllers (empty for v2's
/// unified hierarchy) and its path, relative to the hierarchy's root.
fn cgroups(pid: u32) -> Option<Vec<(Vec<u8>, String)>> {
    let cg = read(format!("/proc/{pid}/cgroup"))?;
    Some(
        cg.split(|&b| b == b'\n')
            .filter_map(|l| {
                // hierarchy-ID:controllers:path
                let mut f = l.splitn(3, |&b| b == b':');
                let (Some(_), Some(ctl), Some(path)) = (f.next(), f.next(), f.next()) else {
                    return None;
                };
                let rel = String::from_utf8_lossy(path);
                Some((ctl.to_vec(), rel.trim().trim_start_matches('/').to_string()))
            })
            .collect(),
    )
}

/// The CPU quota of `pid`'s cgroup, when it has one: (the quota in CPUs, µs throttled so
/// far). cgroup v2 (`cpu.max`, `cpu.stat`'s `throttled_usec`) or v1 (the `cpu`
/// controller's `cpu.cfs_quota_us` and `cpu.cfs_period_us`, `cpu.stat`'s
/// `throttled_time` in ns), whichever holds the quota.
pub(crate) fn throttling(pid: u32) -> Option<(f64, u64)> {
    for (ctl, rel) in cgroups(pid)? {
        let rel = rel.as_str();
        if ctl.is_empty() {
            for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
                let d = std::path::Path::new(root).join(rel);
                if let Some(q) = read(d.join("cpu.max")).and_then(|m| quota_cpus(&m)) {
                    let us = stat_value(&read(d.join("cpu.stat"))?, b"throttled_usec ")?;
                    return Some((q, us));
                }
            }
        } else if ctl.split(|&b| b == b',').any(|c| c == b"cpu") {
            let d = std::path::Path::new("/sys/fs/cgroup/cpu").join(rel);
            let quota = num(&read(d.join("cpu.cfs_quota_us"))?)?;
            let period = num(&read(d.join("cpu.cfs_period_us"))?)?;
            if quota > 0.0 && period > 0.0 {
                let ns = stat_value(&read(d.join("cpu.stat"))?, b"throttled_time ")?;
                return Some((quota / period, ns / 1000));
            }
        }
    }
    None
}

/// The memory limit of `pid`'s cgroup, when it has one: (the limit, the memory it uses,
/// in bytes; the file pages it read again after their eviction so far). cgroup v2 (the
/// smallest `memory.max` from its group up, `memory.current`, `memory.stat`'s
/// `workingset_refault_file`) or v1 (the `memory` controller's `memory.stat`:
/// `hierarchical_memory_limit`, `total_workingset_refault_file`; `memory.usage_in_bytes`).
pub(crate) fn memory_limit(pid: u32) -> Option<(u64, u64, u64)> {
    memory_limit_under(
        cgroups(pid)?,
        &[
            std::path::Path::new("/sys/fs/cgroup"),
            std::path::Path::new("/sys/fs/cgroup/unified"),
        ],
        std::path::Path::new("/sys/fs/cgroup/memory"),
    )
}

/// [`memory_limit`] of a process in `groups` (its `/proc/PID/cgroup`), with cgroup v2
/// mounted at one of `v2` and v1's memory controller at `v1`.
fn memory_limit_under(
    groups: Vec<(Vec<u8>, String)>,
    v2: &[&std::path::Path],
    v1: &std::path::Path,
) -> Option<(u64, u64, u64)> {
    // No limit: v1 says a number near 2^63, v2 "max".
    let limited = |l: u64| (l < 1 << 60).then_some(l);
    for (ctl, rel) in groups {
        let rel = rel.as_str();
        if ctl.is_empty() {
            for &root in v2 {
                let d = root.join(rel);
                let Some(current) = read(d.join("memory.current")).and_then(|b| num(&b)) else {
                    continue;
                };
                let limit = d
                    .ancestors()
                    .take_while(|a| a.starts_with(root))
                    .filter_map(|a| num(&read(a.join("memory.max"))?))
                    .map(|v| v as u64)
                    .min()
                    .and_then(limited)?;
                let refaults =
                    stat_value(&read(d.join("memory.stat"))?, b"workingset_refault_file ")?;
                return Some((limit, current as u64, refaults));
            }
        } else if ctl.split(|&b| b == b',').any(|c| c == b"memory") {
            let d = v1.join(rel);
            let stat = read(d.join("memory.stat"))?;
            let limit = limited(stat_value(&stat, b"hierarchical_memory_limit ")?)?;
            let used = num(&read(d.join("memory.usage_in_bytes"))?)? as u64;
            let refaults = stat_value(&stat, b"total_workingset_refault_file ")?;
            return Some((limit, used, refaults));
        }
    }
    None
}

/// A number file's value.
fn num(b: &[u8]) -> Option<f64> {
    std::str::from_utf8(b).ok()?.trim().parse().ok()
}

/// The value of `key` (with its trailing space) in a `cpu.stat`.
fn stat_value(stat: &[u8], key: &[u8]) -> Option<u64> {
    stat.split(|&b| b == b'\n').find_map(|l| {
        let v = l.strip_prefix(key)?;
        std::str::from_utf8(v).ok()?.trim().parse().ok()
    })
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

    /// The limit is the smallest `memory.max` from the group up (v2), or v1's
    /// hierarchical limit; a group under none has no limit.
    #[test]
    fn memory_limits_of_both_cgroup_versions() {
        let t = tempfile::tempdir().unwrap();
        let (v2, v1) = (t.path().join("v2"), t.path().join("v1"));
        let w = |p: &std::path::Path, name: &str, text: &str| {
            std::fs::create_dir_all(p).unwrap();
            std::fs::write(p.join(name), text).unwrap();
        };
        let svc = v2.join("app.slice/web.service");
        w(&v2.join("app.slice"), "memory.max", "67108864\n");
        w(&svc, "memory.max", "max\n");
        w(&svc, "memory.current", "60000000\n");
        w(
            &svc,
            "memory.stat",
            "anon 1\nworkingset_refault_file 123\nfile 2\n",
        );
        let v2_line = || vec![(Vec::new(), "app.slice/web.service".to_string())];
        assert_eq!(
            memory_limit_under(v2_line(), &[&v2], &v1),
            Some((67108864, 60000000, 123))
        );
        // Unlimited all the way up.
        w(&v2.join("app.slice"), "memory.max", "max\n");
        assert_eq!(memory_limit_under(v2_line(), &[&v2], &v1), None);
        let g = v1.join("kiln");
        w(
            &g,
            "memory.stat",
            "cache 1\nworkingset_refault_file 5\nhierarchical_memory_limit 50331648\ntotal_workingset_refault_file 77\n",
        );
        w(&g, "memory.usage_in_bytes", "50000000\n");
        let v1_line = vec![(b"memory".to_vec(), "kiln".to_string())];
        assert_eq!(
            memory_limit_under(v1_line, &[&v2], &v1),
            Some((50331648, 50000000, 77))
        );
        w(
            &g,
            "memory.stat",
            "hierarchical_memory_limit 9223372036854771712\ntotal_workingset_refault_file 77\n",
        );
        let v1_line = vec![(b"memory".to_vec(), "kiln".to_string())];
        assert_eq!(memory_limit_under(v1_line, &[&v2], &v1), None);
    }

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

    /// A socket pair of kiln's own: the kernel's socket diagnostics give each end the
    /// other as its peer (what `ss -x` shows), so a target's own pair is not a socket to
    /// the outside.
    #[test]
    fn a_socket_pair_is_each_others_peer() {
        use std::os::unix::fs::MetadataExt;
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let ino = |s: &std::os::unix::net::UnixStream| {
            use std::os::fd::AsRawFd;
            std::fs::metadata(format!("/proc/self/fd/{}", s.as_raw_fd()))
                .unwrap()
                .ino()
        };
        let (ia, ib) = (ino(&a), ino(&b));
        let peers = unix_peers().expect("NETLINK_SOCK_DIAG answers");
        assert_eq!(peers.get(&ia), Some(&ib));
        assert_eq!(peers.get(&ib), Some(&ia));
        // The pair counts for nothing; a third socket of the process's own counts.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let out = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let inodes_of = |fds: &[i32]| -> HashSet<u64> {
            fds.iter()
                .map(|fd| {
                    std::fs::metadata(format!("/proc/self/fd/{fd}"))
                        .unwrap()
                        .ino()
                })
                .collect()
        };
        use std::os::fd::AsRawFd;
        let inodes = inodes_of(&[
            a.as_raw_fd(),
            b.as_raw_fd(),
            listener.as_raw_fd(),
            out.as_raw_fd(),
        ]);
        assert_eq!(
            outward_sockets(&listeners_of(&[std::process::id()]), &inodes),
            1
        );
    }

    #[test]
    fn addresses_of_the_kernels_tcp_tables() {
        assert_eq!(address(b"0100007F:1F90"), Some(("127.0.0.1".into(), 8080)));
        assert_eq!(
            address(b"00000000000000000000000001000000:0050"),
            Some(("[::1]".into(), 80))
        );
        // An IPv4 address mapped into IPv6 is said as IPv4.
        assert_eq!(
            address(b"0000000000000000FFFF00000100007F:1F90"),
            Some(("127.0.0.1".into(), 8080))
        );
        assert_eq!(address(b"zz:1"), None);
    }

    /// A connection this test opens to a listener it holds is its peer, named by the
    /// process that listens (this one); the accepted end, from a port it listens on, is
    /// not.
    #[test]
    fn a_process_connected_to_a_service_has_it_as_its_peer() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let _c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _a = l.accept().unwrap();
        let me = std::process::id();
        let peers = peers(&[me]);
        let p = peers
            .iter()
            .find(|p| p.address == format!("127.0.0.1:{port}"))
            .unwrap_or_else(|| panic!("{peers:?}"));
        assert_eq!(p.connections, 1, "{peers:?}");
        assert!(
            p.process
                .as_deref()
                .is_some_and(|x| x.ends_with(&format!("(pid {me})"))),
            "{peers:?}"
        );
        assert!(peers.len() == 1 || peers.iter().all(|p| !p.address.is_empty()));
    }

    /// A process in a cgroup with a CPU quota (v1's `cpu` controller, or v2's `cpu.max`):
    /// the quota and the time throttled, as the cgroup's own `cpu.stat` counts it.
    #[test]
    fn a_real_quota_throttles() {
        let v1 = std::path::Path::new("/sys/fs/cgroup/cpu");
        let v2 = std::path::Path::new("/sys/fs/cgroup");
        let (dir, files): (std::path::PathBuf, [(&str, &str); 2]) =
            if v1.join("cpu.cfs_quota_us").exists() {
                (
                    v1.join(format!("kiln-test-{}", std::process::id())),
                    [
                        ("cpu.cfs_period_us", "100000"),
                        ("cpu.cfs_quota_us", "20000"),
                    ],
                )
            } else {
                (
                    v2.join(format!("kiln-test-{}", std::process::id())),
                    [("cpu.max", "20000 100000"), ("cpu.max", "20000 100000")],
                )
            };
        if std::fs::create_dir(&dir).is_err() {
            kiln_testkit::skip("no writable cgroup CPU controller");
            return;
        }
        for (f, v) in files {
            std::fs::write(dir.join(f), v).unwrap();
        }
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        std::fs::write(dir.join("cgroup.procs"), child.id().to_string()).unwrap();
        let got = kiln_testkit::poll_until(std::time::Duration::from_secs(30), || {
            throttling(child.id()).is_some_and(|(_, us)| us > 0)
        });
        let seen = throttling(child.id());
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir(&dir);
        assert!(got.is_some(), "never throttled: {seen:?}");
        let (q, _) = seen.unwrap();
        assert!((q - 0.2).abs() < 1e-9, "{q}");
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
        assert_eq!(listen_queues(&listeners_of(&[me]), &inodes), Some((0, 1)));
        let _c: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        // The handshakes complete in the kernel as connect returns.
        assert_eq!(listen_queues(&listeners_of(&[me]), &inodes), Some((3, 1)));
        let _ = l.accept().unwrap();
        assert_eq!(listen_queues(&listeners_of(&[me]), &inodes), Some((2, 1)));
        assert!(listen_overflows(me).is_some());
        // A listener several target processes hold (a master and its workers, as this
        // process named twice stands for) is one queue, its namespace read once.
        let twice = listeners_of(&[me, me]);
        assert_eq!(twice.len(), listeners_of(&[me]).len());
        assert_eq!(listen_queues(&twice, &inodes), Some((2, 1)));
    }
}
