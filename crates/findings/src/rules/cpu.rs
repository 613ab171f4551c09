//! The CPUs as a resource (the USE method): one thread saturated, the CPUs full of the
//! server's own work, and the server's threads ready to run but not running.
use super::{cpus, pct, secs, Runtime};
use crate::profile::{categories, in_group, kept_seconds, kept_share, top_named, with_stack};
use crate::{Class, Facts, Finding};
use kiln_store::columns as col;

/// What a saturated thread is, in its runtime's words; `hot` its kernel id when known (the
/// process's first thread is its main one: Node's threads share its name).
fn thread_kind(f: &Facts, group: &str, threads: f64, hot: Option<u32>) -> String {
    let main = match hot {
        Some(t) if !f.meta.target.pids.is_empty() => f.is_main_thread(t),
        _ => group == f.meta.target.comm || group == "MainThread",
    };
    let env = |k: &str| f.environ(k);
    match f.runtime() {
        Runtime::Node if main => "Node's event loop (the main thread)".into(),
        Runtime::Node => format!(
            "one of Node's other threads, not its event loop (a worker_threads Worker, or libuv's pool, which runs its crypto, zlib, fs and dns calls: {})",
            match env("UV_THREADPOOL_SIZE") {
                Some(n) => format!("UV_THREADPOOL_SIZE={n}"),
                None => "4 threads unless UV_THREADPOOL_SIZE says otherwise".to_string(),
            }
        ),
        Runtime::Python if threads <= 1.5 => {
            format!("the Python interpreter's only thread ('{group}')")
        }
        Runtime::Python => match hot {
            Some(t) => format!(
                "one Python thread ('{group}', tid {t}; it holds the GIL while it runs)"
            ),
            None => format!("the Python thread holding the GIL ('{group}')"),
        },
        Runtime::Beam if group.contains("scheduler") => {
            format!("one BEAM scheduler ('{group}': one Erlang process, or one at a time)")
        }
        _ if threads <= 1.5 => format!("its only '{group}' thread"),
        _ => format!("one '{group}' thread"),
    }
}

/// The CPU profile's weight per thread of `group` (all the target's threads with
/// `None`), busiest first (ties by thread id), with each thread's id; `None` without a
/// CPU profile.
fn thread_weights(f: &Facts, group: Option<&str>) -> Option<Vec<(u128, Option<u32>)>> {
    let p = f.cpu_profile()?;
    let keep = in_group(p, group);
    let mut by: std::collections::HashMap<kiln_model::ThreadId, u128> =
        std::collections::HashMap::new();
    for ((&t, &w), &k) in p.samples.thread.iter().zip(&p.samples.weight).zip(&keep) {
        if k {
            *by.entry(t).or_default() += w as u128;
        }
    }
    let mut w: Vec<(u128, kiln_model::ThreadId)> = by.into_iter().map(|(t, w)| (w, t)).collect();
    w.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1 .0.cmp(&b.1 .0)));
    let w = w
        .into_iter()
        .map(|(w, t)| (w, p.threads.get(t).and_then(|x| x.tid)))
        .collect();
    Some(w)
}

/// The CPU of group `g`'s busiest thread over the whole window (its samples in the CPU
/// profile, in CPUs) and its thread id; `None` without a CPU profile.
fn hottest_over_window(f: &Facts, g: &crate::threads::Group) -> Option<(f64, Option<u32>)> {
    let ns = f.cpu_profile()?.event.ns_per_weight()?;
    let w = thread_weights(f, Some(&g.name))?;
    let &(top, tid) = w.first()?;
    Some((top as f64 * ns / 1e9 / f.secs.max(1e-9), tid))
}

/// The CPU of the target's second busiest thread over the window against its busiest's,
/// by the CPU profile's samples; `None` without one, or with one thread.
fn second_hottest_share(f: &Facts) -> Option<f64> {
    let w = thread_weights(f, None)?;
    match w.as_slice() {
        [(top, _), (second, _), ..] if *top > 0 => Some(*second as f64 / *top as f64),
        _ => None,
    }
}

/// Whether the runtime runs its own threads (goroutines, Erlang processes) on its
/// scheduler threads: a scheduler thread's CPU is then theirs.
fn green_threads(f: &Facts) -> bool {
    matches!(f.runtime(), Runtime::Go | Runtime::Beam)
}

/// Whether group `g` has one thread saturated — the same thread over the window, not
/// one a second: work that moves from thread to thread (an Erlang process its
/// schedulers pass between them, a goroutine) makes each second's busiest thread hot
/// while no thread is, and is the serialised rule's.
fn one_hot_thread(f: &Facts, g: &crate::threads::Group) -> bool {
    g.has_saturated_thread()
        && hottest_over_window(f, g).is_none_or(|h| h.0 >= 0.7 * g.busiest.unwrap_or(0.0))
}

/// A clause for a finding about CPU: when most of `keep`'s CPU was in the kernel and one
/// system call holds a quarter of it or more, `N% of it in the kernel, M% under CALL
/// (from FUNCTION)`: the cost is the calls, not the program's own work (fewer, larger
/// calls are what lowers it). `None` otherwise.
fn kernel_clause(p: &kiln_model::Profile, keep: &[bool]) -> Option<String> {
    let k = crate::profile::kernel_time(p, keep);
    let (call, caller, w) = k.calls.first()?;
    let of_all = *w as f64 / k.total.max(1) as f64;
    if k.share() < 0.5 || of_all < 0.25 {
        return None;
    }
    let from = caller
        .as_ref()
        .map(|c| format!(", called from {c}"))
        .unwrap_or_default();
    Some(format!(
        "{} of it in the kernel, {} under the {call} system call{from}: the calls cost more than the program's own work",
        pct(k.share()),
        pct(of_all),
    ))
}

