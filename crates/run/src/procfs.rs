//! What the target, the machine and kiln itself do each second, from `/proc`.
//!
//! The profile says where the target's CPU goes; these series say how much there was and
//! what else happened: CPU user and system time per thread group (BEAM schedulers, dirty
//! schedulers, pollers; Go and JVM pools merged by the same rules as `--merge-threads`),
//! resident memory, context switches, threads, open files and sockets, and the whole
//! machine's CPU — on a 2-core machine the load generator and the target share it, and a
//! saturated client must show.
use kiln_model::transform::{default_merge_rules, merge_name, MergeRule};
use kiln_store::{Column, SeriesTable};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Cumulative counters at one instant; differences of two give rates and window totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// CLOCK_MONOTONIC, ns.
    pub time_ns: u64,
    /// Target user CPU, seconds (all processes, living and exited threads).
    pub target_user_s: f64,
    /// Target system CPU, seconds.
    pub target_system_s: f64,
    /// Voluntary context switches of the target's threads.
    pub voluntary: u64,
    /// Involuntary context switches.
    pub involuntary: u64,
    /// kiln's own CPU (this process), seconds.
    pub kiln_s: f64,
    /// An external load command's CPU (with its descendants), seconds.
    pub load_s: f64,
    /// Machine CPU busy and total time, seconds summed over CPUs.
    pub machine_busy_s: f64,
    /// Machine CPU time, all states.
    pub machine_total_s: f64,
}

impl Totals {
    /// `self` at `t_ns` by linear interpolation towards `next` (a window edge that fell
    /// between two samples).
    pub(crate) fn interpolate(&self, next: &Totals, t_ns: u64) -> Totals {
        if next.time_ns <= self.time_ns {
            return next.clone();
        }
        let f = (t_ns.clamp(self.time_ns, next.time_ns) - self.time_ns) as f64
            / (next.time_ns - self.time_ns) as f64;
        let lerp = |a: f64, b: f64| a + (b - a) * f;
        let lerp_u = |a: u64, b: u64| (a as f64 + (b as f64 - a as f64) * f).round() as u64;
        Totals {
            time_ns: t_ns,
            target_user_s: lerp(self.target_user_s, next.target_user_s),
            target_system_s: lerp(self.target_system_s, next.target_system_s),
            voluntary: lerp_u(self.voluntary, next.voluntary),
            involuntary: lerp_u(self.involuntary, next.involuntary),
            kiln_s: lerp(self.kiln_s, next.kiln_s),
            load_s: lerp(self.load_s, next.load_s),
            machine_busy_s: lerp(self.machine_busy_s, next.machine_busy_s),
            machine_total_s: lerp(self.machine_total_s, next.machine_total_s),
        }
    }
}

/// A thread's cumulative CPU and switches as last seen.
#[derive(Clone, Copy, Debug, Default)]
struct TaskSeen {
    user: u64,
    system: u64,
}

/// Samples `/proc` for a set of target processes.
#[derive(Debug)]
pub struct ProcSampler {
    pids: Vec<u32>,
    load_pid: Option<u32>,
    rules: Vec<MergeRule>,
    ticks_per_s: f64,
    page_size: u64,
    tasks: HashMap<(u32, u32), TaskSeen>,
    prev: Option<Totals>,
    history: Vec<Totals>,
    target: TableBuilder,
    machine: TableBuilder,
    kiln: TableBuilder,
    peak_rss: u64,
}

/// A [`SeriesTable`] built row by row, with columns that may appear later (a thread group
/// started during the run): earlier rows are `None` there.
#[derive(Debug, Default)]
pub(crate) struct TableBuilder {
    name: String,
    time_ns: Vec<u64>,
    columns: Vec<Column>,
    index: HashMap<String, usize>,
}

impl TableBuilder {
    pub(crate) fn new(name: &str) -> Self {
        TableBuilder {
            name: name.to_string(),
            ..Default::default()
        }
    }

