//! The comparison page: the figures of two runs (or groups of repeats) side by side with
//! the change and whether it is beyond noise, their latency distributions and series
//! overlaid (aligned at the start of measurement), the differential flame graph and the
//! function table.
use crate::latency::{self, Distribution};
use crate::page::{self, Viewer};
use crate::run::{completed_column, origin_of, table, Table};
use crate::{ReportError, ReportOptions};
use kiln_model::Profile;
use kiln_run::compare::{format_value, Better, Comparison, Verdict, METRICS};
use kiln_store::RunData;
use kiln_viewer::HtmlOptions;
use serde::Serialize;
use std::io::Write;

/// One function's change, as `kiln compare`'s table shows it.
#[derive(Clone, Debug)]
pub struct FunctionLine {
    /// Its self and total shares before and after.
    pub change: kiln_diff::FunctionChange,
    /// CPU time per operation in the function and its callees, before and after, µs.
    pub us_per_op: (Option<f64>, Option<f64>),
}

/// What a comparison page shows.
#[derive(Debug)]
pub struct CompareReport<'a> {
    /// The statistics (`kiln_run::compare::compare`).
    pub comparison: &'a Comparison,
    /// Each group's runs, whole (series and histograms are drawn), in the comparison's
    /// order.
    pub runs: &'a [Vec<RunData>],
    /// The function table (first group against the last).
    pub functions: &'a [FunctionLine],
    /// Notes to show beside the comparison's own warnings.
    pub notes: &'a [String],
    /// The first and last groups' profiles of one event (repeats merged, transforms
    /// applied) for the differential flame graph.
    pub profiles: Option<(&'a Profile, &'a Profile)>,
}

#[derive(Serialize)]
struct RunRef {
    id: Option<i64>,
    name: String,
    started: String,
    note: Option<String>,
    tags: Vec<(String, String)>,
    complete: bool,
    reason: Option<String>,
    load: String,
    target: String,
}

#[derive(Serialize)]
struct GroupPage {
    label: String,
    runs: Vec<RunRef>,
}

#[derive(Serialize)]
struct Cell {
    text: String,
    median: f64,
    min: f64,
    max: f64,
    n: usize,
}

#[derive(Serialize)]
struct ChangeCell {
    percent: f64,
    /// `+12.3%`.
    text: String,
    /// Better, worse, or unchanged (null).
    better: Option<bool>,
    /// `significant`, `small`, `not_significant`, `no_repeats`.
    verdict: &'static str,
    verdict_text: String,
}

#[derive(Serialize)]
struct MetricPage {
    key: &'static str,
    label: &'static str,
    unit: &'static str,
    better: &'static str,
    cells: Vec<Option<Cell>>,
    changes: Vec<Option<ChangeCell>>,
}

#[derive(Serialize)]
struct RunSeries {
    group: usize,
    id: Option<i64>,
    /// Position in its group.
    index: usize,
    /// Tables with times relative to this run's start of measurement.
    tables: Vec<Table>,
    measure_end: i64,
    unit: String,
    completed: Option<String>,
    latency: Option<String>,
    cpus: u32,
}

#[derive(Serialize)]
struct FunctionPage {
    name: String,
    self_before: f64,
    self_after: f64,
    total_before: f64,
    total_after: f64,
    us_before: Option<f64>,
    us_after: Option<f64>,
}

#[derive(Serialize)]
struct DiffInfo {
    key: String,
    event: String,
    title: String,
}

#[derive(Serialize)]
struct ComparePage {
    groups: Vec<GroupPage>,
    metrics: Vec<MetricPage>,
    notes: Vec<String>,
    distributions: Vec<Distribution>,
    series: Vec<RunSeries>,
    functions: Vec<FunctionPage>,
    diff: Option<DiffInfo>,
}

#[derive(Serialize)]
struct Page<'a> {
    kind: &'static str,
    version: u32,
    title: String,
    origin: u64,
    compare: &'a ComparePage,
}

fn verdict(v: &Verdict) -> (&'static str, String) {
    match v {
        Verdict::NoRepeats => (
            "no_repeats",
            "no repeats: noise cannot be told from change".into(),
        ),
        Verdict::Significant { p } => ("significant", format!("significant (p = {p:.3})")),
        Verdict::Small { p } => (
            "small",
            format!("real but under the threshold (p = {p:.3})"),
        ),
        Verdict::NotSignificant {
            p,
            smallest_possible,
        } if *smallest_possible >= 0.05 => (
            "not_significant",
            format!("too few repeats to tell (p = {p:.2})"),
        ),
        Verdict::NotSignificant { p, .. } => {
            ("not_significant", format!("within noise (p = {p:.2})"))
        }
    }
}

