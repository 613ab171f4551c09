//! Threads blocked in the work's path (the thread-state method's blocked share, by why),
//! goroutines parked on locks (Go's own profiles), and the time that is not the server's
//! at all (Little's law against the server's busy time).
use super::{cpus, pct, secs, Runtime};
use crate::waits::{go_sites, Site};
use crate::{Class, Facts, Finding};
use kiln_model::waits::WaitReason;
use kiln_store::{JvmDumps, MonitorWait};

/// A wait this share of the operations' time (or of the server's working time) is named.
const NAMED: f64 = 0.1;

/// The time the findings weigh waits against: the operations' time (their latencies
/// summed), else the server's working time (threads on a CPU, runnable or blocked in
/// their work), seconds; and what it is, in words.
pub(crate) fn outcome_time(f: &Facts) -> Option<(f64, String)> {
    if let Some(r) = f.request_time_s() {
        return Some((r, format!("of the {}s' time", f.outcome.unit)));
    }
    let busy: f64 = f.groups.iter().map(|g| g.busy()).sum::<f64>() * f.secs;
    (busy > 0.0).then(|| (busy, "of the server's working time".to_string()))
}

/// The share of the operations' time (or of the server's working time) they waited on a
/// lock: threads blocked on one (the off-CPU profile: a mutex, a monitor, Python's GIL),
/// goroutines parked on one (Go's block profile). 0 without either profile.
pub fn lock_share(f: &Facts) -> f64 {
    let Some((outcome_s, _)) = outcome_time(f) else {
        return 0.0;
    };
    let mut t = 0.0;
    if let (Some(p), Some(w)) = (f.offcpu(), f.waits()) {
        t += w.of(WaitReason::Lock) as f64 * p.event.ns_per_weight().unwrap_or(0.0) / 1e9;
    }
    if let Some(p) = f.goroutine_waits() {
        let (sites, _) = go_sites(p);
        let w: u128 = sites
            .iter()
            .filter(|s| s.reason == WaitReason::Lock)
            .map(|s| s.weight)
            .sum();
        t += w as f64 * p.event.ns_per_weight().unwrap_or(1.0) / 1e9;
    }
    t / outcome_s.max(1e-9)
}

/// What the off-CPU profile's `raw_s` seconds of blocks are scaled by to be the blocked
/// time the kernel counted (schedstat): a block lasts until the thread runs again, its
/// wait for a CPU after the wake-up included. 1 when they are within it.
fn blocked_scale(f: &Facts, raw_s: f64) -> f64 {
    let blocked_s: f64 = f.groups.iter().map(|g| g.blocked).sum::<f64>() * f.secs;
    if raw_s > blocked_s && blocked_s > 0.0 {
        blocked_s / raw_s
    } else {
        1.0
    }
}

/// The share of the operations' time (or of the server's working time) threads waited
/// for Python's GIL (the off-CPU profile), the kernel's blocked time shared as the blocked
/// rule shares it; 0 without it.
fn gil_share(f: &Facts) -> f64 {
    let (Some((outcome_s, _)), Some(p), Some(w)) = (outcome_time(f), f.offcpu(), f.waits()) else {
        return 0.0;
    };
    let ns = p.event.ns_per_weight().unwrap_or(0.0);
    let scale = blocked_scale(f, w.total as f64 * ns / 1e9);
    let gil: u128 = w
        .sites_of(WaitReason::Lock)
        .filter(|s| s.primitive == crate::waits::GIL)
        .map(|s| s.weight)
        .sum();
    gil as f64 * ns / 1e9 * scale / outcome_s.max(1e-9)
}

/// The command that checks a wait of `reason` without kiln.
fn check_of(f: &Facts, reason: WaitReason, at: &str) -> String {
    let pid = f.pid();
    let s = f.secs_arg();
    match (reason, f.runtime()) {
        // PostgreSQL's own account of what each backend waits for.
        (WaitReason::Lock | WaitReason::Io | WaitReason::Sleep | WaitReason::Futex, _) if f.meta.target.comm == "postgres" => "psql -c \"SELECT wait_event_type, wait_event, count(*) FROM pg_stat_activity WHERE state = 'active' GROUP BY 1, 2 ORDER BY 3 DESC\"   # a few times: the backends waiting, by what for (Lock: a row's or a table's lock; LWLock; IO)".into(),
        (WaitReason::Lock, Runtime::Jvm) => format!("jcmd {pid} Thread.print | grep -B2 -A6 'waiting to lock'"),
        (WaitReason::Lock, Runtime::Python) if at.contains("take_gil") => format!("py-spy dump --pid {pid}   # threads waiting in take_gil"),
        (WaitReason::Lock, Runtime::Python) => format!("py-spy dump --pid {pid}   # threads waiting in acquire (a threading.Lock), and the function holding it"),
        (WaitReason::Lock | WaitReason::Futex, _) => format!("perf trace -s -p {pid} -- sleep {s}   # futex time per thread"),
        (WaitReason::Io, _) => format!("perf trace -s -p {pid} -- sleep {s}   # fsync/fdatasync/pread time; and: cat /proc/{pid}/io; iostat -x 1"),
        (WaitReason::Sleep, _) => format!("perf trace -e nanosleep,clock_nanosleep -p {pid} -- sleep {s}"),
        (WaitReason::Child, _) => format!("perf stat -e sched:sched_process_fork,sched:sched_process_exec -p {pid} -- sleep {s}   # processes started; and twice, {s} s apart: awk '{{print $16+$17}}' /proc/{pid}/stat (their CPU, in clock ticks, once waited for)"),
        (WaitReason::Write, _) => format!("perf trace -e write,writev,sendto,sendmsg -p {pid} -- sleep {s}   # long writes; ls -l /proc/{pid}/fd (which pipe or socket); ss -tmp"),
        _ => format!("perf trace -s -p {pid} -- sleep {s}"),
    }
}

/// Whether a wait at `at` (a site's label) is a synchronized block's: the monitor's own
/// frames or the JIT's stub for it. HotSpot's internal Mutex and Monitor (the heap's lock
/// an allocation waits on while the collector runs) are the JVM's own locks, not the
/// program's monitors.
fn is_monitor(at: &str) -> bool {
    [
        "ObjectMonitor",
        "ObjectSynchronizer",
        "monitor_locking",
        "monitorenter",
    ]
    .iter()
    .any(|m| at.contains(m))
}

/// A JVM thread parked (`Unsafe.park`): a `java.util.concurrent` lock's waiter, or a
/// condition's.
fn is_parked(at: &str) -> bool {
    at.contains("Unsafe_Park") || at.contains("Unsafe.park")
}

/// The monitor the JVM's thread dumps found the most threads BLOCKED on, by its class and
/// the Java method waiting to enter it: what names it where the profile cannot (the JIT
/// inlined the synchronized method into the compiled one the profile shows).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Contended {
    /// The method waiting (`Ledger.post`).
    pub method: String,
    /// The monitor's class (`Ledger`).
    pub class: String,
    /// The method that held it, the most often seen.
    pub holder: Option<String>,
    /// Threads BLOCKED on it, summed over the dumps (N).
    pub blocked: u32,
    /// The threads of their groups (pools) dumped, summed over the dumps (M).
    pub of: u32,
    /// Their group, the most common (`pool-N-thread-N`).
    pub group: String,
    /// The dumps in which a thread was BLOCKED on it (K).
    pub in_dumps: usize,
    /// The dumps.
    pub dumps: usize,
    /// A `java.util.concurrent` lock its waiters park on, not a monitor.
    pub parked: bool,
}

impl Contended {
    /// Whether the dumps saw it often enough to name the lock on their own: in two dumps
    /// or more and half of them, with a named share of its group's threads waiting.
    fn seen_often(&self) -> bool {
        let share = self.blocked as f64 / self.of.max(1) as f64;
        self.in_dumps >= 2 && 2 * self.in_dumps >= self.dumps && share >= NAMED
    }

    /// What its waiters did, as the dumps show it.
    fn waited(&self, held: &str) -> String {
        if self.parked {
            format!(
                "waited for a {} in {} (parked, as the JVM's thread dumps name it{held})",
                self.class, self.method
            )
        } else {
            format!(
                "waited to enter the monitor of a {} in {} (synchronized, as the JVM's thread dumps name it{held})",
                self.class, self.method
            )
        }
    }
}

/// What a monitor's holder did while it held it, when it was blocked most of the window
/// in a wait of its own under the holding method (a write into a full pipe, the disk, a
/// sleep): that wait is why the monitor is held so long — said after the monitor (which
/// stays the cause: whether the wait would go faster without it, a disk's reads in
/// parallel or a pipe's one reader, is not for the profile to say). Empty otherwise.
fn holder_said(f: &Facts, m: &Contended) -> String {
    let (Some(h), Some(p)) = (m.holder.as_deref(), f.offcpu()) else {
        return String::new();
    };
    let (Some(ns), Some(waits)) = (p.event.ns_per_weight(), f.waits()) else {
        return String::new();
    };
    let scale = blocked_scale(f, waits.total as f64 * ns / 1e9);
    // Under the method, or any method of its class: the JIT inlines the holding method
    // into its callers, and the blocks of the waiters are the lock's, left out there.
    let called = format!("{h}(");
    // (`java.io.PrintStream.` at a frame's start, or after the JIT's return type.)
    let class = h
        .rsplit_once('.')
        .map(|(c, _)| (format!("{c}."), format!(" {c}.")));
    let holding = |n: &str| {
        n == h
            || n.contains(&called)
            || class
                .as_ref()
                .is_some_and(|(c, typed)| n.starts_with(c.as_str()) || n.contains(typed.as_str()))
    };
    said_of_holder(f, h, holder_blocked(f, p, &holding, true, ns * scale))
}

/// The holder's wait as the claim's last clause (see [`holder_said`]).
fn said_of_holder(f: &Facts, h: &str, held: Option<(WaitReason, f64)>) -> String {
    match held {
        Some((r, held_s)) => {
            let (_, said) = waited_for(r, f, None);
            format!(
                "; its holder {said} under {h} {} of the time (one thread at a time holds it: the wait it holds it through is the limit)",
                pct(held_s.min(1.0))
            )
        }
        None => String::new(),
    }
}

/// What the holder of a program's own lock (a pthread mutex, a semaphore: compiled code's)
/// did while it held it, when it was blocked most of the window in a wait of its own
/// under the function that takes the lock (the lock site's frame, `lookup_block`): a disk
/// read, a sleep, a write into a full pipe, made one thread at a time (at most the
/// window's seconds, which waits made apart from the lock by many threads at once
/// exceed). Empty otherwise, and for a runtime whose lock is its own (the GIL, Go's
/// runtime, the BEAM's) or whose holder the JVM's dumps name.
fn lock_holder_said(f: &Facts, top: &Site) -> String {
    if f.runtime() != Runtime::Native || top.reason != WaitReason::Lock {
        return String::new();
    }
    let (Some(p), Some(waits)) = (f.offcpu(), f.waits()) else {
        return String::new();
    };
    let Some(ns) = p.event.ns_per_weight() else {
        return String::new();
    };
    let scale = blocked_scale(f, waits.total as f64 * ns / 1e9);
    let held =
        holder_blocked(f, p, &|n: &str| n == top.at, false, ns * scale).filter(|(_, s)| *s <= 1.1);
    said_of_holder(f, &top.at, held)
}

/// The wait the holder of a lock made under its holding frames (`holding`: a monitor's
/// method as the thread dumps name it, `java.io.PrintStream.writeln`, whose frames carry
/// the JIT's types, `void java.io.PrintStream.writeln(java.lang.String)`; a C mutex's
/// locking function): the off-CPU profile's blocks under such a frame for a reason other
/// than a lock, a poll or idling, the heaviest reason, and its seconds per second (`ns`
/// per unit of weight, scaled) — when it is half the window or more: the holder blocked
/// in it most of the time. `inlined`: the holding frames may be missing (a JIT's), and
/// the waiters' own waits stand for them.
fn holder_blocked(
    f: &Facts,
    p: &kiln_model::Profile,
    holding: &dyn Fn(&str) -> bool,
    inlined: bool,
    ns: f64,
) -> Option<(WaitReason, f64)> {
    let reasons = kiln_model::waits::stack_reasons(p);
    let under = crate::profile::with_stack(p, |path| {
        path.iter()
            .any(|&fr| holding(&String::from_utf8_lossy(p.frame_name(fr))))
    });
    // The threads that waited for the monitor (its holders in turn).
    let waiters: std::collections::HashSet<kiln_model::ThreadId> = p
        .samples
        .stack
        .iter()
        .zip(&p.samples.thread)
        .filter(|(st, _)| reasons.get(st.0 as usize) == Some(&WaitReason::Lock))
        .map(|(_, t)| *t)
        .collect();
    let own = |r: WaitReason| {
        !matches!(
            r,
            WaitReason::Lock
                | WaitReason::Poll
                | WaitReason::Idle
                | WaitReason::Futex
                | WaitReason::Other
        )
    };
    let sum = |keep: &dyn Fn(usize) -> bool| {
        let mut by: Vec<(WaitReason, u128)> = Vec::new();
        for (i, (&st, &w)) in p.samples.stack.iter().zip(&p.samples.weight).enumerate() {
            let r = reasons
                .get(st.0 as usize)
                .copied()
                .unwrap_or(WaitReason::Other);
            if !keep(i) || !own(r) {
                continue;
            }
            match by.iter_mut().find(|(x, _)| *x == r) {
                Some((_, t)) => *t += w as u128,
                None => by.push((r, w as u128)),
            }
        }
        by.into_iter()
            .max_by_key(|(_, w)| *w)
            .map(|(r, w)| (r, w as f64 * ns / 1e9 / f.secs.max(1e-9)))
    };
    // Under its methods by name; and the waiters' own waits of one kind when they add up
    // to one thread in it at a time — what a wait made under the monitor comes to, not
    // more (a wait each makes apart from it) — for the stacks the JIT inlined the holding
    // method out of: the larger of the two of the same kind.
    let by_name = sum(&|i| under[i]).filter(|(_, s)| *s >= 0.5);
    let by_waiters = inlined
        .then(|| sum(&|i| waiters.contains(&p.samples.thread[i])))
        .flatten()
        .filter(|(_, s)| (0.5..=1.1).contains(s));
    match (by_name, by_waiters) {
        (Some(a), Some(b)) if a.0 == b.0 && b.1 > a.1 => Some(b),
        (Some(a), _) => Some(a),
        (None, b) => b,
    }
}

