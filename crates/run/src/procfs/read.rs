//! `/proc` files read as bytes and parsed.
//!
//! A process or thread name is whatever bytes the program gave (`prctl(PR_SET_NAME)`), cut
//! by the kernel to 15 bytes — which splits a multi-byte character — so nothing here
//! assumes UTF-8: a file that is not UTF-8 is still read, and its numbers still count.

/// A file's bytes; `None` when it cannot be read (the process or thread is gone).
pub(crate) fn read(path: impl AsRef<std::path::Path>) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

/// The fields of a `stat` line after the name, and the name (which may hold spaces,
/// parentheses and any bytes): `fields[0]` is the state (field 3 of proc(5)).
pub(crate) struct Stat<'a> {
    pub comm: &'a [u8],
    fields: Vec<&'a [u8]>,
}

impl<'a> Stat<'a> {
    /// Parses a `/proc/.../stat` line.
    pub(crate) fn parse(s: &'a [u8]) -> Option<Stat<'a>> {
        let open = s.iter().position(|&b| b == b'(')?;
        let close = s.iter().rposition(|&b| b == b')')?;
        let comm = s.get(open + 1..close)?;
        let rest = s.get(close + 1..)?;
        let fields = rest
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty())
            .collect();
        Some(Stat { comm, fields })
    }

    /// Field `n` of proc(5) (1-based, as the manual numbers them: 3 is the state) as a
    /// number.
    pub(crate) fn num(&self, n: usize) -> Option<u64> {
        let f = self.fields.get(n.checked_sub(3)?)?;
        std::str::from_utf8(f).ok()?.parse().ok()
    }

    /// The state letter (`R`, `S`, `D`...).
    pub(crate) fn state(&self) -> u8 {
        self.fields
            .first()
            .and_then(|f| f.first())
            .copied()
            .unwrap_or(b'?')
    }

    /// utime and stime, clock ticks (fields 14 and 15).
    pub(crate) fn cpu_ticks(&self) -> Option<(u64, u64)> {
        Some((self.num(14)?, self.num(15)?))
    }
}

/// The value after `key:` in a `status`-style file.
pub(crate) fn status_value(status: &[u8], key: &str) -> Option<u64> {
    status.split(|&b| b == b'\n').find_map(|l| {
        let rest = l.strip_prefix(key.as_bytes())?.strip_prefix(b":")?;
        let v = rest
            .split(|b| b.is_ascii_whitespace())
            .find(|f| !f.is_empty())?;
        std::str::from_utf8(v).ok()?.parse().ok()
    })
}

/// A thread's `schedstat`: time on a CPU and time waiting on a run queue (ns).
pub(crate) fn schedstat(s: &[u8]) -> Option<(u64, u64)> {
    let mut it = s
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .map(|f| std::str::from_utf8(f).ok()?.parse::<u64>().ok());
    Some((it.next()??, it.next()??))
}

/// Where a sleeping thread waits, from its state and its `wchan` (the kernel function it
/// sleeps in): a bucket of [`kiln_store::columns::WAITING`].
pub(crate) fn waiting_in(state: u8, wchan: &[u8]) -> &'static str {
    let w = std::str::from_utf8(wchan).unwrap_or("").trim();
    let has = |p: &[&str]| p.iter().any(|x| w.starts_with(x));
    if has(&[
        "io_schedule",
        "folio_wait",
        "wait_on_page",
        "jbd2",
        "blk_",
        "bit_wait_io",
        "__wait_on_buffer",
        "submit_bio_wait",
        "wait_for_completion_io",
        "ext4_",
        "xfs_",
    ]) {
        "disk"
    } else if has(&["futex"]) {
        "futex"
    } else if has(&[
        "do_epoll_wait",
        "ep_poll",
        "do_sys_poll",
        "do_select",
        "core_sys_select",
        "poll_schedule_timeout",
    ]) {
        "poll"
    } else if has(&[
        "wait_woken",
        "sk_wait_data",
        "inet_csk_accept",
        "unix_stream",
        "tcp_",
        "sock_",
        "inet_wait",
    ]) {
        "network"
    } else if has(&[
        "hrtimer_nanosleep",
        "do_nanosleep",
        "msleep",
        "schedule_hrtimeout",
    ]) {
        "sleep"
    } else if state == b'D' {
        "disk"
    } else if has(&["pipe_"]) {
        "pipe"
    } else {
        "other"
    }
}

/// A name as a series column or a table shows it: UTF-8 as it is, other bytes as `\xNN`
/// (never dropped, never merged with another name by a replacement character), control
/// characters escaped.
pub(crate) fn name_of(b: &[u8]) -> String {
    kiln_model::text::clean_bytes(b, usize::MAX)
}

