//! What the CPU was spent on, in the runtimes' terms: garbage collection, memory taken
//! from the kernel and given back, spinning; and memory growing.
use super::{cpus, pct, Runtime};
use crate::facts::count_of;
use crate::profile::{categories, in_group, kept_share, program_functions, share_of, with_stack};
use crate::{Class, Facts, Finding};
use kiln_model::categories::GC;
use kiln_model::FrameKind;
use kiln_store::columns as col;

/// A refinement of the CPU's use is ranked by its share of the CPU and by how much of a
/// CPU the server used: a share of an idle server's CPU is no cause.
fn weight(f: &Facts, share: f64) -> f64 {
    let used = f.cpus.target.unwrap_or(0.0);
    let busy = (used / 0.5).min(1.0);
    (2.0 * share).min(1.0) * (0.45 + 0.5 * busy)
}

/// Whether `share` of the server's CPU is under 2% of a core: a server that barely ran
/// (an idle broker's collector at 14% of its 0.07 CPU) spends nothing worth naming there.
fn negligible(f: &Facts, share: f64) -> bool {
    f.cpus.target.is_some_and(|used| share * used < 0.02)
}

/// The command that shows a runtime's garbage collection in its own words.
fn gc_check(f: &Facts) -> String {
    let pid = f.pid();
    match f.runtime() {
        Runtime::Go => "GODEBUG=gctrace=1 on the server (each line: the GC's CPU share); or go tool pprof -sample_index=alloc_space heap".into(),
        Runtime::Jvm => format!("jstat -gcutil {pid} 1000 (GCT: seconds in GC so far)"),
        Runtime::Node => "node --trace-gc (each collection and its pause)".into(),
        Runtime::Beam => msacc_check(f, "gc"),
        Runtime::Python => "python -X importtime is no help here: gc.callbacks or gc.set_debug(gc.DEBUG_STATS) in the server".into(),
        Runtime::Native => format!("perf record -g -p {pid}; perf report --no-children"),
    }
}

/// The command that shows a BEAM's scheduler states (msacc), pointing at `column`:
/// through `rabbitmqctl` on a RabbitMQ node, in the node's own shell otherwise.
fn msacc_check(f: &Facts, column: &str) -> String {
    if f.cmdline().contains("rabbit") {
        format!("rabbitmqctl eval 'msacc:start(5000), msacc:print().' (the {column} column)")
    } else {
        format!("in the node's shell (erl -remsh NODE): msacc:start(5000), msacc:print(). (the {column} column)")
    }
}

/// Garbage collection took a large share of the server's CPU (the runtime's collector
/// functions and threads, as the category charts count them; the BEAM's own `gc` state).
///
/// False when: the share is small, or the server barely used a CPU.
pub fn gc(f: &Facts) -> Vec<Finding> {
    let Some(p) = f.cpu_profile() else {
        return Vec::new();
    };
    let keep = in_group(p, None);
    let cats = categories(p, &keep);
    let mut share = share_of(&cats, |n| n == GC);
    let mut source = format!(
        "CPU profile ({}), the collector's functions and threads",
        p.event.name
    );
    if let Some(b) = &f.meta.headline.beam {
        // msacc's gc state, of the schedulers' awake time.
        if b.gc_pct / 100.0 > share {
            share = b.gc_pct / 100.0;
            source = "the BEAM schedulers' states (msacc's gc), from the CPU samples".into();
        }
    }
    let used = f.cpus.target.unwrap_or(0.0);
    if share < 0.1 || negligible(f, share) {
        return Vec::new();
    }
    let mut claim = format!(
        "garbage collection took {} of the server's CPU ({} of the {} it used)",
        pct(share),
        cpus(share * used),
        cpus(used)
    );
    // A JVM's own account beside kiln's: the time its collectors took (pauses and
    // concurrent cycles), by its counters.
    let jvm = f.mean(col::TARGET, col::JVM_GC);
    if let Some(j) = jvm {
        claim.push_str(&format!(
            "; by the JVM's own counters its collectors ran {} of the time",
            pct(j / 100.0)
        ));
    }
    let mut e = f.ev("garbage collection", pct(share), source);
    e.profile = Some(p.event.name.clone());
    let mut x = Finding::new("gc", Class::GarbageCollection, weight(f, share), claim).evidence(e);
    if let Some(j) = jvm {
        let mut ev = f.ev(
            "the JVM's collectors' time",
            format!("{} of the wall time", pct(j / 100.0)),
            "hsperfdata, the JVM's own counters as jstat reads them: sun.gc.collector.N.time",
        );
        ev.series = Some(format!("{}/{}", col::TARGET, col::JVM_GC));
        x = x.evidence(ev);
    }
    vec![x
        .explains(share * 100.0, "of the server's CPU")
        .check(gc_check(f))]
}

