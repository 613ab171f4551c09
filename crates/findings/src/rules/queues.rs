//! Queues measured beside the load (a broker's queue, the operations sent and not yet
//! done, the server's accept queue): where work waited, and by Little's law how long.
use super::secs;
use crate::facts::count_of;
use crate::{Class, Facts, Finding};
use kiln_model::waits::WaitReason;
use kiln_store::columns as col;

/// A backlog that grew by less than this, or less than a second of the work, kept up.
const GREW: f64 = 1000.0;

/// A queue that grew over the window: the work arrived faster than it was done, and each
/// operation waits in it (Little's law: the depth over the rate it drains at). Measured as
/// the broker counts it (a watched AMQP queue), or as the operations sent and not yet
/// completed (the load's own counts) when no queue was watched or the backlog sat before
/// it (flow control: in the sockets and the broker's connection processes).
///
/// False when: the queue (and the backlog) grew by less than a second of the work, or
/// shrank.
pub fn queue(f: &Facts) -> Vec<Finding> {
    // A stream keeps what it was sent (a log its consumers read, not a queue they empty):
    // its count is what it retains, not a backlog.
    let depth = if is_stream(f) {
        Vec::new()
    } else {
        f.values(col::LOAD, kiln_store::QUEUE_DEPTH)
    };
    let rate = f.outcome.throughput.unwrap_or(0.0);
    let unit = &f.outcome.unit;
    let threshold = GREW.max(rate);
    let mut out = Vec::new();
    let queue_grew = match (depth.first(), depth.last()) {
        // (A deep queue that did not shrink: a backlog draining is no queue growing.)
        (Some(&(a, _)), Some(&(b, _)))
            if b - a >= threshold || (b >= 2.0 * threshold && b >= a) =>
        {
            out.push(queue_finding(f, a, b));
            b - a
        }
        _ => 0.0,
    };
    // The backlog the load counted: sent and not completed, one delivery per send.
    let sent = count_of(&f.values(col::LOAD, col::SENT));
    let done = count_of(&f.values(col::LOAD, &f.meta.load.completed));
    if let (Some(s), Some(d)) = (sent, done) {
        // What the load counted lost (dropped by the broker) is not waiting anywhere.
        let backlog = s - d - s * super::load::lost_share(f);
        if backlog >= threshold && backlog > 2.0 * queue_grew {
            let wait = (rate > 0.0).then(|| backlog / rate);
            let mut claim = format!(
                "{} {unit}s were sent and not yet received over the window ({} sent, {} received){}",
                thousands(backlog),
                thousands(s),
                thousands(d),
                if depth.is_empty() {
                    String::new()
                } else {
                    ", more than the broker's queue held: the rest waited before the queue, in the sockets and the broker's connection processes (its flow control)".into()
                }
            );
            if let Some(w) = wait {
                claim.push_str(&format!(
                    "; at the {}/s they drained at that is ~{} of waiting (Little's law)",
                    thousands(rate),
                    secs(w)
                ));
            }
            let explains = latency_share(f, wait);
            let mut x = Finding::new("queue", Class::QueueGrowing, 0.5 + 0.4 * explains.unwrap_or(0.5), claim)
                .evidence(f.ev(
                    format!("{unit}s sent and not received"),
                    thousands(backlog),
                    "the load's own counts (sent, received)",
                ))
                .check("rabbitmqctl list_queues name messages_ready messages_unacknowledged consumers; rabbitmqctl list_connections name state recv_oct send_pend".to_string());
            if let Some(e) = explains {
                x = x.explains(e * 100.0, "of the latency");
            }
            out.push(x);
        }
    }
    out
}

fn queue_finding(f: &Facts, first: f64, last: f64) -> Finding {
    let unit = &f.outcome.unit;
    let rate = f.outcome.throughput.unwrap_or(0.0);
    let sent = f.outcome.sent.unwrap_or(0.0);
    let per_s = (last - first) / f.secs.max(1e-9);
    let wait = (rate > 0.0).then(|| last / rate);
    let name = queue_name(&f.meta.load.argv)
        .map(|q| format!(" '{}'", kiln_model::text::clean_cut(q, 80)))
        .unwrap_or_default();
    // A deep queue that did not grow did not drain either: said as it was.
    let how = if last - first >= GREW.max(rate) {
        format!(
            "grew from {} to {} {unit}s (+{}/s)",
            thousands(first),
            thousands(last),
            thousands(per_s)
        )
    } else {
        format!(
            "held {} {unit}s and did not drain ({} at the end)",
            thousands(first),
            thousands(last)
        )
    };
    let mut claim = format!(
        "the broker's queue{name} {how}: publishers sent {}/s and consumers took {}/s",
        thousands(sent),
        thousands(rate)
    );
    if let Some(w) = wait {
        claim.push_str(&format!(
            "; a {unit} at the end waits ~{} in it (Little's law: the depth over the rate it drains at)",
            secs(w)
        ));
    }
    let explains = latency_share(f, wait);
    let mut e = f.ev(
        "queue depth (messages ready)",
        format!("{} → {}", thousands(first), thousands(last)),
        "the broker's own count (passive queue.declare, as rabbitmqctl list_queues shows)",
    );
    e.series = Some(format!("{}/{}", col::LOAD, kiln_store::QUEUE_DEPTH));
    let mut x = Finding::new("queue", Class::QueueGrowing, 0.6 + 0.35 * explains.unwrap_or(0.6), claim)
        .evidence(e)
        .check("rabbitmqctl list_queues name messages_ready messages_unacknowledged consumers (twice, seconds apart)".to_string());
    if let Some(e) = explains {
        x = x.explains(e * 100.0, "of the latency");
    }
    x
}

/// Whether the load's queue is a RabbitMQ stream (`x-queue-type=stream` among the queue's
/// arguments on its command line, as `kiln load amqp --queue-args` and PerfTest's
/// `--queue-args` take them).
pub(crate) fn is_stream(f: &Facts) -> bool {
    f.meta
        .load
        .argv
        .iter()
        .any(|a| a.contains("x-queue-type=stream"))
}

/// The queue a load's command line names (`-u NAME`, `--queue NAME`, `--queue=NAME`, as
/// PerfTest and `kiln load amqp` take it).
fn queue_name(argv: &[String]) -> Option<&str> {
    argv.iter().enumerate().find_map(|(i, a)| match a.as_str() {
        "-u" | "--queue" => argv.get(i + 1).map(String::as_str),
        _ => a.strip_prefix("--queue="),
    })
}

/// The operations sent and not yet completed from the load's start to the window's end
/// (the load's own counts, one completion per send): the backlog the broker held then,
/// whether built in the window or before it. `None` when the load counts neither.
pub(crate) fn backlog_at_end(f: &Facts) -> Option<f64> {
    let w = kiln_store::Window {
        name: String::new(),
        start_ns: 0,
        end_ns: f.window.end_ns,
    };
    let t = f.table(col::LOAD);
    let count = |c: &str| count_of(&kiln_store::window::values(t, c, &w));
    let sent = count(col::SENT)?;
    // (What the load counted lost, the broker dropped: it waits nowhere.)
    Some(sent - count(&f.meta.load.completed)? - sent * super::load::lost_share(f))
}

/// Whether the operations waited in a backlog the broker held: a queue that grew, the
/// publishers blocked by its flow control, or messages sent and not yet received at the
/// window's end (built before the window, drained in it) — time inside the broker, which
/// no thread's state shows (found once).
pub(crate) fn held_in_broker(f: &Facts) -> bool {
    *f.held_in_broker.get_or_init(|| {
        let drain = f.outcome.throughput.unwrap_or(0.0);
        !queue(f).is_empty()
            || !super::load::held_back(f).is_empty()
            || backlog_at_end(f).is_some_and(|b| b >= GREW.max(drain))
    })
}

/// The share of the mean latency a wait of `wait` seconds is.
fn latency_share(f: &Facts, wait: Option<f64>) -> Option<f64> {
    let l = f.outcome.latency.as_ref()?;
    let w = wait?;
    (l.mean_us > 0.0).then(|| (w * 1e6 / l.mean_us).min(1.0))
}

