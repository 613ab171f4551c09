//! What the target, the machine and kiln itself do each second, from `/proc`.
//!
//! The profile says where the target's CPU goes; these series say how much there was and
//! what else happened: CPU user and system time per thread group (BEAM schedulers, dirty
//! schedulers, pollers; Go and JVM pools merged by the same rules as `--merge-threads`),
//! resident memory, context switches, threads, open files and sockets, and the whole
//! machine's CPU — on a 2-core machine the load generator and the target share it, and a
//! saturated client must show.
//!
//! Each thread's state comes from the kernel's own accounting, thread by thread, so that
//! a thread that comes and goes counts while it lives: its CPU (`stat`), its switches
//! (`status`), its time on a CPU and waiting on a run queue (`schedstat`: runnable, not
//! running — a CPU short). Per thread group that gives the thread-state split of every
//! second (on CPU, runnable, the rest blocked) and the busiest thread's CPU (one thread at
//! 100% of a CPU is as fast as it goes). Per process: page faults, storage bytes, the
//! accept queues of its listening sockets, its cgroup's CPU quota and throttling, its
//! cgroup's memory limit, use and file pages read again after eviction; and
//! every other process that used CPU meanwhile (`others`: who took the CPU).
//! Everything is read as bytes: a name that is not UTF-8 keeps its numbers
//! ([`read`]).
use kiln_model::transform::{default_merge_rules, merge_name, MergeRule};
use kiln_store::{columns, Column, SeriesTable};
use std::collections::{BTreeMap, HashMap, HashSet};

mod net;
pub use net::peers;
mod read;

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

/// A thread's cumulative counters as last seen.
#[derive(Clone, Copy, Debug, Default)]
struct TaskSeen {
    /// CPU, clock ticks.
    user: u64,
    system: u64,
    voluntary: u64,
    involuntary: u64,
    /// `schedstat`: on a CPU and waiting on a run queue, ns.
    on_cpu_ns: u64,
    runq_ns: u64,
}

impl TaskSeen {
    /// What happened between `before` and `self`.
    fn since(&self, before: &TaskSeen) -> TaskSeen {
        TaskSeen {
            user: self.user.saturating_sub(before.user),
            system: self.system.saturating_sub(before.system),
            voluntary: self.voluntary.saturating_sub(before.voluntary),
            involuntary: self.involuntary.saturating_sub(before.involuntary),
            on_cpu_ns: self.on_cpu_ns.saturating_sub(before.on_cpu_ns),
            runq_ns: self.runq_ns.saturating_sub(before.runq_ns),
        }
    }
}

/// A target process's cumulative counters as last seen: page faults, storage bytes, and
/// its network namespace's accept-queue overflows.
#[derive(Clone, Copy, Debug, Default)]
struct ProcessSeen {
    minor_faults: u64,
    major_faults: u64,
    read_bytes: u64,
    write_bytes: u64,
    overflows: Option<u64>,
    throttled_us: Option<u64>,
    /// Its cgroup's file pages read again after eviction ([`net::memory_limit`]).
    refaults: Option<u64>,
    /// The CPU of its children it waited for (`cutime` + `cstime`), clock ticks.
    children_ticks: u64,
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
    processes: HashMap<u32, ProcessSeen>,
    /// Every other process's CPU ticks as last seen, by (pid, start time).
    others_seen: HashMap<(u32, u64), u64>,
    /// The load command's processes' CPU ticks as last seen, by (pid, start time), and
    /// the ticks of those that have ended: its CPU only ever grows, whoever exits.
    load_seen: HashMap<(u32, u64), u64>,
    load_ended: u64,
    /// Context switches of the target's threads so far (sums of each thread's own).
    switches: (u64, u64),
    prev: Option<Totals>,
    history: Vec<Totals>,
    target: TableBuilder,
    machine: TableBuilder,
    kiln: TableBuilder,
    others: TableBuilder,
    peak_rss: u64,
    /// Copies of the target it forked during the run ([`ProcSampler::follow_copies`]).
    copies: Copies,
    /// A JVM target's counters file (`hsperfdata`), and its collectors' seconds as last
    /// read.
    jvm: Option<(std::path::PathBuf, Option<f64>)>,
    /// The samples at which the JVM's counters could not be read, and the first reason.
    jvm_unread: (usize, Option<String>),
}

