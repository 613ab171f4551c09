//! A run's results and their outputs: JSON (everything), CSV (the series), text lines.
//!
//! One writer per format for every protocol, chosen by the protocol's [`Schema`]: the
//! counters, latencies and flags it declared are the columns, in its order.
use super::stats::{
    per_second, Count, CounterId, Event, FlagId, Latency, LatencyId, Percentiles, Schema, Tick,
};
use crate::Error;
use hdrhistogram::Histogram;
use kiln_os::io::AtomicFile;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

/// The primary throughput of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Throughput {
    /// The counter it is the rate of (`sent`, `requests`).
    pub counter: String,
    /// `msg/s`, `req/s`, `conn/s`.
    pub unit: String,
    /// Average over the run.
    pub value: f64,
}

/// A run's results in a shape every protocol shares: what `kiln run` stores and compares.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadHeadline {
    /// `amqp`, `mqtt`, `http`.
    pub protocol: String,
    /// The run's label.
    pub id: String,
    /// The primary throughput.
    pub throughput: Throughput,
    /// Seconds from the start of the load to its end.
    pub duration_s: f64,
    /// `CLOCK_MONOTONIC` ns when the load started (time 0 of the series).
    pub start_mono_ns: u64,
    /// `CLOCK_MONOTONIC` ns when the load ended.
    pub end_mono_ns: u64,
    /// Wall-clock ns since the Unix epoch when the load started.
    pub start_unix_ns: u64,
    /// Totals by counter.
    pub totals: Vec<Count>,
    /// Whole-run latency percentiles by name (µs).
    pub latencies: Vec<Latency>,
    /// Seconds in which each flag held.
    pub flag_seconds: Vec<Count>,
    /// The fault that ended the run early, if any.
    pub failure: Option<String>,
    /// The caller's stop (Ctrl-C, `kiln run`'s window end) ended the run.
    pub interrupted: bool,
}

impl LoadHeadline {
    /// The total of counter `name` (0 if there is none).
    pub fn total(&self, name: &str) -> u64 {
        self.totals
            .iter()
            .find(|c| c.name == name)
            .map_or(0, |c| c.value)
    }

    /// Average rate of counter `name` over the run, per second.
    pub fn rate(&self, name: &str) -> f64 {
        per_second(self.total(name), self.duration_s.max(1e-9))
    }

    /// Whole-run percentiles of latency `name`.
    pub fn latency(&self, name: &str) -> Option<&Percentiles> {
        self.latencies
            .iter()
            .find(|l| l.name == name)
            .and_then(|l| l.percentiles.as_ref())
    }

    /// Totals by counter name, as an object in JSON (`jq .totals.sent`) beside the list.
    pub fn named_totals(&self) -> std::collections::BTreeMap<&str, u64> {
        self.totals.iter().map(|c| (&*c.name, c.value)).collect()
    }

    /// The total of `counter` (0 if there is none).
    pub fn total_of(&self, counter: CounterId) -> u64 {
        counter
            .find(&self.totals, |c| &c.name)
            .map_or(0, |c| c.value)
    }

    /// Average rate of `counter` over the run, per second.
    pub fn rate_of(&self, counter: CounterId) -> f64 {
        per_second(self.total_of(counter), self.duration_s.max(1e-9))
    }

    /// Whole-run percentiles of `latency`.
    pub fn latency_of(&self, latency: LatencyId) -> Option<&Percentiles> {
        latency
            .find(&self.latencies, |l| &l.name)
            .and_then(|l| l.percentiles.as_ref())
    }

    /// Seconds in which `flag` held.
    pub(crate) fn flag_seconds_of(&self, flag: FlagId) -> u64 {
        flag.find(&self.flag_seconds, |c| &c.name)
            .map_or(0, |c| c.value)
    }
}

/// A whole-run latency histogram, serialised in HdrHistogram's V2 deflate format (any
/// HdrHistogram library reads it; histograms of runs merge exactly). Base64 in JSON.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HistogramBlob {
    /// The latency's name.
    pub name: String,
    /// The unit of its values (`µs`).
    pub unit: String,
    /// The V2 deflate bytes.
    #[serde(with = "b64")]
    pub v2_deflate: Vec<u8>,
}

impl HistogramBlob {
    /// Serialises `h` (`None` if HdrHistogram refuses).
    pub fn encode(name: &str, h: &Histogram<u64>) -> Option<Self> {
        Some(HistogramBlob {
            name: name.to_string(),
            unit: "µs".into(),
            v2_deflate: kiln_hdr::encode_histogram(h).ok()?,
        })
    }

