//! A sweep as `kiln run` keeps it — one window per step of `--rate-sweep` or
//! `--concurrency-sweep` — and its knee, explained.
//!
//! Each step's figures are the run seen through the step's window
//! ([`crate::window::window_view`]): the rate attempted and achieved, latency, CPU per
//! operation. The knee is where the server falls over:
//!
//! * a **rate** sweep: the last step (from the first on) that held its rate with its
//!   median latency near the sweep's floor (at most [`NEAR_FLOOR`] times the lowest, or
//!   1 ms above it);
//! * a **concurrency** sweep: where throughput stops growing
//!   ([`kiln_loadgen::engine::sweep::plateau`], the rule `kiln load http` uses).
//!
//! The windows just before and just after the knee are then compared the way
//! `kiln compare` compares runs ([`crate::compare::compare`]): figures, and the functions
//! whose CPU time per operation grew when the server fell over.
use crate::compare::{self, format_value, Comparison, Group, Held, Options};
use crate::window::window_view;
use kiln_model::transform::{default_merge_rules, Transforms};
use kiln_store::{RunData, RunMeta, Window};
use serde::Serialize;
use std::fmt::Write as _;

/// A step's median latency counts as near the floor up to this many times the lowest.
pub(crate) const NEAR_FLOOR: f64 = 3.0;
/// ... or up to this much above it, µs (floors of a few hundred µs vary by more than 3×
/// on a busy machine without anything falling over).
pub(crate) const NEAR_FLOOR_SLACK_US: f64 = 1000.0;
/// Throughput growth below which a concurrency step counts as the plateau, unless the
/// load kept its own (`kiln load http --plateau-threshold`).
pub(crate) const PLATEAU_GROWTH: f64 = 0.1;

/// One step of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// The window's name (`rate=20000`).
    pub name: String,
    /// The value of the swept parameter.
    pub value: f64,
    /// The rate attempted, operations per second (rate sweeps).
    pub attempted: Option<f64>,
    /// The rate achieved (throughput).
    pub achieved: Option<f64>,
    /// Whether the attempted rate was held, and by how much not.
    pub held: Option<Held>,
    /// Latency median and p99, µs.
    pub p50_us: Option<f64>,
    /// 99th percentile, µs.
    pub p99_us: Option<f64>,
    /// Target CPU per operation, µs.
    pub cpu_per_op_us: Option<f64>,
    /// Target CPU, % of one CPU.
    pub target_cpu_pct: Option<f64>,
    /// Start and end of the window, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// End of the window.
    pub end_ns: u64,
}

/// Where the server fell over.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Knee {
    /// The last good step.
    pub step: usize,
    /// The step after it, when the sweep went on.
    pub next: Option<usize>,
}

/// A sweep's steps, its knee and what changed across it.
#[derive(Clone, Debug, Serialize)]
pub struct Sweep {
    /// `rate` or `connections`.
    pub param: String,
    /// What one operation is (`msg`, `req`).
    pub unit: String,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// The knee, when the sweep found one.
    pub knee: Option<Knee>,
    /// The finding in words.
    pub finding: String,
    /// The windows before and after the knee compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub across: Option<Comparison>,
}

fn step_of(run: &RunData, w: &Window) -> (Step, RunMeta) {
    let view = window_view(run, w);
    let (param, value) = w
        .name
        .split_once('=')
        .map_or(("step", 0.0), |(p, v)| (p, v.parse().unwrap_or(0.0)));
    let h = &view.headline;
    let attempted = (param == "rate").then_some(value);
    let achieved = h.throughput;
    let secs = w.seconds();
    let step = Step {
        name: w.name.clone(),
        value,
        attempted,
        achieved,
        held: attempted.zip(achieved).map(|(a, b)| Held::of(a, b)),
        p50_us: h.p50_us,
        p99_us: h.p99_us,
        cpu_per_op_us: h.cpu_per_op_us,
        target_cpu_pct: h
            .target_cpu_s
            .filter(|_| secs > 0.0)
            .map(|c| c / secs * 100.0),
        start_ns: w.start_ns,
        end_ns: w.end_ns,
    };
    (step, view)
}

/// The knee of a rate sweep: the last step from the first that held its rate with its
/// median latency near the floor. `None` when the first step already fell over.
pub(crate) fn rate_knee(steps: &[Step]) -> Option<usize> {
    let floor = steps
        .iter()
        .filter_map(|s| s.p50_us)
        .fold(f64::INFINITY, f64::min);
    let good = |s: &Step| {
        s.held.as_ref().is_some_and(|h| h.held)
            && s.p50_us
                .is_some_and(|p| p <= (floor * NEAR_FLOOR).max(floor + NEAR_FLOOR_SLACK_US))
    };
    steps.iter().take_while(|s| good(s)).count().checked_sub(1)
}

