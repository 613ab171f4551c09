//! Fleets past one machine's limits: connections spread over several local source
//! addresses, and the pre-flight check that says, before any connection, whether a fleet
//! fits this machine and exactly what to add when it does not.
//!
//! # Why
//! A TCP connection is unique by its four-tuple, so one source address reaches one
//! destination (address and port) through at most as many connections as there are
//! ephemeral ports (`net.ipv4.ip_local_port_range`, 28,232 by default on Linux). That is
//! emqtt-bench's most frequent failure (`eaddrnotavail`, after tens of thousands of
//! connections and minutes of connecting); a file-descriptor limit reached halfway is the
//! second. Both can be computed before the first connection.
//!
//! # Spreading
//! With several source addresses (`--source-address A,B,…` or a CIDR range, as
//! emqtt-bench's `--ifaddr`), connection *i* is bound to address *i mod n* before it
//! connects. The port is left to `connect()` (`IP_BIND_ADDRESS_NO_PORT`), so the kernel
//! shares ports between destinations and reuses old `TIME_WAIT` pairs as it does for an
//! unbound socket (a plain `bind(addr, 0)` reserves a port for every destination and
//! fails while earlier connections linger in `TIME_WAIT`). An address whose ports run out
//! hands the connection to the next one ([`Spread::connect`]). To a loopback destination
//! with no addresses given, every `127.x.y.z` address is local, and the fleet is spread
//! over `127.0.0.1`, `127.0.0.2`… by itself when one address would not do.
//!
//! # The check ([`check`], on the numbers [`Machine::read`] finds)
//! * **Ports**, per (source, destination) pair: the range, less the reserved ports
//!   (`ip_local_reserved_ports`) and the ports of listening sockets in it (`connect()`
//!   skips both), less the connections already open on that pair (and `TIME_WAIT` ones
//!   the kernel may not reuse yet), from `/proc/net/tcp`.
//! * **Open files**: one per connection and 64 for the rest, against the hard
//!   `RLIMIT_NOFILE`; the soft limit is raised when the hard one allows.
//! * **Memory**: the connections at the bytes per connection the driver measured
//!   (kiln's and the kernel's), against `MemAvailable`.
//! * **Source addresses**: the given ones must be addresses of this machine, of the
//!   destination's family.
//!
//! Each shortfall says what to add: "needs 3 source addresses: --source-address
//! 127.0.0.2,127.0.0.3,127.0.0.4", "raise the open-files limit to 40,100 (…)".
use crate::Error;
use kiln_model::thousands;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;

/// Open files kept for everything but the connections (epoll, timers, stdio, outputs).
pub(crate) const OTHER_FILES: u64 = 64;

/// Memory per idle TCP connection on Linux 6.x, kernel side: 4.1 KiB of slab objects per
/// socket (`TCP`, `sock_inode_cache`, `dentry`, `filp`, `eventpoll_epi`…), measured as the
/// slab growth (`/proc/slabinfo`) with 10,000 idle MQTT connections to a local mosquitto:
/// 83 MB for both ends' 20,000 sockets (2026-11-26).
pub(crate) const KERNEL_BYTES_PER_CONNECTION: u64 = 4_200;

/// Most addresses a `--source-address` may name.
pub(crate) const MAX_SOURCES: usize = 65_536;

/// Parses `--source-address`: addresses and CIDR ranges, comma-separated
/// (`127.0.0.2,127.0.0.3`, `127.0.0.0/24`, `10.1.0.0/22,10.2.0.7`). A range gives every
/// address in it, less the network and broadcast addresses of IPv4 ranges of /30 and
/// wider (and the all-zero one of IPv6 ranges). The same address twice is an error.
pub fn parse_sources(spec: &str) -> Result<Vec<IpAddr>, Error> {
    let bad = |reason: String| Error::Option {
        flag: "--source-address",
        value: spec.to_string(),
        reason,
    };
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(bad("an empty item: give addresses or CIDR ranges, comma-separated (127.0.0.2,127.0.0.3 or 127.0.0.0/24)".into()));
        }
        match item.split_once('/') {
            None => out.push(
                item.parse::<IpAddr>()
                    .map_err(|_| bad(format!("'{item}' is not an IP address")))?,
            ),
            Some((a, p)) => {
                let addr = a
                    .parse::<IpAddr>()
                    .map_err(|_| bad(format!("'{a}' in '{item}' is not an IP address")))?;
                let bits = if addr.is_ipv4() { 32 } else { 128 };
                let prefix = p
                    .parse::<u32>()
                    .ok()
                    .filter(|&p| p <= bits)
                    .ok_or_else(|| {
                        bad(format!(
                            "'/{p}' in '{item}' is not a prefix length 0-{bits}"
                        ))
                    })?;
                let host_bits = bits - prefix;
                if host_bits > 16 {
                    return Err(bad(format!(
                        "'{item}' holds 2^{host_bits} addresses; at most {MAX_SOURCES} are taken (use a /{} or longer prefix)",
                        bits - 16
                    )));
                }
                let size = 1u128 << host_bits;
                let (first, last) = match addr {
                    IpAddr::V4(_) if prefix <= 30 => (1, size - 1),
                    IpAddr::V6(_) if prefix < 128 => (1, size),
                    _ => (0, size),
                };
                let base = match addr {
                    IpAddr::V4(a) => u32::from(a) as u128 & !(size - 1),
                    IpAddr::V6(a) => u128::from(a) & !(size - 1),
                };
                for k in first..last {
                    out.push(match addr {
                        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from((base + k) as u32)),
                        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(base + k)),
                    });
                }
            }
        }
        if out.len() > MAX_SOURCES {
            return Err(bad(format!("more than {MAX_SOURCES} addresses")));
        }
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(d) = out.iter().find(|a| !seen.insert(**a)) {
        return Err(bad(format!("{d} is given twice")));
    }
    Ok(out)
}

