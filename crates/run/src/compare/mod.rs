//! `kiln compare`: runs, or groups of repeated runs, side by side — is the change beyond
//! noise?
//!
//! For each headline figure: the median of each group, its spread (min–max), the change
//! of each group against the first, and, when both groups have repeats, a two-sided
//! Mann-Whitney U test (exact for small groups): a rank test that assumes no distribution
//! shape, which fits latencies and rates measured a handful of times (hyperfine reports
//! Welch's t-test for the same purpose; critcmp a confidence band). Without repeats the
//! change is shown and the table says that noise cannot be told from it.
use kiln_store::{Headline, RunMeta};
use serde::Serialize;
use std::fmt::Write as _;

/// Which way is better for a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// More is better (throughput).
    Higher,
    /// Less is better (latency, CPU per operation).
    Lower,
}

/// A figure `kiln compare` reports.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// Key used by `--fail-if` and JSON (`p99`, `cpu_per_op`).
    pub key: &'static str,
    /// Other keys `--fail-if` accepts for it.
    pub aliases: &'static [&'static str],
    /// Label in tables.
    pub label: &'static str,
    /// Unit shown.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// Its value in a run.
    pub get: fn(&RunMeta) -> Option<f64>,
}

fn hl(m: &RunMeta) -> &Headline {
    &m.headline
}

/// Every figure compared, in table order.
pub const METRICS: &[Metric] = &[
    Metric {
        key: "throughput",
        aliases: &["rate", "qps", "recv_rate"],
        label: "throughput",
        unit: "/s",
        better: Better::Higher,
        get: |m| hl(m).throughput,
    },
    Metric {
        key: "send_rate",
        aliases: &[],
        label: "send rate",
        unit: "/s",
        better: Better::Higher,
        get: |m| hl(m).send_rate,
    },
    Metric {
        key: "p50",
        aliases: &["median"],
        label: "latency p50",
        unit: "us",
        better: Better::Lower,
        get: |m| hl(m).p50_us,
    },
    Metric {
        key: "p99",
        aliases: &[],
        label: "latency p99",
        unit: "us",
        better: Better::Lower,
        get: |m| hl(m).p99_us,
    },
    Metric {
        key: "p999",
        aliases: &["p99.9"],
        label: "latency p99.9",
        unit: "us",
        better: Better::Lower,
        get: |m| hl(m).p999_us,
    },
    Metric {
        key: "max",
        aliases: &["max_latency"],
        label: "latency max",
        unit: "us",
        better: Better::Lower,
        get: |m| hl(m).max_us,
    },
    Metric {
        key: "cpu_per_op",
        aliases: &[
            "cpu_per_msg",
            "cpu_per_req",
            "cpu_per_request",
            "cpu_per_message",
        ],
        label: "target CPU per op",
        unit: "us",
        better: Better::Lower,
        get: |m| hl(m).cpu_per_op_us,
    },
    Metric {
        key: "target_cpu",
        aliases: &["cpu"],
        label: "target CPU",
        unit: "%",
        better: Better::Lower,
        get: |m| {
            let s = m.measure.seconds();
            hl(m)
                .target_cpu_s
                .filter(|_| s > 0.0)
                .map(|c| c / s * 100.0)
        },
    },
    Metric {
        key: "rss",
        aliases: &["memory"],
        label: "target RSS max",
        unit: "bytes",
        better: Better::Lower,
        get: |m| hl(m).rss_max_bytes.map(|b| b as f64),
    },
    Metric {
        key: "switches_per_op",
        aliases: &["ctx_per_msg", "ctx_per_req", "switches_per_msg"],
        label: "context switches per op",
        unit: "",
        better: Better::Lower,
        get: |m| hl(m).switches_per_op,
    },
    Metric {
        key: "kiln_cpu",
        aliases: &[],
        label: "kiln CPU",
        unit: "%",
        better: Better::Lower,
        get: |m| {
            let s = m.measure.seconds();
            hl(m).kiln_cpu_s.filter(|_| s > 0.0).map(|c| c / s * 100.0)
        },
    },
];

/// One group's values of a figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stat {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Every value, one per run.
    pub values: Vec<f64>,
}

impl Stat {
    fn of(mut values: Vec<f64>) -> Option<Stat> {
        values.retain(|v| v.is_finite());
        if values.is_empty() {
            return None;
        }
        let mut s = values.clone();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Some(Stat {
            median,
            min: s[0],
            max: s[n - 1],
            values,
        })
    }
}

