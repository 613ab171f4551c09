//! A run seen through one of its windows: a step of a sweep (`run:sweep@48`), or any span
//! of its clock. The headline figures are computed from what the run stored for every
//! second — the load's rates, the target's CPU, memory and switches — and from the
//! latency histograms kept for that window, so `kiln compare sweep@48 sweep@256` compares
//! two steps of one run as it compares two runs. [`figures`] is the one rule for them:
//! `kiln run` computes its own headline with it over the series it stores, so a window
//! read again later (`kiln compare RUN@measure`, the findings, the report) gives the same
//! figures as the run did.
use crate::{columns, Headline, RunData, RunMeta, SeriesTable, Window};

/// Finds the window `name` names in `meta`: a window's full name (`connections=48`), the
/// value after its `=` (`48`), `measure`, or a span of seconds from the start of the
/// measurement, `START-END` (`10-20`, `2.5s-4s`: the same span in every run it is
/// applied to, so that runs of one experiment are compared over the same part of each).
pub fn find_window(meta: &RunMeta, name: &str) -> Option<Window> {
    if name == "measure" || name == meta.measure.name {
        return Some(meta.measure.clone());
    }
    let named = meta
        .windows
        .iter()
        .find(|w| w.name == name)
        .or_else(|| {
            meta.windows
                .iter()
                .find(|w| w.name.rsplit_once('=').is_some_and(|(_, v)| v == name))
        })
        .cloned();
    named.or_else(|| {
        let (a, b) = span(name)?;
        let at = |s: f64| {
            meta.measure
                .start_ns
                .saturating_add((s * 1e9).round() as u64)
        };
        Some(Window {
            name: format!("{}s-{}s", trim(a), trim(b)),
            start_ns: at(a),
            end_ns: at(b).min(meta.measure.end_ns),
        })
        .filter(|w| w.end_ns > w.start_ns)
    })
}

/// The latency histogram of the seconds in `w` (a second belongs to the window its middle
/// lies in), merged from the run's per-second histograms, for a window the run kept none
/// of its own for (a span): the headline's latency, else the first kept. The log's seconds
/// are the load's rows (one line per row, in its order): placed by the load's own times
/// when the counts agree (the log's timestamps are to the millisecond), so that latency
/// and throughput count the same seconds.
fn per_second_latency(run: &RunData, w: &Window) -> Option<(String, hdrhistogram::Histogram<u64>)> {
    let logs: Vec<_> = run
        .histograms
        .iter()
        .filter(|x| x.window == crate::PER_SECOND)
        .collect();
    let wanted = run.meta.headline.latency.as_deref();
    let log = logs
        .iter()
        .find(|x| Some(x.name.as_str()) == wanted)
        .or(logs.first())?;
    let seconds = crate::hdr::read_interval_log(&log.data).ok()?;
    let ends: Vec<u64> = match table(run, columns::LOAD) {
        Some(load) if load.time_ns.len() == seconds.len() => load.time_ns.clone(),
        _ => seconds.iter().map(|(end, _)| *end).collect(),
    };
    let mut sum: Option<hdrhistogram::Histogram<u64>> = None;
    for ((_, h), inside) in seconds.into_iter().zip(rows_in(&ends, w)) {
        if !inside {
            continue;
        }
        match &mut sum {
            Some(s) => s.add(&h).ok()?,
            None => {
                let mut h = h;
                h.auto(true);
                sum = Some(h);
            }
        }
    }
    Some((log.name.clone(), sum.filter(|s| !s.is_empty())?))
}

/// `START-END` in seconds (each a number ≥ 0, an `s` after it optional), START < END.
fn span(name: &str) -> Option<(f64, f64)> {
    let (a, b) = name.split_once('-')?;
    let num = |x: &str| -> Option<f64> {
        let x = x.trim().strip_suffix('s').unwrap_or(x.trim());
        let v: f64 = x.parse().ok()?;
        (v.is_finite() && v >= 0.0 && x.chars().all(|c| c.is_ascii_digit() || c == '.'))
            .then_some(v)
    };
    let (a, b) = (num(a)?, num(b)?);
    (a < b).then_some((a, b))
}