    /// Reads the histogram back.
    pub fn decode(&self) -> Result<Histogram<u64>, String> {
        kiln_hdr::try_decode_histogram(&self.v2_deflate)
            .map_err(|e| format!("histogram {}: {e}", self.name))
    }
}

mod b64 {
    use base64::Engine as _;
    pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(v))
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s: String = serde::Deserialize::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(serde::de::Error::custom)
    }
}

/// One step of a sweep (`--rate-sweep`, `--concurrency-sweep`) and its window.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Step {
    /// What the sweep varies (`rate`, `connections`).
    pub param: String,
    /// Its value in this step.
    pub value: f64,
    /// `CLOCK_MONOTONIC` ns when the step's load started.
    pub start_mono_ns: u64,
    /// `CLOCK_MONOTONIC` ns when it ended.
    pub end_mono_ns: u64,
    /// The step's own results.
    pub headline: LoadHeadline,
}

/// Everything a run produced.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Report {
    /// Format version of this document (1: fields are only ever added).
    pub version: u32,
    /// `amqp`, `mqtt`, `http`.
    pub protocol: String,
    /// The protocol's options as run (no passwords).
    pub options: serde_json::Value,
    /// The protocol's own summary (for AMQP PerfTest's totals and rates).
    pub summary: serde_json::Value,
    /// The same results in every protocol's shape.
    pub headline: LoadHeadline,
    /// One entry per second (in a sweep, each step's seconds in turn).
    pub series: Vec<Tick>,
    /// Flow-control, connection and refusal events.
    pub events: Vec<Event>,
    /// The steps of a sweep (empty for a single run).
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Whole-run latency histograms, mergeable.
    #[serde(default)]
    pub histograms: Vec<HistogramBlob>,
}

impl Report {
    /// Shortcut for `self.headline.total(name)`.
    pub fn total(&self, name: &str) -> u64 {
        self.headline.total(name)
    }
}

fn out_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Output {
        path: path.display().to_string(),
        source,
    }
}

/// Writes a file through [`AtomicFile`] (temporary file, renamed when complete).
pub fn write_file(
    path: &Path,
    f: impl FnOnce(&mut AtomicFile) -> std::io::Result<()>,
) -> Result<(), Error> {
    let mut file = AtomicFile::create(path).map_err(out_err(path))?;
    f(&mut file).map_err(out_err(path))?;
    file.commit().map_err(out_err(path))
}

/// Writes `value` as pretty JSON, atomically.
pub(crate) fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), Error> {
    write_file(path, |f| {
        serde_json::to_writer_pretty(&mut *f, value).map_err(std::io::Error::other)?;
        f.write_all(b"\n")
    })
}

/// A report as `-o PREFIX` writes it: every field of [`Report`], and beside them the
/// headline's lists as objects keyed by name (`jq .totals.sent`, `jq
/// '.latencies.consumer_latency.p99_us'`), which read the same as the lists.
#[derive(serde::Serialize)]
struct ReportFile<'a> {
    #[serde(flatten)]
    report: &'a Report,
    /// Totals by counter.
    totals: std::collections::BTreeMap<&'a str, u64>,
    /// Whole-run latency percentiles by name (absent when nothing was measured).
    latencies: std::collections::BTreeMap<&'a str, &'a Percentiles>,
    /// Seconds in which each flag held.
    flag_seconds: std::collections::BTreeMap<&'a str, u64>,
}

/// Writes a run's report as pretty JSON, atomically (see `ReportFile`).
pub fn write_report_json(path: &Path, report: &Report) -> Result<(), Error> {
    let h = &report.headline;
    write_json(
        path,
        &ReportFile {
            report,
            totals: h.named_totals(),
            latencies: h
                .latencies
                .iter()
                .filter_map(|l| Some((&*l.name, l.percentiles.as_ref()?)))
                .collect(),
            flag_seconds: h.flag_seconds.iter().map(|c| (&*c.name, c.value)).collect(),
        },
    )
}

fn pcols(p: Option<&Percentiles>) -> String {
    match p {
        Some(p) => format!(
            "{},{},{},{},{},{},{}",
            p.min_us, p.p50_us, p.p75_us, p.p95_us, p.p99_us, p.p999_us, p.max_us
        ),
        None => ",,,,,,".into(),
    }
}

