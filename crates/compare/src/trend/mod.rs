//! `kiln runs trend`: the history of one configuration — each judged figure's series over
//! the runs in time order, where it changed (E-divisive means with a permutation test,
//! [`edivisive`]), and which functions moved with each change.
//!
//! One computed value, [`Report`], holds everything; text, Markdown and JSON
//! ([`export`]) render it. A change point is given as the first run after it, the medians
//! of the segments on either side, the change between them and the test's p; a change
//! smaller than `--threshold` (or than the figure's resolution) is counted, not listed.
//! The functions come from [`crate::functions`]' table of the runs just before
//! against the runs just after ([`Trend::profile_windows`]): only their profiles are read.
//!
//! `--fail-if` ([`Trend::check`]) fires when the newest segment — the runs since the last
//! change point listed, 3 at least — is past its limit against the runs between it and
//! the change point before ([`Baseline::Previous`]), or against the first segment, the
//! runs before the first change point ([`Baseline::First`]: a regression made of steps
//! each under the limit fires too): a single noisy run at the end starts no segment and
//! fires nothing.
use crate::figures::{self, Better, Held, Role, FIGURES};
use crate::functions;
use crate::gate::{Gate, GateResult, GateStatus};
use crate::stats::{median, percent_change};
use crate::{format_value, Rules};
use kiln_model::Profile;
use kiln_store::RunMeta;
use serde::Serialize;
use std::ops::Range;

pub mod edivisive;
pub mod export;

/// What the newest segment is judged against by a relative `--fail-if` limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Baseline {
    /// The segment before it (the runs back to the change point before): each step is
    /// judged on its own.
    #[default]
    Previous,
    /// The first segment (the runs before the first change point): the whole drift since
    /// the history began, so that steps each under the limit add up.
    First,
}

/// Runs on each side of a change point whose profiles are compared.
pub const PROFILE_WINDOW: usize = 5;

/// What a trend computes.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The permutation test's alpha and the smallest change listed (`--threshold`).
    pub rules: Rules,
    /// Functions named per change point (0: no profile is read).
    pub functions: usize,
}

/// Runs of the name that are not in the trend, and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LeftOut {
    /// Runs of other configurations (not shown: `--all-configs` shows each).
    pub other_configurations: usize,
    /// How many other configurations those are.
    pub configurations: usize,
    /// Runs without every `--tag` asked for.
    pub untagged: usize,
    /// Incomplete runs (stopped early, a load that failed).
    pub incomplete: usize,
    /// Damaged runs (`kiln runs check` lists them).
    pub damaged: usize,
    /// Runs older than the newest `--last` of their configuration.
    pub older: usize,
}

