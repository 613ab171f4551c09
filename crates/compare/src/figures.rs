//! The figures a comparison shows, and what each one is in a given comparison: a
//! *setting* (the rate the load was set to, its concurrency: reported as held or not,
//! never better or worse), an *outcome* to judge (latency, CPU per operation, memory;
//! throughput when the load was open-ended or the set rate was not held), or *context*
//! (the target's total CPU when the loads differ, kiln's own CPU: shown, never judged).
use kiln_store::{Headline, RunMeta};
use serde::Serialize;

/// Which way is better for a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// More is better (throughput).
    Higher,
    /// Less is better (latency, CPU per operation).
    Lower,
}

/// What a figure is in a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Chosen by the user (a fixed rate, a concurrency): held or not, never judged.
    Setting,
    /// A result of the change: judged, with a direction.
    Outcome,
    /// Shown for reading the others, never judged (total CPU at another rate, kiln's own
    /// CPU).
    Context,
}

/// What kind of quantity a figure is, which decides its role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The rate the load was set to.
    SetRate,
    /// Producers, connections or clients.
    Concurrency,
    /// A rate the load achieved (throughput, send rate): a setting when the rate was fixed.
    Rate,
    /// Judged whatever the load (latency, per-operation costs, memory).
    Outcome,
    /// The target's total CPU: judged only when both loads were the same fixed rate.
    LoadDriven,
    /// Never judged (kiln's own CPU, the machine's).
    Context,
}

/// A figure `kiln compare` reports.
#[derive(Clone, Copy, Debug)]
pub struct Figure {
    /// Key used by `--fail-if` and JSON (`p99`, `cpu_per_op`).
    pub key: &'static str,
    /// Other keys `--fail-if` accepts for it.
    pub aliases: &'static [&'static str],
    /// Label in tables; `{op}` is replaced by the load's unit (`msg`, `req`).
    pub label: &'static str,
    /// Unit shown.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// What kind of quantity it is.
    pub kind: Kind,
    /// The smallest difference of medians, in its unit, that can be a change of it at
    /// all (0: any). RSS max moves by pages wherever the loader and the allocator happen
    /// to put things: the same program started again differs by some 100 KiB.
    pub resolution: f64,
    /// Its value in a run.
    pub get: fn(&RunMeta) -> Option<f64>,
}