    pub(crate) fn row(&mut self, time_ns: u64, values: &[(String, &str, Option<f64>)]) {
        let n = self.time_ns.len();
        self.time_ns.push(time_ns);
        for (name, unit, v) in values {
            let i = match self.index.get(name) {
                Some(&i) => i,
                None => {
                    self.columns.push(Column {
                        name: name.clone(),
                        unit: unit.to_string(),
                        values: vec![None; n],
                    });
                    self.index.insert(name.clone(), self.columns.len() - 1);
                    self.columns.len() - 1
                }
            };
            self.columns[i].values.push(*v);
        }
        for c in &mut self.columns {
            if c.values.len() < n + 1 {
                c.values.push(None);
            }
        }
    }

    pub(crate) fn finish(self) -> SeriesTable {
        SeriesTable {
            name: self.name,
            time_ns: self.time_ns,
            columns: self.columns,
        }
    }
}

/// The sockets `pids` hold open now (their file descriptors that are sockets); `None` when
/// none of them can be read.
pub fn socket_count(pids: &[u32]) -> Option<u64> {
    let mut n = 0u64;
    let mut any = false;
    for pid in pids {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        any = true;
        n += dir
            .flatten()
            .filter(|e| {
                std::fs::read_link(e.path())
                    .map(|l| l.as_os_str().as_encoded_bytes().starts_with(b"socket:"))
                    .unwrap_or(false)
            })
            .count() as u64;
    }
    any.then_some(n)
}

/// How a wait for a server to let a fleet of connections go ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// Its sockets are back to where they were (within the slack).
    Yes,
    /// The deadline came with this many still open.
    TimedOut(u64),
    /// The stop was raised, or the target cannot be read.
    Stopped,
}

/// Waits until `pids` hold no more sockets than `baseline` (plus 1% of what a fleet of
/// `fleet` connections would add, for the server's own connections coming and going), or
/// `deadline` passes, waking on `stop`: a server closes a fleet's connections after the
/// clients have gone, and a fleet started again meanwhile meets a server still busy
/// closing the last (`--repeat` of a 2,000-connection fleet: "no CONNACK within 5 s").
pub fn await_released(
    pids: &[u32],
    baseline: u64,
    fleet: u64,
    deadline: std::time::Duration,
    stop: &kiln_os::stop::Stop,
) -> Released {
    let t = std::time::Instant::now();
    let limit = baseline + fleet / 100;
    loop {
        let Some(now) = socket_count(pids) else {
            return Released::Stopped;
        };
        if now <= limit {
            return Released::Yes;
        }
        if t.elapsed() >= deadline {
            return Released::TimedOut(now);
        }
        if stop.sleep(std::time::Duration::from_millis(200)) {
            return Released::Stopped;
        }
    }
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Fields of `/proc/.../stat` after the `comm` (which may hold spaces and parentheses):
/// `(comm, fields)` where `fields[0]` is the state (field 3 of proc(5)).
fn parse_stat(s: &str) -> Option<(&str, Vec<&str>)> {
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let comm = s.get(open + 1..close)?;
    let rest = s.get(close + 1..)?;
    Some((comm, rest.split_ascii_whitespace().collect()))
}

/// utime, stime (clock ticks) from stat fields (proc(5) fields 14 and 15).
fn cpu_ticks(fields: &[&str]) -> Option<(u64, u64)> {
    Some((fields.get(11)?.parse().ok()?, fields.get(12)?.parse().ok()?))
}

fn status_value(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_ascii_whitespace().next()?.parse().ok()
    })
}

/// Busy and total CPU time of the machine, in clock ticks, from `/proc/stat`.
fn machine_ticks() -> Option<(u64, u64)> {
    let stat = read("/proc/stat")?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_ascii_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    Some((total.saturating_sub(idle), total))
}

/// The process and its descendants (by parent pid), for an external load command.
fn process_tree(root: u32) -> Vec<u32> {
    let mut parent: Vec<(u32, u32)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(s) = read(format!("/proc/{pid}/stat")) {
                if let Some((_, f)) = parse_stat(&s) {
                    if let Some(pp) = f.get(1).and_then(|x| x.parse().ok()) {
                        parent.push((pid, pp));
                    }
                }
            }
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parent.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    tree
}

