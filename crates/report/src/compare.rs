//! The comparison page: the figures of two runs (or groups of repeats) side by side with
//! the change and whether it is beyond noise, their latency distributions and series
//! overlaid (aligned at the start of measurement), the differential flame graph and the
//! function table. The page judges a window of the series itself (web/src/report/lib/
//! verdict.ts, the rules of `kiln compare NAME@START-END`): it gets each run's seconds and
//! per-second latency histograms, the rules and the runs' pairing by round from here, and
//! each window of whole seconds' function tables and profile clause, computed here by
//! [`kiln_compare::profile_change`] (the runs' profiles are not on the page, only the
//! differential flame graph's two merged sides: their samples timed from each run's
//! measurement start, the page's viewer shows a window's seconds of them).
use crate::latency::{self, Distribution};
use crate::page::{self, Viewer};
use crate::run::{completed_column, origin_of, table, Table};
use crate::{ReportError, ReportOptions};
use kiln_compare::export::group_text;
use kiln_compare::{Comparison, Exporter, Role, Rounds, Verdict};
use kiln_model::{Profile, NO_TIME};
use kiln_store::{columns, RunData};
use serde::Serialize;
use std::io::Write;

/// The comparison page as an exporter of a [`Comparison`]: it also needs the runs
/// themselves (their series and histograms are drawn).
#[derive(Debug)]
pub struct CompareHtml<'a> {
    /// Each group's runs, whole, in the comparison's order.
    pub runs: &'a [Vec<RunData>],
    /// Page options.
    pub opts: &'a ReportOptions,
    /// The comparison's options, when the page is to give each window of the runs its
    /// function tables and what moved in its profile (the runs' profiles then as the
    /// comparison read them: transformed alike).
    pub windows: Option<&'a kiln_compare::Options>,
}

impl<'a> CompareHtml<'a> {
    /// The page of `runs` with `opts`.
    pub fn new(runs: &'a [Vec<RunData>], opts: &'a ReportOptions) -> Self {
        CompareHtml {
            runs,
            opts,
            windows: None,
        }
    }

    /// The same page, giving each window of whole seconds its function tables and the
    /// overall line's clause on its profile, computed with `options` as `kiln compare
    /// NAME@START-END` computes them.
    pub fn with_windows(mut self, options: &'a kiln_compare::Options) -> Self {
        self.windows = Some(options);
        self
    }
}

impl Exporter for CompareHtml<'_> {
    fn export(&self, c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
        write_page(c, self.runs, self.opts, self.windows, out).map_err(|e| match e {
            ReportError::Io(e) => e,
            e => std::io::Error::other(e.to_string()),
        })
    }
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
    /// The median (with the range), and for a set rate whether it was held.
    text: String,
    median: f64,
    min: f64,
    max: f64,
    n: usize,
    /// Each run's own value, in the group's order, as the figures table prints a value: a
    /// legend beside a run's line gives its run's, not the group's median.
    each: Vec<String>,
    /// `held`, `not held (−12%)`, or null.
    held: Option<String>,
}

#[derive(Serialize)]
struct ChangeCell {
    percent: f64,
    /// `+12.3%`.
    text: String,
    /// `improved`, `regressed`, `no_change`, `cannot_tell`; `shown` for settings and
    /// context (never judged).
    verdict: &'static str,
    /// The verdict in words, with p or the reason.
    verdict_text: String,
}

#[derive(Serialize)]
struct MetricPage {
    key: &'static str,
    label: String,
    unit: &'static str,
    better: &'static str,
    role: Role,
    why: Option<String>,
    noise: Option<String>,
    cells: Vec<Option<Cell>>,
    changes: Vec<Option<ChangeCell>>,
}

#[derive(Serialize)]
struct RunSeries {
    group: usize,
    /// The rate the load was set to, per second.
    rate: Option<f64>,
    /// Producers, connections or clients.
    concurrency: Option<f64>,
    /// The load column a window's operations are counted in, as `kiln compare
    /// NAME@START-END` counts them (the stored word only).
    counted: Option<String>,
    /// The run's per-second latency histograms: a window's percentiles.
    latency_seconds: latency::PerSecond,
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
    /// kiln's eBPF CPU over the run's seconds (% of one CPU), when the run measured it:
    /// what `kiln compare NAME@START-END` sums for a window.
    ebpf: Option<Table>,
    /// The BEAM's schedulers' weight by state per second of the run, when its target is a
    /// BEAM: a window's states as `kiln compare NAME@START-END` computes them.
    beam: Option<BeamSeconds>,
}