/// A number of seconds as written back: `10`, `2.5`, `1.0004` (to the nanosecond the
/// window's edges are kept at, so that a window's two ends never read the same).
fn trim(v: f64) -> String {
    let t = format!("{v:.9}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Each row's interval of a series table, `(start, end)` ns: a row holds the interval
/// that ends at its time and starts at the row before, unless there is a gap (over twice
/// the table's usual step), then one step before its end. The usual step is the median
/// difference between rows other than the last (the last is the sample taken when the
/// run stopped, mostly part of a period: a 1 s run's two rows, 0.95 s and 0.08 s after
/// its start, made the first row's interval 0.08 s long and its CPU a seventh of what it
/// was), and the sampler's second when no other difference is there. The rule of the
/// report's pages too (`web/src/report/lib/intervals.ts`, `rowStart`).
pub fn intervals(time_ns: &[u64]) -> impl Iterator<Item = (u64, u64)> + '_ {
    let before_last = &time_ns[..time_ns.len().saturating_sub(1)];
    let mut d: Vec<u64> = before_last
        .windows(2)
        .map(|x| x[1].saturating_sub(x[0]))
        .collect();
    d.sort_unstable();
    let step = d.get(d.len() / 2).copied().unwrap_or(1_000_000_000).max(1);
    time_ns.iter().enumerate().map(move |(i, &end)| {
        let start = match i.checked_sub(1).map(|j| time_ns[j]) {
            Some(prev) if end.saturating_sub(prev) <= 2 * step => prev,
            _ => end.saturating_sub(step),
        };
        (start, end)
    })
}

/// Whether each row of a table (its times, `time_ns`) is one of `w`'s seconds: a row is
/// the window's when the middle of its interval ([`intervals`]) lies in it, so that each
/// second is in exactly one of two windows that meet.
pub fn rows_in<'a>(time_ns: &'a [u64], w: &'a Window) -> impl Iterator<Item = bool> + 'a {
    intervals(time_ns).map(|(start, end)| w.contains(start + (end - start) / 2))
}

/// How many of the run's seconds ([`crate::seconds::grid`]) lie in `w` (a second belongs
/// to the window its middle lies in); `None` when the run kept no per-second table. A
/// window holding none has no figure of its own.
pub fn seconds_in(run: &RunData, w: &Window) -> Option<usize> {
    let grid = crate::seconds::grid(run);
    (!grid.is_empty()).then(|| crate::seconds::range_in(&grid, w).len())
}

/// Values of column `name` of `table` for the seconds in `w` (a second belongs to the
/// window its middle lies in), with each second's length.
pub fn values(table: Option<&SeriesTable>, name: &str, w: &Window) -> Vec<(f64, f64)> {
    let Some(t) = table else {
        return Vec::new();
    };
    let Some(c) = t.column(name) else {
        return Vec::new();
    };
    intervals(&t.time_ns)
        .zip(rows_in(&t.time_ns, w))
        .zip(&c.values)
        .filter(|((_, inside), _)| *inside)
        .filter_map(|(((start, end), _), v)| Some(((*v)?, (end - start) as f64 / 1e9)))
        .collect()
}

/// Rate column `name` of `table` over `w`, each row weighted by the part of its interval
/// inside `w`: `(count, seconds)`, Σ rate × seconds inside and Σ seconds inside, over the
/// rows with a value; `None` when none overlaps. A counter's total read at the window's
/// edges, interpolated between the samples around each (the rate is constant within a
/// row): as exact as samples taken every second allow, whatever the window's edges.
pub fn overlap(table: Option<&SeriesTable>, name: &str, w: &Window) -> Option<(f64, f64)> {
    let c = table?.column(name)?;
    let mut out: Option<(f64, f64)> = None;
    for ((start, end), v) in intervals(&table?.time_ns).zip(&c.values) {
        let inside = end.min(w.end_ns).saturating_sub(start.max(w.start_ns));
        let Some(v) = v.filter(|_| inside > 0) else {
            continue;
        };
        let secs = inside as f64 / 1e9;
        let (n, s) = out.get_or_insert((0.0, 0.0));
        *n += v * secs;
        *s += secs;
    }
    out
}

/// The depth of the load's queues over `w`: the reading at the end of its first second and
/// of its last, messages, when the load watched a queue.
pub fn queue_depth(run: &RunData, w: &Window) -> Option<(f64, f64)> {
    let v = values(table(run, columns::LOAD), columns::QUEUE_DEPTH, w);
    Some((v.first()?.0, v.last()?.0))
}

/// The count of rate column `name` of the load over `w` (its rate × each second's
/// length), when the load has it.
pub fn load_count(run: &RunData, w: &Window, name: &str) -> Option<f64> {
    integral(&values(table(run, columns::LOAD), name, w))
}

/// Connections a fleet holds open at `end_ns`: connected minus dropped (the load's
/// `connected` and `dropped` rates × each second's length) over every second up to then,
/// a second counted when its middle lies before `end_ns` (reconnections are connections
/// again). The one rule for it: the run's own summary and any window's use it.
pub fn connections_held(load: Option<&SeriesTable>, end_ns: u64) -> Option<u64> {
    let upto = Window {
        name: String::new(),
        start_ns: 0,
        end_ns,
    };
    let connected = integral(&values(load, columns::CONNECTED, &upto))?;
    let open = connected - integral(&values(load, columns::DROPPED, &upto)).unwrap_or(0.0);
    Some(open.round().max(0.0) as u64)
}

/// Sum of rate × seconds: the count over the window.
fn integral(v: &[(f64, f64)]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(|(x, s)| x * s).sum())
}