/// Memory taken from the kernel and given back over and over: the CPU in the kernel's
/// page-fault, `mmap` and `munmap` paths, and the minor faults per operation. A buffer
/// above malloc's mmap threshold (128 KiB) is mapped and unmapped at each use, and every
/// page of it is faulted in and zeroed again.
///
/// False when: those paths are a small share of the CPU; each operation came on a new
/// connection and faulted in a few pages (64 at most: a connection's thread and buffers,
/// which the connections' rule counts).
pub fn churn(f: &Facts) -> Vec<Finding> {
    let Some(p) = f.cpu_profile() else {
        return Vec::new();
    };
    let keep = in_group(p, None);
    let cats = categories(p, &keep);
    let faults = share_of(&cats, |n| n == "kernel page faults");
    let mem = share_of(&cats, |n| n == "syscall: memory");
    let share = faults + mem;
    let minor = count_of(&f.values(col::TARGET, col::MINOR_FAULTS));
    let per_op = match (minor, f.outcome.ops) {
        (Some(m), Some(o)) if o > 0.0 => Some(m / o),
        _ => None,
    };
    if share < 0.1 && !(share >= 0.05 && per_op.is_some_and(|x| x >= 50.0)) || negligible(f, share)
    {
        return Vec::new();
    }
    // Churn faults pages in: under 100 faults a second by the kernel's count, what the
    // profile shows is mapping calls that touch nothing (a spawn's stack) or a child's
    // faults before its exec, not memory taken again.
    if minor.is_some_and(|m| m / f.secs.max(1e-9) < 100.0) {
        return Vec::new();
    }
    // A connection per operation, each with its thread's stack and buffers mapped and
    // faulted in (a few pages), is the connections' cost: their rule says it, with the
    // kernel's share of accepting, closing, cloning and mapping.
    if per_op.is_some_and(|x| x <= 64.0) && !super::load::connections(f).is_empty() {
        return Vec::new();
    }
    // Churn faults in anonymous memory (zeroed pages: `do_anonymous_page`). Faults that
    // map pages a process shares (a file's, a shared memory segment's:
    // `filemap_map_pages`, `shmem_fault`) or copy them on a write after a fork
    // (`do_wp_page`) are new processes touching memory the first time (a forking
    // server's backends in its shared buffers), not memory given back and taken again.
    let kinds = fault_kinds(p);
    if kinds.0 + kinds.1 > 0 && (kinds.0 as f64) < 0.5 * (kinds.0 + kinds.1) as f64 {
        return Vec::new();
    }
    // Memory that grows is faulted in once: that is growth, not churn. (Its most, not its
    // last: a target killed for its memory reads none at the end.)
    // Compared as rates, from the reading before the window to the most: the faults'
    // seconds and the memory's readings are not the same.
    // (From the run's start for a target killed for its memory: its window may be a
    // second.)
    let lookback = if oom_log(f).is_some() {
        u64::MAX
    } else {
        1_000_000_000
    };
    let rss = rss_readings(f, lookback);
    let peak = rss
        .iter()
        .copied()
        .fold((0, 0.0), |m, x| if x.1 > m.1 { x } else { m });
    if let (Some(fault_rate), Some(&(t0, a))) =
        (f.mean(col::TARGET, col::MINOR_FAULTS), rss.first())
    {
        let secs = peak.0.saturating_sub(t0) as f64 / 1e9;
        if secs > 0.0 && (peak.1 - a) / secs >= 0.5 * fault_rate * 4096.0 {
            return Vec::new();
        }
    }
    let mut claim = format!(
        "{} of the server's CPU went to the kernel's page faults ({}) and memory mapping (mmap, munmap, brk: {})",
        pct(share),
        pct(faults),
        pct(mem)
    );
    if let Some(x) = per_op {
        claim.push_str(&format!(
            "; it faulted in {x:.0} new pages per {} ({} KiB)",
            f.outcome.unit,
            (x * 4.0).round()
        ));
    }
    // A runtime with a collector keeps its own heap: its pages come and go as the
    // collector frees and maps them, no malloc threshold in it.
    claim.push_str(match f.runtime() {
        super::Runtime::Node | super::Runtime::Jvm | super::Runtime::Go | super::Runtime::Beam => {
            ": memory is given back to the kernel and taken again (the runtime's heap: pages its collector unmaps, or a young generation it maps anew, faulted in again at each use)"
        }
        _ => ": memory is given back to the kernel and taken again (a buffer above malloc's mmap threshold, freed each time)",
    });
    // Who asked: the program's frame above the faults and the mappings.
    let in_kernel_mem =
        crate::profile::in_categories(p, |n| n == "kernel page faults" || n == "syscall: memory");
    let (by, total) = program_functions(p, &in_kernel_mem);
    let mut x = Finding::new("churn", Class::MemoryChurn, weight(f, share), claim);
    if let Some((name, w)) = by.first() {
        let mut e = f.ev(
            "who faulted and mapped",
            format!("{name} ({})", pct(*w as f64 / total.max(1) as f64)),
            format!(
                "CPU profile ({}), the program's frame above the kernel",
                p.event.name
            ),
        );
        e.profile = Some(p.event.name.clone());
        e.focus = Some(name.clone());
        x = x.evidence(e);
    }
    if let Some(m) = minor {
        let mut e = f.ev(
            "minor page faults",
            format!("{}/s", super::queues::thousands(m / f.secs)),
            "/proc/PID/stat (minflt)",
        );
        e.series = Some(format!("{}/{}", col::TARGET, col::MINOR_FAULTS));
        x = x.evidence(e);
    }
    vec![x
        .explains(share * 100.0, "of the server's CPU")
        .check(format!(
            "perf stat -e page-faults -p {} -- sleep {}; perf trace -s -e mmap,munmap,brk -p {} -- sleep {}",
            f.pid(),
            f.secs_arg(),
            f.pid(),
            f.secs_arg()
        ))]
}