/// How sure a comparison must be before it calls a change real.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CompareOptions {
    /// Largest p-value called significant. Default: 0.05.
    pub alpha: f64,
    /// Smallest change of the median, in percent, called a change at all (critcmp's
    /// threshold): on a shared machine identical configurations differ by a few percent
    /// run to run in ways a handful of repeats cannot average out. Default: 5.
    pub threshold_pct: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            alpha: 0.05,
            threshold_pct: 5.0,
        }
    }
}

/// Whether a change is beyond noise.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// One of the groups has a single run: noise cannot be told from change.
    NoRepeats,
    /// The groups differ (p below alpha) by at least the threshold.
    Significant {
        /// Mann-Whitney p-value.
        p: f64,
    },
    /// The groups differ (p below alpha), but by less than the threshold.
    Small {
        /// Mann-Whitney p-value.
        p: f64,
    },
    /// No evidence of a difference.
    NotSignificant {
        /// Mann-Whitney p-value.
        p: f64,
        /// The smallest p-value these group sizes can reach; ≥ 0.05 means more repeats
        /// are needed to ever see a difference.
        smallest_possible: f64,
    },
}

/// A group's change against the first group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// Relative change of the median, percent.
    pub percent: f64,
    /// Better, worse or the same.
    pub better: Option<bool>,
    /// Beyond noise?
    pub verdict: Verdict,
}

/// One figure across the groups.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricRow {
    /// Key (`p99`).
    pub key: &'static str,
    /// Label.
    pub label: &'static str,
    /// Unit.
    pub unit: &'static str,
    /// Values per group.
    pub groups: Vec<Option<Stat>>,
    /// Change per group against the first (`None` for the first).
    pub changes: Vec<Option<Change>>,
}

/// A group of runs as compared.
#[derive(Clone, Debug, Serialize)]
pub struct GroupInfo {
    /// The reference it was given as.
    pub label: String,
    /// Run ids.
    pub runs: Vec<i64>,
    /// Incomplete runs among them (with reasons).
    pub incomplete: Vec<String>,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The groups, the first being the baseline.
    pub groups: Vec<GroupInfo>,
    /// Figures.
    pub metrics: Vec<MetricRow>,
    /// Why the runs may not be comparable.
    pub warnings: Vec<String>,
}

/// Compares groups of runs (each a `(label, runs)`); the first is the baseline.
pub fn compare(groups: &[(String, Vec<RunMeta>)], opts: &CompareOptions) -> Comparison {
    let mut metrics = Vec::new();
    for m in METRICS {
        let stats: Vec<Option<Stat>> = groups
            .iter()
            .map(|(_, runs)| Stat::of(runs.iter().filter_map(|r| (m.get)(r)).collect()))
            .collect();
        if stats.iter().all(Option::is_none) {
            continue;
        }
        let base = stats.first().cloned().flatten();
        let changes = stats
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if i == 0 {
                    return None;
                }
                let (b, s) = (base.as_ref()?, s.as_ref()?);
                let percent = if b.median != 0.0 {
                    (s.median - b.median) / b.median.abs() * 100.0
                } else if s.median == 0.0 {
                    0.0
                } else {
                    f64::INFINITY
                };
                let verdict = if b.values.len() < 2 || s.values.len() < 2 {
                    Verdict::NoRepeats
                } else {
                    let p = mann_whitney(&b.values, &s.values);
                    if p < opts.alpha && percent.abs() >= opts.threshold_pct {
                        Verdict::Significant { p }
                    } else if p < opts.alpha {
                        Verdict::Small { p }
                    } else {
                        Verdict::NotSignificant {
                            p,
                            smallest_possible: smallest_p(b.values.len(), s.values.len()),
                        }
                    }
                };
                let better = (percent != 0.0).then_some(match m.better {
                    Better::Higher => percent > 0.0,
                    Better::Lower => percent < 0.0,
                });
                Some(Change {
                    percent,
                    better,
                    verdict,
                })
            })
            .collect();
        metrics.push(MetricRow {
            key: m.key,
            label: m.label,
            unit: m.unit,
            groups: stats,
            changes,
        });
    }
    Comparison {
        groups: groups
            .iter()
            .map(|(label, runs)| GroupInfo {
                label: label.clone(),
                runs: runs.iter().filter_map(|r| r.id).collect(),
                incomplete: runs
                    .iter()
                    .filter(|r| !r.status.complete)
                    .map(|r| {
                        format!(
                            "#{} {}",
                            r.id.unwrap_or(0),
                            r.status.reason.as_deref().unwrap_or("incomplete")
                        )
                    })
                    .collect(),
            })
            .collect(),
        metrics,
        warnings: comparability(groups),
    }
}