/// One thread ran a whole CPU while the server could have used more: its work is
/// serialised on that thread (an event loop, an interpreter, a single worker, one Erlang
/// process), and nothing it does goes faster with more CPUs or more clients.
///
/// False when: the server used (nearly) every CPU anyway (then it is CPU-bound); the hot
/// thread mostly waited for a CPU (starvation); several threads were hot; each second's
/// hot thread was another (the work moved between threads: serialised, not one thread's).
/// Unless the operations waited on a condition for that thread ([`super::waiting::handed_to`]:
/// a third of their time, the thread busy 80% of it and no part of those waits): then the
/// rest of the server's CPU is their waking and handing over, and the thread is the limit.
pub fn one_thread(f: &Facts) -> Vec<Finding> {
    f.one_thread.get_or_init(|| find_one_thread(f)).clone()
}

fn find_one_thread(f: &Facts) -> Vec<Finding> {
    let Some(target) = f.cpus.target else {
        return Vec::new();
    };
    // The requests waiting on a condition for a group's busiest thread (a hand-off to
    // one worker): that thread is their limit when it is busy 80% of the time, even while
    // the waiting threads' own CPU (waking, handing over) keeps the machine busy.
    // (A Python thread waiting for the GIL waits for its turn to run, as one in the run
    // queue waits for a CPU: busy too.)
    let gil_of = |tid: Option<u32>| match (f.runtime(), tid) {
        (Runtime::Python, Some(t)) => super::waiting::gil_wait_of(f, t),
        _ => 0.0,
    };
    let awaited_in = |g: &crate::threads::Group| {
        let busy = g.busiest_busy.unwrap_or(0.0).max(g.busiest.unwrap_or(0.0));
        let tid = hottest_over_window(f, g).and_then(|h| h.1);
        (busy + gil_of(tid) >= 0.8)
            .then_some(tid)
            .flatten()
            .and_then(|t| super::waiting::handed_to(f, t))
    };
    let awaited: Vec<_> = f
        .groups
        .iter()
        .filter_map(|g| Some((g, awaited_in(g)?)))
        .collect();
    let hot: Vec<_> = f.groups.iter().filter(|g| one_hot_thread(f, g)).collect();
    let (g, awaited) = match (awaited.as_slice(), hot.as_slice()) {
        ([(g, a)], _) => (*g, Some(a.clone())),
        (_, [g]) => (*g, None),
        _ => return Vec::new(),
    };
    // A runtime's scheduler thread is hot with what its runtime ran on it: one Erlang
    // process or goroutine the runtime did not move, which the serialised rule names.
    if green_threads(f) && !serialised(f).is_empty() {
        return Vec::new();
    }
    // A runtime held to one CPU by its own setting (GOMAXPROCS=1, +S 1) runs its code on
    // one thread at a time, moved between threads as they block: the setting is the
    // limit (the CPU-bound rule says it), not a thread (each second's busiest is another).
    let (limit, cap) = f.cpu_limit();
    if green_threads(f)
        && limit < 1.5
        && cap.is_some_and(|c| c.set_by_program())
        && !cpu_bound(f).is_empty()
    {
        return Vec::new();
    }
    let busiest = g.busiest.unwrap_or(0.0);
    let never_idle = g.busiest_busy.unwrap_or(busiest).max(busiest);
    let hot = hottest_over_window(f, g).and_then(|h| h.1);
    // The rest of the server: if it too ran CPUs flat out, the server is CPU-bound.
    let rest = target - busiest;
    if awaited.is_none() && (rest >= 0.5 * (limit - 1.0).max(0.5) || target >= 0.9 * limit) {
        return Vec::new();
    }
    // The other threads on a CPU or waiting for one add up to a whole thread: the work is
    // not serialised on one (a starved pool's threads are all "never idle", each waiting
    // for a CPU; the starvation rule speaks for them). Of their waits for a CPU, only the
    // share the server itself caused counts: on a machine other processes keep busy,
    // every thread that wakes waits for a CPU, busy with nothing of the server's.
    let own = 1.0 - others_share_of_wait(f);
    let others: f64 = f
        .groups
        .iter()
        .map(|g| g.on_cpu + g.runnable.unwrap_or(0.0) * own)
        .sum::<f64>()
        - (busiest + (never_idle - busiest).max(0.0) * own);
    if awaited.is_none() && others >= 1.0 {
        return Vec::new();
    }
    // Another thread nearly as much on a CPU over the window: the work is spread over
    // several (a cluster's workers, each an event loop), not serialised on one.
    if awaited.is_none() && second_hottest_share(f).is_some_and(|x| x >= 0.6) {
        return Vec::new();
    }
    let kind = thread_kind(f, &g.name, g.threads, hot);
    let gil = if awaited.is_some() { gil_of(hot) } else { 0.0 };
    let never_idle = (never_idle + gil).min(1.0);
    let mut claim = match &awaited {
        Some((at, share)) => format!(
            "{kind} was busy {} of the time (on a CPU {}, waiting for one {}{}) while the {}s waited for it at {at} ({} of their time): their work is serialised on that thread",
            pct(never_idle),
            pct(busiest),
            pct((never_idle - busiest - gil).max(0.0)),
            if gil > 0.0 {
                format!(", for the GIL {}", pct(gil))
            } else {
                String::new()
            },
            f.outcome.unit,
            pct(*share)
        ),
        // A thread that waited for a CPU a fair share of its time (others held them) is
        // busy, not on a CPU, all the time: said so, as its share says it.
        None if never_idle - busiest >= 0.15 => format!(
            "{kind} was busy {} of the time (on a CPU {}, waiting for one {}) while the server used {} of {}: its work is serialised on that thread, and more clients will not make it faster (nor more CPUs, once it has one to itself)",
            pct(never_idle),
            pct(busiest),
            pct(never_idle - busiest),
            cpus(target),
            cpus(limit)
        ),
        None => format!(
            "{kind} ran {} of a CPU while the server used {} of {}: its work is serialised on that thread, and more clients or CPUs will not make it faster",
            pct(busiest),
            cpus(target),
            cpus(limit)
        ),
    };
    // The function it ran for long at times, when those times are the slowest operations.
    if let Some(r) = super::queues::loop_runs(f) {
        claim.push_str(&format!("; it {}", r.said(f)));
    }
    // Where the clients wait for it, when they wait before it even accepts them.
    let queued = f.mean(col::TARGET, col::ACCEPT_QUEUE).unwrap_or(0.0);
    let dropped =
        crate::facts::count_of(&f.values(col::TARGET, col::LISTEN_OVERFLOWS)).unwrap_or(0.0);
    if queued >= 1.0 || dropped >= 1.0 {
        claim.push_str(&format!(
            "; connections wait in its accept queue for it ({queued:.1} on average, {} dropped from a full queue)",
            kiln_model::thousands(dropped.round() as u64)
        ));
    }
    // A thread the operations wait for limits them however much of its time it spent
    // waiting for a CPU (on a busy machine, most): it ranks by its busy time, above the
    // wait on it it explains (the condition the blocked rule sees).
    let score = match &awaited {
        Some((_, share)) => (0.6 + 0.35 * never_idle).max((share * 0.95 + 0.01).min(1.0)),
        None => 0.6 + 0.35 * busiest,
    };
    let mut finding = Finding::new(
        "one-thread",
        Class::OneThreadSaturated,
        score,
        String::new(),
    );
    if let Some(p) = f.cpu_profile() {
        let mut keep = in_group(p, Some(&g.name));
        // The thread the requests wait for, alone: the waiting threads' CPU is theirs.
        if let (Some(_), Some(tid)) = (&awaited, hot) {
            for (k, t) in keep.iter_mut().zip(&p.samples.thread) {
                *k &= p.threads.get(*t).and_then(|x| x.tid) == Some(tid);
            }
        }
        let top = top_named(p, &keep, 3);
        if let Some((name, share)) = top.first() {
            claim.push_str(&format!("; its CPU is mostly in {name} ({})", pct(*share)));
            // A library's function on a thread that runs jobs (a pool's): the job is the
            // function all of it runs under (kdf_pbkdf2_derive over SHA-256's rounds).
            if *share < 0.5 {
                if let Some((under, all)) =
                    crate::profile::dominant_frame(p, &keep, 0.8).filter(|(u, _)| u != name)
                {
                    claim.push_str(&format!(", all under {under} ({})", pct(all)));
                }
            }
            if let Some(k) = kernel_clause(p, &keep) {
                claim.push_str(&format!(", {k}"));
            }
            let whose = match (&awaited, hot) {
                (Some(_), Some(t)) => format!("the busiest '{}' thread's (tid {t})", g.name),
                _ => format!("'{}' threads'", g.name),
            };
            let mut e = f.ev(
                format!("{whose} CPU by the program's function"),
                top.iter()
                    .map(|(n, s)| format!("{n} {}", pct(*s)))
                    .collect::<Vec<_>>()
                    .join(", "),
                format!("CPU profile ({})", p.event.name),
            );
            e.profile = Some(p.event.name.clone());
            e.focus = Some(name.clone());
            finding = finding.evidence(e);
        }
    }
    let mut e = f.ev(
        format!("busiest '{}' thread's CPU", g.name),
        format!(
            "{} of a CPU (each second's busiest, averaged)",
            pct(busiest)
        ),
        "/proc/PID/task/TID/schedstat",
    );
    e.series = Some(format!(
        "target/{}",
        col::per_group(col::GROUP_BUSIEST, &g.name)
    ));
    finding = finding.evidence(e).evidence(f.ev(
        "the server's CPU",
        format!(
            "{} of {} ({} CPUs on the machine)",
            cpus(target),
            cpus(limit),
            f.cpus.machine
        ),
        "/proc/PID/stat",
    ));
    finding.claim = claim;
    // What it explains: the thread's time busy, less the part of its waits for a CPU that
    // others caused (their share of the busy CPUs): on a machine others keep busy, nearer
    // its time on a CPU (what /proc counts of it).
    let cpu_wait = (never_idle - busiest - gil).max(0.0);
    let explained = busiest + gil + cpu_wait * own;
    let of = match (gil > 0.0, cpu_wait * (1.0 - own) >= 0.01) {
        (false, false) => "of the thread's time busy (on a CPU or waiting for one)",
        (true, false) => "of the thread's time busy (on a CPU, or waiting for one or for the GIL)",
        (false, true) => "of the thread's time busy (on a CPU, or waiting for one behind the server's own threads; the rest of its wait was for CPUs others held)",
        (true, true) => "of the thread's time busy (on a CPU, waiting for the GIL, or for a CPU behind the server's own threads; the rest of its wait was for CPUs others held)",
    };
    vec![finding
        .explains(explained.min(1.0) * 100.0, of)
        .check(format!(
            "pidstat -t -p {} 1 {}   # or: top -H -p {}",
            f.pid(),
            f.secs_arg(),
            f.pid()
        ))]
}