/// CPU seconds (user + system, plus reaped children) of a set of processes.
fn cpu_of(pids: &[u32], ticks_per_s: f64) -> f64 {
    pids.iter()
        .filter_map(|p| read(format!("/proc/{p}/stat")))
        .filter_map(|s| {
            let (_, f) = parse_stat(&s)?;
            let (u, st) = cpu_ticks(&f)?;
            let cu: u64 = f.get(13)?.parse().ok()?;
            let cs: u64 = f.get(14)?.parse().ok()?;
            Some((u + st + cu + cs) as f64 / ticks_per_s)
        })
        .sum()
}

impl ProcSampler {
    /// A sampler of `pids` (the target), and of `load_pid` and its descendants (an
    /// external load command), if any.
    pub fn new(pids: &[u32], load_pid: Option<u32>) -> Self {
        // SAFETY: sysconf has no preconditions.
        let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        // SAFETY: as above.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        ProcSampler {
            pids: pids.to_vec(),
            load_pid,
            rules: default_merge_rules(),
            ticks_per_s: if tck > 0 { tck as f64 } else { 100.0 },
            page_size: if page > 0 { page as u64 } else { 4096 },
            tasks: HashMap::new(),
            prev: None,
            history: Vec::new(),
            target: TableBuilder::new("target"),
            machine: TableBuilder::new("machine"),
            kiln: TableBuilder::new("kiln"),
            peak_rss: 0,
        }
    }

    /// Sets the external load command's pid once it is known.
    pub(crate) fn set_load_pid(&mut self, pid: Option<u32>) {
        self.load_pid = pid;
    }

    /// Takes one sample now: appends a row to every table (rates since the previous
    /// sample) and returns the cumulative totals.
    pub fn sample(&mut self) -> Totals {
        let now = kiln_os::clock::monotonic_ns();
        let tps = self.ticks_per_s;
        let mut totals = Totals {
            time_ns: now,
            ..Default::default()
        };
        let mut c = Counts::default();
        let mut seen_now: HashMap<(u32, u32), TaskSeen> = HashMap::new();
        for &pid in &self.pids {
            self.read_process(pid, &mut totals, &mut c, &mut seen_now);
        }
        self.tasks = seen_now;
        totals.kiln_s = cpu_of(&[std::process::id()], tps);
        if let Some(lp) = self.load_pid {
            totals.load_s = cpu_of(&process_tree(lp), tps);
        }
        if let Some((busy, total)) = machine_ticks() {
            totals.machine_busy_s = busy as f64 / tps;
            totals.machine_total_s = total as f64 / tps;
        }
        self.peak_rss = self.peak_rss.max(c.rss);
        if let Some(prev) = self.prev.clone() {
            let dt = (now.saturating_sub(prev.time_ns)) as f64 / 1e9;
            if dt > 0.0 {
                self.add_rows(&totals, &prev, &c, dt);
            }
        }
        self.prev = Some(totals.clone());
        self.history.push(totals.clone());
        totals
    }

    /// One target process: its CPU and memory into `totals`, its threads' switches and
    /// CPU by group, its open files and sockets into `c`.
    fn read_process(
        &self,
        pid: u32,
        totals: &mut Totals,
        c: &mut Counts,
        seen_now: &mut HashMap<(u32, u32), TaskSeen>,
    ) {
        let tps = self.ticks_per_s;
        // Process totals include threads that already exited.
        if let Some(stat) = read(format!("/proc/{pid}/stat")) {
            if let Some((_, f)) = parse_stat(&stat) {
                if let Some((u, s)) = cpu_ticks(&f) {
                    totals.target_user_s += u as f64 / tps;
                    totals.target_system_s += s as f64 / tps;
                }
                if let Some(pages) = f.get(21).and_then(|x| x.parse::<u64>().ok()) {
                    c.rss += pages * self.page_size;
                }
            }
        }
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for e in dir.flatten() {
                let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                    continue;
                };
                c.threads += 1;
                self.read_task(pid, tid, totals, c, seen_now);
            }
        }
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
            for e in dir.flatten() {
                c.fds += 1;
                if std::fs::read_link(e.path())
                    .map(|l| l.as_os_str().as_encoded_bytes().starts_with(b"socket:"))
                    .unwrap_or(false)
                {
                    c.sockets += 1;
                }
            }
        }
    }

    /// One thread: its context switches into `totals`, its CPU since the previous
    /// sample into its group's.
    fn read_task(
        &self,
        pid: u32,
        tid: u32,
        totals: &mut Totals,
        c: &mut Counts,
        seen_now: &mut HashMap<(u32, u32), TaskSeen>,
    ) {
        let base = format!("/proc/{pid}/task/{tid}");
        if let Some(st) = read(format!("{base}/status")) {
            totals.voluntary += status_value(&st, "voluntary_ctxt_switches").unwrap_or(0);
            totals.involuntary += status_value(&st, "nonvoluntary_ctxt_switches").unwrap_or(0);
        }
        let Some(stat) = read(format!("{base}/stat")) else {
            return;
        };
        let Some((comm, f)) = parse_stat(&stat) else {
            return;
        };
        let Some((u, s)) = cpu_ticks(&f) else {
            return;
        };
        let cur = TaskSeen { user: u, system: s };
        // A thread seen for the first time ran only in this interval (or the first
        // sample is the baseline).
        let before = match self.tasks.get(&(pid, tid)) {
            Some(p) => *p,
            None if self.prev.is_none() => cur,
            None => TaskSeen::default(),
        };
        let g = String::from_utf8_lossy(&merge_name(&self.rules, comm.as_bytes())).into_owned();
        let e = c.groups.entry(g).or_default();
        e.0 += u.saturating_sub(before.user);
        e.1 += s.saturating_sub(before.system);
        seen_now.insert((pid, tid), cur);
    }

    /// The rows of the target's, the machine's and kiln's tables: rates over the `dt`
    /// seconds since `prev`.
    fn add_rows(&mut self, totals: &Totals, prev: &Totals, c: &Counts, dt: f64) {
        let (now, tps) = (totals.time_ns, self.ticks_per_s);
        let pct = |a: f64, b: f64| Some(((a - b) / dt * 100.0).max(0.0));
        let per_s = |a: u64, b: u64| Some(a.saturating_sub(b) as f64 / dt);
        let mut row: Vec<(String, &str, Option<f64>)> = vec![
            (
                "cpu user".into(),
                "%",
                pct(totals.target_user_s, prev.target_user_s),
            ),
            (
                "cpu system".into(),
                "%",
                pct(totals.target_system_s, prev.target_system_s),
            ),
            ("rss".into(), "bytes", Some(c.rss as f64)),
            ("threads".into(), "count", Some(c.threads as f64)),
            (
                "voluntary switches".into(),
                "1/s",
                per_s(totals.voluntary, prev.voluntary),
            ),
            (
                "involuntary switches".into(),
                "1/s",
                per_s(totals.involuntary, prev.involuntary),
            ),
            ("open files".into(), "count", Some(c.fds as f64)),
            ("sockets".into(), "count", Some(c.sockets as f64)),
        ];
        for (g, (u, s)) in &c.groups {
            let share = |t: u64| Some(t as f64 / tps / dt * 100.0);
            row.push((format!("cpu user:{g}"), "%", share(*u)));
            row.push((format!("cpu system:{g}"), "%", share(*s)));
        }
        self.target.row(now, &row);
        let mt = totals.machine_total_s - prev.machine_total_s;
        let mb = totals.machine_busy_s - prev.machine_busy_s;
        self.machine.row(
            now,
            &[(
                "busy".into(),
                "%",
                (mt > 0.0).then(|| (mb / mt * 100.0).clamp(0.0, 100.0)),
            )],
        );
        let mut k = vec![("kiln cpu".into(), "%", pct(totals.kiln_s, prev.kiln_s))];
        if self.load_pid.is_some() {
            k.push((
                "load command cpu".into(),
                "%",
                pct(totals.load_s, prev.load_s),
            ));
        }
        self.kiln.row(now, &k);
    }

    /// Cumulative totals at `t_ns`, interpolated between the samples around it.
    pub(crate) fn totals_at(&self, t_ns: u64) -> Option<Totals> {
        let h = &self.history;
        let first = h.first()?;
        if t_ns <= first.time_ns {
            return Some(first.clone());
        }
        let i = h.partition_point(|x| x.time_ns <= t_ns);
        if i >= h.len() {
            return h.last().cloned();
        }
        Some(h[i - 1].interpolate(&h[i], t_ns))
    }

    /// Target CPU (user + system) in the latest interval, % of one CPU.
    pub(crate) fn latest_cpu_pct(&self) -> Option<f64> {
        let last = |name: &str| {
            self.target
                .index
                .get(name)
                .and_then(|&i| self.target.columns[i].values.last().copied().flatten())
        };
        Some(last("cpu user")? + last("cpu system")?)
    }

    /// The largest resident set seen, bytes.
    pub(crate) fn peak_rss(&self) -> u64 {
        self.peak_rss
    }

    /// The series: `target`, `machine` and `kiln` tables.
    pub fn finish(self) -> Vec<SeriesTable> {
        vec![
            self.target.finish(),
            self.machine.finish(),
            self.kiln.finish(),
        ]
    }
}