/// Whether a JVM thread group (its name, digits as `N`: `process reaper (pid N)`) is one
/// of the JDK's own service threads, which no request runs on.
fn is_jdk_service_thread(group: &str) -> bool {
    [
        "process reaper",
        "Attach Listener",
        "Signal Dispatcher",
        "Finalizer",
        "Reference Handler",
        "Common-Cleaner",
        "Notification Thread",
        "Service Thread",
        "Monitor Deflation Thread",
    ]
    .iter()
    .any(|s| group.starts_with(s))
}

/// The most waited-on monitor of dumps `d`; `None` when no thread of any dump was BLOCKED
/// on a monitor (the JDK's service threads left out).
pub(crate) fn contended(d: &JvmDumps) -> Option<Contended> {
    fn most<'a>(it: impl Iterator<Item = &'a str>) -> Option<&'a str> {
        let mut n: Vec<(&str, u32)> = Vec::new();
        for x in it {
            match n.iter_mut().find(|(y, _)| *y == x) {
                Some((_, c)) => *c += 1,
                None => n.push((x, 1)),
            }
        }
        // The first seen wins a tie.
        n.iter()
            .fold(None, |best: Option<(&str, u32)>, &(x, c)| match best {
                Some((_, b)) if b >= c => best,
                _ => Some((x, c)),
            })
            .map(|(x, _)| x)
    }
    // The JDK's own service threads (the process reaper, the finalizer, the attach
    // listener…) serve no request: their waits are not the requests'.
    let keys = d
        .dumps
        .iter()
        .flat_map(|x| &x.blocked)
        .filter(|b| !is_jdk_service_thread(&b.group))
        .map(|b| (b.class.as_str(), b.method.as_str()));
    let mut counts: Vec<((&str, &str), u32)> = Vec::new();
    for k in keys {
        match counts.iter_mut().find(|(y, _)| *y == k) {
            Some((_, c)) => *c += 1,
            None => counts.push((k, 1)),
        }
    }
    let &((class, method), blocked) =
        counts
            .iter()
            .fold(None, |best: Option<&((&str, &str), u32)>, e| match best {
                Some(b) if b.1 >= e.1 => best,
                _ => Some(e),
            })?;
    let on = |b: &&MonitorWait| {
        b.class == class && b.method == method && !is_jdk_service_thread(&b.group)
    };
    let waits: Vec<&MonitorWait> = d.dumps.iter().flat_map(|x| &x.blocked).filter(on).collect();
    let parked = waits.iter().any(|w| w.parked);
    let groups: Vec<&str> = waits.iter().map(|w| w.group.as_str()).collect();
    let of = d
        .dumps
        .iter()
        .flat_map(|x| &x.groups)
        .filter(|(g, _)| groups.contains(&g.as_str()))
        .map(|(_, n)| n)
        .sum();
    Some(Contended {
        method: method.to_string(),
        class: class.to_string(),
        holder: most(waits.iter().filter_map(|w| w.holder_method.as_deref())).map(String::from),
        blocked,
        of,
        group: most(groups.iter().copied()).unwrap_or_default().to_string(),
        in_dumps: d
            .dumps
            .iter()
            .filter(|x| x.blocked.iter().any(|b| on(&b)))
            .count(),
        dumps: d.dumps.len(),
        parked,
    })
}

/// The places of `sites` as a claim lists them, with their weights, heaviest first:
/// sites said alike (an SQLite busy handler's sleeps and its lock's waits, under the same
/// function) are one place.
fn places_said(sites: &[&Site]) -> Vec<(String, u128)> {
    let mut out: Vec<(String, u128)> = Vec::new();
    for s in sites {
        let l = s.label();
        match out.iter_mut().find(|o| o.0 == l) {
            Some(o) => o.1 += s.weight,
            None => out.push((l, s.weight)),
        }
    }
    out.sort_by_key(|b| std::cmp::Reverse(b.1));
    out
}

/// What a wait of `reason` is, as the claim says it.
pub(super) fn waited_for(reason: WaitReason, f: &Facts, site: Option<&Site>) -> (Class, String) {
    let at = site.map(|s| s.label()).unwrap_or_default();
    let gil = ["take_gil", "PyEval_RestoreThread", "PyEval_AcquireThread"]
        .iter()
        .any(|g| at.contains(g));
    let monitor = is_monitor(&at);
    let vm_lock =
        f.runtime() == Runtime::Jvm && ["Mutex::", "Monitor::"].iter().any(|m| at.starts_with(m));
    // A JVM's threads held at a safepoint: every thread stopped while the JVM collects
    // garbage (or runs another operation that needs them all stopped). Its own counters
    // say whether its collectors ran meanwhile.
    let safepoint = f.runtime() == Runtime::Jvm
        && [
            "WaitBarrier::wait",
            "SafepointSynchronize::block",
            "SafepointMechanism::",
        ]
        .iter()
        .any(|m| at.contains(m));
    if safepoint && matches!(reason, WaitReason::Lock | WaitReason::Futex) {
        use kiln_store::columns as col;
        return match f.mean(col::TARGET, col::JVM_GC) {
            Some(gc) if gc > 0.0 => (
                Class::GarbageCollection,
                format!("were stopped at the JVM's safepoints while it collected garbage (its collectors ran {} of the time, by its own counters)", pct(gc / 100.0)),
            ),
            _ => (
                Class::BlockedOther,
                "were stopped at the JVM's safepoints (every thread held while the JVM collects garbage or runs another operation that needs them all stopped: -Xlog:safepoint names them)".into(),
            ),
        };
    }
    match reason {
        WaitReason::Lock if gil => (Class::LockContention, "waited for Python's GIL".into()),
        // Compiled code locks through the JIT's stub: the method named is the compiled
        // one, and the method whose synchronized block it is may be inlined into it.
        WaitReason::Lock if monitor && at.contains("_Java") => (
            Class::LockContention,
            "waited to enter a Java monitor (synchronized, in the compiled method named or one the JIT inlined into it: a thread dump names the method and the monitor's class)".into(),
        ),
        WaitReason::Lock if monitor => (
            Class::LockContention,
            "waited to enter a Java monitor (synchronized)".into(),
        ),
        WaitReason::Lock if vm_lock => (
            Class::LockContention,
            "waited on the JVM's own locks (HotSpot's, not the program's)".into(),
        ),
        WaitReason::Lock if at.to_ascii_lowercase().contains("sqlite") => (
            Class::LockContention,
            "waited for an SQLite database's lock (SQLite's busy handler sleeps and tries again while another connection holds it: a write transaction, BEGIN IMMEDIATE, a commit)".into(),
        ),
        WaitReason::Lock => (Class::LockContention, "waited on a lock".into()),
        WaitReason::Io => (Class::DiskIo, "waited for the disk".into()),
        WaitReason::Sleep => (Class::SleepInPath, "slept".into()),
        WaitReason::Futex => (
            Class::LockContention,
            "waited on a condition in the request's path (a semaphore, a pool's free resource, another thread's answer, a synchronous wait)".into(),
        ),
        WaitReason::Other => (
            Class::BlockedOther,
            "were blocked in a wait kiln has no name for (the off-CPU flame graph shows the kernel's frames under it)".into(),
        ),
        WaitReason::Child => (
            Class::ChildProcesses,
            "waited for programs the server ran for them to start or end (child processes)".into(),
        ),
        WaitReason::Write => (
            Class::NetworkWait,
            "waited to write into a full pipe or socket (the reader at its other end — a log collector, a slow client, a downstream service — takes less than they write)".into(),
        ),
        _ => (Class::NetworkWait, "waited".into()),
    }
}

/// The server's cgroup at its memory limit, its file cache too small for what it reads:
/// the kernel evicted the pages it read and read them from the disk again
/// (`workingset_refault_file`). Its consequences are found by other rules — the disk
/// waits, the CPU spent reading pages into the cache and reclaiming others — and
/// [`memory_limit`] ranks it by them.
pub(crate) struct MemoryLimit {
    /// The limit and the memory used, MiB.
    pub limit_mib: f64,
    pub used_mib: f64,
    /// File pages read again after eviction, a second.
    pub refaults: f64,
}

/// The cgroup's memory limit, when it held the file cache small.
///
/// None when: the cgroup has no limit; it used under 90% of it; fewer than 50 file pages
/// a second were read again after eviction.
pub(crate) fn memory_limited(f: &Facts) -> Option<MemoryLimit> {
    use kiln_store::columns as col;
    let limit_mib = f.mean(col::TARGET, col::MEMORY_LIMIT)?;
    let used_mib = f.mean(col::TARGET, col::MEMORY_USED)?;
    let refaults = f.mean(col::TARGET, col::REFAULTS)?;
    (limit_mib > 0.0 && used_mib >= 0.9 * limit_mib && refaults >= 50.0).then_some(MemoryLimit {
        limit_mib,
        used_mib,
        refaults,
    })
}

/// Kernel functions that fill the page cache from the disk or make room in it under a
/// cgroup's limit: the CPU an evicted file costs to read again.
const CACHE_REFILL: &[&str] = &[
    "page_cache_ra_unbounded",
    "page_cache_ra_order",
    "page_cache_sync_ra",
    "page_cache_async_ra",
    "try_to_free_mem_cgroup_pages",
    "mem_cgroup_handle_over_high",
];

/// The share of the server's CPU (its CPU profile) in [`CACHE_REFILL`]'s functions.
fn cache_refill_share(f: &Facts) -> Option<f64> {
    let p = f.cpu_profile()?;
    let (mut in_refill, mut all) = (0u64, 0u64);
    let mut path = Vec::new();
    let stack_hits: Vec<bool> = p
        .stacks
        .ids()
        .map(|id| {
            path.clear();
            p.stacks.path_into(id, &mut path);
            path.iter().any(|&fr| {
                CACHE_REFILL
                    .iter()
                    .any(|c| p.frame_name(fr) == c.as_bytes())
            })
        })
        .collect();
    for (st, w) in p.samples.stack.iter().zip(&p.samples.weight) {
        all += w;
        if stack_hits.get(st.0 as usize).copied().unwrap_or(false) {
            in_refill += w;
        }
    }
    (all > 0).then(|| in_refill as f64 / all as f64)
}

/// The memory limit as a finding of its own, ranked by what it caused among `found` (the
/// other rules' findings): above the disk waits it explains, and above a CPU finding when
/// a third of the server's CPU or more went to reading evicted pages back. The disk
/// finding says whose its waits are.
pub(crate) fn memory_limit(f: &Facts, found: &mut [Finding]) -> Option<Finding> {
    let m = memory_limited(f)?;
    let refill = cache_refill_share(f).unwrap_or(0.0);
    let target = f.cpus.target.unwrap_or(0.0);
    let disk = found.iter().find(|x| x.class == Class::DiskIo);
    let disk_share = disk.and_then(|d| d.explains.as_ref().map(|e| (e.pct, e.of.clone())));
    let disk_score = disk.map_or(0.0, |d| d.score);
    let cpu_score = found
        .iter()
        .filter(|x| matches!(x.class, Class::CpuBound | Class::OneThreadSaturated))
        .map(|x| x.score)
        .fold(0.0, f64::max);
    let mut score = disk_score;
    if refill >= 1.0 / 3.0 {
        score = score.max(cpu_score);
    }
    if score <= 0.0 {
        return None;
    }
    let mut claim = format!(
        "its cgroup's memory limit ({:.0} MiB, {} used) is too small to cache what it reads: the kernel read {:.0} evicted file pages a second ({:.1} MB/s) back from the disk (workingset_refault_file)",
        m.limit_mib,
        pct(m.used_mib / m.limit_mib),
        m.refaults,
        m.refaults * 4096.0 / 1e6
    );
    if refill >= 0.05 {
        claim.push_str(&format!(
            "; {} of the server's CPU ({}) went to reading them into the cache and evicting others (page_cache_ra_*, try_to_free_mem_cgroup_pages)",
            pct(refill),
            cpus(refill * target)
        ));
    }
    if let Some((p, of)) = &disk_share {
        claim.push_str(&format!("; waiting for those reads took {p:.0}% {of}"));
    }
    claim.push_str(": raise the limit (memory.max; v1 memory.limit_in_bytes) above what it reads, or read less");
    let mut finding = Finding::new("memory-limit", Class::MemoryLimit, (score + 0.005).min(1.0), claim)
        .evidence(f.ev(
            "its cgroup's memory",
            format!(
                "{:.0} MiB used of a {:.0} MiB limit; {:.0} file pages a second read again after eviction",
                m.used_mib, m.limit_mib, m.refaults
            ),
            "the cgroup's memory.stat (workingset_refault_file) and memory.max (v1: memory.usage_in_bytes, hierarchical_memory_limit)",
        ))
        .check(format!(
            "cat /proc/{}/cgroup, then that group's memory.stat twice, seconds apart: workingset_refault_file grows while memory.current stays at memory.max",
            f.pid()
        ));
    finding = match &disk_share {
        Some((p, of)) if refill < 1.0 / 3.0 => finding.explains(*p, of.clone()),
        _ => finding.explains(refill * 100.0, "of the server's CPU"),
    };
    for x in found.iter_mut().filter(|x| x.class == Class::DiskIo) {
        x.claim
            .push_str("; the pages read were evicted by its cgroup's memory limit (its finding)");
    }
    Some(finding)
}

