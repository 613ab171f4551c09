//! Findings and the figures behind them as a terminal shows them: every name that came
//! from outside (functions, threads, commands) escaped ([`kiln_model::text`]).
use crate::threads::Group;
use crate::waits::{go_sites, offcpu_waits};
use crate::{Facts, Findings};
use kiln_model::text::{clean, clean_cut};
use kiln_model::Profile;
use std::fmt::Write as _;

/// How long a name may be on a line.
const NAME_MAX: usize = 160;

fn c(s: &str) -> String {
    clean_cut(s, 4 * NAME_MAX).into_owned()
}

/// The findings, numbered, each with its evidence and check; then what the run lacked.
pub fn findings(f: &Findings) -> String {
    let mut s = String::new();
    if f.findings.is_empty() {
        let _ = writeln!(s, "  findings: none stood out (no rule's evidence held)");
    } else {
        let _ = writeln!(
            s,
            "  findings (ranked; each with the figures it rests on and a command that checks it):"
        );
    }
    for (i, x) in f.findings.iter().enumerate() {
        let explains = x
            .explains
            .as_ref()
            .map(|e| format!(" [{:.0}% {}]", e.pct, c(&e.of)))
            .unwrap_or_default();
        let _ = writeln!(s, "    {}. {}: {}{explains}", i + 1, x.title, c(&x.claim));
        let ev: Vec<String> = x
            .evidence
            .iter()
            .map(|e| format!("{} {} ({})", c(&e.what), c(&e.value), c(&e.source)))
            .collect();
        if !ev.is_empty() {
            let _ = writeln!(s, "       evidence: {}", ev.join("; "));
        }
        if !x.check.is_empty() {
            let _ = writeln!(s, "       check: {}", c(&x.check));
        }
    }
    for l in &f.limits {
        let _ = writeln!(s, "  note: {}", c(l));
    }
    s
}

/// Each thread group's time, in thread-seconds per second: its threads, on a CPU,
/// runnable (waiting for a CPU), blocked (and why, with an off-CPU profile), and its
/// busiest thread's CPU.
pub fn thread_states(groups: &[Group], connections: Option<u64>) -> String {
    if groups.is_empty() {
        return "  thread states: no thread of the target was read\n".into();
    }
    let with_reasons = groups.iter().any(|g| !g.blocked_by.is_empty());
    let per_k = connections.filter(|&c| c > 0).map(|c| c as f64 / 1000.0);
    let mut head = vec![
        "thread group",
        "threads",
        "on CPU",
        "runnable",
        "blocked",
        "busiest thread",
    ];
    if with_reasons {
        head.push("blocked by");
    }
    if per_k.is_some() {
        head.push("CPU per 1,000 connections");
    }
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|h| h.to_string()).collect()];
    for g in groups
        .iter()
        .filter(|g| g.on_cpu > 0.0005 || g.runnable.unwrap_or(0.0) > 0.0005 || g.threads >= 1.0)
        .take(20)
    {
        let mut r = vec![
            c(&g.name),
            format!("{:.0}", g.threads),
            format!("{:.1}%", g.on_cpu * 100.0),
            g.runnable
                .map_or("-".into(), |x| format!("{:.1}%", x * 100.0)),
            format!("{:.1}%", g.blocked * 100.0),
            g.busiest
                .map_or("-".into(), |x| format!("{:.0}%", x * 100.0)),
        ];
        if with_reasons {
            let mut by = g.blocked_by.clone();
            by.sort_by(|a, b| b.1.total_cmp(&a.1));
            let parts: Vec<String> = by
                .iter()
                .filter(|(_, t)| *t >= 0.0005)
                .take(3)
                .map(|(r, t)| format!("{} {:.0}%", r.name(), t * 100.0))
                .collect();
            r.push(parts.join(", "));
        }
        if let Some(k) = per_k {
            r.push(format!("{:.2}%", g.on_cpu * 100.0 / k));
        }
        rows.push(r);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut s = String::from(
        "  thread states, % of a thread's time summed over the group (on CPU, runnable = waiting for a CPU, blocked):\n",
    );
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let pad = " ".repeat(widths[i] - x.chars().count());
                if i == 0 || i == 6 && with_reasons {
                    format!("{x}{pad}")
                } else {
                    format!("{pad}{x}")
                }
            })
            .collect();
        let _ = writeln!(s, "    {}", cells.join("  ").trim_end());
    }
    s
}

