//! The figures of a run over its measurement window, from the load's seconds, the
//! resource samples and the recording.
use crate::procfs::{ProcSampler, TableBuilder, Totals};
use crate::{LoadOutcome, LoadTick};
use hdrhistogram::Histogram;
use kiln_hdr::HistogramSum;
use kiln_store::{
    Headline, Histogram as StoredHistogram, LoadInfo, SeriesTable, Window, QUEUE_DEPTH,
};

pub(crate) struct Computed {
    pub headline: Headline,
    pub histograms: Vec<StoredHistogram>,
    pub warnings: Vec<String>,
}

/// Whether a second belongs to a window: its middle lies in it.
pub(crate) fn in_window(t: &LoadTick, w: &Window) -> bool {
    let mid = t.end_ns.saturating_sub((t.interval_s * 0.5e9) as u64);
    w.contains(mid)
}

/// The latency histograms of the seconds in `w`, merged per name (in first-seen order),
/// and how many could not be read or added.
pub(crate) fn merged(ticks: &[LoadTick], w: &Window) -> (Vec<(String, Histogram<u64>)>, usize) {
    merged_all(ticks.iter().filter(|t| in_window(t, w)))
}

/// The latency histograms of `ticks`, merged per name (in first-seen order), and how many
/// could not be read or added.
pub(crate) fn merged_all<'a>(
    ticks: impl IntoIterator<Item = &'a LoadTick>,
) -> (Vec<(String, Histogram<u64>)>, usize) {
    let mut sums: Vec<(String, HistogramSum)> = Vec::new();
    for t in ticks {
        for l in &t.latency {
            let i = match sums.iter().position(|(n, _)| *n == l.name) {
                Some(i) => i,
                None => {
                    sums.push((l.name.clone(), HistogramSum::default()));
                    sums.len() - 1
                }
            };
            sums[i].1.add_encoded(&l.data);
        }
    }
    let skipped = sums.iter().map(|(_, s)| s.skipped).sum();
    let out = sums
        .into_iter()
        .filter_map(|(n, s)| Some((n, s.finish()?)))
        .collect();
    (out, skipped)
}

/// The warning for latency histograms of a window that could not be merged.
fn skipped_warning(skipped: usize, w: &Window) -> Option<String> {
    (skipped > 0).then(|| {
        format!(
            "{skipped} per-second latency histogram(s) of '{}' could not be read or merged: the window's percentiles leave them out",
            w.name
        )
    })
}

/// Every latency's per-second histograms as one interval log each (window
/// [`kiln_store::PER_SECOND`]): one line per load second, in the order of the `load`
/// series, an empty histogram where the second recorded none of that latency.
fn per_second(ticks: &[LoadTick]) -> Vec<StoredHistogram> {
    let mut names: Vec<&str> = Vec::new();
    for t in ticks {
        for l in &t.latency {
            if !names.contains(&l.name.as_str()) {
                names.push(&l.name);
            }
        }
    }
    let Ok(empty) = Histogram::<u64>::new(3) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for name in names {
        // A second that cannot be read back spoils the log (no window would be exact).
        let seconds: Option<Vec<Histogram<u64>>> = ticks
            .iter()
            .map(|t| match t.latency.iter().find(|l| l.name == name) {
                Some(l) => l.decode(),
                None => Some(empty.clone()),
            })
            .collect();
        let Some(seconds) = seconds else { continue };
        let comment = format!(
            "kiln: '{name}' latency (us) per second of the load; timestamps are CLOCK_MONOTONIC seconds"
        );
        let lines = ticks
            .iter()
            .zip(&seconds)
            .map(|(t, h)| (t.end_ns, t.interval_s, h));
        if let Ok(data) = kiln_hdr::write_interval_log(&comment, lines) {
            out.push(StoredHistogram {
                name: name.to_string(),
                window: kiln_store::PER_SECOND.into(),
                unit: "us".into(),
                data,
            });
        }
    }
    out
}

/// The target's CPU in one thread group over a window, % of one CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupCpu {
    /// The group (`scheduler`, `dirty_io_sch`, a merged pool), as the series names it.
    pub name: String,
    /// User time.
    pub user: f64,
    /// System time.
    pub system: f64,
}