/// Threads blocked in the work's path, by why (an off-CPU profile): a lock, the disk, a
/// sleep — each a finding when it is a fair share of the operations' time, named at the
/// program's frame above the wait.
///
/// False when: the run recorded no off-CPU profile; the wait is a runtime idling or
/// waiting for work (never named); it is a small share of the outcome.
pub fn blocked(f: &Facts) -> Vec<Finding> {
    let Some(p) = f.offcpu() else {
        return Vec::new();
    };
    let Some(ns) = p.event.ns_per_weight() else {
        return Vec::new();
    };
    let Some((outcome_s, of)) = outcome_time(f) else {
        return Vec::new();
    };
    let Some(waits) = f.waits() else {
        return Vec::new();
    };
    let scale = blocked_scale(f, waits.total as f64 * ns / 1e9);
    let mut out = Vec::new();
    for reason in [
        WaitReason::Lock,
        WaitReason::Io,
        WaitReason::Sleep,
        WaitReason::Write,
        WaitReason::Futex,
        WaitReason::Child,
        WaitReason::Other,
    ] {
        // A condition, a sleep, or a wait of no kind kiln names, counts only in a request's
        // path (a worker waiting for work waits on a condition too; a periodic refresher
        // sleeps between its rounds).
        let sites: Vec<&Site> = waits
            .sites_of(reason)
            .filter(|s| {
                !matches!(
                    reason,
                    WaitReason::Futex | WaitReason::Other | WaitReason::Sleep
                ) || s.in_request_path
            })
            .collect();
        let w: u128 = sites.iter().map(|s| s.weight).sum();
        let t = w as f64 * ns / 1e9 * scale;
        let sync = (reason == WaitReason::Io)
            .then(|| sync_call_time(f, &sites, w as f64 * ns / 1e9 - t))
            .flatten();
        let share = (t + sync.as_ref().map_or(0.0, SyncTime::beyond_blocks)) / outcome_s.max(1e-9);
        let Some(&top) = sites.first() else {
            continue;
        };
        // (The BEAM's locks are the VM's own, under no code of the program's; a Go
        // thread's block is no goroutine's.)
        let stalled = (f.runtime() != Runtime::Beam
            && (reason == WaitReason::Lock || f.runtime() != Runtime::Go))
            .then(|| stalls(f, p, top))
            .flatten();
        // A wait that is a small share of all the time is said when it is the slowest
        // operations.
        let tail = stalled.as_ref().and_then(|s| s.tail(f));
        if share < NAMED && tail.is_none() {
            continue;
        }
        let (mut class, mut what) = waited_for(reason, f, Some(top));
        // A condition the requests wait on that another thread's wait ends: that wait is
        // where their time goes (the chain's end names the cause).
        let chain = (reason == WaitReason::Futex)
            .then(|| answered_by(f, p, &waits, &sites, ns * scale))
            .flatten();
        if let Some(c) = &chain {
            class = match c.site.reason {
                WaitReason::Sleep => Class::SleepInPath,
                WaitReason::Io => Class::DiskIo,
                WaitReason::Write => Class::NetworkWait,
                WaitReason::Child => Class::ChildProcesses,
                _ => Class::LockContention,
            };
            what = "waited for another thread's answer (a condition variable)".into();
        }
        // A JVM's thread dumps name the monitor's method and class; when none of them saw
        // a thread BLOCKED on a monitor, the profile's claim stands unnamed.
        // (Where the profile's site is no monitor's — the JIT inlined the synchronized
        // method and its entry into compiled code the profile names otherwise, or the
        // interpreter's frames hide it — a monitor the dumps saw often names it still.)
        let monitor_site = is_monitor(&top.label()) || is_parked(&top.label());
        let dumps = (reason == WaitReason::Lock && f.runtime() == Runtime::Jvm)
            .then(|| f.jvm_dumps())
            .flatten()
            .filter(|d| !d.dumps.is_empty());
        let named = dumps
            .as_ref()
            .and_then(contended)
            .filter(|m| monitor_site || m.seen_often());
        let mut holder_wait = String::new();
        if let Some(m) = &named {
            let held = m
                .holder
                .as_ref()
                .map(|h| format!(", held in {h}"))
                .unwrap_or_default();
            what = m.waited(&held);
            holder_wait = holder_said(f, m);
        } else if chain.is_none() && stalled.is_none() {
            holder_wait = lock_holder_said(f, top);
        }
        let who = if f.outcome.latency.is_some() {
            format!("{}s", f.outcome.unit)
        } else {
            "the server's threads".into()
        };
        let places: Vec<String> = places_said(&sites)
            .into_iter()
            .take(3)
            .map(|(l, x)| format!("{l} ({})", pct(x as f64 / w.max(1) as f64)))
            .collect();
        // (A monitor the thread dumps named is said as they say it.)
        let stalled = stalled.filter(|_| named.is_none());
        let children = match (reason, &stalled, &chain) {
            (_, _, Some(c)) => c.said(),
            (WaitReason::Child, _, _) => children_said(f, p),
            (_, Some(s), _) => s.said(f),
            _ => String::new(),
        };
        let claim = match &sync {
            Some(st) => format!(
                "{who} {what} {} of their time, in {}: {}{children}{holder_wait}",
                pct(share.min(1.0)),
                places.join(", "),
                st.parts(t)
            ),
            None => format!(
                "{who} {what} {} of their time ({} blocked in all), in {}{children}{holder_wait}",
                pct(share.min(1.0)),
                secs(t),
                places.join(", ")
            ),
        };
        let mut e = f.ev(
            format!("blocked: {}", reason.name()),
            format!("{} of the threads' time, at {}", secs(t), places.join(", ")),
            format!(
                "off-CPU profile ({}, the program's frame above each wait)",
                p.event.name
            ),
        );
        e.profile = Some(p.event.name.clone());
        e.focus = Some(top.at.clone());
        // A wait of no kind kiln names ranks under every cause it can name that explains
        // as much.
        let weight = if reason == WaitReason::Other {
            0.6
        } else {
            0.95
        };
        // Stalls that are the slowest operations rank by the share of those operations'
        // latency they explain (all of it beyond the median), whatever their share of
        // every operation's time: the tail is the problem they are.
        let score = share.min(1.0) * weight;
        let score = match stalled.as_ref().and_then(|s| s.tail(f)) {
            Some(t) => score.max(t * weight),
            None => score,
        };
        let mut finding = Finding::new("blocked", class, score, claim).evidence(e);
        if let Some(c) = &chain {
            finding = finding.evidence(c.evidence(f, p));
        }
        if let Some(d) = &dumps {
            finding = finding.evidence(dumps_evidence(f, d, named.as_ref()));
        }
        let (explained, of) = match tail {
            Some(t) if share < NAMED => (t, format!("of the slowest {}'s latency", f.outcome.unit)),
            _ => (share, of.clone()),
        };
        out.push(
            finding
                .explains(explained * 100.0, of)
                .check(check_of(f, reason, &top.label())),
        );
    }
    out
}

/// The operations' time in no thread's work of a server with nothing outside it to wait
/// on ([`nothing_outside`]): by elimination they waited inside it, read and not yet
/// answered, for its threads — said with its most occupied pool and the wait that
/// occupies it (the disk, a lock, a sleep), whose class it takes: the work they queue
/// behind.
///
/// False when: the most occupied pool's threads were occupied less than half the time, or
/// blocked in their work less than a fifth of it (on a CPU or waiting for one: the CPU
/// rules speak).
fn inside(f: &Facts, share: f64, per_op: Option<f64>, mean_us: f64) -> Vec<Finding> {
    let Some(super::queues::Occupied {
        group: g,
        share: occupied,
        threads,
        heaviest: Some((reason, t)),
    }) = super::queues::most_occupied(f)
    else {
        return Vec::new();
    };
    // (A disk call's file-system work runs on the thread's CPU inside it: the wait need
    // not outweigh the CPU, only be a fair part of the threads' time.)
    if t < 0.2 * threads || occupied < 0.5 {
        return Vec::new();
    }
    let site = f
        .waits()
        .and_then(|w| w.sites_of(reason).next().map(|s| s.label()));
    let (class, what) = waited_for(reason, f, None);
    let started = g
        .entry
        .as_ref()
        .map(|e| super::queues::entry_said(f, e).0)
        .unwrap_or_default();
    let unit = &f.outcome.unit;
    let claim = format!(
        "each {unit} took {} on average, but the server's threads spent {} on it (on a CPU, runnable or blocked in its work): {} of the time no thread worked on it, and the server had nothing outside it to wait for (no socket but its clients' connections, its listeners and socket pairs of its own, over loopback, to kiln's own client) — the {unit}s waited inside it for its threads, read and not yet answered; its most occupied threads, {threads:.0} '{}'{started}, were occupied {} of the time, {} of it blocked: {what}{}",
        secs(mean_us / 1e6),
        per_op.map_or("little".to_string(), secs),
        pct(1.0 - share),
        g.name,
        pct(occupied),
        pct((t / threads.max(1e-9)).min(1.0)),
        site.map(|s| format!(" in {s}")).unwrap_or_default()
    );
    vec![Finding::new("inside", class, (1.0 - share) * 0.85, claim)
        .evidence(f.ev(
            format!("'{}' threads occupied", g.name),
            format!(
                "{} of {threads:.0} threads' time (blocked in the work {:.2} threads)",
                pct(occupied),
                t
            ),
            "/proc/PID/task/*/schedstat and the off-CPU and CPU profiles (each thread's)",
        ))
        .evidence(sockets_evidence(f))
        .explains(
            (1.0 - share) * 100.0,
            format!("of the {unit}s' time: waiting inside the server for its threads"),
        )
        .check(format!(
            "top -H -p {} (its threads busy or blocked); ss -tnp (no connection but its clients')",
            f.pid()
        ))]
}

/// The operations' time in no thread's work of a server with nothing outside it to wait
/// on, and none of its threads occupied either (no pool busy or blocked in the work): by
/// elimination the program held them itself, with no thread on them — a timer or a
/// callback it scheduled (`setTimeout`, `asyncio.sleep`, a delayed retry, a batch
/// flushed on a tick), the waits an event loop keeps in its own timer queue.
///
/// False when: a pool was occupied half its time or more ([`inside`] or the CPU rules
/// speak), or something outside it was there to wait on (the network rule speaks); its
/// event loop waited for a CPU a fifth of the time or more (starvation speaks).
fn held(f: &Facts, share: f64, per_op: Option<f64>, mean_us: f64) -> Vec<Finding> {
    let unit = &f.outcome.unit;
    // Where its threads waited meanwhile: an event loop's poll, whose timeout is its
    // nearest timer.
    let poll = f.waits().and_then(|w| {
        let net: Vec<&Site> = w.sites_of(WaitReason::Poll).collect();
        let all: u128 = net.iter().map(|s| s.weight).sum();
        net.first()
            .filter(|_| all > 0)
            .map(|s| format!("; its threads waited in {} between their turns", s.label()))
    });
    let claim = format!(
        "each {unit} took {} on average, but the server's threads spent {} on it (on a CPU, runnable or blocked in its work): {} of the time no thread worked on it or was occupied, and the server had nothing outside it to wait for (no socket but its clients' connections, its listeners and socket pairs of its own, over loopback, to kiln's own client) — the program held the {unit}s itself, on a timer or a callback it scheduled (a rate limit that delays rather than refuses; a sleep in an async handler: setTimeout, asyncio.sleep; a delayed retry; a batch flushed on a tick){}",
        secs(mean_us / 1e6),
        per_op.map_or("little".to_string(), secs),
        pct(1.0 - share),
        poll.unwrap_or_default()
    );
    let most = super::queues::most_occupied(f);
    if most.as_ref().is_some_and(|o| o.share >= 0.5) {
        return Vec::new();
    }
    // An event loop waiting for a CPU holds every operation in flight with it, on no
    // thread's account: the CPUs' wait (starvation's), not a timer of the program's.
    if super::queues::starved_loop(f).is_some() {
        return Vec::new();
    }
    let occupied = most.map(|o| {
        format!(
            "'{}' {} of {:.0} threads' time",
            o.group.name,
            pct(o.share),
            o.threads
        )
    });
    let mut x = Finding::new("held", Class::SleepInPath, (1.0 - share) * 0.85, claim);
    if let Some(o) = occupied {
        x = x.evidence(f.ev(
            "the most occupied threads",
            o,
            "/proc/PID/task/*/schedstat and the off-CPU profile (each thread's)",
        ));
    }
    vec![x
        .evidence(sockets_evidence(f))
        .explains(
            (1.0 - share) * 100.0,
            format!("of the {unit}s' time: held inside the server, no thread on them"),
        )
        .check(format!(
            "strace -f -T -e trace=epoll_wait,epoll_pwait -p {} (its event loop's polls returning 0 after their timeout: a timer woke it, not a client)",
            f.pid()
        ))]
}

