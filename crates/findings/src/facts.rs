//! What the rules read: a run (or a window of it) reduced once to the figures every rule
//! needs — the outcome (throughput, latency, errors), the CPUs (the target's, kiln's, the
//! load command's, every other process's, the machine's), the thread groups' states, and
//! the profiles.
use crate::threads::{self, Group};
use kiln_model::Profile;
use kiln_store::columns as col;
use kiln_store::window::values;
use kiln_store::{JvmDumps, RunData, RunMeta, SeriesTable, Window, JVM_DUMPS_ATTACHMENT};
use std::borrow::Cow;

/// The outcome of the load over the window.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// What one operation is (`req`, `msg`, `op`).
    pub unit: String,
    /// Operations completed per second.
    pub throughput: Option<f64>,
    /// Operations sent per second.
    pub sent: Option<f64>,
    /// Operations completed in the window.
    pub ops: Option<f64>,
    /// The rate the load was set to (a constant-rate load).
    pub rate: Option<f64>,
    /// The connections or producers that drove it (a closed loop).
    pub concurrency: Option<f64>,
    /// Latency: what it measures, median, 99th percentile and mean, µs.
    pub latency: Option<WindowLatency>,
    /// Failed operations in the window, and what the load called them.
    pub errors: Option<f64>,
}

/// A latency over the window.
#[derive(Clone, Debug, Default)]
pub struct WindowLatency {
    /// What it measures (`latency`, `consumer_latency`).
    pub name: String,
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// The slowest, µs.
    pub max_us: f64,
    /// Mean, µs.
    pub mean_us: f64,
}

/// Where the machine's CPUs went over the window, in CPUs (a CPU busy the whole window
/// is 1).
#[derive(Clone, Debug, Default)]
pub struct Cpus {
    /// The machine's CPUs.
    pub machine: f64,
    /// Its busy share, 0 to 1.
    pub busy: Option<f64>,
    /// The target's.
    pub target: Option<f64>,
    /// kiln's own process (its load generator, recorder and sampler).
    pub kiln: Option<f64>,
    /// The kernel running kiln's eBPF programs on the target's threads.
    pub kiln_bpf: Option<f64>,
    /// An external load command (and its children).
    pub load_command: Option<f64>,
    /// Every other process, busiest first: its name and pid, and its CPUs.
    pub others: Vec<(String, f64)>,
    /// The target's threads' time runnable and waiting for a CPU, in thread-seconds per
    /// second (`schedstat`).
    pub runnable: Option<f64>,
    /// The target's cgroup's CPU quota, CPUs, and the share of the window it was
    /// throttled.
    pub quota: Option<(f64, f64)>,
    /// The CPU of the target's child processes that ended in the window and were waited
    /// for (`cutime` + `cstime`): programs it ran for its work.
    pub children: Option<f64>,
    /// Of the target's CPU, the copies of it that ended under a second old (forked for
    /// one connection: PostgreSQL's backends under `pgbench -C`).
    pub young_copies: Option<f64>,
}