/// Why runs may not be comparable: different loads, events, kernels, machines, binaries.
fn comparability(groups: &[(String, Vec<RunMeta>)]) -> Vec<String> {
    let mut w = Vec::new();
    let all: Vec<&RunMeta> = groups.iter().flat_map(|(_, r)| r).collect();
    let Some(first) = all.first() else {
        return w;
    };
    let mut differs = |what: &str, f: &dyn Fn(&RunMeta) -> String| {
        let mut seen: Vec<String> = Vec::new();
        for r in &all {
            let v = f(r);
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
        if seen.len() > 1 {
            w.push(format!("{what} differ: {}", seen.join(" | ")));
        }
    };
    differs("load options", &|r| {
        format!("{} {}", r.load.protocol, r.load.argv.join(" "))
    });
    differs("recorded events", &|r| r.events.join(","));
    differs("sampling frequencies", &|r| format!("{} Hz", r.frequency));
    differs("kernels", &|r| r.kernel.clone());
    differs("hosts", &|r| r.host.clone());
    differs("target executables", &|r| {
        if r.target.build_id.is_empty() {
            r.target.exe.clone()
        } else {
            format!("{} (build id {})", r.target.exe, r.target.build_id)
        }
    });
    let lens: Vec<f64> = all.iter().map(|r| r.measure.seconds()).collect();
    if let (Some(lo), Some(hi)) = (
        lens.iter().copied().reduce(f64::min),
        lens.iter().copied().reduce(f64::max),
    ) {
        if lo > 0.0 && hi / lo > 1.2 {
            w.push(format!(
                "measurement windows differ: {lo:.1} s to {hi:.1} s"
            ));
        }
    }
    let incomplete = all.iter().filter(|r| !r.status.complete).count();
    if incomplete > 0 {
        w.push(format!(
            "{incomplete} of the runs are incomplete (see their reasons)"
        ));
    }
    let _ = first;
    w
}

/// Ranks of `all` (1-based, ties get their mean rank).
fn ranks(all: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..all.len()).collect();
    idx.sort_by(|&a, &b| all[a].total_cmp(&all[b]));
    let mut r = vec![0.0; all.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && all[idx[j + 1]] == all[idx[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for k in &idx[i..=j] {
            r[*k] = mean;
        }
        i = j + 1;
    }
    r
}

/// Number of arrangements of `m` + `n` distinct values giving each U statistic
/// (`counts[u]`), by the recurrence N(u; m, n) = N(u - n; m - 1, n) + N(u; m, n - 1).
fn u_counts(m: usize, n: usize) -> Vec<f64> {
    // table[j][u] for the current m, j = 0..=n
    let max = m * n;
    let mut prev: Vec<Vec<f64>> = (0..=n)
        .map(|_| {
            let mut v = vec![0.0; max + 1];
            v[0] = 1.0;
            v
        })
        .collect();
    for mi in 1..=m {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max + 1]; n + 1];
        cur[0][0] = 1.0;
        for nj in 1..=n {
            for u in 0..=mi * nj {
                let a = if u >= nj { prev[nj][u - nj] } else { 0.0 };
                let b = cur[nj - 1][u];
                cur[nj][u] = a + b;
            }
        }
        prev = cur;
    }
    prev[n].clone()
}