/// Formats addresses as `--source-address` takes them.
pub fn format_sources(addrs: &[IpAddr]) -> String {
    addrs
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// What a load is about to open.
#[derive(Clone, Debug, PartialEq)]
pub struct Fleet {
    /// Connections open at once.
    pub connections: u64,
    /// Where they go.
    pub destination: SocketAddr,
    /// `--source-address`: the addresses to bind, round-robin; empty: the kernel's choice.
    pub sources: Vec<IpAddr>,
    /// Memory per connection, kiln's and the kernel's, bytes.
    pub bytes_per_connection: u64,
}

/// What this machine offers a fleet: plain numbers, read by [`Machine::read`], so that
/// [`check`]'s arithmetic is tested on any of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Machine {
    /// Soft and hard `RLIMIT_NOFILE`.
    pub open_files: (u64, u64),
    /// `fs.nr_open`: the most a hard limit may be raised to.
    pub nr_open: u64,
    /// `net.ipv4.ip_local_port_range` (it serves IPv6 too), inclusive.
    pub port_range: (u16, u16),
    /// Ports of the range that `connect()` skips: reserved (`ip_local_reserved_ports`) or
    /// held by a listening socket.
    pub unusable_ports: u64,
    /// Connections already on (source, destination) pairs, by source address: open ones,
    /// and `TIME_WAIT` ones the kernel may not reuse yet.
    pub busy: HashMap<IpAddr, u64>,
    /// The address the kernel picks to reach the destination (for an unbound socket).
    pub default_source: Option<IpAddr>,
    /// Given source addresses that are not addresses of this machine, with why.
    pub not_local: Vec<(IpAddr, String)>,
    /// `MemAvailable`, bytes.
    pub mem_available: Option<u64>,
}

/// What the check found: how the fleet is placed, or what it lacks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Addresses to bind, round-robin; empty: none (the kernel's choice).
    pub sources: Vec<IpAddr>,
    /// Whether `sources` were chosen by the check (loopback), not given.
    pub spread_by_itself: bool,
    /// Ephemeral ports a fresh source address has towards the destination.
    pub ports_per_source: u64,
    /// Connections the sources can carry to the destination.
    pub capacity: u64,
    /// Open files needed.
    pub open_files: u64,
    /// The soft open-files limit to raise to, if it is below what is needed.
    pub raise_soft_to: Option<u64>,
    /// Memory needed, bytes.
    pub memory: u64,
    /// A one-line account of the fleet against the machine.
    pub summary: String,
    /// What the fleet lacks, each with what to add; empty: it fits.
    pub problems: Vec<String>,
}

fn mib(b: u64) -> String {
    let m = b as f64 / (1024.0 * 1024.0);
    if m >= 10.0 {
        format!("{} MiB", thousands(m.round() as u64))
    } else {
        format!("{m:.1} MiB")
    }
}

/// The most ports an ephemeral range can hold (1024-65535: below 1024 are the privileged
/// ports).
const MAX_RANGE: u64 = 64_512;

/// "; or widen the range to at least N ports" (`sep` before it), or nothing when no range
/// is that wide.
fn widen_to(sep: &str, ports: u64) -> String {
    if ports <= MAX_RANGE {
        format!(
            "{sep}or widen the range to at least {} ports",
            thousands(ports)
        )
    } else {
        String::new()
    }
}

/// The next loopback addresses after `after` that are not in `taken`.
fn next_loopback(after: Ipv4Addr, taken: &[IpAddr], n: usize) -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut a = u32::from(after);
    while out.len() < n && a < u32::from(Ipv4Addr::new(127, 255, 255, 254)) {
        a += 1;
        let ip = IpAddr::V4(Ipv4Addr::from(a));
        if !taken.contains(&ip) {
            out.push(ip);
        }
    }
    out
}

/// The ephemeral ports of the machine's range, as the check counts them.
struct Ports<'a> {
    /// Ports of the range that `connect()` may use on a fresh source address.
    fresh: u64,
    /// The range as the sysctl names it, for messages.
    range_text: String,
    machine: &'a Machine,
}

impl<'a> Ports<'a> {
    fn of(m: &'a Machine) -> Self {
        let (lo, hi) = m.port_range;
        let range = (hi as u64 + 1).saturating_sub(lo as u64);
        Ports {
            fresh: range.saturating_sub(m.unusable_ports),
            range_text: format!("net.ipv4.ip_local_port_range {lo}-{hi}"),
            machine: m,
        }
    }

    /// Ports `a` still has towards the destination.
    fn free(&self, a: &IpAddr) -> u64 {
        self.fresh
            .saturating_sub(self.machine.busy.get(a).copied().unwrap_or(0))
    }
}