/// The BEAM's schedulers' weight by state (in the order of
/// [`kiln_model::beam::BeamState::ALL`]) in each of the run's seconds
/// ([`kiln_store::seconds`]), and what a unit of each weight stands for: the page sums a
/// window's seconds and computes its states as [`kiln_store::StateSources::states`] does.
#[derive(Serialize)]
struct BeamSeconds {
    /// The seconds' ends, ns since the run's start of measurement.
    time: Vec<i64>,
    /// CPU samples' weight by state, per second.
    cpu: Vec<[f64; 7]>,
    /// Off-CPU weight by the state blocked in, per second.
    blocked: Vec<[f64; 7]>,
    /// Runnable weight by state, per second.
    runnable: Vec<[f64; 7]>,
    /// ns per unit of CPU weight.
    cpu_ns: f64,
    /// ns per unit of off-CPU and of runnable weight; `None`: shares of CPU time.
    wall_ns: Option<[f64; 2]>,
}

fn beam_seconds(r: &RunData, grid: &[(u64, u64)], origin: u64) -> Option<BeamSeconds> {
    r.meta.headline.beam.as_ref()?;
    let by = kiln_store::seconds::StatesBySecond::of(&r.profiles, grid)?;
    let (cpu_ns, wall_ns, _) = by.sources().scales();
    let per = by.per_second();
    let f = |x: &[u128; 7]| x.map(|v| v as f64);
    Some(BeamSeconds {
        time: grid
            .iter()
            .map(|&(_, e)| e as i64 - origin as i64)
            .collect(),
        cpu: per.iter().map(|s| f(&s.cpu)).collect(),
        blocked: per.iter().map(|s| f(&s.blocked)).collect(),
        runnable: per.iter().map(|s| f(&s.runnable)).collect(),
        cpu_ns,
        wall_ns,
    })
}

#[derive(Serialize)]
struct FunctionPage {
    name: String,
    before: String,
    after: String,
    delta: f64,
    verdict: &'static str,
    change: String,
    total_before: f64,
    total_after: f64,
}

#[derive(Serialize)]
struct FunctionTablePage {
    event: String,
    unit: String,
    what: String,
    rows: Vec<FunctionPage>,
}

#[derive(Serialize)]
struct DiffInfo {
    key: String,
    event: String,
    title: String,
    /// Whether only the frames beyond noise are coloured.
    marked: bool,
    /// When the flame graph can show a window: its samples are timed in ns from the start
    /// of their run's measurement (those outside it untimed), and this is the shortest
    /// measurement's length, ns (a window starting at or past it is not every run's).
    /// Null: the whole measurements only.
    windows_below_ns: Option<u64>,
}

/// What a window's verdicts are decided by, as `kiln compare NAME@START-END` decides
/// them: the rules, why the runs cannot be compared (when they cannot), and how each
/// group's runs pair with the baseline's by round.
#[derive(Serialize)]
struct Judging {
    alpha: f64,
    threshold_pct: f64,
    not_comparable: Option<String>,
    /// Per group: the pairing with the first group, or null (the first, or unpaired).
    paired: Vec<Option<PairedPage>>,
    /// Per group: why its variants' rounds do not pair, or null.
    unmatched: Vec<Option<String>>,
}

#[derive(Serialize)]
struct PairedPage {
    experiment: String,
    /// Each round's run: (index in the first group, index in this group), in round order.
    pairs: Vec<(usize, usize)>,
}