impl LeftOut {
    /// What was left out, in words (`None`: nothing).
    pub fn text(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.other_configurations > 0 {
            parts.push(format!(
                "{} run(s) of {} other configuration(s) (--all-configs shows each)",
                self.other_configurations, self.configurations
            ));
        }
        if self.older > 0 {
            parts.push(format!("{} older run(s) (--last shows more)", self.older));
        }
        if self.untagged > 0 {
            parts.push(format!(
                "{} run(s) without the tags asked for",
                self.untagged
            ));
        }
        if self.incomplete > 0 {
            parts.push(format!("{} incomplete run(s)", self.incomplete));
        }
        if self.damaged > 0 {
            parts.push(format!(
                "{} damaged run(s) (kiln runs check lists them)",
                self.damaged
            ));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// Everything `kiln runs trend` says.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The name whose runs were read.
    pub name: String,
    /// The method and its settings.
    pub method: Method,
    /// One trend per configuration shown (the newest run's, or each).
    pub configurations: Vec<Trend>,
    /// Runs not shown.
    pub left_out: LeftOut,
    /// `--fail-if` results, for the newest configuration shown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<GateResult>,
    /// Whether the profiles around change points were read (the functions that moved).
    #[serde(skip)]
    pub functions: bool,
}

/// How change points were found.
#[derive(Clone, Debug, Serialize)]
pub struct Method {
    /// In words.
    pub name: &'static str,
    /// Largest p kept.
    pub alpha: f64,
    /// Shuffles of the permutation test.
    pub permutations: usize,
    /// Fewest runs in a segment.
    pub min_segment: usize,
    /// Smallest change listed, percent of the earlier segment's median.
    pub threshold_pct: f64,
}

impl Method {
    /// The method for `rules`.
    pub fn of(rules: &Rules) -> Method {
        let o = edivisive::Options::for_alpha(rules.alpha);
        Method {
            name: "E-divisive means, permutation test",
            alpha: rules.alpha,
            permutations: o.permutations,
            min_segment: o.min_size,
            threshold_pct: rules.threshold_pct,
        }
    }
}

/// A run of a trend.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// Its id.
    pub id: i64,
    /// Its start, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// Its group of `--repeat` runs.
    pub group: String,
}

/// The runs of one configuration and their figures.
#[derive(Clone, Debug, Serialize)]
pub struct Trend {
    /// What the runs share: the load, the target, the host, the tags.
    pub configuration: String,
    /// The runs, oldest first.
    pub runs: Vec<Point>,
    /// Each judged figure's series.
    pub figures: Vec<Series>,
    /// The profiles either side of each listed change point, merged per side (the
    /// differential flame graphs of the page), one per distinct pair of windows.
    #[serde(skip)]
    pub diffs: Vec<WindowDiff>,
}

/// The profiles of the runs either side of a change point, each side's merged: the
/// differential flame graph of the two windows, from which its movers were named.
#[derive(Clone, Debug)]
pub struct WindowDiff {
    /// The runs of each side ([`Trend::profile_windows`]).
    pub windows: (Range<usize>, Range<usize>),
    /// The event compared.
    pub event: String,
    /// The runs before, merged.
    pub before: Profile,
    /// The runs after, merged.
    pub after: Profile,
    /// The functions whose change is beyond noise (the only ones coloured); `None` when a
    /// side has one run, so that nothing can be told from noise.
    pub marked: Option<Vec<String>>,
}

/// What [`movers`] finds between two windows: the functions that moved and the merged
/// profiles they were judged on.
#[derive(Clone, Debug)]
pub struct Moved {
    /// The functions that moved beyond noise, largest first.
    pub movers: Vec<Mover>,
    /// The runs before, merged.
    pub before: Profile,
    /// The runs after, merged.
    pub after: Profile,
    /// The functions beyond noise, or `None` with one run on a side.
    pub marked: Option<Vec<String>>,
}

/// One figure over the runs.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// Key, as `--fail-if` names it.
    pub key: &'static str,
    /// Label, with the load's unit.
    pub label: String,
    /// Unit.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// Its value in each run (in the order of [`Trend::runs`]; `null`: not measured).
    pub values: Vec<Option<f64>>,
    /// Its segments, oldest first: between change points, significant or not listed.
    pub segments: Vec<SegmentInfo>,
    /// The change points listed (at or past the threshold).
    pub change_points: Vec<Shift>,
    /// Significant change points smaller than the threshold or the figure's resolution.
    pub below_threshold: usize,
}

/// A stretch of runs between change points.
#[derive(Clone, Debug, Serialize)]
pub struct SegmentInfo {
    /// Index of its first run in [`Trend::runs`].
    pub first: usize,
    /// Its runs with a value.
    pub runs: usize,
    /// Median of its values.
    pub median: f64,
}

/// A change point of a figure.
#[derive(Clone, Debug, Serialize)]
pub struct Shift {
    /// Index of the first run after it in [`Trend::runs`].
    pub index: usize,
    /// That run's id.
    pub run: i64,
    /// Its start.
    pub started_unix_ms: i64,
    /// Median of the segment before.
    pub before: f64,
    /// Median of the segment after.
    pub after: f64,
    /// Change of the median, percent.
    pub percent: f64,
    /// The permutation test's p.
    pub p: f64,
    /// `regressed` or `improved`.
    pub verdict: &'static str,
    /// Runs compared on each side for the functions ([`Trend::profile_windows`]).
    #[serde(skip)]
    pub windows: (Range<usize>, Range<usize>),
    /// The functions that moved beyond noise, largest first (empty when profiles were not
    /// read, or none moved).
    pub functions: Vec<Mover>,
    /// The machine's other work changed with it (its runs either side): the change may be
    /// the machine's, not the configuration's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineShift>,
}

