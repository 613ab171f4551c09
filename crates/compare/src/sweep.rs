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
//! * a **concurrency** sweep: the step before the one whose throughput stopped following
//!   its clients ([`kiln_model::saturation`]: by Little's law the clients added there
//!   only queued).
//!
//! The step where the outcome broke (the first past the knee that did not hold its rate,
//! left its latency floor or stopped following its clients — the wall, not merely the
//! step after the knee) is then explained by the findings of its window
//! ([`kiln_findings`]), and the knee's window and the wall's are compared the way `kiln
//! compare` compares runs ([`crate::compare()`]): figures, and the functions whose CPU
//! time per operation grew.
use crate::window::window_view;
use crate::{format_value, Comparison, Group, Held, Options, Rules};
use kiln_model::transform::{default_merge_rules, Transforms};
use kiln_store::{RunData, RunMeta, Window};
use serde::Serialize;
use std::fmt::Write as _;

/// A step's median latency counts as near the floor up to this many times the lowest.
pub(crate) const NEAR_FLOOR: f64 = 3.0;
/// ... or up to this much above it, µs (floors of a few hundred µs vary by more than 3×
/// on a busy machine without anything falling over).
pub(crate) const NEAR_FLOOR_SLACK_US: f64 = 1000.0;

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
    /// The machine's busy share over the step, % of all its CPUs.
    pub machine_busy_pct: Option<f64>,
    /// The depth of the queues the load fed at the end of the step's first second and of
    /// its last, messages (the broker's own count), when the load watched a queue.
    pub queue: Option<(f64, f64)>,
    /// Operations sent and completed over the step, as the load counted them.
    pub counts: Option<(f64, f64)>,
    /// Start and end of the window, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// End of the window.
    pub end_ns: u64,
    /// A step the measurement did not cover whole (it ended before the step did: `-d`
    /// shorter than the sweep, a stop; or the step began in the warm-up): the seconds it
    /// measured of it. `None` for a step measured whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut_short_s: Option<f64>,
    /// The step's length as the sweep ran it (its steps' usual length), seconds.
    pub length_s: f64,
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
    /// The finding in words: where the knee is, then why (each sentence of
    /// [`Sweep::why`] after the first).
    pub finding: String,
    /// Where the knee is, in one sentence (the finding's first).
    pub knee_text: String,
    /// Why it broke: the findings of the step where the outcome broke, a sentence each.
    pub why: Vec<String>,
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
        machine_busy_pct: h.machine_busy_pct,
        queue: crate::window::queue_depth(run, w),
        counts: crate::window::load_count(run, w, kiln_store::columns::SENT)
            .zip(crate::window::load_count(run, w, &run.meta.load.completed)),
        start_ns: w.start_ns,
        end_ns: w.end_ns,
        cut_short_s: None,
        length_s: secs,
    };
    (step, view)
}