/// CSV column names of a latency: `{prefix}_min_us,{prefix}_p50_us,…`.
pub fn pheader(prefix: &str) -> String {
    ["min", "p50", "p75", "p95", "p99", "p999", "max"]
        .iter()
        .map(|q| format!("{prefix}_{q}_us"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Writes the series as CSV, atomically: `time_s,interval_s`, the counters, each latency's
/// percentiles in µs (empty when none), the flags (0/1), the levels (empty when not
/// observed), then `end_mono_ns` (and `step` in a sweep).
pub fn write_csv(path: &Path, schema: &Schema, series: &[Tick]) -> Result<(), Error> {
    let sweep = series.iter().any(|t| t.step.is_some());
    write_file(path, |f| {
        let mut h = String::from("time_s,interval_s");
        for c in schema.counters {
            let _ = write!(h, ",{}", c.name);
        }
        for l in schema.latencies {
            let _ = write!(h, ",{}", pheader(l.csv));
        }
        for fl in schema.flags {
            let _ = write!(h, ",{}", fl.name);
        }
        for lv in schema.levels {
            let _ = write!(h, ",{}", lv.name);
        }
        h.push_str(",end_mono_ns");
        if sweep {
            h.push_str(",step");
        }
        writeln!(f, "{h}")?;
        for t in series {
            let mut row = format!("{},{}", t.time_s, t.interval_s);
            for c in schema.counters {
                let _ = write!(row, ",{}", t.counter(c.name));
            }
            for l in schema.latencies {
                let _ = write!(row, ",{}", pcols(t.latency(l.name)));
            }
            for fl in schema.flags {
                let _ = write!(row, ",{}", t.flag(fl.name) as u8);
            }
            for lv in schema.levels {
                let v = t.level(lv.name).map_or(String::new(), |v| v.to_string());
                let _ = write!(row, ",{v}");
            }
            let _ = write!(row, ",{}", t.end_mono_ns);
            if sweep {
                let _ = write!(row, ",{}", t.step.map_or(String::new(), |s| s.to_string()));
            }
            writeln!(f, "{row}")?;
        }
        Ok(())
    })
}

/// `min/p50/p75/p95/p99/p99.9/max µs`, or `-`.
pub fn lat(p: Option<&Percentiles>) -> String {
    match p {
        Some(p) => format!(
            "{}/{}/{}/{}/{}/{}/{} µs",
            p.min_us, p.p50_us, p.p75_us, p.p95_us, p.p99_us, p.p999_us, p.max_us
        ),
        None => "-".into(),
    }
}

/// One line per second, PerfTest's shape for every protocol:
/// `id: test-1, time 1.000 s, sent: 5000 msg/s, received: 5000 msg/s, min/median/75th/95th/
/// 99th/99.9th/max consumer latency: 1/2/…/9 µs [BLOCKED]`.
pub fn format_tick(schema: &Schema, id: &str, t: &Tick) -> String {
    use super::stats::Show;
    let mut s = format!("id: {id}, time {:.3} s", t.time_s);
    for c in schema.counters {
        let v = t.counter(c.name);
        let show = match c.show {
            Show::Always => true,
            Show::NonZero => v > 0,
            Show::NonZeroOrLatency(i) => {
                v > 0
                    || schema
                        .latencies
                        .get(i.index())
                        .is_some_and(|l| t.latency(l.name).is_some())
            }
            Show::Never => false,
        };
        if show {
            let _ = write!(s, ", {}: {:.0} {}/s", c.name, t.rate(c.name), c.unit);
        }
    }
    for l in schema.latencies.iter().filter(|l| !l.line_label.is_empty()) {
        if let Some(p) = t.latency(l.name) {
            let _ = write!(s, ", {}: {}", l.line_label, lat(Some(p)));
        }
    }
    for lv in schema.levels {
        if let Some(v) = t.level(lv.name) {
            let _ = write!(s, ", {}: {v:.0} {}", lv.name.replace('_', " "), lv.unit);
        }
    }
    for f in schema.flags {
        if t.flag(f.name) {
            let _ = write!(s, " [{}]", f.marker);
        }
    }
    s
}

/// The summary lines every protocol shares: totals, average rates, latencies, the end.
/// A protocol adds its own lines (AMQP: flow control) between latencies and the end.
pub fn format_summary(schema: &Schema, h: &LoadHeadline, extra: &[String]) -> String {
    let id = &h.id;
    let mut o = String::new();
    let totals: Vec<String> = schema
        .counters
        .iter()
        .filter(|c| !matches!(c.show, super::stats::Show::Never))
        .map(|c| format!("{}: {}", c.name, h.total(c.name)))
        .collect();
    let _ = writeln!(
        o,
        "id: {id}, duration: {:.3} s, {}",
        h.duration_s,
        totals.join(", ")
    );
    for c in schema.counters {
        if let Some(label) = c.rate_label {
            let always = matches!(c.show, super::stats::Show::Always);
            if always || h.total(c.name) > 0 {
                let _ = writeln!(
                    o,
                    "id: {id}, {label} avg: {:.0} {}/s",
                    h.rate(c.name),
                    c.unit
                );
            }
        }
    }
    for l in schema.latencies {
        if let Some(p) = h.latency(l.name) {
            let _ = writeln!(
                o,
                "id: {id}, {} min/median/75th/95th/99th/99.9th/max {}",
                l.summary_label,
                lat(Some(p))
            );
        }
    }
    for e in extra {
        let _ = writeln!(o, "id: {id}, {e}");
    }
    if h.interrupted {
        let _ = writeln!(o, "id: {id}, interrupted: results up to the interruption");
    }
    if let Some(f) = &h.failure {
        let _ = writeln!(o, "id: {id}, ended early: {f}");
    }
    o
}

/// The steps of a sweep as aligned text: value, throughput, primary latency percentiles.
pub fn format_steps(r: &Report) -> String {
    let mut o = String::new();
    let Some(first) = r.steps.first() else {
        return o;
    };
    let lname = first
        .headline
        .latencies
        .iter()
        .rev()
        .find(|l| l.percentiles.is_some())
        .map(|l| l.name.clone())
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "{:>12} {:>14} {:>10} {:>10} {:>10} {:>10}  ({lname})",
        first.param, first.headline.throughput.unit, "p50 µs", "p99 µs", "p99.9 µs", "max µs"
    );
    for s in &r.steps {
        let p = s.headline.latency(&lname);
        let f = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        let _ = writeln!(
            o,
            "{:>12.0} {:>14.0} {:>10} {:>10} {:>10} {:>10}{}",
            s.value,
            s.headline.throughput.value,
            f(p.map(|p| p.p50_us)),
            f(p.map(|p| p.p99_us)),
            f(p.map(|p| p.p999_us)),
            f(p.map(|p| p.max_us)),
            s.headline
                .failure
                .as_ref()
                .map(|f| format!("  ended early: {f}"))
                .unwrap_or_default()
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A headline read through handles finds each value at its position when the list is
    /// in the schema's order, by name when it is not (a headline read back from a file
    /// whose lists another version wrote in another order), and nothing when it is absent.
    #[test]
    fn handles_read_a_headline_in_any_order() {
        let load = crate::amqp::AmqpLoad {
            opts: Default::default(),
            sweep: None,
        };
        let schema = crate::Load::schema(&load);
        let (sent, received) = (
            schema.counter("sent").unwrap(),
            schema.counter("received").unwrap(),
        );
        let count = |name: &'static str, value| Count {
            name: name.into(),
            unit: "msg".into(),
            value,
        };
        let mut h = LoadHeadline {
            protocol: "amqp".into(),
            id: "x".into(),
            throughput: Throughput {
                counter: "sent".into(),
                unit: "msg/s".into(),
                value: 0.0,
            },
            duration_s: 2.0,
            start_mono_ns: 0,
            end_mono_ns: 0,
            start_unix_ns: 0,
            totals: Vec::new(),
            latencies: Vec::new(),
            flag_seconds: Vec::new(),
            failure: None,
            interrupted: false,
        };
        h.totals = schema.counts(&vec![7; schema.counters.len()]);
        h.totals[received.index()].value = 40;
        assert_eq!((h.total_of(sent), h.total_of(received)), (7, 40));
        assert_eq!(h.rate_of(received), 20.0);
        h.totals = vec![count("received", 40), count("sent", 7)];
        assert_eq!((h.total_of(sent), h.total_of(received)), (7, 40));
        h.totals.retain(|c| c.name != "sent");
        assert_eq!(h.total_of(sent), 0);
        let latency = schema.latency("consumer_latency").unwrap();
        assert_eq!(h.latency_of(latency), None);
    }
}