/// Checks `f` against `m`: where its connections come from, and what it lacks.
pub fn check(f: &Fleet, m: &Machine) -> Plan {
    let ports = Ports::of(m);
    let mut plan = Plan {
        ports_per_source: ports.fresh,
        ..Default::default()
    };
    check_given_sources(f, m, &mut plan);
    if f.sources.is_empty() {
        place_without_sources(f, &ports, &mut plan);
    } else {
        place_on_given_sources(f, &ports, &mut plan);
    }
    if ports.fresh == 0 {
        plan.problems.push(format!(
            "no ephemeral port is free for connections ({}, {} of its ports reserved or listening): widen the range (sysctl -w net.ipv4.ip_local_port_range='32768 60999')",
            ports.range_text,
            thousands(m.unusable_ports)
        ));
    }
    check_open_files(f, m, &mut plan);
    check_memory(f, m, &mut plan);
    plan.summary = account(f, &ports, &plan);
    plan
}

/// Whether the destination is an IPv4 loopback address, where every 127.x source is local.
fn loopback4(f: &Fleet) -> bool {
    matches!(f.destination.ip(), IpAddr::V4(a) if a.is_loopback())
}

/// Problems with the given source addresses: of the wrong family, or not of this machine.
fn check_given_sources(f: &Fleet, m: &Machine, plan: &mut Plan) {
    let dst = f.destination;
    let wrong_family: Vec<&IpAddr> = f
        .sources
        .iter()
        .filter(|a| a.is_ipv4() != dst.is_ipv4())
        .collect();
    if !wrong_family.is_empty() {
        plan.problems.push(format!(
            "--source-address {} {} not of the destination's family ({dst} is {}): give {} addresses",
            format_sources(&wrong_family.iter().map(|a| **a).collect::<Vec<_>>()),
            if wrong_family.len() == 1 { "is" } else { "are" },
            if dst.is_ipv4() { "IPv4" } else { "IPv6" },
            if dst.is_ipv4() { "IPv4" } else { "IPv6" },
        ));
    }
    for (a, why) in &m.not_local {
        plan.problems.push(format!(
            "--source-address {a} is not an address of this machine ({why}): add it to an interface (as root: ip addr add {a}/{} dev IFACE) or leave it out",
            if a.is_ipv4() { 32 } else { 128 }
        ));
    }
}

/// No source address given: the kernel's choice if it carries the fleet, else as many
/// loopback addresses as needed (loopback destination), else a problem saying how many to add.
fn place_without_sources(f: &Fleet, ports: &Ports, plan: &mut Plan) {
    let (c, dst, fresh) = (f.connections, f.destination, ports.fresh);
    let own = ports.machine.default_source;
    let first = own.map_or(fresh, |a| ports.free(&a));
    if c <= first {
        plan.capacity = first;
    } else if loopback4(f) {
        // Every 127.x address is local: as many as the fleet needs.
        let start = match own {
            Some(IpAddr::V4(a)) if a.is_loopback() => a,
            _ => Ipv4Addr::new(127, 0, 0, 1),
        };
        let mut chosen = vec![IpAddr::V4(start)];
        let mut cap = ports.free(&chosen[0]);
        while cap < c && fresh > 0 {
            let Some(&next) = next_loopback(
                match chosen.last() {
                    Some(IpAddr::V4(a)) => *a,
                    _ => start,
                },
                &chosen,
                1,
            )
            .first() else {
                break;
            };
            cap += ports.free(&next);
            chosen.push(next);
        }
        plan.capacity = cap;
        plan.sources = chosen;
        plan.spread_by_itself = true;
    } else {
        plan.capacity = first;
        let more = (c - first).div_ceil(fresh.max(1));
        plan.problems.push(format!(
            "{} connections to {dst} need {} source addresses: this machine's address{} carries {} ({} ephemeral ports, {}); give --source-address with {} addresses of this machine (ip -br addr lists them; as root, ip addr add ADDR/32 dev IFACE adds one){}",
            thousands(c),
            more + 1,
            own.map_or(String::new(), |a| format!(" {a}")),
            thousands(first),
            thousands(fresh),
            ports.range_text,
            more + 1,
            widen_to(", ", c + ports.machine.unusable_ports + (fresh - first)),
        ));
    }
}