impl PartialEq for Figure {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

fn hl(m: &RunMeta) -> &Headline {
    &m.headline
}

/// CPU seconds over the window as a percentage of one CPU.
fn pct_of_window(m: &RunMeta, cpu_s: Option<f64>) -> Option<f64> {
    let s = m.measure.seconds();
    cpu_s.filter(|_| s > 0.0).map(|c| c / s * 100.0)
}

/// Every figure, in table order.
pub const FIGURES: &[Figure] = &[
    Figure {
        key: "set_rate",
        aliases: &[],
        label: "rate set",
        unit: "/s",
        better: Better::Higher,
        kind: Kind::SetRate,
        resolution: 0.0,
        get: |m| m.load.rate,
    },
    Figure {
        key: "concurrency",
        aliases: &["connections", "producers"],
        label: "concurrency",
        unit: "",
        better: Better::Higher,
        kind: Kind::Concurrency,
        resolution: 0.0,
        get: |m| m.load.concurrency,
    },
    Figure {
        key: "throughput",
        aliases: &["rate", "qps", "recv_rate"],
        label: "throughput",
        unit: "/s",
        better: Better::Higher,
        kind: Kind::Rate,
        resolution: 0.0,
        get: |m| hl(m).throughput,
    },
    Figure {
        key: "send_rate",
        aliases: &[],
        label: "send rate",
        unit: "/s",
        better: Better::Higher,
        kind: Kind::Rate,
        resolution: 0.0,
        get: |m| hl(m).send_rate,
    },
    Figure {
        key: "p50",
        aliases: &["median"],
        label: "latency p50",
        unit: "us",
        better: Better::Lower,
        kind: Kind::Outcome,
        resolution: 0.0,
        get: |m| hl(m).p50_us,
    },
    Figure {
        key: "p99",
        aliases: &[],
        label: "latency p99",
        unit: "us",
        better: Better::Lower,
        kind: Kind::Outcome,
        resolution: 0.0,
        get: |m| hl(m).p99_us,
    },
    Figure {
        key: "p999",
        aliases: &["p99.9"],
        label: "latency p99.9",
        unit: "us",
        better: Better::Lower,
        kind: Kind::Outcome,
        resolution: 0.0,
        get: |m| hl(m).p999_us,
    },
    Figure {
        key: "max",
        aliases: &["max_latency"],
        label: "latency max",
        unit: "us",
        better: Better::Lower,
        kind: Kind::Outcome,
        resolution: 0.0,
        get: |m| hl(m).max_us,
    },
    Figure {
        key: "cpu_per_op",
        aliases: &[
            "cpu_per_msg",
            "cpu_per_req",
            "cpu_per_request",
            "cpu_per_message",
            "cpu_per_conn",
        ],
        label: "target CPU per {op}",
        unit: "us",
        better: Better::Lower,
        kind: Kind::Outcome,
        resolution: 0.0,
        get: |m| hl(m).cpu_per_op_us,
    },
    Figure {
        key: "switches_per_op",
        aliases: &["ctx_per_msg", "ctx_per_req", "switches_per_msg"],
        label: "context switches per {op}",
        unit: "",
        better: Better::Lower,
        kind: Kind::Outcome,
        resolution: 0.0,
        get: |m| hl(m).switches_per_op,
    },
    Figure {
        key: "rss",
        aliases: &["memory"],
        label: "target RSS max",
        unit: "bytes",
        better: Better::Lower,
        kind: Kind::Outcome,
        resolution: 1024.0 * 1024.0,
        get: |m| hl(m).rss_max_bytes.map(|b| b as f64),
    },
    Figure {
        key: "queue_depth",
        aliases: &["queue"],
        label: "queue depth max",
        unit: "msg",
        better: Better::Lower,
        kind: Kind::Outcome,
        // Messages in flight between the broker's batches: a queue that is kept up with
        // reads a few hundred either way.
        resolution: 1000.0,
        get: |m| hl(m).queue_depth_max,
    },
    Figure {
        key: "beam_busy_wait",
        aliases: &["busy_wait", "spin", "beam_other"],
        label: "BEAM schedulers busy-waiting (msacc other)",
        unit: "%",
        better: Better::Lower,
        // A share of the schedulers' awake time: it shrinks when they get busier with real
        // work, and on a VM started with +sbwt none it is scheduling, not spinning. It
        // explains the CPU figures; it is not an outcome of its own.
        kind: Kind::Context,
        resolution: 1.0,
        get: |m| hl(m).beam.as_ref().map(|b| b.other_pct),
    },
    Figure {
        key: "beam_check_io",
        aliases: &["check_io", "polling"],
        label: "BEAM schedulers polling (msacc check_io)",
        unit: "%",
        better: Better::Lower,
        // A share of awake time, like the busy-wait's: context for the CPU figures.
        kind: Kind::Context,
        resolution: 1.0,
        get: |m| hl(m).beam.as_ref().map(|b| b.check_io_pct),
    },
    Figure {
        key: "target_cpu",
        aliases: &["cpu"],
        label: "target CPU",
        unit: "%",
        better: Better::Lower,
        kind: Kind::LoadDriven,
        resolution: 0.0,
        get: |m| pct_of_window(m, hl(m).target_cpu_s),
    },
    Figure {
        key: "kiln_cpu",
        aliases: &[],
        label: "kiln CPU",
        unit: "%",
        better: Better::Lower,
        kind: Kind::Context,
        resolution: 0.0,
        get: |m| pct_of_window(m, hl(m).kiln_cpu_s),
    },
    Figure {
        key: "kiln_bpf_cpu",
        aliases: &[],
        label: "kiln eBPF CPU",
        unit: "%",
        better: Better::Lower,
        kind: Kind::Context,
        resolution: 0.0,
        get: |m| pct_of_window(m, hl(m).kiln_bpf_cpu_s),
    },
    Figure {
        key: "machine_busy",
        aliases: &[],
        label: "machine busy",
        unit: "%",
        better: Better::Lower,
        kind: Kind::Context,
        resolution: 0.0,
        get: |m| hl(m).machine_busy_pct,
    },
];

/// Finds a figure by key or alias.
pub fn figure(key: &str) -> Option<&'static Figure> {
    let k = key.trim().to_ascii_lowercase();
    FIGURES
        .iter()
        .find(|m| m.key == k || m.aliases.contains(&k.as_str()))
}

/// A set rate counts as held when the load achieved at least this share of it.
pub(crate) const HELD_SHARE: f64 = 0.97;