/// The CPU profile's page-fault samples by kind: (anonymous memory zeroed,
/// shared or copied pages: a file's or shared memory's pages mapped, a page copied on
/// write after a fork).
fn fault_kinds(p: &kiln_model::Profile) -> (u128, u128) {
    let kind = |name: &[u8]| match name {
        b"do_anonymous_page" => Some(true),
        b"filemap_map_pages" | b"do_read_fault" | b"do_shared_fault" | b"shmem_fault"
        | b"filemap_fault" | b"do_wp_page" | b"wp_page_copy" | b"do_cow_fault" => Some(false),
        _ => None,
    };
    let mut of_stack: std::collections::HashMap<kiln_model::StackId, Option<bool>> =
        std::collections::HashMap::new();
    let (mut anon, mut shared) = (0u128, 0u128);
    for (&st, &w) in p.samples.stack.iter().zip(&p.samples.weight) {
        let k = *of_stack.entry(st).or_insert_with(|| {
            p.stacks
                .path(st)
                .iter()
                .rev()
                .find_map(|&fr| kind(p.frame_name(fr)))
        });
        match k {
            Some(true) => anon += w as u128,
            Some(false) => shared += w as u128,
            None => {}
        }
    }
    (anon, shared)
}

/// Frames that spin: a spin lock, a yield loop, a runtime's spin-wait.
fn spins(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    // `_raw_spin_unlock_irqrestore`: where a cpu-clock sample lands when interrupts come
    // back on, standing for the kernel code before it; releasing a lock is not spinning.
    n.contains("spin") && !n.contains("unlock")
        || n.contains("sched_yield")
        || n == "runtime.procyield"
        || n == "runtime.osyield"
        || n.contains("busy_wait")
        || n == "pause"
}

/// Whether a BEAM's command line turns its schedulers' busy-wait off: `+sbwt none` as
/// given to `erl`, or `-sbwt none` as erlexec passes it on to beam.smp (what its
/// /proc/PID/cmdline shows). The emulator reads its flags in order, so the last of each
/// decides: RabbitMQ's scripts pass `+sbwt none` first and a user's `+sbwt very_long`
/// after it turns the busy-wait back on.
fn beam_busy_wait_off(cmdline: &str) -> bool {
    const VALUES: [&str; 6] = ["none", "very_short", "short", "medium", "long", "very_long"];
    let last = |flag: &str| {
        // (The emulator's flags end at the first `--`: what follows is init's.)
        let words: Vec<&str> = cmdline
            .split_whitespace()
            .take_while(|w| *w != "--")
            .collect();
        let mut value = None;
        for (i, w) in words.iter().enumerate() {
            let Some(rest) = w
                .strip_prefix(['+', '-'])
                .and_then(|x| x.strip_prefix(flag))
            else {
                continue;
            };
            if rest.is_empty() {
                value = words.get(i + 1).copied().or(value);
            } else if VALUES.contains(&rest) {
                value = Some(rest);
            }
        }
        value
    };
    ["sbwt", "sbwtdcpu", "sbwtdio"]
        .iter()
        .all(|f| last(f) == Some("none"))
}