/// Whether the server had nothing outside it to wait on but kiln's own client over the
/// loopback: it held no socket beyond the load's connections and one or two more (the
/// sampler's count, which leaves out its listeners and the socket pairs between its own
/// threads or processes: a service's connection, TCP or Unix, or a UDP socket would be
/// one more), none as a client (its peers), and the load is kiln's own to 127.0.0.1 or
/// localhost. Its operations' time in no thread's work is then spent inside it, read and
/// not yet answered (a callback waiting for the event loop, a call for a pool thread).
fn nothing_outside(f: &Facts) -> bool {
    let load = &f.meta.load;
    let Some(conns) = load.concurrency.filter(|c| *c >= 1.0) else {
        return false;
    };
    let loopback = load
        .argv
        .iter()
        .any(|a| a.contains("://127.") || a.contains("://localhost") || a.contains("://[::1]"));
    let own = matches!(load.protocol.as_str(), "http" | "amqp" | "mqtt");
    let sockets = f.mean(kiln_store::columns::TARGET, kiln_store::columns::SOCKETS);
    own && loopback && f.meta.target.peers.is_empty() && sockets.is_some_and(|s| s <= conns + 2.5)
}

/// The target's sockets beside the load's connections: what [`nothing_outside`] rests on.
fn sockets_evidence(f: &Facts) -> crate::Evidence {
    f.ev(
        "sockets",
        format!(
            "{:.1} on average, the load's {:.0} connections",
            f.mean(kiln_store::columns::TARGET, kiln_store::columns::SOCKETS)
                .unwrap_or(0.0),
            f.meta.load.concurrency.unwrap_or(0.0)
        ),
        "/proc/PID/fd, less its listeners and its own socket pairs (ss -x)",
    )
}

/// `; it was connected as a client to 127.0.0.1:5432 (4 connections, postgres (pid 812)):
/// the service it calls`: the target's connections as a client as the measurement ended
/// (empty when it held none).
fn peers_said(f: &Facts) -> String {
    let peers = &f.meta.target.peers;
    if peers.is_empty() {
        return String::new();
    }
    let each: Vec<String> = peers
        .iter()
        .take(3)
        .map(|p| {
            let who = p
                .process
                .as_ref()
                .map(|x| format!(", {x}"))
                .unwrap_or_default();
            format!(
                "{} ({} connection{}{who})",
                p.address,
                p.connections,
                if p.connections == 1 { "" } else { "s" }
            )
        })
        .collect();
    let more = peers.len().saturating_sub(3);
    format!(
        "; it was connected as a client to {}{}: the service{} it calls",
        each.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        },
        if peers.len() == 1 { "" } else { "s" }
    )
}

/// The requests' waits on a condition in their path (a hand-off to another thread) when
/// they are a third of the operations' time or more and thread `tid` (by its kernel id)
/// had no part in them (under 5% of their time): the heaviest site's label and their
/// share of the operations' time. `None` otherwise.
pub(crate) fn handed_to(f: &Facts, tid: u32) -> Option<(String, f64)> {
    let p = f.offcpu()?;
    let ns = p.event.ns_per_weight()?;
    let (outcome_s, _) = outcome_time(f)?;
    f.outcome.latency.as_ref()?;
    let waits = f.waits()?;
    let sites: Vec<&Site> = waits
        .sites_of(WaitReason::Futex)
        .filter(|s| s.in_request_path)
        .collect();
    let top = sites.first()?;
    let w: u128 = sites.iter().map(|s| s.weight).sum();
    let share = w as f64 * ns / 1e9 / outcome_s.max(1e-9);
    if share < 1.0 / 3.0 {
        return None;
    }
    let (labels, blocks) = crate::waits::program_blocks(p);
    let at: Vec<usize> = sites
        .iter()
        .flat_map(|s| {
            labels
                .iter()
                .enumerate()
                .filter(|(_, l)| s.is_labelled(l))
                .map(|(i, _)| i)
        })
        .collect();
    let (mut mine, mut all) = (0u64, 0u64);
    for b in blocks.iter().filter(|b| at.contains(&b.site)) {
        let d = b.end.saturating_sub(b.start);
        all += d;
        if p.threads
            .get(kiln_model::ThreadId(b.thread))
            .and_then(|t| t.tid)
            == Some(tid)
        {
            mine += d;
        }
    }
    (all > 0 && (mine as f64) < 0.05 * all as f64).then(|| (top.label(), share.min(1.0)))
}

/// The share of the window thread `tid` (a kernel id) waited for Python's GIL, by the
/// off-CPU profile; 0 without one. A Python thread that waits for the GIL waits for the
/// right to run, as a thread in the run queue waits for a CPU.
pub(crate) fn gil_wait_of(f: &Facts, tid: u32) -> f64 {
    let Some(p) = f.offcpu() else {
        return 0.0;
    };
    let (labels, blocks) = crate::waits::program_blocks(p);
    let gil: Vec<bool> = labels
        .iter()
        .map(|l| l.starts_with(crate::waits::GIL))
        .collect();
    let ns: u64 = blocks
        .iter()
        .filter(|b| {
            gil.get(b.site).copied().unwrap_or(false)
                && p.threads
                    .get(kiln_model::ThreadId(b.thread))
                    .and_then(|t| t.tid)
                    == Some(tid)
        })
        .map(|b| b.end.saturating_sub(b.start))
        .sum();
    (ns as f64 / 1e9 / f.secs.max(1e-9)).min(1.0)
}

/// The wait of a thread that serves no connection whose ends the requests' condition
/// waits follow: the thread they wait on, and what it waited for.
struct Answerer {
    site: Site,
    /// Its time there, in threads (1: one thread the whole window).
    threads: f64,
    /// The requests' condition waits that ended within [`ANSWER_NS`] after one of its
    /// waits ended, a share.
    followed: f64,
    /// That share if the ends fell at random.
    chance: f64,
}

/// How soon after the answering thread ran again a request's wait must end to follow it.
const ANSWER_NS: u64 = 1_000_000;

impl Answerer {
    fn doing(&self) -> &'static str {
        match self.site.reason {
            WaitReason::Sleep => "asleep",
            WaitReason::Io => "waiting for the disk",
            WaitReason::Write => "writing into a full pipe or socket",
            WaitReason::Child => "waiting for programs it ran",
            _ => "waiting on a lock",
        }
    }

    fn said(&self) -> String {
        let whose = if self.threads <= 1.05 {
            format!("{} of a thread's time", pct(self.threads.min(1.0)))
        } else {
            format!("{:.1} threads' time", self.threads)
        };
        let on = match self.site.reason {
            WaitReason::Sleep => "its sleep (a timer paces them)",
            WaitReason::Io => "the disk",
            WaitReason::Write => "the reader of its pipe or socket",
            WaitReason::Child => "its programs",
            _ => "a lock",
        };
        format!(
            "; {} of their waits ended as a thread that serves no connection ran again after a wait at {} ({}, {whose}): they wait on that thread, and it on {on}",
            pct(self.followed),
            self.site.label(),
            self.doing()
        )
    }

    fn evidence(&self, f: &Facts, p: &kiln_model::Profile) -> crate::Evidence {
        f.ev(
            "the wait the requests' wait follows",
            format!(
                "{} of the requests' condition waits ended within 1 ms after a wait at {} ended ({} if they fell at random); that thread {} there {}",
                pct(self.followed),
                self.site.label(),
                pct(self.chance.min(1.0)),
                self.doing(),
                secs(self.threads * f.secs)
            ),
            format!("off-CPU profile ({}), each block's start and end", p.event.name),
        )
    }
}

/// The thread the requests' condition waits at `sites` wait on: a site outside the
/// requests' path (a thread that serves no connection) where a thread waited for a
/// reason of its own — a sleep, the disk, a lock, a full pipe, a child — for a third of
/// a thread's time at least, after whose waits most of the requests' waits ended: half of
/// them at least, and twice as many as would by chance. `None` when no such site.
fn answered_by(
    f: &Facts,
    p: &kiln_model::Profile,
    waits: &crate::waits::Waits,
    sites: &[&Site],
    ns_per_weight: f64,
) -> Option<Answerer> {
    let window_ns = (f.secs * 1e9).max(1.0);
    let candidates: Vec<&Site> = waits
        .sites
        .iter()
        .filter(|s| {
            !s.in_request_path
                && matches!(
                    s.reason,
                    WaitReason::Sleep
                        | WaitReason::Io
                        | WaitReason::Lock
                        | WaitReason::Write
                        | WaitReason::Child
                )
                && s.weight as f64 * ns_per_weight / 1e9 / f.secs.max(1e-9) >= 1.0 / 3.0
        })
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let (labels, blocks) = crate::waits::program_blocks(p);
    let index = |s: &Site| -> Vec<usize> {
        labels
            .iter()
            .enumerate()
            .filter(|(_, l)| s.is_labelled(l))
            .map(|(i, _)| i)
            .collect()
    };
    let waited: Vec<usize> = sites.iter().flat_map(|s| index(s)).collect();
    let mut ends: Vec<u64> = blocks
        .iter()
        .filter(|b| waited.contains(&b.site))
        .map(|b| b.end)
        .collect();
    ends.sort_unstable();
    if ends.len() < 20 {
        return None;
    }
    // (The waiting threads are not the answering one.)
    let waiters: std::collections::HashSet<u32> = blocks
        .iter()
        .filter(|b| waited.contains(&b.site))
        .map(|b| b.thread)
        .collect();
    candidates
        .into_iter()
        .filter_map(|c| {
            let at = index(c);
            let mut theirs: Vec<(u64, u32)> = blocks
                .iter()
                .filter(|b| at.contains(&b.site))
                .map(|b| (b.end, b.thread))
                .collect();
            theirs.sort_unstable();
            if theirs.iter().any(|(_, t)| waiters.contains(t)) {
                return None;
            }
            let answers: Vec<u64> = theirs.iter().map(|x| x.0).collect();
            let followed = ends
                .iter()
                .filter(|&&e| {
                    let i = answers.partition_point(|&a| a <= e);
                    i > 0 && e - answers[i - 1] <= ANSWER_NS
                })
                .count() as f64
                / ends.len() as f64;
            let chance = answers.len() as f64 * ANSWER_NS as f64 / window_ns;
            (followed >= 0.5 && followed >= 2.0 * chance).then(|| Answerer {
                site: c.clone(),
                threads: c.weight as f64 * ns_per_weight / 1e9 / f.secs.max(1e-9),
                followed,
                chance,
            })
        })
        .max_by(|a, b| a.followed.total_cmp(&b.followed))
}

/// Waits at one site that came in stalls: most of its time in blocks far longer than an
/// operation's median (5×, 1 ms at least), coming again and again (3 times at least).
/// At a lock, blocks that overlap are one stall (threads waiting at once: the lock held
/// that long at times, not taken too often), and its holder is the thread whose own block
/// spanned most of each stall and ended in its last quarter (blocked with the lock held:
/// a sleep, a disk write; then it waited for a CPU to let go), else the code another
/// thread ran through a third of each stall at least, when one did in most stalls.
/// Elsewhere (the disk, a sleep, a call of no kind kiln names) the long waits must be the
/// serving threads' — those that also wait for their connections — to be said: a thread
/// of the program's own that flushes now and then delays no operation by its waits.
struct Stalls {
    lock: bool,
    count: usize,
    longest_ns: u64,
    apart_ns: u64,
    most_waiting: usize,
    holder: Option<(String, usize)>,
}

/// Whether the server's threads waited in long waits (see [`stalls`]) at a site under
/// `name`, for a reason other than waiting for more work.
pub(crate) fn long_waits_under(f: &Facts, name: &str) -> bool {
    let (Some(p), Some(w)) = (f.offcpu(), f.waits()) else {
        return false;
    };
    w.sites
        .iter()
        .filter(|s| s.at == name && !matches!(s.reason, WaitReason::Poll | WaitReason::Idle))
        .any(|s| stalls(f, p, s).is_some())
}

