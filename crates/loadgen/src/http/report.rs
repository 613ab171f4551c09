//! What an HTTP run adds to the engine's report: status codes, errors with an example each,
//! the accounting of every request, the target's CPU; the sweep table and the plateau.
use super::driver::{Extra, M};
use super::{ErrorKind, HttpOptions};
use crate::engine::report::LoadHeadline;
use crate::engine::stats::Percentiles;
use crate::engine::Report;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Failed requests of one kind.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ErrorCount {
    /// `connect`, `timeout`, `reset`, `closed`, `protocol`, `other`.
    pub kind: String,
    /// Requests (for `connect`: attempts).
    pub count: u64,
    /// The first message seen.
    pub example: Option<String>,
}

/// The HTTP summary of a run (the `summary` object of the JSON file).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HttpSummary {
    /// The run's `--id`.
    pub id: String,
    /// `closed-loop` or `constant-rate`.
    pub mode: String,
    /// `-R`, if any.
    pub rate: Option<f64>,
    /// `-c`.
    pub connections: u32,
    /// Seconds of load.
    pub duration_s: f64,
    /// Requests written.
    pub sent: u64,
    /// Complete responses.
    pub answered: u64,
    /// Requests that failed (timeouts, resets, closed, protocol, other).
    pub failed: u64,
    /// Requests in flight when the run ended.
    pub unanswered: u64,
    /// Scheduled requests never sent (every connection busy until the end).
    pub not_sent: u64,
    /// `sent == answered + failed + unanswered`: every request is in exactly one bucket.
    pub accounted: bool,
    /// Average answered rate, req/s.
    pub answered_rate: f64,
    /// Responses by status code.
    pub status: BTreeMap<u16, u64>,
    /// Errors by kind.
    pub errors: Vec<ErrorCount>,
    /// Latency from the intended send time (-R).
    pub latency_intended: Option<Percentiles>,
    /// Latency from the actual send (service time).
    pub latency: Option<Percentiles>,
    /// `--target-pid`.
    pub target_pids: Vec<u32>,
    /// The targets' CPU, percent of one core (user, system).
    pub target_cpu_user_pct: Option<f64>,
    /// System part.
    pub target_cpu_sys_pct: Option<f64>,
    /// The targets' context switches per second.
    pub target_ctx_switches_per_s: Option<f64>,
    /// Why the target could not be read for the whole run, if it could not.
    pub target_error: Option<String>,
    /// kiln's own CPU, percent of one core.
    pub client_cpu_pct: f64,
    /// kiln's CPU per answered request, µs.
    pub client_cpu_us_per_request: Option<f64>,
    /// The fault that ended the run early, if any.
    pub failure: Option<String>,
    /// Ended by Ctrl-C (or `kiln run`'s window).
    pub interrupted: bool,
}

fn pct_of_core(us: u64, secs: f64) -> f64 {
    us as f64 / (secs.max(1e-9) * 1e6) * 100.0
}