/// Threads spinning on a CPU while they wait: a spin lock, a yield loop, the BEAM
/// schedulers' busy-wait before sleeping.
///
/// False when: spinning is a small share of the CPU; for the BEAM, when its command line
/// already turns the busy-wait off (its `other` state is then scheduling, not spinning,
/// and no flag advice is given that the target already has).
pub fn busy_wait(f: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(b) = &f.meta.headline.beam {
        let cmd = f.cmdline();
        if b.other_pct >= 20.0 && !beam_busy_wait_off(&cmd) {
            let share = b.other_pct / 100.0;
            // The busy-wait runs when the schedulers have no work: on a machine with CPUs
            // to spare it delays no operation, and costs only CPU nobody else wanted. It
            // ranks below what the operations did wait for (a connection fleet without
            // operations, an idle broker, is all its cost).
            let spare =
                f.cpus.busy.is_some_and(|b| b < 0.7) && f.outcome.ops.is_some_and(|o| o > 0.0);
            // Its share is of the schedulers' awake CPU; it ranks by its share of the
            // server's, as the other costs of CPU do (a node whose work runs on its dirty
            // schedulers spends little of its CPU on its schedulers at all).
            let schedulers: f64 = f
                .groups
                .iter()
                .filter(|g| kiln_model::beam::is_scheduler(&g.name))
                .map(|g| g.on_cpu)
                .sum();
            let of_server = match f.cpus.target {
                Some(t) if t > 0.0 && schedulers > 0.0 => (share * schedulers / t).min(share),
                _ => share,
            };
            let score = weight(f, of_server) * if spare { 0.5 } else { 1.0 };
            // The threads that do the node's blocking work (files, NIFs) waiting for a CPU
            // meanwhile: the spinning competes with them for the same CPUs.
            let dirty: f64 = f
                .groups
                .iter()
                .filter(|g| kiln_model::beam::is_dirty_scheduler(&g.name))
                .filter_map(|g| g.runnable)
                .sum();
            let competes = if dirty >= 0.5 {
                format!(
                    "; meanwhile its dirty schedulers (where its file and NIF calls run) waited for a CPU, {dirty:.1} of them on average: the spinning competes with them for the CPUs"
                )
            } else {
                String::new()
            };
            out.push(
                Finding::new(
                    "busy-wait",
                    Class::BusyWait,
                    score,
                    format!(
                        "the BEAM's schedulers spent {} of their awake CPU in the busy-wait before sleeping: CPU spent waiting for work (+sbwt none +sbwtdcpu none +sbwtdio none turn it off; the command line does not){competes}",
                        pct(share)
                    ),
                )
                .evidence(f.ev(
                    "schedulers' other state (scheduling and busy-wait)",
                    pct(share),
                    "the schedulers' CPU samples in msacc's states",
                ))
                .explains(share * 100.0, "of the schedulers' awake CPU")
                .check(msacc_check(f, "other")),
            );
        }
    }
    if let Some(x) = yield_loops(f) {
        out.push(x);
        return out;
    }
    let Some(p) = f.cpu_profile() else {
        return out;
    };
    // Samples whose stack spins where it runs: the leaf's kernel frames and the first
    // frame of the program under them (a spin lock, sched_yield, Go's procyield). A frame
    // further down is a caller, not the spinning (Node's main thread runs under
    // node::SpinEventLoop whatever it does).
    let keep = with_stack(p, |path| {
        for &fr in path.iter().rev() {
            let k = p.frames.get(fr).kind;
            if k == FrameKind::Root {
                break;
            }
            if spins(&String::from_utf8_lossy(p.frame_name(fr))) {
                return true;
            }
            if k != FrameKind::Kernel {
                break;
            }
        }
        false
    });
    let beam_off = f.meta.headline.beam.is_some();
    let share = kept_share(p, &keep);
    if share < 0.15 || beam_off && !out.is_empty() || negligible(f, share) {
        return out;
    }
    let (by, all) = program_functions(p, &keep);
    let place = by
        .first()
        .map(|(n, w)| format!(", under {n} ({})", pct(*w as f64 / all.max(1) as f64)))
        .unwrap_or_default();
    let mut e = f.ev(
        "spinning (spin locks, yields)",
        pct(share),
        format!("CPU profile ({})", p.event.name),
    );
    e.profile = Some(p.event.name.clone());
    e.focus = by.first().map(|x| x.0.clone());
    out.push(
        Finding::new(
            "busy-wait",
            Class::BusyWait,
            weight(f, share),
            format!(
                "{} of the server's CPU spun waiting (spin locks, yield loops){place}: CPUs burnt while nothing moved",
                pct(share)
            ),
        )
        .evidence(e)
        .explains(share * 100.0, "of the server's CPU")
        .check(format!("perf record -g -p {} -- sleep {}; perf report --no-children", f.pid(), f.secs_arg())),
    );
    out
}