/// Writes the comparison page to `out`.
pub fn write_compare_report(
    c: &CompareReport<'_>,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let cmp = c.comparison;
    if cmp.groups.len() < 2 || c.runs.len() != cmp.groups.len() {
        return Err(ReportError::Empty(format!(
            "a comparison needs two groups of runs and their data ({} groups, {} with data)",
            cmp.groups.len(),
            c.runs.len()
        )));
    }
    let groups = cmp
        .groups
        .iter()
        .zip(c.runs)
        .map(|(g, runs)| GroupPage {
            label: g.label.clone(),
            runs: runs
                .iter()
                .map(|r| {
                    let m = &r.meta;
                    RunRef {
                        id: m.id,
                        name: m.name.clone(),
                        started: page::date(m.started_unix_ms),
                        note: m.note.clone(),
                        tags: m.tags.clone(),
                        complete: m.status.complete,
                        reason: m.status.reason.clone(),
                        load: format!("{} {}", m.load.protocol, m.load.argv.join(" ")),
                        target: format!("{} ({})", m.target.comm, m.target.exe),
                    }
                })
                .collect(),
        })
        .collect();
    let metrics = cmp
        .metrics
        .iter()
        .map(|r| {
            let better = match METRICS.iter().find(|m| m.key == r.key).map(|m| m.better) {
                Some(Better::Higher) => "higher",
                _ => "lower",
            };
            MetricPage {
                key: r.key,
                label: r.label,
                unit: r.unit,
                better,
                cells: r
                    .groups
                    .iter()
                    .map(|s| {
                        s.as_ref().map(|s| Cell {
                            text: if s.values.len() > 1 {
                                format!(
                                    "{} ({}–{})",
                                    format_value(s.median, r.unit),
                                    format_value(s.min, r.unit),
                                    format_value(s.max, r.unit)
                                )
                            } else {
                                format_value(s.median, r.unit)
                            },
                            median: s.median,
                            min: s.min,
                            max: s.max,
                            n: s.values.len(),
                        })
                    })
                    .collect(),
                changes: r
                    .changes
                    .iter()
                    .map(|ch| {
                        ch.as_ref().map(|ch| {
                            let (v, text) = verdict(&ch.verdict);
                            ChangeCell {
                                percent: if ch.percent.is_finite() {
                                    ch.percent
                                } else {
                                    f64::MAX
                                },
                                text: if ch.percent.is_finite() {
                                    format!("{:+.1}%", ch.percent)
                                } else {
                                    "new".into()
                                },
                                better: ch.better,
                                verdict: v,
                                verdict_text: text,
                            }
                        })
                    })
                    .collect(),
            }
        })
        .collect();
    let mut notes: Vec<String> = Vec::new();
    if cmp.groups.iter().any(|g| g.runs.len() < 2) {
        notes.push("A group has a single run: changes are shown, but noise cannot be told from them (kiln run --repeat N).".into());
    }
    for g in &cmp.groups {
        for i in &g.incomplete {
            notes.push(format!("{}: incomplete run {i}", g.label));
        }
    }
    notes.extend(cmp.warnings.iter().map(|w| format!("Not comparable? {w}")));
    notes.extend(c.notes.iter().cloned());

    // Latency distributions: each group's measurement histograms merged across repeats.
    let mut distributions = Vec::new();
    let mut skipped = 0usize;
    for (gi, runs) in c.runs.iter().enumerate() {
        let Some(first) = runs.first() else { continue };
        let Some(name) = first.meta.headline.latency.clone() else {
            continue;
        };
        for n in [name.clone(), format!("{name}_intended")] {
            let hists = runs.iter().flat_map(|r| {
                r.histograms
                    .iter()
                    .filter(|h| h.window == r.meta.measure.name)
            });
            if let Some(h) = latency::merged(hists, &n, &first.meta.measure.name, &mut skipped) {
                let mut d = latency::distribution(&n, gi, &h);
                d.name = format!("{} — {n}", cmp.groups[gi].label);
                distributions.push(d);
            }
        }
    }
    if skipped > 0 {
        notes.push(format!(
            "{skipped} stored latency histogram(s) could not be read and are left out"
        ));
    }
    let series = c
        .runs
        .iter()
        .enumerate()
        .flat_map(|(gi, runs)| {
            runs.iter().enumerate().map(move |(i, r)| {
                let o = origin_of(&r.meta, &r.series);
                RunSeries {
                    group: gi,
                    id: r.meta.id,
                    index: i,
                    tables: r.series.iter().map(|t| table(t, o)).collect(),
                    measure_end: r.meta.measure.end_ns as i64 - o as i64,
                    unit: if r.meta.load.unit.is_empty() {
                        "op".into()
                    } else {
                        r.meta.load.unit.clone()
                    },
                    completed: completed_column(r),
                    latency: r.meta.headline.latency.clone(),
                    cpus: r.meta.cpus,
                }
            })
        })
        .collect();
    let functions = c
        .functions
        .iter()
        .map(|f| FunctionPage {
            name: f.change.name.clone(),
            self_before: f.change.self_before,
            self_after: f.change.self_after,
            total_before: f.change.total_before,
            total_after: f.change.total_after,
            us_before: f.us_per_op.0,
            us_after: f.us_per_op.1,
        })
        .collect();
    let first = &cmp.groups[0].label;
    let last = &cmp.groups[cmp.groups.len() - 1].label;
    let mut viewers = Vec::new();
    let diff = c.profiles.map(|(b, a)| {
        let title = format!("{first} → {last} ({})", a.event.name);
        viewers.push(Viewer {
            key: "diff".into(),
            profiles: vec![b, a],
            opts: HtmlOptions {
                title: title.clone(),
                diff_labels: (first.clone(), last.clone()),
                compress_above: opts.compress_above,
                sources: vec![format!("runs '{first}'"), format!("runs '{last}'")],
                ..Default::default()
            },
        });
        DiffInfo {
            key: "diff".into(),
            event: a.event.name.clone(),
            title,
        }
    });
    let data = ComparePage {
        groups,
        metrics,
        notes,
        distributions,
        series,
        functions,
        diff,
    };
    let labels: Vec<&str> = cmp.groups.iter().map(|g| g.label.as_str()).collect();
    let title = format!("kiln compare {}", labels.join(" vs "));
    let page_data = Page {
        kind: "compare",
        version: 1,
        title: title.clone(),
        origin: 0,
        compare: &data,
    };
    page::write(&title, &page_data, &viewers, None, opts, out)
}
