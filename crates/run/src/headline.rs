//! What a run keeps of its load's seconds (their series, their latency histograms) and
//! its headline over the measurement: the store's one rule for a window's figures
//! ([`kiln_store::window::figures`]) applied to what the run stores, so that any later
//! reading of the same window (`kiln compare RUN@measure`, the report) finds the same
//! figures.
use crate::procfs::TableBuilder;
use crate::{LoadOutcome, LoadTick};
use hdrhistogram::Histogram;
use kiln_hdr::HistogramSum;
use kiln_store::{columns, RunData, SeriesTable, StoredHistogram, Window};

/// A load second's span, `(start, end)` ns: its own length before its end.
fn span(t: &LoadTick) -> (u64, u64) {
    (
        t.end_ns.saturating_sub((t.interval_s * 1e9) as u64),
        t.end_ns,
    )
}

/// The load's seconds as `(start, end)` ns, one per row of its series
/// ([`kiln_store::window::figures_over`]).
pub(crate) fn seconds(ticks: &[LoadTick]) -> Vec<(u64, u64)> {
    ticks.iter().map(span).collect()
}

/// Whether a second belongs to a window: its middle lies in it.
pub(crate) fn in_window(t: &LoadTick, w: &Window) -> bool {
    let (start, end) = span(t);
    w.contains(start + (end - start) / 2)
}

/// The latency histograms of the seconds in `w`, merged per name (in first-seen order),
/// and how many could not be read or added: the seconds the throughput is counted over.
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
/// columns of its series: CPU seconds over exactly `w`, by the rule of the headline's CPU,
/// [`kiln_store::window::overlap`], over the seconds of `w` the series covers), busiest
/// first; groups that used no CPU are left out.
pub fn group_cpu(target: &SeriesTable, w: &Window) -> Vec<GroupCpu> {
    let secs: f64 = kiln_store::window::intervals(&target.time_ns)
        .map(|(start, end)| end.min(w.end_ns).saturating_sub(start.max(w.start_ns)) as f64 / 1e9)
        .sum();
    let mean = |col: &str| -> f64 {
        match kiln_store::window::overlap(Some(target), col, w) {
            Some((cpu, _)) if secs > 0.0 => cpu / secs,
            _ => 0.0,
        }
    };
    let mut out: Vec<GroupCpu> = columns::groups(target, columns::GROUP_CPU_USER)
        .into_iter()
        .map(|g| GroupCpu {
            name: g.to_string(),
            user: mean(&columns::per_group(columns::GROUP_CPU_USER, g)),
            system: mean(&columns::per_group(columns::GROUP_CPU_SYSTEM, g)),
        })
        .filter(|g| g.user + g.system > 0.0)
        .collect();
    out.sort_by(|a, b| (b.user + b.system).total_cmp(&(a.user + a.system)));
    out
}

/// The unit of a load whose operations are connections held open (MQTT `conn`).
pub use kiln_store::window::FLEET_UNIT;

/// The latency histograms a run keeps: each latency's merged over the measurement `w`
/// (the headline's first), every second's as one interval log per latency, and each
/// sweep step's merged; with the warnings for seconds' histograms that could not be merged.
pub(crate) fn histograms(
    w: &Window,
    ticks: &[LoadTick],
    outcome: &LoadOutcome,
) -> (Vec<StoredHistogram>, Vec<String>) {
    let mut warnings = Vec::new();
    let stored = |name: &str, window: &str, p: &Histogram<u64>| {
        kiln_hdr::encode_histogram(p)
            .ok()
            .map(|data| StoredHistogram {
                name: name.to_string(),
                window: window.to_string(),
                unit: "us".into(),
                data,
            })
    };
    let mut out = Vec::new();
    let (hist, skipped) = merged(ticks, w);
    warnings.extend(skipped_warning(skipped, w));
    out.extend(hist.iter().filter_map(|(n, p)| stored(n, &w.name, p)));
    out.extend(per_second(ticks));
    for step in &outcome.windows {
        let (hists, skipped) = merged(ticks, step);
        warnings.extend(skipped_warning(skipped, step));
        out.extend(hists.iter().filter_map(|(n, p)| stored(n, &step.name, p)));
    }
    (out, warnings)
}