/// The knee of a concurrency sweep: where throughput stops growing by `growth` (0.1:
/// 10%) from one step on.
pub(crate) fn concurrency_knee(steps: &[Step], growth: f64) -> Option<usize> {
    let tp: Vec<f64> = steps.iter().map(|s| s.achieved.unwrap_or(0.0)).collect();
    let p50: Vec<f64> = steps.iter().map(|s| s.p50_us.unwrap_or(0.0)).collect();
    kiln_loadgen::engine::sweep::plateau(&tp, &p50, growth)
}

/// The run's sweep, if it has one (windows named `PARAM=VALUE`), with its knee; when the
/// knee has a step after it, the two windows are compared (their profiles with threads
/// merged) under `rules`, with `functions` rows.
pub fn sweep(run: &RunData, rules: &compare::Rules, functions: usize) -> Option<Sweep> {
    let windows: Vec<&Window> = run
        .meta
        .windows
        .iter()
        .filter(|w| w.name.contains('='))
        .collect();
    let param = windows.first()?.name.split_once('=')?.0.to_string();
    let (steps, views): (Vec<Step>, Vec<RunMeta>) = windows.iter().map(|w| step_of(run, w)).unzip();
    let unit = if run.meta.load.unit.is_empty() {
        "op".to_string()
    } else {
        run.meta.load.unit.clone()
    };
    let rate = param == "rate";
    // The load's own plateau threshold (`--plateau-threshold`), when it kept one.
    let growth = run
        .meta
        .load
        .report
        .pointer("/summary/plateau/threshold")
        .and_then(|v| v.as_f64())
        .unwrap_or(PLATEAU_GROWTH);
    let knee = if rate {
        rate_knee(&steps)
    } else {
        concurrency_knee(&steps, growth)
    }
    .map(|k| Knee {
        step: k,
        next: (k + 1 < steps.len()).then_some(k + 1),
    });
    let across = knee
        .as_ref()
        .and_then(|k| Some((k.step, k.next?)))
        .and_then(|(a, b)| {
            let group = |i: usize| Group {
                label: format!("{}@{}", run.meta.name, steps[i].name),
                runs: vec![views[i].clone()],
                profiles: vec![window_profiles(run, windows[i])],
            };
            compare::compare(
                &[group(a), group(b)],
                &Options {
                    rules: *rules,
                    functions,
                    event: None,
                    history: Vec::new(),
                },
            )
            .ok()
        });
    let finding = finding(&param, &unit, &steps, knee.as_ref(), across.as_ref());
    Some(Sweep {
        param,
        unit,
        steps,
        knee,
        finding,
        across,
    })
}

/// The run's profiles over window `w`, numbered threads merged (BEAM schedulers, Go and
/// JVM pools): the windows are compared by work, not by thread number.
fn window_profiles(run: &RunData, w: &Window) -> Vec<kiln_model::Profile> {
    let t = Transforms {
        merge_rules: default_merge_rules(),
        ..Default::default()
    };
    run.profiles
        .iter()
        .map(|p| t.apply(&p.time_slice(w.start_ns, w.end_ns)).0)
        .collect()
}

fn latency(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format_value(v, "us"))
}