/// The figures behind the findings a reader may want to see whole: the top functions of
/// each CPU profile, off-CPU time by why and where, Go's own waits, who caused events at a
/// kernel site, the BEAM's scheduler states.
pub fn details(f: &Facts) -> String {
    let mut s = String::new();
    if let Some(b) = &f.meta.headline.beam {
        s.push_str(&beam_states(b));
    }
    go_waits(&mut s, f);
    for p in &f.run.profiles {
        if p.event.name == "offcpu" {
            offcpu(&mut s, p, f.cpu_profile(), &f.meta.name);
        } else if matches!(
            p.event.quantity(),
            kiln_model::Quantity::Bytes | kiln_model::Quantity::Events
        ) {
            causes(&mut s, p);
        } else if p.event.name != kiln_store::GOROUTINE_WAITS_EVENT
            && (!p.event.name.starts_with(kiln_store::PPROF_EVENT_PREFIX) || p.event.is_clock())
        {
            top_functions(&mut s, p);
        }
    }
    s
}

/// The line of the services the target called (its connections to them as they stood
/// when the measurement ended: address, connections, the listening process when it is
/// local); `None` when it held none.
pub fn peers(f: &Facts) -> Option<String> {
    let peers = &f.meta.target.peers;
    if peers.is_empty() {
        return None;
    }
    let each: Vec<String> = peers
        .iter()
        .map(|p| {
            let who = p
                .process
                .as_deref()
                .map(|x| clean_cut(x, 2 * kiln_model::text::MAX_SHOWN).into_owned())
                .unwrap_or_default();
            let sep = if who.is_empty() { "" } else { ", " };
            format!(
                "{} ({} open{sep}{who})",
                clean_cut(&p.address, 2 * kiln_model::text::MAX_SHOWN),
                p.connections
            )
        })
        .collect();
    Some(format!("  connected as a client to: {}\n", each.join("; ")))
}

/// The line of a JVM target's thread dumps: how many were taken of how many asked for,
/// what they cost (each stops the JVM's threads at a safepoint), and which monitor their
/// BLOCKED threads waited on; `None` when the run took none.
pub fn jvm_dumps(f: &Facts) -> Option<String> {
    let d = f.jvm_dumps()?;
    let mut s = format!(
        "  JVM thread dumps: {} of {} taken over the window",
        d.dumps.len(),
        d.asked
    );
    if !d.dumps.is_empty() {
        let took: f64 = d.dumps.iter().map(|x| x.took_ms).fold(0.0, |a, b| a + b);
        let longest = d.dumps.iter().map(|x| x.took_ms).fold(0.0, f64::max);
        let _ = write!(
            s,
            " ({took:.1} ms in all answering, the longest {longest:.1} ms; each a safepoint)"
        );
    }
    match crate::rules::waiting::contended(&d) {
        Some(m) => {
            let _ = write!(
                s,
                "; {} of {} dumped {} threads BLOCKED on a {}'s monitor in {} of {} dumps, waiting in {}",
                m.blocked,
                m.of,
                c(&m.group),
                c(&m.class),
                m.in_dumps,
                m.dumps,
                c(&m.method)
            );
            if let Some(h) = &m.holder {
                let _ = write!(s, " (held in {})", c(h));
            }
        }
        None if !d.dumps.is_empty() => s.push_str("; no thread BLOCKED on a monitor"),
        None => {}
    }
    if let Some(why) = d.failures.first() {
        let _ = write!(s, "; missing: {}", c(why));
    }
    s.push('\n');
    Some(s)
}