impl HttpSummary {
    /// The summary of a finished run of `opts`.
    pub(crate) fn of(opts: &HttpOptions, r: &Report, x: &Extra) -> Self {
        let h = &r.headline;
        let secs = h.duration_s;
        let failed: u64 = ErrorKind::ALL[1..]
            .iter()
            .map(|k| h.total(&format!("err_{}", k.name())))
            .sum();
        let measured = !opts.target_pids.is_empty();
        let answered = h.total_of(M.answered);
        HttpSummary {
            id: h.id.clone(),
            mode: if opts.rate.is_some() {
                "constant-rate".into()
            } else {
                "closed-loop".into()
            },
            rate: opts.rate,
            connections: opts.connections,
            duration_s: secs,
            sent: h.total_of(M.sent),
            answered,
            failed,
            unanswered: h.total_of(M.unanswered),
            not_sent: h.total_of(M.not_sent),
            accounted: h.total_of(M.sent) == answered + failed + h.total_of(M.unanswered),
            answered_rate: h.rate_of(M.answered),
            status: x
                .status
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(c, n)| (c as u16, *n))
                .collect(),
            errors: ErrorKind::ALL
                .iter()
                .filter_map(|&k| {
                    let count = h.total(&format!("err_{}", k.name()));
                    (count > 0).then(|| ErrorCount {
                        kind: k.name().into(),
                        count,
                        example: x.details[k as usize].clone(),
                    })
                })
                .collect(),
            latency_intended: h.latency_of(M.latency_intended).copied(),
            latency: h.latency_of(M.latency).copied(),
            target_pids: opts.target_pids.clone(),
            target_cpu_user_pct: measured
                .then(|| pct_of_core(h.total_of(M.target_cpu_user_us), secs)),
            target_cpu_sys_pct: measured
                .then(|| pct_of_core(h.total_of(M.target_cpu_sys_us), secs)),
            target_ctx_switches_per_s: measured.then(|| h.rate_of(M.target_ctx_switches)),
            target_error: x.target_error.clone(),
            client_cpu_pct: pct_of_core(h.total_of(M.client_cpu_us), secs),
            client_cpu_us_per_request: (answered > 0)
                .then(|| h.total_of(M.client_cpu_us) as f64 / answered as f64),
            failure: h.failure.clone(),
            interrupted: h.interrupted,
        }
    }

    /// Lines for the text summary, after the engine's (status, errors, accounting, CPU).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        let codes: Vec<String> = self
            .status
            .iter()
            .map(|(c, n)| format!("{c} × {n}"))
            .collect();
        out.push(format!(
            "status: {}",
            if codes.is_empty() {
                "-".to_string()
            } else {
                codes.join(", ")
            }
        ));
        for e in &self.errors {
            let what = if e.kind == "connect" {
                "attempt(s)"
            } else {
                "request(s)"
            };
            out.push(format!(
                "errors {}: {} {what}, e.g. {}",
                e.kind,
                e.count,
                e.example.as_deref().unwrap_or("-")
            ));
        }
        let mut acc = format!(
            "requests: {} sent = {} answered + {} failed + {} unanswered at the end",
            self.sent, self.answered, self.failed, self.unanswered
        );
        if !self.accounted {
            acc = format!(
                "requests: {} sent, {} answered, {} failed, {} unanswered: NOT ACCOUNTED FOR (a bug; please report it)",
                self.sent, self.answered, self.failed, self.unanswered
            );
        }
        if self.not_sent > 0 {
            let _ = write!(
                acc,
                "; {} scheduled requests not sent (every connection was busy: add -c)",
                self.not_sent
            );
        }
        out.push(acc);
        if self.mode == "closed-loop" {
            out.push("latency is closed-loop: measured from each actual send, so time a request waited behind a slow one is not in it (use -R for latency from intended send times)".into());
        }
        if let (Some(u), Some(s)) = (self.target_cpu_user_pct, self.target_cpu_sys_pct) {
            out.push(format!(
                "target CPU: {:.1}% of one core ({u:.1}% user, {s:.1}% system), {:.0} context switches/s",
                u + s,
                self.target_ctx_switches_per_s.unwrap_or(0.0)
            ));
        }
        if let Some(e) = &self.target_error {
            out.push(format!("target: {e}"));
        }
        out.push(format!(
            "kiln CPU: {:.1}% of one core{}",
            self.client_cpu_pct,
            self.client_cpu_us_per_request
                .map_or(String::new(), |u| format!(
                    ", {u:.1} µs per answered request"
                ))
        ));
        out
    }
}

/// One step of a sweep.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SweepRow {
    /// `connections` or `rate`.
    pub param: String,
    /// Its value.
    pub value: f64,
    /// Answered requests per second.
    pub answered_rate: f64,
    /// Latency percentiles (from the intended send time with -R, else closed-loop).
    pub latency: Option<Percentiles>,
    /// Failed requests.
    pub failed: u64,
    /// The targets' CPU, percent of one core (user + system), if measured.
    pub target_cpu_pct: Option<f64>,
    /// User part.
    pub target_cpu_user_pct: Option<f64>,
    /// System part.
    pub target_cpu_sys_pct: Option<f64>,
    /// Context switches per second of the targets.
    pub target_ctx_switches_per_s: Option<f64>,
    /// Time the targets' threads were runnable but waited for a CPU, percent of one core
    /// (10% = 100 ms each second), if measured.
    #[serde(default)]
    pub target_runq_wait_pct: Option<f64>,
    /// kiln's CPU, percent of one core.
    pub client_cpu_pct: f64,
    /// The whole machine's busy CPU, percent of all its CPUs.
    pub machine_cpu_pct: f64,
    /// `CLOCK_MONOTONIC` window of the step.
    pub start_mono_ns: u64,
    /// End of the window.
    pub end_mono_ns: u64,
    /// Why the step ended early, if it did.
    pub failure: Option<String>,
}