/// Work that ran on one thread at a time, no one thread holding it: a goroutine that
/// serves every request from a channel, one Erlang process, an actor, code run under a
/// lock that spins rather than sleeps. The CPU profile's timestamps say it: the function's
/// samples never fall on two threads in the same sampling period, while it ran most of
/// the time and the server had CPUs to spare.
struct Serial {
    /// The outermost program function whose work is serialised, and its hottest function.
    name: String,
    hottest: Option<(String, f64)>,
    /// Its CPU, in CPUs.
    cpus: f64,
    /// The share of the sampling periods it ran in that had it on two threads or more.
    overlap: f64,
    /// The sampling periods it ran in.
    periods: usize,
}

/// The heaviest serialised work of `p` over `secs` seconds (see [`Serial`]): functions
/// that ran at least 0.3 of a CPU (on a machine busy with other work, the rest of its
/// time it waits for one: [`waited_for_cpu`]), the outermost (largest) of those whose
/// samples fell on two threads in at most 3% of their sampling periods.
fn serial_work(p: &kiln_model::Profile, secs: f64) -> Option<Serial> {
    use kiln_model::{FrameKind, ThreadId, NO_TIME};
    use std::collections::HashMap;
    let period = p.event.sample_period_ns.filter(|&x| x > 0)?;
    let ns = p.event.ns_per_weight()?;
    // Each stack's program functions (once each), from the root, by name: a function the
    // profile holds as several frames (code addresses of a JIT's, lines) is one function.
    let mut names: Vec<&[u8]> = Vec::new();
    let mut key_of: HashMap<&[u8], usize> = HashMap::new();
    let mut path = Vec::new();
    let funcs_of: Vec<Vec<usize>> = p
        .stacks
        .ids()
        .map(|id| {
            path.clear();
            p.stacks.path_into(id, &mut path);
            let mut out: Vec<usize> = Vec::new();
            for &f in &path {
                if matches!(p.frames.get(f).kind, FrameKind::Kernel | FrameKind::Root) {
                    continue;
                }
                let name = p.frame_name(f);
                if !kiln_model::waits::is_program_frame(&String::from_utf8_lossy(name)) {
                    continue;
                }
                let k = *key_of.entry(name).or_insert_with(|| {
                    names.push(name);
                    names.len() - 1
                });
                if !out.contains(&k) {
                    out.push(k);
                }
            }
            out
        })
        .collect();
    let mut weight: HashMap<usize, f64> = HashMap::new();
    for (&st, &w) in p.samples.stack.iter().zip(&p.samples.weight) {
        for k in funcs_of.get(st.0 as usize).into_iter().flatten() {
            *weight.entry(*k).or_default() += w as f64 * ns;
        }
    }
    let cpus_of = |k: &usize| weight.get(k).copied().unwrap_or(0.0) / 1e9 / secs;
    let mut candidates: Vec<usize> = weight
        .keys()
        .copied()
        .filter(|k| cpus_of(k) >= 0.3)
        .collect();
    // Where each function sits in its stacks: its mean depth among the program's
    // functions, by weight (a caller above its callee, a stack unwound short aside).
    let mut depth: HashMap<usize, (f64, f64)> = HashMap::new();
    for (&st, &w) in p.samples.stack.iter().zip(&p.samples.weight) {
        for (i, k) in funcs_of
            .get(st.0 as usize)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let d = depth.entry(*k).or_default();
            d.0 += i as f64 * w as f64;
            d.1 += w as f64;
        }
    }
    let depth_of = |k: &usize| depth.get(k).map_or(0.0, |(s, w)| s / w.max(1.0));
    // Largest first, then nearest the root, then by name.
    candidates.sort_by(|a, b| {
        cpus_of(b)
            .total_cmp(&cpus_of(a))
            .then(depth_of(a).total_cmp(&depth_of(b)))
            .then(names[*a].cmp(names[*b]))
    });
    // Per sampling period, the threads `k` ran on (two are enough to know): the periods
    // it ran in and the share of them on two threads, when serialised.
    let serial = |k: usize| -> Option<(usize, f64)> {
        let mut on: HashMap<u64, (ThreadId, bool)> = HashMap::new();
        for i in 0..p.samples.len() {
            let (t, th) = (p.samples.time[i], p.samples.thread[i]);
            if t == NO_TIME || th == ThreadId::NONE {
                continue;
            }
            let st = p.samples.stack[i];
            if !funcs_of.get(st.0 as usize).is_some_and(|v| v.contains(&k)) {
                continue;
            }
            let e = on.entry(t / period).or_insert((th, false));
            if e.0 != th {
                e.1 = true;
            }
        }
        let periods = on.len();
        let overlap = on.values().filter(|(_, two)| *two).count() as f64 / periods.max(1) as f64;
        (periods >= 200 && overlap <= 0.03).then_some((periods, overlap))
    };
    let first = candidates
        .iter()
        .copied()
        .find_map(|k| Some((k, serial(k)?)))?;
    // Of a chain of nearly equal weight (a function and what it calls, under it but for
    // a few stacks unwound short), the outermost serialised one: the caller.
    let (k, (periods, overlap)) = candidates
        .iter()
        .copied()
        .filter(|&c| c != first.0)
        .filter(|c| cpus_of(c) >= 0.95 * cpus_of(&first.0) && depth_of(c) < depth_of(&first.0))
        .filter_map(|c| Some((c, serial(c)?)))
        .min_by(|a, b| depth_of(&a.0).total_cmp(&depth_of(&b.0)))
        .unwrap_or(first);
    let keep =
        crate::profile::with_stack(p, |path| path.iter().any(|&f| p.frame_name(f) == names[k]));
    let hottest = top_named(p, &keep, 1).into_iter().next();
    // Its time on a CPU: the periods it ran in (one thread at a time), or its samples'
    // weight if less.
    let ran = periods as f64 * period as f64 / 1e9 / secs;
    Some(Serial {
        name: String::from_utf8_lossy(names[k]).into_owned(),
        hottest,
        cpus: cpus_of(&k).min(ran),
        overlap,
        periods,
    })
}