fn stalls(f: &Facts, p: &kiln_model::Profile, top: &Site) -> Option<Stalls> {
    let lat = f.outcome.latency.as_ref()?;
    let long_ns = (lat.p50_us * 5.0).max(1000.0) * 1e3;
    let (labels, blocks) = crate::waits::program_blocks(p);
    // (Under its own label, or those it had before the CPU profile named its caller.)
    let sites: Vec<usize> = labels
        .iter()
        .enumerate()
        .filter(|(_, l)| top.is_labelled(l))
        .map(|(i, _)| i)
        .collect();
    if sites.is_empty() {
        return None;
    }
    let len = |b: &crate::waits::Block| b.end.saturating_sub(b.start);
    let mut at: Vec<&crate::waits::Block> = blocks
        .iter()
        .filter(|b| sites.contains(&b.site) && b.reason == top.reason)
        .collect();
    let total: u64 = at.iter().map(|b| len(b)).sum();
    at.retain(|b| len(b) as f64 >= long_ns);
    let long: u64 = at.iter().map(|b| len(b)).sum();
    if (long as f64) < 0.5 * total as f64 {
        return None;
    }
    let lock = top.reason == WaitReason::Lock;
    if !lock {
        let mut serving: Vec<u32> = blocks
            .iter()
            .filter(|b| b.reason == WaitReason::Poll)
            .map(|b| b.thread)
            .collect();
        serving.sort_unstable();
        serving.dedup();
        let theirs: u64 = at
            .iter()
            .filter(|b| serving.binary_search(&b.thread).is_ok())
            .map(|b| len(b))
            .sum();
        if theirs * 2 < long {
            return None;
        }
    }
    at.sort_by_key(|b| b.start);
    // (start, end, the first waiter's end, the waiters' threads)
    let mut eps: Vec<(u64, u64, u64, Vec<u32>)> = Vec::new();
    // Long waits that are no lock's and chain into one (each request's own sleep, many
    // threads asleep at any moment) are each their own: the threads did not wait for one
    // another.
    let chained = !lock && {
        let mut end = 0;
        let mut breaks = 0;
        for b in &at {
            if b.start > end {
                breaks += 1;
            }
            end = end.max(b.end);
        }
        breaks < 3 && at.len() >= 3
    };
    let at_once = chained.then(|| {
        let mut n = 0usize;
        let mut most = 0usize;
        let mut edges: Vec<(u64, i32)> = at
            .iter()
            .flat_map(|b| [(b.start, 1), (b.end, -1)])
            .collect();
        edges.sort_unstable();
        for (_, d) in edges {
            n = (n as i64 + i64::from(d)) as usize;
            most = most.max(n);
        }
        most
    });
    for b in at {
        if chained {
            eps.push((b.start, b.end, b.end, vec![b.thread]));
            continue;
        }
        match eps.last_mut() {
            Some(e) if b.start <= e.1 => {
                e.1 = e.1.max(b.end);
                e.2 = e.2.min(b.end);
                if !e.3.contains(&b.thread) {
                    e.3.push(b.thread);
                }
            }
            _ => eps.push((b.start, b.end, b.end, vec![b.thread])),
        }
    }
    // The stalls are the longest of them (a quarter of the longest at least): a lock
    // taken often makes short overlaps of its own, which are no stall.
    let longest = eps.iter().map(|e| e.1 - e.0).max().unwrap_or(0);
    eps.retain(|e| (e.1 - e.0) * 4 >= longest);
    let in_stalls: u64 = eps
        .iter()
        .map(|e| {
            blocks
                .iter()
                .filter(|b| sites.contains(&b.site) && b.start >= e.0 && b.end <= e.1)
                .map(len)
                .sum::<u64>()
        })
        .sum();
    if eps.len() < 3 || (in_stalls as f64) < 0.5 * total as f64 {
        return None;
    }
    let mut held: Vec<(usize, usize)> = Vec::new();
    for (start, _, first_end, waiters) in eps.iter().filter(|_| lock) {
        let mut here: Vec<usize> = blocks
            .iter()
            .filter(|b| {
                // (A thread blocked reading its connection holds no lock of the
                // server's: it waits for its client.)
                !sites.contains(&b.site)
                    && !matches!(b.reason, WaitReason::Poll | WaitReason::Idle)
                    && !waiters.contains(&b.thread)
                    && b.end <= first_end + 100_000
                    && b.end + (first_end.saturating_sub(*start) / 4).max(2_000_000) >= *first_end
                    && len(b) * 2 >= first_end.saturating_sub(*start)
            })
            .map(|b| b.site)
            .collect();
        here.sort_unstable();
        here.dedup();
        for s in here {
            match held.iter_mut().find(|h| h.0 == s) {
                Some(h) => h.1 += 1,
                None => held.push((s, 1)),
            }
        }
    }
    let mut holder = held
        .into_iter()
        .max_by_key(|h| h.1)
        .filter(|h| h.1 * 5 >= eps.len() * 3)
        .map(|(s, n)| (format!("a thread blocked in {}", labels[s]), n));
    // Else a holder on a CPU: the program's code another thread ran for a third of each
    // stall at least (its samples there; the waiters' own left out), in most stalls.
    if let (None, Some(cpu), true) = (&holder, f.cpu_profile(), lock) {
        let tid = |t: &u32| p.threads.get(kiln_model::ThreadId(*t)).and_then(|t| t.tid);
        let windows: Vec<(u64, u64, Vec<u32>)> = eps
            .iter()
            .map(|e| (e.0, e.2, e.3.iter().filter_map(tid).collect()))
            .collect();
        let mut ran: Vec<(String, usize)> = Vec::new();
        for (w, by) in windows
            .iter()
            .zip(crate::waits::cpu_in_windows(cpu, &windows))
        {
            for (label, t) in by {
                if t * 3.0 >= w.1.saturating_sub(w.0) as f64 {
                    match ran.iter_mut().find(|r| r.0 == label) {
                        Some(r) => r.1 += 1,
                        None => ran.push((label, 1)),
                    }
                }
            }
        }
        holder = ran
            .into_iter()
            .max_by_key(|r| r.1)
            .filter(|r| r.1 * 5 >= eps.len() * 3)
            .map(|(l, n)| (format!("a thread running {l}"), n));
    }
    Some(Stalls {
        lock,
        count: eps.len(),
        longest_ns: longest,
        apart_ns: (eps[eps.len() - 1].0 - eps[0].0) / (eps.len() as u64 - 1),
        most_waiting: at_once.unwrap_or_else(|| eps.iter().map(|e| e.3.len()).max().unwrap_or(0)),
        holder,
    })
}

impl Stalls {
    /// When the slowest operations are these stalls (the longest is half to one and a
    /// half times the slowest, which is 20 times the median at least): the share of the
    /// slowest one's latency beyond the median.
    fn tail(&self, f: &Facts) -> Option<f64> {
        let l = f.outcome.latency.as_ref()?;
        let max_ns = (l.max_us * 1e3).max(1.0);
        let r = self.longest_ns as f64 / max_ns;
        ((0.5..=1.5).contains(&r) && l.max_us >= 20.0 * l.p50_us)
            .then(|| (1.0 - l.p50_us / l.max_us).clamp(0.0, 1.0))
    }

    /// `; its waits came in 10 stalls …`, said after a lock's claim.
    fn said(&self, f: &Facts) -> String {
        let ns = |n: u64| kiln_model::format_ns(n as f64);
        let holder = self
            .holder
            .as_ref()
            .map(|(h, n)| {
                format!(
                    ", held by {h} (through each stall until the waiters began to run again, in {n} of the {})",
                    self.count
                )
            })
            .unwrap_or_default();
        let tail = f
            .outcome
            .latency
            .as_ref()
            .filter(|_| self.tail(f).is_some())
            .map(|l| {
                format!(
                    "; the slowest {}s (p99.9 {}, max {}) are these {}",
                    f.outcome.unit,
                    ns((l.p999_us * 1e3) as u64),
                    ns((l.max_us * 1e3) as u64),
                    if self.lock { "stalls" } else { "waits" }
                )
            })
            .unwrap_or_default();
        if !self.lock {
            let at_once = if self.most_waiting > 1 {
                format!(", with up to {} threads waiting at once", self.most_waiting)
            } else {
                String::new()
            };
            return format!(
                "; most of it in {} long waits of up to {}, {} apart on average{at_once}{tail}",
                self.count,
                ns(self.longest_ns),
                ns(self.apart_ns)
            );
        }
        format!(
            "; its waits came in {} stalls of up to {}, {} apart on average, with up to {} threads waiting at once: the lock was held that long at times{holder}{tail}",
            self.count,
            ns(self.longest_ns),
            ns(self.apart_ns),
            self.most_waiting
        )
    }
}

/// What the child processes a server waited for were: how many waits ended (one per
/// child, the off-CPU profile's blocks in a wait for one), per operation, and the CPU the
/// children used themselves (the CPU profile's samples of other processes: the recording
/// follows the target's children), which the server's own figures leave out.
fn children_said(f: &Facts, offcpu: &kiln_model::Profile) -> String {
    let mut out = child_waits_said(f, offcpu);
    out.push_str(&children_cpu_said(f));
    out
}

/// How many times the server waited for a child to end (its own waits: a shell it ran
/// waits for its own children too), per second and per operation.
fn child_waits_said(f: &Facts, offcpu: &kiln_model::Profile) -> String {
    let waits = child_waits(f, offcpu);
    let mut out = String::new();
    if waits > 0 {
        let per_op = f
            .outcome
            .ops
            .filter(|&o| o > 0.0)
            .map(|o| format!(", {:.2} per {}", waits as f64 / o, f.outcome.unit))
            .unwrap_or_default();
        out += &format!(
            "; {waits} waits for a child to end ({:.0}/s{per_op})",
            waits as f64 / f.secs.max(1e-9)
        );
    }
    out
}

/// The server's own blocks waiting for a child to end (not those for one to start: a
/// vfork's parent waits for its child's exec).
fn child_waits(f: &Facts, offcpu: &kiln_model::Profile) -> usize {
    let reasons = kiln_model::waits::stack_reasons(offcpu);
    let starts: Vec<bool> = offcpu
        .stacks
        .ids()
        .map(|id| {
            offcpu
                .stacks
                .path(id)
                .iter()
                .any(|&fr| offcpu.frame_name(fr) == b"wait_for_vfork_done")
        })
        .collect();
    let pids = &f.meta.target.pids;
    // The server's own waits: a shell it ran waits for its own children too.
    offcpu
        .samples
        .stack
        .iter()
        .zip(&offcpu.samples.thread)
        .filter(|(s, t)| {
            reasons.get(s.0 as usize) == Some(&WaitReason::Child)
                && !starts.get(s.0 as usize).copied().unwrap_or(false)
                && offcpu
                    .threads
                    .get(**t)
                    .and_then(|t| t.pid)
                    .is_none_or(|p| pids.is_empty() || pids.contains(&p))
        })
        .count()
}

/// The children's CPU as the kernel counted it, with their names.
fn children_cpu_said(f: &Facts) -> String {
    let mut out = String::new();
    let profiled = f.ran.as_ref();
    // Their CPU as the kernel counted it for the server (once waited for), else as the
    // CPU profile sampled it (which loses samples when children come and go by thousands).
    let used = f
        .cpus
        .children
        .or_else(|| profiled.map(|(s, _)| s / f.secs.max(1e-9)));
    if let Some(used) = used.filter(|&c| c >= 0.005) {
        let names: Vec<String> = profiled
            .iter()
            .flat_map(|(_, n)| n.iter())
            .filter(|(_, c)| c / f.secs.max(1e-9) >= 0.005)
            .take(3)
            .map(|(n, _)| n.clone())
            .collect();
        let names = if names.is_empty() {
            String::new()
        } else {
            format!(" ({})", names.join(", "))
        };
        out += &format!(
            "; the children{names} used {} of their own, outside the server's figures",
            cpus(used)
        );
    }
    out
}