fn seconds(v: &[(f64, f64)]) -> f64 {
    v.iter().map(|(_, s)| s).sum()
}

/// The run's table `name` (the local host's).
fn table<'a>(run: &'a RunData, name: &str) -> Option<&'a SeriesTable> {
    run.series.iter().find(|t| t.name == name)
}

/// The latency histogram of window `w` and what it measures: the one the run kept for the
/// window, else the merge of its seconds' histograms. One latency for every window of a
/// run: its headline's (`consumer_latency` of an AMQP load, not the confirms' the load
/// kept beside it), else the first kept that is not from the intended send time.
pub fn latency_of(run: &RunData, w: &Window) -> Option<(String, hdrhistogram::Histogram<u64>)> {
    let kept: Vec<_> = run
        .histograms
        .iter()
        .filter(|x| x.window == w.name)
        .collect();
    let named = match run.meta.headline.latency.as_deref() {
        Some(wanted) => kept.iter().find(|x| x.name == wanted),
        None => kept
            .iter()
            .find(|x| !x.name.ends_with("_intended"))
            .or(kept.first()),
    };
    named
        .and_then(|x| Some((x.name.clone(), crate::hdr::decode_histogram(&x.data)?)))
        .or_else(|| per_second_latency(run, w))
}

/// `run` as seen through window `w`: metadata whose measurement window is `w` and whose
/// headline figures cover `w` only: its seconds of the run's grid ([`crate::seconds`]).
pub fn window_view(run: &RunData, w: &Window) -> RunMeta {
    view_with(run, w)
}

/// The run seen through window `w`: [`window_view`]'s metadata, and its profiles cut to
/// the window's samples.
pub fn window_data(mut run: RunData, w: &Window) -> RunData {
    run.meta = view_with(&run, w);
    run.profiles = run
        .profiles
        .iter()
        .map(|p| p.time_slice(w.start_ns, w.end_ns))
        .collect();
    run
}

/// The unit of a load whose operations are connections held open (MQTT `conn`): its
/// figure is the connections it holds, never a rate of connections.
pub const FLEET_UNIT: &str = "conn";

/// Whether `w` is the run's measurement (the same span, whatever its name).
fn is_measurement(meta: &RunMeta, w: &Window) -> bool {
    w.start_ns == meta.measure.start_ns && w.end_ns == meta.measure.end_ns
}