/// The CPUs' worth of time the threads running `name` waited for a CPU in it (the
/// `runnable` profile's weight under a frame of that name over `secs` seconds; 0 without
/// that profile): preempted in the middle of the work, which waits with them.
fn waited_for_cpu(f: &Facts, name: &str, secs: f64) -> f64 {
    let Some(p) = f.profile("runnable") else {
        return 0.0;
    };
    let keep = with_stack(p, |path| {
        path.iter().any(|&fr| p.frame_name(fr) == name.as_bytes())
    });
    kept_seconds(p, &keep) / secs.max(1e-9)
}

/// Work serialised without a thread of its own (see [`Serial`]): the server could use
/// more CPUs and more operations were in flight, but the work every operation needs ran
/// on one thread at a time, nearly all the time — on a CPU, or waiting for one in the
/// middle of it (a machine busy with other work).
///
/// False when: one thread held it, not a runtime's scheduler (the one-thread rule
/// speaks); the server used the CPUs
/// it could (CPU-bound); its threads waited on a lock (the lock's rule names it, at the
/// lock); fewer than two operations were in flight; the work ran, or waited for a CPU in
/// the middle of it, less than 0.7 of the time, unless it was three quarters of the
/// server's CPU and half a CPU at least.
pub fn serialised(f: &Facts) -> Vec<Finding> {
    f.serialised.get_or_init(|| find_serialised(f)).clone()
}