/// CPUs the machine spent on work other than the target, kiln and the load command, the
/// median of the runs on each side of a change point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MachineShift {
    /// Before, CPUs.
    pub before_cpus: f64,
    /// After, CPUs.
    pub after_cpus: f64,
}

/// The change of the machine's other work, CPUs, past which a change point says so.
pub const MACHINE_SHIFT_CPUS: f64 = 0.25;

/// CPUs the machine spent on other work during run `r`'s measurement: its busy share of
/// all its CPUs, less the target's, kiln's and the load command's CPU.
fn other_cpus(r: &RunMeta) -> Option<f64> {
    let secs = r.measure.seconds();
    let h = &r.headline;
    if secs <= 0.0 {
        return None;
    }
    let busy = h.machine_busy_pct? / 100.0 * f64::from(r.cpus.max(1));
    let ours =
        h.target_cpu_s.unwrap_or(0.0) + h.kiln_cpu_s.unwrap_or(0.0) + h.load_cpu_s.unwrap_or(0.0);
    Some((busy - ours / secs).max(0.0))
}

/// The machine's other work either side of a change point, when it changed by
/// [`MACHINE_SHIFT_CPUS`] or more.
fn machine_shift(
    runs: &[RunMeta],
    (before, after): &(Range<usize>, Range<usize>),
) -> Option<MachineShift> {
    let side = |r: &Range<usize>| -> Option<f64> {
        let v: Vec<f64> = runs[r.clone()].iter().filter_map(other_cpus).collect();
        median(&v)
    };
    let (b, a) = (side(before)?, side(after)?);
    ((a - b).abs() >= MACHINE_SHIFT_CPUS).then_some(MachineShift {
        before_cpus: b,
        after_cpus: a,
    })
}

/// A function that moved at a change point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mover {
    /// The function.
    pub name: String,
    /// Share of the profile in it and its callees before, %.
    pub before_pct: f64,
    /// The same after.
    pub after_pct: f64,
    /// The change, percentage points.
    pub points: f64,
    /// The change of its cost (per operation, or share of the profile), percent.
    pub cost_pct: f64,
    /// `regressed` or `improved` (its cost per operation, or share).
    pub verdict: &'static str,
}

/// The figures a trend judges for `runs` (one configuration): those `kiln compare`
/// would judge between two groups of them — outcomes, and throughput when the rate was
/// not set or not held.
fn judged(runs: &[RunMeta]) -> Vec<&'static figures::Figure> {
    let rate = figures::set_rate(runs);
    let counted = runs.iter().any(|r| r.headline.throughput.is_some());
    let throughput: Vec<f64> = runs.iter().filter_map(|r| r.headline.throughput).collect();
    let held = match (rate, median(&throughput)) {
        (Some(r), Some(m)) => Held::of(r, m).held,
        _ => true,
    };
    FIGURES
        .iter()
        .filter(|f| figures::role(f.kind, rate, rate, (held, held), counted).0 == Role::Outcome)
        .collect()
}