/// The share of the target's runnable time (the `runnable` profile) spent in
/// `sched_yield`, and the program's functions above those yields: threads that yield as
/// they spin stay runnable, and look like threads waiting for a CPU.
pub fn yielding(f: &Facts) -> Option<(f64, Vec<(String, u128)>)> {
    let p = f.profile("runnable")?;
    let keep = with_stack(p, |path| {
        path.iter().any(|&fr| {
            let n = String::from_utf8_lossy(p.frame_name(fr));
            n.contains("sched_yield") || n == "do_sched_yield"
        })
    });
    if p.samples.weight.iter().all(|&w| w == 0) {
        return None;
    }
    let (by, _) = program_functions(p, &keep);
    Some((kept_share(p, &keep), by))
}

/// Threads spinning with `sched_yield` between looks (the runnable profile shows them
/// yielding): the program's functions that spin, and their share of the CPU.
fn yield_loops(f: &Facts) -> Option<Finding> {
    let (share, spinners) = yielding(f)?;
    if share < 0.5 || spinners.is_empty() {
        return None;
    }
    let names: Vec<&str> = spinners.iter().take(3).map(|(n, _)| n.as_str()).collect();
    // Their CPU: the CPU profile's samples under those functions.
    let cpu = f.cpu_profile().map(|p| {
        let under = with_stack(p, |path| {
            path.iter()
                .any(|&fr| names.contains(&String::from_utf8_lossy(p.frame_name(fr)).as_ref()))
        });
        kept_share(p, &under)
    });
    let cpu_share = cpu.unwrap_or(share);
    // Spinning burns CPUs: a server that used little of one burnt none (Go's goroutines
    // yield a starved thread's turn too, and a machine full of others makes them wait).
    let target = f.cpus.target.unwrap_or(0.0);
    if target < 0.3 || target * cpu_share < 0.1 {
        return None;
    }
    let mut e = f.ev(
        "runnable time in sched_yield",
        format!("{} of it, under {}", pct(share), names.join(", ")),
        "the runnable profile (eBPF sched_switch: preempted or yielded)",
    );
    e.profile = Some("runnable".into());
    e.focus = names.first().map(|s| s.to_string());
    Some(
        Finding::new(
            "busy-wait",
            Class::BusyWait,
            weight(f, cpu_share).max(0.5),
            format!(
                "the server's threads spin waiting for each other, yielding between looks: {} of their runnable time is sched_yield under {}, which take {} of the server's CPU — CPUs burnt while nothing moves",
                pct(share),
                names.join(", "),
                pct(cpu_share)
            ),
        )
        .evidence(e)
        .explains(cpu_share * 100.0, "of the server's CPU")
        .check(format!(
            "perf trace -s -e sched_yield -p {} -- sleep {}",
            f.pid(),
            f.secs_arg()
        )),
    )
}

/// A JVM's `-Xmx` (the last one given), in bytes.
fn max_heap(cmdline: &[String]) -> Option<f64> {
    let v = cmdline.iter().rev().find_map(|a| a.strip_prefix("-Xmx"))?;
    let (num, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len()));
    let n: f64 = num.parse().ok()?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1048576.0,
        "g" => 1073741824.0,
        "t" => 1099511627776.0,
        _ => return None,
    };
    Some(n * scale)
}

/// The kernel's log line of the OOM killer's kill of the target, when the run ended for
/// it (its status says so).
fn oom_log(f: &Facts) -> Option<String> {
    let (_, log) = f
        .meta
        .status
        .reason
        .as_deref()?
        .split_once("the kernel's OOM killer killed it")?;
    let log = log.trim_start_matches([' ', '(']);
    Some(
        log.strip_prefix("its log: ")
            .unwrap_or(log)
            .trim_end_matches(')')
            .to_string(),
    )
}