/// Marks the steps the measurement `m` did not cover whole: each step's length is the
/// sweep's usual one (the median of its steps': one schedule gives them all), and a step
/// of which the measurement holds less than 90 % is cut short.
fn mark_cut_short(steps: &mut [Step], m: &Window) {
    let mut lengths: Vec<f64> = steps
        .iter()
        .map(|s| s.end_ns.saturating_sub(s.start_ns) as f64 / 1e9)
        .collect();
    lengths.sort_by(f64::total_cmp);
    let Some(&usual) = lengths.get(lengths.len() / 2) else {
        return;
    };
    for s in steps.iter_mut() {
        let from = s.start_ns.max(m.start_ns);
        let to = s.end_ns.min(m.end_ns);
        let measured = to.saturating_sub(from) as f64 / 1e9;
        s.length_s = usual;
        if measured < 0.9 * usual {
            s.cut_short_s = Some(measured);
        }
    }
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

/// The steps as the saturation rule reads them.
fn plain(steps: &[Step]) -> Vec<kiln_model::saturation::SweepPoint> {
    steps
        .iter()
        .map(|s| kiln_model::saturation::SweepPoint {
            value: s.value,
            throughput: s.achieved.unwrap_or(0.0),
            p50_us: s.p50_us,
        })
        .collect()
}

/// The knee of a concurrency sweep: the step before the one whose throughput stopped
/// following its clients ([`kiln_model::saturation::concurrency_break`]: Little's law).
pub(crate) fn concurrency_knee(steps: &[Step]) -> Option<usize> {
    let (i, _) = kiln_model::saturation::concurrency_break(&plain(steps))?;
    i.checked_sub(1)
}

/// The step where a sweep broke: the first whose rate was not held or whose latency left
/// its floor (a rate sweep), or whose throughput stopped following its clients.
pub(crate) fn break_of(rate: bool, steps: &[Step]) -> Option<usize> {
    let p = plain(steps);
    let b = if rate {
        kiln_model::saturation::rate_break(&p)
    } else {
        kiln_model::saturation::concurrency_break(&p)
    };
    b.map(|(i, _)| i)
}

/// The run's sweep, if it has one (windows named `PARAM=VALUE`), with its knee; when the
/// knee has a step after it, the two windows are compared (their profiles with threads
/// merged) under `rules`, with `functions` rows.
pub fn sweep(run: &RunData, rules: &Rules, functions: usize) -> Option<Sweep> {
    let windows: Vec<&Window> = run
        .meta
        .windows
        .iter()
        .filter(|w| w.name.contains('='))
        .collect();
    let param = windows.first()?.name.split_once('=')?.0.to_string();
    let (mut steps, views): (Vec<Step>, Vec<RunMeta>) =
        windows.iter().map(|w| step_of(run, w)).unzip();
    mark_cut_short(&mut steps, &run.meta.measure);
    let unit = if run.meta.load.unit.is_empty() {
        "op".to_string()
    } else {
        run.meta.load.unit.clone()
    };
    let rate = param == "rate";
    let knee = if rate {
        rate_knee(&steps)
    } else {
        concurrency_knee(&steps)
    }
    .map(|k| Knee {
        step: k,
        // The step where the outcome broke (the wall), not merely the one after the knee.
        next: break_of(rate, &steps)
            .filter(|&b| b > k)
            .or((k + 1 < steps.len()).then_some(k + 1)),
    });
    let across = knee
        .as_ref()
        .and_then(|k| Some((k.step, k.next?)))
        .and_then(|(a, b)| {
            let group = |i: usize| Group {
                label: format!("{}@{}", run.meta.name, steps[i].name),
                runs: vec![views[i].clone()],
                profiles: vec![window_profiles(run, windows[i])],
                findings: Vec::new(),
            };
            crate::compare(
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
    let head = finding(&param, &steps, knee.as_ref());
    // Why it broke: the findings of the step where it did, as a run's are found.
    let why = match knee.as_ref().and_then(|k| k.next) {
        Some(b) => kiln_findings::analyse(run, Some(windows[b]))
            .findings
            .iter()
            .filter(|f| f.class != kiln_findings::Class::Knee)
            .take(3)
            .map(|f| {
                format!(
                    "at {}: {} — {}",
                    steps[b].name,
                    f.title.to_lowercase(),
                    f.claim
                )
            })
            .collect(),
        None => Vec::new(),
    };
    let finding = std::iter::once(head.clone())
        .chain(why.iter().cloned())
        .collect::<Vec<_>>()
        .join("; ");
    Some(Sweep {
        param,
        unit,
        steps,
        knee,
        finding,
        knee_text: head,
        why,
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

fn finding(param: &str, steps: &[Step], knee: Option<&Knee>) -> String {
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
    if rate {
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
    }
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
        let queues = self.steps.iter().any(|s| s.queue.is_some());
        if queues {
            rows[0].push("queue".into());
        }
        for (i, s) in self.steps.iter().enumerate() {
            // The table marks the knee the finding names: a last step that held is no
            // knee ("no knee within the sweep").
            let mut mark = match &self.knee {
                Some(k) if k.step == i && k.next.is_some() => " ◀ knee".to_string(),
                _ => String::new(),
            };
            if let Some(m) = s.cut_short_s {
                let _ = write!(mark, " (cut short: {m:.1} of {:.0} s measured)", s.length_s);
            }
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
            if queues {
                let n = |v: f64| format_value(v, "msg").replace(" msg", "");
                let q = s
                    .queue
                    .map_or("-".into(), |(a, b)| format!("{} → {}", n(a), n(b)));
                rows.last_mut().expect("a row was pushed").push(q);
            }
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
        let _ = writeln!(out, "  {}", self.knee_text);
        for w in &self.why {
            let _ = writeln!(out, "    {w}");
        }
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
            machine_busy_pct: None,
            queue: None,
            counts: None,
            start_ns: 0,
            end_ns: 0,
            cut_short_s: None,
            length_s: 0.0,
        }
    }

    /// The step the measurement ended in, and one begun in the warm-up, are cut short;
    /// the steps measured whole are not.
    #[test]
    fn steps_the_measurement_did_not_cover_are_cut_short() {
        let s = 1_000_000_000u64;
        let mut steps: Vec<Step> = (0..7)
            .map(|i| {
                let mut st = step(&format!("connections={i}"), None, 1.0, 1.0);
                (st.start_ns, st.end_ns) = (10 * i * s, 10 * (i + 1) * s);
                st
            })
            .collect();
        let m = Window {
            name: "measure".into(),
            start_ns: 2 * s,
            end_ns: 64_300_000_000,
        };
        mark_cut_short(&mut steps, &m);
        let cut: Vec<Option<f64>> = steps.iter().map(|s| s.cut_short_s).collect();
        assert_eq!(cut, [Some(8.0), None, None, None, None, None, Some(4.3)]);
        assert_eq!(steps[6].length_s, 10.0);
        let sw = Sweep {
            param: "connections".into(),
            unit: "req".into(),
            steps,
            knee: None,
            finding: String::new(),
            knee_text: String::new(),
            why: Vec::new(),
            across: None,
        };
        assert!(sw
            .text()
            .contains("connections=6 (cut short: 4.3 of 10 s measured)"));
        let json = serde_json::to_value(&sw).unwrap();
        assert_eq!(json["steps"][6]["cut_short_s"], 4.3);
        assert!(json["steps"][3].get("cut_short_s").is_none());
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

    /// The table marks the knee the finding names: a last step that held is no knee.
    #[test]
    fn the_table_and_the_finding_name_the_same_knee() {
        let steps = vec![
            step("rate=10000", Some(10000.0), 10000.0, 800.0),
            step("rate=30000", Some(30000.0), 29990.0, 900.0),
        ];
        let knee = Knee {
            step: 1,
            next: None,
        };
        let finding = finding("rate", &steps, Some(&knee));
        assert!(finding.starts_with("no knee within the sweep"), "{finding}");
        let sweep = Sweep {
            param: "rate".into(),
            unit: "msg".into(),
            steps,
            knee: Some(knee),
            finding: finding.clone(),
            knee_text: finding,
            why: Vec::new(),
            across: None,
        };
        assert!(!sweep.text().contains("◀ knee"), "{}", sweep.text());
    }

    #[test]
    fn the_knee_of_a_concurrency_sweep() {
        let mut s = [
            step("connections=1", None, 1000.0, 900.0),
            step("connections=8", None, 6000.0, 1300.0),
            step("connections=64", None, 6200.0, 10_000.0),
            step("connections=256", None, 6100.0, 40_000.0),
        ];
        for (x, v) in s.iter_mut().zip([1.0, 8.0, 64.0, 256.0]) {
            x.value = v;
        }
        assert_eq!(concurrency_knee(&s), Some(1));
        assert_eq!(break_of(false, &s), Some(2));
        assert_eq!(concurrency_knee(&s[..2]), None);
    }
}