fn row_of(param: &str, value: f64, h: &LoadHeadline, measured: bool) -> SweepRow {
    let secs = h.duration_s;
    let failed: u64 = ErrorKind::ALL[1..]
        .iter()
        .map(|k| h.total(&format!("err_{}", k.name())))
        .sum();
    let u = pct_of_core(h.total_of(M.target_cpu_user_us), secs);
    let s = pct_of_core(h.total_of(M.target_cpu_sys_us), secs);
    SweepRow {
        param: param.into(),
        value,
        answered_rate: h.rate_of(M.answered),
        latency: h
            .latency_of(M.latency_intended)
            .or_else(|| h.latency_of(M.latency))
            .copied(),
        failed,
        target_cpu_pct: measured.then_some(u + s),
        target_cpu_user_pct: measured.then_some(u),
        target_cpu_sys_pct: measured.then_some(s),
        target_ctx_switches_per_s: measured.then(|| h.rate_of(M.target_ctx_switches)),
        target_runq_wait_pct: (measured && h.total_of(M.target_runq_wait_us) > 0)
            .then(|| pct_of_core(h.total_of(M.target_runq_wait_us), secs)),
        client_cpu_pct: pct_of_core(h.total_of(M.client_cpu_us), secs),
        machine_cpu_pct: pct_of_core(h.total_of(M.machine_busy_us), secs) / cpus() as f64,
        start_mono_ns: h.start_mono_ns,
        end_mono_ns: h.end_mono_ns,
        failure: h.failure.clone(),
    }
}

/// The rows of a sweep's report.
pub fn sweep_rows(r: &Report, opts: &HttpOptions) -> Vec<SweepRow> {
    let measured = !opts.target_pids.is_empty();
    r.steps
        .iter()
        .map(|s| row_of(&s.param, s.value, &s.headline, measured))
        .collect()
}

/// Where throughput stopped growing in a concurrency sweep, and what that says.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Plateau {
    /// Index of the step after which throughput grows less than the threshold while
    /// latency grows; `None`: throughput kept growing.
    pub step: Option<usize>,
    /// Its connection count.
    pub connections: Option<f64>,
    /// Its throughput, req/s.
    pub answered_rate: Option<f64>,
    /// The threshold used (0.1 = 10%).
    pub threshold: f64,
    /// The target's CPU at the plateau, percent of one core.
    pub target_cpu_pct: Option<f64>,
    /// The same as a share of the machine's CPUs.
    pub target_machine_pct: Option<f64>,
    /// CPUs of the machine.
    pub cpus: usize,
    /// The CPUs the target could use (its threads, the machine's cores, its cgroup quota:
    /// the smallest) and which limit that is.
    #[serde(default)]
    pub target_can_use: Option<(f64, String)>,
    /// The machine's busy share where it was flat, percent of all its CPUs.
    #[serde(default)]
    pub machine_busy_pct: Option<f64>,
    /// Other processes' CPU there (the machine's busy time less the target's and
    /// kiln's), percent of one core.
    #[serde(default)]
    pub others_cpu_pct: Option<f64>,
    /// The finding in words.
    pub verdict: String,
}

/// Share of what the target can use above which it counts as busy on CPU.
const CPU_BOUND: f64 = 80.0;
/// Share of all CPUs busy above which the machine counts as saturated.
const MACHINE_BOUND: f64 = 90.0;

/// The machine's CPUs, as /proc/stat counts them (its busy time is theirs).
fn cpus() -> usize {
    super::target::machine_cores()
}

/// Run-queue wait, as a share of the CPU time the target ran, above which its threads
/// count as kept from a CPU (they waited a quarter as long as they ran).
const RUNQ_BOUND: f64 = 0.25;

