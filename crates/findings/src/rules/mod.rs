//! The rules: one per kind of cause, each reading the [`Facts`] of a run and returning the
//! findings it can stand behind, each with its evidence, its share of the outcome and the
//! command that checks it. A rule checks what would make it false before it speaks.
//!
//! | rule | method | finds |
//! |---|---|---|
//! | [`cpu::one_thread`] | thread states, USE (one thread as a resource) | one thread at a whole CPU while the server could use more |
//! | [`cpu::serialised`] | the CPU profile's threads and times | work that ran on one thread at a time with no thread of its own (a goroutine, an Erlang process) |
//! | [`cpu::cpu_bound`] | USE (the CPUs) | the server's own work filling the CPUs |
//! | [`cpu::starvation`] | thread states (runnable), who else ran | threads ready but not running |
//! | [`waiting::blocked`] | thread states (blocked by reason) | locks, conditions in a request's path, the disk, sleeps, full pipes and sockets |
//! | [`waiting::programs`] | the kernel's count of its children's CPU, the CPU profile | programs the server runs for its operations |
//! | [`waiting::sleeping`] | thread states from `wchan` (no off-CPU profile) | disk waits, futexes, sleeps |
//! | [`waiting::go_waits`] | Go's block and mutex profiles | goroutines waiting on a lock or channel |
//! | [`waiting::monitors`] | the JVM's thread dumps (threads BLOCKED, sampled) | a Java monitor its pool's threads wait to enter |
//! | [`waiting::outside`] | Little's law against the server's busy time | the time spent outside the server |
//! | [`queues::queue`] | Little's law on a measured queue | a broker's queue, or a backlog before it, growing |
//! | [`queues::accept`] | USE (the listen queue) | connections waiting to be accepted |
//! | [`queues::pool`] | thread states, Little's law | a pool (or the one thread) every operation waits for |
//! | [`queues::event_loop`] | per-thread states from the profiles, Little's law | an event loop blocked in a synchronous call |
//! | [`queues::loop_stalls`] | the loop thread's CPU samples in time order | an event loop that runs one function for long at times |
//! | [`queues::slow_paths`] | the serving threads' CPU samples in time order | a slow path on the CPU that the slowest operations took |
//! | [`waiting::split_responses`] | the load's receive stamps | responses held by the delayed ACK |
//! | [`runtime::gc`] | the runtimes' categories, msacc | garbage collection's share |
//! | [`runtime::churn`] | page faults, the kernel's memory paths | memory taken and given back per operation |
//! | [`runtime::busy_wait`] | spin categories, the VM's flags | spinning |
//! | [`runtime::growth`] | RSS over the window | memory growing |
//! | [`load::client`] | the load generator's CPU against the server's states | the client as the limit |
//! | [`load::held_back`] | the load's flow-control flag and events | publishers blocked by the broker's resource alarm |
//! | [`load::errors`] | the load's own counts | failed operations |
//! | [`queues::open_files`] | the open files against the target's limit | a server at its open-files limit (`ulimit -n`) |
//! | [`load::refused`] | the fleet's failed connection attempts, by reason | connections the server refused |
//! | [`load::connections`] | the load's connections opened against its answers | a new connection per request (keep-alive off at the server) |
//! | [`load::processes`] | the kernel's count of its ended children's CPU, the new processes in the CPU profile | a process started per connection (a forking server) |
//! | [`sweep::knee`] | Little's law across steps, then every rule on the step | where a sweep broke, and why |
use crate::{Evidence, Facts, Finding, Findings, MIN_SCORE};

pub mod cpu;
pub mod load;
pub mod queues;
pub mod runtime;
pub mod sweep;
pub mod waiting;

/// A rule: the findings it makes of a run.
pub type Rule = fn(&Facts) -> Vec<Finding>;

/// Every rule, in the order ties are broken.
pub const RULES: &[(&str, Rule)] = &[
    ("knee", sweep::knee),
    ("one-thread", cpu::one_thread),
    ("serialised", cpu::serialised),
    ("starvation", cpu::starvation),
    ("blocked", waiting::blocked),
    ("programs", waiting::programs),
    ("sleeping", waiting::sleeping),
    ("go-waits", waiting::go_waits),
    ("monitors", waiting::monitors),
    ("queue", queues::queue),
    ("accept", queues::accept),
    ("open-files", queues::open_files),
    ("pool", queues::pool),
    ("event-loop", queues::event_loop),
    ("loop-stalls", queues::loop_stalls),
    ("gc", runtime::gc),
    ("churn", runtime::churn),
    ("busy-wait", runtime::busy_wait),
    ("cpu-bound", cpu::cpu_bound),
    ("slow-paths", queues::slow_paths),
    ("outside", waiting::outside),
    ("split", waiting::split_responses),
    ("client", load::client),
    ("held-back", load::held_back),
    ("errors", load::errors),
    ("refused", load::refused),
    ("lost", load::lost),
    ("connections", load::connections),
    ("processes", load::processes),
    ("growth", runtime::growth),
];