/// The trend of `runs` (one configuration, oldest first).
pub fn analyze(runs: &[RunMeta], rules: &Rules) -> Trend {
    let op = runs
        .iter()
        .map(|r| r.load.unit.as_str())
        .find(|u| !u.is_empty())
        .unwrap_or("op");
    let opts = edivisive::Options::for_alpha(rules.alpha);
    let mut series = Vec::new();
    for f in judged(runs) {
        let values: Vec<Option<f64>> = runs
            .iter()
            .map(|r| (f.get)(r).filter(|v| v.is_finite()))
            .collect();
        // The runs that measured it, and their values.
        let (at, x): (Vec<usize>, Vec<f64>) = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((i, (*v)?)))
            .unzip();
        if x.is_empty() {
            continue;
        }
        let cps = edivisive::change_points(&x, &opts);
        let mut bounds: Vec<usize> = vec![0];
        bounds.extend(cps.iter().map(|c| c.index));
        bounds.push(x.len());
        let segments: Vec<SegmentInfo> = bounds
            .windows(2)
            .map(|w| SegmentInfo {
                first: at[w[0]],
                runs: w[1] - w[0],
                median: median(&x[w[0]..w[1]]).unwrap_or(f64::NAN),
            })
            .collect();
        let (mut listed, mut below) = (Vec::new(), 0);
        for (k, c) in cps.iter().enumerate() {
            let (b, a) = (segments[k].median, segments[k + 1].median);
            let percent = percent_change(b, a);
            if percent.abs() < rules.threshold_pct || (a - b).abs() < f.resolution {
                below += 1;
                continue;
            }
            let worse = match f.better {
                Better::Lower => a > b,
                Better::Higher => a < b,
            };
            let i = at[c.index];
            let from = at[bounds[k].max(c.index.saturating_sub(PROFILE_WINDOW))];
            let to = at[bounds[k + 2].min(c.index + PROFILE_WINDOW) - 1] + 1;
            let windows = (from..i, i..to);
            listed.push(Shift {
                index: i,
                run: runs[i].id.unwrap_or(0),
                started_unix_ms: runs[i].started_unix_ms,
                before: b,
                after: a,
                percent,
                p: c.p,
                verdict: if worse { "regressed" } else { "improved" },
                machine: machine_shift(runs, &windows),
                windows,
                functions: Vec::new(),
            });
        }
        series.push(Series {
            key: f.key,
            label: f.label.replace("{op}", op),
            unit: f.unit,
            better: f.better,
            values,
            segments,
            change_points: listed,
            below_threshold: below,
        });
    }
    Trend {
        configuration: describe(runs.last()),
        runs: runs
            .iter()
            .map(|r| Point {
                id: r.id.unwrap_or(0),
                started_unix_ms: r.started_unix_ms,
                group: r.group.clone(),
            })
            .collect(),
        figures: series,
        diffs: Vec::new(),
    }
}

/// A configuration in words: the load, the target and the host, the tags.
fn describe(r: Option<&RunMeta>) -> String {
    let Some(r) = r else {
        return String::new();
    };
    let mut s = format!("{} · {} on {}", r.load, r.target.exe, r.host);
    if !r.tags.is_empty() {
        let tags: Vec<String> = r.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        s.push_str(&format!(" · {}", tags.join(" ")));
    }
    kiln_model::text::clean(&s).into_owned()
}

impl Trend {
    /// The runs whose profiles each listed change point compares (up to
    /// [`PROFILE_WINDOW`] on each side, within its segments), distinct, in order.
    pub fn profile_windows(&self) -> Vec<(Range<usize>, Range<usize>)> {
        let mut out: Vec<(Range<usize>, Range<usize>)> = Vec::new();
        for s in self.figures.iter().flat_map(|f| &f.change_points) {
            if !out.contains(&s.windows) {
                out.push(s.windows.clone());
            }
        }
        out
    }

    /// Gives what moved between `windows` (of `event`) to every change point comparing
    /// them, and keeps the merged profiles as their differential flame graph.
    pub fn set_moved(&mut self, windows: &(Range<usize>, Range<usize>), event: &str, moved: Moved) {
        for s in self.figures.iter_mut().flat_map(|f| &mut f.change_points) {
            if &s.windows == windows {
                s.functions = moved.movers.clone();
            }
        }
        self.diffs.push(WindowDiff {
            windows: windows.clone(),
            event: event.to_string(),
            before: moved.before,
            after: moved.after,
            marked: moved.marked,
        });
    }