/// The target's CPU by thread group over `w` (the `cpu user:GROUP` and `cpu system:GROUP`
/// columns of its series: CPU seconds over the seconds whose middle lies in `w`), busiest
/// first; groups that used no CPU are left out.
pub fn group_cpu(target: &SeriesTable, w: &Window) -> Vec<GroupCpu> {
    let rows: Vec<(usize, f64)> = kiln_store::window::intervals(&target.time_ns)
        .enumerate()
        .filter(|(_, (start, end))| w.contains(start + (end - start) / 2))
        .map(|(i, (start, end))| (i, (end - start) as f64 / 1e9))
        .collect();
    let secs: f64 = rows.iter().map(|r| r.1).sum();
    let mean = |col: &str| -> f64 {
        let Some(c) = target.column(col) else {
            return 0.0;
        };
        let sum: f64 = rows
            .iter()
            .filter_map(|&(i, dt)| Some(c.values.get(i).copied().flatten()? * dt))
            .sum();
        if secs > 0.0 {
            sum / secs
        } else {
            0.0
        }
    };
    let mut out: Vec<GroupCpu> = target
        .columns
        .iter()
        .filter_map(|c| c.name.strip_prefix("cpu user:"))
        .map(|g| GroupCpu {
            name: g.to_string(),
            user: mean(&format!("cpu user:{g}")),
            system: mean(&format!("cpu system:{g}")),
        })
        .filter(|g| g.user + g.system > 0.0)
        .collect();
    out.sort_by(|a, b| (b.user + b.system).total_cmp(&(a.user + a.system)));
    out
}

/// The unit of a load whose operations are connections held open (MQTT `conn`).
pub const FLEET_UNIT: &str = "conn";

/// The count of `f` over the seconds of `w`, and its rate over their length.
fn rate(ticks: &[LoadTick], w: &Window, f: fn(&LoadTick) -> Option<u64>) -> Option<(u64, f64)> {
    let mut n = 0u64;
    let mut secs = 0.0;
    let mut any = false;
    for t in ticks.iter().filter(|t| in_window(t, w)) {
        if let Some(c) = f(t) {
            n += c;
            any = true;
        }
        secs += t.interval_s;
    }
    (any && secs > 0.0).then(|| (n, n as f64 / secs))
}

/// The latency figures from the window's merged histograms, and the histograms to store:
/// the window's, one per second, one per step of a sweep.
fn latency(
    h: &mut Headline,
    warnings: &mut Vec<String>,
    ticks: &[LoadTick],
    w: &Window,
    outcome: &LoadOutcome,
) -> Vec<StoredHistogram> {
    let mut histograms = Vec::new();
    let (hist, skipped) = merged(ticks, w);
    warnings.extend(skipped_warning(skipped, w));
    if let Some((name, p)) = hist.first() {
        h.latency = Some(name.clone());
        h.p50_us = Some(p.value_at_quantile(0.5) as f64);
        h.p99_us = Some(p.value_at_quantile(0.99) as f64);
        h.p999_us = Some(p.value_at_quantile(0.999) as f64);
        h.max_us = Some(p.max() as f64);
    }
    let stored = |name: String, window: &str, p: &Histogram<u64>| {
        kiln_hdr::encode_histogram(p)
            .ok()
            .map(|data| StoredHistogram {
                name,
                window: window.to_string(),
                unit: "us".into(),
                data,
            })
    };
    histograms.extend(
        hist.iter()
            .filter_map(|(n, p)| stored(n.clone(), &w.name, p)),
    );
    histograms.extend(per_second(ticks));
    for step in &outcome.windows {
        let (hists, skipped) = merged(ticks, step);
        warnings.extend(skipped_warning(skipped, step));
        histograms.extend(
            hists
                .iter()
                .filter_map(|(n, p)| stored(n.clone(), &step.name, p)),
        );
    }
    histograms
}

/// Throughput and latency from an external load command's own summary (wrk's), and the
/// warning that they cover its whole run.
fn external_summary(h: &mut Headline, info: &LoadInfo, outcome: &LoadOutcome) -> Option<String> {
    if let Some(p) = outcome.report.get("parsed").filter(|p| !p.is_null()) {
        h.throughput = p.get("requests_per_s").and_then(|v| v.as_f64());
        let pct = |q: f64| {
            p.get("latency_us")?
                .as_array()?
                .iter()
                .filter_map(|x| Some((x.get(0)?.as_f64()?, x.get(1)?.as_f64()?)))
                .find(|(p, _)| (*p - q).abs() < 1e-9)
                .map(|(_, v)| v)
        };
        h.p50_us = pct(50.0);
        h.p99_us = pct(99.0);
        h.p999_us = pct(99.9);
        if h.p50_us.is_some() {
            h.latency = Some("request (as the load command reported it)".into());
        }
        if h.throughput.is_some() {
            return Some(format!(
                "throughput and latency are the load command's own figures over its whole run ('{}'), not only the measurement window",
                info.argv.first().map(String::as_str).unwrap_or("?")
            ));
        }
    }
    None
}