/// Every rule over `f`, ranked: the largest score first; a class named twice keeps its
/// best; findings under [`MIN_SCORE`] left out.
pub fn run_all(f: &Facts) -> Findings {
    run_rules(f, RULES)
}

/// The rules of `rules` over `f`, ranked.
pub fn run_rules(f: &Facts, rules: &[(&str, Rule)]) -> Findings {
    let mut all: Vec<Finding> = rules.iter().flat_map(|(_, r)| r(f)).collect();
    all.retain(|x| x.score >= MIN_SCORE && x.score.is_finite());
    // A cgroup's memory limit that evicted what the server reads: ranked by what the
    // other rules found it caused (the disk waits, the CPU reading pages back).
    if let Some(m) = waiting::memory_limit(f, &mut all) {
        all.push(m);
    }
    // A cause outside the server goes below each of the server's own that explains more
    // of the same outcome (the machine's state is not the server's defect).
    let own: Vec<(String, f64, f64)> = all
        .iter()
        .filter(|x| !x.outside)
        .filter_map(|x| {
            Some((
                x.explains.as_ref()?.of.clone(),
                x.explains.as_ref()?.pct,
                x.score,
            ))
        })
        .collect();
    for x in all.iter_mut().filter(|x| x.outside) {
        let Some(e) = &x.explains else { continue };
        if let Some(below) = own
            .iter()
            .filter(|(of, pct, _)| same_outcome(of, &e.of) && *pct > e.pct)
            .map(|(_, _, score)| *score)
            .reduce(f64::min)
        {
            x.score = x.score.min(below - 1e-6);
        }
    }
    // Stable: ties keep the rules' order.
    all.sort_by(|a, b| b.score.total_cmp(&a.score));
    // One finding per kind of cause: the best-ranked says it.
    let mut seen: Vec<crate::Class> = Vec::new();
    all.retain(|x| {
        let new = !seen.contains(&x.class);
        seen.push(x.class);
        new
    });
    Findings {
        findings: all,
        limits: limits(f),
    }
}

/// Whether two findings' shares are of the same outcome: the same words, or one's a part
/// of the other's (`of the reqs' time: waiting inside the server` is of `of the reqs' time`).
fn same_outcome(a: &str, b: &str) -> bool {
    let part = |x: &str, of: &str| {
        x.strip_prefix(of)
            .is_some_and(|r| r.is_empty() || r.starts_with(':'))
    };
    part(a, b) || part(b, a)
}

/// What the run lacked to tell more.
fn limits(f: &Facts) -> Vec<String> {
    let mut out = Vec::new();
    let has = |e: &str| f.run.profiles.iter().any(|p| p.event.name == e);
    if !has("offcpu") && f.groups.iter().any(|g| g.blocked > 0.5) {
        out.push(
            "threads were blocked, but the run recorded no off-CPU profile: record with -e cpu,offcpu to name what they waited for".into(),
        );
    }
    // Goroutines and Erlang processes wait without blocking a thread: operations that
    // spent most of their time where no thread of the server worked or waited in its
    // work waited there, unseen by any thread-level profile.
    let parked_unseen = match f.runtime() {
        Runtime::Go => f.goroutine_waits().is_none(),
        Runtime::Beam => true,
        _ => false,
    };
    // (Messages in a broker's backlog waited in its queue: the queue's finding says so.)
    // (A fleet holding idle connections, with no count of operations, waited for nothing.)
    let parked_unseen =
        parked_unseen && !queues::held_in_broker(f) && f.outcome.ops.is_some_and(|o| o > 0.0);
    if let (true, Some(req_s)) = (parked_unseen, f.request_time_s()) {
        let busy: f64 = f.groups.iter().map(|g| g.busy()).sum::<f64>() * f.secs;
        if req_s >= 2.0 * f.secs && req_s > 3.0 * busy {
            // Threads ready for most of the CPUs the server could use: the operations
            // queued for them in the runtime's own run queues, not in a receive.
            let ready = f.cpus.target.unwrap_or(0.0) + f.cpus.runnable.unwrap_or(0.0);
            let full = ready >= 0.7 * f.cpu_limit().0;
            let how = if full && f.runtime() == Runtime::Go {
                "its threads were busy on the CPUs it could use, and its goroutines queued for them in the runtime's run queues (GODEBUG=schedtrace=1000 on the server: runqueue)"
            } else if full {
                "its schedulers were busy on the CPUs it could use, and its Erlang processes queued for them in the schedulers' run queues (erlang:statistics(total_run_queue_lengths) in the node's shell)"
            } else if f.runtime() == Runtime::Go {
                "a Go server's goroutines wait on locks, channels and sleeps without blocking a thread: record with -e cpu,offcpu (kiln then traces where goroutines park, in a binary with its symbols), or serve net/http/pprof (with runtime.SetBlockProfileRate set) and run with --pprof http://HOST:PORT/debug/pprof/"
            } else {
                "Erlang processes wait in receive (for a gen_server's reply, a timer, a port) without blocking a scheduler: look at the node's processes by message queue and current function (recon:proc_window(message_queue_len, 5, 1000), or etop)"
            };
            out.push(format!(
                "the {}s spent {} of their time where no thread of the server worked or waited in its work; {how}",
                f.outcome.unit,
                pct((1.0 - busy / req_s).clamp(0.0, 1.0))
            ));
        }
    }
    if f.outcome.latency.is_none() && f.outcome.throughput.is_none() {
        out.push(
            "the load measured no throughput or latency: findings weigh the server's own time"
                .into(),
        );
    }
    out
}