/// What one sample counts over the target's processes.
#[derive(Default)]
struct Counts {
    /// Per thread group: CPU ticks (user, system) used since the previous sample.
    groups: BTreeMap<String, (u64, u64)>,
    rss: u64,
    threads: u64,
    fds: u64,
    sockets: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_hostile_names_parse() {
        let s = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 100 1000 50";
        let (comm, f) = parse_stat(s).unwrap();
        assert_eq!(comm, "a) b (c)");
        assert_eq!(f[0], "S");
        assert_eq!(cpu_ticks(&f), Some((7, 3)));
        assert_eq!(f.get(21), Some(&"50"));
    }

    #[test]
    fn table_columns_may_appear_later() {
        let mut t = TableBuilder::new("t");
        t.row(1, &[("a".into(), "%", Some(1.0))]);
        t.row(
            2,
            &[("a".into(), "%", Some(2.0)), ("b".into(), "%", Some(3.0))],
        );
        t.row(3, &[("b".into(), "%", Some(4.0))]);
        let t = t.finish();
        assert_eq!(t.column("a").unwrap().values, [Some(1.0), Some(2.0), None]);
        assert_eq!(t.column("b").unwrap().values, [None, Some(3.0), Some(4.0)]);
    }

    #[test]
    fn a_busy_thread_shows_in_its_group() {
        // This test process: a thread burning CPU, named like a BEAM scheduler.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = stop.clone();
        let h = std::thread::Builder::new()
            .name("7_scheduler".into())
            .spawn(move || {
                let mut x = 0u64;
                while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                    x = x.wrapping_mul(31).wrapping_add(1);
                }
                x
            })
            .unwrap();
        let mut p = ProcSampler::new(&[std::process::id()], None);
        p.sample();
        std::thread::sleep(std::time::Duration::from_millis(600));
        let end = p.sample();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        h.join().unwrap();
        let tables = p.finish();
        let target = &tables[0];
        let sched = target.column("cpu user:scheduler").expect("group merged");
        // The burning thread used some CPU: more than nothing, at most one CPU.
        let v = sched.values[0].unwrap();
        assert!(v > 0.0 && v <= 101.0, "{v}");
        assert!(end.target_user_s > 0.0);
        assert!(target.column("rss").unwrap().values[0].unwrap() > 0.0);
        assert!(target.column("threads").unwrap().values[0].unwrap() >= 2.0);
    }
}