#[derive(Serialize)]
struct ComparePage {
    judging: Judging,
    overall: &'static str,
    overall_line: String,
    groups: Vec<GroupPage>,
    metrics: Vec<MetricPage>,
    notes: Vec<String>,
    distributions: Vec<Distribution>,
    series: Vec<RunSeries>,
    functions: Vec<FunctionTablePage>,
    diff: Option<DiffInfo>,
    /// The names of the series the page reads, as kiln writes them. Added in 0.4.
    columns: crate::run::ColumnNames,
    /// Each window of whole seconds of every run's measurement: its function tables and
    /// what moved in its profile. Empty when not computed.
    windows: Vec<WindowProfile>,
}

/// A window's profile side, as `kiln compare NAME@START-END` computes it.
#[derive(Serialize)]
struct WindowProfile {
    /// Seconds from the start of each measurement.
    start: u64,
    end: u64,
    functions: Vec<FunctionTablePage>,
    /// The overall line's clause when the window's figures moved, and when they did not.
    moved: Option<String>,
    quiet: Option<String>,
}

/// The most windows × runs computed when the page is written: a measurement of n seconds
/// has n(n+1)/2 windows of whole seconds, each cut from every run's profiles (12 s
/// measurements, two runs: 156, 0.4 s in all). Past it the page's tables stay the whole
/// measurements' and say so.
const WINDOW_RUNS_AT_MOST: u64 = 1_000;

/// Every window of whole seconds A-B of the runs' measurements (the first second to the
/// end of the longest), each as `kiln compare LABEL@A-B …` reads its runs: each run's
/// metadata over the window (`window_view`) and its profiles cut to it.
fn window_profiles(
    cmp: &Comparison,
    runs: &[Vec<RunData>],
    options: &kiln_compare::Options,
) -> Vec<WindowProfile> {
    let all = || runs.iter().flatten();
    // Only runs compared over their whole measurements have windows of seconds.
    if all().any(|r| r.meta.measure.end_ns <= r.meta.measure.start_ns) {
        return Vec::new();
    }
    let longest = all()
        .map(|r| (r.meta.measure.end_ns - r.meta.measure.start_ns).div_ceil(1_000_000_000))
        .max()
        .unwrap_or(0);
    let windows = longest * (longest + 1) / 2;
    if windows * all().count() as u64 > WINDOW_RUNS_AT_MOST {
        return Vec::new();
    }
    let mut out = Vec::new();
    for a in 0..longest {
        for b in a + 1..=longest {
            let name = format!("{a}-{b}");
            let mut groups = Vec::new();
            for (g, rs) in cmp.groups.iter().zip(runs) {
                let mut metas = Vec::new();
                let mut profiles = Vec::new();
                for r in rs {
                    let Some(w) = kiln_store::window::find_window(&r.meta, &name) else {
                        continue;
                    };
                    metas.push(kiln_store::window::window_view(r, &w));
                    profiles.push(
                        r.profiles
                            .iter()
                            .map(|p| p.time_slice(w.start_ns, w.end_ns))
                            .collect(),
                    );
                }
                groups.push(kiln_compare::Group {
                    label: format!("{}@{name}", g.label),
                    runs: metas,
                    profiles,
                    findings: Vec::new(),
                });
            }
            // A run whose measurement ends before the window: kiln compare refuses it.
            if groups
                .iter()
                .zip(runs)
                .any(|(g, rs)| g.runs.len() != rs.len())
            {
                continue;
            }
            let Ok(p) = kiln_compare::profile_change(&groups, options) else {
                continue;
            };
            out.push(WindowProfile {
                start: a,
                end: b,
                functions: p.tables.iter().map(function_page).collect(),
                moved: p.moved,
                quiet: p.quiet,
            });
        }
    }
    out
}

fn verdict_key(v: &Verdict) -> &'static str {
    match v {
        Verdict::Improved => "improved",
        Verdict::Regressed => "regressed",
        Verdict::NoChange { .. } => "no_change",
        Verdict::CannotTell { .. } => "cannot_tell",
    }
}

/// Writes the comparison page of `cmp` (whose groups' runs are `runs`) to `out`.
pub fn write_compare_report(
    cmp: &Comparison,
    runs: &[Vec<RunData>],
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    write_page(cmp, runs, opts, None, out)
}