fn finding(
    param: &str,
    unit: &str,
    steps: &[Step],
    knee: Option<&Knee>,
    across: Option<&Comparison>,
) -> String {
    let rate = param == "rate";
    let Some(k) = knee else {
        return match (rate, steps.first()) {
            (true, Some(s)) => format!(
                "no knee: the first step ({}) already {} with median latency {}",
                s.name,
                s.held
                    .as_ref()
                    .map_or("measured no rate".into(), |h| h.text()),
                latency(s.p50_us)
            ),
            (false, Some(s)) => format!(
                "no plateau: throughput kept growing up to {} ({})",
                steps.last().map_or(&s.name, |l| &l.name),
                steps
                    .last()
                    .and_then(|l| l.achieved)
                    .map_or("-".into(), |t| format_value(t, "/s"))
            ),
            _ => "no step completed".into(),
        };
    };
    let a = &steps[k.step];
    let Some(next) = k.next else {
        return format!(
            "no knee within the sweep: every step up to {} held with latency near its floor (p50 {})",
            a.name,
            latency(a.p50_us)
        );
    };
    let b = &steps[next];
    let rate_of = |s: &Step| s.achieved.map_or("-".into(), |t| format_value(t, "/s"));
    let mut f = if rate {
        format!(
            "knee at {}: held {} with p50 {}; at {} the server achieved {}, {}, p50 {}",
            a.name,
            rate_of(a),
            latency(a.p50_us),
            b.name,
            rate_of(b),
            b.held.as_ref().map_or("-".into(), |h| h.text()),
            latency(b.p50_us)
        )
    } else {
        format!(
            "knee at {}: throughput stops growing ({}; at {} {}, p50 {} → {})",
            a.name,
            rate_of(a),
            b.name,
            rate_of(b),
            latency(a.p50_us),
            latency(b.p50_us)
        )
    };
    if let Some(t) = across.and_then(|c| c.functions.first()) {
        let grew: Vec<String> = t
            .rows
            .iter()
            .filter(|r| r.delta() > 0.0)
            .take(5)
            .map(|r| format!("{} {:.2} → {:.2}", r.name, r.before.median, r.after.median))
            .collect();
        if !grew.is_empty() {
            let _ = write!(f, "; grew past the knee ({}): {}", t.unit, grew.join(", "));
        } else {
            // Past a rate knee the cost per operation often falls (work is batched): what
            // took the server's time is then what grew as a share of it.
            let mut by_share: Vec<_> = t
                .rows
                .iter()
                .filter(|r| r.total_after > r.total_before)
                .collect();
            by_share.sort_by(|x, y| {
                (y.total_after - y.total_before).total_cmp(&(x.total_after - x.total_before))
            });
            let grew: Vec<String> = by_share
                .iter()
                .take(5)
                .map(|r| format!("{} {:.1}% → {:.1}%", r.name, r.total_before, r.total_after))
                .collect();
            if !grew.is_empty() {
                let _ = write!(
                    f,
                    "; every function's cost per {unit} fell past the knee; grew as a share of the profile: {}",
                    grew.join(", ")
                );
            }
        }
    }
    f
}

impl Sweep {
    /// The sweep table and the finding, as aligned text.
    pub fn text(&self) -> String {
        let mut rows = vec![vec![
            "step".to_string(),
            "attempted".into(),
            "achieved".into(),
            "held".into(),
            "p50".into(),
            "p99".into(),
            format!("CPU/{}", self.unit),
            "target CPU".into(),
        ]];
        for (i, s) in self.steps.iter().enumerate() {
            let mark = match &self.knee {
                Some(k) if k.step == i => " ◀ knee",
                _ => "",
            };
            rows.push(vec![
                format!("{}{mark}", s.name),
                s.attempted.map_or("-".into(), |v| format_value(v, "/s")),
                s.achieved.map_or("-".into(), |v| format_value(v, "/s")),
                s.held.as_ref().map_or("-".into(), |h| h.text()),
                latency(s.p50_us),
                latency(s.p99_us),
                latency(s.cpu_per_op_us),
                s.target_cpu_pct.map_or("-".into(), |v| format!("{v:.0}%")),
            ]);
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for r in &rows {
            let mut line = String::from("    ");
            for (i, c) in r.iter().enumerate() {
                let pad = widths[i] - c.chars().count();
                if i == 0 {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str("  ");
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        let _ = writeln!(out, "  {}", self.finding);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, attempted: Option<f64>, achieved: f64, p50: f64) -> Step {
        Step {
            name: name.into(),
            value: 0.0,
            attempted,
            achieved: Some(achieved),
            held: attempted.map(|a| Held::of(a, achieved)),
            p50_us: Some(p50),
            p99_us: None,
            cpu_per_op_us: None,
            target_cpu_pct: None,
            start_ns: 0,
            end_ns: 0,
        }
    }

    #[test]
    fn the_knee_of_a_rate_sweep() {
        let s = [
            step("rate=5000", Some(5000.0), 5000.0, 800.0),
            step("rate=10000", Some(10000.0), 9990.0, 1200.0),
            step("rate=20000", Some(20000.0), 19900.0, 1900.0),
            step("rate=30000", Some(30000.0), 24000.0, 350_000.0),
            step("rate=40000", Some(40000.0), 24500.0, 900_000.0),
        ];
        assert_eq!(rate_knee(&s), Some(2));
        // Held, but latency far above its floor: past the knee.
        let mut s2 = s.clone();
        s2[2].p50_us = Some(80_000.0);
        assert_eq!(rate_knee(&s2), Some(1));
        // The first step already fell over.
        assert_eq!(rate_knee(&s[3..]), None);
        // Every step fine: the knee is the last one, with nothing after it.
        assert_eq!(rate_knee(&s[..3]), Some(2));
    }

    #[test]
    fn the_knee_of_a_concurrency_sweep() {
        let s = [
            step("connections=1", None, 1000.0, 900.0),
            step("connections=8", None, 6000.0, 1300.0),
            step("connections=64", None, 6200.0, 10_000.0),
            step("connections=256", None, 6100.0, 40_000.0),
        ];
        assert_eq!(concurrency_knee(&s, 0.1), Some(1));
        assert_eq!(concurrency_knee(&s[..2], 0.1), None);
    }
}