/// The copies of the target's processes forked during the run and followed since.
#[derive(Debug, Default)]
struct Copies {
    /// The processes the run was given, and their executables.
    roots: Vec<(u32, Option<std::path::PathBuf>)>,
    /// Followed: (pid, start) with their user and system ticks as last seen.
    followed: HashMap<(u32, u64), (u64, u64)>,
    /// Descendants found not to run the target's program, by (pid, start).
    rejected: HashSet<(u32, u64)>,
    /// Copies under a second old, not followed yet: one that ends so young (a worker
    /// forked for one query) was reaped by its parent, whose count of its children's CPU
    /// holds what it used — the target's, as a followed copy's is.
    young: HashSet<(u32, u64)>,
    /// The ticks of followed copies that have ended (user, system): the target's CPU
    /// only grows when one ends, and its parent's count of its children's CPU grows by
    /// as much, which is no program's.
    ended: (u64, u64),
    ended_since_sample: u64,
    /// How many ended since the previous sample.
    ended_count: usize,
    /// How many of those were followed (older than a second when seen).
    followed_ended: usize,
    /// How many descendants were found since the previous sample not to run the
    /// target's program (programs it ran).
    rejected_count: usize,
    /// How many were followed in all.
    count: usize,
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

/// The processes a target forked to serve and that still run its program: its
/// descendants whose executable is its own (nginx's and Apache's workers, PostgreSQL's
/// backends, a pre-forking Python server's). A master process does little of the work,
/// so measuring it alone measures almost nothing. Programs it ran with a different
/// executable are not included (a shell, a helper), nor those that live a second or
/// less: a server that forks for each request (to run a program) has copies of itself for
/// a moment, about to become another program and end. A copy younger than a second is
/// waited for until it is a second old (a server started just before kiln has young
/// workers), and kept if it still runs the program then. Ordered by pid.
pub fn forked_workers(pid: u32) -> Vec<u32> {
    let (mut out, young) = forked_copies(pid);
    if let Some(wait) = young.iter().map(|y| y.1).max() {
        std::thread::sleep(wait);
        let (now, _) = forked_copies(pid);
        out.extend(young.iter().map(|y| y.0).filter(|p| now.contains(p)));
        out.sort_unstable();
    }
    out
}

/// [`forked_workers`]' candidates now: the copies a second old or more, and the younger
/// ones with how long until they are a second old.
fn forked_copies(pid: u32) -> (Vec<u32>, Vec<(u32, std::time::Duration)>) {
    let exe = |p: u32| std::fs::read_link(format!("/proc/{p}/exe")).ok();
    let Some(own) = exe(pid) else {
        return Default::default();
    };
    // Now, in clock ticks after boot (a process's start time is counted so).
    // SAFETY: sysconf has no preconditions.
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let tps = if tck > 0 { tck as f64 } else { 100.0 };
    let now = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|u| u.split_whitespace().next()?.parse::<f64>().ok())
        .map(|s| (s * tps) as u64);
    let procs = read::all_processes();
    // How long until `p` is a second old (zero: it is); `None` when unknown.
    let until_old = |p: u32| {
        let start = procs.iter().find(|e| e.pid == p).map(|e| e.start)?;
        let age = now?.saturating_sub(start) as f64 / tps;
        Some(std::time::Duration::from_secs_f64((1.0 - age).max(0.0)))
    };
    let (mut out, mut young) = (Vec::new(), Vec::new());
    for p in read::tree_of(&procs, pid) {
        if p == pid || exe(p).as_ref() != Some(&own) {
            continue;
        }
        match until_old(p) {
            Some(d) if d.is_zero() => out.push(p),
            Some(d) => young.push((p, d + std::time::Duration::from_millis(20))),
            None => {}
        }
    }
    out.sort_unstable();
    (out, young)
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

/// What one sample counts over one thread group of the target.
#[derive(Default, Debug)]
struct GroupCounts {
    /// CPU ticks (user, system) used since the previous sample.
    user: u64,
    system: u64,
    /// Run-queue wait since the previous sample, ns.
    runq_ns: u64,
    /// Threads now.
    threads: u64,
    /// The most CPU one of its threads used since the previous sample, ns.
    busiest_ns: u64,
    /// The most time one of its threads was on a CPU or runnable since the previous
    /// sample, ns: a thread never idle is the group's bottleneck, starved or not.
    busiest_busy_ns: u64,
}

/// What one sample counts over the target's processes.
#[derive(Default)]
struct Counts {
    groups: BTreeMap<String, GroupCounts>,
    rss: u64,
    threads: u64,
    fds: u64,
    /// Its sockets to the outside ([`net::outward_sockets`]).
    sockets: u64,
    /// Since the previous sample: every thread's run-queue wait (ns) and switches.
    runq_ns: u64,
    voluntary: u64,
    involuntary: u64,
    /// Since the previous sample: the processes' page faults and storage bytes.
    minor_faults: u64,
    major_faults: u64,
    read_bytes: u64,
    write_bytes: u64,
    overflows: Option<u64>,
    /// Since the previous sample: the CPU of children the processes waited for, ticks.
    children_ticks: u64,
    /// Since the previous sample: the CPU of copies of the target that ended young (a
    /// process per connection), as their parents counted it once they waited for them.
    young_copies_ticks: u64,
    /// Since the previous sample: the run-queue wait of the processes' first threads (an
    /// event loop's, in Node or an asyncio server), the most of any one, ns.
    main_runq_ns: u64,
    /// Connections waiting in the accept queues of the target's listeners now.
    accept_queue: Option<u64>,
    /// The cgroup's quota (CPUs) and the µs it was throttled since the previous sample.
    throttled: Option<(f64, u64)>,
    /// The cgroup's memory limit and use (bytes), and the file pages it read again after
    /// eviction since the previous sample.
    memory: Option<(u64, u64, u64)>,
    /// Socket inodes of the target (to find its listeners).
    inodes: HashSet<u64>,
    /// Threads asleep now, by where they wait ([`read::waiting_in`]).
    waiting: BTreeMap<&'static str, u64>,
    /// A JVM target's heap, from its own counters, and its collectors' seconds since the
    /// previous sample.
    jvm: Option<(crate::jvm::perfdata::Heap, Option<f64>)>,
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
            processes: HashMap::new(),
            others_seen: HashMap::new(),
            load_seen: HashMap::new(),
            load_ended: 0,
            switches: (0, 0),
            prev: None,
            history: Vec::new(),
            target: TableBuilder::new(columns::TARGET),
            machine: TableBuilder::new(columns::MACHINE),
            kiln: TableBuilder::new(columns::KILN),
            others: TableBuilder::new(columns::OTHERS),
            peak_rss: 0,
            copies: Copies {
                roots: pids
                    .iter()
                    .map(|&p| (p, std::fs::read_link(format!("/proc/{p}/exe")).ok()))
                    .collect(),
                ..Default::default()
            },
            jvm: pids
                .first()
                .and_then(|&p| crate::jvm::perfdata::path_of(p))
                .map(|p| (p, None)),
            jvm_unread: (0, None),
        }
    }

    /// How many samples found the JVM's counters file (`hsperfdata`) unreadable — gone
    /// with its JVM, cut short, or of a layout kiln does not read — and the first reason:
    /// those seconds have no `jvm …` figures.
    pub fn jvm_unread(&self) -> (usize, Option<&str>) {
        (self.jvm_unread.0, self.jvm_unread.1.as_deref())
    }

    /// How many processes the target forked during the run that ran its program and were
    /// followed (a backend per connection: PostgreSQL's, a forking server's).
    pub fn copies_followed(&self) -> usize {
        self.copies.count
    }

    /// Follows the copies of the target's processes forked since the run began (their
    /// descendants running the same executable, a second old or more: PostgreSQL's
    /// backend for each of the load's connections); forgets those that ended, keeping
    /// their CPU as the target's.
    fn follow_copies(&mut self, procs: &[read::ProcEntry]) {
        let now = std::fs::read_to_string("/proc/uptime")
            .ok()
            .and_then(|u| u.split_whitespace().next()?.parse::<f64>().ok())
            .map(|s| (s * self.ticks_per_s) as u64);
        let c = &mut self.copies;
        // Ended: its last ticks stay the target's.
        let alive: HashSet<(u32, u64)> = procs.iter().map(|e| (e.pid, e.start)).collect();
        let gone: Vec<(u32, u64)> = c
            .followed
            .keys()
            .filter(|k| !alive.contains(k))
            .copied()
            .collect();
        let before = c.young.len();
        c.young.retain(|k| alive.contains(k));
        c.ended_count += before - c.young.len();
        for k in gone {
            if let Some((u, s)) = c.followed.remove(&k) {
                c.ended.0 += u;
                c.ended.1 += s;
                c.ended_since_sample += u + s;
                c.ended_count += 1;
                c.followed_ended += 1;
                self.pids.retain(|&p| p != k.0);
            }
        }
        for &(root, ref exe) in &c.roots {
            let Some(exe) = exe else { continue };
            for p in read::tree_of(procs, root) {
                if self.pids.contains(&p) {
                    continue;
                }
                let Some(e) = procs.iter().find(|e| e.pid == p) else {
                    continue;
                };
                let key = (p, e.start);
                let old = now.is_some_and(|n| n.saturating_sub(e.start) as f64 >= self.ticks_per_s);
                if c.rejected.contains(&key) {
                    continue;
                }
                // (A young one is looked at again at each sample: a fork runs its parent's
                // program until it execs another.)
                if std::fs::read_link(format!("/proc/{p}/exe")).ok().as_ref() == Some(exe) {
                    if old {
                        c.young.remove(&key);
                        self.pids.push(p);
                        c.followed.insert(key, (0, 0));
                        c.count += 1;
                    } else {
                        c.young.insert(key);
                    }
                } else {
                    c.young.remove(&key);
                    c.rejected.insert(key);
                    c.rejected_count += 1;
                }
            }
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
        let procs = read::all_processes();
        self.follow_copies(&procs);
        for &pid in &self.pids.clone() {
            self.read_process(pid, &mut totals, &mut c, &mut seen_now);
        }
        self.copies_seen(&procs);
        // A copy that ended since the previous sample was reaped by its parent, which
        // counted its CPU among its children's then: all of that growth is the copies'
        // (what they used after they were last seen included), the target's own.
        // Only young ones ended: one may have been seen between its fork and its exec (a
        // program run with posix_spawn), so of the descendants seen since the previous
        // sample, the share that were copies is the share of the growth that is theirs,
        // the rest the programs' the target ran. A followed copy that ended takes it all.
        let last_seen = std::mem::take(&mut self.copies.ended_since_sample);
        let ended = std::mem::take(&mut self.copies.ended_count);
        let followed = std::mem::take(&mut self.copies.followed_ended);
        let programs = std::mem::take(&mut self.copies.rejected_count);
        if ended > 0 {
            let growth = c.children_ticks.saturating_sub(last_seen);
            let share = if followed > 0 {
                1.0
            } else {
                ended as f64 / (ended + programs) as f64
            };
            let copies = (growth as f64 * share).round() as u64;
            self.copies.ended.0 += copies;
            c.young_copies_ticks = copies;
            c.children_ticks = growth - copies;
        }
        totals.target_user_s += self.copies.ended.0 as f64 / tps;
        totals.target_system_s += self.copies.ended.1 as f64 / tps;
        self.tasks = seen_now;
        self.switches.0 += c.voluntary;
        self.switches.1 += c.involuntary;
        (totals.voluntary, totals.involuntary) = self.switches;
        let listeners = net::listeners_of(&self.pids);
        c.accept_queue = net::listen_queues(&listeners, &c.inodes).map(|(waiting, _)| waiting);
        c.sockets = net::outward_sockets(&listeners, &c.inodes);
        totals.kiln_s = read::own_cpu_of(std::process::id(), tps);
        let load_tree = self.load_pid.map(|lp| read::tree_of(&procs, lp));
        if let Some(tree) = &load_tree {
            totals.load_s = self.load_ticks(&procs, tree) as f64 / tps;
        }
        if let Some((busy, total)) = read::machine_ticks() {
            totals.machine_busy_s = busy as f64 / tps;
            totals.machine_total_s = total as f64 / tps;
        }
        self.peak_rss = self.peak_rss.max(c.rss);
        // A JVM's own account of its heap (a second it cannot be read reads empty, and
        // is counted: [`ProcSampler::jvm_unread`]).
        if let Some((path, last_gc)) = &mut self.jvm {
            let read = crate::jvm::perfdata::read(path).map_err(|e| e.to_string());
            match read.and_then(|c| {
                crate::jvm::perfdata::heap(&c).ok_or_else(|| {
                    format!(
                        "{}: {}",
                        path.display(),
                        crate::jvm::perfdata::why_no_heap(&c)
                    )
                })
            }) {
                Ok(h) => {
                    let since = last_gc.map(|g| (h.gc_s - g).max(0.0));
                    *last_gc = Some(h.gc_s);
                    c.jvm = Some((h, since));
                }
                Err(e) => {
                    self.jvm_unread.0 += 1;
                    self.jvm_unread.1.get_or_insert(e);
                }
            }
        }
        let others = self.others_used(&procs, load_tree.as_deref().unwrap_or(&[]));
        if let Some(prev) = self.prev.clone() {
            let dt = (now.saturating_sub(prev.time_ns)) as f64 / 1e9;
            if dt > 0.0 {
                self.add_rows(&totals, &prev, &c, dt);
                self.add_others_row(now, &others, dt);
            }
        }
        self.prev = Some(totals.clone());
        self.history.push(totals.clone());
        totals
    }

    /// The followed copies' ticks as now seen (user, system), kept for when they end.
    fn copies_seen(&mut self, procs: &[read::ProcEntry]) {
        for (&(pid, start), t) in self.copies.followed.iter_mut() {
            if !procs.iter().any(|e| e.pid == pid && e.start == start) {
                continue;
            }
            if let Some((u, s)) = read::read(format!("/proc/{pid}/stat"))
                .and_then(|st| read::Stat::parse(&st).and_then(|st| st.cpu_ticks()))
            {
                *t = (u, s);
            }
        }
    }

    /// The load command's CPU so far, ticks: its processes' own, those that ended at what
    /// they had when last seen (a command that exits does not take its CPU with it).
    fn load_ticks(&mut self, procs: &[read::ProcEntry], tree: &[u32]) -> u64 {
        let mut now = HashMap::with_capacity(tree.len());
        for p in procs.iter().filter(|p| tree.contains(&p.pid)) {
            now.insert((p.pid, p.start), p.ticks);
        }
        for (k, t) in &self.load_seen {
            if !now.contains_key(k) {
                self.load_ended += t;
            }
        }
        self.load_seen = now;
        self.load_ended + self.load_seen.values().sum::<u64>()
    }

    /// Every process that is neither the target, kiln, nor the load command: the CPU
    /// ticks each used since the previous sample, with its name and pid. The target's
    /// descendants are not others: their CPU is the target's (a copy it followed, or
    /// counted among its children's when it reaps them) — a worker forked for one query
    /// and gone within the second is the server's work, not a process that took its CPUs.
    fn others_used(&mut self, procs: &[read::ProcEntry], load: &[u32]) -> Vec<(String, u32, u64)> {
        let me = std::process::id();
        let first = self.prev.is_none();
        let mut seen = HashMap::with_capacity(procs.len());
        let mut used = Vec::new();
        let own: Vec<u32> = self
            .pids
            .iter()
            .flat_map(|&p| read::tree_of(procs, p))
            .collect();
        for p in procs {
            if p.pid == me || own.contains(&p.pid) || load.contains(&p.pid) {
                continue;
            }
            let key = (p.pid, p.start);
            let before = match self.others_seen.get(&key) {
                Some(&t) => t,
                None if first => p.ticks,
                None => 0,
            };
            seen.insert(key, p.ticks);
            let d = p.ticks.saturating_sub(before);
            if d > 0 {
                used.push((read::name_of(&p.comm), p.pid, d));
            }
        }
        self.others_seen = seen;
        used
    }

    /// One target process: its CPU, memory, faults and storage bytes into `totals` and
    /// `c`, its threads' switches and CPU by group, its open files and sockets.
    fn read_process(
        &mut self,
        pid: u32,
        totals: &mut Totals,
        c: &mut Counts,
        seen_now: &mut HashMap<(u32, u32), TaskSeen>,
    ) {
        let tps = self.ticks_per_s;
        let mut now = ProcessSeen::default();
        // Process totals include threads that already exited.
        if let Some(stat) = read::read(format!("/proc/{pid}/stat")) {
            if let Some(st) = read::Stat::parse(&stat) {
                if let Some((u, s)) = st.cpu_ticks() {
                    totals.target_user_s += u as f64 / tps;
                    totals.target_system_s += s as f64 / tps;
                }
                c.rss += st.num(24).unwrap_or(0) * self.page_size;
                now.minor_faults = st.num(10).unwrap_or(0);
                now.major_faults = st.num(12).unwrap_or(0);
                now.children_ticks = st.num(16).unwrap_or(0) + st.num(17).unwrap_or(0);
            }
        }
        if let Some(io) = read::read(format!("/proc/{pid}/io")) {
            now.read_bytes = read::status_value(&io, "read_bytes").unwrap_or(0);
            now.write_bytes = read::status_value(&io, "write_bytes").unwrap_or(0);
        }
        now.overflows = net::listen_overflows(pid).map(|(o, _)| o);
        let quota = net::throttling(pid);
        now.throttled_us = quota.map(|q| q.1);
        let memory = net::memory_limit(pid);
        now.refaults = memory.map(|m| m.2);
        if let Some(before) = self.processes.get(&pid) {
            c.minor_faults += now.minor_faults.saturating_sub(before.minor_faults);
            c.major_faults += now.major_faults.saturating_sub(before.major_faults);
            c.read_bytes += now.read_bytes.saturating_sub(before.read_bytes);
            c.write_bytes += now.write_bytes.saturating_sub(before.write_bytes);
            c.children_ticks += now.children_ticks.saturating_sub(before.children_ticks);
            if let (Some(a), Some(b)) = (now.overflows, before.overflows) {
                // One network namespace counts once, however many target processes share it.
                c.overflows = Some(c.overflows.unwrap_or(0).max(a.saturating_sub(b)));
            }
            if let (Some((cpus, _)), Some(a), Some(b)) =
                (quota, now.throttled_us, before.throttled_us)
            {
                let e = c.throttled.get_or_insert((cpus, 0));
                e.1 = e.1.max(a.saturating_sub(b));
            }
            // One cgroup counts once, however many target processes share it.
            if let (Some((limit, used, _)), Some(a), Some(b)) =
                (memory, now.refaults, before.refaults)
            {
                let e = c.memory.get_or_insert((limit, used, 0));
                e.2 = e.2.max(a.saturating_sub(b));
            }
        }
        self.processes.insert(pid, now);
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for e in dir.flatten() {
                let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                    continue;
                };
                c.threads += 1;
                self.read_task(pid, tid, c, seen_now);
            }
        }
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
            for e in dir.flatten() {
                c.fds += 1;
                if let Ok(l) = std::fs::read_link(e.path()) {
                    if let Some(i) = net::socket_inode(l.as_os_str().as_encoded_bytes()) {
                        c.inodes.insert(i);
                    }
                }
            }
        }
    }

    /// One thread: what it did since the previous sample (CPU, switches, run-queue wait)
    /// into its group's counts and the target's.
    fn read_task(
        &self,
        pid: u32,
        tid: u32,
        c: &mut Counts,
        seen_now: &mut HashMap<(u32, u32), TaskSeen>,
    ) {
        let base = format!("/proc/{pid}/task/{tid}");
        let Some(stat) = read::read(format!("{base}/stat")) else {
            return;
        };
        let Some(st) = read::Stat::parse(&stat) else {
            return;
        };
        let Some((user, system)) = st.cpu_ticks() else {
            return;
        };
        if matches!(st.state(), b'S' | b'D') {
            let wchan = read::read(format!("{base}/wchan")).unwrap_or_default();
            *c.waiting
                .entry(read::waiting_in(st.state(), &wchan))
                .or_default() += 1;
        }
        let status = read::read(format!("{base}/status")).unwrap_or_default();
        let (on_cpu_ns, runq_ns) = read::read(format!("{base}/schedstat"))
            .and_then(|s| read::schedstat(&s))
            .unwrap_or_default();
        let cur = TaskSeen {
            user,
            system,
            voluntary: read::status_value(&status, "voluntary_ctxt_switches").unwrap_or(0),
            involuntary: read::status_value(&status, "nonvoluntary_ctxt_switches").unwrap_or(0),
            on_cpu_ns,
            runq_ns,
        };
        // A thread seen for the first time ran only in this interval (or the first
        // sample is the baseline).
        let before = match self.tasks.get(&(pid, tid)) {
            Some(p) => *p,
            None if self.prev.is_none() => cur,
            None => TaskSeen::default(),
        };
        let d = cur.since(&before);
        c.voluntary += d.voluntary;
        c.involuntary += d.involuntary;
        c.runq_ns += d.runq_ns;
        if tid == pid {
            c.main_runq_ns = c.main_runq_ns.max(d.runq_ns);
        }
        let g = read::name_of(&merge_name(&self.rules, st.comm));
        let e = c.groups.entry(g).or_default();
        e.user += d.user;
        e.system += d.system;
        e.runq_ns += d.runq_ns;
        e.threads += 1;
        e.busiest_ns = e.busiest_ns.max(d.on_cpu_ns);
        e.busiest_busy_ns = e.busiest_busy_ns.max(d.on_cpu_ns + d.runq_ns);
        seen_now.insert((pid, tid), cur);
    }

    /// The rows of the target's, the machine's and kiln's tables: rates over the `dt`
    /// seconds since `prev`.
    fn add_rows(&mut self, totals: &Totals, prev: &Totals, c: &Counts, dt: f64) {
        use kiln_store::columns as col;
        let (now, tps) = (totals.time_ns, self.ticks_per_s);
        let pct = |a: f64, b: f64| Some(((a - b) / dt * 100.0).max(0.0));
        let per_s = |n: u64| Some(n as f64 / dt);
        let ns_pct = |ns: u64| Some(ns as f64 / 1e9 / dt * 100.0);
        let mut row: Vec<(String, &str, Option<f64>)> = vec![
            (
                col::CPU_USER.into(),
                "%",
                pct(totals.target_user_s, prev.target_user_s),
            ),
            (
                col::CPU_SYSTEM.into(),
                "%",
                pct(totals.target_system_s, prev.target_system_s),
            ),
            (col::RSS.into(), "bytes", Some(c.rss as f64)),
            (col::THREADS.into(), "count", Some(c.threads as f64)),
            (col::VOLUNTARY.into(), "1/s", per_s(c.voluntary)),
            (col::INVOLUNTARY.into(), "1/s", per_s(c.involuntary)),
            (col::OPEN_FILES.into(), "count", Some(c.fds as f64)),
            (col::SOCKETS.into(), "count", Some(c.sockets as f64)),
            (col::RUNNABLE.into(), "%", ns_pct(c.runq_ns)),
            (col::MINOR_FAULTS.into(), "1/s", per_s(c.minor_faults)),
            (col::MAJOR_FAULTS.into(), "1/s", per_s(c.major_faults)),
            (col::DISK_READ.into(), "bytes/s", per_s(c.read_bytes)),
            (col::DISK_WRITE.into(), "bytes/s", per_s(c.write_bytes)),
            (
                col::CHILDREN_CPU.into(),
                "%",
                Some(c.children_ticks as f64 / tps / dt * 100.0),
            ),
            (
                col::YOUNG_COPIES_CPU.into(),
                "%",
                Some(c.young_copies_ticks as f64 / tps / dt * 100.0),
            ),
            (col::MAIN_RUNNABLE.into(), "%", ns_pct(c.main_runq_ns)),
        ];
        for bucket in ["disk", "futex", "poll", "network", "sleep", "pipe", "other"] {
            let n = c.waiting.get(bucket).copied().unwrap_or(0);
            row.push((
                col::per_group(col::WAITING, bucket),
                "count",
                Some(n as f64),
            ));
        }
        if let Some(q) = c.accept_queue {
            row.push((col::ACCEPT_QUEUE.into(), "count", Some(q as f64)));
        }
        if let Some(o) = c.overflows {
            row.push((col::LISTEN_OVERFLOWS.into(), "1/s", per_s(o)));
        }
        if let Some((cpus, us)) = c.throttled {
            row.push((
                col::THROTTLED.into(),
                "%",
                Some(us as f64 / 1e6 / dt * 100.0),
            ));
            row.push((col::CPU_QUOTA.into(), "CPUs", Some(cpus)));
        }
        if let Some((limit, used, refaults)) = c.memory {
            let mib = |b: u64| Some(b as f64 / (1024.0 * 1024.0));
            row.push((col::MEMORY_LIMIT.into(), "MiB", mib(limit)));
            row.push((col::MEMORY_USED.into(), "MiB", mib(used)));
            row.push((col::REFAULTS.into(), "1/s", per_s(refaults)));
        }
        if let Some((h, gc_s)) = &c.jvm {
            row.push((col::JVM_HEAP_USED.into(), "bytes", Some(h.used)));
            row.push((col::JVM_OLD_USED.into(), "bytes", Some(h.old_used)));
            row.push((col::JVM_OLD_MAX.into(), "bytes", Some(h.old_max)));
            row.push((col::JVM_GC.into(), "%", gc_s.map(|s| s / dt * 100.0)));
        }
        for (g, gc) in &c.groups {
            let share = |t: u64| Some(t as f64 / tps / dt * 100.0);
            row.push((col::per_group(col::GROUP_CPU_USER, g), "%", share(gc.user)));
            row.push((
                col::per_group(col::GROUP_CPU_SYSTEM, g),
                "%",
                share(gc.system),
            ));
            row.push((
                col::per_group(col::GROUP_RUNNABLE, g),
                "%",
                ns_pct(gc.runq_ns),
            ));
            row.push((
                col::per_group(col::GROUP_THREADS, g),
                "count",
                Some(gc.threads as f64),
            ));
            row.push((
                col::per_group(col::GROUP_BUSIEST, g),
                "%",
                ns_pct(gc.busiest_ns),
            ));
            row.push((
                col::per_group(col::GROUP_BUSIEST_BUSY, g),
                "%",
                ns_pct(gc.busiest_busy_ns),
            ));
        }
        self.target.row(now, &row);
        let mt = totals.machine_total_s - prev.machine_total_s;
        let mb = totals.machine_busy_s - prev.machine_busy_s;
        self.machine.row(
            now,
            &[(
                col::BUSY.into(),
                "%",
                (mt > 0.0).then(|| (mb / mt * 100.0).clamp(0.0, 100.0)),
            )],
        );
        let mut k = vec![(col::KILN_CPU.into(), "%", pct(totals.kiln_s, prev.kiln_s))];
        if self.load_pid.is_some() {
            k.push((
                col::LOAD_COMMAND_CPU.into(),
                "%",
                pct(totals.load_s, prev.load_s),
            ));
        }
        self.kiln.row(now, &k);
    }

    /// The row of the other processes' table: each that used at least
    /// [`OTHER_SHOWN_PCT`] of a CPU over the interval (a process that appears later gets
    /// its column then; the seconds before read empty).
    fn add_others_row(&mut self, now: u64, used: &[(String, u32, u64)], dt: f64) {
        let tps = self.ticks_per_s;
        let row: Vec<(String, &str, Option<f64>)> = used
            .iter()
            .map(|(name, pid, t)| (name, pid, *t as f64 / tps / dt * 100.0))
            .filter(|(_, _, pct)| *pct >= OTHER_SHOWN_PCT)
            .map(|(name, pid, pct)| {
                (
                    kiln_store::columns::other_process(name, *pid),
                    "%",
                    Some(pct),
                )
            })
            .collect();
        self.others.row(now, &row);
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
        Some(last(kiln_store::columns::CPU_USER)? + last(kiln_store::columns::CPU_SYSTEM)?)
    }

    /// The largest resident set seen, bytes.
    pub(crate) fn peak_rss(&self) -> u64 {
        self.peak_rss
    }

    /// The series: `target`, `machine`, `kiln` and `others` tables.
    pub fn finish(self) -> Vec<SeriesTable> {
        vec![
            self.target.finish(),
            self.machine.finish(),
            self.kiln.finish(),
            busiest_others(self.others.finish(), OTHERS_KEPT),
        ]
    }
}