/// Two-sided Mann-Whitney U test p-value for samples `a` and `b`: exact for groups of up to
/// 25 without ties, the normal approximation (with tie correction) otherwise.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> f64 {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return 1.0;
    }
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let r = ranks(&all);
    let ra: f64 = r[..m].iter().sum();
    let u = ra - (m * (m + 1)) as f64 / 2.0;
    let ties = {
        let mut s = all.clone();
        s.sort_by(f64::total_cmp);
        s.windows(2).any(|w| w[0] == w[1])
    };
    if !ties && m <= 25 && n <= 25 {
        let counts = u_counts(m, n);
        let total: f64 = counts.iter().sum();
        let u = u.round() as usize;
        let lo: f64 = counts[..=u].iter().sum::<f64>() / total;
        let hi: f64 = counts[u..].iter().sum::<f64>() / total;
        return (2.0 * lo.min(hi)).min(1.0);
    }
    let (mf, nf) = (m as f64, n as f64);
    let nt = mf + nf;
    let mean = mf * nf / 2.0;
    let mut tie_sum = 0.0;
    let mut s = all.clone();
    s.sort_by(f64::total_cmp);
    let mut i = 0;
    while i < s.len() {
        let mut j = i;
        while j + 1 < s.len() && s[j + 1] == s[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        tie_sum += t * t * t - t;
        i = j + 1;
    }
    let var = mf * nf / 12.0 * ((nt + 1.0) - tie_sum / (nt * (nt - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// The smallest two-sided p-value the exact test can give for group sizes `m` and `n`.
pub fn smallest_p(m: usize, n: usize) -> f64 {
    if m == 0 || n == 0 {
        return 1.0;
    }
    let counts = u_counts(m.min(25), n.min(25));
    let total: f64 = counts.iter().sum();
    (2.0 / total).min(1.0)
}

/// Upper tail of the standard normal distribution (Abramowitz and Stegun 7.1.26 erfc).
fn normal_sf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    0.5 * poly * (-x * x).exp()
}

/// A `--fail-if` condition: `p99>+10%`, `throughput<-5%`, `cpu_per_op>50` (absolute, in
/// the figure's unit).
#[derive(Clone, Debug, PartialEq)]
pub struct Gate {
    /// The figure.
    pub metric: &'static Metric,
    /// `>` or `<`.
    pub greater: bool,
    /// Threshold.
    pub threshold: f64,
    /// Relative (percent change of the median) or absolute (the median itself).
    pub relative: bool,
    /// As written.
    pub text: String,
}

impl PartialEq for Metric {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

/// Finds a figure by key or alias.
pub fn metric(key: &str) -> Option<&'static Metric> {
    let k = key.trim().to_ascii_lowercase();
    METRICS
        .iter()
        .find(|m| m.key == k || m.aliases.contains(&k.as_str()))
}

/// Parses `--fail-if` conditions separated by commas.
pub fn parse_gates(spec: &str) -> Result<Vec<Gate>, String> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (pos, greater) = match (part.find('>'), part.find('<')) {
            (Some(p), None) => (p, true),
            (None, Some(p)) => (p, false),
            _ => {
                return Err(format!(
                "'{part}': expected FIGURE>LIMIT or FIGURE<LIMIT, e.g. p99>+10% or throughput<-5%"
            ))
            }
        };
        let name = &part[..pos];
        let m = metric(name).ok_or_else(|| {
            let keys: Vec<&str> = METRICS.iter().map(|m| m.key).collect();
            format!(
                "'{part}': unknown figure '{name}' (known: {})",
                keys.join(", ")
            )
        })?;
        let value = part[pos + 1..].trim();
        let (num, relative) = match value.strip_suffix('%') {
            Some(n) => (n, true),
            None => (value, false),
        };
        let threshold: f64 = num
            .trim_start_matches('+')
            .parse()
            .map_err(|_| format!("'{part}': '{value}' is not a number or a percentage"))?;
        out.push(Gate {
            metric: m,
            greater,
            threshold,
            relative,
            text: part.to_string(),
        });
    }
    if out.is_empty() {
        return Err("no condition given".into());
    }
    Ok(out)
}

/// The gates the last group fails against the first: one message each.
pub fn check_gates(c: &Comparison, gates: &[Gate]) -> Vec<String> {
    let mut failed = Vec::new();
    for g in gates {
        let Some(row) = c.metrics.iter().find(|r| r.key == g.metric.key) else {
            failed.push(format!(
                "{}: the runs do not measure {}",
                g.text, g.metric.label
            ));
            continue;
        };
        let last = row.groups.len().saturating_sub(1);
        let value = if g.relative {
            row.changes.get(last).cloned().flatten().map(|c| c.percent)
        } else {
            row.groups.get(last).cloned().flatten().map(|s| s.median)
        };
        let Some(v) = value else {
            failed.push(format!("{}: no value to check", g.text));
            continue;
        };
        let hit = if g.greater {
            v > g.threshold
        } else {
            v < g.threshold
        };
        if hit {
            let shown = if g.relative {
                format!("{v:+.1}%")
            } else {
                format!("{v:.1}")
            };
            failed.push(format!("{}: {} is {shown}", g.text, g.metric.label));
        }
    }
    failed
}

/// A figure's value as a person reads it.
pub fn format_value(v: f64, unit: &str) -> String {
    match unit {
        "us" => {
            if v >= 1e6 {
                format!("{:.2} s", v / 1e6)
            } else if v >= 1e3 {
                format!("{:.2} ms", v / 1e3)
            } else {
                format!("{v:.1} µs")
            }
        }
        "bytes" => {
            if v >= (1u64 << 30) as f64 {
                format!("{:.2} GiB", v / (1u64 << 30) as f64)
            } else if v >= (1u64 << 20) as f64 {
                format!("{:.1} MiB", v / (1u64 << 20) as f64)
            } else {
                format!("{:.0} KiB", v / 1024.0)
            }
        }
        "%" => format!("{v:.1}%"),
        "/s" => {
            if v >= 1e4 {
                format!("{:.1}k/s", v / 1e3)
            } else {
                format!("{v:.0}/s")
            }
        }
        _ => format!("{v:.3}"),
    }
}

fn verdict_text(v: &Verdict) -> String {
    match v {
        Verdict::NoRepeats => "no repeats".into(),
        Verdict::Significant { p } => format!("significant (p={p:.3})"),
        Verdict::Small { p } => format!("small (p={p:.3}, under the threshold)"),
        Verdict::NotSignificant {
            p,
            smallest_possible,
        } if *smallest_possible >= 0.05 => {
            format!("noise? (p={p:.2}; too few repeats to tell)")
        }
        Verdict::NotSignificant { p, .. } => format!("within noise (p={p:.2})"),
    }
}

fn cell(s: &Option<Stat>, unit: &str) -> String {
    match s {
        None => "-".into(),
        Some(s) if s.values.len() > 1 => format!(
            "{} ({}–{})",
            format_value(s.median, unit),
            format_value(s.min, unit),
            format_value(s.max, unit)
        ),
        Some(s) => format_value(s.median, unit),
    }
}

fn change_cell(c: &Option<Change>) -> String {
    match c {
        None => String::new(),
        Some(c) => {
            let mark = match c.better {
                Some(true) => " better",
                Some(false) => " worse",
                None => "",
            };
            format!("{:+.1}%{mark}, {}", c.percent, verdict_text(&c.verdict))
        }
    }
}

/// The comparison as rows of cells: header, then one row per figure.
fn rows(c: &Comparison) -> Vec<Vec<String>> {
    let mut header = vec!["figure".to_string()];
    for (i, g) in c.groups.iter().enumerate() {
        let n = g.runs.len();
        let label = if n > 1 {
            format!("{} (median of {n}, range)", g.label)
        } else {
            g.label.clone()
        };
        header.push(label);
        if i > 0 {
            header.push(format!("change vs {}", c.groups[0].label));
        }
    }
    let mut out = vec![header];
    for r in &c.metrics {
        let mut row = vec![r.label.to_string()];
        for (i, s) in r.groups.iter().enumerate() {
            row.push(cell(s, r.unit));
            if i > 0 {
                row.push(change_cell(&r.changes[i]));
            }
        }
        out.push(row);
    }
    out
}

fn notes(c: &Comparison) -> Vec<String> {
    let mut n = Vec::new();
    if c.groups.iter().any(|g| g.runs.len() < 2) {
        n.push("a group has a single run: changes are shown, but noise cannot be told from them (kiln run --repeat N)".into());
    }
    for g in &c.groups {
        for i in &g.incomplete {
            n.push(format!("{}: incomplete run {i}", g.label));
        }
    }
    n.extend(c.warnings.iter().map(|w| format!("not comparable? {w}")));
    n
}

/// Writes the comparison as an aligned text table.
pub fn write_text(c: &Comparison, out: &mut String) {
    let rows = rows(c);
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in &rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            let pad = widths[i].saturating_sub(cell.chars().count());
            if i == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for n in notes(c) {
        let _ = writeln!(out, "note: {n}");
    }
}

/// Escapes a Markdown table cell.
pub fn md_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '|' | '\\' | '`' | '*' | '_' | '<' | '>' | '[' | ']' => {
                o.push('\\');
                o.push(ch);
            }
            '\n' | '\r' => o.push(' '),
            _ => o.push(ch),
        }
    }
    o
}