/// Source addresses given: the usable ones carry the fleet, or a problem says what to add.
fn place_on_given_sources(f: &Fleet, ports: &Ports, plan: &mut Plan) {
    let (c, dst, fresh, m) = (f.connections, f.destination, ports.fresh, ports.machine);
    let usable: Vec<IpAddr> = f
        .sources
        .iter()
        .filter(|a| a.is_ipv4() == dst.is_ipv4() && !m.not_local.iter().any(|(b, _)| b == *a))
        .copied()
        .collect();
    plan.sources = usable.clone();
    plan.capacity = usable.iter().map(|a| ports.free(a)).sum();
    if plan.capacity >= c || usable.is_empty() {
        return;
    }
    let deficit = c - plan.capacity;
    let more = deficit.div_ceil(fresh.max(1)) as usize;
    let need = usable.len() + more;
    let widen = {
        // Ports per address so that every given address carries its share.
        let busy: u64 = usable
            .iter()
            .map(|a| m.busy.get(a).copied().unwrap_or(0))
            .sum();
        (c + busy).div_ceil(usable.len() as u64) + m.unusable_ports
    };
    let what = if loopback4(f) {
        format!(
            "--source-address {}",
            format_sources(&with_more_loopback(&usable, more, m))
        )
    } else {
        format!(
            "{more} more address{} of this machine in --source-address (ip -br addr lists them; as root, ip addr add ADDR/32 dev IFACE adds one)",
            if more == 1 { "" } else { "es" }
        )
    };
    plan.problems.push(format!(
        "{} connections to {dst} need {need} source addresses: {what} ({} given, carrying {}: {} ephemeral ports each, {}{}){}",
        thousands(c),
        usable.len(),
        thousands(plan.capacity),
        thousands(fresh),
        ports.range_text,
        if usable.iter().any(|a| m.busy.get(a).is_some_and(|&b| b > 0)) {
            ", less the connections already open to it"
        } else {
            ""
        },
        widen_to("; ", widen),
    ));
}

/// `usable` and `more` fresh loopback addresses after its highest (fresh: without
/// connections to the destination).
fn with_more_loopback(usable: &[IpAddr], more: usize, m: &Machine) -> Vec<IpAddr> {
    let last = usable
        .iter()
        .filter_map(|a| match a {
            IpAddr::V4(v) if v.is_loopback() => Some(*v),
            _ => None,
        })
        .max()
        .unwrap_or(Ipv4Addr::new(127, 0, 0, 1));
    let mut all = usable.to_vec();
    let mut after = last;
    let mut added = 0;
    while added < more {
        let Some(&n) = next_loopback(after, &all, 1).first() else {
            break;
        };
        after = match n {
            IpAddr::V4(v) => v,
            _ => break,
        };
        if m.busy.get(&n).copied().unwrap_or(0) == 0 {
            all.push(n);
            added += 1;
        }
    }
    all
}

/// Open files: needed, the soft limit to raise, or a problem past the hard limit.
fn check_open_files(f: &Fleet, m: &Machine, plan: &mut Plan) {
    let c = f.connections;
    plan.open_files = c + OTHER_FILES;
    let (soft, hard) = m.open_files;
    if plan.open_files > hard {
        let need = plan.open_files;
        let mut how = format!(
            "as root: ulimit -Hn {need} && ulimit -n {need} in the shell that starts kiln, LimitNOFILE={need} in a systemd unit, or nofile in /etc/security/limits.conf"
        );
        if m.nr_open > 0 && need > m.nr_open {
            let _ = write!(how, "; first sysctl -w fs.nr_open={need}");
        }
        plan.problems.push(format!(
            "{} connections need {} open files, but this process may open at most {} (the hard RLIMIT_NOFILE): raise the open-files limit to {} ({how}), or open fewer connections",
            thousands(c),
            thousands(need),
            thousands(hard),
            thousands(need),
        ));
    } else if plan.open_files > soft {
        plan.raise_soft_to = Some(plan.open_files);
    }
}

/// Memory: needed, and a problem when more than is available.
fn check_memory(f: &Fleet, m: &Machine, plan: &mut Plan) {
    let c = f.connections;
    plan.memory = c.saturating_mul(f.bytes_per_connection);
    if let Some(avail) = m.mem_available {
        if plan.memory > avail {
            let fit = avail / f.bytes_per_connection.max(1);
            plan.problems.push(format!(
                "{} connections need about {} of memory ({} bytes each, kiln's and the kernel's) but {} is available (MemAvailable): open at most {} here, or free memory",
                thousands(c),
                mib(plan.memory),
                thousands(f.bytes_per_connection),
                mib(avail),
                thousands(fit),
            ));
        }
    }
}

/// The one-line account of the fleet against the machine.
fn account(f: &Fleet, ports: &Ports, plan: &Plan) -> String {
    let m = ports.machine;
    let from = if plan.sources.is_empty() {
        match m.default_source {
            Some(a) => format!("from {a}"),
            None => "from this machine's address".into(),
        }
    } else if plan.sources.len() <= 4 {
        format!(
            "from {} source address{} ({})",
            plan.sources.len(),
            if plan.sources.len() == 1 { "" } else { "es" },
            format_sources(&plan.sources)
        )
    } else {
        format!(
            "from {} source addresses ({} … {})",
            plan.sources.len(),
            plan.sources[0],
            plan.sources[plan.sources.len() - 1]
        )
    };
    let (soft, hard) = m.open_files;
    format!(
        "{} connections to {} {from}{}: room for {} ({} ephemeral ports per address, {}); {} open files of {}{}; about {} of memory{}",
        thousands(f.connections),
        f.destination,
        if plan.spread_by_itself {
            ", spread by itself (every 127.x address is local)"
        } else {
            ""
        },
        thousands(plan.capacity),
        thousands(ports.fresh),
        ports.range_text,
        thousands(plan.open_files),
        thousands(hard),
        match plan.raise_soft_to {
            Some(_) => format!(" (soft limit {} raised)", thousands(soft)),
            None => String::new(),
        },
        mib(plan.memory),
        match m.mem_available {
            Some(a) => format!(" of {} available", mib(a)),
            None => String::new(),
        },
    )
}

