//! What a run's metadata may hold: the one check of stored numbers, used when a run is
//! saved (an impossible figure is not kept, and the run says so) and when it is read (a run
//! whose metadata does not parse or holds an impossible value is *damaged*: listed as such,
//! skipped by every command that does not name it, an error for those that do).
use crate::model::{Headline, RunMeta};

/// The most operations (or connections) per second kiln takes as measured: past it a
/// rate is not physical (a damaged or hand-edited store).
const MAX_RATE: f64 = 1e12;
/// The largest count kept: 2^53, past which a count is no longer exact as a number.
const MAX_COUNT: f64 = 9_007_199_254_740_992.0;
/// The longest latency, µs: a year.
const MAX_LATENCY_US: f64 = 365.0 * 86_400.0 * 1e6;
/// The most CPU seconds a window can hold: a year of 4,096 CPUs.
const MAX_CPU_S: f64 = 365.0 * 86_400.0 * 4096.0;
/// The most CPU time (µs) or context switches one operation can take.
const MAX_PER_OP: f64 = 1e12;

/// What one figure may be.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Rate,
    Count,
    Latency,
    CpuSeconds,
    PerOp,
    Percent,
}

impl Kind {
    fn max(self) -> f64 {
        match self {
            Kind::Rate => MAX_RATE,
            Kind::Count => MAX_COUNT,
            Kind::Latency => MAX_LATENCY_US,
            Kind::CpuSeconds => MAX_CPU_S,
            Kind::PerOp => MAX_PER_OP,
            Kind::Percent => 100.0,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Kind::Rate => "a rate",
            Kind::Count => "a count",
            Kind::Latency => "a latency",
            Kind::CpuSeconds => "a CPU time",
            Kind::PerOp => "a cost per operation",
            Kind::Percent => "a share of the CPUs",
        }
    }
}

/// A figure of a run, wherever it is kept.
enum Slot<'a> {
    Float(&'a mut Option<f64>),
    Count(&'a mut Option<u64>),
}

/// Every figure of a headline and a load's settings, by its path in the metadata.
fn figures<'a>(
    h: &'a mut Headline,
    rate: &'a mut Option<f64>,
    concurrency: &'a mut Option<f64>,
) -> [(&'static str, Kind, Slot<'a>); 22] {
    use Kind::*;
    use Slot::{Count as C, Float as F};
    [
        ("headline.throughput", Rate, F(&mut h.throughput)),
        ("headline.send_rate", Rate, F(&mut h.send_rate)),
        ("headline.operations", Count, C(&mut h.operations)),
        ("headline.connections", Count, C(&mut h.connections)),
        ("headline.p50_us", Latency, F(&mut h.p50_us)),
        ("headline.p99_us", Latency, F(&mut h.p99_us)),
        ("headline.p999_us", Latency, F(&mut h.p999_us)),
        ("headline.max_us", Latency, F(&mut h.max_us)),
        ("headline.target_cpu_s", CpuSeconds, F(&mut h.target_cpu_s)),
        (
            "headline.target_user_s",
            CpuSeconds,
            F(&mut h.target_user_s),
        ),
        (
            "headline.target_system_s",
            CpuSeconds,
            F(&mut h.target_system_s),
        ),
        ("headline.cpu_per_op_us", PerOp, F(&mut h.cpu_per_op_us)),
        ("headline.rss_max_bytes", Count, C(&mut h.rss_max_bytes)),
        (
            "headline.context_switches",
            Count,
            C(&mut h.context_switches),
        ),
        ("headline.switches_per_op", PerOp, F(&mut h.switches_per_op)),
        ("headline.kiln_cpu_s", CpuSeconds, F(&mut h.kiln_cpu_s)),
        (
            "headline.kiln_bpf_cpu_s",
            CpuSeconds,
            F(&mut h.kiln_bpf_cpu_s),
        ),
        ("headline.load_cpu_s", CpuSeconds, F(&mut h.load_cpu_s)),
        (
            "headline.machine_busy_pct",
            Percent,
            F(&mut h.machine_busy_pct),
        ),
        ("headline.queue_depth_max", Count, F(&mut h.queue_depth_max)),
        ("load.rate", Rate, F(rate)),
        ("load.concurrency", Count, F(concurrency)),
    ]
}