/// The server ran programs for its operations, and they cost a fair share of what serving
/// cost: the kernel's count of its children's CPU (cutime + cstime, once waited for)
/// against its own — CPU its own figures leave out, on top of starting each (a fork or
/// vfork, an exec, reading its output to the end) on its own threads. Said with where the
/// program starts them (the CPU profile's frame of the program's own above the fork) and
/// how many it waited for.
///
/// False when: its children used under 0.05 CPU, or under a quarter of its own CPU; its
/// waits for them are a fair share of its waits (the blocked rule names them there).
pub fn programs(f: &Facts) -> Vec<Finding> {
    let (Some(kids), Some(own)) = (f.cpus.children, f.cpus.target) else {
        return Vec::new();
    };
    if kids < 0.05 || kids < 0.25 * own {
        return Vec::new();
    }
    if f.children_are_copies() {
        return Vec::new();
    }
    if f.waits().is_some_and(|w| {
        let all: u128 = w.sites.iter().map(|s| s.weight).sum();
        w.of(WaitReason::Child) as f64 >= 0.1 * all.max(1) as f64
    }) {
        return Vec::new();
    }
    let share = kids / (kids + own).max(1e-9);
    let unit = &f.outcome.unit;
    let spawned = f.cpu_profile().and_then(|p| spawns(p, &f.meta.target.pids));
    let at = spawned
        .as_ref()
        .map(|(s, _)| format!(", started under {s}"))
        .unwrap_or_default();
    // CPython starts a program holding its GIL (fork_exec), and subprocess's Python code
    // around it holds it too: when the function that starts them is most of the server's
    // CPU, the other threads' waits for the GIL are theirs, a consequence ranked under its
    // cause.
    let gil = gil_share(f);
    let held = spawned
        .as_ref()
        .filter(|(_, s)| f.runtime() == Runtime::Python && *s >= 0.3 && gil >= NAMED)
        .map(|(_, s)| {
            format!(
                "; Python holds its GIL to start each one and to run subprocess's own code around it, {} of the server's CPU: the other threads' waits for the GIL ({} of the {unit}s' time) are theirs",
                pct(*s),
                pct(gil.min(1.0))
            )
        });
    // (Its waits for them, when most operations waited once at least: a program that
    // ended before the wait leaves none to count.)
    let waits = f
        .offcpu()
        .filter(|p| {
            f.outcome
                .ops
                .is_some_and(|o| o > 0.0 && child_waits(f, p) as f64 >= 0.5 * o)
        })
        .map(|p| child_waits_said(f, p))
        .unwrap_or_default();
    let claim = format!(
        "the server ran programs for its {unit}s (child processes{at}): they used {} of their own beside its {} ({} of the CPU serving cost, outside the server's own figures){}{waits}{} — do the work in the server, or keep one program running and talk to it",
        cpus(kids),
        cpus(own),
        pct(share),
        ran_names(f),
        held.as_deref().unwrap_or_default()
    );
    let mut score = (0.5 + share / 2.0).min(0.95);
    if held.is_some() {
        // Above the GIL's finding (its share × 0.95), which it explains.
        score = score.max((gil.min(1.0) * 0.95 + 0.01).min(0.99));
    }
    vec![
        Finding::new("programs", Class::ChildProcesses, score, claim)
            .evidence(f.ev(
                "its children's CPU",
                format!("{} (the server's own {})", cpus(kids), cpus(own)),
                "/proc/PID/stat (cutime + cstime: its children's CPU once waited for)",
            ))
            .explains(
                share * 100.0,
                "of the CPU serving cost (the server's and its children's)",
            )
            .check(check_of(f, WaitReason::Child, "")),
    ]
}

/// Where the target starts processes, by its CPU profile: the program's own frame nearest
/// above a fork, vfork, clone or spawn (a Python function outside the standard library,
/// else the program's native frame), the heaviest; and the share of the CPU of `pids`
/// (the target's processes; every sample's when empty) under that frame: what starting
/// its programs costs the server, the runtime's own machinery for it included (Python's
/// `subprocess`).
fn spawns(p: &kiln_model::Profile, pids: &[u32]) -> Option<(String, f64)> {
    const SPAWN: &[&str] = &[
        "fork",
        "_Fork",
        "__libc_fork",
        "vfork",
        "__vfork",
        "__GI___vfork",
        "clone",
        "__clone",
        "clone3",
        "__clone3_internal",
        "posix_spawn",
        "__spawni",
        "__spawnix",
        "__x64_sys_vfork",
        "__x64_sys_clone",
        "__x64_sys_clone3",
        "kernel_clone",
    ];
    let mut by: std::collections::HashMap<String, u128> = Default::default();
    let mut path = Vec::new();
    for (&st, &w) in p.samples.stack.iter().zip(&p.samples.weight) {
        path.clear();
        p.stacks.path_into(st, &mut path);
        let names: Vec<(String, kiln_model::FrameKind)> = path
            .iter()
            .map(|&id| {
                (
                    String::from_utf8_lossy(p.frame_name(id)).into_owned(),
                    p.frames.get(id).kind,
                )
            })
            .collect();
        // A thread's own start (clone3 at its root) is no spawn, nor is a thread the
        // program creates (pthread_create clones too): the first spawn frame below a
        // frame of the program's.
        if names
            .iter()
            .any(|(n, _)| n.starts_with("pthread_create") || n == "create_thread")
        {
            continue;
        }
        let Some(k) = names
            .iter()
            .enumerate()
            .skip(1)
            .position(|(_, (n, _))| SPAWN.contains(&n.as_str()))
            .map(|i| i + 1)
        else {
            continue;
        };
        let above = &names[..k];
        let own = above
            .iter()
            .rposition(|(n, kind)| {
                *kind == kiln_model::FrameKind::Python && !crate::waits::in_python_library(n)
            })
            .or_else(|| {
                let plain: Vec<&str> = above
                    .iter()
                    .filter(|(_, kind)| *kind == kiln_model::FrameKind::User)
                    .map(|(n, _)| n.as_str())
                    .collect();
                kiln_model::waits::program_frame(&plain)
                    .and_then(|i| above.iter().position(|(n, _)| n == plain[i]))
            });
        if let Some(i) = own {
            *by.entry(above[i].0.clone()).or_default() += w as u128;
        }
    }
    let at = by
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(n, _)| n)?;
    let (mut all, mut under) = (0u128, 0u128);
    for ((&st, &w), th) in p
        .samples
        .stack
        .iter()
        .zip(&p.samples.weight)
        .zip(&p.samples.thread)
    {
        let pid = p.threads.get(*th).and_then(|t| t.pid);
        if !pids.is_empty() && !pid.is_some_and(|x| pids.contains(&x)) {
            continue;
        }
        all += w as u128;
        path.clear();
        p.stacks.path_into(st, &mut path);
        if path.iter().any(|&id| p.frame_name(id) == at.as_bytes()) {
            under += w as u128;
        }
    }
    Some((at, under as f64 / all.max(1) as f64))
}

/// The programs the CPU profile saw the target run, by name (`date`), the busiest three.
fn ran_names(f: &Facts) -> String {
    let names: Vec<String> = f
        .ran
        .iter()
        .flat_map(|(_, n)| n.iter())
        .filter(|(_, c)| c / f.secs.max(1e-9) >= 0.005)
        .take(3)
        .map(|(n, _)| n.clone())
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!("; the programs: {}", names.join(", "))
    }
}

/// The time inside the calls that wait for the disk to hold the data (fsync, fdatasync)
/// beyond their blocks: the file system's work on a CPU inside them (the CPU profile), a
/// preemption there (the runnable profile), and the wait for a CPU once the disk answered
/// (the off-CPU time past the kernel's count of blocked time). A trace of the calls
/// (bpftrace, strace -T) counts all of it as the call's time; on a machine busy with
/// other work most of it can be the waits for a CPU.
struct SyncTime {
    woken: f64,
    cpu: f64,
    preempted: f64,
}

impl SyncTime {
    fn beyond_blocks(&self) -> f64 {
        self.woken + self.cpu + self.preempted
    }

    /// The parts, blocked `t` first, each said when it is 1% of the whole or more.
    fn parts(&self, t: f64) -> String {
        let all = t + self.beyond_blocks();
        let mut out = vec![format!("{} blocked on it", secs(t))];
        for (v, what) in [
            (self.woken, "waiting for a CPU once it answered"),
            (self.cpu, "on a CPU in the file system's work for them"),
            (self.preempted, "waiting for a CPU in the middle of them"),
        ] {
            if v >= 0.01 * all {
                out.push(format!("{} {what}", secs(v)));
            }
        }
        format!("{} in all inside the calls ({})", secs(all), out.join(", "))
    }
}

/// [`SyncTime`] of the disk waits at `sites`, when they are calls that wait for the disk
/// to hold the data; `woken` is their off-CPU time past the blocked time.
fn sync_call_time(f: &Facts, sites: &[&Site], woken: f64) -> Option<SyncTime> {
    // (The C calls, and the runtimes' own names for them: Go's `os.(*File).Sync`, Java's
    // `FileChannel.force`, `FileDescriptor.sync`, Node's `fsyncSync`.)
    let sync = [
        "fsync",
        "fdatasync",
        "sync_file_range",
        "msync",
        "syncfs",
        "os.(*File).Sync",
        "FileChannel.force",
        "FileChannelImpl.force",
        "FileDescriptor.sync",
        "fsyncSync",
        "fdatasyncSync",
    ];
    let top = sites.first()?.label();
    if !sync.iter().any(|c| top.contains(c)) {
        return None;
    }
    Some(SyncTime {
        woken: woken.max(0.0),
        cpu: f
            .cpu_profile()
            .map_or(0.0, super::cpu::seconds_in_sync_calls),
        preempted: f
            .profile("runnable")
            .map_or(0.0, super::cpu::seconds_in_sync_calls),
    })
}

/// A JVM's threads BLOCKED on one monitor in its own thread dumps: a finding from the dumps
/// alone, for when the off-CPU profile did not name the lock (a machine so busy that the
/// waiters spin or wait for a CPU more than they sleep, or no off-CPU profile recorded).
/// The share of the pool's threads BLOCKED on it over the dumps is the share of their
/// time they waited (each dump a sample of every thread), and of the operations' time when
/// those threads are the ones serving them. A finding from the profile, where it names
/// the lock, ranks above this one and says the same.
///
/// False when: not a JVM, no dumps, fewer than two dumps caught a thread BLOCKED on the
/// monitor, or its waiters are a small share of their pool.
pub fn monitors(f: &Facts) -> Vec<Finding> {
    if f.runtime() != Runtime::Jvm {
        return Vec::new();
    }
    let Some(d) = f.jvm_dumps().filter(|d| !d.dumps.is_empty()) else {
        return Vec::new();
    };
    let Some(m) = contended(&d) else {
        return Vec::new();
    };
    let share = m.blocked as f64 / m.of.max(1) as f64;
    if !m.seen_often() {
        return Vec::new();
    }
    let held = m
        .holder
        .as_ref()
        .map(|h| format!(", held in {h}"))
        .unwrap_or_default();
    let who = if f.outcome.latency.is_some() {
        format!("{}s", f.outcome.unit)
    } else {
        "the server's threads".into()
    };
    let claim = format!(
        "{who} {}: the JVM's thread dumps found {} of the {} threads serving them {} it ({} of {} dumped, in {} of {} dumps){}",
        if m.parked {
            format!("waited for a {} in {} (parked{held})", m.class, m.method)
        } else {
            format!("waited to enter the monitor of a {} in {} (synchronized{held})", m.class, m.method)
        },
        pct(share.min(1.0)),
        m.group,
        if m.parked { "parked waiting for" } else { "BLOCKED on" },
        m.blocked,
        m.of,
        m.in_dumps,
        m.dumps,
        holder_said(f, &m)
    );
    let of = outcome_time(f)
        .map(|(_, of)| of)
        .unwrap_or_else(|| "of the server's working time".into());
    vec![Finding::new(
        "monitors",
        Class::LockContention,
        share.min(1.0) * 0.9,
        claim,
    )
    .evidence(dumps_evidence(f, &d, Some(&m)))
    .explains(share * 100.0, of)
    .check(check_of(f, WaitReason::Lock, ""))]
}

/// The thread dumps' evidence of a monitor wait: how many of the dumped threads of the
/// waiters' pool were BLOCKED on it in how many dumps, or that none was on any monitor.
fn dumps_evidence(f: &Facts, d: &JvmDumps, m: Option<&Contended>) -> crate::Evidence {
    let source = format!(
        "{} thread dumps of the JVM over the window (HotSpot's attach protocol; each a safepoint)",
        d.dumps.len()
    );
    match m {
        Some(m) => {
            let held = m
                .holder
                .as_ref()
                .map(|h| format!("; held in {h}"))
                .unwrap_or_default();
            let (what, state) = if m.parked {
                (
                    format!("parked waiting for a {}", m.class),
                    "parked waiting for it",
                )
            } else {
                (
                    format!("BLOCKED on a {}'s monitor", m.class),
                    "BLOCKED on it",
                )
            };
            f.ev(
                what,
                format!(
                    "{} of {} dumped {} threads {state} in {} of {} dumps, waiting to lock in {}{held}",
                    m.blocked, m.of, m.group, m.in_dumps, m.dumps, m.method
                ),
                source,
            )
        }
        None => {
            let threads: u32 = d.dumps.iter().flat_map(|x| &x.groups).map(|(_, n)| n).sum();
            f.ev(
                "BLOCKED on a monitor",
                format!(
                    "no thread in any of {} dumps ({threads} threads dumped): the profile's monitor waits were not caught in a dump, so the method is not named",
                    d.dumps.len()
                ),
                source,
            )
        }
    }
}