impl Plan {
    /// Whether the account is worth printing: several addresses, a raised limit, or more
    /// than half of a limit used.
    pub(crate) fn notable(&self) -> bool {
        self.sources.len() > 1
            || self.raise_soft_to.is_some()
            || self.open_files.saturating_sub(OTHER_FILES) * 2 > self.capacity
            || !self.problems.is_empty()
    }

    /// The check's verdict: an error listing every shortfall, or with `run_anyway`
    /// (`--no-preflight`) the plan, its shortfalls left for the caller to warn about.
    pub fn verdict(self, run_anyway: bool) -> Result<Plan, Error> {
        if self.problems.is_empty() || run_anyway {
            Ok(self)
        } else {
            Err(Error::Preflight {
                problems: self.problems,
            })
        }
    }

    /// Raises the soft open-files limit as planned.
    pub fn apply(&self) {
        let Some(want) = self.raise_soft_to else {
            return;
        };
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid out-pointer.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 || r.rlim_cur >= want {
            return;
        }
        let n = libc::rlimit {
            rlim_cur: want.min(r.rlim_max),
            rlim_max: r.rlim_max,
        };
        // SAFETY: valid pointer; raising the soft limit up to the hard one is allowed.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &n) };
    }

    /// Lines for the user: the account and, when run anyway, each shortfall.
    pub fn notes(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.notable() {
            v.push(format!("pre-flight: {}", self.summary));
        }
        for p in &self.problems {
            v.push(format!(
                "warning: pre-flight (run anyway, --no-preflight): {p}"
            ));
        }
        v
    }
}

/// Reads the machine, checks the fleet, and returns the plan (soft limit raised) or the
/// error naming every shortfall. `run_anyway` (`--no-preflight`) keeps the shortfalls as
/// the plan's problems instead.
pub fn preflight(f: &Fleet, run_anyway: bool) -> Result<Plan, Error> {
    let m = Machine::read(f);
    let plan = check(f, &m).verdict(run_anyway)?;
    plan.apply();
    Ok(plan)
}

fn read_u64s(path: &str) -> Option<Vec<u64>> {
    let s = kiln_os::proc::read_text(path)?;
    s.split_whitespace().map(|x| x.parse().ok()).collect()
}

/// `ip_local_reserved_ports` (`8080,9000-9010`): how many fall in `lo..=hi`.
fn reserved_in(text: &str, lo: u16, hi: u16) -> u64 {
    let mut n = 0u64;
    for item in text.trim().split(',').filter(|s| !s.is_empty()) {
        let (a, b) = item.split_once('-').unwrap_or((item, item));
        if let (Ok(a), Ok(b)) = (a.trim().parse::<u16>(), b.trim().parse::<u16>()) {
            let (a, b) = (a.max(lo), b.min(hi));
            if a <= b {
                n += (b - a) as u64 + 1;
            }
        }
    }
    n
}

/// One socket of `/proc/net/tcp{,6}`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpRow {
    /// Its local address and port.
    pub local: SocketAddr,
    /// Its peer's.
    pub remote: SocketAddr,
    /// The kernel's state number (`TCP_ESTABLISHED` 1 … `TCP_LISTEN` 10).
    pub state: u8,
    /// Clock ticks left on its timer (for `TIME_WAIT`: until it ends).
    pub timer: u64,
}

const TCP_TIME_WAIT: u8 = 6;
const TCP_LISTEN: u8 = 10;

fn parse_hex_addr(s: &str) -> Option<SocketAddr> {
    let (a, p) = s.split_once(':')?;
    if !a.is_ascii() {
        return None;
    }
    let port = u16::from_str_radix(p, 16).ok()?;
    let ip = match a.len() {
        8 => IpAddr::V4(Ipv4Addr::from(
            u32::from_str_radix(a, 16).ok()?.to_ne_bytes(),
        )),
        32 => {
            let mut b = [0u8; 16];
            for w in 0..4 {
                let v = u32::from_str_radix(&a[w * 8..w * 8 + 8], 16).ok()?;
                b[w * 4..w * 4 + 4].copy_from_slice(&v.to_ne_bytes());
            }
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// The sockets of a `/proc/net/tcp` or `/proc/net/tcp6` table (the header line skipped);
/// lines that do not parse are left out.
pub fn parse_tcp_table(text: &str) -> Vec<TcpRow> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let _sl = f.next()?;
            let local = parse_hex_addr(f.next()?)?;
            let remote = parse_hex_addr(f.next()?)?;
            let state = u8::from_str_radix(f.next()?, 16).ok()?;
            let _queues = f.next()?;
            let timer = f.next()?.split_once(':')?.1;
            Some(TcpRow {
                local,
                remote,
                state,
                timer: u64::from_str_radix(timer, 16).ok()?,
            })
        })
        .collect()
}

/// An IPv4-mapped IPv6 address as the IPv4 one.
fn canonical(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v) => v.to_ipv4_mapped().map_or(a, IpAddr::V4),
        _ => a,
    }
}