/// A number as a message shows it: short, whatever its size (`-1e300`, not 301 digits).
fn shown(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else if v != 0.0 && !(1e-3..1e9).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// Why `v` cannot be a figure of `kind`; `None` when it can.
fn impossible(v: f64, kind: Kind) -> Option<String> {
    let why = if !v.is_finite() {
        "not a number".to_string()
    } else if v < 0.0 {
        format!("{} cannot be negative", kind.noun())
    } else if v > kind.max() {
        format!(
            "{} past what is physical (at most {})",
            kind.noun(),
            shown(kind.max())
        )
    } else {
        return None;
    };
    Some(format!("is {}: {why}", shown(v)))
}

/// What is wrong with a run's metadata, each naming its field
/// (`headline.throughput is -1e300: a rate cannot be negative`); empty when nothing is.
/// The one check of stored numbers: every figure finite, not negative and within what is
/// physical (rates up to 10^12 a second, latencies up to a year, counts up to 2^53,
/// shares of the CPUs up to 100 %), and windows that end after they start.
pub fn check_meta(m: &RunMeta) -> Vec<String> {
    let mut h = m.headline.clone();
    let (mut rate, mut concurrency) = (m.load.rate, m.load.concurrency);
    let mut out = Vec::new();
    for (field, kind, slot) in figures(&mut h, &mut rate, &mut concurrency) {
        let v = match slot {
            Slot::Float(v) => *v,
            Slot::Count(v) => v.map(|n| n as f64),
        };
        if let Some(why) = v.and_then(|v| impossible(v, kind)) {
            out.push(format!("{field} {why}"));
        }
    }
    out.extend(impossible_beam(&m.headline));
    let windows = std::iter::once(("measure".to_string(), &m.measure)).chain(
        m.windows
            .iter()
            .enumerate()
            .map(|(i, w)| (format!("windows[{i}]"), w)),
    );
    for (field, w) in windows {
        if w.end_ns < w.start_ns {
            out.push(format!(
                "{field} ends ({} ns) before it starts ({} ns)",
                w.end_ns, w.start_ns
            ));
        }
    }
    for (i, host) in m.hosts.iter().enumerate() {
        if let Some(d) = host.clock.as_ref().and_then(|c| c.drift_ppm) {
            if !d.is_finite() {
                out.push(format!(
                    "hosts[{i}].clock.drift_ppm is {}: not a number",
                    shown(d)
                ));
            }
        }
    }
    out
}

/// What is impossible in the BEAM schedulers' shares (each a percentage), if anything.
fn impossible_beam(h: &Headline) -> Option<String> {
    let b = h.beam.as_ref()?;
    let shares = [
        ("emulator_pct", b.emulator_pct),
        ("port_pct", b.port_pct),
        ("gc_pct", b.gc_pct),
        ("check_io_pct", b.check_io_pct),
        ("aux_pct", b.aux_pct),
        ("other_pct", b.other_pct),
        ("sleep_pct", b.sleep_pct),
        ("runnable_pct", b.runnable_pct.unwrap_or(0.0)),
    ];
    shares.iter().find_map(|&(name, v)| {
        (!(0.0..=100.0).contains(&v)).then(|| {
            format!(
                "headline.beam.{name} is {}: a share must be from 0 to 100%",
                shown(v)
            )
        })
    })
}

/// Removes the impossible figures of a run about to be saved (a NaN would be stored as
/// nothing without a word, a −1e300 printed and judged): each is left out, and the run's
/// warnings say which and why. Returns how many were left out.
pub(crate) fn clear_impossible(m: &mut RunMeta) -> usize {
    let mut notes = Vec::new();
    let (h, load) = (&mut m.headline, &mut m.load);
    for (field, kind, slot) in figures(h, &mut load.rate, &mut load.concurrency) {
        let why = match &slot {
            Slot::Float(v) => v.and_then(|v| impossible(v, kind)),
            Slot::Count(v) => v.and_then(|n| impossible(n as f64, kind)),
        };
        let Some(why) = why else { continue };
        match slot {
            Slot::Float(v) => *v = None,
            Slot::Count(v) => *v = None,
        }
        notes.push(format!(
            "{field} {why}; it was not kept (a fault in the measurement)"
        ));
    }
    if let Some(why) = impossible_beam(&m.headline) {
        m.headline.beam = None;
        notes.push(format!("{why}; the shares were not kept"));
    }
    let n = notes.len();
    m.warnings.extend(notes);
    n
}

/// Where in `json` the byte `at` lies, as the path of keys and indices that lead there
/// (`headline.throughput`, `hosts[0].clock`): what a parse error at that place names.
/// A scan of the text before it (strings and escapes skipped), so it works on metadata
/// that does not parse.
pub(crate) fn path_at(json: &str, at: usize) -> String {
    enum Level {
        Object(Option<String>),
        Array(usize),
    }
    let bytes = &json.as_bytes()[..at.min(json.len())];
    let mut stack: Vec<Level> = Vec::new();
    let mut last_string: Option<String> = None;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                let end = i.min(bytes.len());
                last_string = Some(String::from_utf8_lossy(&bytes[start..end]).into_owned());
            }
            b':' => {
                if let Some(Level::Object(key)) = stack.last_mut() {
                    *key = last_string.take();
                }
            }
            b',' => match stack.last_mut() {
                Some(Level::Array(n)) => *n += 1,
                Some(Level::Object(key)) => *key = None,
                None => {}
            },
            b'{' => stack.push(Level::Object(None)),
            b'[' => stack.push(Level::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            _ => {}
        }
        i += 1;
    }
    let mut out = String::new();
    for level in &stack {
        match level {
            Level::Object(Some(k)) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&kiln_model::text::clean_cut(k, 40));
            }
            Level::Object(None) => {}
            Level::Array(n) => out.push_str(&format!("[{n}]")),
        }
    }
    out
}