/// The other processes kept by name: those that used the most CPU over the run.
const OTHERS_KEPT: usize = 8;

/// `t` with its `keep` busiest columns (by CPU over all its seconds) and the rest summed
/// into one column, `cpu:(N other processes)`: a machine busy building code runs
/// thousands of short processes, and none of them alone is a neighbour to name.
fn busiest_others(mut t: SeriesTable, keep: usize) -> SeriesTable {
    if t.columns.len() <= keep + 1 {
        return t;
    }
    let total = |c: &Column| c.values.iter().flatten().sum::<f64>();
    t.columns
        .sort_by(|a, b| total(b).total_cmp(&total(a)).then(a.name.cmp(&b.name)));
    let rest = t.columns.split_off(keep);
    let values = (0..t.time_ns.len())
        .map(|i| Some(rest.iter().filter_map(|c| c.values[i]).sum()))
        .collect();
    t.columns.push(Column {
        name: columns::other_processes(rest.len()),
        unit: "%".into(),
        values,
    });
    t
}

/// Another process's CPU is kept from this share of a CPU over a second (2%): what a
/// shell or a cron job takes in passing is left out; a neighbour that takes CPU from the
/// target is not.
const OTHER_SHOWN_PCT: f64 = 2.0;
#[cfg(test)]
mod tests {
    use super::*;