/// A run, or a window of it, as the rules read it.
pub struct Facts<'a> {
    /// The run, its profiles cut to the window.
    pub run: Cow<'a, RunData>,
    /// Its metadata as the window sees it (the headline over the window).
    pub meta: RunMeta,
    /// The window.
    pub window: Window,
    /// The window's length, seconds.
    pub secs: f64,
    /// The load's outcome.
    pub outcome: Outcome,
    /// Where the CPUs went.
    pub cpus: Cpus,
    /// The target's thread groups, the busiest first.
    pub groups: Vec<Group>,
    /// The programs the target ran (its child processes under other names), as the CPU
    /// profile sampled them before their samples were set apart: their CPU seconds, and
    /// by name. The profiles the rules read hold the target's own samples only.
    pub ran: Option<(f64, Vec<(String, f64)>)>,
    /// The event loop's long runs of one function, found once
    /// ([`crate::rules::queues::loop_runs`]).
    pub(crate) loop_runs: std::cell::OnceCell<Option<crate::rules::queues::LoopRuns>>,
    /// The serving threads' long runs of one function, found once
    /// ([`crate::rules::queues::slow_runs`]).
    pub(crate) slow_runs: std::cell::OnceCell<Option<crate::rules::queues::LoopRuns>>,
    /// Whether the operations waited in a backlog the broker held, found once
    /// ([`crate::rules::queues::held_in_broker`]).
    pub(crate) held_in_broker: std::cell::OnceCell<bool>,
    /// Work serialised on no thread of its own, found once ([`crate::rules::cpu::serialised`]:
    /// the rule, and the rules that defer to it).
    pub(crate) serialised: std::cell::OnceCell<Vec<crate::Finding>>,
    /// The one-thread rule's result, found once ([`crate::rules::cpu::one_thread`]: the
    /// rule, and the lost-messages rule that ranks below it).
    pub(crate) one_thread: std::cell::OnceCell<Vec<crate::Finding>>,
    /// The client rule's result, found once ([`crate::rules::load::client`]: the rule, and
    /// the outside rule that gives way to it).
    pub(crate) client: std::cell::OnceCell<Vec<crate::Finding>>,
    /// The threads that polled for events most of the window, by group, found once
    /// ([`crate::rules::queues`]' pollers).
    pub(crate) pollers: std::cell::OnceCell<std::collections::HashMap<String, Vec<u32>>>,
}