    /// The listed change points (figure key, first run after it) whose windows are
    /// `windows`.
    pub fn change_points_of(
        &self,
        windows: &(Range<usize>, Range<usize>),
    ) -> Vec<(&'static str, i64)> {
        self.figures
            .iter()
            .flat_map(|f| f.change_points.iter().map(move |s| (f, s)))
            .filter(|(_, s)| &s.windows == windows)
            .map(|(f, s)| (f.key, s.run))
            .collect()
    }

    /// The outcome of each `--fail-if` condition for the newest runs, a relative limit
    /// judged against `baseline`.
    pub fn check(&self, gates: &[Gate], baseline: Baseline) -> Vec<GateResult> {
        gates.iter().map(|g| self.check_one(g, baseline)).collect()
    }

    fn check_one(&self, g: &Gate, baseline: Baseline) -> GateResult {
        let done = |status, message: String| GateResult {
            condition: g.text.clone(),
            status,
            message,
        };
        let Some(s) = self.figures.iter().find(|s| s.key == g.figure.key) else {
            return done(
                GateStatus::CannotTell,
                format!(
                    "the runs do not measure {}, or it is not judged in this configuration",
                    g.figure.label
                ),
            );
        };
        let past = |v: f64| if g.greater { v > g.limit } else { v < g.limit };
        // The listed change points only: a smaller one is no change (--threshold).
        let values =
            |r: Range<usize>| -> Vec<f64> { s.values[r].iter().flatten().copied().collect() };
        let cps = &s.change_points;
        let since = cps.last().map_or(0, |c| c.index);
        let newest = values(since..s.values.len());
        let shown = format_value(median(&newest).unwrap_or(f64::NAN), s.unit);
        if !g.relative {
            let m = median(&newest).unwrap_or(f64::NAN);
            return if past(m) {
                done(
                    GateStatus::Fired,
                    format!(
                        "{} is {shown} (median of the newest {} runs, since the last change point)",
                        s.label,
                        newest.len()
                    ),
                )
            } else {
                done(GateStatus::Passed, format!("{} is {shown}", s.label))
            };
        }
        let min = edivisive::MIN_SEGMENT;
        let Some(last) = cps.last() else {
            let n = newest.len();
            return if n < 2 * min {
                done(
                    GateStatus::CannotTell,
                    format!(
                        "{}: {n} runs, too few for a change point ({} or more)",
                        s.label,
                        2 * min
                    ),
                )
            } else {
                done(
                    GateStatus::Passed,
                    format!(
                        "{}: no change point in {n} runs (median {shown}; the newest runs start no segment)",
                        s.label
                    ),
                )
            };
        };
        let (from, to, against) = match baseline {
            Baseline::Previous => (
                cps.len().checked_sub(2).map_or(0, |k| cps[k].index),
                last.index,
                "",
            ),
            Baseline::First => (
                0,
                cps[0].index,
                " against the first runs, before any change",
            ),
        };
        let before = median(&values(from..to)).unwrap_or(f64::NAN);
        let after = median(&newest).unwrap_or(f64::NAN);
        let pct = percent_change(before, after);
        let said = format!(
            "{} {pct:+.1}% from run #{} on ({} → {shown}, the newest {} runs{against})",
            s.label,
            last.run,
            format_value(before, s.unit),
            newest.len()
        );
        if past(pct) {
            done(GateStatus::Fired, said)
        } else {
            done(GateStatus::Passed, said)
        }
    }
}