fn write_page(
    cmp: &Comparison,
    runs: &[Vec<RunData>],
    opts: &ReportOptions,
    windows: Option<&kiln_compare::Options>,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    if cmp.groups.len() < 2 || runs.len() != cmp.groups.len() {
        return Err(ReportError::Empty(format!(
            "a comparison needs two groups of runs and their data ({} groups, {} with data)",
            cmp.groups.len(),
            runs.len()
        )));
    }
    let mut notes: Vec<String> = cmp.notes.clone();
    let (distributions, skipped) = distributions(cmp, runs);
    if skipped > 0 {
        notes.push(format!(
            "{skipped} stored latency histogram(s) could not be read and are left out"
        ));
    }
    let timed = windows.and_then(|_| timed_diff(cmp, runs));
    let (diff, viewers) = diff_viewer(cmp, timed.as_ref(), opts);
    let data = ComparePage {
        overall: verdict_word(cmp),
        overall_line: cmp.overall.line.clone(),
        groups: group_pages(cmp, runs),
        metrics: metric_pages(cmp),
        notes,
        distributions,
        series: run_series(runs),
        judging: judging(cmp, runs),
        functions: function_pages(cmp),
        diff,
        columns: crate::run::ColumnNames::KILN,
        windows: windows
            .map(|o| window_profiles(cmp, runs, o))
            .unwrap_or_default(),
    };
    let labels: Vec<&str> = cmp.groups.iter().map(|g| g.label.as_str()).collect();
    let title = format!("kiln compare {}", labels.join(" vs "));
    // A flame graph timed from each measurement's start has that start for its origin: its
    // times read as the measurements' seconds.
    let origin = timed.as_ref().map(|_| 0);
    page::write(&title, "compare", &data, &viewers, origin, opts, out)
}

/// Each group's label and runs.
fn group_pages(cmp: &Comparison, runs: &[Vec<RunData>]) -> Vec<GroupPage> {
    cmp.groups
        .iter()
        .zip(runs)
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
                        load: m.load.to_string(),
                        target: format!("{} ({})", m.target.comm, m.target.exe),
                    }
                })
                .collect(),
        })
        .collect()
}

/// The figures' rows: each group's value, the changes and their verdicts.
fn metric_pages(cmp: &Comparison) -> Vec<MetricPage> {
    cmp.rows
        .iter()
        .map(|r| MetricPage {
            key: r.key,
            label: r.label.clone(),
            unit: r.unit,
            better: match r.better {
                kiln_compare::Better::Higher => "higher",
                kiln_compare::Better::Lower => "lower",
            },
            role: r.role,
            why: r.why.clone(),
            noise: (r.noise_pct > 0.0).then(|| format!("±{:.1}%", r.noise_pct)),
            cells: (0..r.groups.len())
                .map(|i| {
                    r.groups[i].as_ref().map(|s| Cell {
                        text: group_text(r, i),
                        median: s.median,
                        min: s.min,
                        max: s.max,
                        n: s.values.len(),
                        each: s
                            .values
                            .iter()
                            .map(|&v| kiln_compare::export::format_value(v, r.unit))
                            .collect(),
                        held: r.held[i].as_ref().map(|h| h.text()),
                    })
                })
                .collect(),
            changes: r
                .changes
                .iter()
                .map(|ch| {
                    ch.as_ref().map(|ch| ChangeCell {
                        percent: if ch.percent.is_finite() {
                            ch.percent
                        } else {
                            f64::MAX
                        },
                        text: match (&ch.paired, ch.percent.is_finite()) {
                            // Paired by round: the change with its interval.
                            (Some(pr), true) if pr.ci_pct.iter().all(|v| v.is_finite()) => {
                                format!(
                                    "{:+.1}% [{:+.1}, {:+.1}]",
                                    ch.percent, pr.ci_pct[0], pr.ci_pct[1]
                                )
                            }
                            (_, true) => format!("{:+.1}%", ch.percent),
                            (_, false) => "new".into(),
                        },
                        verdict: if r.role == Role::Outcome {
                            verdict_key(&ch.verdict)
                        } else {
                            "shown"
                        },
                        verdict_text: if r.role == Role::Outcome {
                            ch.verdict_text()
                        } else {
                            String::new()
                        },
                    })
                })
                .collect(),
        })
        .collect()
}