/// The headline figures of window `w` of `run`, from what it keeps of every second: the
/// one rule for them. `kiln run` computes its own headline with it over the series it
/// stores, and `kiln compare RUN@WINDOW`, the findings and the report compute any window's
/// again with it, so the same seconds give the same figures everywhere. Two kinds of
/// seconds:
///
/// * the load's (`load`): whole seconds, a second the window's when its middle lies in it
///   (a second's latency histogram cannot be cut): throughput and the send rate (each
///   second's rate × its length, over their length), the operations counted (rounded),
///   latency percentiles ([`latency_of`]), the queue's depth, a fleet's connections held;
/// * the sampler's (`target`, and every other host's `target@HOST`; `machine`, `kiln`):
///   CPU and context switches over exactly the window ([`overlap`]: the totals
///   interpolated at its edges); resident memory, a level, over the seconds whose middle
///   lies in it.
///
/// What no second holds stands for the measurement only: an external load command's own
/// summary (wrk's throughput and percentiles, over its whole run, when kiln counted
/// nothing itself). The BEAM's scheduler states (from the profiles) and kiln's eBPF CPU
/// are [`window_view`]'s, on the run's grid ([`crate::seconds`]).
pub fn figures(run: &RunData, w: &Window) -> Headline {
    figures_over(run, w, None)
}

/// [`figures`], given the load's seconds as `(start, end)` ns, one per row of its table,
/// when the caller knows them exactly (`kiln run`, from its load's own seconds: the first
/// may be shorter than the others); else they are the table's [`intervals`].
pub fn figures_over(run: &RunData, w: &Window, load_seconds: Option<&[(u64, u64)]>) -> Headline {
    let meta = &run.meta;
    let mut h = Headline::default();
    load_figures(&mut h, run, w, load_seconds);
    if let Some((name, p)) = latency_of(run, w) {
        h.latency = Some(name);
        h.p50_us = Some(p.value_at_quantile(0.5) as f64);
        h.p99_us = Some(p.value_at_quantile(0.99) as f64);
        h.p999_us = Some(p.value_at_quantile(0.999) as f64);
        h.max_us = Some(p.max() as f64);
    }
    if h.throughput.is_none() && is_measurement(meta, w) {
        command_summary(&mut h, &meta.load, w);
    }
    target_figures(&mut h, run, w);
    own_figures(&mut h, run, w);
    if let (Some(cpu), Some(ops)) = (h.target_cpu_s, h.operations.filter(|&o| o > 0)) {
        h.cpu_per_op_us = Some(cpu * 1e6 / ops as f64);
        h.switches_per_op = h.context_switches.map(|s| s as f64 / ops as f64);
    }
    h
}

/// The load's figures over the window's seconds: its rates, the operations counted, the
/// queue's depth; a fleet's connections held at the window's end instead of a rate.
fn load_figures(h: &mut Headline, run: &RunData, w: &Window, load_seconds: Option<&[(u64, u64)]>) {
    let load = table(run, columns::LOAD);
    let seconds_of = |t: &SeriesTable| -> Vec<(u64, u64)> {
        match load_seconds {
            Some(s) if s.len() == t.time_ns.len() => s.to_vec(),
            _ => intervals(&t.time_ns).collect(),
        }
    };
    let load_seconds = load.map(seconds_of).unwrap_or_default();
    let values = |t: Option<&SeriesTable>, name: &str, w: &Window| -> Vec<(f64, f64)> {
        let Some(c) = t.and_then(|t| t.column(name)) else {
            return Vec::new();
        };
        load_seconds
            .iter()
            .zip(&c.values)
            .filter(|((start, end), _)| w.contains(start + (end - start) / 2))
            .filter_map(|((start, end), v)| Some(((*v)?, (end - start) as f64 / 1e9)))
            .collect()
    };
    if run.meta.load.unit == FLEET_UNIT {
        // A fleet's work is holding its connections, not opening them: no rate of
        // connections per second stands for it (an idle fleet would read "0/s").
        h.connections = connections_held(load, w.end_ns);
    } else {
        if !run.meta.load.completed.is_empty() {
            let v = values(load, &run.meta.load.completed, w);
            let secs = seconds(&v);
            if secs > 0.0 {
                h.throughput = integral(&v).map(|n| n / secs);
                // The count over the window's seconds (their rates times their lengths).
                h.operations = integral(&v).map(|n| n.round().max(0.0) as u64);
            }
        }
        let sent = values(load, columns::SENT, w);
        if seconds(&sent) > 0.0 {
            h.send_rate = integral(&sent).map(|n| n / seconds(&sent));
        }
    }
    h.queue_depth_max = values(load, columns::QUEUE_DEPTH, w)
        .iter()
        .map(|(v, _)| *v)
        .reduce(f64::max);
}

