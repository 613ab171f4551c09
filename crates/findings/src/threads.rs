//! Thread-state analysis: where each thread group's time went.
//!
//! Every thread of the target is, at each instant, on a CPU, runnable (ready, waiting for
//! a CPU), or blocked. The kernel counts the first two per thread (`/proc/PID/task/TID/
//! schedstat`), the sampler sums them per thread group each second, and the rest of the
//! group's wall time (its threads × the seconds) is blocked. An off-CPU profile, when
//! recorded, splits the blocked time by why each thread waited (a lock, the disk, a
//! sleep, the network or an event, a runtime idling: [`kiln_model::waits`]).
//!
//! Units: thread-seconds per second — a group of 8 threads over a second has 8 to spend;
//! a thread on a CPU the whole second spends 1 there.
use kiln_model::transform::{default_merge_rules, merge_name};
use kiln_model::waits::{stack_reasons, WaitReason};
use kiln_model::Profile;
use kiln_store::columns as col;
use kiln_store::window::values;
use kiln_store::{RunData, Window};

/// One thread group's time over the window, in thread-seconds per second.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Group {
    /// The group, as the series names it (`scheduler`, `worker`, `srv`).
    pub name: String,
    /// Its threads (mean over the window).
    pub threads: f64,
    /// On a CPU.
    pub on_cpu: f64,
    /// Runnable, waiting for a CPU (`None`: the run has no run-queue figures).
    pub runnable: Option<f64>,
    /// The CPU of its busiest thread, each second's busiest averaged (1: a whole CPU).
    pub busiest: Option<f64>,
    /// The time its busiest thread was on a CPU or waiting for one, each second's busiest
    /// averaged (1: never idle).
    pub busiest_busy: Option<f64>,
    /// Blocked: the rest of its wall time.
    pub blocked: f64,
    /// Blocked by why (from the off-CPU profile), when the run recorded one.
    pub blocked_by: Vec<(WaitReason, f64)>,
    /// The function its threads were started in, when the group is the part of a name's
    /// threads that one entry runs (a name that holds two pools: Node's libuv `worker`s
    /// and V8's platform workers are all 'node'); its figures are then the profiles'.
    pub entry: Option<String>,
}

impl Group {
    /// Time blocked for `reason`, from the off-CPU profile (0 without one).
    pub fn blocked_for(&self, reason: WaitReason) -> f64 {
        self.blocked_by
            .iter()
            .filter(|(r, _)| *r == reason)
            .map(|(_, t)| t)
            .sum()
    }

    /// Whether one of its threads never waited for work: on a CPU at least 85% of the
    /// time, or on one or ready for one at least 90%.
    pub fn has_saturated_thread(&self) -> bool {
        self.busiest.is_some_and(|b| b >= 0.85) || self.busiest_busy.is_some_and(|b| b >= 0.9)
    }

    /// Time spent working or waiting in the work's path: on a CPU, runnable, and blocked
    /// for any reason but waiting for work (a runtime idling, an event poll).
    pub fn busy(&self) -> f64 {
        // Threads that never ran in the window (a JVM's cleaner and finalizer parked on a
        // condition, a main thread in join) were in no operation's path, whatever they
        // were blocked on.
        // (A thread that ran a few microseconds a request, blocked in its work the rest,
        // did run: the off-CPU profile holds its blocks, each ended by running again.)
        let ran = self
            .blocked_by
            .iter()
            .any(|(r, t)| *t > 0.0 && !matches!(r, WaitReason::Idle | WaitReason::Poll));
        if !ran && self.on_cpu + self.runnable.unwrap_or(0.0) < 1e-3 * self.threads.max(1.0) {
            return 0.0;
        }
        let idle = self.blocked_for(WaitReason::Idle) + self.blocked_for(WaitReason::Poll);
        let blocked_working = if self.blocked_by.is_empty() {
            0.0
        } else {
            (self.blocked - idle).max(0.0)
        };
        self.on_cpu + self.runnable.unwrap_or(0.0) + blocked_working
    }

    /// [`Group::busy`], blocked time counted only where the off-CPU profile saw a block
    /// end in the work: a runtime's thread parked through the whole window (a Go M that
    /// never woke) is blocked by the kernel's count, in no operation's path.
    pub fn busy_seen(&self) -> f64 {
        if self.blocked_by.is_empty() {
            return self.busy();
        }
        let working: f64 = self
            .blocked_by
            .iter()
            .filter(|(r, _)| !matches!(r, WaitReason::Idle | WaitReason::Poll))
            .map(|(_, t)| *t)
            .sum();
        self.busy()
            .min(self.on_cpu + self.runnable.unwrap_or(0.0) + working)
    }
}

