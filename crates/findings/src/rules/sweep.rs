//! A sweep (one window per step of `--rate-sweep` or `--concurrency-sweep`): the step
//! where the outcome broke, and why — every other rule run over that step's window.
use super::{pct, secs, RULES};
use crate::{Class, Facts, Finding};
use kiln_store::window::window_view;
use kiln_store::Window;

/// One step's figures.
#[derive(Clone, Debug)]
pub struct StepFigures {
    /// The window.
    pub window: Window,
    /// The swept value (the rate, the connections).
    pub value: f64,
    /// Throughput.
    pub throughput: f64,
    /// Median latency, µs.
    pub p50_us: Option<f64>,
}

/// The steps of a sweep, in order, and what it swept (`rate`, `connections`).
pub fn steps(f: &Facts) -> Option<(String, Vec<StepFigures>)> {
    let run = &f.run;
    let mut param = None;
    let mut out = Vec::new();
    for w in &run.meta.windows {
        let Some((p, v)) = w.name.split_once('=') else {
            continue;
        };
        let Ok(value) = v.parse::<f64>() else {
            continue;
        };
        param.get_or_insert_with(|| p.to_string());
        let view = window_view(run, w);
        out.push(StepFigures {
            window: w.clone(),
            value,
            throughput: view.headline.throughput.unwrap_or(0.0),
            p50_us: view.headline.p50_us,
        });
    }
    (out.len() >= 2).then(|| (param.unwrap_or_default(), out))
}

/// The step where the outcome broke ([`kiln_model::saturation`]), and in words how.
pub fn break_step(param: &str, steps: &[StepFigures]) -> Option<(usize, String)> {
    use kiln_model::saturation::{concurrency_break, rate_break, Broke};
    let plain: Vec<kiln_model::saturation::SweepPoint> = steps
        .iter()
        .map(|s| kiln_model::saturation::SweepPoint {
            value: s.value,
            throughput: s.throughput,
            p50_us: s.p50_us,
        })
        .collect();
    let (i, broke) = if param == "rate" {
        rate_break(&plain)?
    } else {
        concurrency_break(&plain)?
    };
    let s = &steps[i];
    let p50 = s.p50_us.unwrap_or(0.0);
    let how = match broke {
        Broke::NotHeld => format!(
            "the rate was not held ({}/s of {}/s asked, {:+.0}%), p50 {}",
            super::queues::thousands(s.throughput),
            super::queues::thousands(s.value),
            (s.throughput / s.value - 1.0) * 100.0,
            secs(p50 / 1e6)
        ),
        Broke::LeftFloor(floor) => format!(
            "p50 rose to {} from a floor of {}",
            secs(p50 / 1e6),
            secs(floor / 1e6)
        ),
        Broke::Queued(_) => {
            let prev = &steps[i - 1];
            format!(
                "{} → {} {param} gave {}/s → {}/s (×{:.2} for ×{:.1}) while p50 went {} → {}: the added {param} only queued (Little's law: latency = {param} ÷ throughput)",
                prev.value,
                s.value,
                super::queues::thousands(prev.throughput),
                super::queues::thousands(s.throughput),
                s.throughput / prev.throughput.max(1e-9),
                s.value / prev.value.max(1e-9),
                secs(prev.p50_us.unwrap_or(0.0) / 1e6),
                secs(p50 / 1e6)
            )
        }
    };
    Some((i, how))
}