/// Finds the plateau: the first step k after which no later step's throughput exceeds step
/// k's by `threshold` (0.1 = 10%) while the next step's median latency grows by more than
/// `threshold`.
pub fn find_plateau(rows: &[SweepRow], threshold: f64, opts: &HttpOptions) -> Plateau {
    let cpus = cpus();
    let p50 = |r: &SweepRow| r.latency.map_or(0.0, |l| l.p50_us as f64);
    let ok: Vec<&SweepRow> = rows.iter().filter(|r| r.failure.is_none()).collect();
    let found = crate::engine::sweep::plateau(
        &ok.iter().map(|r| r.value).collect::<Vec<_>>(),
        &ok.iter().map(|r| r.answered_rate).collect::<Vec<_>>(),
        &ok.iter().map(|r| p50(r)).collect::<Vec<_>>(),
        threshold,
    );
    let mut p = Plateau {
        step: found.and_then(|k| rows.iter().position(|r| std::ptr::eq(r, ok[k]))),
        connections: found.map(|k| ok[k].value),
        answered_rate: found.map(|k| ok[k].answered_rate),
        threshold,
        target_cpu_pct: None,
        target_machine_pct: None,
        cpus,
        target_can_use: None,
        machine_busy_pct: None,
        others_cpu_pct: None,
        verdict: String::new(),
    };
    let Some(k) = found else {
        p.verdict = match ok.last() {
            Some(last) => format!(
                "throughput kept growing up to {} connections ({:.0} req/s): no plateau within {:.0}%",
                last.value,
                last.answered_rate,
                threshold * 100.0
            ),
            None => "no step completed".into(),
        };
        return p;
    };
    let (a, b) = (ok[k], ok[k + 1]);
    // Still growing, but not with the connections: they queued (Little's law).
    let queued = b.answered_rate >= a.answered_rate * (1.0 + threshold) && a.value > 0.0;
    let mut v = format!(
        "throughput stops {} at ~{} connections ({:.0} req/s; at {} connections {:.0} req/s while median latency went from {:.2} to {:.2} ms)",
        if queued {
            "following the connections"
        } else {
            "growing"
        },
        a.value,
        a.answered_rate,
        b.value,
        b.answered_rate,
        p50(a) / 1000.0,
        p50(b) / 1000.0
    );
    if queued {
        v.push_str(&format!(
            ": ×{:.2} the throughput for ×{:.1} the connections, the added connections mostly queued (latency = connections ÷ throughput)",
            b.answered_rate / a.answered_rate.max(1e-9),
            b.value / a.value
        ));
    }
    // The target's CPU over the steps from the plateau on: how busy it is while flat.
    let flat: Vec<f64> = ok[k..].iter().filter_map(|r| r.target_cpu_pct).collect();
    if flat.is_empty() || opts.target_pids.is_empty() {
        v.push_str(
            "; give --target-pid PID (or run under kiln run -p PID) to tell whether the target is busy on CPU",
        );
    } else {
        let cpu = flat.iter().cloned().fold(0.0, f64::max);
        let max = |f: fn(&SweepRow) -> f64| ok[k..].iter().map(|r| f(r)).fold(0.0, f64::max);
        let busy = max(|r| r.machine_cpu_pct);
        let kiln = max(|r| r.client_cpu_pct);
        let waits: Vec<f64> = ok[k..]
            .iter()
            .filter_map(|r| r.target_runq_wait_pct)
            .collect();
        let runq = (!waits.is_empty()).then(|| waits.iter().cloned().fold(0.0, f64::max));
        let room = super::target::cpu_room(&opts.target_pids);
        let others = (busy * cpus as f64 - cpu - kiln).max(0.0);
        p.target_cpu_pct = Some(cpu);
        p.target_machine_pct = Some(cpu / cpus as f64);
        p.target_can_use = Some(room.usable());
        p.machine_busy_pct = Some(busy);
        p.others_cpu_pct = Some(others);
        v.push_str(&cpu_judgement(&CpuSeen {
            cpu,
            room,
            busy,
            kiln,
            others,
            runq,
        }));
    }
    p.verdict = v;
    p
}

/// What a concurrency sweep saw of the CPU where throughput was flat (the busiest of the
/// flat steps), percent of one core unless said.
#[derive(Debug, Clone)]
pub struct CpuSeen {
    /// The target's CPU.
    pub cpu: f64,
    /// What it could use.
    pub room: super::target::CpuRoom,
    /// The machine's busy share, percent of all its CPUs.
    pub busy: f64,
    /// kiln's own CPU.
    pub kiln: f64,
    /// Other processes' CPU.
    pub others: f64,
    /// Time the target's threads waited for a CPU while runnable, if measured.
    pub runq: Option<f64>,
}