/// The target's resident memory readings (their times, ns; bytes) from `lookback_ns`
/// before the window to the window's end, of a process still alive (above 0: a killed target's
/// last seconds read none).
fn rss_readings(f: &Facts, lookback_ns: u64) -> Vec<(u64, f64)> {
    let Some(c) = f
        .table(col::TARGET)
        .and_then(|t| Some((t, t.column(col::RSS)?)))
    else {
        return Vec::new();
    };
    let (t, c) = c;
    let from = f.window.start_ns.saturating_sub(lookback_ns);
    t.time_ns
        .iter()
        .zip(&c.values)
        .filter_map(|(&ts, v)| {
            let v = (*v)?;
            (ts >= from && ts <= f.window.end_ns.saturating_add(1_000_000_000) && v > 0.0)
                .then_some((ts, v))
        })
        .collect()
}

/// The server's resident memory grew through the window — until the kernel's OOM killer
/// ended it, when the run says so.
///
/// False when: it grew by less than 64 MiB (any amount, killed for it) or a fifth, or
/// fell back at the end. Said as a bound filled, not memory kept, when the last third of
/// the readings added under a tenth of the growth.
pub fn growth(f: &Facts) -> Vec<Finding> {
    let oom = oom_log(f);
    // Killed for its memory: its readings up to the kill, from the run's start (the
    // window's are none at the end, and may be a second or two).
    let readings = rss_readings(f, u64::MAX);
    let (rss, secs): (Vec<(f64, f64)>, f64) = match (&oom, readings.first(), readings.last()) {
        (Some(_), Some(a), Some(b)) => (
            readings.iter().map(|&(_, v)| (v, 1.0)).collect(),
            b.0.saturating_sub(a.0) as f64 / 1e9,
        ),
        _ => (f.values(col::TARGET, col::RSS), f.secs),
    };
    // A JVM's own account of its heap, when it keeps one: the old generation is what its
    // collections left, where resident memory grows as the heap is committed, kept or not.
    if oom.is_none() && super::Runtime::Jvm == f.runtime() {
        let old = f.values(col::TARGET, col::JVM_OLD_USED);
        if old.len() >= 3 {
            return jvm_old_growth(f, &old);
        }
    }
    let enough = if oom.is_some() { 0.0 } else { 64.0 * 1048576.0 };
    let Some(g) = kept(&rss, enough) else {
        return Vec::new();
    };
    let (a, b, grew) = (g.from, g.to, g.to - g.from);
    // A JVM's heap grows to its maximum before it collects much: resident memory under
    // that maximum (its -Xmx; a JVM without one may take a quarter of the machine) is the
    // heap filling its allowance, not memory kept.
    if super::Runtime::Jvm == f.runtime() {
        match max_heap(&f.meta.target.cmdline) {
            Some(heap) if b > 1.5 * heap + 256.0 * 1048576.0 => {}
            _ => return Vec::new(),
        }
    }
    let per_s = grew / secs.max(1e-9);
    let held = oom.is_none() && g.held;
    let k = g.last_third;
    let late = g.late;
    let mut e = f.ev(
        "resident memory",
        format!(
            "{} → {}",
            kiln_model::format_bytes(a),
            kiln_model::format_bytes(b)
        ),
        "/proc/PID/stat (rss)",
    );
    e.series = Some(format!("{}/{}", col::TARGET, col::RSS));
    // A leak at 10 MiB/s or more outruns any server's memory in minutes; one that got the
    // server killed ended the run: nothing else it measured matters as much.
    let rate = (per_s / (10.0 * 1048576.0)).min(1.0);
    if held {
        let last_s = secs * k;
        let claim = format!(
            "the server's memory grew by {} to {} and then held ({} over the last {:.0} s): it filled to a bound — a cache, a pool or a heap's size — rather than leaking at this load",
            kiln_model::format_bytes(grew),
            kiln_model::format_bytes(b),
            kiln_model::format_bytes(late.max(0.0)),
            last_s
        );
        return vec![Finding::new("growth", Class::MemoryGrowth, 0.15, claim)
            .evidence(e)
            .check(format!(
                "grep -E 'Rss|Anon' /proc/{}/status (over a longer run: a bound holds, a leak keeps growing)",
                f.meta.target.pids.first().copied().unwrap_or(0)
            ))];
    }
    let mut claim = format!(
        "the server's memory grew by {} ({}/s) and did not come back",
        kiln_model::format_bytes(grew),
        kiln_model::format_bytes(per_s)
    );
    if let Some(log) = &oom {
        claim.push_str(&format!(
            ", until the kernel's OOM killer killed it at {} (its log: {log})",
            kiln_model::format_bytes(b)
        ));
    }
    let score = if oom.is_some() {
        0.99
    } else {
        0.4 + 0.4 * rate
    };
    vec![Finding::new("growth", Class::MemoryGrowth, score, claim)
        .evidence(e)
        .check(format!(
            "grep -E 'Rss|Anon' /proc/{}/status (twice, seconds apart)",
            f.meta.target.pids.first().copied().unwrap_or(0)
        ))]
}