impl Facts<'_> {
    /// A figure over the whole window, from `source`.
    pub fn ev(
        &self,
        what: impl Into<String>,
        value: impl Into<String>,
        source: impl Into<String>,
    ) -> Evidence {
        let (from_s, to_s) = self.seconds();
        Evidence {
            what: what.into(),
            value: value.into(),
            source: source.into(),
            from_s,
            to_s,
            series: None,
            profile: None,
            focus: None,
        }
    }

    /// The target's pid(s) as a command line takes them (`4242`, `4242,4311`).
    pub fn pid(&self) -> String {
        let p: Vec<String> = self
            .meta
            .target
            .pids
            .iter()
            .map(|p| p.to_string())
            .collect();
        if p.is_empty() {
            "PID".into()
        } else {
            p.join(",")
        }
    }

    /// The window's length for a shell command (whole seconds, at least 1).
    pub fn secs_arg(&self) -> u64 {
        self.secs.round().max(1.0) as u64
    }

    /// The value of a runtime's setting `k` in the target's environment (only those kiln
    /// keeps: `kiln_store::RUNTIME_ENV`).
    pub fn environ(&self, k: &str) -> Option<&str> {
        self.meta
            .target
            .env
            .iter()
            .find_map(|v| v.strip_prefix(k)?.strip_prefix('='))
    }

    /// How many CPUs the server could run on at once, and what set it when not the
    /// machine: its cgroup's quota, its CPU affinity, or its runtime's setting (Go's
    /// `GOMAXPROCS`, the BEAM's schedulers online `+S`, a JVM's
    /// `-XX:ActiveProcessorCount`). The smallest of them holds.
    pub fn cpu_limit(&self) -> (f64, Option<CpuCap>) {
        let machine = self.cpus.machine;
        let t = &self.meta.target;
        let env = |k: &str| self.environ(k);
        let mut caps: Vec<(f64, CpuCap)> = Vec::new();
        if let Some((q, _)) = self.cpus.quota {
            caps.push((q, CpuCap::Quota(q)));
        }
        if let Some(n) = t.cpus_allowed.filter(|&n| n > 0) {
            caps.push((f64::from(n), CpuCap::Affinity(n)));
        }
        match self.runtime() {
            Runtime::Go => {
                if let Some(n) = env("GOMAXPROCS").and_then(|v| v.trim().parse::<u32>().ok()) {
                    caps.push((f64::from(n.max(1)), CpuCap::GoMaxProcs(n)));
                }
            }
            Runtime::Beam => {
                if let Some(n) = beam_schedulers_online(&t.cmdline) {
                    caps.push((f64::from(n), CpuCap::BeamSchedulers(n)));
                }
            }
            Runtime::Jvm => {
                let opts = ["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS"];
                let from_env = opts
                    .iter()
                    .filter_map(|k| env(k))
                    .flat_map(|v| v.split_whitespace());
                let n = t
                    .cmdline
                    .iter()
                    .map(String::as_str)
                    .chain(from_env)
                    .filter_map(|a| a.strip_prefix("-XX:ActiveProcessorCount="))
                    .filter_map(|v| v.parse::<u32>().ok())
                    .next_back();
                if let Some(n) = n.filter(|&n| n > 0) {
                    caps.push((f64::from(n), CpuCap::JvmProcessors(n)));
                }
            }
            _ => {}
        }
        caps.into_iter()
            .filter(|(c, _)| *c < machine)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map_or((machine, None), |(c, why)| (c, Some(why)))
    }

    /// The target's runtime, from its executable, name and command line.
    pub fn runtime(&self) -> Runtime {
        let t = &self.meta.target;
        let exe = t.exe.rsplit('/').next().unwrap_or("");
        let all = format!(
            "{} {} {}",
            t.comm,
            exe,
            t.cmdline.first().map(String::as_str).unwrap_or("")
        );
        if all.contains("beam") || all.contains("erl") {
            Runtime::Beam
        } else if all.contains("java") {
            Runtime::Jvm
        } else if all.contains("node") {
            Runtime::Node
        } else if all.contains("python") {
            Runtime::Python
        } else if self.cpu_profile().is_some_and(|p| {
            p.frames
                .iter()
                .any(|(_, f)| p.strings.get(f.name).starts_with(b"runtime."))
        }) {
            Runtime::Go
        } else {
            Runtime::Native
        }
    }
}