/// What the BEAM's schedulers did, in msacc's states.
pub fn beam_states(b: &kiln_store::SchedulerStates) -> String {
    let mut parts = [
        ("Erlang code", "emulator", b.emulator_pct),
        ("port and socket I/O", "port", b.port_pct),
        ("scheduling and busy-wait", "other", b.other_pct),
        ("garbage collection", "gc", b.gc_pct),
        ("I/O polling", "check_io", b.check_io_pct),
        ("aux work", "aux", b.aux_pct),
    ];
    parts.sort_by(|x, y| y.2.total_cmp(&x.2));
    let list: Vec<String> = parts
        .iter()
        .map(|(what, state, pct)| format!("{what} ({state}) {pct:.1}%"))
        .collect();
    let basis = match b.runnable_pct {
        Some(_) => "wall time from CPU samples, runnable and off-CPU time, as msacc counts it; % of their time awake",
        None => "from CPU samples; % of their CPU awake",
    };
    let mut out = format!(
        "  BEAM schedulers by state (msacc's states, {basis}): {}; {}\n",
        list.join(", "),
        match b.runnable_pct {
            Some(_) => format!("asleep {:.1}% of their time", b.sleep_pct),
            None => format!(
                "going to sleep and waking took {:.1}% of their CPU",
                b.sleep_pct
            ),
        }
    );
    if let Some(r) = b.runnable_pct {
        let _ = writeln!(
            out,
            "    waiting for a CPU (preempted, or yielded in the busy-wait): {r:.1}% of their awake time"
        );
    }
    out
}

/// A CPU profile's top functions by self weight, marking where interrupts come back on.
fn top_functions(s: &mut String, p: &Profile) {
    let top = top_self(p, 8);
    if top.is_empty() {
        return;
    }
    let _ = writeln!(s, "  top functions ({}, self):", c(&p.event.name));
    let mut reenable = false;
    for (name, share) in top {
        let mark = if kiln_model::causes::reenables_interrupts(&name) {
            reenable = true;
            " *"
        } else {
            ""
        };
        let _ = writeln!(s, "    {share:5.1}%  {}{mark}", c(&name));
    }
    if reenable {
        let _ = writeln!(
            s,
            "    * where interrupts come back on: cpu-clock is a timer interrupt, so a sample due while the kernel had interrupts off (switching tasks, holding a spinlock) is taken there, and stands for the kernel code before it (perf record -e cpu-clock shows the same)"
        );
    }
}

/// The functions with the most self weight, as shares of the profile (the weights of
/// [`kiln_diff::function_weights`], frames of one name and several kinds as one).
pub fn top_self(p: &Profile, n: usize) -> Vec<(String, f64)> {
    let mut v: Vec<(Vec<u8>, u128)> = kiln_diff::function_weights(p)
        .into_iter()
        .map(|(name, (own, _))| (name, own))
        .filter(|&(_, own)| own > 0)
        .collect();
    let total: u128 = v.iter().map(|&(_, own)| own).sum();
    if total == 0 {
        return Vec::new();
    }
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.into_iter()
        .take(n)
        .map(|(name, w)| {
            (
                String::from_utf8_lossy(&name).into_owned(),
                w as f64 * 100.0 / total as f64,
            )
        })
        .collect()
}

/// Off-CPU time by why it waited, then where the program waited (idle waiting left out).
fn offcpu(s: &mut String, p: &Profile, cpu: Option<&Profile>, run_name: &str) {
    let mut w = offcpu_waits(p);
    if let Some(cpu) = cpu {
        w.name_python_callers(cpu);
    }
    if w.total == 0 {
        return;
    }
    let q = p.event.quantity();
    let parts: Vec<String> = w
        .by_reason
        .iter()
        .filter(|(_, x)| *x > 0)
        .map(|(r, x)| {
            format!(
                "{} {} ({:.1}%)",
                r.name(),
                q.format_value(*x as f64),
                *x as f64 * 100.0 / w.total as f64
            )
        })
        .collect();
    let _ = writeln!(s, "  off-CPU by reason: {}", parts.join(", "));
    let program: u128 = w.sites.iter().map(|x| x.weight).sum();
    if program > 0 {
        let _ = writeln!(
            s,
            "  where threads waited (offcpu, the program's code above the wait; idle waiting left out: kiln flamegraph --event-filter offcpu --drop-idle run:{}):",
            clean_cut(run_name, 80)
        );
        for site in w.sites.iter().take(8) {
            let _ = writeln!(
                s,
                "    {:5.1}%  {} ({})",
                site.weight as f64 * 100.0 / program as f64,
                c(&site.label()),
                site.reason.name()
            );
        }
    }
    let others: Vec<String> = w
        .others
        .iter()
        .filter(|(_, x)| *x > 0)
        .map(|(o, x)| match *x as f64 * 100.0 / w.total as f64 {
            v if v < 0.05 => format!("{} <0.1%", o.name()),
            v => format!("{} {v:.1}%", o.name()),
        })
        .collect();
    if !others.is_empty() {
        let _ = writeln!(
            s,
            "  not the program's waits (left out of the list above): {}",
            others.join("; ")
        );
    }
}