/// The target's CPU and switches, kiln's and the load command's CPU and the machine's
/// busy share between totals `a` and `b` (whether a full machine limited the load is a
/// finding, weighed against the target's threads: kiln-findings).
fn cpu_figures(h: &mut Headline, a: &Totals, b: &Totals, info: &LoadInfo) {
    let user = (b.target_user_s - a.target_user_s).max(0.0);
    let system = (b.target_system_s - a.target_system_s).max(0.0);
    h.target_user_s = Some(user);
    h.target_system_s = Some(system);
    h.target_cpu_s = Some(user + system);
    let switches = (b.voluntary + b.involuntary).saturating_sub(a.voluntary + a.involuntary);
    h.context_switches = Some(switches);
    h.kiln_cpu_s = Some((b.kiln_s - a.kiln_s).max(0.0));
    if info.protocol == "exec" {
        h.load_cpu_s = Some((b.load_s - a.load_s).max(0.0));
    }
    let total = b.machine_total_s - a.machine_total_s;
    if total > 0.0 {
        let busy = ((b.machine_busy_s - a.machine_busy_s) / total * 100.0).clamp(0.0, 100.0);
        h.machine_busy_pct = Some(busy);
    }
    if let Some(ops) = h.operations.filter(|&o| o > 0) {
        h.cpu_per_op_us = Some((user + system) * 1e6 / ops as f64);
        h.switches_per_op = Some(switches as f64 / ops as f64);
    }
}

pub(crate) fn compute(
    w: &Window,
    ticks: &[LoadTick],
    sampler: &ProcSampler,
    info: &LoadInfo,
    outcome: &LoadOutcome,
) -> Computed {
    let mut h = Headline::default();
    let mut warnings = Vec::new();
    let secs = w.seconds();
    let completed = rate(ticks, w, |t| t.completed);
    h.throughput = completed.map(|c| c.1);
    // The exact count of the seconds in the window, not a rate times its length.
    h.operations = completed.map(|c| c.0);
    h.send_rate = rate(ticks, w, |t| t.sent).map(|c| c.1);
    if info.unit == FLEET_UNIT {
        // A fleet's work is holding its connections, not opening them: no rate of
        // connections per second stands for it (an idle fleet would read "0/s").
        h.connections = kiln_store::window::connections_held(Some(&load_series(ticks)), w.end_ns);
        h.throughput = None;
        h.send_rate = None;
        h.operations = None;
    }
    let histograms = latency(&mut h, &mut warnings, ticks, w, outcome);
    // An external command's own summary, when it prints one (wrk).
    if h.throughput.is_none() {
        warnings.extend(external_summary(&mut h, info, outcome));
    }
    if let (None, Some(t)) = (h.operations, h.throughput) {
        // An external command's own throughput: no count to take.
        h.operations = Some((t * secs).round() as u64);
    }
    if let (Some(a), Some(b)) = (sampler.totals_at(w.start_ns), sampler.totals_at(w.end_ns)) {
        cpu_figures(&mut h, &a, &b, info);
    }
    h.queue_depth_max = ticks
        .iter()
        .filter(|t| in_window(t, w))
        .filter_map(|t| t.value(QUEUE_DEPTH))
        .reduce(f64::max);
    let rss = sampler.peak_rss();
    if rss > 0 {
        h.rss_max_bytes = Some(rss);
    }
    Computed {
        headline: h,
        histograms,
        warnings,
    }
}

/// The load's seconds as a series table.
pub(crate) fn load_series(ticks: &[LoadTick]) -> SeriesTable {
    let mut t = TableBuilder::new("load");
    for tick in ticks {
        let row: Vec<(String, &str, Option<f64>)> = tick
            .values
            .iter()
            .map(|v| (v.name.clone(), v.unit.as_str(), v.value))
            .collect();
        t.row(tick.end_ns, &row);
    }
    t.finish()
}