/// The run's headline over its measurement: the store's rule for any window's figures
/// ([`kiln_store::window::figures`]) over the series and histograms the run keeps, every
/// host's target counted; kiln's eBPF CPU and the BEAM's scheduler states, which no second
/// holds, are kept as they are.
pub(crate) fn measure(data: &mut RunData, load_seconds: &[(u64, u64)]) {
    let (bpf, beam) = (
        data.meta.headline.kiln_bpf_cpu_s,
        data.meta.headline.beam.take(),
    );
    let mut h = kiln_store::window::figures_over(data, &data.meta.measure, Some(load_seconds));
    h.kiln_bpf_cpu_s = bpf;
    h.beam = beam;
    data.meta.headline = h;
}

/// What a reader must know when the headline's throughput and latency are an external
/// load command's own (wrk's summary): they cover its whole run.
pub(crate) fn command_summary_warning(data: &RunData) -> Option<String> {
    let m = &data.meta;
    (m.load.completed.is_empty() && m.headline.throughput.is_some()).then(|| {
        format!(
            "throughput and latency are the load command's own figures over its whole run ('{}'), not only the measurement window",
            m.load.argv.first().map(String::as_str).unwrap_or("?")
        )
    })
}

/// The load's seconds as a series table.
pub(crate) fn load_series(ticks: &[LoadTick]) -> SeriesTable {
    let mut t = TableBuilder::new(columns::LOAD);
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
pub(crate) fn recording_warnings(s: &kiln_record::RecordingSummary, start_ns: u64) -> Vec<String> {
    let mut w = Vec::new();
    if s.lost > 0 {
        // Of them, samples the kernel skipped while another eBPF program held the CPU (the
        // programs' misses, and the events' own counts against the samples given).
        let skipped = s.unseen_samples
            + s.own_bpf
                .iter()
                .filter(|c| c.program == "sampler")
                .map(|c| c.missed)
                .sum::<u64>();
        let why = if skipped > 0 {
            format!(
                "ring buffer full, or {} skipped while another eBPF program held the CPU",
                skipped.min(s.lost)
            )
        } else {
            "ring buffer full".to_string()
        };
        w.push(format!(
            "{} sample records were lost by the kernel ({why})",
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
    if s.offcpu_fp_only > 0 {
        w.push(kiln_record::fp_only_said(s.offcpu_fp_only, s.offcpu_blocks));
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
            latency: crate::EncodedLatency::encode("consumer", &h)
                .into_iter()
                .collect(),
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

    /// A load's second as an engine's: `completed` messages received, as many sent, and
    /// their latencies.
    fn load_second(end_ns: u64, interval_s: f64, completed: u64) -> LoadTick {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 0..completed.min(500) {
            h.record(100 + (v * 7919 + end_ns / 1_000_000) % 5000)
                .unwrap();
        }
        let rate = |name: &str, n: u64| crate::Value {
            name: name.into(),
            unit: "msg/s".into(),
            kind: crate::ValueKind::Rate,
            value: Some(n as f64 / interval_s),
        };
        LoadTick {
            end_ns,
            interval_s,
            completed: Some(completed),
            sent: Some(completed + 3),
            values: vec![
                rate(columns::SENT, completed + 3),
                rate("received", completed),
                crate::Value {
                    name: columns::QUEUE_DEPTH.into(),
                    unit: "msg".into(),
                    kind: crate::ValueKind::Level,
                    value: Some((end_ns % 97) as f64),
                },
            ],
            latency: crate::EncodedLatency::encode("consumer_latency", &h)
                .into_iter()
                .collect(),
        }
    }

    /// Same window, same figures: the headline `kiln run` computes as it saves a run
    /// equals the one the store's window rule computes again from the stored run, and so
    /// does any other window of it before and after the store. The
    /// target's series are a real sampler's of this very process (its CPU, switches and
    /// memory), the measurement's edges in the middle of its rows and of the load's
    /// seconds; the operations are the load's own counts of its seconds in the window.
    #[test]
    fn the_saved_headline_is_the_stored_runs_window_figures() {
        let mut sampler = crate::procfs::ProcSampler::new(&[std::process::id()], None);
        let mut spin = 0u64;
        let mut times = Vec::new();
        for _ in 0..8 {
            times.push(sampler.sample().time_ns);
            for i in 0..20_000_000u64 {
                spin = spin.wrapping_mul(6364136223846793005).wrapping_add(i);
            }
            std::hint::black_box(spin);
        }
        let (first, last) = (times[0], times[times.len() - 1]);
        let step = (last - first) / 10;
        let ticks: Vec<LoadTick> = (1..=10)
            .map(|i| load_second(first + i * step + 3_000, step as f64 / 1e9, 800 + 37 * i))
            .collect();
        let measure = Window {
            name: "measure".into(),
            start_ns: times[1] + (times[2] - times[1]) / 3,
            end_ns: last - step * 2 / 5,
        };
        let outcome = LoadOutcome::default();
        let (histograms, warnings) = histograms(&measure, &ticks, &outcome);
        assert!(warnings.is_empty(), "{warnings:?}");
        let mut series = vec![load_series(&ticks)];
        series.extend(sampler.finish());
        let mut data = RunData {
            series,
            histograms,
            ..Default::default()
        };
        data.meta.name = "same-window".into();
        data.meta.measure = measure.clone();
        data.meta.load.completed = "received".into();
        data.meta.load.unit = "msg".into();
        super::measure(&mut data, &seconds(&ticks));
        let h = data.meta.headline.clone();
        // The load's own counts of its seconds whose middle lies in the window.
        let counted: u64 = ticks
            .iter()
            .filter(|t| in_window(t, &measure))
            .filter_map(|t| t.completed)
            .sum();
        assert_eq!(h.operations, Some(counted));
        assert_eq!(h.latency.as_deref(), Some("consumer_latency"));
        assert!(h.target_cpu_s.is_some_and(|c| c > 0.0), "{h:?}");
        assert!(h.rss_max_bytes.is_some_and(|r| r > 0), "{h:?}");
        assert!(h.cpu_per_op_us.is_some() && h.kiln_cpu_s.is_some() && h.queue_depth_max.is_some());

        let dir = tempfile::tempdir().unwrap();
        let mut store = kiln_store::SqliteStore::open(&dir.path().join("runs.db")).unwrap();
        use kiln_store::Store as _;
        let id = store.save(&data).unwrap();
        let stored = store.load(id).unwrap();
        // The store keeps numbers to within a unit of their last digit.
        let again = kiln_store::window::window_view(&stored, &stored.meta.measure);
        same_figures(
            &again.headline,
            &h,
            "the stored run seen through its measurement",
        );
        same_figures(&stored.meta.headline, &h, "the stored headline");
        // Another window, before and after the store: the same figures too.
        let span = Window {
            name: "a span".into(),
            start_ns: measure.start_ns + step * 13 / 10,
            end_ns: measure.start_ns + step * 47 / 10,
        };
        same_figures(
            &kiln_store::window::window_view(&stored, &span).headline,
            &kiln_store::window::window_view(&data, &span).headline,
            "a span of the run",
        );
    }

    /// `a` and `b` have the same figures: the same counts and names, numbers equal to
    /// within 1e-12 of their size (what a store's round trip of an f64 may change).
    fn same_figures(a: &kiln_store::Headline, b: &kiln_store::Headline, what: &str) {
        let (x, y) = (
            serde_json::to_value(a).unwrap(),
            serde_json::to_value(b).unwrap(),
        );
        let (serde_json::Value::Object(x), serde_json::Value::Object(y)) = (&x, &y) else {
            panic!("{what}: a headline is an object");
        };
        assert_eq!(
            x.keys().collect::<Vec<_>>(),
            y.keys().collect::<Vec<_>>(),
            "{what}"
        );
        for (k, u) in x {
            let v = &y[k];
            match (u.as_f64(), v.as_f64()) {
                (Some(p), Some(q)) if !(u.is_u64() && v.is_u64()) => assert!(
                    (p - q).abs() <= 1e-12 * p.abs().max(q.abs()),
                    "{what}: {k} {p} vs {q}"
                ),
                _ => assert_eq!(u, v, "{what}: {k}"),
            }
        }
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