/// Whether a group held the rate it was set to.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Held {
    /// The rate set, operations per second.
    pub set: f64,
    /// The rate achieved (the group's median).
    pub achieved: f64,
    /// Achieved at least [`HELD_SHARE`] of it.
    pub held: bool,
    /// How far below the set rate, percent (negative: short of it).
    pub shortfall_pct: f64,
}

impl Held {
    /// `achieved` against `set`.
    pub fn of(set: f64, achieved: f64) -> Held {
        Held {
            set,
            achieved,
            held: achieved >= set * HELD_SHARE,
            shortfall_pct: super::stats::percent_change(set, achieved).min(0.0),
        }
    }

    /// "held" or "not held (−12%)".
    pub fn text(&self) -> String {
        if self.held {
            "held".into()
        } else {
            format!("not held (\u{2212}{:.0}%)", -self.shortfall_pct)
        }
    }
}

/// The rate every run of a group was set to, when they agree.
pub(crate) fn set_rate(runs: &[RunMeta]) -> Option<f64> {
    let first = runs.first()?.load.rate?;
    runs.iter()
        .all(|r| r.load.rate == Some(first))
        .then_some(first)
}

/// What a figure of `kind` is when the first group was set to `base` and the other to
/// `other`, with whether each held it; and why, when it is not an outcome.
///
/// `counted` says whether the runs count operations: a load that counts none (an external
/// command) leaves the target's total CPU as the outcome to judge.
pub fn role(
    kind: Kind,
    base: Option<f64>,
    other: Option<f64>,
    held: (bool, bool),
    counted: bool,
) -> (Role, Option<String>) {
    let same = matches!((base, other), (Some(a), Some(b)) if a == b);
    match kind {
        Kind::SetRate | Kind::Concurrency => (Role::Setting, None),
        Kind::Outcome => (Role::Outcome, None),
        Kind::Context => (Role::Context, Some("kiln's own and the machine's".into())),
        Kind::Rate => match (base, other) {
            (None, None) => (Role::Outcome, None),
            _ if same && !(held.0 && held.1) => (Role::Outcome, None),
            _ if same => (Role::Setting, Some("the rate was set and held".into())),
            (Some(_), Some(_)) => (Role::Setting, Some("the rates were set".into())),
            _ => (
                Role::Context,
                Some("one load had a set rate, the other none".into()),
            ),
        },
        Kind::LoadDriven => match (base, other) {
            _ if same && held.0 && held.1 => (Role::Outcome, None),
            (None, None) if !counted => (Role::Outcome, None),
            (None, None) => (
                Role::Context,
                Some("open-ended loads: the target takes what CPU it can".into()),
            ),
            _ => (
                Role::Context,
                Some("the loads differ; judge CPU per operation instead".into()),
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_settings_or_outcomes() {
        let held = (true, true);
        assert_eq!(
            role(Kind::Rate, Some(5000.0), Some(15000.0), held, true).0,
            Role::Setting
        );
        assert_eq!(
            role(Kind::Rate, Some(5000.0), Some(5000.0), held, true).0,
            Role::Setting
        );
        assert_eq!(
            role(Kind::Rate, Some(5000.0), Some(5000.0), (true, false), true).0,
            Role::Outcome,
            "a rate not held is an outcome"
        );
        assert_eq!(role(Kind::Rate, None, None, held, true).0, Role::Outcome);
        assert_eq!(
            role(Kind::LoadDriven, Some(5000.0), Some(15000.0), held, true).0,
            Role::Context
        );
        assert_eq!(
            role(Kind::LoadDriven, Some(5000.0), Some(5000.0), held, true).0,
            Role::Outcome
        );
        assert_eq!(
            role(Kind::LoadDriven, None, None, held, true).0,
            Role::Context
        );
        assert_eq!(role(Kind::Context, None, None, held, true).0, Role::Context);
        assert_eq!(
            role(Kind::LoadDriven, None, None, held, false).0,
            Role::Outcome,
            "an external command's load: the target's CPU is what there is to judge"
        );
    }

    #[test]
    fn held_or_not() {
        assert!(Held::of(20000.0, 19800.0).held);
        let h = Held::of(20000.0, 15000.0);
        assert!(!h.held);
        assert_eq!(h.text(), "not held (\u{2212}25%)");
        assert_eq!(Held::of(100.0, 120.0).shortfall_pct, 0.0);
        assert_eq!(figure("cpu_per_msg").unwrap().key, "cpu_per_op");
    }
}