/// What a reader of the run must know about the recording; `start_ns`: the start of the
/// measurement (CLOCK_MONOTONIC), which times are given from.
pub(crate) fn recording_warnings(s: &kiln_record::Summary, start_ns: u64) -> Vec<String> {
    let mut w = Vec::new();
    if s.lost > 0 {
        w.push(format!(
            "{} sample records were lost by the kernel (ring buffer full)",
            s.lost
        ));
    }
    if s.throttled > 0 {
        w.push(format!(
            "the kernel throttled sampling {} times (kernel.perf_event_max_sample_rate)",
            s.throttled
        ));
    }
    if s.offcpu_dropped_blocks > 0 {
        w.push(format!(
            "error: {} off-CPU blocks ({:.3} s off CPU) were lost, not in the off-CPU profile: \
             the kernel's buffer of finished blocks was full (the machine kept kiln's reader \
             from running)",
            s.offcpu_dropped_blocks,
            s.offcpu_dropped_ns as f64 / 1e9
        ));
        let when: Vec<String> = s
            .offcpu_dropped_per_second
            .iter()
            .map(|&(t, n)| format!("{n} at {:.0} s", t.saturating_sub(start_ns) as f64 / 1e9))
            .collect();
        if !when.is_empty() {
            w.push(format!(
                "off-CPU blocks lost per second of the measurement: {}",
                when.join(", ")
            ));
        }
    }
    if s.offcpu_unseen_ends > 0 {
        w.push(format!(
            "{} off-CPU blocks are not in the off-CPU profile: their end was not seen (the \
             kernel refused the thread's state as it ran again)",
            s.offcpu_unseen_ends
        ));
    }
    if s.bad_records > 0 {
        w.push(format!("{} records could not be parsed", s.bad_records));
    }
    // Names missing: which binaries, their build ids, and the fix, once.
    for u in s.unnamed_images.iter().filter(|u| u.note.is_some()) {
        if s.frames == 0 || u.frames * 100 < s.frames {
            continue;
        }
        w.push(format!(
            "{:.1}% of the profile's frames have no name in {}{}, which is stripped: {}",
            u.frames as f64 * 100.0 / s.frames as f64,
            u.path.display(),
            u.build_id
                .as_deref()
                .map(|b| format!(" (build id {b})"))
                .unwrap_or_default(),
            u.fix()
        ));
    }
    w.extend(s.warnings.iter().cloned());
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(end_ns: u64, values: &[u64]) -> LoadTick {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for &v in values {
            h.record(v).unwrap();
        }
        LoadTick {
            end_ns,
            interval_s: 1.0,
            latency: crate::Latency::encode("consumer", &h).into_iter().collect(),
            ..Default::default()
        }
    }

    #[test]
    fn thread_groups_over_a_window_and_a_fleets_connections() {
        let s = 1_000_000_000u64;
        let col = |name: &str, v: &[f64]| kiln_store::Column {
            name: name.into(),
            unit: "%".into(),
            values: v.iter().map(|&x| Some(x)).collect(),
        };
        let target = SeriesTable {
            name: "target".into(),
            time_ns: vec![s, 2 * s, 3 * s, 4 * s],
            columns: vec![
                col("cpu user:scheduler", &[10.0, 20.0, 30.0, 40.0]),
                col("cpu system:scheduler", &[1.0, 2.0, 3.0, 4.0]),
                col("cpu user:aux", &[0.0, 0.0, 0.0, 0.0]),
                col("cpu system:aux", &[0.0, 0.0, 0.0, 0.0]),
                col("cpu user:poller", &[50.0, 50.0, 50.0, 50.0]),
                col("cpu system:poller", &[0.0, 10.0, 0.0, 0.0]),
            ],
        };
        let w = Window {
            name: "measure".into(),
            start_ns: s,
            end_ns: 3 * s,
        };
        let g = group_cpu(&target, &w);
        // The seconds ending at 2 s and 3 s; aux used nothing.
        assert_eq!(
            g,
            [
                GroupCpu {
                    name: "poller".into(),
                    user: 50.0,
                    system: 5.0
                },
                GroupCpu {
                    name: "scheduler".into(),
                    user: 25.0,
                    system: 2.5
                },
            ]
        );
        // A fleet: 100 connect in the first second, 50 more, 10 dropped.
        let tick = |end: u64, connected: f64, dropped: f64| LoadTick {
            end_ns: end,
            interval_s: 1.0,
            values: vec![
                crate::Value {
                    name: "connected".into(),
                    unit: "conn/s".into(),
                    kind: crate::ValueKind::Rate,
                    value: Some(connected),
                },
                crate::Value {
                    name: "dropped".into(),
                    unit: "conn/s".into(),
                    kind: crate::ValueKind::Rate,
                    value: Some(dropped),
                },
            ],
            ..Default::default()
        };
        let ticks = [
            tick(s, 100.0, 0.0),
            tick(2 * s, 50.0, 0.0),
            tick(3 * s, 0.0, 10.0),
            tick(4 * s, 0.0, 0.0),
        ];
        let held = |end| kiln_store::window::connections_held(Some(&load_series(&ticks)), end);
        assert_eq!(held(2 * s), Some(150));
        assert_eq!(held(4 * s), Some(140));
    }

    #[test]
    fn per_second_logs_have_one_line_per_load_second() {
        let s = 1_000_000_000u64;
        let ticks = [
            second(5 * s, &[10, 20]),
            second(6 * s, &[]),
            second(7 * s, &[30]),
        ];
        let logs = per_second(&ticks);
        assert_eq!(logs.len(), 1);
        assert_eq!(logs[0].window, kiln_store::PER_SECOND);
        let lines: Vec<(u64, u64)> = kiln_hdr::read_interval_log(&logs[0].data)
            .unwrap()
            .into_iter()
            .map(|(end, h)| (end, h.len()))
            .collect();
        assert_eq!(lines, [(5 * s, 2), (6 * s, 0), (7 * s, 1)]);
    }
}