    /// A shell that forked two subshells (its own program) — one that lives, one that
    /// ends within half a second — and ran `sleep` (another): the subshell that lives is
    /// its worker; the one that ended and the sleeps are not. Asked at once, kiln waits
    /// until its young copies are a second old to tell.
    #[test]
    fn forked_workers_are_the_descendants_running_the_same_program() {
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "(sleep 30; :) & (sleep 0.4; :) & sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = sh.id();
        // (The shell, its subshells, and three sleeps once all have started.)
        for _ in 0..200 {
            if read::tree_of(&read::all_processes(), pid).len() >= 6 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let asked = std::time::Instant::now();
        let workers = forked_workers(pid);
        assert!(
            asked.elapsed() >= std::time::Duration::from_millis(500),
            "the young copies were not waited for"
        );
        let exe = |p: u32| std::fs::read_link(format!("/proc/{p}/exe")).ok();
        let all = read::tree_of(&read::all_processes(), pid);
        let exes: Vec<_> = all.iter().map(|&p| exe(p)).collect();
        for p in all.iter().rev() {
            let _ = std::process::Command::new("kill")
                .arg(p.to_string())
                .status();
        }
        let _ = sh.wait();
        assert!(all.len() >= 4, "{all:?}");
        assert_eq!(workers.len(), 1, "{workers:?} of {all:?}: {exes:?}");
        let at = all.iter().position(|&p| p == workers[0]).unwrap();
        assert_eq!(exes[at], exes[0], "{exes:?}");
    }

    /// The CPU seconds of the children `pid` reaped (`cutime` + `cstime`).
    fn reaped_cpu(pid: u32, ticks_per_s: f64) -> f64 {
        read::read(format!("/proc/{pid}/stat"))
            .and_then(|t| {
                read::Stat::parse(&t).map(|st| st.num(16).unwrap_or(0) + st.num(17).unwrap_or(0))
            })
            .unwrap_or(0) as f64
            / ticks_per_s
    }

    /// Copies that end younger than a second (a worker forked for one query) are never
    /// followed, but what they used is the target's when its parent reaps them, not its
    /// children's (programs it ran), and not others' while they ran.
    /// A JVM's counters read while it runs; once it has ended (its counters file gone
    /// with it) the samples that cannot read them are counted with the reason, not left
    /// empty without a word.
    #[test]
    fn a_jvm_counters_file_that_cannot_be_read_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("Idle.java");
        std::fs::write(
            &src,
            "public class Idle { public static void main(String[] a) throws Exception { Thread.sleep(60000); } }",
        )
        .unwrap();
        let Ok(mut jvm) = std::process::Command::new("java")
            .arg("-Xshare:auto")
            .arg(&src)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        else {
            kiln_testkit::skip("java is not installed");
            return;
        };
        let pid = jvm.id();
        // Its counters file appears once the JVM is up, and its heap's counters in it a
        // moment later (the file is made first: read between the two, it names no heap).
        use crate::jvm::perfdata;
        let heap_counted = || {
            perfdata::path_of(pid)
                .and_then(|p| perfdata::read(&p).ok())
                .and_then(|c| perfdata::heap(&c))
                .is_some()
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !heap_counted() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(
            heap_counted(),
            "the JVM (pid {pid}) wrote no heap counters in 60 s"
        );
        let mut s = ProcSampler::new(&[pid], None);
        s.sample();
        s.sample();
        assert_eq!(s.jvm_unread(), (0, None), "a running JVM's counters unread");
        let _ = jvm.kill();
        let _ = jvm.wait();
        s.sample();
        let (n, why) = s.jvm_unread();
        assert_eq!(n, 1);
        assert!(
            why.is_some_and(|w| w.contains(&pid.to_string())),
            "the reason names the file: {why:?}"
        );
    }

    #[test]
    fn copies_that_end_young_are_the_targets() {
        let mut sh = std::process::Command::new("sh")
            .args([
                "-c",
                "sleep 0.3; for k in 1 2 3 4 5 6; do (i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done); done; sleep 30",
            ])
            .spawn()
            .unwrap();
        let pid = sh.id();
        let mut s = ProcSampler::new(&[pid], None);
        let first = s.sample();
        let mut last = first.clone();
        let t = std::time::Instant::now();
        let mut young_seen = false;
        let mut seen = HashSet::new();
        while t.elapsed() < std::time::Duration::from_secs(60) {
            std::thread::sleep(std::time::Duration::from_millis(100));
            last = s.sample();
            young_seen |= !s.copies.young.is_empty();
            // Done: the last subshell ended and the shell sleeps (its one child `sleep`).
            let tree = read::tree_of(&read::all_processes(), pid);
            seen.extend(tree.iter().copied());
            let sleeping = tree.len() == 2
                && tree.iter().any(|&p| {
                    std::fs::read_link(format!("/proc/{p}/exe"))
                        .is_ok_and(|e| e.to_string_lossy().ends_with("sleep"))
                });
            if young_seen && sleeping && t.elapsed() > std::time::Duration::from_millis(800) {
                break;
            }
        }
        let children = reaped_cpu(pid, s.ticks_per_s);
        let _ = sh.kill();
        let _ = sh.wait();
        assert!(young_seen, "no young copy was seen");
        assert_eq!(s.copies_followed(), 0, "a copy lived a second");
        let target = |t: &Totals| t.target_user_s + t.target_system_s;
        let kept = target(&last) - target(&first);
        assert!(
            children > 0.2 && kept >= 0.8 * children,
            "the target's CPU grew {kept:.2} s; its reaped copies used {children:.2} s"
        );
        let others = s.others.finish();
        assert!(
            !others
                .columns
                .iter()
                .any(|c| seen.iter().any(|p| c.name.ends_with(&format!(" ({p})")))),
            "a copy counted among the others: {:?}",
            others.columns.iter().map(|c| &c.name).collect::<Vec<_>>()
        );
    }

    /// A copy the target forks during the run is followed from its first second, and
    /// when it ends its CPU stays the target's (its parent's count of its children's CPU
    /// grows by as much: no program it ran).
    #[test]
    fn copies_forked_during_the_run_are_followed_and_kept() {
        let mut sh = std::process::Command::new("sh")
            .args([
                "-c",
                "sleep 0.2; (i=0; while [ $i -lt 1500000 ]; do i=$((i+1)); done) & wait; sleep 1",
            ])
            .spawn()
            .unwrap();
        let pid = sh.id();
        let mut s = ProcSampler::new(&[pid], None);
        let first = s.sample();
        let mut last = first.clone();
        let t = std::time::Instant::now();
        let mut ended = false;
        while t.elapsed() < std::time::Duration::from_secs(60) {
            std::thread::sleep(std::time::Duration::from_millis(200));
            last = s.sample();
            let copy_running = read::tree_of(&read::all_processes(), pid).len() > 1;
            if s.copies_followed() > 0 && !copy_running {
                ended = true;
                break;
            }
        }
        // The copy's CPU, as its parent counts its children's once it waited for them.
        let children = reaped_cpu(pid, s.ticks_per_s);
        let _ = sh.kill();
        let _ = sh.wait();
        assert!(ended, "the copy was not followed, or did not end");
        assert_eq!(s.copies_followed(), 1);
        let target = |t: &Totals| t.target_user_s + t.target_system_s;
        let kept = target(&last) - target(&first);
        assert!(
            children > 0.2 && kept >= 0.8 * children,
            "the target's CPU grew {kept:.2} s; its reaped copy used {children:.2} s"
        );
        let said: f64 = s
            .target
            .columns
            .iter()
            .find(|c| c.name == columns::CHILDREN_CPU)
            .map(|c| c.values.iter().flatten().sum())
            .unwrap_or(0.0);
        assert!(
            said < 10.0,
            "the copy's CPU counted as its children's: {said}% summed over the samples"
        );
    }

    /// The busiest other processes keep their columns; the rest are summed, none lost.
    #[test]
    fn other_processes_beyond_the_busiest_are_summed() {
        let mut t = TableBuilder::new("others");
        for (i, w) in [5.0, 1.0, 9.0, 2.0].iter().enumerate() {
            t.row(1, &[(format!("cpu:p ({i})"), "%", Some(*w))]);
        }
        let t = busiest_others(t.finish(), 2);
        let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["cpu:p (2)", "cpu:p (0)", "cpu:(2 other processes)"]);
        let sum: f64 = t.columns[2].values.iter().flatten().sum();
        assert_eq!(sum, 3.0);
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

    /// A thread whose name is not UTF-8 keeps its CPU: its group is named with the bad
    /// byte escaped, its busiest thread's CPU is there, and the machine's others are apart.
    #[test]
    fn a_thread_named_with_a_bad_byte_keeps_its_cpu() {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (named_tx, named_rx) = std::sync::mpsc::channel();
        let s2 = stop.clone();
        let h = std::thread::spawn(move || {
            let name = b"spin\xff\0";
            // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
            unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
            let _ = named_tx.send(());
            let mut x = 0u64;
            while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                x = x.wrapping_mul(31).wrapping_add(1);
            }
            x
        });
        named_rx.recv().unwrap();
        let mut p = ProcSampler::new(&[std::process::id()], None);
        p.sample();
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(400) {
            std::hint::spin_loop();
        }
        p.sample();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        h.join().unwrap();
        let tables = p.finish();
        let target = &tables[0];
        let cpu = target
            .column("cpu user:spin\\xff")
            .expect("the group keeps its name");
        assert!(cpu.values[0].unwrap() > 0.0, "{:?}", cpu.values);
        let busiest = target.column("busiest thread:spin\\xff").unwrap();
        let b = busiest.values[0].unwrap();
        assert!(b > 0.0 && b <= 101.0, "{b}");
        assert!(target.column("runnable:spin\\xff").is_some());
        assert_eq!(
            target.column("threads:spin\\xff").unwrap().values[0],
            Some(1.0)
        );
        assert_eq!(tables[3].name, "others");
    }

    /// Switches are every thread's own, summed: threads that sleep and wake count, as
    /// their own `/proc/PID/task/TID/status` counts them.
    #[test]
    fn every_threads_switches_are_counted() {
        let go = std::sync::Arc::new(std::sync::Barrier::new(5));
        let done = std::sync::Arc::new(std::sync::Barrier::new(5));
        let gone = std::sync::Arc::new(std::sync::Barrier::new(5));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (go, done, gone) = (go.clone(), done.clone(), gone.clone());
                std::thread::spawn(move || {
                    go.wait();
                    for _ in 0..100 {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    done.wait();
                    // Alive until sampled: a thread that exits between two samples takes
                    // its last interval's switches with it.
                    gone.wait();
                })
            })
            .collect();
        let mut p = ProcSampler::new(&[std::process::id()], None);
        p.sample();
        go.wait();
        done.wait();
        let end = p.sample();
        gone.wait();
        for h in handles {
            h.join().unwrap();
        }
        // 4 threads × 100 sleeps, each a voluntary switch at least.
        assert!(end.voluntary >= 400, "{}", end.voluntary);
        let t = &p.finish()[0];
        assert!(t.column("voluntary switches").unwrap().values[0].unwrap() > 0.0);
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