/// Busy and total CPU time of the machine, in clock ticks, from `/proc/stat`.
pub(crate) fn machine_ticks() -> Option<(u64, u64)> {
    let stat = read("/proc/stat")?;
    let line = stat
        .split(|&b| b == b'\n')
        .find(|l| l.starts_with(b"cpu "))?;
    let v: Vec<u64> = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .skip(1)
        .filter_map(|x| std::str::from_utf8(x).ok()?.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    Some((total.saturating_sub(idle), total))
}

/// Every process on the machine: pid, parent, name and CPU ticks (user + system, with
/// reaped children), from one pass over `/proc`.
pub(crate) struct ProcEntry {
    pub pid: u32,
    pub ppid: u32,
    pub comm: Vec<u8>,
    /// Its own CPU ticks (user + system of its threads, without the children it reaped:
    /// those were counted as themselves while they ran).
    pub ticks: u64,
    /// Start time (clock ticks after boot): a pid reused by another process is another.
    pub start: u64,
}

pub(crate) fn all_processes() -> Vec<ProcEntry> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Some(s) = read(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(st) = Stat::parse(&s) else { continue };
        let (Some((u, sy)), Some(ppid)) = (st.cpu_ticks(), st.num(4)) else {
            continue;
        };
        out.push(ProcEntry {
            pid,
            ppid: ppid as u32,
            comm: st.comm.to_vec(),
            ticks: u + sy,
            start: st.num(22).unwrap_or(0),
        });
    }
    out
}

/// `root` and its descendants (by parent pid) among `procs`.
pub(crate) fn tree_of(procs: &[ProcEntry], root: u32) -> Vec<u32> {
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(procs.iter().filter(|e| e.ppid == p).map(|e| e.pid));
        i += 1;
    }
    tree
}

/// CPU seconds (user + system) of one process's own threads, without the children it
/// reaped: kiln's own CPU, whose reaped children are an external load command (counted as
/// the load command's, not kiln's).
pub(crate) fn own_cpu_of(pid: u32, ticks_per_s: f64) -> f64 {
    read(format!("/proc/{pid}/stat"))
        .and_then(|s| {
            let st = Stat::parse(&s)?;
            let (u, sy) = st.cpu_ticks()?;
            Some((u + sy) as f64 / ticks_per_s)
        })
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_hostile_names_parse() {
        let s = b"42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 100 1000 50";
        let st = Stat::parse(s).unwrap();
        assert_eq!(st.comm, b"a) b (c)");
        assert_eq!(st.cpu_ticks(), Some((7, 3)));
        assert_eq!(st.num(4), Some(1));
        assert_eq!(st.num(24), Some(50));
    }

    /// A name the kernel cut inside a character, and one that is not UTF-8 at all, still
    /// parse; their numbers count and their names keep every byte, escaped.
    #[test]
    fn names_that_are_not_utf8_keep_their_numbers() {
        let mut s = b"7 (a\xd1\x81\xd0\xb5\xd1\x80\xd0\xb2\xd0\xb5\xd1) R 1 7 7 0 -1 0 0 0 0 0 9 4"
            .to_vec();
        s.extend_from_slice(b" 0 0 20 0 1 0 100 1000 50");
        let st = Stat::parse(&s).unwrap();
        assert_eq!(st.cpu_ticks(), Some((9, 4)));
        assert_eq!(name_of(st.comm), "aсерве\\xd1");
        assert_eq!(name_of(b"spin\xff"), "spin\\xff");
        assert_ne!(name_of(b"spin\xfe"), name_of(b"spin\xff"));
    }

    #[test]
    fn where_threads_wait() {
        assert_eq!(waiting_in(b'S', b"futex_do_wait"), "futex");
        assert_eq!(waiting_in(b'S', b"do_epoll_wait"), "poll");
        assert_eq!(waiting_in(b'S', b"wait_woken"), "network");
        assert_eq!(waiting_in(b'S', b"hrtimer_nanosleep"), "sleep");
        assert_eq!(waiting_in(b'D', b"folio_wait_bit_common"), "disk");
        assert_eq!(waiting_in(b'D', b"0"), "disk");
        assert_eq!(waiting_in(b'S', b"0"), "other");
    }

    #[test]
    fn status_and_schedstat_values() {
        let st = b"Name:\tx\xff\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(status_value(st, "voluntary_ctxt_switches"), Some(12));
        assert_eq!(status_value(st, "nonvoluntary_ctxt_switches"), Some(3));
        assert_eq!(status_value(st, "Threads"), None);
        assert_eq!(schedstat(b"123 456 7\n"), Some((123, 456)));
        assert_eq!(schedstat(b"123\n"), None);
    }
}