/// The plateau's CPU verdict: the target's CPU against what it can use (its threads, the
/// machine's cores, its cgroup quota), then the machine. "Short of CPU" only when the
/// target used near all it could, or when the machine was busy and — where the kernel
/// says how long its threads waited for a CPU — they did wait; then it names the
/// machine's busy share and who else used it.
pub fn cpu_judgement(c: &CpuSeen) -> String {
    let (can, limit) = c.room.usable();
    let used = c.cpu / 100.0;
    let cores = c.room.cores;
    let base = format!(
        " while the target used {used:.2} of the {can:.2} CPUs it can use ({limit}; {:.0}% of one core)",
        c.cpu
    );
    let who = format!(
        "the machine's {cores} cores were {:.0}% busy: other processes used {:.0}% of one core, kiln {:.0}%",
        c.busy, c.others, c.kiln
    );
    let waited = |w: f64| format!("its threads waited {:.0} ms per second for a CPU", w * 10.0);
    if used >= can * CPU_BOUND / 100.0 {
        return format!(
            "{base}: the target is busy on CPU, near all it can use — look at the CPU profile"
        );
    }
    if c.busy >= MACHINE_BOUND {
        return match c.runq {
            Some(w) if w < c.cpu * RUNQ_BOUND => format!(
                "{base}; {who}, but {} (against {:.0} ms it ran): the machine was busy, yet the bottleneck is not CPU — look at where it waited (the off-CPU profile; a Go server's block profile with --pprof)",
                waited(w),
                c.cpu * 10.0
            ),
            Some(w) => format!(
                "{base}; {who}, and {}: the target is short of CPU because others used it — drive the load from another machine or quiet the others",
                waited(w)
            ),
            None => format!(
                "{base}; {who}: the target may be short of CPU because others used it — drive the load from another machine or quiet the others"
            ),
        };
    }
    format!(
        "{base} and the machine had CPU to spare ({:.0}% busy of {cores} cores): the bottleneck is not CPU — look at where it waited (the off-CPU profile; a Go server's block profile with --pprof)",
        c.busy
    )
}