/// The functions that moved between the runs `before` and `after` (each a run and its
/// profile of one event), judged as `kiln compare` judges them: those beyond noise,
/// largest first, at most `limit`; with the merged profiles they were judged on (`None`
/// when a side has no profile).
pub fn movers(
    event: &str,
    before: &[(&RunMeta, &Profile)],
    after: &[(&RunMeta, &Profile)],
    rules: &Rules,
    limit: usize,
) -> Option<Moved> {
    let op = before
        .iter()
        .map(|(r, _)| r.load.unit.as_str())
        .find(|u| !u.is_empty())
        .unwrap_or("op");
    let (t, mb, ma) = functions::table(event, before, after, rules, usize::MAX, op)?;
    let mut moved: Vec<Mover> = t
        .rows
        .iter()
        .filter(|r| r.change.verdict.is_change())
        .map(|r| Mover {
            name: r.name.clone(),
            before_pct: r.total_before,
            after_pct: r.total_after,
            points: r.total_after - r.total_before,
            cost_pct: r.change.percent,
            verdict: r.change.verdict.word(),
        })
        .collect();
    // What moved in the profile first: a function under every sample (main) costs more
    // per operation whenever anything does, and its share stays 100%.
    moved.sort_by(|a, b| b.points.abs().total_cmp(&a.points.abs()));
    moved.truncate(limit);
    // As kiln compare colours its differential flame graph: only beyond noise, when
    // noise can be told (repeats on both sides).
    let repeats = before.len() > 1 && after.len() > 1;
    Some(Moved {
        movers: moved,
        before: mb,
        after: ma,
        marked: repeats.then_some(t.beyond_noise),
    })
}

