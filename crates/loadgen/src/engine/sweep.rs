//! Sweeps: one run per step of a parameter (a rate, a connection count), each step a window
//! of its own on `CLOCK_MONOTONIC`, so `kiln run` can keep one profile per step.
use super::report::{LoadHeadline, Report, Step, Throughput};
use super::stats::{merge, Count, Latency, Percentiles, Tick};
use super::Driver;
use crate::Error;
use kiln_os::stop::Stop;

/// Parses `FROM:TO:STEPS` (evenly spaced, inclusive) or a comma list `1000,2000,5000` of
/// values > 0 for `flag`.
pub fn parse_steps(flag: &'static str, s: &str) -> Result<Vec<f64>, Error> {
    let bad = |reason: &str| Error::Option {
        flag,
        value: s.to_string(),
        reason: reason.to_string(),
    };
    let num = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| *v > 0.0 && v.is_finite())
    };
    let values: Vec<f64> = if s.contains(':') {
        let p: Vec<&str> = s.split(':').collect();
        if p.len() != 3 {
            return Err(bad(
                "expected FROM:TO:STEPS, e.g. 1000:20000:5, or a list 1000,5000",
            ));
        }
        let (a, b) = (
            num(p[0]).ok_or_else(|| bad("FROM must be a number > 0"))?,
            num(p[1]).ok_or_else(|| bad("TO must be a number > 0"))?,
        );
        let n: usize = p[2]
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| bad("STEPS must be 1-100"))?;
        if n == 1 {
            vec![a]
        } else {
            (0..n)
                .map(|i| a + (b - a) * i as f64 / (n - 1) as f64)
                .collect()
        }
    } else {
        s.split(',')
            .map(|x| num(x).ok_or_else(|| bad(&format!("'{}' is not a number > 0", x.trim()))))
            .collect::<Result<_, _>>()?
    };
    if values.is_empty() {
        return Err(bad("no values"));
    }
    Ok(values)
}

/// Throughput growth below which a concurrency step counts as the plateau, unless the
/// user set their own (`kiln load http --plateau-threshold`, kept in the report).
pub const PLATEAU_GROWTH: f64 = 0.1;

/// The plateau of a sweep of growing concurrency (`values`, the connections): the first
/// step k while the next step's median latency grows by more than `threshold` and either
/// no later step's throughput exceeds step k's by `threshold` (0.1 = 10%), or the next
/// step's throughput did not follow its connections — it grew as connectionsᵉ with e
/// under [`kiln_model::saturation::QUEUED`] (×1.29 for ×6 the connections): the added
/// connections only queued (Little's law), the rule of the knee `kiln run` finds in a
/// stored sweep. `None`: throughput kept growing.
pub fn plateau(values: &[f64], throughput: &[f64], p50: &[f64], threshold: f64) -> Option<usize> {
    use kiln_model::saturation::{exponent, SweepPoint, QUEUED};
    let point = |i: usize| SweepPoint {
        value: values.get(i).copied().unwrap_or(0.0),
        throughput: throughput[i],
        p50_us: p50.get(i).copied(),
    };
    (0..throughput.len().saturating_sub(1)).find(|&k| {
        let flat = throughput[k + 1..]
            .iter()
            .all(|&t| t < throughput[k] * (1.0 + threshold));
        let queued = exponent(&point(k), &point(k + 1)).is_some_and(|e| e < QUEUED);
        let slower = p50.get(k + 1).copied().unwrap_or(0.0)
            > p50.get(k).copied().unwrap_or(0.0) * (1.0 + threshold);
        (flat || queued) && slower
    })
}

/// Runs one step per value of `param`: `driver_for(value)` makes the step's driver. Ticks
/// reach `on_tick` with [`Tick::step`] set. Stops early on `stop` or a failed step and
/// returns the steps so far; the report's headline covers the whole sweep (totals summed,
/// latencies merged) and [`Report::steps`] each step with its window.
pub(crate) fn run_sweep<D: Driver>(
    param: &str,
    values: &[f64],
    mut driver_for: impl FnMut(f64) -> D,
    stop: &Stop,
    on_tick: &mut dyn FnMut(&Tick),
) -> Result<Report, Error> {
    let mut whole: Option<Report> = None;
    let mut hists: Vec<(String, Option<hdrhistogram::Histogram<u64>>)> = Vec::new();
    for (i, &value) in values.iter().enumerate() {
        if stop.is_raised() {
            break;
        }
        let d = driver_for(value);
        let step = i as u32;
        let r = super::run(&d, stop, &mut |t| {
            let mut t = t.clone();
            t.step = Some(step);
            on_tick(&t)
        })?;
        for b in &r.histograms {
            if let Ok(h) = b.decode() {
                match hists.iter_mut().find(|(n, _)| *n == b.name) {
                    Some((_, acc)) => merge(acc, &h),
                    None => {
                        let mut acc = None;
                        merge(&mut acc, &h);
                        hists.push((b.name.clone(), acc));
                    }
                }
            }
        }
        let failed = r.headline.failure.is_some();
        let st = Step {
            param: param.to_string(),
            value,
            start_mono_ns: r.headline.start_mono_ns,
            end_mono_ns: r.headline.end_mono_ns,
            headline: r.headline.clone(),
        };
        let mut series = r.series;
        for t in &mut series {
            t.step = Some(step);
        }
        match whole.as_mut() {
            None => {
                let mut w = Report {
                    series,
                    steps: vec![st],
                    ..r
                };
                w.options =
                    serde_json::json!({ "sweep": param, "values": values, "run": w.options });
                whole = Some(w);
            }
            Some(w) => {
                w.series.extend(series);
                let offset = (r
                    .headline
                    .start_mono_ns
                    .saturating_sub(w.headline.start_mono_ns)) as f64
                    / 1e9;
                w.events.extend(r.events.into_iter().map(|mut e| {
                    e.time_s = ((e.time_s + offset) * 1000.0).round() / 1000.0;
                    e
                }));
                w.steps.push(st);
                w.headline = combine(&w.steps);
            }
        }
        if failed {
            break;
        }
    }
    let mut w = whole.ok_or_else(|| Error::Start("interrupted before the first step".into()))?;
    w.headline = combine(&w.steps);
    w.headline.latencies = w
        .headline
        .latencies
        .iter()
        .map(|l| Latency {
            percentiles: hists
                .iter()
                .find(|(n, _)| *n == l.name)
                .and_then(|(_, h)| h.as_ref().and_then(Percentiles::of)),
            ..l.clone()
        })
        .collect();
    w.histograms = hists
        .iter()
        .filter_map(|(n, h)| super::HistogramBlob::encode(n, h.as_ref()?))
        .collect();
    w.summary = serde_json::Value::Null;
    w.headline.interrupted = stop.is_raised();
    Ok(w)
}