fn find_serialised(f: &Facts) -> Vec<Finding> {
    let Some(target) = f.cpus.target else {
        return Vec::new();
    };
    let (limit, _) = f.cpu_limit();
    if limit < 1.5 || target >= limit - 0.4 {
        return Vec::new();
    }
    if !green_threads(f) && f.groups.iter().any(|g| one_hot_thread(f, g)) {
        return Vec::new();
    }
    // A server of one thread runs everything on one thread at a time: that says nothing.
    // Whether that thread is the limit is the one-thread rule's to judge (by its time busy).
    if !green_threads(f) && f.groups.iter().map(|g| g.threads).sum::<f64>() <= 1.5 {
        return Vec::new();
    }
    let in_flight = f
        .outcome
        .concurrency
        .or_else(|| Some(f.request_time_s()? / f.secs));
    let Some(in_flight) = in_flight.filter(|c| *c >= 2.0) else {
        return Vec::new();
    };
    if super::waiting::lock_share(f) >= 0.1 {
        return Vec::new();
    }
    let Some(p) = f.cpu_profile() else {
        return Vec::new();
    };
    let Some(s) = serial_work(p, f.secs) else {
        return Vec::new();
    };
    let waited = waited_for_cpu(f, &s.name, f.secs);
    let occupied = (s.cpus + waited).min(1.0);
    // Or most of the server's CPU, half a CPU at least: what an Erlang process or a
    // goroutine waits in its runtime's run queue while its thread runs others (the
    // connections' work) is on no thread's account, and the serial part of the server's
    // work bounds its speed-up all the same (Amdahl).
    let of_server = (s.cpus / target.max(1e-9)).min(1.0);
    if occupied < 0.7 && (s.cpus < 0.5 || of_server < 0.75) {
        return Vec::new();
    }
    let waiting = if waited >= 0.05 {
        format!(
            ", and {} of the time waiting for one in it",
            pct(waited.min(1.0))
        )
    } else {
        String::new()
    };
    let (on, class) = match f.runtime() {
        Runtime::Python => ("the thread holding Python's GIL", Class::LockContention),
        Runtime::Go => (
            "one goroutine (or a lock that spins)",
            Class::OneThreadSaturated,
        ),
        Runtime::Beam => ("one Erlang process", Class::OneThreadSaturated),
        _ => (
            "one thread at a time (an actor, a lock that spins)",
            Class::OneThreadSaturated,
        ),
    };
    let mut claim = format!(
        "the work under {} ran on one thread at a time ({} of a CPU, {} of the server's{waiting}, on two threads at once in {} of {} sampling periods) while {:.1} {}s were in flight and the server used {} of {}: it is serialised on {on}, and more clients or CPUs will not make it faster",
        s.name,
        pct(s.cpus.min(1.0)),
        pct(of_server),
        (s.overlap * s.periods as f64).round(),
        kiln_model::thousands(s.periods as u64),
        in_flight,
        f.outcome.unit,
        cpus(target),
        cpus(limit)
    );
    if let Some((h, share)) = &s.hottest {
        if *h != s.name {
            claim.push_str(&format!("; its CPU is mostly in {h} ({})", pct(*share)));
        }
    }
    let mut e = f.ev(
        format!(
            "sampling periods {} ran in, and those it ran on two threads at once",
            s.name
        ),
        format!(
            "{} and {}; {} of a CPU",
            kiln_model::thousands(s.periods as u64),
            (s.overlap * s.periods as f64).round(),
            pct(s.cpus.min(1.0))
        ),
        format!(
            "CPU profile ({}), its samples' threads and times",
            p.event.name
        ),
    );
    e.profile = Some(p.event.name.clone());
    e.focus = Some(s.name.clone());
    let mut finding = Finding::new(
        "serialised",
        class,
        0.6 + 0.36 * occupied.max(of_server),
        claim,
    )
    .evidence(e);
    if waited >= 0.05 {
        let mut w = f.ev(
            format!("waiting for a CPU in {}", s.name),
            format!("{} of a CPU's time", pct(waited.min(1.0))),
            "runnable profile (sched_switch of a preempted thread, its stack)",
        );
        w.profile = Some("runnable".into());
        w.focus = Some(s.name.clone());
        finding = finding.evidence(w);
    }
    let finding = finding
        .evidence(f.ev(
            "the server's CPU",
            format!(
                "{} of {} ({} CPUs on the machine)",
                cpus(target),
                cpus(limit),
                f.cpus.machine
            ),
            "/proc/PID/stat",
        ))
        .explains(
            occupied * 100.0,
            "of the time, the serialised work on a CPU or waiting for one",
        );
    let check = match f.runtime() {
        Runtime::Go => "curl -s 'http://HOST/debug/pprof/goroutine?debug=1'   # one goroutine in the work, the rest waiting for it".to_string(),
        Runtime::Beam => "recon:proc_count(reductions, 5)   # in the node's shell: the busiest processes".to_string(),
        _ => format!("pidstat -t -p {} 1 {}   # no thread at a whole CPU, the process at about one", f.pid(), f.secs_arg()),
    };
    vec![finding.check(check)]
}