impl<'a> Facts<'a> {
    /// The facts of `run` over its measurement window, or over `w`.
    pub fn of(run: &'a RunData, w: Option<&Window>) -> Facts<'a> {
        let whole = run;
        let (mut run, window): (Cow<'a, RunData>, Window) = match w {
            Some(w) if *w != run.meta.measure => (Cow::Owned(windowed(run, w)), w.clone()),
            _ => (Cow::Borrowed(run), run.meta.measure.clone()),
        };
        let ran = set_programs_apart(&mut run);
        // The window's figures from the whole run's seconds (its samples in the seconds
        // the window holds, as `kiln runs show RUN@A-B` counts them), not from the
        // samples cut to the window.
        let meta = if window == run.meta.measure && w.is_none() {
            run.meta.clone()
        } else {
            kiln_store::window::window_view(whole, &window)
        };
        let secs = window.seconds().max(1e-9);
        let outcome = outcome(&run, &meta, &window);
        let cpus = cpus(&run, &meta, &window);
        let groups = threads::groups(&run, &window);
        Facts {
            run,
            meta,
            window,
            secs,
            outcome,
            cpus,
            groups,
            ran,
            loop_runs: Default::default(),
            slow_runs: Default::default(),
            held_in_broker: Default::default(),
            serialised: Default::default(),
            one_thread: Default::default(),
            client: Default::default(),
            pollers: Default::default(),
        }
    }

    /// The series table `name`.
    pub fn table(&self, name: &str) -> Option<&SeriesTable> {
        self.run.series.iter().find(|t| t.name == name)
    }

    /// Column `column` of table `table` over the window: each second's value and length.
    pub fn values(&self, table: &str, column: &str) -> Vec<(f64, f64)> {
        values(self.table(table), column, &self.window)
    }

    /// The time-weighted mean of a column over the window.
    pub fn mean(&self, table: &str, column: &str) -> Option<f64> {
        mean_of(&self.values(table, column))
    }

    /// The profile of event `name`.
    pub fn profile(&self, name: &str) -> Option<&Profile> {
        self.run.profiles.iter().find(|p| p.event.name == name)
    }

    /// Whether the server's children are copies of itself more than programs it ran,
    /// by the CPU profile: the server forked to serve (a backend per connection), and
    /// their CPU in its count of its children's is its own.
    pub fn children_are_copies(&self) -> bool {
        let ran = self.ran.as_ref().map_or(0.0, |r| r.0);
        let copies = self
            .cpu_profile()
            .and_then(|p| crate::profile::copies_cpu(p, &self.meta.target.pids))
            .unwrap_or(0.0);
        copies > 0.0 && copies >= ran
    }

    /// The CPU profile (cpu-clock or task-clock).
    pub fn cpu_profile(&self) -> Option<&Profile> {
        self.run
            .profiles
            .iter()
            .find(|p| p.event.is_clock() && !p.samples.is_empty())
    }

    /// Where goroutines waited: Go's own block profile of the window (`--pprof`), else
    /// the goroutine waits kiln traced at each park (`-e offcpu` on a Go target).
    pub fn goroutine_waits(&self) -> Option<&Profile> {
        let find = |pred: &dyn Fn(&str) -> bool| {
            self.run
                .profiles
                .iter()
                .find(|p| pred(&p.event.name) && !p.samples.is_empty())
        };
        find(&|n| n.starts_with("pprof block delay"))
            .or_else(|| find(&|n| n == kiln_store::GOROUTINE_WAITS_EVENT))
    }

    /// The off-CPU profile, when the run recorded one.
    pub fn offcpu(&self) -> Option<&Profile> {
        self.profile("offcpu")
    }

    /// The off-CPU profile's waits by reason and site, a CPython wait's site named at
    /// the Python function the CPU profile finds above it.
    pub fn waits(&self) -> Option<crate::waits::Waits> {
        let mut w = crate::waits::offcpu_waits(self.offcpu()?);
        if let Some(cpu) = self.cpu_profile() {
            w.name_python_callers(cpu);
        }
        Some(w)
    }

    /// What the thread dumps `kiln run` took of a JVM target showed, the dumps in the
    /// window only; `None` when the run took none (not a JVM, `--jvm-dumps 0`, an older
    /// kiln) or the attachment does not read (a run imported from elsewhere).
    pub fn jvm_dumps(&self) -> Option<JvmDumps> {
        let a = self
            .run
            .attachments
            .iter()
            .find(|a| a.name == JVM_DUMPS_ATTACHMENT)?;
        let mut d: JvmDumps = serde_json::from_slice(&a.data).ok()?;
        d.dumps.retain(|x| self.window.contains(x.at_ns));
        Some(d)
    }

    /// Whether thread `tid` is the first thread of one of the target's processes (its
    /// main thread: Node's event loop, in each worker of a cluster).
    pub fn is_main_thread(&self, tid: u32) -> bool {
        self.meta.target.pids.contains(&tid)
    }

    /// The target's command line as one string (for flags it already has).
    pub fn cmdline(&self) -> String {
        self.meta.target.cmdline.join(" ")
    }

    /// The window's seconds from the measurement's start: `(from, to)`.
    pub fn seconds(&self) -> (f64, f64) {
        let start = self.run.meta.measure.start_ns;
        let at = |t: u64| t.saturating_sub(start) as f64 / 1e9;
        (at(self.window.start_ns), at(self.window.end_ns))
    }

    /// The sum of every operation's latency over the window, seconds (mean × count), or,
    /// for a closed loop without a latency, the time its connections were in flight.
    pub fn request_time_s(&self) -> Option<f64> {
        let o = &self.outcome;
        // A closed loop's connection holds one request at a time: their time in the
        // window is at most the connections' (after a long stall the latencies of requests
        // completed in the window reach back before it).
        let held = o
            .concurrency
            .filter(|_| o.unit == "req" && o.rate.is_none())
            .map(|c| c * self.secs);
        match (&o.latency, o.ops) {
            (Some(l), Some(n)) if n > 0.0 && l.mean_us > 0.0 => {
                let t = l.mean_us * 1e-6 * n;
                Some(held.map_or(t, |h| t.min(h)))
            }
            _ => o.concurrency.map(|c| c * self.secs),
        }
    }
}

/// The samples of programs the target ran ([`crate::profile::programs_ran`]) taken out of
/// `run`'s profiles, so that what the rules call the server's CPU is the server's; their
/// CPU by the CPU profile, `None` when it holds none.
fn set_programs_apart(run: &mut Cow<'_, RunData>) -> Option<(f64, Vec<(String, f64)>)> {
    let (pids, comm) = (&run.meta.target.pids, run.meta.target.comm.as_str());
    let ran: Vec<Vec<bool>> = run
        .profiles
        .iter()
        .map(|p| crate::profile::programs_ran(p, pids, comm))
        .collect();
    if !ran.iter().flatten().any(|&r| r) {
        return None;
    }
    let cpu = run
        .profiles
        .iter()
        .find(|p| p.event.is_clock() && !p.samples.is_empty())
        .and_then(|p| crate::profile::others_cpu(p, pids, comm));
    let owned = run.to_mut();
    for (p, ran) in owned.profiles.iter_mut().zip(&ran) {
        if ran.iter().any(|&r| r) {
            let threads = &p.samples.thread;
            let q = p.samples_where(|i| !ran.get(threads[i].0 as usize).copied().unwrap_or(false));
            *p = q;
        }
    }
    cpu
}

/// `run` cut to window `w`. Profiles without timestamps (a Go server's own block and
/// mutex profiles, fetched over the whole measurement) cannot be cut: each is kept with
/// its weights scaled by the window's share of the measurement, the same delay spread
/// evenly — a step of a sweep still sees the lock its run waited on.
fn windowed(run: &RunData, w: &Window) -> RunData {
    let mut out = kiln_store::window::window_data(run.clone(), w);
    let secs_share = w.seconds() / run.meta.measure.seconds().max(1e-9);
    // Waits in the operations' path (goroutines parked, Go's block and mutex profiles)
    // come with the operations: an untimed profile of them is the window's in the
    // proportion of the operations' time it holds (their latencies summed), not of its
    // seconds — a sweep's first step of 8 connections holds far less of it than its last
    // of 256.
    let ops_time = |w: &Window| {
        let (_, h) = kiln_store::window::latency_of(run, w)?;
        let ops = kiln_store::window::window_view(run, w)
            .headline
            .operations? as f64;
        Some(h.mean() * ops)
    };
    let ops_share = match (ops_time(w), ops_time(&run.meta.measure)) {
        (Some(a), Some(b)) if b > 0.0 => Some((a / b).clamp(0.0, 1.0)),
        _ => None,
    };
    for (p, cut) in run.profiles.iter().zip(out.profiles.iter_mut()) {
        let untimed = !p.samples.is_empty() && !p.samples.has_time();
        let name = &p.event.name;
        let waits = name == kiln_store::GOROUTINE_WAITS_EVENT
            || name.starts_with("pprof block")
            || name.starts_with("pprof mutex");
        let share = match ops_share {
            Some(x) if waits => x,
            _ => secs_share,
        };
        if untimed && share > 0.0 && share < 1.0 {
            let mut q = p.clone();
            for x in q.samples.weight.iter_mut() {
                *x = ((*x as f64) * share).round() as u64;
            }
            *cut = q;
        }
    }
    out
}

/// The time-weighted mean of `(value, seconds)` pairs.
pub fn mean_of(v: &[(f64, f64)]) -> Option<f64> {
    let secs: f64 = v.iter().map(|(_, s)| s).sum();
    (secs > 0.0).then(|| v.iter().map(|(x, s)| x * s).sum::<f64>() / secs)
}

/// The integral of rates over their seconds: a count.
pub fn count_of(v: &[(f64, f64)]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(|(x, s)| x * s).sum())
}