/// Without an off-CPU profile: where the target's asleep threads waited, sampled once a
/// second from their state and `wchan` (the kernel function each sleeps in). A disk wait
/// is a disk wait; a futex is a lock or a condition variable (an idle pool waits on one
/// too), so it is named only when the waiting threads could all be operations in flight
/// and the server's CPU explains little of the operations' time; the claim says which
/// profile would name the code.
///
/// False when: the run has an off-CPU profile (the blocked rule reads it); the waits are a
/// small share of the operations' time.
pub fn sleeping(f: &Facts) -> Vec<Finding> {
    use kiln_store::columns as col;
    if f.offcpu().is_some() {
        return Vec::new();
    }
    let Some((outcome_s, of)) = outcome_time(f) else {
        return Vec::new();
    };
    let in_flight = f.outcome.concurrency.unwrap_or(f64::INFINITY);
    let cpu_share = f.cpus.target.unwrap_or(0.0) * f.secs / outcome_s.max(1e-9);
    let mut out = Vec::new();
    for (bucket, class, what, named_from) in [
        (
            "disk",
            Class::DiskIo,
            "waited for the disk (in uninterruptible sleep, or on the page cache and the journal)",
            0.1,
        ),
        (
            "futex",
            Class::LockContention,
            "waited on a futex (a lock, or a condition variable)",
            0.3,
        ),
        ("sleep", Class::SleepInPath, "slept (nanosleep)", 0.3),
        (
            "pipe",
            Class::NetworkWait,
            "waited on a pipe (to write into a full one, or to read an empty one)",
            0.3,
        ),
    ] {
        let Some(n) = f.mean(col::TARGET, &col::per_group(col::WAITING, bucket)) else {
            continue;
        };
        let share = n * f.secs / outcome_s.max(1e-9);
        let could_be_requests = bucket == "disk" || (n <= in_flight + 0.5 && cpu_share < 0.5);
        if share < named_from || !could_be_requests {
            continue;
        }
        let score = share.min(1.0) * if bucket == "disk" { 0.9 } else { 0.6 };
        let mut e = f.ev(
            format!("threads asleep in {bucket} waits"),
            format!("{n:.1} on average"),
            "/proc/PID/task/TID/stat and wchan, sampled once a second",
        );
        e.series = Some(format!(
            "{}/{}",
            col::TARGET,
            col::per_group(col::WAITING, bucket)
        ));
        out.push(
            Finding::new(
                "sleeping",
                class,
                score,
                format!(
                    "the server's threads {what}: {n:.1} of them on average, {} of the {}s' time — record -e cpu,offcpu to name the code that waits",
                    pct(share.min(1.0)),
                    f.outcome.unit
                ),
            )
            .evidence(e)
            .explains(share.min(1.0) * 100.0, of.clone())
            .check(format!(
                "cat /proc/{}/task/*/wchan (several times); perf trace -s -p {} -- sleep {}",
                f.meta.target.pids.first().copied().unwrap_or(0),
                f.pid(),
                f.secs_arg()
            )),
        );
    }
    out
}

/// Goroutines parked on a lock, a channel in a request's path or a timer (a goroutine
/// waiting for a `sync.Mutex` parks without blocking a thread, so the thread-level view
/// cannot see it), from Go's own block profile of the same seconds (`--pprof`) or, without
/// one, from the waits kiln traced at each park: the wait and the program's frame above it.
///
/// False when: the run has neither profile; the delay on locks (and on channels or
/// selects in a request's path; elsewhere those are goroutines waiting for work), or on
/// timers, is a small share of the operations' time.
pub fn go_waits(f: &Facts) -> Vec<Finding> {
    let Some(p) = f.goroutine_waits() else {
        return Vec::new();
    };
    let Some((outcome_s, of)) = outcome_time(f) else {
        return Vec::new();
    };
    let traced = !p.event.name.starts_with(kiln_store::PPROF_EVENT_PREFIX);
    let ns = p.event.ns_per_weight().unwrap_or(1.0);
    let (sites, _) = go_sites(p);
    let mut out = Vec::new();
    // Locks, and channels or selects a request waited on (a semaphore made of a channel, a
    // pool's slot): goroutines waiting for work are left out. Then timers (the block
    // profile has none: a sleep is not a blocking event to it).
    for sleep in [false, true] {
        let picked: Vec<&Site> = sites
            .iter()
            .filter(|s| match sleep {
                false => matches!(s.reason, WaitReason::Lock | WaitReason::Futex),
                true => s.reason == WaitReason::Sleep && in_request(s),
            })
            .collect();
        let lock_w: u128 = picked
            .iter()
            .filter(|s| s.reason == WaitReason::Lock)
            .map(|s| s.weight)
            .sum();
        let cond_w: u128 = picked
            .iter()
            .filter(|s| s.reason == WaitReason::Futex && s.primitive.contains("Cond"))
            .map(|s| s.weight)
            .sum();
        let w: u128 = picked.iter().map(|s| s.weight).sum();
        let t = w as f64 * ns / 1e9;
        let share = t / outcome_s.max(1e-9);
        let Some(top) = picked.first() else {
            continue;
        };
        if share < NAMED {
            continue;
        }
        let places: Vec<String> = places_said(&picked)
            .into_iter()
            .take(3)
            .enumerate()
            .filter(|(i, (_, x))| *i == 0 || x * 100 >= w)
            .map(|(_, (l, x))| format!("{l} ({})", pct(x as f64 / w.max(1) as f64)))
            .collect();
        // Mostly channels: a semaphore or a pool's slot, the request's concurrency limit.
        // A timer that ended a receive or a select: its channel (time.After, a Ticker).
        let timer_channel = picked.iter().any(|s| {
            [&s.at, &s.primitive]
                .iter()
                .any(|x| x.contains("chanrecv") || x.contains("selectgo"))
        });
        let (on, class) = if sleep && timer_channel {
            (
                "a timer (a sleep, or a timer's channel: time.After, a Ticker)",
                Class::SleepInPath,
            )
        } else if sleep {
            ("a timer (a sleep)", Class::SleepInPath)
        } else if lock_w * 2 >= w {
            ("a lock", Class::LockContention)
        } else if cond_w * 2 >= w - lock_w {
            (
                "a condition in the request's path (sync.Cond: a pool's free resource or another goroutine's signal)",
                Class::LockContention,
            )
        } else {
            (
                "a channel in the request's path (a semaphore, a pool's slot or another goroutine's result)",
                Class::LockContention,
            )
        };
        let claim = format!(
            "goroutines waited on {on} {} of the {}s' time ({} in all), in {}",
            pct(share.min(1.0)),
            f.outcome.unit,
            secs(t),
            places.join(", ")
        );
        let source = if traced {
            "goroutine waits traced at each park (uprobes on runtime.gopark and runtime.ready, attached one second in five and scaled to the window)".to_string()
        } else {
            format!("Go's block profile ({}), the same seconds", p.event.name)
        };
        let mut e = f.ev(
            if sleep {
                "goroutines asleep in requests"
            } else {
                "goroutines blocked on locks, and on channels in requests"
            },
            format!("{} at {}", secs(t), places.join(", ")),
            source,
        );
        e.profile = Some(p.event.name.clone());
        e.focus = Some(top.at.clone());
        // Channels every request waits on for one goroutine that does the work: the
        // serialised work is the cause (its rule names the goroutine's function), the
        // channel only where the wait shows.
        let mut score = share.min(1.0) * 0.95;
        if !sleep && lock_w * 2 < w && !super::cpu::serialised(f).is_empty() {
            score *= 0.8;
        }
        let check = if traced {
            format!(
                "bpftrace -e 'uprobe:/proc/{pid}/exe:runtime.gopark /pid == {pid}/ {{ @[ustack(8)] = count(); }}'   # where goroutines park, by count",
                pid = f.pid()
            )
        } else {
            "kiln runs attachment RUN pprof-block.pb.gz -o block.pb.gz && go tool pprof -top block.pb.gz".to_string()
        };
        out.push(
            Finding::new("go-waits", class, score, claim)
                .evidence(e)
                .explains(share * 100.0, of.clone())
                .check(check),
        );
    }
    out
}

/// Whether a goroutine's wait is in a request's path (a handler's sleep, not a
/// background loop's).
fn in_request(s: &Site) -> bool {
    s.in_request_path
}

/// Seconds goroutines spent parked inside the server on the operations' behalf (a lock,
/// a channel or condition in a request's path, a sleep in it), from the goroutine waits
/// or Go's block profile: time in the server that no thread spent.
fn go_parked_in_path_s(f: &Facts) -> f64 {
    let Some(p) = f.goroutine_waits() else {
        return 0.0;
    };
    let ns = p.event.ns_per_weight().unwrap_or(1.0);
    let (sites, _) = go_sites(p);
    let w: u128 = sites
        .iter()
        .filter(|s| match s.reason {
            WaitReason::Lock | WaitReason::Futex => true,
            WaitReason::Sleep => in_request(s),
            _ => false,
        })
        .map(|s| s.weight)
        .sum();
    w as f64 * ns / 1e9
}

/// Linux's delayed-ACK timer (ms): a small write held by Nagle's algorithm waits for it.
const DELAYED_ACK_MS: f64 = 40.0;

/// Whether a gap between a response's first and last bytes is Linux's delayed-ACK timer
/// (40 ms, and 200 ms once its estimate has grown), as Nagle's algorithm meets it.
fn delayed_ack(ms: f64) -> bool {
    (ms - DELAYED_ACK_MS).abs() <= 0.35 * DELAYED_ACK_MS || (ms - 200.0).abs() <= 25.0
}

/// Responses that arrived in parts, as the load's client counted them.
struct Split {
    /// Responses split, and operations in all.
    n: f64,
    ops: f64,
    /// Their gaps' share of the operations' time.
    share: f64,
    /// The mean gap between a split response's first and last bytes.
    gap_ms: f64,
    /// Whether the gap is the delayed-ACK timer's.
    nagle: bool,
}

/// The split responses of a window, when enough of them were split for a finding.
fn split_stall(f: &Facts) -> Option<Split> {
    // Rates per second: their counts are each rate times its second's length.
    let sum = |c: &str| crate::facts::count_of(&f.values(kiln_store::columns::LOAD, c));
    let (n, wait_us) = (sum("split_responses")?, sum("split_wait_us")?);
    let ops = f.outcome.ops.filter(|o| *o > 0.0)?;
    let req_s = f.request_time_s()?;
    let share = wait_us / 1e6 / req_s.max(1e-9);
    if n / ops < 0.2 || share < NAMED {
        return None;
    }
    let gap_ms = wait_us / 1000.0 / n.max(1.0);
    Some(Split {
        n,
        ops,
        share,
        gap_ms,
        nagle: delayed_ack(gap_ms),
    })
}

/// How to turn Nagle's algorithm off, in the words of the server the CPU profile saw: the
/// JDK's HttpServer takes a system property (unless its command line already sets it),
/// Python's `http.server` a handler attribute; any other, the socket option.
fn nodelay_advice(f: &Facts) -> String {
    let saw = |prefix: &[u8]| {
        f.cpu_profile().is_some_and(|p| {
            p.frames.iter().any(|(_, fr)| {
                let name = p.strings.get(fr.name);
                name.windows(prefix.len()).any(|w| w == prefix)
            })
        })
    };
    const JDK: &str = "-Dsun.net.httpserver.nodelay=true";
    if saw(b"sun.net.httpserver.") && !f.cmdline().contains(JDK) {
        format!("start the JVM with {JDK} (the JDK's HttpServer sets TCP_NODELAY only then), or write each response at once")
    } else if saw(b"BaseHTTPRequestHandler.") {
        "set disable_nagle_algorithm = True on the handler class (Python's http.server leaves Nagle's algorithm on), or write each response at once".to_string()
    } else {
        "set TCP_NODELAY on its sockets, or write each response at once".to_string()
    }
}

/// Responses that arrived in parts, their last bytes long after their first (the load's
/// own receive times, the kernel's stamps): the server wrote each in pieces and the rest
/// waited — for the client's delayed ACK under Nagle's algorithm when the gap is that
/// timer's, else for the server's own work between the pieces.
///
/// False when: few responses were split, or their gaps are a small share of the
/// operations' time; the load is not kiln's HTTP client (no such count).
pub fn split(f: &Facts) -> Option<Finding> {
    let Split {
        n,
        ops,
        share,
        gap_ms,
        nagle,
    } = split_stall(f)?;
    let mut claim = format!(
        "{} of the responses arrived in parts, their last bytes {gap_ms:.1} ms after their first on average: {} of the {}s' time",
        pct((n / ops).min(1.0)),
        pct(share.min(1.0)),
        f.outcome.unit
    );
    if nagle {
        claim.push_str(" — the delayed-ACK stall: the server writes each response in pieces without TCP_NODELAY, and the last piece waits for the client's ACK (Nagle's algorithm): ");
        claim.push_str(&nodelay_advice(f));
    } else {
        claim.push_str(" — the server wrote them in pieces and the rest came later (its work between the pieces, or the network)");
    }
    let e = f.ev(
        "responses in parts",
        format!(
            "{} of {} ({:.1} ms between first and last byte on average)",
            kiln_model::thousands(n.round() as u64),
            kiln_model::thousands(ops.round() as u64),
            gap_ms
        ),
        "the load's own receive times (the kernel's stamps on each read)",
    );
    Some(
        Finding::new(
            "split",
            Class::NetworkWait,
            share.min(1.0) * 0.95,
            claim,
        )
        .evidence(e)
        .explains(share * 100.0, format!("of the {}s' time", f.outcome.unit))
        .check(if nagle {
            format!("strace -f -tt -e trace=write,writev,sendto,setsockopt -p {} (two writes per response, no TCP_NODELAY); nstat -az TcpExtDelayedACKs", f.pid())
        } else {
            format!("strace -f -tt -e trace=write,writev,sendto -p {}", f.pid())
        }),
    )
}

/// The rule form of [`split`].
pub fn split_responses(f: &Facts) -> Vec<Finding> {
    split(f).into_iter().collect()
}

/// Whether the target lived through most of the window by its readings (a process gone
/// reads no resident memory).
fn lived_through(f: &Facts) -> bool {
    let v = f.values(kiln_store::columns::TARGET, kiln_store::columns::RSS);
    let total: f64 = v.iter().map(|x| x.1).sum();
    let alive: f64 = v.iter().filter(|x| x.0 > 0.0).map(|x| x.1).sum();
    total <= 0.0 || alive >= 0.5 * total
}