/// The server held as many files open as it may (`ulimit -n`, RLIMIT_NOFILE): each
/// connection is one, so at the limit `accept()` fails (EMFILE) and new connections wait
/// in the listen queue, are dropped from it, or are reset — and a server that polls its
/// listener may spin on it, readable and never accepted.
///
/// False when: the limit is unknown or unlimited; the open files stayed under 95% of it.
pub fn open_files(f: &Facts) -> Vec<Finding> {
    let Some(limit) = f.meta.target.open_files_limit.filter(|l| *l > 0) else {
        return Vec::new();
    };
    let open = f.values(col::TARGET, col::OPEN_FILES);
    let Some(most) = open.iter().map(|v| v.0).reduce(f64::max) else {
        return Vec::new();
    };
    let at = open
        .iter()
        .filter(|v| v.0 >= 0.95 * limit as f64)
        .map(|v| v.1)
        .sum::<f64>();
    let secs: f64 = open.iter().map(|v| v.1).sum();
    if most < 0.95 * limit as f64 || secs <= 0.0 {
        return Vec::new();
    }
    let share = at / secs;
    let queued = f.mean(col::TARGET, col::ACCEPT_QUEUE).unwrap_or(0.0);
    let dropped = count_of(&f.values(col::TARGET, col::LISTEN_OVERFLOWS)).unwrap_or(0.0);
    let mut claim = format!(
        "the server was at its open-files limit {2} of the window ({0} files open, the limit {1}: ulimit -n): each connection is one, so at the limit accept() fails (EMFILE) and new connections wait or are refused",
        thousands(most),
        thousands(limit as f64),
        super::pct(share)
    );
    if queued >= 1.0 {
        claim.push_str(&format!(
            "; {queued:.1} connections waited in its listen queue on average"
        ));
    }
    claim.push_str(" — raise the limit (LimitNOFILE= in its systemd unit, ulimit -n where it starts) or hold fewer files");
    let mut e = f.ev(
        "open files, the most",
        format!(
            "{} of a limit of {}",
            thousands(most),
            thousands(limit as f64)
        ),
        "/proc/PID/fd and /proc/PID/limits (Max open files)",
    );
    e.series = Some(format!("{}/{}", col::TARGET, col::OPEN_FILES));
    // The cause of the accept queue it fills (whose own finding is at most 0.97).
    let score = if share >= 0.5 && (queued >= 1.0 || dropped >= 1.0) {
        0.98
    } else {
        0.6 + 0.35 * share
    };
    vec![
        Finding::new("open-files", Class::OpenFilesLimit, score, claim)
            .evidence(e)
            .check(format!(
                "ls /proc/{0}/fd | wc -l; grep 'open files' /proc/{0}/limits",
                f.pid()
            )),
    ]
}

/// The server's accept queue over the window: its mean length, its longest, and the
/// connections dropped from it (`ListenOverflows`). `None` where none was read.
pub(crate) fn accept_queue(f: &Facts) -> Option<(f64, f64, f64)> {
    let queue = f
        .mean(col::TARGET, col::ACCEPT_QUEUE)
        .or_else(|| f.mean(col::LOAD, "accept_backlog"));
    let max = f
        .values(col::TARGET, col::ACCEPT_QUEUE)
        .iter()
        .chain(f.values(col::LOAD, "accept_backlog").iter())
        .map(|(v, _)| *v)
        .fold(0.0, f64::max);
    // The kernel counts drops per network namespace, every listener's: they are the
    // server's only when its own queue was seen holding a connection (a queue that
    // overflows is full; one seen empty at every sample dropped nothing — the drops were
    // another listener's, a neighbour's on the same machine).
    let dropped = count_of(&f.values(col::TARGET, col::LISTEN_OVERFLOWS)).unwrap_or(0.0)
        * if max >= 1.0 { 1.0 } else { 0.0 };
    queue.map(|q| (q, max, dropped))
}

/// Connections waited in the server's accept queue (its listening sockets' Recv-Q, as `ss
/// -lnt` shows it), or were dropped from a full one (`ListenOverflows`): the server takes
/// new connections slower than they come, and each waits before anything is done for it.
///
/// False when: the queue was empty (under one connection on average) and none was
/// dropped (drops counted while its queue was seen empty at every sample are another
/// listener's).
pub fn accept(f: &Facts) -> Vec<Finding> {
    let Some((q, max, dropped)) = accept_queue(f) else {
        return Vec::new();
    };
    if q < 1.0 && dropped < 1.0 {
        return Vec::new();
    }
    let clients = f.outcome.concurrency;
    let waiting = clients.map(|c| (q / c.max(1.0)).min(1.0));
    let mut claim = format!(
        "connections waited in the server's accept queue: {:.1} on average (at most {max:.0})",
        q
    );
    match clients {
        // More than the load held: connections it gave up on (timed out, closed and
        // replaced) stayed in the queue until the server took them.
        Some(c) if q > c + 0.5 => claim.push_str(&format!(
            ", more than the {c:.0} the load kept open: connections it gave up on and replaced stayed queued"
        )),
        Some(c) => claim.push_str(&format!(" of the {c:.0} the load kept open or opening")),
        None => {}
    }
    if dropped >= 1.0 {
        claim.push_str(&format!(
            "; {} were dropped from a full queue (ListenOverflows)",
            thousands(dropped)
        ));
    }
    claim.push_str(": the server accepts slower than clients connect");
    // Why, when the threads say so: one of them never idle (it accepts between requests).
    if let Some(g) = f.groups.iter().find(|g| g.has_saturated_thread()) {
        claim.push_str(&format!(
            ", its busiest '{}' thread busy {} of the time (on a CPU or waiting for one)",
            g.name,
            super::pct(g.busiest_busy.or(g.busiest).unwrap_or(1.0).min(1.0))
        ));
    }
    // A dropped connection waits for the client's SYN to be sent again (a second, then
    // more): drops outweigh any other time outside the server. Without drops, the queue
    // weighs what it explains (Little's law: the share of the clients waiting in it is the
    // share of their time), as every other wait does: a step's new connections waiting a
    // moment to be accepted rank below a lock that holds half the requests' time. At most
    // 0.8: a thread that never idles, the cause of such a queue, ranks above it.
    // A dropped connection's client waits for its SYN to be sent again, a second at the
    // least: by Little's law the drops hold (drops a second × 1 s) of the clients — when
    // that is most of them, the drops are what the clients wait on, above the thread
    // behind them (whose own finding is at most 0.95).
    let dropped_share = clients.map(|c| (dropped / f.secs.max(1e-9) / c.max(1.0)).min(1.0));
    let score = match (dropped >= 1.0, waiting) {
        (true, w) => 0.85 + 0.12 * w.unwrap_or(0.5).max(dropped_share.unwrap_or(0.0)),
        (false, Some(w)) => 0.8 * w,
        (false, None) => 0.55,
    };
    let mut e = f.ev(
        "accept queue",
        format!("{q:.1} on average, {max:.0} at most"),
        "/proc/PID/net/tcp (the listening sockets' receive queue)",
    );
    e.series = Some(format!("{}/{}", col::TARGET, col::ACCEPT_QUEUE));
    let mut x = Finding::new("accept", Class::AcceptBacklog, score, claim)
        .evidence(e)
        .check("ss -lnt (Recv-Q of the listener, twice); nstat -az TcpExtListenOverflows TcpExtListenDrops".to_string());
    match (waiting, dropped_share.filter(|_| dropped >= 1.0)) {
        (Some(w), Some(d)) if d > w => x = x.explains(
            d * 100.0,
            "of the clients, waiting for a dropped SYN to be sent again (1 s each at the least)",
        ),
        (Some(w), _) => x = x.explains(w * 100.0, "of the clients, waiting to be accepted"),
        _ => {}
    }
    vec![x]
}

/// What occupies a pool's threads in the work: a lock, the disk, a sleep — waits the
/// program's code asked for. (A condition or an event poll is how a thread waits for work
/// too: a collector's threads, an idle pool's.)
const IN_THE_WORK: [WaitReason; 4] = [
    WaitReason::Lock,
    WaitReason::Io,
    WaitReason::Sleep,
    WaitReason::Write,
];