/// Writes the comparison as a Markdown table (to paste into a pull request).
pub fn write_markdown(c: &Comparison, out: &mut String) {
    let rows = rows(c);
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = r.iter().map(|c| md_escape(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
        if i == 0 {
            let _ = writeln!(out, "|{}", "---|".repeat(r.len()));
        }
    }
    let n = notes(c);
    if !n.is_empty() {
        let _ = writeln!(out);
        for n in n {
            let _ = writeln!(out, "- {}", md_escape(&n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slow, obviously correct model: enumerate every way to pick which of the
    /// `m + n` distinct ranks belong to the first group.
    fn brute_p(a: &[f64], b: &[f64]) -> f64 {
        let (m, n) = (a.len(), b.len());
        let all: Vec<f64> = a.iter().chain(b).copied().collect();
        let r = ranks(&all);
        let u_obs = r[..m].iter().sum::<f64>() - (m * (m + 1)) as f64 / 2.0;
        let total = m + n;
        let (mut le, mut ge, mut count) = (0u64, 0u64, 0u64);
        for mask in 0u32..(1 << total) {
            if mask.count_ones() as usize != m {
                continue;
            }
            let ra: usize = (0..total)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| i + 1)
                .sum();
            let u = ra as f64 - (m * (m + 1)) as f64 / 2.0;
            count += 1;
            if u <= u_obs {
                le += 1;
            }
            if u >= u_obs {
                ge += 1;
            }
        }
        (2.0 * (le.min(ge) as f64) / count as f64).min(1.0)
    }

    #[test]
    fn exact_test_matches_enumeration() {
        let mut rng = 12345u64;
        let mut next = || {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        for m in 1..=6 {
            for n in 1..=6 {
                for shift in [0.0, 0.3, 1.0] {
                    let a: Vec<f64> = (0..m).map(|_| next()).collect();
                    let b: Vec<f64> = (0..n).map(|_| next() + shift).collect();
                    let (p, q) = (mann_whitney(&a, &b), brute_p(&a, &b));
                    assert!((p - q).abs() < 1e-12, "m={m} n={n}: {p} vs {q}");
                }
            }
        }
    }

    #[test]
    fn separated_groups_are_significant_only_with_enough_repeats() {
        let a = [100.0, 101.0, 102.0, 99.0, 100.5];
        let b = [150.0, 151.0, 149.0, 152.0, 150.5];
        assert!(mann_whitney(&a, &b) < 0.01);
        assert!(smallest_p(3, 3) >= 0.05, "3 vs 3 can never be significant");
        assert!(smallest_p(4, 4) < 0.05);
        let same = [100.0, 101.0, 99.0, 100.5, 99.5];
        let other = [100.2, 100.8, 99.2, 100.1, 99.9];
        assert!(mann_whitney(&same, &other) > 0.2);
    }

    #[test]
    fn gates_parse_and_fire() {
        let g = parse_gates("p99>+10%, cpu_per_msg>+5%,throughput<-5%").unwrap();
        assert_eq!(g.len(), 3);
        assert_eq!(g[1].metric.key, "cpu_per_op");
        assert!(parse_gates("p98>1").unwrap_err().contains("unknown figure"));
        assert!(parse_gates("p99=1").is_err());
        let mk = |p99: f64| RunMeta {
            headline: Headline {
                p99_us: Some(p99),
                ..Default::default()
            },
            ..Default::default()
        };
        let c = compare(
            &[("a".into(), vec![mk(100.0)]), ("b".into(), vec![mk(120.0)])],
            &CompareOptions::default(),
        );
        let failed = check_gates(&c, &parse_gates("p99>+10%").unwrap());
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert!(check_gates(&c, &parse_gates("p99>+25%").unwrap()).is_empty());
        let missing = check_gates(&c, &parse_gates("throughput<-5%").unwrap());
        assert!(missing[0].contains("do not measure"));
    }

    #[test]
    fn markdown_cells_are_escaped() {
        assert_eq!(md_escape("a|b<script>"), "a\\|b\\<script\\>");
    }
}