/// The headline of consecutive steps: totals summed, time from the first start to the last
/// end, the first failure. Latencies are left as the first step's (the caller merges).
fn combine(steps: &[Step]) -> LoadHeadline {
    let first = &steps[0].headline;
    let last = &steps[steps.len() - 1].headline;
    let duration_s: f64 = steps.iter().map(|s| s.headline.duration_s).sum();
    let sum = |pick: fn(&LoadHeadline) -> &Vec<Count>| -> Vec<Count> {
        pick(first)
            .iter()
            .map(|c| Count {
                value: steps
                    .iter()
                    .map(|s| {
                        pick(&s.headline)
                            .iter()
                            .find(|x| x.name == c.name)
                            .map_or(0, |x| x.value)
                    })
                    .sum(),
                ..c.clone()
            })
            .collect()
    };
    let totals = sum(|h| &h.totals);
    let tp = &first.throughput;
    let tp_total = totals
        .iter()
        .find(|c| c.name == tp.counter)
        .map_or(0, |c| c.value);
    LoadHeadline {
        protocol: first.protocol.clone(),
        id: first.id.clone(),
        throughput: Throughput {
            counter: tp.counter.clone(),
            unit: tp.unit.clone(),
            value: tp_total as f64 / duration_s.max(1e-9),
        },
        duration_s: (duration_s * 1000.0).round() / 1000.0,
        start_mono_ns: first.start_mono_ns,
        end_mono_ns: last.end_mono_ns,
        start_unix_ns: first.start_unix_ns,
        totals,
        latencies: first.latencies.clone(),
        flag_seconds: sum(|h| &h.flag_seconds),
        failure: steps.iter().find_map(|s| s.headline.failure.clone()),
        interrupted: last.interrupted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_specs() {
        assert_eq!(
            parse_steps("--rate-sweep", "1000:5000:5").unwrap(),
            vec![1000.0, 2000.0, 3000.0, 4000.0, 5000.0]
        );
        assert_eq!(
            parse_steps("--rate-sweep", "10, 20").unwrap(),
            vec![10.0, 20.0]
        );
        for bad in ["1:2", "a,b", "0:10:2", "1:10:0", ""] {
            let e = parse_steps("--rate-sweep", bad).unwrap_err().to_string();
            assert!(e.contains("--rate-sweep"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_plateau_is_where_throughput_stops_growing_and_latency_does_not() {
        // Throughput flat from the second step on while latency doubles: step 1.
        let conns = [1.0, 4.0, 8.0, 16.0];
        let tp = [1000.0, 4000.0, 4100.0, 4050.0];
        let p50 = [100.0, 120.0, 260.0, 900.0];
        assert_eq!(plateau(&conns, &tp, &p50, PLATEAU_GROWTH), Some(1));
        // Flat throughput with flat latency is not a plateau yet: the next step is.
        let later = [100.0, 120.0, 125.0, 900.0];
        assert_eq!(plateau(&conns, &tp, &later, 0.1), Some(2));
        // Throughput that keeps growing with the connections has none.
        let up = [1.0, 2.0, 4.0];
        assert_eq!(plateau(&up, &up, &up, 0.1), None);
        // ×1.29 for ×6 the connections, latency ×4.7: they queued, though it grew 29%.
        let little = [28539.0, 36767.0, 41000.0];
        let p50 = [128.0, 599.0, 1600.0];
        assert_eq!(plateau(&[8.0, 48.0, 128.0], &little, &p50, 0.1), Some(0));
        // One step, or none: no plateau, no panic; missing latencies read as 0.
        assert_eq!(plateau(&[1.0], &[5.0], &[1.0], 0.1), None);
        assert_eq!(plateau(&[], &[], &[], 0.1), None);
        assert_eq!(plateau(&[1.0, 2.0], &[5.0, 5.0], &[], 0.1), None);
    }
}