/// What held a server to fewer CPUs than the machine has.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CpuCap {
    /// Its cgroup's `cpu.max`, in CPUs.
    Quota(f64),
    /// Its CPU affinity: the CPUs `Cpus_allowed_list` holds.
    Affinity(u32),
    /// Go's `GOMAXPROCS` from its environment.
    GoMaxProcs(u32),
    /// The BEAM's schedulers online (`+S N:M`).
    BeamSchedulers(u32),
    /// A JVM's `-XX:ActiveProcessorCount`.
    JvmProcessors(u32),
}

impl CpuCap {
    /// The cap in words, as a clause.
    pub fn describe(&self) -> String {
        match *self {
            CpuCap::Quota(q) => format!("its cgroup's CPU quota ({})", cpus(q)),
            CpuCap::Affinity(n) => format!("its CPU affinity ({n} CPUs allowed)"),
            CpuCap::GoMaxProcs(n) => format!("GOMAXPROCS={n}"),
            CpuCap::BeamSchedulers(n) => format!("+S {n} (schedulers online)"),
            CpuCap::JvmProcessors(n) => format!("-XX:ActiveProcessorCount={n}"),
        }
    }

    /// Where the system says so, independently of kiln.
    pub fn source(&self) -> &'static str {
        match self {
            CpuCap::Quota(_) => "the cgroup's cpu.max",
            CpuCap::Affinity(_) => "/proc/PID/status (Cpus_allowed_list)",
            CpuCap::GoMaxProcs(_) => "/proc/PID/environ",
            CpuCap::BeamSchedulers(_) | CpuCap::JvmProcessors(_) => "/proc/PID/cmdline",
        }
    }

    /// Whether the program (or its runtime) set it, rather than the cgroup it runs in: a
    /// quota throttles threads that are ready to run, which is starvation's to say.
    pub fn set_by_program(&self) -> bool {
        !matches!(self, CpuCap::Quota(_))
    }
}

/// The runtime a target runs on: what its threads and frames mean, and which of its own
/// tools checks a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// Erlang's BEAM.
    Beam,
    /// A JVM.
    Jvm,
    /// Node.js.
    Node,
    /// CPython.
    Python,
    /// Go.
    Go,
    /// Compiled code (C, C++, Rust).
    Native,
}

/// A share as text: `78%`, `0.4%`.
pub fn pct(x: f64) -> String {
    // (+ 0.0: an empty sum is -0.0, never said "-0%".)
    let p = x * 100.0 + 0.0;
    if p < 1.0 && p > 0.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// Seconds as text: `1.2 s`, `35 ms`, `420 µs`.
pub fn secs(s: f64) -> String {
    kiln_model::format_ns(s * 1e9)
}

/// CPUs as text: `0.85 CPU`, `1.90 CPUs`.
pub fn cpus(c: f64) -> String {
    // (+ 0.0: an empty sum is -0.0, never said "-0.00 CPU".)
    let c = c + 0.0;
    if (c - 1.0).abs() < 0.005 || c < 1.0 {
        format!("{c:.2} CPU")
    } else {
        format!("{c:.2} CPUs")
    }
}

/// The schedulers a BEAM runs Erlang code on (`+S N:M`, passed to `beam.smp` as `-S N:M`:
/// M online, else N), when its command line sets them.
pub fn beam_schedulers_online(cmdline: &[String]) -> Option<u32> {
    let mut it = cmdline.iter().map(String::as_str).peekable();
    let mut found = None;
    while let Some(a) = it.next() {
        let Some(rest) = a.strip_prefix("-S").or_else(|| a.strip_prefix("+S")) else {
            continue;
        };
        let v = if rest.is_empty() {
            match it.peek() {
                Some(v) => *v,
                None => break,
            }
        } else {
            rest
        };
        let (n, m) = v.split_once(':').unwrap_or((v, ""));
        let parse = |x: &str| x.parse::<u32>().ok().filter(|&x| x > 0);
        if let Some(k) = parse(m).or_else(|| parse(n)) {
            found = Some(k);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_sum_is_said_as_nothing_not_minus_nothing() {
        let none: f64 = std::iter::empty::<f64>().sum();
        assert_eq!(cpus(none), "0.00 CPU");
        assert_eq!(pct(none), "0%");
    }
}