/// Latency distributions: each group's measurement histograms merged across repeats,
/// and how many stored histograms could not be read.
fn distributions(cmp: &Comparison, runs: &[Vec<RunData>]) -> (Vec<Distribution>, usize) {
    let mut distributions = Vec::new();
    let mut skipped = 0usize;
    for (gi, runs) in runs.iter().enumerate() {
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
    (distributions, skipped)
}

/// Every run's per-second series, on its own origin.
fn run_series(runs: &[Vec<RunData>]) -> Vec<RunSeries> {
    runs.iter()
        .enumerate()
        .flat_map(|(gi, runs)| {
            runs.iter().enumerate().map(move |(i, r)| {
                let o = origin_of(&r.meta, &r.series);
                let grid = kiln_store::seconds::grid(r);
                let load = r.series.iter().find(|t| t.name == columns::LOAD);
                let load_time = load.map_or(&[][..], |t| &t.time_ns[..]);
                RunSeries {
                    group: gi,
                    rate: r.meta.load.rate,
                    concurrency: r.meta.load.concurrency,
                    counted: Some(r.meta.load.completed.clone()).filter(|c| !c.is_empty()),
                    // Logs that cannot be read are counted by the distributions' note.
                    latency_seconds: latency::per_second(&r.histograms, load_time, o, &mut 0),
                    id: r.meta.id,
                    index: i,
                    tables: r.series.iter().map(|t| table(t, o)).collect(),
                    measure_end: r.meta.measure.end_ns as i64 - o as i64,
                    unit: if r.meta.load.unit.is_empty() {
                        "op".into()
                    } else {
                        r.meta.load.unit.clone()
                    },
                    // The load's own word for it, as the run's report takes it; older
                    // runs did not store it.
                    completed: Some(r.meta.load.completed.clone())
                        .filter(|c| !c.is_empty())
                        .or_else(|| completed_column(r)),
                    latency: r.meta.headline.latency.clone(),
                    cpus: r.meta.cpus,
                    ebpf: crate::run::bpf_table(r, &grid, o),
                    beam: beam_seconds(r, &grid, o),
                }
            })
        })
        .collect()
}

/// The rules, the runs' comparability and their pairing by round: a window's verdicts
/// on the page are decided from these and the runs' seconds.
fn judging(cmp: &Comparison, runs: &[Vec<RunData>]) -> Judging {
    let metas: Vec<(String, Vec<kiln_store::RunMeta>)> = cmp
        .groups
        .iter()
        .zip(runs)
        .map(|(g, rs)| (g.label.clone(), rs.iter().map(|r| r.meta.clone()).collect()))
        .collect();
    let rounds: Vec<Rounds> = metas
        .iter()
        .enumerate()
        .map(|(i, (_, m))| {
            if i == 0 {
                Rounds::Unpaired
            } else {
                kiln_compare::rounds(&metas[0].1, m)
            }
        })
        .collect();
    Judging {
        alpha: cmp.rules.alpha,
        threshold_pct: cmp.rules.threshold_pct,
        not_comparable: kiln_compare::not_comparable(&metas),
        paired: rounds
            .iter()
            .map(|r| match r {
                Rounds::Paired { experiment, pairs } => Some(PairedPage {
                    experiment: experiment.clone(),
                    pairs: pairs.clone(),
                }),
                _ => None,
            })
            .collect(),
        unmatched: rounds
            .iter()
            .map(|r| match r {
                Rounds::Unmatched(why) => Some(why.clone()),
                _ => None,
            })
            .collect(),
    }
}

/// The function tables.
fn function_pages(cmp: &Comparison) -> Vec<FunctionTablePage> {
    cmp.functions.iter().map(function_page).collect()
}

/// One function table.
fn function_page(t: &kiln_compare::FunctionTable) -> FunctionTablePage {
    FunctionTablePage {
        event: t.event.clone(),
        unit: t.unit.clone(),
        what: t.what.clone(),
        rows: t
            .rows
            .iter()
            .map(|f| FunctionPage {
                name: f.name.clone(),
                before: kiln_compare::export::cost_text(&f.before),
                after: kiln_compare::export::cost_text(&f.after),
                delta: f.delta(),
                verdict: verdict_key(&f.change.verdict),
                change: f.change.text(),
                total_before: f.total_before,
                total_after: f.total_after,
            })
            .collect(),
    }
}

/// The differential flame graph's two sides as the comparison merged them (each group's
/// runs' profiles of its event, in order), each sample timed from the start of its run's
/// measurement instead of on its run's clock, so that a window of the measurements' seconds
/// cuts them as `kiln compare NAME@START-END` cuts each run's profile (`time_slice` of the
/// window's [start, end)): a sample before the measurement or at or past its end is in no
/// window, and left untimed. With the shortest measurement's length, ns. None when the
/// runs' profiles are not the ones compared or none is timed.
fn timed_diff(cmp: &Comparison, runs: &[Vec<RunData>]) -> Option<(Profile, Profile, u64)> {
    let (b, _) = cmp.diff.as_ref()?;
    let event = &b.event.name;
    let side = |rs: &[RunData]| -> Option<Profile> {
        let mut out: Option<Profile> = None;
        for r in rs {
            let Some(p) = r.profiles.iter().find(|p| &p.event.name == event) else {
                continue;
            };
            let (start, end) = (r.meta.measure.start_ns, r.meta.measure.end_ns);
            let mut p = p.clone();
            for t in &mut p.samples.time {
                *t = if *t != NO_TIME && *t >= start && *t < end {
                    *t - start
                } else {
                    NO_TIME
                };
            }
            match &mut out {
                Some(o) => o.merge_from(&p),
                None => out = Some(p),
            }
        }
        out
    };
    let (tb, ta) = (side(&runs[0])?, side(&runs[runs.len() - 1])?);
    // The same samples as the comparison's sides, only timed otherwise.
    let (cb, ca) = cmp.diff.as_ref()?;
    if tb.samples.len() != cb.samples.len() || ta.samples.len() != ca.samples.len() {
        return None;
    }
    tb.samples.time_range()?;
    ta.samples.time_range()?;
    let shortest = runs
        .iter()
        .flatten()
        .map(|r| {
            r.meta
                .measure
                .end_ns
                .saturating_sub(r.meta.measure.start_ns)
        })
        .min()?;
    Some((tb, ta, shortest))
}

/// The differential flame graph of the first and last groups, and its viewer: of the
/// sides timed from each measurement's start when given (the page then shows a window's
/// samples in it).
fn diff_viewer<'a>(
    cmp: &'a Comparison,
    timed: Option<&'a (Profile, Profile, u64)>,
    opts: &ReportOptions,
) -> (Option<DiffInfo>, Vec<Viewer<'a>>) {
    let first = &cmp.groups[0].label;
    let last = &cmp.groups[cmp.groups.len() - 1].label;
    let mut viewers = Vec::new();
    let marked = cmp.marked();
    let diff = cmp.diff.as_ref().map(|(b, a)| {
        let title = format!("{first} → {last} ({})", a.event.name);
        let (b, a) = timed.map_or((b, a), |(tb, ta, _)| (tb, ta));
        let mut viewer = Viewer::diff(
            "diff".into(),
            (b, a),
            title.clone(),
            (first.clone(), last.clone()),
            vec![format!("runs '{first}'"), format!("runs '{last}'")],
            marked.as_ref().map(|m| {
                m.iter()
                    .map(|n| String::from_utf8_lossy(n).into_owned())
                    .collect()
            }),
            opts,
        );
        viewer.opts.instants = timed.is_some();
        viewers.push(viewer);
        DiffInfo {
            key: "diff".into(),
            event: a.event.name.clone(),
            title,
            marked: marked.is_some(),
            windows_below_ns: timed.map(|t| t.2),
        }
    });
    (diff, viewers)
}

fn verdict_word(c: &Comparison) -> &'static str {
    use kiln_compare::OverallVerdict as O;
    match c.overall.verdict {
        O::Improved => "improved",
        O::Regressed => "regressed",
        O::Mixed => "mixed",
        O::NoChange => "no_change",
        O::CannotTell => "cannot_tell",
    }
}