/// Where goroutines waited, from Go's own block and mutex profiles of the same seconds.
fn go_waits(s: &mut String, f: &Facts) {
    let mut lines = Vec::new();
    for p in &f.run.profiles {
        let rest = if p.event.name == kiln_store::GOROUTINE_WAITS_EVENT {
            "goroutine waits"
        } else if let Some(rest) = p.event.name.strip_prefix(kiln_store::PPROF_EVENT_PREFIX) {
            rest
        } else {
            continue;
        };
        let (kind, lead, whose) = if rest == "goroutine waits" {
            (
                "parked",
                "goroutines parked in",
                "traced at each park; goroutines waiting for work left out",
            )
        } else if rest.starts_with("block delay") {
            ("block", "goroutines waited in", "Go's block profile")
        } else if rest.starts_with("mutex delay") {
            (
                "mutex",
                "contended:",
                "Go's mutex profile, at the holder's unlock",
            )
        } else {
            continue;
        };
        let tag = rest
            .split_once(" (")
            .map(|(_, t)| format!(", {}", t.trim_end_matches(')')))
            .unwrap_or_default();
        let (mut sites, mut total) = go_sites(p);
        // Traced at every park, the goroutines waiting for work (a connection's next
        // request, the collector's workers) are there too: left out, as the off-CPU list
        // leaves idle threads out.
        if kind == "parked" {
            sites.retain(|s| {
                !matches!(
                    s.reason,
                    kiln_model::waits::WaitReason::Idle | kiln_model::waits::WaitReason::Poll
                )
            });
            total = sites.iter().map(|s| s.weight).sum();
        }
        if total == 0 {
            continue;
        }
        let q = p.event.quantity();
        for site in sites.iter().take(3) {
            let share = site.weight as f64 * 100.0 / total as f64;
            if share < 1.0 {
                break;
            }
            lines.push(format!(
                "    {lead} {}: {share:.1}% of {kind} delay ({whose}{tag}; {} of {})",
                c(&site.label()),
                q.format_value(site.weight as f64),
                q.format_value(total as f64)
            ));
        }
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "  where goroutines waited (the same seconds; goroutines park without blocking a thread, so the thread-level off-CPU view cannot show these waits):"
    );
    for l in lines {
        let _ = writeln!(s, "{l}");
    }
}

/// An event taken at a kernel site, ranked by the program's code that caused it.
fn causes(s: &mut String, p: &Profile) {
    let top = kiln_model::causes::top_causes(p, 8);
    if top.is_empty() {
        return;
    }
    let q = p.event.quantity();
    let total: u128 = p.samples.weight.iter().map(|&w| w as u128).sum();
    let jit = top.iter().any(|x| x.name.contains(" ← "));
    let _ = writeln!(
        s,
        "  who caused {} ({} in all; by the code that asked: the program's first frame above the kernel, its system-call wrappers and its allocator{}):",
        clean(&p.event.name),
        q.format_value(total as f64),
        if jit { ", ← the JIT-compiled function above it" } else { "" }
    );
    for cause in top {
        let _ = writeln!(
            s,
            "    {:5.1}%  {:>10}  {}",
            cause.share,
            q.format_value(cause.weight as f64),
            c(&cause.name)
        );
    }
}