impl Machine {
    /// Reads the limits that concern `f` from `/proc` and the process.
    pub fn read(f: &Fleet) -> Machine {
        let mut m = Machine::default();
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid out-pointer.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
            m.open_files = (r.rlim_cur, r.rlim_max);
        } else {
            m.open_files = (u64::MAX, u64::MAX);
        }
        m.nr_open = read_u64s("/proc/sys/fs/nr_open")
            .and_then(|v| v.first().copied())
            .unwrap_or(0);
        m.port_range = read_u64s("/proc/sys/net/ipv4/ip_local_port_range")
            .filter(|v| v.len() == 2)
            .map_or((32768, 60999), |v| (v[0] as u16, v[1] as u16));
        let (lo, hi) = m.port_range;
        m.unusable_ports = kiln_os::proc::read_text("/proc/sys/net/ipv4/ip_local_reserved_ports")
            .map_or(0, |t| reserved_in(&t, lo, hi));
        // TIME_WAIT pairs are reused after a second when tcp_tw_reuse allows it (1: always,
        // 2: loopback only, the default).
        let tw_reuse = read_u64s("/proc/sys/net/ipv4/tcp_tw_reuse")
            .and_then(|v| v.first().copied())
            .unwrap_or(2);
        let hz = 100; // USER_HZ: /proc/net/tcp's timers are in clock ticks.
        let mut listening = std::collections::BTreeSet::new();
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let Some(text) = kiln_os::proc::read_text(table) else {
                continue;
            };
            for row in parse_tcp_table(&text) {
                let port = row.local.port();
                if !(lo..=hi).contains(&port) {
                    continue;
                }
                if row.state == TCP_LISTEN {
                    listening.insert(port);
                    continue;
                }
                if canonical(row.remote.ip()) != canonical(f.destination.ip())
                    || row.remote.port() != f.destination.port()
                {
                    continue;
                }
                if row.state == TCP_TIME_WAIT {
                    let loopback = row.remote.ip().is_loopback();
                    let reusable = tw_reuse == 1 || (tw_reuse == 2 && loopback);
                    // TIME_WAIT lasts 60 s; reused once older than about a second.
                    if reusable && row.timer < 58 * hz {
                        continue;
                    }
                }
                *m.busy.entry(canonical(row.local.ip())).or_default() += 1;
            }
        }
        m.unusable_ports += listening.len() as u64;
        m.default_source = std::net::UdpSocket::bind(SocketAddr::new(
            if f.destination.is_ipv4() {
                IpAddr::V4(Ipv4Addr::UNSPECIFIED)
            } else {
                IpAddr::V6(Ipv6Addr::UNSPECIFIED)
            },
            0,
        ))
        .and_then(|s| {
            s.connect(f.destination)?;
            s.local_addr()
        })
        .ok()
        .map(|a| canonical(a.ip()));
        for &a in &f.sources {
            if a.is_ipv4() != f.destination.is_ipv4() {
                continue;
            }
            if let Err(e) = bind_probe(a) {
                m.not_local.push((a, e.to_string()));
            }
        }
        m.mem_available = kiln_os::proc::read_text("/proc/meminfo").and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .map(|kb| kb * 1024)
        });
        m
    }
}

/// A TCP socket bound to `a` with no port: fails when `a` is not local.
fn bind_probe(a: IpAddr) -> std::io::Result<()> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(SocketAddr::new(a, 0)),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    no_port(&s);
    s.bind(&SocketAddr::new(a, 0).into())
}

/// `IP_BIND_ADDRESS_NO_PORT`: the port of a bound socket is chosen at `connect()`.
fn no_port(s: &socket2::Socket) {
    turn_on(s, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT);
}

/// Sets a socket's int option `level`/`name` to 1, for the options socket2 does not name;
/// a failure only leaves the option unset.
pub(crate) fn turn_on(s: &impl AsRawFd, level: libc::c_int, name: libc::c_int) {
    let one: libc::c_int = 1;
    // SAFETY: a valid socket and an int option value of the size given.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Opens a non-blocking TCP connection to `dst` (connect in progress), bound first to
/// `src` when given.
pub fn connect(src: Option<IpAddr>, dst: SocketAddr) -> std::io::Result<mio::net::TcpStream> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(dst),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    s.set_nonblocking(true)?;
    s.set_nodelay(true)?;
    if let Some(ip) = src {
        no_port(&s);
        s.bind(&SocketAddr::new(ip, 0).into())?;
    }
    match s.connect(&dst.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(mio::net::TcpStream::from_std(s.into()))
}

/// The source addresses of a running fleet: connection `i` from address `i mod n`, the
/// next ones when its ports have run out.
#[derive(Clone, Debug, Default)]
pub struct Spread {
    sources: Vec<IpAddr>,
}

/// A connection that could not be opened, and the address it was last tried from.
#[derive(Debug)]
pub struct ConnectError {
    /// The socket error.
    pub error: std::io::Error,
    /// The source address (none: the kernel's choice).
    pub source: Option<IpAddr>,
    /// Source addresses tried: all of them when `out_of_ports`.
    pub tried: usize,
    /// No source address had an ephemeral port left towards the destination.
    pub out_of_ports: bool,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.out_of_ports {
            return match self.source {
                Some(s) => write!(f, "from {s}: {}", self.error),
                None => write!(f, "{}", self.error),
            };
        }
        let range = read_u64s("/proc/sys/net/ipv4/ip_local_port_range")
            .filter(|v| v.len() == 2)
            .map_or(String::new(), |v| {
                format!(
                    " (net.ipv4.ip_local_port_range {}-{}: {} ports per source address)",
                    v[0],
                    v[1],
                    (v[1] + 1).saturating_sub(v[0])
                )
            });
        match (self.source, self.tried) {
            (Some(s), 1) => write!(f, "{}: no ephemeral port left from {s}{range}", self.error)?,
            (Some(_), n) => write!(
                f,
                "{}: no ephemeral port left from any of the {n} source addresses{range}",
                self.error
            )?,
            (None, _) => write!(f, "{}: no ephemeral port left{range}", self.error)?,
        }
        write!(f, "; add source addresses (--source-address)")
    }
}