/// The byte offset of a 1-based line and column (serde_json's error position) in `text`.
pub(crate) fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (start + column.saturating_sub(1)).min(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_the_field_of_a_parse_error() {
        let j = r#"{"name":"a","headline":{"throughput":NaN"#;
        assert_eq!(path_at(j, j.len()), "headline.throughput");
        let j = r#"{"hosts":[{"a":1},{"clock":{"drift_ppm":1e999"#;
        assert_eq!(path_at(j, j.len()), "hosts[1].clock.drift_ppm");
        let j = r#"{"name":"x:\"{[","status":"#;
        assert_eq!(path_at(j, j.len()), "status");
        assert_eq!(offset_of("ab\ncd", 2, 2), 4);
    }

    /// The BEAM schedulers' shares and the queue's depth are figures like the others.
    #[test]
    fn scheduler_shares_and_queue_depth_are_checked() {
        let mut m = RunMeta::default();
        m.headline.queue_depth_max = Some(-5.0);
        m.headline.beam = Some(crate::model::SchedulerStates {
            other_pct: 250.0,
            ..Default::default()
        });
        let p = check_meta(&m);
        assert!(
            p.iter()
                .any(|x| x.starts_with("headline.queue_depth_max is -5")),
            "{p:?}"
        );
        assert!(
            p.iter()
                .any(|x| x.starts_with("headline.beam.other_pct is 250")),
            "{p:?}"
        );
        assert_eq!(clear_impossible(&mut m), 2);
        assert!(m.headline.beam.is_none() && m.headline.queue_depth_max.is_none());
        assert!(check_meta(&m).is_empty());
    }

    #[test]
    fn impossible_figures_are_named_and_cleared() {
        let mut m = RunMeta::default();
        m.headline.throughput = Some(-1e300);
        m.headline.p99_us = Some(f64::NAN);
        m.headline.p50_us = Some(120.0);
        m.headline.operations = Some(u64::MAX);
        m.headline.machine_busy_pct = Some(100.0);
        m.load.rate = Some(2e12);
        let p = check_meta(&m);
        assert_eq!(p.len(), 4, "{p:?}");
        assert!(p[0].starts_with("headline.throughput is -1e300: a rate cannot be negative"));
        assert!(p.iter().any(|x| x.starts_with("headline.p99_us is NaN")));
        assert!(p
            .iter()
            .any(|x| x.contains("load.rate is 2e12: a rate past")));
        assert_eq!(clear_impossible(&mut m), 4);
        assert!(check_meta(&m).is_empty());
        assert_eq!(m.headline.p50_us, Some(120.0));
        assert_eq!(m.headline.throughput, None);
        assert_eq!(m.warnings.len(), 4);
    }
}