/// The event whose functions a trend compares: CPU when every run recorded it, else the
/// first event they all have.
pub fn event_of(profiles: &[&[Profile]]) -> Option<String> {
    let first = profiles.first()?;
    let common: Vec<&str> = first
        .iter()
        .map(|p| p.event.name.as_str())
        .filter(|e| {
            profiles
                .iter()
                .all(|ps| ps.iter().any(|p| p.event.name == *e))
        })
        .collect();
    common
        .iter()
        .find(|e| **e == "cpu-clock" || **e == "task-clock")
        .or(common.first())
        .map(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_gates;
    use kiln_store::Headline;

    /// A run at a fixed rate of 1000 msg/s, held, with this CPU per message.
    fn run(id: i64, cpu_per_op: f64) -> RunMeta {
        let mut m = RunMeta {
            id: Some(id),
            started_unix_ms: 1_795_449_600_000 + id * 60_000,
            headline: Headline {
                throughput: Some(1000.0),
                cpu_per_op_us: Some(cpu_per_op),
                ..Default::default()
            },
            ..Default::default()
        };
        m.status.complete = true;
        m.load.rate = Some(1000.0);
        m.load.unit = "msg".into();
        m
    }

    /// Runs with `levels` of CPU per message, a little noise around each.
    fn runs(levels: &[(usize, f64)]) -> Vec<RunMeta> {
        let mut rng = edivisive::SplitMix(5);
        let mut out = Vec::new();
        for &(n, level) in levels {
            for _ in 0..n {
                let id = out.len() as i64 + 1;
                out.push(run(id, level * (1.0 + 0.02 * rng.normal())));
            }
        }
        out
    }

    fn rules() -> Rules {
        Rules {
            alpha: 0.05,
            threshold_pct: 5.0,
        }
    }

    fn gate(t: &Trend, spec: &str) -> GateStatus {
        t.check(&parse_gates(spec).unwrap(), Baseline::Previous)[0].status
    }

    #[test]
    fn steps_each_under_the_limit_fire_against_the_first_runs() {
        // +8% then +7.4%: each step under 10%, +16% in all.
        let t = analyze(&runs(&[(12, 50.0), (12, 54.0), (12, 58.0)]), &rules());
        let cps = &t.figures[0].change_points;
        assert_eq!(cps.len(), 2, "{cps:?}");
        let gates = parse_gates("cpu_per_msg>+10%").unwrap();
        let previous = &t.check(&gates, Baseline::Previous)[0];
        assert_eq!(previous.status, GateStatus::Passed, "{}", previous.message);
        let first = &t.check(&gates, Baseline::First)[0];
        assert_eq!(first.status, GateStatus::Fired, "{}", first.message);
        assert!(
            first.message.contains("against the first runs"),
            "{}",
            first.message
        );
    }

    #[test]
    fn a_step_is_a_change_point_of_its_figure_only() {
        let t = analyze(&runs(&[(20, 50.0), (10, 60.0)]), &rules());
        let keys: Vec<&str> = t.figures.iter().map(|f| f.key).collect();
        // The rate was set and held: throughput is a setting, not judged.
        assert_eq!(keys, ["cpu_per_op"]);
        let cps = &t.figures[0].change_points;
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert!(cps[0].index.abs_diff(20) <= 1);
        assert_eq!(cps[0].run, t.runs[cps[0].index].id);
        assert_eq!(cps[0].verdict, "regressed");
        assert!((cps[0].percent - 20.0).abs() < 5.0, "{}", cps[0].percent);
        let (before, after) = &cps[0].windows;
        assert_eq!(
            (before.len(), after.len()),
            (PROFILE_WINDOW, PROFILE_WINDOW)
        );
        assert_eq!(before.end, after.start);
        assert_eq!(gate(&t, "cpu_per_msg>+10%"), GateStatus::Fired);
        assert_eq!(gate(&t, "cpu_per_msg>+30%"), GateStatus::Passed);
        assert_eq!(gate(&t, "cpu_per_msg>55"), GateStatus::Fired);
        assert_eq!(gate(&t, "p99>+10%"), GateStatus::CannotTell, "not measured");
    }

    #[test]
    fn one_run_out_of_line_at_the_end_fires_nothing() {
        let mut r = runs(&[(20, 50.0)]);
        r.push(run(21, 80.0));
        let t = analyze(&r, &rules());
        assert!(t.figures[0].change_points.is_empty());
        assert_eq!(gate(&t, "cpu_per_msg>+10%"), GateStatus::Passed);
        // Three runs are a segment.
        r.extend([run(22, 80.0), run(23, 80.0)]);
        let t = analyze(&r, &rules());
        assert_eq!(t.figures[0].change_points.len(), 1);
        assert_eq!(gate(&t, "cpu_per_msg>+10%"), GateStatus::Fired);
    }

    #[test]
    fn a_change_with_the_machines_other_work_says_so() {
        // 2 CPUs; the target uses 0.5 of one, kiln 0.1; other work 1.2 CPUs, then 0.2.
        let with = |mut r: RunMeta, other: f64| {
            r.cpus = 2;
            r.measure = kiln_store::Window {
                name: "measure".into(),
                start_ns: 0,
                end_ns: 10_000_000_000,
            };
            r.headline.target_cpu_s = Some(5.0);
            r.headline.kiln_cpu_s = Some(1.0);
            r.headline.machine_busy_pct = Some((0.6 + other) / 2.0 * 100.0);
            r
        };
        let mut r = runs(&[(20, 50.0), (10, 60.0)]);
        for (i, x) in r.iter_mut().enumerate() {
            *x = with(x.clone(), if i < 20 { 1.2 } else { 0.2 });
        }
        let t = analyze(&r, &rules());
        let m = t.figures[0].change_points[0]
            .machine
            .clone()
            .expect("the machine changed");
        assert!(
            (m.before_cpus - 1.2).abs() < 1e-9 && (m.after_cpus - 0.2).abs() < 1e-9,
            "{m:?}"
        );
        // The same step on a machine whose other work held: nothing said.
        for x in r.iter_mut() {
            *x = with(x.clone(), 1.0);
        }
        let t = analyze(&r, &rules());
        assert_eq!(t.figures[0].change_points[0].machine, None);
    }

    #[test]
    fn small_changes_are_counted_not_listed_nor_gated() {
        let t = analyze(&runs(&[(20, 50.0), (20, 51.5)]), &rules());
        let f = &t.figures[0];
        assert!(f.change_points.is_empty(), "{:?}", f.change_points);
        assert_eq!(f.below_threshold, f.segments.len() - 1);
        assert_eq!(gate(&t, "cpu_per_msg>+1%"), GateStatus::Passed);
        let few = analyze(&runs(&[(4, 50.0)]), &rules());
        assert_eq!(gate(&few, "cpu_per_msg>+1%"), GateStatus::CannotTell);
    }
}