impl Spread {
    /// Connections from `sources` (empty: the kernel's choice).
    pub fn new(sources: Vec<IpAddr>) -> Self {
        Spread { sources }
    }

    /// The address connection `i` is bound to first.
    pub(crate) fn source_for(&self, i: usize) -> Option<IpAddr> {
        (!self.sources.is_empty()).then(|| self.sources[i % self.sources.len()])
    }

    /// Opens connection `i` (see [`connect`]) from its address, or from the following
    /// ones when an address has no ephemeral port left towards `dst`.
    pub fn connect(
        &self,
        i: usize,
        dst: SocketAddr,
    ) -> Result<(mio::net::TcpStream, Option<IpAddr>), ConnectError> {
        let n = self.sources.len().max(1);
        let mut last = None;
        for k in 0..n {
            let src = self.source_for(i + k);
            match connect(src, dst) {
                Ok(s) => return Ok((s, src)),
                Err(e) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => {
                    last = Some((e, src));
                }
                Err(error) => {
                    return Err(ConnectError {
                        error,
                        source: src,
                        tried: k + 1,
                        out_of_ports: false,
                    })
                }
            }
        }
        let (error, source) = last.expect("at least one attempt");
        Err(ConnectError {
            error,
            source,
            tried: n,
            out_of_ports: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn machine() -> Machine {
        Machine {
            open_files: (1024, 20_000),
            nr_open: 1 << 20,
            port_range: (61000, 61099),
            default_source: Some(ip("127.0.0.1")),
            mem_available: Some(1 << 30),
            ..Default::default()
        }
    }

    fn fleet(c: u64, sources: &str) -> Fleet {
        Fleet {
            connections: c,
            destination: "127.0.0.1:1883".parse().unwrap(),
            sources: if sources.is_empty() {
                Vec::new()
            } else {
                parse_sources(sources).unwrap()
            },
            bytes_per_connection: 4_500,
        }
    }

    #[test]
    fn source_addresses_from_lists_and_ranges() {
        assert_eq!(
            parse_sources("127.0.0.2, 127.0.0.3").unwrap(),
            vec![ip("127.0.0.2"), ip("127.0.0.3")]
        );
        // A /30 without its network and broadcast addresses; a /31 and /32 whole.
        assert_eq!(
            format_sources(&parse_sources("10.0.0.5/30").unwrap()),
            "10.0.0.5,10.0.0.6"
        );
        assert_eq!(
            format_sources(&parse_sources("10.0.0.4/31,10.0.0.9/32").unwrap()),
            "10.0.0.4,10.0.0.5,10.0.0.9"
        );
        assert_eq!(parse_sources("127.0.0.0/24").unwrap().len(), 254);
        assert_eq!(parse_sources("fd00::/126").unwrap().len(), 3);
        for (bad, says) in [
            ("127.0.0.300", "not an IP address"),
            ("127.0.0.0/33", "prefix length"),
            ("10.0.0.0/8", "2^24 addresses"),
            ("127.0.0.2,,127.0.0.3", "empty item"),
            ("127.0.0.2,127.0.0.0/30", "127.0.0.2 is given twice"),
        ] {
            let e = parse_sources(bad).unwrap_err().to_string();
            assert!(
                e.contains("--source-address") && e.contains(says),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn ports_decide_how_many_source_addresses() {
        let m = machine();
        // One address carries exactly the range.
        let p = check(&fleet(100, "127.0.0.2"), &m);
        assert!(p.problems.is_empty(), "{:?}", p.problems);
        assert_eq!((p.capacity, p.ports_per_source), (100, 100));
        let p = check(&fleet(101, "127.0.0.2"), &m);
        assert_eq!(p.problems.len(), 1, "{:?}", p.problems);
        // 250 need three, and the advice names them.
        let p = check(&fleet(250, "127.0.0.2"), &m);
        assert!(
            p.problems[0].contains(
                "250 connections to 127.0.0.1:1883 need 3 source addresses: --source-address 127.0.0.2,127.0.0.3,127.0.0.4"
            ) && p.problems[0].contains("or widen the range to at least 250 ports"),
            "{}",
            p.problems[0]
        );
        // No range holds 100,000 ports: no advice to widen it.
        let p = check(&fleet(100_000, "127.0.0.2"), &m);
        assert!(
            p.problems[0].contains("need 1000 source addresses")
                && !p.problems[0].contains("widen"),
            "{}",
            p.problems[0]
        );
        // Busy ports of an address not given are not said to be the given one's.
        let other_busy = Machine {
            busy: [(ip("127.0.0.1"), 40)].into_iter().collect(),
            ..machine()
        };
        let p = check(&fleet(101, "127.0.0.2"), &other_busy);
        assert!(!p.problems[0].contains("already open"), "{}", p.problems[0]);
        let p = check(&fleet(250, "127.0.0.2,127.0.0.3,127.0.0.4"), &m);
        assert!(p.problems.is_empty(), "{:?}", p.problems);
        assert_eq!(p.capacity, 300);
        assert!(p.notable());
        // Reserved or listening ports, and connections already open, are not free.
        let m2 = Machine {
            unusable_ports: 10,
            busy: [(ip("127.0.0.3"), 40)].into_iter().collect(),
            ..machine()
        };
        let p = check(&fleet(250, "127.0.0.2,127.0.0.3,127.0.0.4"), &m2);
        assert_eq!(p.capacity, 90 + 50 + 90);
        // 127.0.0.5 is fresh: one more address.
        assert!(
            p.problems[0].contains(
                "need 4 source addresses: --source-address 127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5"
            ),
            "{}",
            p.problems[0]
        );
    }

    #[test]
    fn loopback_fleets_spread_by_themselves_others_are_told_what_to_add() {
        let m = machine();
        let p = check(&fleet(100, ""), &m);
        assert!(p.sources.is_empty() && p.problems.is_empty());
        let p = check(&fleet(250, ""), &m);
        assert!(p.problems.is_empty(), "{:?}", p.problems);
        assert!(p.spread_by_itself);
        assert_eq!(format_sources(&p.sources), "127.0.0.1,127.0.0.2,127.0.0.3");
        // A remote broker: the kernel's address carries the range; more must be given.
        let remote = Fleet {
            destination: "192.0.2.10:1883".parse().unwrap(),
            ..fleet(250, "")
        };
        let m3 = Machine {
            default_source: Some(ip("192.0.2.1")),
            ..machine()
        };
        let p = check(&remote, &m3);
        assert!(
            p.problems[0].contains("need 3 source addresses")
                && p.problems[0].contains("give --source-address with 3 addresses"),
            "{:?}",
            p.problems
        );
        let remote = Fleet {
            sources: vec![ip("192.0.2.1"), ip("192.0.2.2")],
            ..remote
        };
        let p = check(&remote, &m3);
        assert!(
            p.problems[0].contains("need 3 source addresses: 1 more address of this machine"),
            "{:?}",
            p.problems
        );
        // Family and locality.
        let m4 = Machine {
            not_local: vec![(ip("127.0.0.2"), "Cannot assign requested address".into())],
            ..machine()
        };
        let p = check(&fleet(10, "127.0.0.2,::1"), &m4);
        assert_eq!(p.problems.len(), 2, "{:?}", p.problems);
        assert!(p.problems[0].contains("--source-address ::1 is not of the destination's family"));
        assert!(p.problems[1].contains("127.0.0.2 is not an address of this machine"));
    }

    #[test]
    fn open_files_and_memory() {
        let m = Machine {
            port_range: (1024, 65535),
            ..machine()
        };
        let p = check(&fleet(5_000, ""), &m);
        assert!(p.problems.is_empty(), "{:?}", p.problems);
        assert_eq!(p.raise_soft_to, Some(5_064));
        let p = check(&fleet(40_036, ""), &m);
        assert!(
            p.problems
                .iter()
                .any(|x| x.contains("raise the open-files limit to 40,100 (")
                    && x.contains("ulimit -Hn 40100")),
            "{:?}",
            p.problems
        );
        let small = Machine {
            mem_available: Some(100 * 4_500),
            ..m
        };
        let p = check(&fleet(1_000, ""), &small);
        assert!(
            p.problems
                .iter()
                .any(|x| x.contains("MemAvailable") && x.contains("open at most 100 here")),
            "{:?}",
            p.problems
        );
        let e = check(&fleet(1_000, ""), &small).verdict(false).unwrap_err();
        assert!(e.to_string().contains("--no-preflight"), "{e}");
        assert!(check(&fleet(1_000, ""), &small).verdict(true).is_ok());
    }

    #[test]
    fn proc_net_tcp_rows_and_reserved_ports() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:0753 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n   1: 0200007F:EE48 0100007F:0753 01 00000000:00000000 00:00000000 00000000     0        0 2\n   2: 0200007F:EE49 0100007F:0753 06 00000000:00000000 03:000016F8 00000000     0        0 0\n";
        let rows = parse_tcp_table(text);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].local, "127.0.0.1:1875".parse().unwrap());
        assert_eq!(rows[0].state, TCP_LISTEN);
        assert_eq!(rows[1].local, "127.0.0.2:61000".parse().unwrap());
        assert_eq!(rows[1].remote, "127.0.0.1:1875".parse().unwrap());
        assert_eq!((rows[2].state, rows[2].timer), (TCP_TIME_WAIT, 0x16f8));
        let v6 = parse_hex_addr("00000000000000000000000001000000:0050").unwrap();
        assert_eq!(v6, "[::1]:80".parse().unwrap());
        assert_eq!(reserved_in("8080,61050-61200\n", 61000, 61099), 50);
        assert_eq!(reserved_in("\n", 61000, 61099), 0);
    }
}