/// A group's time blocked in the work ([`IN_THE_WORK`]), by why, the heaviest first.
/// From the off-CPU profile when the run recorded one; else, for a group that holds
/// (nearly) all the target's threads, from the states `wchan` gave each second (the disk,
/// a sleep — a futex is left out: an idle pool waits on one too).
fn in_the_work(f: &Facts, g: &crate::threads::Group) -> Vec<(WaitReason, f64)> {
    let mut parts: Vec<(WaitReason, f64)> = if f.offcpu().is_some() {
        IN_THE_WORK.iter().map(|&r| (r, g.blocked_for(r))).collect()
    } else {
        let all = f.mean(col::TARGET, col::THREADS).unwrap_or(g.threads);
        if g.threads < 0.9 * all {
            return Vec::new();
        }
        [("disk", WaitReason::Io), ("sleep", WaitReason::Sleep)]
            .into_iter()
            .filter_map(|(bucket, r)| {
                let n = f.mean(col::TARGET, &col::per_group(col::WAITING, bucket))?;
                Some((r, n.min(g.blocked)))
            })
            .collect()
    };
    parts.retain(|(_, t)| *t > 0.0);
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    parts
}

/// A group's time on a CPU or waiting for one, and blocked in the work. The threads of
/// its name that polled for events most of the window (event loops beside a pool) are
/// not the pool's: their CPU and their wait for one are left out — on a machine others
/// keep busy, a dozen event loops waiting for CPUs would otherwise fill the pool's time.
fn occupied(f: &Facts, g: &crate::threads::Group) -> (f64, f64) {
    let mut cpu = g.on_cpu + g.runnable.unwrap_or(0.0);
    if g.entry.is_none() {
        if let Some(tids) = poller_tids(f).get(&g.name).filter(|t| !t.is_empty()) {
            cpu = (cpu - pollers_busy(f, g, tids)).max(0.0);
        }
    }
    let blocked: f64 = in_the_work(f, g).iter().map(|(_, t)| t).sum();
    (cpu, blocked.min(g.blocked))
}

/// The time the threads `tids` of group `g` were on a CPU (the CPU profile's samples of
/// them) and waiting for one (the group's run-queue time in the share of it the runnable
/// profile gives them; without it, in the share of the group's threads they are), in
/// thread-seconds per second.
fn pollers_busy(f: &Facts, g: &crate::threads::Group, tids: &[u32]) -> f64 {
    let secs = f.secs.max(1e-9);
    let on = f
        .cpu_profile()
        .map(|p| {
            let cpu = thread_cpu(p);
            tids.iter().filter_map(|t| cpu.get(t)).sum::<f64>() / secs
        })
        .unwrap_or(0.0)
        .min(g.on_cpu);
    let share = f
        .profile("runnable")
        .and_then(|p| {
            let (mut theirs, mut all) = (0u128, 0u128);
            let of_group: std::collections::HashSet<u32> = p
                .threads
                .iter()
                .filter(|(_, t)| crate::threads::group_of(p.strings.get(t.name)) == g.name)
                .filter_map(|(_, t)| t.tid)
                .collect();
            for (tid, _, w) in by_thread(p) {
                if !of_group.contains(&tid) {
                    continue;
                }
                all += w as u128;
                if tids.contains(&tid) {
                    theirs += w as u128;
                }
            }
            (all > 0).then(|| theirs as f64 / all as f64)
        })
        .unwrap_or(tids.len() as f64 / g.threads.max(1.0))
        .min(1.0);
    on + g.runnable.unwrap_or(0.0) * share
}

/// The thread group whose every thread was occupied in the work's path nearly all the
/// time, mostly blocked in it (a lock, the disk, a sleep), while more operations were in
/// flight than it has threads: a pool that is the limit — or one thread that serves every
/// operation (an event loop, a single-threaded server) blocked in its work. The group,
/// the operations in flight on average (Little's law), and the pool's threads (the
/// group's, less those that polled for events most of the window).
pub fn saturated_pool(f: &Facts) -> Option<(crate::threads::Group, f64, f64)> {
    // Goroutines and Erlang processes wait without holding a thread.
    if matches!(f.runtime(), super::Runtime::Go | super::Runtime::Beam) {
        return None;
    }
    let in_flight = f.request_time_s()? / f.secs.max(1e-9);
    let total = |g: &crate::threads::Group| {
        let (c, b) = occupied(f, g);
        c + b
    };
    // A lone thread serves the operations when the server's CPU is mostly its own (a
    // JVM's main thread parked in join, a signal thread asleep, do no work).
    let target_cpu = f.cpus.target.unwrap_or(0.0);
    let serves = |g: &crate::threads::Group| {
        g.threads >= 1.5 || (g.threads >= 0.5 && g.on_cpu > 0.0 && g.on_cpu >= 0.5 * target_cpu)
    };
    let pollers = pollers_by_group(f);
    pools(f)
        .iter()
        .filter(|g| serves(g) && in_flight >= 1.5 * pool_threads(g, &pollers).max(1.0))
        .filter(|g| {
            let (cpu, blocked) = occupied(f, g);
            // Occupied on CPUs alone is the CPUs' limit, not the pool's: their rules speak.
            // (Time waiting for a CPU is the machine's: the threads' own CPU is what the
            // blocked time must outweigh.)
            (cpu + blocked) / pool_threads(g, &pollers) >= 0.9 && blocked > g.on_cpu
        })
        .max_by(|a, b| total(a).total_cmp(&total(b)))
        .map(|g| (g.clone(), in_flight, pool_threads(g, &pollers)))
}

/// The server's pools of threads: its thread groups, a name that holds two pools or more
/// split into one per entry ([`pools_by_entry`]).
fn pools(f: &Facts) -> Vec<crate::threads::Group> {
    let split = pools_by_entry(f);
    let mut out: Vec<crate::threads::Group> = f
        .groups
        .iter()
        .filter(|g| !split.iter().any(|s| s.name == g.name))
        .cloned()
        .collect();
    out.extend(split);
    out
}

/// A pool of threads and how occupied it was ([`most_occupied`]).
#[derive(Debug)]
pub struct Occupied {
    /// The group, or one entry's threads of a name that holds two pools.
    pub group: crate::threads::Group,
    /// Its threads' time on a CPU, ready for one, or blocked in the work (0–1).
    pub share: f64,
    /// Its threads (a pool's: those of its name that polled for events left out).
    pub threads: f64,
    /// The heaviest wait in its work: why, thread-seconds per second.
    pub heaviest: Option<(WaitReason, f64)>,
}