fn outcome(run: &RunData, meta: &RunMeta, w: &Window) -> Outcome {
    let h = &meta.headline;
    let load = run.series.iter().find(|t| t.name == col::LOAD);
    let latency = kiln_store::window::latency_of(run, w).map(|(name, hist)| WindowLatency {
        name,
        p50_us: hist.value_at_quantile(0.5) as f64,
        p99_us: hist.value_at_quantile(0.99) as f64,
        p999_us: hist.value_at_quantile(0.999) as f64,
        max_us: hist.max() as f64,
        mean_us: hist.mean(),
    });
    let latency = latency.or_else(|| command_latency(meta));
    let errors = ["errors", "nacked", "returned"]
        .iter()
        .filter_map(|c| count_of(&values(load, c, w)))
        .reduce(|a, b| a + b);
    Outcome {
        unit: if meta.load.unit.is_empty() {
            "op".into()
        } else {
            meta.load.unit.clone()
        },
        throughput: h.throughput,
        sent: h.send_rate,
        ops: h.operations.map(|o| o as f64),
        rate: meta.load.rate,
        concurrency: meta.load.concurrency,
        latency,
        errors,
    }
}

/// The latency an external load command reported of its whole run (its summary, kept as
/// the load's `parsed` report), where it gave a mean: the operations' time is its mean
/// times their count. Its percentiles where it gave them, else the mean stands for them
/// (and the largest it gave for the maximum).
fn command_latency(meta: &RunMeta) -> Option<WindowLatency> {
    let p = meta.load.report.get("parsed")?;
    let num = |k: &str| {
        p.get(k)
            .and_then(|v| v.as_f64())
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let mean = num("mean_latency_us")?;
    let at = |q: f64| kiln_store::window::command_percentile(p, q);
    let p50 = at(50.0).unwrap_or(mean);
    let max = num("max_latency_us");
    let p99 = at(99.0).or(max).unwrap_or(mean);
    let p999 = at(99.9).unwrap_or(p99);
    Some(WindowLatency {
        name: format!(
            "{} {}",
            p.get("latency")
                .and_then(|v| v.as_str())
                .unwrap_or("request"),
            kiln_store::window::COMMAND_LATENCY
        ),
        p50_us: p50,
        p99_us: p99,
        p999_us: p999,
        max_us: max.unwrap_or(p999).max(p999),
        mean_us: mean,
    })
}

fn cpus(run: &RunData, meta: &RunMeta, w: &Window) -> Cpus {
    let h = &meta.headline;
    let secs = w.seconds().max(1e-9);
    let table = |n: &str| run.series.iter().find(|t| t.name == n);
    let mean = |t: &str, c: &str| mean_of(&values(table(t), c, w));
    let mut others: Vec<(String, f64)> = table(col::OTHERS)
        .map(|t| {
            t.columns
                .iter()
                .filter_map(|c| {
                    let m = mean_of(&values(Some(t), &c.name, w))? / 100.0;
                    let name = col::other_name(&c.name);
                    Some((name.to_string(), m))
                })
                .filter(|(_, m)| *m > 0.0)
                .collect()
        })
        .unwrap_or_default();
    others.sort_by(|a, b| b.1.total_cmp(&a.1));
    let quota = match (
        mean(col::TARGET, col::CPU_QUOTA),
        mean(col::TARGET, col::THROTTLED),
    ) {
        (Some(q), Some(t)) => Some((q, t / 100.0)),
        _ => None,
    };
    Cpus {
        machine: f64::from(meta.cpus.max(1)),
        busy: h.machine_busy_pct.map(|b| b / 100.0),
        target: h.target_cpu_s.map(|s| s / secs),
        kiln: h.kiln_cpu_s.map(|s| s / secs),
        kiln_bpf: h.kiln_bpf_cpu_s.map(|s| s / secs),
        load_command: h.load_cpu_s.map(|s| s / secs),
        others,
        runnable: mean(col::TARGET, col::RUNNABLE).map(|p| p / 100.0),
        quota,
        children: mean(col::TARGET, col::CHILDREN_CPU).map(|p| p / 100.0),
        young_copies: mean(col::TARGET, col::YOUNG_COPIES_CPU).map(|p| p / 100.0),
    }
}