/// Throughput and latency from an external load command's own summary (wrk's, pgbench's,
/// ab's, PerfTest's: kept in the load's report as `parsed`), over its whole run.
fn command_summary(h: &mut Headline, load: &crate::LoadInfo, w: &Window) {
    let Some(p) = load.report.get("parsed").filter(|p| !p.is_null()) else {
        return;
    };
    h.throughput = p.get("requests_per_s").and_then(|v| v.as_f64());
    h.send_rate = p.get("sent_per_s").and_then(|v| v.as_f64());
    let pct = |q: f64| command_percentile(p, q);
    h.p50_us = pct(50.0);
    h.p99_us = pct(99.0);
    h.p999_us = pct(99.9);
    if h.p50_us.is_some() {
        // What it measured (a request, a transaction, a consumer's), said as its own.
        let what = p
            .get("latency")
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty());
        h.latency = Some(format!("{} {COMMAND_LATENCY}", what.unwrap_or("request")));
    }
    // No count to take: its rate over the window's length.
    h.operations = h.throughput.map(|t| (t * w.seconds()).round() as u64);
}

/// The `q` percentile (50, 99.9) of a load command's summary (the load's `parsed`
/// report), µs, where it gave that one.
pub fn command_percentile(parsed: &serde_json::Value, q: f64) -> Option<f64> {
    parsed
        .get("latency_us")?
        .as_array()?
        .iter()
        .filter_map(|x| Some((x.get(0)?.as_f64()?, x.get(1)?.as_f64()?)))
        .find(|(p, _)| (*p - q).abs() < 1e-9)
        .map(|(_, v)| v)
}

/// What the latency figures of an external command's own summary are called.
pub const COMMAND_LATENCY: &str = "(as the load command reported it)";

/// The target's CPU and context switches over exactly the window, every host's target
/// summed (a cluster's CPU per operation); its largest resident set over the window's
/// seconds (this host's).
fn target_figures(h: &mut Headline, run: &RunData, w: &Window) {
    let targets: Vec<&SeriesTable> = run
        .series
        .iter()
        .filter(|t| columns::is_table(&t.name, columns::TARGET))
        .collect();
    let total = |col: &str| -> Option<f64> {
        targets
            .iter()
            .filter_map(|t| overlap(Some(t), col, w))
            .map(|(n, _)| n)
            .reduce(|a, b| a + b)
    };
    let user = total(columns::CPU_USER).map(|x| x / 100.0);
    let system = total(columns::CPU_SYSTEM).map(|x| x / 100.0);
    h.target_user_s = user;
    h.target_system_s = system;
    h.target_cpu_s = user.zip(system).map(|(u, s)| u + s);
    h.context_switches = total(columns::VOLUNTARY)
        .zip(total(columns::INVOLUNTARY))
        .map(|(a, b)| (a + b).round().max(0.0) as u64);
    // A reading of 0 is no process read, not a process without memory.
    h.rss_max_bytes = values(table(run, columns::TARGET), columns::RSS, w)
        .iter()
        .map(|(v, _)| *v as u64)
        .filter(|&v| v > 0)
        .max();
}