/// The system calls that wait for the disk to hold the data (kernel entry points, and
/// glibc's wrappers for a stack the kernel part of which was not kept).
/// The samples of `p` inside a call that waits for the disk to hold the data
/// ([`SYNC_CALLS`]).
pub(crate) fn in_sync_calls(p: &kiln_model::Profile) -> Vec<bool> {
    with_stack(p, |path| {
        path.iter().any(|&id| {
            let name = p.frame_name(id);
            SYNC_CALLS.iter().any(|s| name == s.as_bytes())
        })
    })
}

/// The seconds `p`'s samples inside a call that waits for the disk stand for (0 for a
/// profile with no time per sample).
pub(crate) fn seconds_in_sync_calls(p: &kiln_model::Profile) -> f64 {
    kept_seconds(p, &in_sync_calls(p))
}

const SYNC_CALLS: [&str; 10] = [
    "__x64_sys_fsync",
    "__x64_sys_fdatasync",
    "__x64_sys_sync_file_range",
    "__x64_sys_msync",
    "__x64_sys_sync",
    "__x64_sys_syncfs",
    "fsync",
    "fdatasync",
    "__GI_fdatasync",
    "__GI_fsync",
];

/// The server's own work filled the CPUs it could use: it is CPU-bound, and what its CPU
/// did is where to look (the categories and functions name it).
///
/// False when: the CPUs were not full; others (not the server) filled them; the server's
/// threads mostly waited for a CPU (that is starvation, said by its own rule).
pub fn cpu_bound(f: &Facts) -> Vec<Finding> {
    let Some(target) = f.cpus.target else {
        return Vec::new();
    };
    let (limit, cap) = f.cpu_limit();
    // A cgroup's quota throttles threads that are ready to run: the starvation rule names
    // it (run-queue time, the periods throttled), and a server held to a fraction of a CPU
    // is not "CPU-bound". A cap the program or its runtime set (an affinity, GOMAXPROCS,
    // +S) is this rule's.
    if cap.is_some_and(|c| !c.set_by_program()) {
        return Vec::new();
    }
    let busy = f.cpus.busy.unwrap_or(target / f.cpus.machine);
    // CPU spent inside a call that waits for the disk (the file system's work for an
    // fsync: its journal, its writeback) is the disk's cost, said by the disk rule, not
    // the program's own work.
    let in_sync = f
        .cpu_profile()
        .map_or(0.0, |p| kept_share(p, &in_sync_calls(p)));
    let target = target * (1.0 - in_sync);
    let share = target / limit;
    // A cap below the machine (a quota, an affinity, the runtime's own setting) is full
    // when the server reaches it, whatever the other CPUs do — or would have, but for the
    // time its threads waited for a CPU others held (a busy machine): ready for the cap.
    let waited = f.cpus.runnable.filter(|_| cap.is_some()).unwrap_or(0.0);
    let ready = (target + waited) / limit;
    let starved = (0.5..0.8).contains(&share) && ready >= 0.9;
    // Or nearly so, its own threads ready for the rest: queued behind each other for the
    // CPUs, not behind others (their share of the wait left out).
    let queued = share >= 0.75
        && target + f.cpus.runnable.unwrap_or(0.0) * (1.0 - others_share_of_wait(f))
            >= 0.95 * limit;
    let full =
        share >= 0.8 || starved || (cap.is_none() && (queued || (busy >= 0.9 && share >= 0.45)));
    if !full {
        return Vec::new();
    }
    let kiln = f.cpus.kiln.unwrap_or(0.0) + f.cpus.load_command.unwrap_or(0.0);
    let others: f64 = f.cpus.others.iter().map(|(_, c)| c).sum();
    // Others holding more of the CPUs than the server filled them — unless the server's
    // own threads were ready for all of them (on a CPU or waiting for one): its own work
    // would fill the machine alone, and the others' share is its starvation besides.
    let wanted = target + f.cpus.runnable.unwrap_or(0.0);
    if cap.is_none() && (others > target || kiln > target) && wanted < 0.95 * limit {
        return Vec::new();
    }
    let mut claim = format!(
        "the server's own work used {} of {}",
        cpus(target),
        cpus(limit)
    );
    if starved {
        claim.push_str(&format!(
            " and waited for a CPU {} more (ready for {}: others held the machine's CPUs meanwhile)",
            cpus(waited),
            cpus(target + waited)
        ));
    }
    if let Some(why) = cap.map(|c| c.describe()) {
        claim.push_str(&format!(
            ", all it may use: {why} lets it run on {} of the machine's {} at once — it goes no faster with more clients, only with that setting raised",
            cpus(limit),
            f.cpus.machine
        ));
    } else if share < 0.8 {
        claim.push_str(&format!(
            " and the rest went to the load generator and kiln ({}) and other processes ({}): the machine was {} busy",
            cpus(kiln),
            cpus(others),
            pct(busy)
        ));
    }
    // A cap below the machine is the server's setting, the cause to change; a full machine
    // says where to look (what the CPU did).
    let score = if cap.is_some() {
        0.6 + 0.35 * share.min(1.0)
    } else {
        0.35 + 0.2 * share.min(1.0)
    };
    let mut finding = Finding::new("cpu-bound", Class::CpuBound, score, String::new());
    if let Some(cap) = cap {
        finding = finding.evidence(f.ev("the CPUs it may use", cap.describe(), cap.source()));
    }
    if let Some(p) = f.cpu_profile() {
        let keep = in_group(p, None);
        let cats = categories(p, &keep);
        let named: Vec<String> = cats
            .0
            .iter()
            .filter(|(n, _)| !n.starts_with("other"))
            .take(3)
            .map(|(n, w)| format!("{n} {}", pct(*w as f64 / cats.1.max(1) as f64)))
            .collect();
        let top = top_named(p, &keep, 3);
        if let Some((name, s)) = top.first() {
            claim.push_str(&format!(
                "; the heaviest of the program's functions is {name} ({})",
                pct(*s)
            ));
        }
        if let Some(k) = kernel_clause(p, &keep) {
            claim.push_str(&format!("; {k}"));
        }
        let mut e = f.ev(
            "where the CPU went",
            if named.is_empty() {
                top.iter()
                    .map(|(n, s)| format!("{n} {}", pct(*s)))
                    .collect::<Vec<_>>()
                    .join(", ")
            } else {
                named.join(", ")
            },
            format!("CPU profile ({}), by category", p.event.name),
        );
        e.profile = Some(p.event.name.clone());
        e.focus = top.first().map(|t| t.0.clone());
        finding = finding.evidence(e);
    }
    // The slowest operations' slow path, when they took one: it ranks by their latency.
    if let Some(r) = super::queues::slow_runs(f) {
        claim.push_str(&format!(
            "; the slowest {}s {}",
            f.outcome.unit,
            r.said_of_path(f)
        ));
        finding.score = finding.score.max(0.9 * r.tail);
    }
    finding.claim = claim;
    vec![finding
        .evidence(f.ev(
            "the server's CPU",
            format!("{} of {}", cpus(target), cpus(limit)),
            "/proc/PID/stat",
        ))
        .explains(share * 100.0, "of the CPUs it could use")
        .check(format!(
            "perf top -p {}   # or: pidstat -u -p {} 1 {}",
            f.pid(),
            f.pid(),
            f.secs_arg()
        ))]
}