/// A level that grew through the window and kept most of it.
struct Kept {
    from: f64,
    to: f64,
    /// What the last third of the readings added.
    late: f64,
    /// The last third's share of the readings.
    last_third: f64,
    /// Filled to a bound, not kept without one: a cache, a pool or a heap growing to its
    /// size grows fast and then holds, where a leak under a steady load keeps its pace.
    /// The last third of the readings added under a tenth of the growth (and there are
    /// enough of them to tell).
    held: bool,
}

/// Whether `levels` (a level's readings over the window, in order) grew by more than
/// `enough` and a fifth, ended near their highest, and kept it: not a sawtooth read at two
/// of its tops (a collector freeing its heap every few seconds) — the low of the last
/// third of the window is above every value of its first third, and holds most of the
/// growth.
fn kept(levels: &[(f64, f64)], enough: f64) -> Option<Kept> {
    let (&(a, _), &(b, _)) = (levels.first()?, levels.last()?);
    let max = levels.iter().map(|(v, _)| *v).fold(0.0, f64::max);
    let grew = b - a;
    if grew <= enough || grew < 0.2 * a || b < 0.9 * max {
        return None;
    }
    let k = (levels.len() / 3).max(1);
    let low_end = levels[levels.len() - k..]
        .iter()
        .map(|(v, _)| *v)
        .fold(f64::INFINITY, f64::min);
    let high_start = levels[..k].iter().map(|(v, _)| *v).fold(0.0, f64::max);
    if low_end <= high_start || low_end - a < 0.5 * grew {
        return None;
    }
    let late = b - levels[levels.len() - k].0;
    Some(Kept {
        from: a,
        to: b,
        late,
        last_third: k as f64 / levels.len() as f64,
        held: levels.len() >= 6 && late < 0.1 * grew,
    })
}

/// The least-squares slope of `levels` (readings a second apart, or a window's seconds:
/// `(value, seconds it stands for)`), per second; `None` with fewer than two.
fn slope(levels: &[(f64, f64)]) -> Option<f64> {
    let mut t = 0.0;
    let pts: Vec<(f64, f64)> = levels
        .iter()
        .map(|&(v, w)| {
            let at = t + w / 2.0;
            t += w;
            (at, v)
        })
        .collect();
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return None;
    }
    let (mt, mv) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let var: f64 = pts.iter().map(|p| (p.0 - mt).powi(2)).sum();
    (var > 0.0).then(|| pts.iter().map(|p| (p.0 - mt) * (p.1 - mv)).sum::<f64>() / var)
}