/// kiln's own CPU, an external load command's and the machine's busy share, over exactly
/// the window.
fn own_figures(h: &mut Headline, run: &RunData, w: &Window) {
    let kiln = table(run, columns::KILN);
    h.kiln_cpu_s = overlap(kiln, columns::KILN_CPU, w).map(|(n, _)| n / 100.0);
    h.load_cpu_s = overlap(kiln, columns::LOAD_COMMAND_CPU, w).map(|(n, _)| n / 100.0);
    h.machine_busy_pct = overlap(table(run, columns::MACHINE), columns::BUSY, w)
        .filter(|(_, secs)| *secs > 0.0)
        .map(|(n, secs)| n / secs);
}

/// [`window_view`]: the window's figures by the one rule ([`figures`]), and what the run
/// keeps as samples or one total put on its seconds ([`own_seconds`]).
fn view_with(run: &RunData, w: &Window) -> RunMeta {
    let mut meta = run.meta.clone();
    let mut h = figures(run, w);
    own_seconds(run, w, &mut h);
    meta.headline = h;
    if let Some(note) = crate::seconds::recorded_part(&run.meta.measure, w) {
        meta.warnings.push(format!("window {}: {note}", w.name));
    }
    meta.measure = w.clone();
    // A sweep step's setting is its window's value.
    match w.name.split_once('=') {
        Some(("rate", v)) => meta.load.rate = v.parse().ok(),
        Some(("connections", v)) => meta.load.concurrency = v.parse().ok(),
        _ => {}
    }
    meta
}