/// The server was idle while the operations took long: the time is outside it — in the
/// network stack, the client, or a service it waits for. By Little's law the operations'
/// time is their latencies summed; the server's share of it is the time its threads were
/// on a CPU, runnable or blocked in their work.
///
/// False when: the server's threads were busy a fair share of the operations' time; a
/// saturated thread, or connections waiting in (or dropped from) the accept queue,
/// explain the wait (their rules speak).
pub fn outside(f: &Facts) -> Vec<Finding> {
    let (Some(l), Some(req_s)) = (f.outcome.latency.as_ref(), f.request_time_s()) else {
        return Vec::new();
    };
    if f.groups.is_empty() || l.mean_us < 1000.0 {
        return Vec::new();
    }
    // A load without a count of operations (a fleet holding connections, whose latency is
    // its pings') has no operation whose time could be outside the server.
    if !f.outcome.ops.is_some_and(|o| o > 0.0) {
        return Vec::new();
    }
    // A target gone for most of the window (it exited, was killed) has no threads left to
    // account the operations' time to: elimination says nothing.
    if !lived_through(f) {
        return Vec::new();
    }
    // Messages waiting in a queue the broker holds are inside it: the queue rule says so.
    if super::queues::held_in_broker(f) {
        return Vec::new();
    }
    // A thread parked through the whole window, never seen to wake by the off-CPU profile,
    // served no operation in it: a Go server's idle Ms, Node's inspector and signal
    // threads. (A Go server's goroutines' own waits are added below.)
    let seen = f.offcpu().is_some();
    let mut busy: f64 = f
        .groups
        .iter()
        .map(|g| if seen { g.busy_seen() } else { g.busy() })
        .sum::<f64>()
        * f.secs;
    // Without an off-CPU profile a blocked thread's reason is its wchan, once a second:
    // asleep on the disk, in a sleep, or writing to a pipe is work, not waiting for it (a
    // futex is left out: idle pools wait on one).
    if f.offcpu().is_none() {
        let asleep: f64 = ["disk", "sleep", "pipe"]
            .iter()
            .filter_map(|b| {
                f.mean(
                    kiln_store::columns::TARGET,
                    &kiln_store::columns::per_group(kiln_store::columns::WAITING, b),
                )
            })
            .sum();
        busy += asleep.min(req_s / f.secs.max(1e-9)) * f.secs;
    }
    // Goroutines parked on a lock or a channel in a request's path waited inside it.
    busy += go_parked_in_path_s(f);
    let share = busy / req_s.max(1e-9);
    // A thread never idle, or a group whose threads all work, is where operations wait.
    // (On a CPU or waiting for one: a thread blocked all the time on a condition is not
    // saturated.)
    // A pool whose threads were all occupied (blocked in the work included) holds the
    // rest of the operations in its own queue: the pool rule speaks.
    let saturated = f.groups.iter().any(|g| {
        g.has_saturated_thread()
            || (g.threads >= 1.0 && (g.on_cpu + g.runnable.unwrap_or(0.0)) / g.threads >= 0.85)
    }) || super::queues::saturated_pool(f).is_some()
        || super::queues::blocked_event_loop(f).is_some();
    // Connections waiting in the accept queue, or dropped from it, are the server's: the
    // accept rule names them.
    let accept =
        super::queues::accept_queue(f).is_some_and(|(q, _, dropped)| q >= 1.0 || dropped >= 1.0);
    // Goroutines and Erlang processes wait inside the server without blocking a thread:
    // their threads idle while the work waits on a lock, a channel or a mailbox. Only a
    // server hardly awake at all says the time is outside it.
    let green = matches!(f.runtime(), super::Runtime::Go | super::Runtime::Beam);
    // (Awake by its own doing: the time its threads waited for a CPU others held, on a
    // busy machine, wakes no goroutine; the starvation rule says it.)
    let queued: f64 = f
        .groups
        .iter()
        .map(|g| g.runnable.unwrap_or(0.0))
        .sum::<f64>()
        * f.secs;
    let awake = (busy - queued).max(0.0) / req_s.max(1e-9);
    // Nor one whose threads were ready for most of the CPUs it could use: its goroutines
    // or processes queue inside it for them (a BEAM's run queues, Go's for a P), unseen.
    let ready = f.cpus.target.unwrap_or(0.0) + f.cpus.runnable.unwrap_or(0.0);
    let full = green && ready >= 0.7 * f.cpu_limit().0;
    if share >= 0.3 || saturated || accept || (green && awake >= 0.05) || full {
        return Vec::new();
    }

    // Responses held by the delayed ACK: the split rule names the stall from the client's
    // own receive times.
    if split_stall(f).is_some_and(|x| x.nagle) {
        return Vec::new();
    }
    let per_op = f.outcome.ops.filter(|o| *o > 0.0).map(|o| busy / o);
    let mut claim = format!(
        "each {} took {} on average, but the server's threads spent {} on it (on a CPU, runnable or blocked in its work): {} of the time is outside the server",
        f.outcome.unit,
        secs(l.mean_us / 1e6),
        per_op.map_or("little".to_string(), secs),
        pct(1.0 - share)
    );
    let p50_ms = l.p50_us / 1000.0;
    // A median at the delayed-ACK timer is Nagle's stall only if the responses could have
    // been held by it: where the load's client counted the responses that arrived in
    // parts (kiln's HTTP client does), a stall needs them split — a server that holds
    // each request 40 ms on its own timer answers them whole.
    let whole = {
        let sum = |c: &str| crate::facts::count_of(&f.values(kiln_store::columns::LOAD, c));
        match (sum("split_responses"), f.outcome.ops) {
            (Some(n), Some(ops)) if ops > 0.0 => n / ops < 0.2,
            _ => false,
        }
    };
    let nagle = !whole
        && ((p50_ms - DELAYED_ACK_MS).abs() <= 0.15 * DELAYED_ACK_MS
            || (p50_ms - 200.0).abs() <= 15.0);
    // Nothing outside to wait for: the time is the server's own queues' (work read and not
    // yet answered, waiting for a thread), not the network's.
    if !nagle && nothing_outside(f) {
        let found = inside(f, share, per_op, l.mean_us);
        return if found.is_empty() {
            held(f, share, per_op, l.mean_us)
        } else {
            found
        };
    }
    // A client that was the limit (its own CPUs full, the server's threads waiting for
    // work) is where the time outside a server that calls no other service went: the
    // client rule says so, more exactly. (Time held inside the server is said above.)
    if !nagle && f.meta.target.peers.is_empty() && !super::load::client(f).is_empty() {
        return Vec::new();
    }
    if nagle {
        claim.push_str(&format!(
            "; a median of {p50_ms:.0} ms is the delayed-ACK timer: a response written in pieces waits for the client's ACK (Nagle's algorithm) — set TCP_NODELAY on the server's sockets, or write each response at once"
        ));
    } else {
        claim.push_str(": in the network stack, the client, or a service the server waits for");
        claim.push_str(&peers_said(f));
    }
    // Where its threads waited, when an off-CPU profile says: a call to a downstream
    // service reads its socket under the program's own frame.
    // A Go server's goroutines: the calls out of it they parked in.
    let calls_out = f.goroutine_waits().map(|p| {
        let (sites, _) = go_sites(p);
        sites
            .into_iter()
            .filter(|s| {
                s.reason == WaitReason::Poll && crate::waits::go_calls_out(&[&s.primitive, &s.at])
            })
            .collect::<Vec<Site>>()
    });
    if let Some(top) = calls_out.as_ref().and_then(|c| c.first()) {
        claim.push_str(&format!(
            "; its goroutines waited in calls to other services, most in {}",
            top.label()
        ));
    } else if let Some(w) = f.waits() {
        let net: Vec<&crate::waits::Site> = w.sites_of(WaitReason::Poll).collect();
        let all: u128 = net.iter().map(|s| s.weight).sum();
        if let Some(top) = net.first().filter(|_| all > 0) {
            claim.push_str(&format!(
                "; its threads waited most in {} ({} of their network waits)",
                top.label(),
                pct(top.weight as f64 / all as f64)
            ));
        }
    }
    let mut f0 = Finding::new("outside", Class::NetworkWait, (1.0 - share) * 0.85, claim)
        .evidence(f.ev(
            if l.name.contains("latency") {
                l.name.replace('_', " ")
            } else {
                format!("{} latency", l.name)
            },
            format!(
                "mean {}, p50 {}, p99 {}",
                secs(l.mean_us / 1e6),
                secs(l.p50_us / 1e6),
                secs(l.p99_us / 1e6)
            ),
            "the load's own histograms",
        ))
        .evidence(f.ev(
            "the server's busy time",
            format!(
                "{} of the operations' {} (Little's law: their latencies summed)",
                secs(busy),
                secs(req_s)
            ),
            "/proc/PID/task/*/stat and schedstat, the off-CPU profile",
        ))
        .explains(
            (1.0 - share) * 100.0,
            format!("of the {}s' time", f.outcome.unit),
        );
    f0 = f0.check(if nagle {
        format!("strace -f -tt -e trace=write,writev,sendto,setsockopt -p {} (two writes per response, no TCP_NODELAY); ss -tni (ato:40)", f.pid())
    } else {
        format!("ss -tni; perf trace -s -p {} -- sleep {}", f.pid(), f.secs_arg())
    });
    vec![f0]
}

#[cfg(test)]
mod spawn_tests {
    use super::*;
    use kiln_model::{EventInfo, FrameKind, Profile, WeightUnit, NO_TIME};

    /// Where a program is started: the program's own frame above the fork (a Python
    /// function outside the standard library), not a thread it creates to serve.
    #[test]
    fn programs_are_started_where_the_programs_own_frame_forks() {
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let t = p.thread(Some(1), Some(2), b"python3");
        let mut add = |frames: &[(&str, FrameKind)], w: u64| {
            let ids: Vec<_> = frames
                .iter()
                .map(|(n, k)| p.frame(n.as_bytes(), *k))
                .collect();
            p.add_sample_path(&ids, w, NO_TIME, t);
        };
        let py = FrameKind::Python;
        let c = FrameKind::User;
        add(
            &[
                ("__clone3", c),
                ("start_thread", c),
                ("stamp_receipt (server.py:11)", py),
                ("run (subprocess.py:548)", py),
                ("Popen._execute_child (subprocess.py:1884)", py),
                ("__GI___vfork", c),
            ],
            3,
        );
        add(
            &[
                ("__clone3", c),
                ("start_thread", c),
                ("ThreadingMixIn.process_request (socketserver.py:705)", py),
                ("serve (server.py:40)", py),
                ("pthread_create@@GLIBC_2.34", c),
                ("create_thread", c),
                ("__clone_internal", c),
                ("__clone3", c),
                ("__x64_sys_clone3", FrameKind::Kernel),
                ("kernel_clone", FrameKind::Kernel),
            ],
            5,
        );
        assert_eq!(
            spawns(&p, &[]).map(|(at, _)| at).as_deref(),
            Some("stamp_receipt (server.py:11)")
        );
    }
}

#[cfg(test)]
mod dump_tests {
    use super::*;
    use kiln_store::JvmDump;

    fn wait(thread: &str, class: &str, method: &str, holder: Option<&str>) -> MonitorWait {
        MonitorWait {
            thread: thread.into(),
            group: "pool-N-thread-N".into(),
            method: method.into(),
            address: "0x1".into(),
            class: class.into(),
            holder: holder.map(|_| "pool-1-thread-9".into()),
            holder_method: holder.map(String::from),
            parked: false,
        }
    }

    /// N of M pool threads in K of the dumps: the monitor most waited on, counted over
    /// every dump; none when no dump caught a BLOCKED thread.
    #[test]
    fn the_most_waited_on_monitor_is_counted_over_the_dumps() {
        let pool = vec![("pool-N-thread-N".to_string(), 16), ("main".to_string(), 1)];
        let dump = |blocked| JvmDump {
            groups: pool.clone(),
            blocked,
            ..JvmDump::default()
        };
        let d = JvmDumps {
            pid: 1,
            asked: 3,
            dumps: vec![
                dump(vec![
                    wait(
                        "pool-1-thread-1",
                        "Ledger",
                        "Ledger.post",
                        Some("Ledger.post"),
                    ),
                    wait("pool-1-thread-2", "Ledger", "Ledger.post", None),
                    wait("pool-1-thread-3", "Cache", "Cache.get", None),
                ]),
                dump(Vec::new()),
                dump(vec![wait(
                    "pool-1-thread-4",
                    "Ledger",
                    "Ledger.post",
                    Some("Ledger.post"),
                )]),
            ],
            failures: Vec::new(),
        };
        let m = contended(&d).unwrap();
        assert_eq!(
            (m.class.as_str(), m.method.as_str()),
            ("Ledger", "Ledger.post")
        );
        assert_eq!((m.blocked, m.of, m.in_dumps, m.dumps), (3, 48, 2, 3));
        assert_eq!(
            (m.group.as_str(), m.holder.as_deref()),
            ("pool-N-thread-N", Some("Ledger.post"))
        );
        let none = JvmDumps {
            dumps: vec![dump(Vec::new())],
            ..d
        };
        assert_eq!(contended(&none), None);
    }
}