/// The sweep table as aligned text.
pub fn format_sweep(rows: &[SweepRow]) -> String {
    let param = rows.first().map_or("value", |r| r.param.as_str());
    let mut o = format!(
        "{:>12} {:>12} {:>10} {:>10} {:>10} {:>8} {:>12} {:>12} {:>10} {:>12}\n",
        param,
        "answered/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "failed",
        "target CPU%",
        "target cs/s",
        "kiln CPU%",
        "machine CPU%"
    );
    for r in rows {
        let l = r.latency.as_ref();
        let ms =
            |v: Option<u64>| v.map_or("-".to_string(), |v| format!("{:.2}", v as f64 / 1000.0));
        let opt = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| format!("{v:.d$}"));
        let _ = writeln!(
            o,
            "{:>12} {:>12.0} {:>10} {:>10} {:>10} {:>8} {:>12} {:>12} {:>10.1} {:>12.1}",
            r.value,
            r.answered_rate,
            ms(l.map(|l| l.p50_us)),
            ms(l.map(|l| l.p99_us)),
            ms(l.map(|l| l.max_us)),
            r.failed,
            opt(r.target_cpu_pct, 1),
            opt(r.target_ctx_switches_per_s, 0),
            r.client_cpu_pct,
            r.machine_cpu_pct
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(c: f64, rate: f64, p50_ms: f64, cpu: f64) -> SweepRow {
        let us = (p50_ms * 1000.0) as u64;
        SweepRow {
            param: "connections".into(),
            value: c,
            answered_rate: rate,
            latency: Some(Percentiles {
                count: 1,
                min_us: us,
                p50_us: us,
                p75_us: us,
                p95_us: us,
                p99_us: us,
                p999_us: us,
                max_us: us,
            }),
            failed: 0,
            target_cpu_pct: Some(cpu),
            target_cpu_user_pct: Some(cpu),
            target_cpu_sys_pct: Some(0.0),
            target_ctx_switches_per_s: Some(0.0),
            target_runq_wait_pct: None,
            client_cpu_pct: 0.0,
            machine_cpu_pct: 50.0,
            start_mono_ns: 0,
            end_mono_ns: 0,
            failure: None,
        }
    }

    #[test]
    fn plateau_found_and_absent() {
        let o = HttpOptions {
            target_pids: vec![1],
            ..Default::default()
        };
        // The seed's table: 1,426 → 1,541 → 1,564 QPS at 48/128/256, CPU 55–65% of a core.
        let rows = vec![
            row(8.0, 900.0, 8.0, 40.0),
            row(48.0, 1426.0, 33.0, 55.0),
            row(128.0, 1541.0, 83.0, 65.0),
            row(256.0, 1564.0, 163.0, 65.0),
        ];
        let p = find_plateau(&rows, 0.1, &o);
        assert_eq!(p.connections, Some(48.0), "{p:?}");
        assert!(
            p.verdict.contains("stops growing at ~48 connections"),
            "{}",
            p.verdict
        );
        assert!(
            p.verdict.contains("the bottleneck is not CPU"),
            "{}",
            p.verdict
        );
        // ×1.29 the throughput for ×6 the connections while latency grew ×4.7: they
        // queued, though each step grew by more than 10%.
        let rows = vec![
            row(8.0, 28539.0, 0.128, 100.0),
            row(48.0, 36767.0, 0.599, 129.0),
            row(128.0, 41000.0, 1.6, 130.0),
        ];
        let p = find_plateau(&rows, 0.1, &o);
        assert_eq!(p.connections, Some(8.0), "{p:?}");
        assert!(
            p.verdict
                .contains("stops following the connections at ~8 connections")
                && p.verdict
                    .contains("×1.29 the throughput for ×6.0 the connections"),
            "{}",
            p.verdict
        );
        // Growing all along: none.
        let rows = vec![
            row(8.0, 1000.0, 8.0, 20.0),
            row(16.0, 1900.0, 8.4, 40.0),
            row(32.0, 3700.0, 8.6, 80.0),
        ];
        let p = find_plateau(&rows, 0.1, &o);
        assert_eq!(p.step, None);
        assert!(p.verdict.contains("kept growing up to 32"), "{}", p.verdict);
        // Flat but CPU-bound.
        let n = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let rows = vec![
            row(8.0, 1000.0, 8.0, 95.0 * n),
            row(16.0, 1010.0, 16.0, 96.0 * n),
        ];
        let p = find_plateau(&rows, 0.1, &o);
        assert!(p.verdict.contains("busy on CPU"), "{}", p.verdict);
        // Without a target pid it says how to tell.
        let p = find_plateau(&rows, 0.1, &HttpOptions::default());
        assert!(p.verdict.contains("--target-pid"), "{}", p.verdict);
    }

    #[test]
    fn short_of_cpu_only_when_near_its_limit_or_kept_from_the_cpus() {
        use super::super::target::CpuRoom;
        let seen = |cpu, threads, quota, busy, runq| CpuSeen {
            cpu,
            room: CpuRoom {
                threads: Some(threads),
                cores: 2,
                quota,
            },
            busy,
            kiln: 32.0,
            others: (busy * 2.0 - cpu - 32.0_f64).max(0.0),
            runq,
        };
        // The Go example on a busy machine: 26% of one core, its threads seldom waiting
        // for a CPU — not short of CPU, and the machine's others are named.
        let v = cpu_judgement(&seen(26.0, 9, None, 95.0, Some(1.5)));
        assert!(v.contains("the bottleneck is not CPU"), "{v}");
        assert!(
            v.contains("95% busy") && v.contains("other processes used 132%"),
            "{v}"
        );
        assert!(!v.contains("short of CPU"), "{v}");
        // The same with its threads waiting as long as they ran: short of CPU, others named.
        let v = cpu_judgement(&seen(26.0, 9, None, 95.0, Some(30.0)));
        assert!(v.contains("short of CPU because others used it"), "{v}");
        assert!(v.contains("95% busy"), "{v}");
        // A single-threaded server at 95% of one core on an idle machine: at its limit.
        let v = cpu_judgement(&seen(95.0, 1, None, 50.0, Some(1.0)));
        assert!(
            v.contains("busy on CPU") && v.contains("its 1 thread"),
            "{v}"
        );
        // A cgroup quota of half a CPU, used.
        let v = cpu_judgement(&seen(48.0, 9, Some(0.5), 40.0, None));
        assert!(
            v.contains("busy on CPU") && v.contains("quota of 0.50"),
            "{v}"
        );
        // Room to spare everywhere.
        let v = cpu_judgement(&seen(60.0, 9, None, 50.0, None));
        assert!(v.contains("CPU to spare") && v.contains("not CPU"), "{v}");
    }
}