/// The target's thread groups over `w`, the busiest first ([`Group::busy`], then CPU).
pub fn groups(run: &RunData, w: &Window) -> Vec<Group> {
    let Some(target) = run.series.iter().find(|t| t.name == col::TARGET) else {
        return Vec::new();
    };
    let mean = |c: &str| crate::facts::mean_of(&values(Some(target), c, w));
    let offcpu = run
        .profiles
        .iter()
        .find(|p| p.event.name == "offcpu")
        .map(|p| blocked_by_group(p, w.seconds().max(1e-9)));
    let mut out: Vec<Group> = col::groups(target, col::GROUP_CPU_USER)
        .into_iter()
        .map(|g| {
            let at = |c: &str| mean(&col::per_group(c, g));
            let on_cpu = (at(col::GROUP_CPU_USER).unwrap_or(0.0)
                + at(col::GROUP_CPU_SYSTEM).unwrap_or(0.0))
                / 100.0;
            let runnable = at(col::GROUP_RUNNABLE).map(|p| p / 100.0);
            let threads = at(col::GROUP_THREADS).unwrap_or(1.0);
            let blocked = (threads - on_cpu - runnable.unwrap_or(0.0)).max(0.0);
            let mut blocked_by = offcpu
                .as_ref()
                .and_then(|m| m.iter().find(|(n, _)| n == g))
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            // An off-CPU block lasts until the thread runs again, its wait for a CPU after
            // the wake-up included: the reasons share the blocked time the kernel counted.
            let sum: f64 = blocked_by.iter().map(|(_, t)| t).sum();
            if sum > blocked && sum > 0.0 {
                for (_, t) in &mut blocked_by {
                    *t *= blocked / sum;
                }
            }
            Group {
                name: g.to_string(),
                threads,
                on_cpu,
                runnable,
                busiest: at(col::GROUP_BUSIEST).map(|p| p / 100.0),
                busiest_busy: at(col::GROUP_BUSIEST_BUSY).map(|p| p / 100.0),
                blocked,
                blocked_by,
                entry: None,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.busy()
            .total_cmp(&a.busy())
            .then(b.on_cpu.total_cmp(&a.on_cpu))
            .then(a.name.cmp(&b.name))
    });
    out
}

/// The group a thread name is in: the sampler's merge rules, its bytes escaped as the
/// series names them.
pub fn group_of(name: &[u8]) -> String {
    thread_rules(|rules| kiln_model::text::clean_bytes(&merge_name(rules, name), usize::MAX))
}

fn thread_rules<T>(f: impl FnOnce(&[kiln_model::transform::MergeRule]) -> T) -> T {
    static RULES: std::sync::OnceLock<Vec<kiln_model::transform::MergeRule>> =
        std::sync::OnceLock::new();
    f(RULES.get_or_init(default_merge_rules))
}

/// An off-CPU profile's blocked time per thread group and reason, thread-seconds per
/// second of `secs`.
pub fn blocked_by_group(p: &Profile, secs: f64) -> Vec<(String, Vec<(WaitReason, f64)>)> {
    let Some(ns) = p.event.ns_per_weight() else {
        return Vec::new();
    };
    let reasons = stack_reasons(p);
    let names: Vec<String> = p
        .threads
        .iter()
        .map(|(_, t)| group_of(p.strings.get(t.name)))
        .collect();
    let mut out: Vec<(String, Vec<(WaitReason, f64)>)> = Vec::new();
    for i in 0..p.samples.len() {
        let th = p.samples.thread[i];
        let g = names
            .get(th.0 as usize)
            .map(String::as_str)
            .unwrap_or("(unknown thread)");
        let r = reasons
            .get(p.samples.stack[i].0 as usize)
            .copied()
            .unwrap_or(WaitReason::Other);
        let t = p.samples.weight[i] as f64 * ns / 1e9 / secs;
        let e = match out.iter().position(|(n, _)| n == g) {
            Some(k) => &mut out[k].1,
            None => {
                out.push((g.to_string(), Vec::new()));
                &mut out.last_mut().expect("just pushed").1
            }
        };
        match e.iter_mut().find(|(x, _)| *x == r) {
            Some(x) => x.1 += t,
            None => e.push((r, t)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::{EventInfo, FrameKind, WeightUnit};

    #[test]
    fn blocked_time_by_group_and_reason() {
        let mut p = Profile::new(EventInfo::new("offcpu", WeightUnit::Microseconds));
        let main = p.frame(b"worker_loop", FrameKind::User);
        let lock = p.frame(b"pthread_mutex_lock", FrameKind::User);
        let read = p.frame(b"read", FrameKind::User);
        let a = p.thread(Some(1), Some(2), b"worker-1");
        let b = p.thread(Some(1), Some(3), b"worker-2");
        p.add_sample_path(&[main, lock], 2_000_000, 10, a);
        p.add_sample_path(&[main, read], 1_000_000, 10, b);
        let g = blocked_by_group(&p, 2.0);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].0, "worker");
        let lock_t = g[0].1.iter().find(|x| x.0 == WaitReason::Lock).unwrap().1;
        assert!((lock_t - 1.0).abs() < 1e-9, "{lock_t}");
        assert_eq!(group_of(b"spin\xff"), "spin\\xff");
    }
}