/// CPU others held while the server ran: other processes, kiln, the load's command.
fn held_by_others(f: &Facts) -> f64 {
    f.cpus.others.iter().map(|(_, c)| c).sum::<f64>()
        + f.cpus.kiln.unwrap_or(0.0)
        + f.cpus.load_command.unwrap_or(0.0)
}

/// Of the time the server's threads waited for a CPU, the share others caused (0 to 1).
///
/// More of the server's threads ready than CPUs, on a machine the server itself keeps
/// busy, wait for each other: that is the server's own load (CPU-bound), not others
/// taking the CPUs. Unless a quota throttles it (the whole wait is then the quota's), the
/// wait is the others' in the proportion of the busy CPUs they held — the smaller of what
/// the server left of them and what the others were seen to use (CPU the server's own
/// short-lived processes used, which no count of its own holds, is not the others'). The
/// programs the server ran for its work (its child processes) are its own load too.
fn others_share_of_wait(f: &Facts) -> f64 {
    let throttled = f.cpus.quota.is_some_and(|(_, t)| t > 0.05);
    match (f.cpus.busy, throttled) {
        (Some(b), false) if b > 0.0 => {
            let busy = b * f.cpus.machine;
            let own = f.cpus.target.unwrap_or(0.0) + f.cpus.children.unwrap_or(0.0);
            ((busy - own) / busy)
                .min(held_by_others(f) / busy)
                .clamp(0.0, 1.0)
        }
        _ => 1.0,
    }
}