/// Where a sweep broke, and why: the step where the rate stopped being held or the
/// latency left its floor (a rate sweep), or where throughput stopped growing with the
/// connections (a concurrency sweep: Little's law), explained by every other rule over
/// that step's window.
///
/// False when: the run is not a sweep, or no step broke.
pub fn knee(f: &Facts) -> Vec<Finding> {
    let Some((param, steps)) = steps(f) else {
        return Vec::new();
    };
    let Some((i, how)) = break_step(&param, &steps) else {
        return Vec::new();
    };
    let step = &steps[i];
    let inner = Facts::of(&f.run, Some(&step.window));
    let others: Vec<(&str, super::Rule)> = RULES
        .iter()
        .filter(|(n, _)| *n != "knee")
        .copied()
        .collect();
    let found = super::run_rules(&inner, &others);
    let mut claim = format!("at {} the outcome broke: {how}", step.window.name);
    let mut x = Finding::new("knee", Class::Knee, 0.97, String::new());
    if let Some(top) = found.findings.first() {
        claim.push_str(&format!(
            "; in that step: {} — {}",
            top.title.to_lowercase(),
            top.claim
        ));
        for e in &top.evidence {
            x = x.evidence(e.clone());
        }
        if let Some(ex) = &top.explains {
            x = x.explains(ex.pct, ex.of.clone());
        }
        x = x.check(top.check.clone());
    }
    // Little's law at the step: how many operations its latency held in flight, and how
    // many of them the broker's queue held (the rest waited before it, or in the server).
    if let Some(p50) = step
        .p50_us
        .filter(|_| param == "rate" && step.throughput > 0.0)
    {
        let held = step.throughput * p50 / 1e6;
        let unit = &f.outcome.unit;
        claim.push_str(&format!(
            "; Little's law: at {}/s a median of {} is {} {unit}s in flight",
            super::queues::thousands(step.throughput),
            secs(p50 / 1e6),
            super::queues::thousands(held)
        ));
        let depth = inner.values(kiln_store::columns::LOAD, kiln_store::QUEUE_DEPTH);
        // (A stream's count is what it retains, not what waits.)
        if !depth.is_empty() && !super::queues::is_stream(&inner) {
            let secs_of: f64 = depth.iter().map(|(_, s)| s).sum();
            let mean = depth.iter().map(|(v, s)| v * s).sum::<f64>() / secs_of.max(1e-9);
            claim.push_str(&format!(
                ", the broker's queue held {} of them on average{}",
                super::queues::thousands(mean),
                if mean < 0.5 * held {
                    " (the rest waited before it: in the sockets and the broker's flow control, or in its processes)"
                } else {
                    ""
                }
            ));
        }
    }
    if i > 0 {
        let prev = &steps[i - 1];
        claim.push_str(&format!(
            " (the step before, {}, gave {}/s with p50 {})",
            prev.window.name,
            super::queues::thousands(prev.throughput),
            secs(prev.p50_us.unwrap_or(0.0) / 1e6)
        ));
    }
    let (from, to) = {
        let start = f.run.meta.measure.start_ns;
        let at = |t: u64| t.saturating_sub(start) as f64 / 1e9;
        (at(step.window.start_ns), at(step.window.end_ns))
    };
    x.claim = claim;
    x.evidence.insert(
        0,
        crate::Evidence {
            what: format!("step {}", step.window.name),
            value: format!(
                "{}/s, p50 {}",
                super::queues::thousands(step.throughput),
                step.p50_us.map_or("-".into(), |p| secs(p / 1e6))
            ),
            source: "the load's own counts and histograms over the step".into(),
            from_s: from,
            to_s: to,
            series: None,
            profile: None,
            focus: None,
        },
    );
    let _ = pct;
    vec![x]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(value: f64, throughput: f64, p50_ms: f64) -> StepFigures {
        StepFigures {
            window: Window {
                name: format!("x={value}"),
                start_ns: 0,
                end_ns: 1,
            },
            value,
            throughput,
            p50_us: Some(p50_ms * 1000.0),
        }
    }

    /// A rate sweep breaks where the rate is not held, not at the step after the last
    /// good one when that step still held.
    #[test]
    fn a_rate_sweep_breaks_where_the_rate_is_not_held() {
        let s = [
            step(5000.0, 5000.0, 0.4),
            step(7000.0, 6990.0, 0.6),
            step(9000.0, 8990.0, 0.9),
            step(11000.0, 7260.0, 2770.0),
        ];
        let (i, how) = break_step("rate", &s).unwrap();
        assert_eq!(i, 3, "{how}");
        assert!(how.contains("not held"), "{how}");
    }

    /// A concurrency sweep whose throughput grows ×1.37 for ×64 connections saturated at
    /// the first step where throughput stopped following the connections.
    #[test]
    fn a_concurrency_sweep_breaks_where_throughput_stops_following() {
        let s = [
            step(1.0, 2092.0, 0.427),
            step(2.0, 2500.0, 0.8),
            step(4.0, 2700.0, 1.5),
            step(64.0, 2864.0, 22.0),
        ];
        let (i, how) = break_step("connections", &s).unwrap();
        assert_eq!(i, 2, "{how}");
        assert!(how.contains("only queued"), "{how}");
        // Growing with its connections: no break.
        let s = [
            step(1.0, 1000.0, 1.0),
            step(2.0, 1900.0, 1.0),
            step(4.0, 3700.0, 1.1),
        ];
        assert!(break_step("connections", &s).is_none());
    }
}