/// The most occupied of the server's pools of threads (a group, or one entry's threads of
/// a name that holds two pools: [`pools_by_entry`]), by its threads' time on a CPU, ready
/// for one, or blocked in the work.
pub fn most_occupied(f: &Facts) -> Option<Occupied> {
    let pollers = pollers_by_group(f);
    pools(f)
        .iter()
        .map(|g| {
            let (cpu, blocked) = occupied(f, g);
            let n = pool_threads(g, &pollers).max(1.0);
            (g, ((cpu + blocked) / n).min(1.0), n)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(g, share, threads)| Occupied {
            group: g.clone(),
            share,
            threads,
            heaviest: in_the_work(f, g).first().copied(),
        })
}

/// The thread groups whose name holds two pools or more (Node's libuv `worker`s and V8's
/// platform workers, all 'node'), split by the function each thread was started in: a
/// group per entry that at least two threads run, its figures from the profiles (CPU,
/// runnable, off-CPU, per thread). Empty without an off-CPU profile and a CPU profile, or
/// when every name holds one pool (its threads started in one function, the process's
/// first thread aside).
fn pools_by_entry(f: &Facts) -> Vec<crate::threads::Group> {
    use std::collections::HashMap;
    let (Some(off), Some(cpu)) = (f.offcpu(), f.cpu_profile()) else {
        return Vec::new();
    };
    let entries = thread_entries(&[off, cpu]);
    let mut names: HashMap<u32, String> = HashMap::new();
    for p in [off, cpu] {
        for (_, t) in p.threads.iter() {
            if let Some(tid) = t.tid {
                names
                    .entry(tid)
                    .or_insert_with(|| crate::threads::group_of(p.strings.get(t.name)));
            }
        }
    }
    // Per name, per entry, its threads.
    let mut by: HashMap<&str, HashMap<&str, Vec<u32>>> = HashMap::new();
    for (tid, e) in &entries {
        if let Some(n) = names.get(tid) {
            by.entry(n).or_default().entry(e).or_default().push(*tid);
        }
    }
    let secs = f.secs.max(1e-9);
    let on = thread_cpu(cpu);
    let ready = f.profile("runnable").map(thread_cpu);
    let waits = thread_waits(off);
    let mut out = Vec::new();
    for (name, pools) in by {
        let pools: Vec<(&str, Vec<u32>)> =
            pools.into_iter().filter(|(_, t)| t.len() >= 2).collect();
        if pools.len() < 2 {
            continue;
        }
        for (entry, tids) in pools {
            let sum =
                |m: &HashMap<u32, f64>| tids.iter().filter_map(|t| m.get(t)).sum::<f64>() / secs;
            let threads = tids.len() as f64;
            let on_cpu = sum(&on);
            let runnable = ready.as_ref().map(sum);
            let blocked = (threads - on_cpu - runnable.unwrap_or(0.0)).max(0.0);
            let mut blocked_by: Vec<(WaitReason, f64)> = Vec::new();
            let mut add = |r: WaitReason, t: f64| match blocked_by.iter_mut().find(|(x, _)| *x == r)
            {
                Some((_, v)) => *v += t,
                None => blocked_by.push((r, t)),
            };
            for w in tids.iter().filter_map(|t| waits.get(t)) {
                add(WaitReason::Idle, w.polled_s / secs);
                for &(r, t) in &w.by_reason {
                    add(r, t / secs);
                }
            }
            // A block lasts until the thread runs again (its wait for a CPU included):
            // the reasons share the time the threads were neither on a CPU nor ready.
            let all: f64 = blocked_by.iter().map(|(_, t)| t).sum();
            if all > blocked && all > 0.0 {
                for (_, t) in &mut blocked_by {
                    *t *= blocked / all;
                }
            }
            out.push(crate::threads::Group {
                name: name.to_string(),
                threads,
                on_cpu,
                runnable,
                blocked,
                blocked_by,
                entry: Some(entry.to_string()),
                ..Default::default()
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name).then(a.entry.cmp(&b.entry)));
    out
}

/// A pool that is one entry's threads of a name, in words: ` started in worker (libuv's
/// thread pool)`, and where its size is set (` (UV_THREADPOOL_SIZE; 4 unless set)`) when
/// kiln knows the runtime's pool.
pub(crate) fn entry_said(f: &Facts, entry: &str) -> (String, String) {
    let libuv = f.runtime() == super::Runtime::Node && entry == "worker";
    if libuv {
        let set = f
            .environ("UV_THREADPOOL_SIZE")
            .map(|v| format!("set to {v} in its environment"))
            .unwrap_or_else(|| "4 unless set".into());
        (
            " started in worker (libuv's thread pool: file system calls, DNS lookups, crypto and zlib run there)".into(),
            format!(" (UV_THREADPOOL_SIZE, {set})"),
        )
    } else {
        (format!(" started in {entry}"), String::new())
    }
}

/// Per thread (by its kernel id), the function it was started in: the frame above its
/// start (`start_thread`, a `clone`) at its stacks' root, the most time over `profiles`.
/// Threads whose stacks show no start (the process's first thread, stacks cut short) have
/// none.
fn thread_entries(profiles: &[&kiln_model::Profile]) -> std::collections::HashMap<u32, String> {
    use std::collections::HashMap;
    const START: &[&[u8]] = &[
        b"__clone3",
        b"__clone",
        b"clone",
        b"clone3",
        b"__GI___clone3",
        b"__GI___clone",
        b"start_thread",
        b"thread_start",
    ];
    let mut by: HashMap<u32, HashMap<String, f64>> = HashMap::new();
    let mut path = Vec::new();
    for p in profiles {
        let ns = p.event.ns_per_weight().unwrap_or(1.0);
        let mut of_stack: HashMap<u32, Option<String>> = HashMap::new();
        for (tid, st, w) in by_thread(p) {
            let entry = of_stack.entry(st.0).or_insert_with(|| {
                path.clear();
                p.stacks.path_into(st, &mut path);
                // (The root may be the thread's name, as perf script's folding puts it.)
                let first = path
                    .iter()
                    .take(3)
                    .position(|&id| START.contains(&p.frame_name(id)))?;
                path[first..]
                    .iter()
                    .map(|&id| p.frame_name(id))
                    .find(|n| !START.contains(n))
                    .map(|n| String::from_utf8_lossy(n).into_owned())
            });
            if let Some(e) = entry {
                *by.entry(tid).or_default().entry(e.clone()).or_default() += w as f64 * ns;
            }
        }
    }
    by.into_iter()
        .filter_map(|(tid, m)| {
            m.into_iter()
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
                .map(|(e, _)| (tid, e))
        })
        .collect()
}

/// Per thread group, its threads that waited for events most of the window and blocked
/// in little else (an event loop, an acceptor: most of their blocked time polling or
/// reading idle connections),
/// by the off-CPU profile: a pool's threads that share their name with such a thread (a
/// Python or Node process's threads are all named after it) are the group less these.
///
/// With the CPU profile beside it, a group's threads that neither profile saw are counted
/// with them: a thread blocked the whole window in one wait that began before it and had
/// not ended (a pre-forking server's master in `wait()`, a signal thread) did no work.
fn pollers_by_group(f: &Facts) -> Vec<(String, f64)> {
    if f.offcpu().is_none() {
        return Vec::new();
    }
    let mut out: Vec<(String, f64)> = Vec::new();
    let mut add = |g: &str, n: f64| match out.iter_mut().find(|o| o.0 == g) {
        Some(o) => o.1 += n,
        None => out.push((g.to_string(), n)),
    };
    for (g, tids) in poller_tids(f) {
        add(g, tids.len() as f64);
    }
    for g in &f.groups {
        let silent = silent_threads(f, g);
        if silent >= 1.0 {
            add(&g.name, silent);
        }
    }
    out
}

/// The threads that waited for events (a poll, an idle connection's read, a runtime
/// idling) half the window or more and in the work under a tenth of it, by group, from
/// the off-CPU profile (found once).
fn poller_tids<'f>(f: &'f Facts<'_>) -> &'f std::collections::HashMap<String, Vec<u32>> {
    f.pollers.get_or_init(|| {
        let mut out: std::collections::HashMap<String, Vec<u32>> = Default::default();
        let Some(p) = f.offcpu() else {
            return out;
        };
        let names: std::collections::HashMap<u32, String> = p
            .threads
            .iter()
            .filter_map(|(_, t)| Some((t.tid?, crate::threads::group_of(p.strings.get(t.name)))))
            .collect();
        for (tid, w) in &thread_waits(p) {
            // (A thread that also blocks in the work — a thread per connection reading its
            // client, then taking a lock — serves the operations: it is the pool, however
            // long its client keeps it reading.)
            if w.polled_s < 0.5 * f.secs || w.work_s >= 0.1 * f.secs {
                continue;
            }
            if let Some(g) = names.get(tid) {
                out.entry(g.clone()).or_default().push(*tid);
            }
        }
        for v in out.values_mut() {
            v.sort_unstable();
        }
        out
    })
}

/// The threads of group `g` that neither the off-CPU nor the CPU profile saw: blocked the
/// whole window in one wait that began before it (see [`pollers_by_group`]); 0 without
/// both profiles, when they saw none of the group, or when the target is one process (an
/// idle pool's thread can wait the whole window for work: only a master process beside
/// its workers is set apart so).
fn silent_threads(f: &Facts, g: &crate::threads::Group) -> f64 {
    let (Some(off), Some(cpu)) = (f.offcpu(), f.cpu_profile()) else {
        return 0.0;
    };
    // (An entry's threads are those the profiles saw.)
    if g.entry.is_some() {
        return 0.0;
    }
    if f.meta.target.pids.len() < 2 {
        return 0.0;
    }
    let mut seen: std::collections::HashSet<u32> = Default::default();
    for p in [off, cpu] {
        let mut ids = std::collections::HashSet::new();
        for th in &p.samples.thread {
            ids.insert(*th);
        }
        for id in ids {
            if let Some(t) = p.threads.get(id) {
                if crate::threads::group_of(p.strings.get(t.name)) == g.name {
                    if let Some(tid) = t.tid {
                        seen.insert(tid);
                    }
                }
            }
        }
    }
    let seen = seen.len() as f64;
    if seen < 1.0 {
        return 0.0;
    }
    (g.threads - seen).round().max(0.0)
}

/// The threads of group `g` that may be a pool's: all of them but those that waited for
/// events most of the window (see [`pollers_by_group`]), when some did not.
fn pool_threads(g: &crate::threads::Group, pollers: &[(String, f64)]) -> f64 {
    if g.entry.is_some() {
        return g.threads;
    }
    let polling = pollers.iter().find(|p| p.0 == g.name).map_or(0.0, |p| p.1);
    if g.threads - polling >= 0.5 {
        g.threads - polling
    } else {
        g.threads
    }
}

/// Every thread of a pool was occupied all the time while more operations were in flight
/// than it has threads: the rest waited inside the server for a thread (its pool's queue),
/// and what occupied the threads (their CPU, or the wait they were blocked in, at the
/// program's frame) is all of the operations' time — the pool is the limit.
///
/// False when: no group's threads were all occupied (a pool with idle threads is not the
/// limit); no more operations were in flight than the pool has threads (thread per
/// connection); the runtime schedules its own tasks on threads (Go, the BEAM).
pub fn pool(f: &Facts) -> Vec<Finding> {
    let Some((g, in_flight, threads)) = saturated_pool(f) else {
        return Vec::new();
    };
    let g = &g;
    let (cpu, blocked) = occupied(f, g);
    let occupied = cpu + blocked;
    // Beside the pool, threads of its name that polled for events (an event loop), and
    // those that waited the whole window without working (a master waiting for its
    // workers).
    let silent = silent_threads(f, g);
    let polling = g.threads - threads - silent;
    let besides = if polling >= 0.5 {
        format!(
            " (besides {polling:.0} of its name that polled for events: {})",
            if polling < 1.5 {
                "an event loop"
            } else {
                "event loops"
            }
        )
    } else {
        String::new()
    };
    // What occupied the threads, the heaviest first.
    let parts = in_the_work(f, g);
    // A saturated pool is mostly blocked in the work: there is a heaviest wait.
    let Some(&(reason, t)) = parts.first() else {
        return Vec::new();
    };
    let waiting = ((in_flight - threads) / in_flight).clamp(0.0, 1.0);
    let site = f
        .waits()
        .and_then(|w| w.sites_of(reason).next().map(|s| s.label()));
    let (class, what) = super::waiting::waited_for(reason, f, None);
    let doing = format!(
        "{} of it blocked: {what}{}",
        super::pct(t / occupied.max(1e-9)),
        site.map(|s| format!(" in {s}")).unwrap_or_default()
    );
    let busy = super::pct((occupied / threads.max(1e-9)).min(1.0));
    let unit = &f.outcome.unit;
    let others = (in_flight - threads).max(0.0);
    let mut claim = if threads < 1.5 {
        format!(
            "one '{}' thread serves every {unit} and was occupied {busy} of the time ({doing}) while {in_flight:.1} {unit}s were in flight on average: the other {others:.1} waited inside the server for it (Little's law: {} of their time) — the thread is the limit: take the wait off it (asynchronous, or on other threads), or less time in each",
            g.name,
            super::pct(waiting)
        )
    } else {
        // A pool of processes (a pre-forking server's workers): each thread its own.
        let processes = g.entry.is_none() && f.meta.target.pids.len() as f64 >= threads;
        let (started, more) = match &g.entry {
            Some(e) => entry_said(f, e),
            None => (String::new(), String::new()),
        };
        format!(
            "all {:.0} '{}' {}{started}{besides} were occupied {busy} of the time ({doing}) while {in_flight:.1} {unit}s were in flight on average: the other {others:.1} waited inside the server for {} (Little's law: {} of their time) — the pool is the limit: more {}{more}, or less time in each",
            threads,
            g.name,
            if processes { "worker processes" } else { "threads" },
            if processes { "a worker" } else { "a thread" },
            super::pct(waiting),
            if processes { "workers" } else { "threads" },
        )
    };
    // Where they waited, when it was before the server took their connections.
    let queued = f.mean(col::TARGET, col::ACCEPT_QUEUE).unwrap_or(0.0);
    if queued >= 1.0 {
        claim.push_str(&format!(
            "; connections waited in its accept queue ({queued:.1} on average) until a worker took them"
        ));
    }
    let from_wchan = f.offcpu().is_none();
    if from_wchan {
        claim.push_str(" (record -e cpu,offcpu to name the code that waits)");
    }
    let mut e = f.ev(
        format!("'{}' threads occupied", g.name),
        format!(
            "{:.2} of {:.0} threads (on a CPU {:.2}, runnable {:.2}, blocked in the work {:.2})",
            occupied.min(threads),
            threads,
            g.on_cpu,
            g.runnable.unwrap_or(0.0),
            (occupied - cpu).max(0.0)
        ),
        if from_wchan {
            "/proc/PID/task/*/schedstat, and wchan each second (why each block)"
        } else {
            "/proc/PID/task/*/schedstat and the off-CPU profile (why each block)"
        },
    );
    e.series = Some(format!(
        "{}/{}",
        col::TARGET,
        col::per_group(col::GROUP_THREADS, &g.name)
    ));
    let x = Finding::new("pool", class, 0.9, claim)
        .evidence(e)
        .evidence(f.ev(
            "in flight",
            format!("{in_flight:.1} on average"),
            "the load's own latencies and counts (Little's law: their latencies summed over the seconds)",
        ))
        .explains(100.0, format!("of the {}s' time: waiting for a thread, then in it", f.outcome.unit))
        .check(format!(
            "top -H -p {} (every '{}' thread busy or asleep in the work); jstack/py-spy dump/gdb -p {} for what each does",
            f.pid(),
            g.name,
            f.pid()
        ));
    vec![x]
}

/// Per thread (by its kernel id), from the off-CPU profile: time it waited for events
/// (a poll, a read of an idle connection, a runtime idling), time blocked otherwise (the
/// work's), and that time by why.
#[derive(Default)]
struct ThreadWaits {
    polled_s: f64,
    work_s: f64,
    by_reason: Vec<(WaitReason, f64)>,
}

fn thread_waits(p: &kiln_model::Profile) -> std::collections::HashMap<u32, ThreadWaits> {
    let ns = p.event.ns_per_weight().unwrap_or(1.0);
    let reasons = kiln_model::waits::stack_reasons(p);
    let mut out: std::collections::HashMap<u32, ThreadWaits> = Default::default();
    for (tid, st, w) in by_thread(p) {
        let r = reasons
            .get(st.0 as usize)
            .copied()
            .unwrap_or(WaitReason::Other);
        let s = w as f64 * ns / 1e9;
        let e = out.entry(tid).or_default();
        if matches!(r, WaitReason::Poll | WaitReason::Idle) {
            e.polled_s += s;
        } else {
            e.work_s += s;
            match e.by_reason.iter_mut().find(|(x, _)| *x == r) {
                Some((_, t)) => *t += s,
                None => e.by_reason.push((r, s)),
            }
        }
    }
    out
}

/// CPU seconds per thread (by its kernel id), from the CPU profile.
fn thread_cpu(p: &kiln_model::Profile) -> std::collections::HashMap<u32, f64> {
    let ns = p.event.ns_per_weight().unwrap_or(0.0);
    let mut out: std::collections::HashMap<u32, f64> = Default::default();
    for (tid, _, w) in by_thread(p) {
        *out.entry(tid).or_default() += w as f64 * ns / 1e9;
    }
    out
}

/// A profile's samples with their thread's kernel id (those without one left out): the
/// thread, the stack and the weight.
fn by_thread(
    p: &kiln_model::Profile,
) -> impl Iterator<Item = (u32, kiln_model::StackId, u64)> + '_ {
    p.samples
        .stack
        .iter()
        .zip(&p.samples.weight)
        .zip(&p.samples.thread)
        .filter_map(|((&st, &w), th)| Some((p.threads.get(*th)?.tid?, st, w)))
}

/// An event loop that waited for a CPU a fifth of the window or more: a process's first
/// thread that polls for the server's events and does most of its CPU (in Node, its first
/// thread whatever its share), by the kernel's count of its run-queue wait (`schedstat`:
/// woken and not yet run, or preempted — an off-CPU block holds the first until the
/// thread runs again). Every operation in flight waits with it. Its kernel id and that
/// share of the window.
pub fn starved_loop(f: &Facts) -> Option<(u32, f64)> {
    if matches!(f.runtime(), super::Runtime::Go | super::Runtime::Beam) {
        return None;
    }
    let waited = f.mean(col::TARGET, col::MAIN_RUNNABLE)? / 100.0;
    if waited < 0.2 {
        return None;
    }
    let waits = thread_waits(f.offcpu()?);
    let cpu = f.cpu_profile().map(thread_cpu)?;
    let total_cpu: f64 = cpu.values().sum();
    let node = f.runtime() == super::Runtime::Node;
    waits
        .iter()
        .filter(|(&tid, w)| f.is_main_thread(tid) && (w.polled_s > 0.0 || node))
        .filter(|(&tid, _)| {
            let on = cpu.get(&tid).copied().unwrap_or(0.0);
            on > 0.0 && (node || on >= 0.5 * total_cpu)
        })
        .map(|(&tid, _)| (tid, waited.min(1.0)))
        .min_by_key(|(tid, _)| *tid)
}

/// An event loop blocked in its work: the thread that polls for the server's events (it
/// also blocks in a poll, or it is the process's first thread) and does most of its CPU was occupied nearly all the time — on a
/// CPU, or blocked in something other than its poll (a synchronous call: a sleep, a lock,
/// a condition, the disk) — while more operations were in flight than the one it could
/// serve. The thread's id, its occupied share, its blocked share, the heaviest wait, and
/// the operations in flight.
pub fn blocked_event_loop(f: &Facts) -> Option<(u32, f64, f64, WaitReason, f64)> {
    if matches!(f.runtime(), super::Runtime::Go | super::Runtime::Beam) {
        return None;
    }
    let in_flight = f.request_time_s()? / f.secs.max(1e-9);
    if in_flight < 1.5 {
        return None;
    }
    let waits = thread_waits(f.offcpu()?);
    let cpu = f.cpu_profile().map(thread_cpu).unwrap_or_default();
    let total_cpu: f64 = cpu.values().sum();
    let secs = f.secs.max(1e-9);
    // The loop polls for events — unless it never waited for one, every request queued
    // behind it: then it is the process's first thread (Node's, an asyncio server's).
    let polls = |tid: u32, w: &ThreadWaits| w.polled_s > 0.0 || f.is_main_thread(tid);
    // The time the threads that poll were blocked for each reason: a loop's block is its
    // own, not one of many such threads' doing the same (a thread per connection, each
    // reading its socket and blocked in its work). Threads that never poll (a runtime's
    // workers, idle on their condition) are no loops.
    let mut all_by: Vec<(WaitReason, f64)> = Vec::new();
    for (r, s) in waits
        .iter()
        .filter(|(&tid, w)| polls(tid, w))
        .flat_map(|(_, w)| &w.by_reason)
    {
        match all_by.iter_mut().find(|(x, _)| x == r) {
            Some((_, t)) => *t += s,
            None => all_by.push((*r, *s)),
        }
    }
    waits
        .iter()
        .filter(|(&tid, w)| polls(tid, w))
        .filter_map(|(&tid, w)| {
            let on = cpu.get(&tid).copied().unwrap_or(0.0);
            // A loop's time is on a CPU, waiting for one, blocked in its work, or polling:
            // what it did not spend polling it was occupied (preempted and waiting for a
            // CPU included, which no block holds).
            let occupied = (1.0 - w.polled_s / secs).clamp(0.0, 1.0);
            let blocked = (w.work_s / secs).min(1.0);
            let (top, top_s) = w
                .by_reason
                .iter()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .copied()?;
            let everyones = all_by.iter().find(|(r, _)| *r == top).map_or(0.0, |x| x.1);
            if top_s < 0.5 * everyones {
                return None;
            }
            // Blocked in its work a fair share of the window, so a loop idle in one long
            // poll (a block that had not ended when the window did) is not taken for busy.
            (occupied >= 0.85 && blocked >= 0.3 && blocked > on / secs && on >= 0.5 * total_cpu)
                .then_some((tid, occupied, blocked, top, in_flight))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The event loop's long runs of one function: the thread that polls for the server's
/// connections and does most of its CPU ran one function of the program's for far longer
/// than an operation's median (10×, 5 ms at least), again and again (3 times at least, the
/// median time between their starts twice their median length at least), mostly on a
/// CPU, and the longest run is as long as the slowest operation (half to one and a half
/// times it, which is 20 times the operations' median at least; the median run 0.4 of it
/// at least): no other operation was
/// served meanwhile, and the slowest are those that came then. Its thread, the function,
/// how many runs, their median length, the median time between their starts.
pub struct LoopRuns {
    /// The loop's thread (kernel id); of several threads', the one with the most runs.
    pub tid: u32,
    /// How many threads ran them.
    pub threads: usize,
    /// The function it ran.
    pub name: String,
    /// Where the runs' path began, when not in `name` itself (most of them).
    pub entry: Option<String>,
    /// How many runs (a quarter of the longest at least).
    pub count: usize,
    /// Their median length, ns.
    pub typical_ns: u64,
    /// The median time between their starts, ns.
    pub apart_ns: u64,
    /// The share of the slowest operation's latency beyond the median.
    pub tail: f64,
}

/// [`LoopRuns`] of the run, if its loop had them (found once).
pub fn loop_runs<'f>(f: &'f Facts) -> Option<&'f LoopRuns> {
    f.loop_runs.get_or_init(|| find_loop_runs(f)).as_ref()
}

fn find_loop_runs(f: &Facts) -> Option<LoopRuns> {
    if matches!(f.runtime(), super::Runtime::Go | super::Runtime::Beam) {
        return None;
    }
    let lat = f.outcome.latency.as_ref()?;
    let cpu = f.cpu_profile()?;
    let by_cpu = thread_cpu(cpu);
    let total: f64 = by_cpu.values().sum();
    let polls: Vec<u32> = match f.offcpu() {
        Some(p) => thread_waits(p)
            .into_iter()
            .filter(|(tid, w)| w.polled_s > 0.0 || f.is_main_thread(*tid))
            .map(|(tid, _)| tid)
            .collect(),
        None => f.meta.target.pids.clone(),
    };
    let (tid, on) = polls
        .iter()
        .map(|t| (*t, by_cpu.get(t).copied().unwrap_or(0.0)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if on < 0.5 * total || total <= 0.0 {
        return None;
    }
    // (An event loop's roots and its loop's frames are on half its samples or more.)
    long_runs(lat, cpu, f.offcpu(), &[tid], 0.5)
}

/// The runs of one function for as long as the slowest operations (see [`LoopRuns`]) on
/// the threads that serve the connections (they wait for them: a thread per connection,
/// or a pool's), the busiest 64, when the loop had none (found once): a slow path some
/// operations take now and then, which no other operation on that thread waits for.
pub fn slow_runs<'f>(f: &'f Facts) -> Option<&'f LoopRuns> {
    f.slow_runs.get_or_init(|| find_slow_runs(f)).as_ref()
}

fn find_slow_runs(f: &Facts) -> Option<LoopRuns> {
    if matches!(f.runtime(), super::Runtime::Go | super::Runtime::Beam) || loop_runs(f).is_some() {
        return None;
    }
    let lat = f.outcome.latency.as_ref()?;
    let cpu = f.cpu_profile()?;
    let by_cpu = thread_cpu(cpu);
    let mut tids: Vec<(u32, f64)> = thread_waits(f.offcpu()?)
        .into_iter()
        .filter(|(_, w)| w.polled_s > 0.0)
        .filter_map(|(t, _)| by_cpu.get(&t).map(|c| (t, *c)))
        .collect();
    tids.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    tids.truncate(64);
    let tids: Vec<u32> = tids.into_iter().map(|t| t.0).collect();
    // (A connection's thread has its serving frames on nearly every sample.)
    let runs = long_runs(lat, cpu, f.offcpu(), &tids, 0.97)?;
    // A path that runs, then waits long in the same function (a write's copy into the
    // page cache, then its fdatasync) is the wait's to say: the run is part of it.
    let waits_too = [Some(&runs.name), runs.entry.as_ref()]
        .into_iter()
        .flatten()
        .any(|n| super::waiting::long_waits_under(f, n));
    (!waits_too).then_some(runs)
}

/// The runs of one function (see [`LoopRuns`]) on the threads given, the slowest
/// operations' length; `tid` is the thread with the most of them.
fn long_runs(
    lat: &crate::facts::WindowLatency,
    cpu: &kiln_model::Profile,
    offcpu: Option<&kiln_model::Profile>,
    tids: &[u32],
    roots: f64,
) -> Option<LoopRuns> {
    let min_ns = (lat.p50_us * 10.0 * 1e3).max(5e6) as u64;
    let blocks = offcpu.map(crate::waits::thread_blocks);
    let mut runs: Vec<crate::profile::Run> = tids
        .iter()
        .flat_map(|&t| {
            let bl = blocks
                .as_ref()
                .map(|b| b.get(&t).map_or(&[][..], |v| v.as_slice()));
            crate::profile::thread_runs(cpu, t, min_ns, roots, bl)
        })
        .collect();
    runs.sort_by_key(|r| r.start);
    let longest = runs.iter().map(|r| r.end - r.start).max()?;
    runs.retain(|r| (r.end - r.start) * 4 >= longest);
    // The function with the most time in them.
    let mut by: Vec<(&str, u64, usize)> = Vec::new();
    for r in &runs {
        match by.iter_mut().find(|b| b.0 == r.name) {
            Some(b) => {
                b.1 += r.end - r.start;
                b.2 += 1;
            }
            None => by.push((&r.name, r.end - r.start, 1)),
        }
    }
    // The function with the most time in them names them.
    let (name, _, _) = by.into_iter().max_by_key(|b| b.1)?;
    // Their median length (a stretch may take in a moment of what came next); the
    // stretches of about that length are counted whatever their name (the samples may
    // hide the function in part of one: its caller names it then).
    let mut lens: Vec<u64> = runs
        .iter()
        .filter(|r| r.name == name && (r.end - r.start) * 2 >= longest)
        .map(|r| r.end - r.start)
        .collect();
    lens.sort_unstable();
    let typical = lens[lens.len() / 2];
    // (On a busy machine a run stretches by the time its thread waited for a CPU: the
    // function's runs are its, however long.)
    let mine: Vec<&crate::profile::Run> = runs
        .iter()
        .filter(|r| {
            (r.end - r.start) * 2 >= typical
                && (r.name == name || (r.end - r.start) <= typical * 3 / 2)
        })
        .collect();
    let count = mine.len();
    // Runs that were mostly waiting for a CPU (a quota's throttling, a full machine) are
    // the starvation's to say: the thread was ready, not slow.
    let wall: u64 = mine.iter().map(|r| r.end - r.start).sum();
    let on_cpu: u64 = mine.iter().map(|r| r.cpu_ns).sum();
    if on_cpu * 2 < wall {
        return None;
    }
    let mut lens: Vec<u64> = mine.iter().map(|r| r.end - r.start).collect();
    lens.sort_unstable();
    let typical = lens[lens.len() / 2];
    // The slowest operation waited about as long as the longest run, and a typical run
    // is most of that wait (a run that is a part of the slowest operations' path, the
    // page cache's copy of a write before its fdatasync, is not what they waited for).
    let max_ns = (lat.max_us * 1e3).max(1.0);
    let ratio = lens[lens.len() - 1] as f64 / max_ns;
    if count < 3
        || !(0.5..=1.5).contains(&ratio)
        || (typical as f64) < 0.4 * max_ns
        || lat.max_us < 20.0 * lat.p50_us
    {
        return None;
    }
    // The median time between starts (one the samples missed doubles one gap, not all):
    // twice their length at least — runs now and then, not one burst of them.
    let gaps: Vec<u64> = mine.windows(2).map(|w| w[1].start - w[0].start).collect();
    let apart = period(&gaps);
    if apart < 2 * typical {
        return None;
    }
    let mut by_thread: Vec<(u32, usize)> = Vec::new();
    for r in &mine {
        match by_thread.iter_mut().find(|t| t.0 == r.tid) {
            Some(t) => t.1 += 1,
            None => by_thread.push((r.tid, 1)),
        }
    }
    let mut entries: Vec<(&str, usize)> = Vec::new();
    for r in mine.iter().filter(|r| r.name == name) {
        if let Some(e) = &r.entry {
            match entries.iter_mut().find(|x| x.0 == e) {
                Some(x) => x.1 += 1,
                None => entries.push((e, 1)),
            }
        }
    }
    let entry = entries
        .into_iter()
        .max_by_key(|x| x.1)
        .filter(|x| x.1 * 2 > count)
        .map(|x| x.0.to_string());
    Some(LoopRuns {
        entry,
        tid: by_thread.iter().max_by_key(|t| t.1).map_or(0, |t| t.0),
        threads: by_thread.len(),
        name: name.to_string(),
        count,
        typical_ns: typical,
        apart_ns: apart,
        tail: (1.0 - lat.p50_us / lat.max_us).clamp(0.0, 1.0),
    })
}

/// The time between the starts of runs that come at a steady pace, from the gaps between
/// those seen (one at least): their median, or, when every gap is a whole number of the
/// shortest (within an eighth of it), the median of the gaps each divided by that number:
/// a run the samples missed (broken by a pause of the profile, a CPU it waited for) makes
/// one gap two, and half of them missed would double the median.
fn period(gaps: &[u64]) -> u64 {
    let mut g = gaps.to_vec();
    g.sort_unstable();
    let least = g[0].max(1);
    let steps: Option<Vec<u64>> = g
        .iter()
        .map(|&x| {
            let k = (x as f64 / least as f64).round().max(1.0);
            ((x as f64 - k * least as f64).abs() <= least as f64 / 8.0).then(|| x / k as u64)
        })
        .collect();
    match steps {
        Some(mut s) if g[g.len() - 1] > least + least / 2 => {
            s.sort_unstable();
            s[s.len() / 2]
        }
        _ => g[g.len() / 2],
    }
}

impl LoopRuns {
    /// `compare_rows (in rebuild_index)`, or the function alone.
    pub fn named(&self) -> String {
        match &self.entry {
            Some(e) => format!("{} (in {e})", self.name),
            None => self.name.clone(),
        }
    }

    /// `(p99.9 2.31 ms, max 67.1 ms) ran rebuild_index on the CPU …`, said after the
    /// slowest operations.
    pub fn said_of_path(&self, f: &Facts) -> String {
        let ns = |n: u64| kiln_model::format_ns(n as f64);
        let unit = &f.outcome.unit;
        let lat = f
            .outcome
            .latency
            .as_ref()
            .map(|l| {
                format!(
                    "(p99.9 {}, max {}; median {}) ",
                    secs(l.p999_us / 1e6),
                    secs(l.max_us / 1e6),
                    secs(l.p50_us / 1e6)
                )
            })
            .unwrap_or_default();
        let threads = if self.threads > 1 {
            format!(" on {} threads", self.threads)
        } else {
            format!(" on thread {}", self.tid)
        };
        format!(
            "{lat}are those that ran {} on the CPU for {} at a time ({} times{threads}, {} apart; medians): a slow path that some {unit}s take now and then, not the work of every {unit}",
            self.named(),
            ns(self.typical_ns),
            self.count,
            ns(self.apart_ns)
        )
    }

    /// `ran reindex for up to 61 ms at a time …`, said after the thread.
    pub fn said(&self, f: &Facts) -> String {
        let ns = |n: u64| kiln_model::format_ns(n as f64);
        let unit = &f.outcome.unit;
        let tail = f
            .outcome
            .latency
            .as_ref()
            .map(|l| {
                format!(
                    "; the slowest {unit}s (p99.9 {}, max {}) are those that came then",
                    secs(l.p999_us / 1e6),
                    secs(l.max_us / 1e6)
                )
            })
            .unwrap_or_default();
        format!(
            "ran {} for {} at a time ({} times, {} apart; medians): no other {unit} was served meanwhile{tail}",
            self.named(),
            ns(self.typical_ns),
            self.count,
            ns(self.apart_ns)
        )
    }
}

/// The rule form of [`loop_runs`], when no thread is said saturated (that finding says
/// them then).
pub fn loop_stalls(f: &Facts) -> Vec<Finding> {
    let Some(r) = loop_runs(f) else {
        return Vec::new();
    };
    let who = match f.runtime() {
        super::Runtime::Node if f.is_main_thread(r.tid) => {
            "Node's event loop (the main thread)".to_string()
        }
        _ => format!(
            "the event loop (thread {}, the one that polls for the server's connections and does most of its CPU)",
            r.tid
        ),
    };
    let claim = format!("{who} {}", r.said(f));
    let cpu = f
        .cpu_profile()
        .map(|p| p.event.name.clone())
        .unwrap_or_default();
    let mut e = f.ev(
        format!("thread {}'s CPU samples in one function", r.tid),
        format!(
            "{} runs of {}, {} each (the median)",
            r.count,
            r.name,
            kiln_model::format_ns(r.typical_ns as f64)
        ),
        format!("CPU profile ({cpu}), the thread's samples in time order"),
    );
    e.profile = Some(cpu);
    e.focus = Some(r.name.clone());
    vec![Finding::new("loop-stalls", Class::OneThreadSaturated, 0.9 * r.tail, claim)
        .evidence(e)
        .check(format!(
            "perf record -F 999 -g -t {} -- sleep {}; perf script | less   # the loop's samples in time order",
            r.tid,
            f.secs_arg()
        ))]
}

/// The rule form of [`slow_runs`]: a slow path on the CPU that the slowest operations
/// took. (The CPU-bound finding says it too, when the server filled its CPUs.)
pub fn slow_paths(f: &Facts) -> Vec<Finding> {
    let Some(r) = slow_runs(f) else {
        return Vec::new();
    };
    let unit = &f.outcome.unit;
    let mut claim = format!("the slowest {unit}s {}", r.said_of_path(f));
    // The collector's work (a JVM's evacuation, Go's marking): its pauses, not the
    // program's code.
    let collector = f
        .cpu_profile()
        .and_then(|p| crate::profile::frame_category(p, &r.name))
        == Some(kiln_model::categories::GC);
    if collector {
        let path = format!(
            ": a slow path that some {unit}s take now and then, not the work of every {unit}"
        );
        claim = claim.replace(
            &path,
            &format!(": garbage collection's work, whose pauses hold the {unit}s in flight, not the program's"),
        );
    }
    let class = if collector {
        Class::GarbageCollection
    } else {
        Class::CpuBound
    };
    let cpu = f
        .cpu_profile()
        .map(|p| p.event.name.clone())
        .unwrap_or_default();
    let mut e = f.ev(
        "the serving threads' CPU samples in one function",
        format!(
            "{} runs of {} on {} threads, {} each (the median)",
            r.count,
            r.name,
            r.threads,
            kiln_model::format_ns(r.typical_ns as f64)
        ),
        format!("CPU profile ({cpu}), each thread's samples in time order"),
    );
    e.profile = Some(cpu);
    e.focus = Some(r.name.clone());
    vec![Finding::new("slow-paths", class, 0.9 * r.tail, claim)
        .evidence(e)
        .explains(r.tail * 100.0, format!("of the slowest {unit}'s latency"))
        .check(format!(
            "perf record -F 999 -g -p {} -- sleep {}; perf script | less   # each thread's samples in time order: {} for {} at a time",
            f.pid(),
            f.secs_arg(),
            r.name,
            kiln_model::format_ns(r.typical_ns as f64)
        ))]
}

/// The rule form of [`blocked_event_loop`]: the one thread every operation waits for was
/// blocked in its work, so the others waited for it (Little's law).
///
/// False when: no thread both polls for events and does most of the CPU; the loop idled
/// in its poll a fair share of the time; other threads were blocked for the same reason
/// as long as it (a thread per connection: each carries its own); a pool's rule already
/// names the thread's group.
pub fn event_loop(f: &Facts) -> Vec<Finding> {
    if saturated_pool(f).is_some() {
        return Vec::new();
    }
    let Some((tid, occupied, blocked, reason, in_flight)) = blocked_event_loop(f) else {
        return Vec::new();
    };
    let site = f
        .waits()
        .and_then(|w| w.sites_of(reason).next().map(|s| s.label()));
    let (class, what) = super::waiting::waited_for(reason, f, None);
    let unit = &f.outcome.unit;
    let waiting = ((in_flight - 1.0) / in_flight).clamp(0.0, 1.0);
    let claim = format!(
        "the event loop (thread {tid}, the one that polls for the server's connections and does most of its CPU) was occupied {} of the time, {} of it blocked — it {what}{} — while {in_flight:.1} {unit}s were in flight on average: the other {:.1} waited for the loop (Little's law: {} of their time); nothing else runs while it blocks: make that call asynchronous or move it off the loop",
        super::pct(occupied),
        super::pct(blocked),
        site.map(|s| format!(" in {s}")).unwrap_or_default(),
        (in_flight - 1.0).max(0.0),
        super::pct(waiting)
    );
    let e = f.ev(
        format!("thread {tid} occupied"),
        format!(
            "{} of the window: blocked outside its poll {}",
            super::pct(occupied),
            super::pct(blocked)
        ),
        "the off-CPU profile by thread (why each block) and the CPU profile by thread",
    );
    vec![Finding::new("event-loop", class, 0.9, claim)
        .evidence(e)
        .evidence(f.ev(
            "in flight",
            format!("{in_flight:.1} on average"),
            "the load's own latencies and counts (Little's law: their latencies summed over the seconds)",
        ))
        .explains(100.0, format!("of the {unit}s' time: waiting for the loop, then in it"))
        .check(format!(
            "perf trace -s -t {tid} -- sleep {}   # where the loop's thread spends its time",
            f.secs_arg()
        ))]
}

/// A count as text with thousands separators.
pub fn thousands(v: f64) -> String {
    kiln_model::thousands(v.round().max(0.0) as u64)
}

#[cfg(test)]
mod tests {
    use kiln_model::{EventInfo, FrameKind, Profile, WeightUnit, NO_TIME};

    /// Threads of one name started in different functions are told apart by the frame
    /// above their start, the thread's name at the root or not; a stack cut short, or the
    /// process's first thread, has none; a thread is its heaviest entry's.
    #[test]
    fn a_thread_is_of_the_function_it_was_started_in() {
        let mut p = Profile::new(EventInfo::new("offcpu", WeightUnit::Nanoseconds));
        let mut add = |tid: u32, frames: &[&str], w: u64| {
            let t = p.thread(Some(1), Some(tid), b"node");
            let ids: Vec<_> = frames
                .iter()
                .map(|n| p.frame(n.as_bytes(), FrameKind::User))
                .collect();
            p.add_sample_path(&ids, w, NO_TIME, t);
        };
        add(
            2,
            &[
                "node",
                "__clone3",
                "start_thread",
                "worker",
                "uv__fs_work",
                "fdatasync",
            ],
            50,
        );
        add(2, &["__futex_abstimed_wait_common"], 80);
        add(
            3,
            &[
                "__clone3",
                "start_thread",
                "node::(anonymous namespace)::PlatformWorkerThread",
                "uv_cond_wait",
            ],
            90,
        );
        add(
            3,
            &["__clone3", "start_thread", "worker", "uv_cond_wait"],
            10,
        );
        add(
            1,
            &["_start", "__libc_start_main", "node::Start", "uv_run"],
            70,
        );
        let e = super::thread_entries(&[&p]);
        assert_eq!(e.get(&2).map(String::as_str), Some("worker"));
        assert_eq!(
            e.get(&3).map(String::as_str),
            Some("node::(anonymous namespace)::PlatformWorkerThread")
        );
        assert_eq!(e.get(&1), None);
        assert_eq!(e.len(), 2);
    }

    #[test]
    fn counts_read_with_separators() {
        assert_eq!(super::thousands(22049.4), "22,049");
    }

    #[test]
    fn runs_at_a_steady_pace_are_that_pace_apart_when_some_were_missed() {
        use super::period;
        // Every other run missed: the pace, not the median gap (993).
        assert_eq!(period(&[500, 993, 1002]), 500);
        assert_eq!(period(&[499, 501, 500, 1000]), 500);
        // No run missed, or gaps of no common pace: their median.
        assert_eq!(period(&[480, 500, 520]), 500);
        assert_eq!(period(&[300, 700, 1000]), 700);
        assert_eq!(period(&[1000]), 1000);
    }
}