/// The server's threads were ready to run but waited for a CPU (the kernel's run-queue
/// time): other processes, or the server's cgroup quota, had the CPU. Its share of the
/// operations' time says how much of the outcome it explains.
///
/// False when: the threads waited little for a CPU against the time they ran; the time
/// waited explains little of the operations' time.
pub fn starvation(f: &Facts) -> Vec<Finding> {
    let (Some(mut runnable), Some(target)) = (f.cpus.runnable, f.cpus.target) else {
        return Vec::new();
    };
    // Threads that yield as they spin stay runnable: that time is the busy-wait's.
    if let Some((yielded, _)) = super::runtime::yielding(f) {
        runnable *= 1.0 - yielded;
    }
    if runnable < 0.05 || runnable / (runnable + target).max(1e-9) < 0.15 {
        return Vec::new();
    }
    // A whole CPU idle all the while, and no cap of the server's own (a quota, an
    // affinity): no one held the CPUs it waited for. Its wait was the scheduler's — a woken
    // thread queued behind its waker on the waker's CPU until moved, a virtual CPU woken
    // from idle — not starvation (c-leak at 16% of 2 CPUs: 80 ms a second of it).
    let capped = f.cpus.quota.is_some_and(|(_, t)| t > 0.05) || f.cpu_limit().1.is_some();
    if !capped
        && f.cpus
            .busy
            .is_some_and(|b| b * f.cpus.machine + runnable <= f.cpus.machine - 1.0)
    {
        return Vec::new();
    }
    let ready = runnable / (runnable + target);
    let held_by_others = held_by_others(f);
    let theirs = others_share_of_wait(f);
    let waited_s = runnable * f.secs * theirs;
    let of_request = f.request_time_s().map(|r| waited_s / r.max(1e-9));
    // What it explains: of the operations' time, else of the server's working time (the
    // threads' time waiting for a CPU others held is part of it).
    let explained = super::waiting::outcome_time(f).map(|(t, of)| (waited_s / t.max(1e-9), of));
    // Without the operations' time: how many threads waited, against one waiting always.
    // Others taking the CPU is the machine's state, not the server's defect: a cause the
    // server has of its own ranks first when it explains as much.
    let mut score = of_request.map_or(ready * runnable.min(1.0) * 0.7 * theirs, |x| {
        x.min(1.0) * 0.95
    }) * ENVIRONMENT;
    // A thread every operation waits for (one never idle): its time waiting for a CPU
    // slows all of them, however small a share of their time it is.
    // A server whose threads were ready for every CPU of the machine (on one or waiting
    // for one) while others held more of them than it did: every operation queues for
    // its CPUs (in its runtime's queue, where a Go server's goroutines wait for a P, as
    // well as the kernel's), and the time its threads waited for a CPU slows all of them.
    // (With most of the CPUs its own, it is CPU-bound, its rule's; under a cap of its
    // own — a quota, GOMAXPROCS — the cap is the limit its rule names.)
    let at_limit = match f.cpu_limit() {
        (limit, None) => target + runnable >= 0.9 * limit && held_by_others > target,
        _ => false,
    };
    if at_limit || f.groups.iter().any(|g| g.has_saturated_thread()) {
        score = score.max(ready * 0.95 * ENVIRONMENT * theirs);
    }
    // An event loop waiting for a CPU holds every operation in flight with it: the share
    // of the window it waited is that share of their time, whatever the per-thread sums.
    let starved_loop = super::queues::starved_loop(f);
    let mut explained = explained;
    if let Some((_, w)) = starved_loop {
        score = score.max(w * theirs * 0.95 * ENVIRONMENT);
        explained = explained.map(|(x, of)| (x.max(w * theirs), of));
    }
    // A server mostly waiting for its own threads is the CPU-bound rule's.
    score *= (2.0 * theirs).min(1.0);
    let takers = takers(f);
    let mut claim = format!(
        "the server's threads spent {} of the time they were ready to run waiting for a CPU ({:.1} of them waiting on average)",
        pct(ready),
        runnable
    );
    match f.cpus.quota {
        // (The kernel counts the throttled time on each CPU: over a second per second
        // means throttled all the time, on more than one CPU.)
        Some((q, throttled)) if throttled > 1.0 => claim.push_str(&format!(
            "; its cgroup's CPU quota ({}) throttled it all the time ({} of throttled time per second, counted on each CPU)",
            cpus(q),
            secs(throttled)
        )),
        Some((q, throttled)) if throttled > 0.05 => claim.push_str(&format!(
            "; its cgroup's CPU quota ({}) throttled it {} of the time",
            cpus(q),
            pct(throttled)
        )),
        _ => {}
    }
    if let Some((tid, w)) = starved_loop {
        claim.push_str(&format!(
            "; its event loop (thread {tid}) waited for a CPU {} of the time, and every {} in flight with it",
            pct(w),
            f.outcome.unit
        ));
    }
    if !takers.is_empty() {
        claim.push_str(&format!("; the CPUs went to {}", takers.join(", ")));
    }
    if theirs < 0.9 {
        claim.push_str(&format!(
            "; others held {} of the busy CPUs, and that share of the wait (about {} per second) is counted as theirs",
            pct(theirs),
            secs(runnable * theirs)
        ));
    }
    let mut finding = Finding::new("starvation", Class::CpuStarvation, score, claim);
    let mut e = f.ev(
        "runnable, waiting for a CPU",
        format!(
            "{} per second (the server ran {} per second)",
            secs(runnable),
            secs(target)
        ),
        "/proc/PID/task/*/schedstat (run-queue time)",
    );
    e.series = Some(format!("target/{}", col::RUNNABLE));
    finding = finding.evidence(e);
    if let Some((tid, w)) = starved_loop {
        let mut e = f.ev(
            "its event loop, waiting for a CPU",
            format!("thread {tid}, {} of the window", pct(w)),
            "/proc/PID/task/TID/schedstat of its first thread (run-queue time)",
        );
        e.series = Some(format!("target/{}", col::MAIN_RUNNABLE));
        finding = finding.evidence(e);
    }
    if let Some(b) = f.cpus.busy {
        finding = finding.evidence(f.ev(
            "the machine",
            format!("{} busy of {} CPUs", pct(b), f.cpus.machine),
            "/proc/stat",
        ));
    }
    if let Some((x, of)) = explained {
        finding = finding.explains(x * 100.0, of);
    }
    // Ranked above its share by the machine's state: below the server's own causes that
    // explain more of the same outcome (see `run_rules`).
    finding.outside = true;
    vec![finding.check(format!(
        "perf sched timehist -p {} (or: cat /proc/{}/task/*/schedstat, second field, twice a second apart); top -b -n 1 -o %CPU",
        f.pid(),
        f.meta.target.pids.first().copied().unwrap_or(0)
    ))]
}

/// What a cause outside the server (the machine's other work) weighs against one of the
/// server's own that explains as much.
const ENVIRONMENT: f64 = 0.75;

/// Who had the CPU besides the server: the other processes over 5% of a CPU, kiln's own
/// load generator and an external load command, busiest first.
pub fn takers(f: &Facts) -> Vec<String> {
    let mut v: Vec<(String, f64)> = f
        .cpus
        .others
        .iter()
        .filter(|(_, c)| *c >= 0.05)
        .take(3)
        .map(|(n, c)| (n.clone(), *c))
        .collect();
    if let Some(k) = f.cpus.kiln.filter(|k| *k >= 0.05) {
        v.push(("kiln (its load generator and recorder)".into(), k));
    }
    if let Some(k) = f.cpus.load_command.filter(|k| *k >= 0.05) {
        v.push(("the load command".into(), k));
    }
    if let Some(k) = f
        .cpus
        .children
        .filter(|k| *k >= 0.05 && !f.children_are_copies())
    {
        v.push((
            "the programs the server ran (its child processes)".into(),
            k,
        ));
    }
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v.into_iter()
        .map(|(n, c)| format!("{n} {}", cpus(c)))
        .collect()
}