/// A JVM's old generation (its own counters: what its collections left) grew through the
/// window and no collection brought it back: objects the program keeps. Near the most
/// the heap may take, the JVM will collect all the time, then fail.
///
/// False when: it grew by less than 32 MiB or a fifth, fell back (a collection of the old
/// generation), or filled to a bound and held.
fn jvm_old_growth(f: &Facts, old: &[(f64, f64)]) -> Vec<Finding> {
    let Some(g) = kept(old, 32.0 * 1048576.0) else {
        return Vec::new();
    };
    if g.held {
        return Vec::new();
    }
    let grew = g.to - g.from;
    // Its pace: the readings' least-squares slope (the young collections promote in
    // bursts, and two readings at the ends may fall either side of one).
    let per_s = slope(old).unwrap_or(grew / f.secs.max(1e-9));
    let max = f
        .values(col::TARGET, col::JVM_OLD_MAX)
        .last()
        .map(|(v, _)| *v)
        .filter(|m| *m > 0.0);
    let mut e = f.ev(
        "the JVM's old generation in use",
        format!(
            "{} → {}",
            kiln_model::format_bytes(g.from),
            kiln_model::format_bytes(g.to)
        ),
        "hsperfdata, the JVM's own counters as jstat reads them: sun.gc.generation.1.space.0.used",
    );
    e.series = Some(format!("{}/{}", col::TARGET, col::JVM_OLD_USED));
    let mut claim = format!(
        "the JVM's old generation grew by {} ({}/s) and no collection brought it back: objects the program keeps",
        kiln_model::format_bytes(grew),
        kiln_model::format_bytes(per_s)
    );
    // Full within minutes: the JVM will soon do little but collect, then fail; nothing
    // else the run measured matters as much.
    let mut urgent = false;
    if let Some(m) = max {
        urgent = per_s > 0.0 && (m - g.to) / per_s < 600.0;
        claim.push_str(&format!(
            " ({} of the {} the old generation may take",
            pct(g.to / m),
            kiln_model::format_bytes(m)
        ));
        if per_s > 0.0 && g.to < m {
            claim.push_str(&format!(
                "; full in about {:.0} s at this pace, when the JVM will collect all the time, then fail with OutOfMemoryError",
                (m - g.to) / per_s
            ));
        }
        claim.push(')');
    }
    let rate = (per_s / (10.0 * 1048576.0)).min(1.0);
    let score = if urgent { 0.97 } else { 0.4 + 0.4 * rate };
    vec![Finding::new("growth", Class::MemoryGrowth, score, claim)
        .evidence(e)
        .check(format!(
            "jstat -gcold {} 1000   # OU: the old generation in use, KiB",
            f.meta.target.pids.first().copied().unwrap_or(0)
        ))]
}

#[cfg(test)]
mod tests {
    use kiln_model::{EventInfo, FrameKind, Profile, WeightUnit, NO_TIME};

    /// Faults that zero anonymous pages are told from those that map shared pages or
    /// copy them after a fork, by the kernel's frames under the fault.
    #[test]
    fn page_faults_by_kind() {
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let t = p.thread(Some(1), Some(1), b"postgres");
        let mut add = |frames: &[&str], w: u64| {
            let ids: Vec<_> = frames
                .iter()
                .map(|n| p.frame(n.as_bytes(), FrameKind::Kernel))
                .collect();
            p.add_sample_path(&ids, w, NO_TIME, t);
        };
        let fault = [
            "main",
            "asm_exc_page_fault",
            "handle_mm_fault",
            "__handle_mm_fault",
        ];
        add(
            &[&fault[..], &["do_fault", "filemap_map_pages"]].concat(),
            5,
        );
        add(&[&fault[..], &["do_wp_page", "wp_page_copy"]].concat(), 2);
        add(
            &[&fault[..], &["do_anonymous_page", "clear_page_erms"]].concat(),
            3,
        );
        add(&["main", "heap_getnext"], 9);
        assert_eq!(super::fault_kinds(&p), (3, 7));
    }

    #[test]
    fn a_jvms_max_heap_from_its_command_line() {
        let cmd = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            super::max_heap(&cmd("java -Xms64m -Xmx64m Main")),
            Some(64.0 * 1048576.0)
        );
        assert_eq!(
            super::max_heap(&cmd("java -Xmx2g -Xmx1G Main")),
            Some(1073741824.0)
        );
        assert_eq!(super::max_heap(&cmd("java Main")), None);
        assert_eq!(super::max_heap(&cmd("java -Xmxlots Main")), None);
    }

    use super::*;

    #[test]
    fn beam_flags_and_spinning_frames() {
        assert!(beam_busy_wait_off(
            "/usr/lib/erlang/erts-12/bin/beam.smp -W w +sbwt none +sbwtdcpu none +sbwtdio none -K true"
        ));
        assert!(!beam_busy_wait_off("beam.smp -W w +sbwt none -K true"));
        assert!(beam_busy_wait_off(
            "beam.smp -sbwtnone -sbwtdcpunone -sbwtdio none"
        ));
        // The last of each flag decides.
        assert!(!beam_busy_wait_off(
            "beam.smp -sbwt none -sbwtdcpu none -sbwtdio none -sbwt very_long -B i -- -root x"
        ));
        assert!(beam_busy_wait_off(
            "beam.smp -sbwt none -sbwtdcpu none -sbwtdio none -- -sbwt very_long"
        ));
        assert!(beam_busy_wait_off(
            "beam.smp -sbwt long -sbwt none -sbwtdcpu none -sbwtdio none"
        ));
        assert!(spins("pthread_spin_lock"));
        assert!(spins("__sched_yield"));
        assert!(spins("SpinPause"));
        assert!(!spins("serve"));
    }
}