/// The window's figures from what the run keeps as samples or one total, put on its
/// seconds ([`crate::seconds`]): the BEAM's scheduler states of its seconds' samples
/// (blocks by their start), and kiln's eBPF CPU given to its seconds by their share of
/// the recorded samples.
fn own_seconds(run: &RunData, w: &Window, h: &mut Headline) {
    let beam = run.meta.headline.beam.is_some();
    let bpf = run.meta.headline.kiln_bpf_cpu_s.is_some();
    if !beam && !bpf {
        return;
    }
    let grid = crate::seconds::grid(run);
    let r = crate::seconds::range_in(&grid, w);
    if beam {
        h.beam = crate::seconds::StatesBySecond::of(&run.profiles, &grid)
            .and_then(|s| s.between(r.clone()));
    }
    if bpf {
        h.kiln_bpf_cpu_s =
            crate::seconds::bpf_cpu_per_second(run, &grid).map(|v| v[r].iter().sum());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Column;

    fn series(name: &str, cols: &[(&str, &[f64])]) -> SeriesTable {
        let n = cols[0].1.len();
        SeriesTable {
            name: name.into(),
            time_ns: (1..=n as u64).map(|i| i * 1_000_000_000).collect(),
            columns: cols
                .iter()
                .map(|(c, v)| Column {
                    name: c.to_string(),
                    unit: String::new(),
                    values: v.iter().map(|x| Some(*x)).collect(),
                })
                .collect(),
        }
    }

    /// A 1 s run's table: the periodic sample 0.95 s after the run's first reading, the
    /// last one 0.08 s later, when the run stopped. The first row is the 0.95 s before it.
    #[test]
    fn a_short_last_row_is_not_the_tables_step() {
        let t = [10_953_778_365, 11_034_958_357];
        let got: Vec<(u64, u64)> = intervals(&t).collect();
        assert_eq!(got, vec![(9_953_778_365, t[0]), (t[0], t[1])]);
        // Longer tables: the last row's part of a period is not their step either.
        let t = [1_000, 2_000, 2_100].map(|x| x * 1_000_000);
        let got: Vec<(u64, u64)> = intervals(&t).collect();
        assert_eq!(got[0], (0, 1_000_000_000));
        let t = [1_000, 1_100, 1_200, 1_300, 1_320].map(|x| x * 1_000_000);
        assert_eq!(intervals(&t).next(), Some((900_000_000, 1_000_000_000)));
    }

    #[test]
    fn a_window_has_its_own_figures() {
        let mut run = RunData::default();
        run.meta.load.completed = "received".into();
        run.meta.windows = vec![
            Window {
                name: "connections=8".into(),
                start_ns: 0,
                end_ns: 3_000_000_000,
            },
            Window {
                name: "connections=48".into(),
                start_ns: 3_000_000_000,
                end_ns: 6_000_000_000,
            },
        ];
        run.series = vec![
            series(
                "load",
                &[("received", &[100.0, 100.0, 100.0, 300.0, 300.0, 300.0])],
            ),
            series(
                "target",
                &[
                    ("cpu user", &[10.0, 10.0, 10.0, 40.0, 40.0, 40.0]),
                    ("cpu system", &[0.0, 0.0, 0.0, 20.0, 20.0, 20.0]),
                    ("rss", &[1.0, 2.0, 3.0, 4.0, 9.0, 5.0]),
                ],
            ),
        ];
        let w = find_window(&run.meta, "48").unwrap();
        assert_eq!(w.name, "connections=48");
        let m = window_view(&run, &w);
        assert_eq!(m.headline.throughput, Some(300.0));
        assert!((m.headline.target_cpu_s.unwrap() - 1.8).abs() < 1e-9);
        assert_eq!(m.headline.operations, Some(900));
        assert!((m.headline.cpu_per_op_us.unwrap() - 2000.0).abs() < 1e-6);
        assert_eq!(m.headline.rss_max_bytes, Some(9));
        let first = window_view(&run, &find_window(&run.meta, "connections=8").unwrap());
        assert_eq!(first.headline.throughput, Some(100.0));
        assert!(find_window(&run.meta, "16").is_none());
    }

    /// A span of seconds from the start of the measurement is a window of its own, cut at
    /// the measurement's end; what is not a span (or an empty one) names none.
    #[test]
    fn a_span_of_seconds_is_a_window() {
        let mut run = RunData::default();
        run.meta.load.completed = "received".into();
        run.meta.measure = Window {
            name: "measure".into(),
            start_ns: 0,
            end_ns: 6_000_000_000,
        };
        run.series = vec![series(
            "load",
            &[("received", &[100.0, 100.0, 100.0, 300.0, 300.0, 300.0])],
        )];
        let w = find_window(&run.meta, "3-6").unwrap();
        assert_eq!(
            (w.name.as_str(), w.start_ns, w.end_ns),
            ("3s-6s", 3_000_000_000, 6_000_000_000)
        );
        assert_eq!(window_view(&run, &w).headline.throughput, Some(300.0));
        let w = find_window(&run.meta, "1.5s-9s").unwrap();
        assert_eq!((w.name.as_str(), w.end_ns), ("1.5s-9s", 6_000_000_000));
        assert_eq!(seconds_in(&run, &w), Some(5));
        // A span within one second: named as given, and holding no second of its own.
        let w = find_window(&run.meta, "1.0004-1.0005").unwrap();
        assert_eq!(
            (w.name.as_str(), w.start_ns, w.end_ns),
            ("1.0004s-1.0005s", 1_000_400_000, 1_000_500_000)
        );
        assert_eq!(seconds_in(&run, &w), Some(0));
        for bad in ["6-3", "3-3", "-1-2", "a-b", "1e3-2e3", "7-9", "3-"] {
            assert!(find_window(&run.meta, bad).is_none(), "{bad}");
        }
    }

    /// A counter's total over any window, by [`overlap`] over the rates a sampler stores
    /// (each row's count over its length), equals the total read at the window's edges by
    /// interpolating the counter between the samples around each — the rule `kiln run`
    /// used over its live samples — whatever the edges and the rows' uneven lengths; and a
    /// window of whole rows counts exactly those rows.
    #[test]
    fn a_rates_count_over_a_window_is_its_total_interpolated_at_the_edges() {
        // Samples 0.9 to 1.6 s apart (never a gap: under twice the usual step), the
        // counter (CPU seconds) growing unevenly.
        let gaps = [1.0, 1.2, 0.9, 1.6, 1.0, 1.0, 0.95, 1.3, 1.0];
        let grow = [0.25, 1.0, 0.0, 0.7, 0.33, 0.9, 0.05, 1.2, 0.6];
        let mut t = vec![10_000_000_000u64];
        let mut total = vec![0.0f64];
        for (g, d) in gaps.iter().zip(grow) {
            t.push(t[t.len() - 1] + (g * 1e9) as u64);
            total.push(total[total.len() - 1] + d);
        }
        let at = |x: u64| -> f64 {
            let i = t.partition_point(|&s| s <= x).clamp(1, t.len() - 1);
            let f = (x as f64 - t[i - 1] as f64) / (t[i] - t[i - 1]) as f64;
            total[i - 1] + (total[i] - total[i - 1]) * f.clamp(0.0, 1.0)
        };
        // The stored rows: one per sample after the first, % of one CPU. The first row's
        // start is one usual step (the median of the rows' gaps, 1.0 s) before its end,
        // as here.
        let rows: Vec<f64> = (1..t.len())
            .map(|i| (total[i] - total[i - 1]) / ((t[i] - t[i - 1]) as f64 / 1e9) * 100.0)
            .collect();
        let table = SeriesTable {
            name: columns::TARGET.into(),
            time_ns: t[1..].to_vec(),
            columns: vec![Column {
                name: columns::CPU_USER.into(),
                unit: "%".into(),
                values: rows.iter().map(|&v| Some(v)).collect(),
            }],
        };
        let mut edges = vec![t[0], t[3], t[t.len() - 1]];
        for k in 0..40u64 {
            edges.push(t[0] + (k * 7_777_777_777) % (t[t.len() - 1] - t[0]));
        }
        for &a in &edges {
            for &b in edges.iter().filter(|&&b| b > a) {
                let w = Window {
                    name: "w".into(),
                    start_ns: a,
                    end_ns: b,
                };
                let (count, secs) = overlap(Some(&table), columns::CPU_USER, &w).unwrap();
                let want = at(b) - at(a);
                assert!(
                    (count / 100.0 - want).abs() < 1e-9,
                    "{a}-{b}: {count} vs {want}"
                );
                assert!((secs - w.seconds()).abs() < 1e-9);
            }
        }
        // Whole rows: rows 3 and 4 exactly.
        let w = Window {
            name: "w".into(),
            start_ns: t[2],
            end_ns: t[4],
        };
        let (count, _) = overlap(Some(&table), columns::CPU_USER, &w).unwrap();
        assert!((count / 100.0 - (total[4] - total[2])).abs() < 1e-12);
        let outside = Window {
            name: "w".into(),
            start_ns: 0,
            end_ns: t[0],
        };
        assert_eq!(overlap(Some(&table), columns::CPU_USER, &outside), None);
    }

    /// The per-second data of the page's own unit test (web/tests/report.test.ts): seconds
    /// ending 3 ms after each whole second; a second is a window's when its middle lies in
    /// it, so both sides count the same seconds for the same window.
    #[test]
    fn a_second_is_the_window_its_middle_lies_in() {
        let rates = [74.0e3, 70.6e3, 86.6e3, 82.0e3, 81.6e3];
        let mut load = series("load", &[("received", &rates)]);
        for t in &mut load.time_ns {
            *t += 3_000_000;
        }
        let mut run = RunData::default();
        run.meta.load.completed = "received".into();
        run.series = vec![load];
        let at = |start_ns: u64, end_ns: u64| {
            let w = Window {
                name: "w".into(),
                start_ns,
                end_ns,
            };
            window_view(&run, &w).headline.throughput.unwrap()
        };
        let s = 1_000_000_000;
        assert!((at(s, 2 * s) - 70.6e3).abs() < 1e-6);
        assert!((at(s, 3 * s) - 78.6e3).abs() < 1e-6);
        assert!((at(0, 6 * s) - rates.iter().sum::<f64>() / 5.0).abs() < 1e-6);
        // A second straddling an edge: on the side holding its middle, never on both.
        assert!((at(0, 2_400_000_000) - (74.0e3 + 70.6e3) / 2.0).abs() < 1e-6);
        assert!((at(2_400_000_000, 6 * s) - (86.6e3 + 82.0e3 + 81.6e3) / 3.0).abs() < 1e-6);
    }
}
