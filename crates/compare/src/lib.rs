//! # kiln-compare: stored runs side by side, and how sure kiln is
//!
//! Everything kiln says about runs once they are stored lives here, apart from running
//! them (`kiln-run`, which needs none of it) and drawing them (`kiln-report`, which
//! renders what this crate computes). It reads only what the run store keeps
//! ([`kiln_store`]): profiles ([`kiln_model`]) and their differences ([`kiln_diff`]),
//! headline figures, per-second series and latency histograms.
//!
//! * `kiln compare` ([`compare()`]): runs, or groups of repeated runs, side by side —
//!   what changed, and how sure kiln is;
//! * a run seen through one of its windows ([`window`], kept in the store so that the run,
//!   the findings and the report compute a window's figures with the same rule): a sweep
//!   step or a span of seconds, its headline figures computed again from the run's
//!   per-second data;
//! * a sweep's steps and its knee, explained by comparing the windows either side of it
//!   ([`sweep`]);
//! * `kiln runs trend` ([`trend`]): one configuration's history, its change points and the
//!   functions that moved with them.
//!
//! One computed value, [`Comparison`], holds everything a comparison says; text,
//! Markdown and JSON ([`export`]) and the HTML page (`kiln-report`) are exporters of it,
//! as hyperfine's `BenchmarkResult` is rendered by each of its `Exporter`s. Nothing is
//! decided twice:
//!
//! * [`figures`]: what each figure is in this comparison — a *setting* (a fixed rate,
//!   held or not held; a concurrency), an *outcome* judged with a direction, or *context*
//!   (shown, never judged);
//! * [`stats`]: medians, spreads and the exact Mann-Whitney test; for the variants of
//!   one interleaved experiment ([`rounds`]), the signed-rank test of the rounds' ratios
//!   and their Hodges–Lehmann interval;
//! * [`verdict`]: improved / regressed / no change / cannot tell (and why), from
//!   `--alpha` and `--threshold`;
//! * [`functions`]: the function table, each function judged like a figure from its
//!   cost per operation in every run; [`nodes`], one per host of a fleet's run;
//! * [`gate`]: `--fail-if`, firing only on a change past its limit and beyond noise.
//!
//! ```text
//! kiln compare before after
//! kiln compare base pr --fail-if 'p99>+10%,cpu_per_op>+5%'
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use kiln_model::Profile;
use kiln_store::RunMeta;
use serde::Serialize;
use std::collections::HashSet;

pub mod export;
pub mod figures;
pub mod findings;
pub mod functions;
pub mod gate;
pub mod nodes;
pub mod stats;
pub mod sweep;
pub mod trend;
pub mod verdict;
/// A run seen through one of its windows (kept in the store, beside the run it reads).
pub use kiln_store::window;

pub use export::{format_value, md_escape, Exporter, Format};
pub use figures::{figure, Better, Figure, Held, Role, FIGURES};
pub use functions::{FunctionRow, FunctionTable};
pub use gate::{check_gates, parse_gates, Gate, GateResult, GateStatus};
/// What makes runs the same configuration: the store's rule, the key it keeps beside each
/// run ([`kiln_store::Select::Config`] finds the runs of one).
pub use kiln_store::configuration;
pub use stats::{mann_whitney, smallest_group, smallest_p, Stat};
pub use verdict::{Change, Paired, Quiet, Rules, Unsure, Verdict};

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    /// Fewer than two groups.
    #[error("a comparison needs at least two runs or groups of runs")]
    TooFew,
    /// A group without runs.
    #[error("'{0}' names no runs")]
    Empty(String),
    /// The event asked for is not in both groups.
    #[error("the runs do not both have a profile of event '{0}'")]
    NoEvent(String),
}

/// A group of runs to compare: what it was named by, its runs, and each run's profiles
/// (one per event; transforms applied; empty when the function table is not wanted).
#[derive(Clone, Debug, Default)]
pub struct Group {
    /// The reference it was given as (`before`, `sweep@20000`).
    pub label: String,
    /// Its runs.
    pub runs: Vec<RunMeta>,
    /// Each run's profiles, in the order of `runs`.
    pub profiles: Vec<Vec<Profile>>,
    /// Each run's findings, in the order of `runs` (empty when not computed).
    pub findings: Vec<kiln_findings::Findings>,
}

/// What a comparison computes beyond the rules.
#[derive(Clone, Debug)]
pub struct Options {
    /// `--alpha` and `--threshold`.
    pub rules: Rules,
    /// Rows of each function table (0: no table). Default: 15.
    pub functions: usize,
    /// The event whose functions to compare; default: CPU, and off-CPU when both groups
    /// recorded it.
    pub event: Option<String>,
    /// Earlier groups of the baseline's name and configuration ([`configuration`]): how
    /// far they moved from it is each figure's noise floor between groups, which a change
    /// must clear. Default: none.
    pub history: Vec<Vec<RunMeta>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rules: Rules::default(),
            functions: 15,
            event: None,
            history: Vec::new(),
        }
    }
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
    /// The rate its runs were set to, when they agree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_rate: Option<f64>,
}

/// One figure across the groups.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Key (`p99`), as `--fail-if` names it.
    pub key: &'static str,
    /// Label, with the load's unit (`target CPU per msg`).
    pub label: String,
    /// Unit.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// Setting, outcome or context (first group against the last).
    pub role: Role,
    /// Why it is a setting or context, when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Values per group.
    pub groups: Vec<Option<Stat>>,
    /// Whether each group held its set rate (rate rows of fixed-rate loads).
    pub held: Vec<Option<Held>>,
    /// Change per group against the first (`None` for the first); a verdict for
    /// outcomes only.
    pub changes: Vec<Option<Change>>,
    /// The noise within groups: half the range of the noisiest group, percent of its
    /// median (0 when no group has repeats).
    pub noise_pct: f64,
    /// The noise floor between groups, from the baseline's history.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<verdict::Floor>,
}

/// The overall result, one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OverallVerdict {
    /// Some outcome improved, none regressed.
    Improved,
    /// Some outcome regressed, none improved.
    Regressed,
    /// Some improved, some regressed.
    Mixed,
    /// Every outcome judged is unchanged.
    NoChange,
    /// Nothing changed beyond noise, and some outcome cannot be told.
    CannotTell,
}

/// The line at the top of every rendering.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Overall {
    /// The word.
    pub verdict: OverallVerdict,
    /// The sentence: `after against before: regressed. worse: target CPU per msg +14.0%
    /// (p=0.008); no change: latency p99; rate 25.0k/s held in both`.
    pub line: String,
}

/// The whole comparison: what every exporter renders.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The groups, the first being the baseline.
    pub groups: Vec<GroupInfo>,
    /// The rules the verdicts were decided by.
    pub rules: Rules,
    /// The overall result, last group against the first.
    pub overall: Overall,
    /// The figures.
    pub rows: Vec<Row>,
    /// Function tables (CPU, and off-CPU when both groups have it), first against last.
    pub functions: Vec<FunctionTable>,
    /// The causes the findings name, first group against the last: new, gone, moved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<findings::FindingChange>,
    /// What the reader must know: comparability, repeats, incomplete runs, A/A.
    pub notes: Vec<String>,
    /// `--fail-if` results, once checked ([`Comparison::check`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<GateResult>,
    /// The first function table's profiles, first and last group merged: the
    /// differential flame graph's input.
    #[serde(skip)]
    pub diff: Option<(Profile, Profile)>,
}

impl Comparison {
    /// Checks `gates` (kept in the comparison for the exporters) and returns the worst
    /// outcome.
    pub fn check(&mut self, gates: &[Gate]) -> GateStatus {
        self.gates = check_gates(self, gates);
        gate::overall(&self.gates)
    }

    /// Functions whose change is beyond noise in the first table, for the differential
    /// flame graph; `None` (colour every frame) when the groups have no repeats, so that
    /// nothing can be told from noise.
    pub fn marked(&self) -> Option<HashSet<Vec<u8>>> {
        let t = self.functions.first()?;
        let repeats = t
            .rows
            .first()
            .is_some_and(|r| r.before.n() > 1 && r.after.n() > 1);
        repeats.then(|| {
            t.beyond_noise
                .iter()
                .map(|n| n.as_bytes().to_vec())
                .collect()
        })
    }

    /// The first group's label and the last's.
    pub fn ends(&self) -> (&str, &str) {
        (
            self.groups.first().map_or("", |g| g.label.as_str()),
            self.groups.last().map_or("", |g| g.label.as_str()),
        )
    }
}

/// The unit of one operation of the runs (`msg`, `req`), `op` when unknown.
fn op_unit(groups: &[Group]) -> String {
    groups
        .iter()
        .flat_map(|g| &g.runs)
        .map(|r| r.load.unit.as_str())
        .find(|u| !u.is_empty())
        .unwrap_or("op")
        .to_string()
}

/// Compares groups of runs; the first is the baseline.
pub fn compare(groups: &[Group], opts: &Options) -> Result<Comparison, CompareError> {
    if groups.len() < 2 {
        return Err(CompareError::TooFew);
    }
    if let Some(g) = groups.iter().find(|g| g.runs.is_empty()) {
        return Err(CompareError::Empty(g.label.clone()));
    }
    let set = Setting::of(groups, opts);
    let rows: Vec<Row> = FIGURES.iter().filter_map(|f| set.row(f)).collect();
    let (functions, diff) = function_tables(&groups[0], &groups[set.last], opts, &set.op)?;
    let notes = set.notes(&functions);
    let infos = group_infos(groups, &set.rates);
    let found = findings::changes(&groups[0].findings, &groups[set.last].findings);
    let mut overall = overall(&infos, &rows, set.last, functions.first());
    let moved: Vec<String> = found
        .iter()
        .filter(|c| matches!(c.moved, findings::Moved::New | findings::Moved::Gone))
        .map(|c| c.text())
        .collect();
    if !moved.is_empty() {
        overall
            .line
            .push_str(&format!("; findings: {}", moved.join(", ")));
    }
    Ok(Comparison {
        groups: infos,
        rules: opts.rules,
        overall,
        rows,
        functions,
        findings: found,
        notes,
        gates: Vec::new(),
        diff,
    })
}

/// What every figure of one comparison is judged in: the groups, the rules, and what the
/// groups' runs say about their load and their pairing.
struct Setting<'a> {
    groups: &'a [Group],
    opts: &'a Options,
    /// The unit of one operation ([`op_unit`]).
    op: String,
    /// Each group's label and runs.
    metas: Vec<(String, Vec<RunMeta>)>,
    /// Why the groups cannot be judged against each other, when they cannot.
    not_comparable: Option<String>,
    /// The rate each group was set to, when its runs agree.
    rates: Vec<Option<f64>>,
    /// The index of the last group.
    last: usize,
    /// Whether any run counted its operations.
    counted: bool,
    /// Each group's runs paired with the baseline's by round, when they can be.
    pairing: Vec<Rounds>,
}

impl<'a> Setting<'a> {
    fn of(groups: &'a [Group], opts: &'a Options) -> Self {
        let metas: Vec<(String, Vec<RunMeta>)> = groups
            .iter()
            .map(|g| (g.label.clone(), g.runs.clone()))
            .collect();
        Setting {
            groups,
            opts,
            op: op_unit(groups),
            not_comparable: not_comparable(&metas),
            metas,
            rates: groups.iter().map(|g| figures::set_rate(&g.runs)).collect(),
            last: groups.len() - 1,
            counted: groups
                .iter()
                .flat_map(|g| &g.runs)
                .any(|r| r.headline.throughput.is_some()),
            pairing: groups
                .iter()
                .map(|g| rounds(&groups[0].runs, &g.runs))
                .collect(),
        }
    }

    /// One figure across the groups; `None` when no run has it.
    fn row(&self, f: &Figure) -> Option<Row> {
        let stats: Vec<Option<Stat>> = self
            .groups
            .iter()
            .map(|g| Stat::of(g.runs.iter().filter_map(|r| (f.get)(r)).collect()))
            .collect();
        if stats.iter().all(Option::is_none) {
            return None;
        }
        let held: Vec<Option<Held>> = stats
            .iter()
            .zip(&self.rates)
            .map(|(s, r)| match (f.kind, s, r) {
                (figures::Kind::Rate, Some(s), Some(r)) => Some(Held::of(*r, s.median)),
                _ => None,
            })
            .collect();
        let held_at = |i: usize| held[i].as_ref().is_none_or(|h| h.held);
        let last = self.last;
        let (role, why) = figures::role(
            f.kind,
            self.rates[0],
            self.rates[last],
            (held_at(0), held_at(last)),
            self.counted,
        );
        let floor = floor_of(f, stats[0].as_ref(), &self.opts.history);
        let changes = (0..stats.len())
            .map(|i| self.change(f, &stats, i, role, floor))
            .collect();
        let noise_pct = stats
            .iter()
            .flatten()
            .map(Stat::spread_pct)
            .fold(0.0, f64::max);
        Some(Row {
            key: f.key,
            label: f.label.replace("{op}", &self.op),
            unit: f.unit,
            better: f.better,
            role,
            why,
            groups: stats,
            held,
            changes,
            noise_pct,
            floor,
        })
    }

    /// Group `i`'s change in figure `f` against the first group (`None` for the first, or
    /// when either has no value): paired by round when the runs are, judged only for an
    /// outcome, and never finer than the figure's resolution.
    fn change(
        &self,
        f: &Figure,
        stats: &[Option<Stat>],
        i: usize,
        role: Role,
        floor: Option<verdict::Floor>,
    ) -> Option<Change> {
        if i == 0 {
            return None;
        }
        let (b, s) = (stats[0].as_ref()?, stats[i].as_ref()?);
        let (rules, why_not) = (&self.opts.rules, self.not_comparable.as_deref());
        let mut c = match &self.pairing[i] {
            Rounds::Paired { pairs, .. } => {
                let (base, runs) = (&self.groups[0].runs, &self.groups[i].runs);
                let values: Vec<(f64, f64)> = pairs
                    .iter()
                    .filter_map(|&(x, y)| Some(((f.get)(&base[x])?, (f.get)(&runs[y])?)))
                    .collect();
                verdict::decide_paired(&values, f.better, rules, why_not)
            }
            _ => verdict::decide(b, s, f.better, rules, why_not, floor),
        };
        if (s.median - b.median).abs() < f.resolution
            && matches!(c.verdict, Verdict::Improved | Verdict::Regressed)
        {
            c.verdict = Verdict::NoChange {
                quiet: Quiet::BelowResolution,
            };
        }
        if role != Role::Outcome {
            // Shown, never judged.
            c.p = None;
            c.verdict = Verdict::NoChange {
                quiet: Quiet::WithinNoise,
            };
        }
        Some(c)
    }

    /// What the comparison says beside its figures: too few runs, incomplete runs, the
    /// pairing, the noise floor, how comparable the groups are, frames left out.
    fn notes(&self, functions: &[FunctionTable]) -> Vec<String> {
        let (groups, rules) = (self.groups, &self.opts.rules);
        let mut notes = Vec::new();
        let need = smallest_group(rules.alpha);
        let smallest = groups.iter().map(|g| g.runs.len()).min().unwrap_or(0);
        if smallest < 2 {
            notes.push(format!(
                "a group has a single run: changes are shown, but noise cannot be told from them (kiln run --repeat {need})"
            ));
        } else if smallest < need {
            notes.push(format!(
                "groups of {smallest} runs can never show a change at alpha {} (smallest p {:.3}): kiln run --repeat {need}",
                rules.alpha,
                smallest_p(smallest, smallest)
            ));
        }
        for g in groups {
            for r in g.runs.iter().filter(|r| !r.status.complete) {
                notes.push(format!(
                    "{}: incomplete run #{} ({})",
                    g.label,
                    r.id.unwrap_or(0),
                    r.status.reason.as_deref().unwrap_or("incomplete")
                ));
            }
        }
        notes.extend(rounds_note(groups, &self.pairing, rules));
        notes.extend(self.drift_notes(smallest));
        notes.extend(
            comparability(&self.metas)
                .into_iter()
                .map(|w| format!("not comparable? {w}")),
        );
        for t in functions.iter().filter(|t| !t.rows.is_empty()) {
            if t.folded > 0 {
                notes.push(format!(
                    "{}: {} thread-name and plumbing frames left out of the function table (--keep-threads keeps thread names apart)",
                    t.event, t.folded
                ));
            }
        }
        notes
    }

    /// What the comparison knows of drift between groups (`smallest`: the fewest runs of
    /// a group): cancelled by pairing, measured by history, or not measured.
    fn drift_notes(&self, smallest: usize) -> Vec<String> {
        let label = &self.groups[0].label;
        let mut notes = Vec::new();
        let all_paired = self.pairing[1..]
            .iter()
            .all(|r| matches!(r, Rounds::Paired { .. }));
        if all_paired {
            // Drift between rounds cancels; no history needed.
        } else if !self.opts.history.is_empty() {
            notes.push(format!(
                "noise floor between groups: {} earlier group(s) of '{label}' with the same configuration; a change no larger than they moved is not told from drift",
                self.opts.history.len(),
            ));
        } else if smallest >= 2 {
            notes.push(format!(
                "no earlier group of '{label}' with its configuration: drift between groups of runs (the machine's load changing from one group to the next) is not measured, only the noise within each group; run the baseline again under its name to get a noise floor",
            ));
        }
        // Variants differ by their set-up commands, which the configuration cannot show.
        if same_configuration(&self.metas) && smallest >= 2 && !all_paired {
            notes.push(
                "the groups have the same configuration (load, executable, host, tags): if nothing else changed either (an A/A check), each figure's change and its noise ± are the noise floor a real change must clear".into(),
            );
        }
        notes
    }
}

/// Each group as compared: its label, runs, incomplete runs and set rate.
fn group_infos(groups: &[Group], rates: &[Option<f64>]) -> Vec<GroupInfo> {
    groups
        .iter()
        .zip(rates)
        .map(|(g, r)| GroupInfo {
            label: g.label.clone(),
            runs: g.runs.iter().filter_map(|r| r.id).collect(),
            incomplete: g
                .runs
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
            set_rate: *r,
        })
        .collect()
}

/// Whether two groups' runs can be compared round by round.
#[derive(Clone, Debug, PartialEq)]
pub enum Rounds {
    /// Not variants of one experiment: compared as groups.
    Unpaired,
    /// Variants of one experiment whose rounds do not match (why): compared as groups.
    Unmatched(String),
    /// Variants of one experiment, paired by round: indices into the first group's runs
    /// and the second's, in round order.
    Paired {
        /// The experiment's id.
        experiment: String,
        /// The rounds' runs.
        pairs: Vec<(usize, usize)>,
    },
}

/// Pairs the runs of `a` and `b` by round when they are variants of one interleaved
/// experiment (`kiln run --variant`): every run of both carries the same experiment id,
/// each round once per group, the same rounds on both sides. A group against itself is
/// not paired.
pub fn rounds(a: &[RunMeta], b: &[RunMeta]) -> Rounds {
    let ids: Vec<Option<&str>> = a.iter().chain(b).map(|r| r.experiment.as_deref()).collect();
    let Some(Some(exp)) = ids.first().copied() else {
        return Rounds::Unpaired;
    };
    if ids.iter().any(|e| *e != Some(exp)) {
        return if ids.iter().all(Option::is_some) {
            Rounds::Unmatched("the groups come from different experiments".into())
        } else {
            Rounds::Unpaired
        };
    }
    if a.first().map(|r| &r.group) == b.first().map(|r| &r.group) {
        return Rounds::Unpaired;
    }
    let by_round = |g: &[RunMeta]| -> Result<Vec<(u32, usize)>, String> {
        let mut v: Vec<(u32, usize)> = Vec::new();
        for (i, r) in g.iter().enumerate() {
            let round = r
                .round
                .ok_or_else(|| format!("run #{} has no round", r.id.unwrap_or(0)))?;
            if v.iter().any(|(x, _)| *x == round) {
                return Err(format!("round {round} appears twice in '{}'", r.name));
            }
            v.push((round, i));
        }
        v.sort();
        Ok(v)
    };
    let (ra, rb) = match (by_round(a), by_round(b)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => return Rounds::Unmatched(e),
    };
    let (ka, kb): (Vec<u32>, Vec<u32>) = (
        ra.iter().map(|x| x.0).collect(),
        rb.iter().map(|x| x.0).collect(),
    );
    if ka != kb {
        return Rounds::Unmatched(format!(
            "the rounds differ ({} against {}: a round cut short or left out)",
            ka.len(),
            kb.len()
        ));
    }
    Rounds::Paired {
        experiment: exp.to_string(),
        pairs: ra.iter().zip(&rb).map(|(x, y)| (x.1, y.1)).collect(),
    }
}

/// The note saying which analysis was used for each group against the baseline, and
/// why.
fn rounds_note(groups: &[Group], pairing: &[Rounds], rules: &Rules) -> Vec<String> {
    let mut notes = Vec::new();
    for (g, r) in groups.iter().zip(pairing).skip(1) {
        let vs = if groups.len() > 2 {
            format!("{}: ", g.label)
        } else {
            String::new()
        };
        match r {
            Rounds::Paired { experiment, pairs } => {
                let need = stats::smallest_rounds(rules.alpha);
                let few = if pairs.len() < need {
                    format!(
                        "; {} rounds can never show a change at alpha {} (smallest p {:.3}): --repeat {need}",
                        pairs.len(),
                        rules.alpha,
                        stats::smallest_paired_p(pairs.len())
                    )
                } else {
                    String::new()
                };
                // The interval's coverage depends on the number of rounds only.
                let ranks: Vec<f64> = (0..pairs.len()).map(|i| i as f64).collect();
                let coverage = stats::hodges_lehmann(&ranks, rules.alpha).map_or(0.0, |s| s.coverage);
                notes.push(format!(
                    "{vs}paired by round (interleaved experiment {experiment}, {} rounds): Wilcoxon signed-rank test of each round's ratio, the change the Hodges–Lehmann estimate with its exact interval [low, high] (coverage {:.1}%); drift of the machine between rounds cancels{few}",
                    pairs.len(),
                    coverage * 100.0
                ));
            }
            Rounds::Unmatched(why) => notes.push(format!(
                "{vs}variants of an interleaved experiment, but not paired ({why}): compared as groups (Mann-Whitney)"
            )),
            Rounds::Unpaired => {}
        }
    }
    notes
}

/// How far the medians of earlier groups of the baseline's configuration moved from the
/// baseline's, for figure `f`.
fn floor_of(f: &Figure, base: Option<&Stat>, history: &[Vec<RunMeta>]) -> Option<verdict::Floor> {
    let base = base?.median;
    let moves: Vec<f64> = history
        .iter()
        .filter_map(|g| stats::median(&g.iter().filter_map(|r| (f.get)(r)).collect::<Vec<_>>()))
        .map(|m| stats::percent_change(base, m).abs())
        .filter(|p| p.is_finite())
        .collect();
    (!moves.is_empty()).then(|| verdict::Floor {
        pct: moves.iter().copied().fold(0.0, f64::max),
        groups: moves.len(),
    })
}

type Tables = (Vec<FunctionTable>, Option<(Profile, Profile)>);

fn function_tables(
    first: &Group,
    last: &Group,
    opts: &Options,
    op: &str,
) -> Result<Tables, CompareError> {
    let events_of = |g: &Group| -> Vec<String> {
        let mut e: Vec<String> = Vec::new();
        for p in g.profiles.iter().flatten() {
            if !e.contains(&p.event.name) {
                e.push(p.event.name.clone());
            }
        }
        e
    };
    let (eb, ea) = (events_of(first), events_of(last));
    let both: Vec<&String> = eb.iter().filter(|e| ea.contains(e)).collect();
    let wanted: Vec<String> = match &opts.event {
        Some(e) => {
            let found = both
                .iter()
                .find(|n| {
                    n.as_str() == e
                        || n.split(':').next() == Some(e)
                        || (e == "cpu" && n.as_str() == "cpu-clock")
                })
                .ok_or_else(|| CompareError::NoEvent(e.clone()))?;
            vec![(*found).clone()]
        }
        None => {
            // CPU first, then off-CPU, each when both groups have it.
            let mut w: Vec<String> = both
                .iter()
                .filter(|n| n.as_str() == "cpu-clock" || n.as_str() == "task-clock")
                .map(|n| (*n).clone())
                .take(1)
                .collect();
            w.extend(
                both.iter()
                    .filter(|n| n.as_str() == "offcpu")
                    .map(|n| (*n).clone()),
            );
            if w.is_empty() {
                w.extend(both.first().map(|n| (*n).clone()));
            }
            w
        }
    };
    let pairs = |g: &Group, event: &str| -> Vec<(RunMeta, Profile)> {
        g.runs
            .iter()
            .zip(&g.profiles)
            .filter_map(|(m, ps)| {
                ps.iter()
                    .find(|p| p.event.name == event)
                    .map(|p| (m.clone(), p.clone()))
            })
            .collect()
    };
    let mut tables = Vec::new();
    let mut diff = None;
    for event in wanted {
        let (b, a) = (pairs(first, &event), pairs(last, &event));
        let rb: Vec<(&RunMeta, &Profile)> = b.iter().map(|(m, p)| (m, p)).collect();
        let ra: Vec<(&RunMeta, &Profile)> = a.iter().map(|(m, p)| (m, p)).collect();
        if let Some((t, mb, ma)) =
            functions::table(&event, &rb, &ra, &opts.rules, opts.functions, op)
        {
            if diff.is_none() {
                diff = Some((mb, ma));
            }
            tables.push(t);
        }
        // A cluster recorded node by node: each node's own table after the whole's.
        tables.extend(nodes::tables(
            &event,
            &rb,
            &ra,
            &opts.rules,
            opts.functions,
            op,
        ));
    }
    if opts.functions == 0 {
        for t in &mut tables {
            t.rows.clear();
        }
    }
    Ok((tables, diff))
}

/// Functions of the profile named in the sentence at the top.
const PROFILE_MOVERS: usize = 3;

/// What changed in the profile beyond noise (`table`'s functions whose cost improved or
/// regressed), where the change starts first — a function new or gone, or whose own time
/// moved, before the callers whose totals only carry it: `$rabbit_trace:trace/5 new
/// (5.97 us/msg, 12.6% of the profile), rabbit_exchange:route/2 +85%`. Empty when nothing
/// moved.
fn profile_movers(table: &FunctionTable) -> Vec<String> {
    let mut moved: Vec<(usize, &FunctionRow)> = table
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.change.verdict, Verdict::Regressed | Verdict::Improved))
        .collect();
    // Where a change starts: a function new or gone, or one whose own (self) share moved;
    // its callers grow with it in their totals and follow it. Of the new (or gone) ones,
    // the one with the most time under it first: what a new function calls is new with it
    // (tracing turned on: `rabbit_trace:trace/5`, 17% of the profile with little of its
    // own, before the topic exchange's routing it calls, busier in its own time).
    let appeared = |r: &FunctionRow| r.before.median == 0.0 || r.after.median == 0.0;
    let own = |r: &FunctionRow| (r.self_after - r.self_before).abs();
    let starts = |r: &FunctionRow| appeared(r) || own(r) >= SELF_MOVED;
    let weight = |r: &FunctionRow| match appeared(r) {
        true => r.total_after.max(r.total_before),
        false => own(r),
    };
    moved.sort_by(|(i, a), (j, b)| {
        starts(b)
            .cmp(&starts(a))
            .then(appeared(b).cmp(&appeared(a)))
            .then(weight(b).total_cmp(&weight(a)))
            .then(i.cmp(j))
    });
    moved
        .into_iter()
        .take(PROFILE_MOVERS)
        .map(|(_, r)| {
            if r.before.median == 0.0 || !r.change.percent.is_finite() {
                format!(
                    "{} new ({:.2} {}, {:.1}% of the profile)",
                    r.name, r.after.median, table.unit, r.total_after
                )
            } else if r.after.median == 0.0 {
                format!(
                    "{} gone (was {:.1}% of the profile)",
                    r.name, r.total_before
                )
            } else if own(r) >= SELF_MOVED {
                format!(
                    "{} {:+.0}% (its own time {:.1}% → {:.1}% of the profile)",
                    r.name, r.change.percent, r.self_before, r.self_after
                )
            } else {
                format!("{} {:+.0}%", r.name, r.change.percent)
            }
        })
        .collect()
}

/// A function's own (self) share of the profile moved by this many points: the change
/// starts there.
const SELF_MOVED: f64 = 0.5;

/// The sentence at the top: the outcomes judged, and what moved in the profile (`table`,
/// the first function table) — said even when every total stays within noise, since a
/// change in one function can hide in a total.
fn overall(
    groups: &[GroupInfo],
    rows: &[Row],
    last: usize,
    table: Option<&FunctionTable>,
) -> Overall {
    let (a, b) = (&groups[0].label, &groups[last].label);
    let mut worse = Vec::new();
    let mut better = Vec::new();
    let mut same = Vec::new();
    let mut unsure: Vec<(String, String)> = Vec::new();
    for r in rows.iter().filter(|r| r.role == Role::Outcome) {
        let Some(c) = r.changes.get(last).cloned().flatten() else {
            continue;
        };
        let p = c.p.map(|p| format!(" (p={p:.3})")).unwrap_or_default();
        let pct = format!("{:+.1}%", c.percent);
        match &c.verdict {
            Verdict::Regressed => worse.push(format!("{} {pct}{p}", r.label)),
            Verdict::Improved => better.push(format!("{} {pct}{p}", r.label)),
            Verdict::NoChange { .. } => same.push(r.label.clone()),
            Verdict::CannotTell { why } => unsure.push((r.label.clone(), why.text())),
        }
    }
    let verdict = match (worse.is_empty(), better.is_empty()) {
        (false, false) => OverallVerdict::Mixed,
        (false, true) => OverallVerdict::Regressed,
        (true, false) => OverallVerdict::Improved,
        _ if !unsure.is_empty() => OverallVerdict::CannotTell,
        _ => OverallVerdict::NoChange,
    };
    let word = match verdict {
        OverallVerdict::Improved => "improved",
        OverallVerdict::Regressed => "regressed",
        OverallVerdict::Mixed => "mixed",
        OverallVerdict::NoChange => "no change beyond noise",
        OverallVerdict::CannotTell => "cannot tell",
    };
    let mut parts = Vec::new();
    if !worse.is_empty() {
        parts.push(format!("worse: {}", worse.join(", ")));
    }
    if !better.is_empty() {
        parts.push(format!("better: {}", better.join(", ")));
    }
    if !same.is_empty() {
        parts.push(format!("no change: {}", same.join(", ")));
    }
    if !unsure.is_empty() {
        // One reason for all when they share it (one run, too few repeats).
        let reasons: HashSet<&str> = unsure.iter().map(|(_, w)| w.as_str()).collect();
        if reasons.len() == 1 {
            let names: Vec<&str> = unsure.iter().map(|(n, _)| n.as_str()).collect();
            parts.push(format!(
                "cannot tell: {} ({})",
                names.join(", "),
                unsure[0].1
            ));
        } else {
            let each: Vec<String> = unsure.iter().map(|(n, w)| format!("{n} ({w})")).collect();
            parts.push(format!("cannot tell: {}", each.join(", ")));
        }
    }
    // The settings: the rate, held or not.
    if let Some(r) = rows
        .iter()
        .find(|r| r.key == "throughput" || r.key == "send_rate")
    {
        if let (Some(hb), Some(ha)) = (&r.held[0], &r.held[last]) {
            parts.push(if hb.set == ha.set && hb.held && ha.held {
                format!("rate {} held in both", format_value(hb.set, "/s"))
            } else {
                format!(
                    "rate {} {} → {} {}",
                    format_value(hb.set, "/s"),
                    hb.text(),
                    format_value(ha.set, "/s"),
                    ha.text()
                )
            });
        }
    }
    if let Some(clause) = table.and_then(|t| profile_clause(t, verdict)) {
        parts.push(clause);
    }
    let line = if parts.is_empty() {
        format!("{b} against {a}: {word}")
    } else {
        format!("{b} against {a}: {word}. {}", parts.join("; "))
    };
    Overall { verdict, line }
}

/// The overall line's clause on what moved in the profile of `table`, worded for the
/// overall `verdict`, or `None` when nothing moved beyond noise.
fn profile_clause(table: &FunctionTable, verdict: OverallVerdict) -> Option<String> {
    let movers = profile_movers(table);
    if movers.is_empty() {
        return None;
    }
    let what = &table.event;
    Some(match verdict {
        OverallVerdict::NoChange | OverallVerdict::CannotTell => format!(
            "but the profile changed ({what}, beyond noise): {}",
            movers.join(", ")
        ),
        _ => format!("in the profile ({what}): {}", movers.join(", ")),
    })
}

/// The profile's side of a comparison: the function tables and the overall line's
/// clause on what moved, as [`compare()`] computes them.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileChange {
    /// The function tables, first group against the last.
    pub tables: Vec<FunctionTable>,
    /// The clause when the figures moved (improved, regressed or mixed): `in the profile
    /// (cpu-clock): …`; `None` when nothing moved in the profile.
    pub moved: Option<String>,
    /// The clause when they did not (no change, cannot tell): `but the profile changed
    /// (cpu-clock, beyond noise): …`.
    pub quiet: Option<String>,
}

/// The function tables of `groups` (their first group against their last) and the clause
/// the overall line gives them, by [`compare()`]'s rule, without judging the figures: the
/// report computes them for each window of the runs, and judges the window's figures
/// itself.
pub fn profile_change(groups: &[Group], opts: &Options) -> Result<ProfileChange, CompareError> {
    if groups.len() < 2 {
        return Err(CompareError::TooFew);
    }
    let op = op_unit(groups);
    let (tables, _) = function_tables(&groups[0], &groups[groups.len() - 1], opts, &op)?;
    let first = tables.first();
    Ok(ProfileChange {
        moved: first.and_then(|t| profile_clause(t, OverallVerdict::Improved)),
        quiet: first.and_then(|t| profile_clause(t, OverallVerdict::NoChange)),
        tables,
    })
}

/// Why the runs cannot be compared at all: incomplete runs, different loads, other hosts
/// (each group's label and runs); every verdict is then "cannot tell: not comparable".
pub fn not_comparable(groups: &[(String, Vec<RunMeta>)]) -> Option<String> {
    let all: Vec<&RunMeta> = groups.iter().flat_map(|(_, r)| r).collect();
    let incomplete = all.iter().filter(|r| !r.status.complete).count();
    if incomplete > 0 {
        return Some(format!("{incomplete} incomplete run(s)"));
    }
    // Operations of different loads are different things: a message is not a request, and
    // a consumer's latency is not a request's.
    let mut loads: Vec<String> = all
        .iter()
        .map(|r| match r.load.unit.as_str() {
            "" => r.load.protocol.clone(),
            u => format!("{} {u}", r.load.protocol),
        })
        .collect();
    loads.sort();
    loads.dedup();
    if loads.len() > 1 {
        return Some(format!(
            "runs of different loads ({}): their operations and latencies measure different things",
            loads.join(" against ")
        ));
    }
    let mut hosts: Vec<&str> = all.iter().map(|r| r.host.as_str()).collect();
    hosts.sort();
    hosts.dedup();
    (hosts.len() > 1).then(|| format!("runs on different hosts ({})", hosts.join(", ")))
}

/// Whether every run has the same load, events, target executable and host: an A/A
/// comparison.
fn same_configuration(groups: &[(String, Vec<RunMeta>)]) -> bool {
    let all: Vec<&RunMeta> = groups.iter().flat_map(|(_, r)| r).collect();
    all.windows(2)
        .all(|w| configuration(w[0]) == configuration(w[1]))
}

/// What may make the runs differ besides the change: loads, events, kernels, binaries,
/// window lengths.
fn comparability(groups: &[(String, Vec<RunMeta>)]) -> Vec<String> {
    let mut w = Vec::new();
    let all: Vec<&RunMeta> = groups.iter().flat_map(|(_, r)| r).collect();
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
    differs("load options", &|r| r.load.to_string());
    differs("recorded events", &|r| r.events.join(","));
    differs("sampling frequencies", &|r| format!("{} Hz", r.frequency));
    differs("kernels", &|r| r.kernel.clone());
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
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_store::Headline;

    /// Totals within noise, one function new and one dearer beyond noise: the sentence at
    /// the top says the profile changed, naming them.
    #[test]
    fn the_overall_line_names_what_moved_in_the_profile() {
        let stat = |v: f64| stats::Stat::of(vec![v, v, v]).unwrap();
        let row = |name: &str, b: f64, a: f64, verdict: Verdict| FunctionRow {
            name: name.into(),
            self_before: 0.0,
            self_after: 0.0,
            total_before: b * 2.0,
            total_after: a * 2.0,
            before: stat(b),
            after: stat(a),
            change: Change {
                percent: if b == 0.0 {
                    f64::INFINITY
                } else {
                    (a - b) / b * 100.0
                },
                p: Some(0.007),
                paired: None,
                verdict,
            },
        };
        let table = FunctionTable {
            event: "cpu-clock".into(),
            unit: "us/msg".into(),
            what: String::new(),
            rows: vec![
                row("$rabbit_trace:trace/5", 0.0, 5.97, Verdict::Regressed),
                row("rabbit_exchange:route/2", 1.0, 1.85, Verdict::Regressed),
                row(
                    "ets:lookup/2",
                    1.0,
                    1.01,
                    Verdict::NoChange {
                        quiet: verdict::Quiet::WithinNoise,
                    },
                ),
            ],
            beyond_noise: Vec::new(),
            folded: 0,
        };
        let groups = [
            GroupInfo {
                label: "a".into(),
                runs: vec![1],
                incomplete: Vec::new(),
                set_rate: None,
            },
            GroupInfo {
                label: "b".into(),
                runs: vec![2],
                incomplete: Vec::new(),
                set_rate: None,
            },
        ];
        let o = overall(&groups, &[], 1, Some(&table));
        assert_eq!(o.verdict, OverallVerdict::NoChange);
        assert!(
            o.line.contains(
                "but the profile changed (cpu-clock, beyond noise): $rabbit_trace:trace/5 new \
                 (5.97 us/msg, 11.9% of the profile), rabbit_exchange:route/2 +85%"
            ),
            "{}",
            o.line
        );
        assert!(!o.line.contains("ets:lookup"), "{}", o.line);
        // Two new functions, one calling the other: the caller, with the more time under
        // it, is where the change starts, though its callee spends more in its own code.
        let mut callee = row(
            "rabbit_exchange_type_topic:match/2",
            0.0,
            2.0,
            Verdict::Regressed,
        );
        callee.self_after = 3.5;
        let mut caller = table.rows[0].clone();
        caller.self_after = 0.4;
        let nested = FunctionTable {
            rows: vec![callee, caller],
            ..table.clone()
        };
        let line = overall(&groups, &[], 1, Some(&nested)).line;
        let (at_caller, at_callee) = (
            line.find("$rabbit_trace:trace/5 new"),
            line.find("rabbit_exchange_type_topic:match/2 new"),
        );
        assert!(at_caller.is_some() && at_caller < at_callee, "{line}");
        // Nothing beyond noise: nothing said.
        let quiet = FunctionTable {
            rows: table.rows[2..].to_vec(),
            ..table
        };
        assert!(!overall(&groups, &[], 1, Some(&quiet))
            .line
            .contains("profile"));
    }

    fn run(rate: Option<f64>, throughput: f64, cpu_per_op: f64, p99: f64) -> RunMeta {
        let mut m = RunMeta {
            headline: Headline {
                throughput: Some(throughput),
                send_rate: Some(throughput),
                cpu_per_op_us: Some(cpu_per_op),
                p99_us: Some(p99),
                target_cpu_s: Some(throughput * cpu_per_op / 1e6 * 10.0),
                kiln_cpu_s: Some(1.0),
                ..Default::default()
            },
            ..Default::default()
        };
        m.status.complete = true;
        m.load.rate = rate;
        m.load.unit = "msg".into();
        m.measure.end_ns = 10_000_000_000;
        m
    }

    fn group(label: &str, runs: Vec<RunMeta>) -> Group {
        Group {
            label: label.into(),
            runs,
            profiles: Vec::new(),
            findings: Vec::new(),
        }
    }

    fn row<'a>(c: &'a Comparison, key: &str) -> &'a Row {
        c.rows.iter().find(|r| r.key == key).unwrap()
    }

    /// Variants of one experiment on a machine slowing down round by round: paired by
    /// round, the A/A is no change, and a real change is found with its interval.
    #[test]
    fn interleaved_variants_are_paired_by_round() {
        let variant = |name: &str, factor: f64, swap: bool| -> Vec<RunMeta> {
            (1..=6u32)
                .map(|round| {
                    let level = 10.0 * 1.15f64.powi(round as i32);
                    let wobble = if (round % 2 == 0) == swap { 1.01 } else { 0.99 };
                    let mut m = run(Some(1000.0), 1000.0, level * factor * wobble, 500.0);
                    m.name = name.into();
                    m.group = format!("{name}@1");
                    m.experiment = Some("a/b@1".into());
                    m.round = Some(round);
                    m
                })
                .collect()
        };
        let (a, b) = (variant("a", 1.0, false), variant("b", 1.0, true));
        // The A/A pair: the drift (+15% a round) cancels within each round.
        let c = compare(
            &[group("a", a.clone()), group("b", b.clone())],
            &Options::default(),
        )
        .unwrap();
        let cpu = row(&c, "cpu_per_op");
        let ch = cpu.changes[1].as_ref().unwrap();
        assert!(matches!(ch.verdict, Verdict::NoChange { .. }), "{ch:?}");
        assert_eq!(ch.paired.as_ref().unwrap().rounds, 6);
        assert!(
            c.notes.iter().any(|n| n.starts_with(
                "paired by round (interleaved experiment a/b@1, 6 rounds): Wilcoxon signed-rank"
            )),
            "{:?}",
            c.notes
        );
        // A real +25% under the same drift.
        let slower = variant("b", 1.25, true);
        let c = compare(
            &[group("a", a.clone()), group("b", slower)],
            &Options::default(),
        )
        .unwrap();
        let ch = row(&c, "cpu_per_op").changes[1].clone().unwrap();
        assert_eq!(ch.verdict, Verdict::Regressed, "{ch:?}");
        let ci = ch.paired.unwrap().ci_pct;
        assert!(ci[0] > 20.0 && ci[1] < 30.0, "{ci:?}");
        // A round missing on one side: compared as groups, and said so.
        let c = compare(
            &[group("a", a.clone()), group("b", b[..5].to_vec())],
            &Options::default(),
        )
        .unwrap();
        assert!(row(&c, "cpu_per_op").changes[1]
            .as_ref()
            .unwrap()
            .paired
            .is_none());
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("not paired (the rounds differ (6 against 5")),
            "{:?}",
            c.notes
        );
        // Runs outside an experiment are not paired.
        let plain: Vec<RunMeta> = a
            .iter()
            .cloned()
            .map(|mut m| {
                m.experiment = None;
                m
            })
            .collect();
        assert_eq!(rounds(&plain, &b), Rounds::Unpaired);
    }

    /// Two fixed rates: the rates are settings (held), total CPU is context, CPU per
    /// message is the outcome.
    #[test]
    fn settings_outcomes_and_context() {
        let a: Vec<RunMeta> = (0..4)
            .map(|i| {
                run(
                    Some(5000.0),
                    5000.0 - i as f64,
                    40.0 + i as f64 * 0.1,
                    900.0 + i as f64,
                )
            })
            .collect();
        let b: Vec<RunMeta> = (0..4)
            .map(|i| {
                run(
                    Some(15000.0),
                    14990.0 - i as f64,
                    30.0 + i as f64 * 0.1,
                    901.0 + i as f64 * 3.0,
                )
            })
            .collect();
        let c = compare(&[group("r5k", a), group("r15k", b)], &Options::default()).unwrap();
        let tp = row(&c, "throughput");
        assert_eq!(tp.role, Role::Setting);
        assert!(tp.held.iter().all(|h| h.as_ref().unwrap().held));
        assert_eq!(row(&c, "target_cpu").role, Role::Context);
        assert_eq!(row(&c, "kiln_cpu").role, Role::Context);
        let cpu = row(&c, "cpu_per_op");
        assert_eq!(cpu.label, "target CPU per msg");
        assert_eq!(cpu.changes[1].as_ref().unwrap().verdict, Verdict::Improved);
        assert_eq!(c.overall.verdict, OverallVerdict::Improved);
        assert!(
            c.overall.line.starts_with(
                "r15k against r5k: improved. better: target CPU per msg -24.9% (p=0.029)"
            ),
            "{}",
            c.overall.line
        );
        assert!(
            c.overall.line.contains("rate 5000/s held → 15.0k/s held"),
            "{}",
            c.overall.line
        );
    }

    /// Runs of an AMQP load against runs of an HTTP load: a message is not a request, so no
    /// per-operation figure is judged.
    #[test]
    fn different_loads_are_not_judged_per_operation() {
        let of = |protocol: &str, unit: &str, cpu: f64| {
            let mut m = run(None, 5000.0, cpu, 900.0);
            m.load.protocol = protocol.into();
            m.load.unit = unit.into();
            m
        };
        let a: Vec<RunMeta> = (0..4).map(|i| of("amqp", "msg", 40.0 + i as f64)).collect();
        let b: Vec<RunMeta> = (0..4).map(|i| of("http", "req", 80.0 + i as f64)).collect();
        let c = compare(&[group("a", a), group("b", b)], &Options::default()).unwrap();
        let cpu = row(&c, "cpu_per_op").changes[1].clone().unwrap();
        assert!(matches!(cpu.verdict, Verdict::CannotTell { .. }), "{cpu:?}");
        assert!(
            c.overall
                .line
                .contains("different loads (amqp msg against http req)"),
            "{}",
            c.overall.line
        );
    }

    /// RSS max of one process measured four times against another's: 110 KiB apart with
    /// no spread is beyond noise and past 10%, but under the figure's resolution (1 MiB):
    /// no change, and a gate on it passes. 2 MiB apart is a change.
    #[test]
    fn rss_under_a_mib_is_no_change() {
        let with_rss = |rss: u64| {
            let mut m = run(Some(5000.0), 5000.0, 40.0, 900.0);
            m.headline.rss_max_bytes = Some(rss);
            m
        };
        let a: Vec<RunMeta> = (0..4).map(|_| with_rss(1_040_384)).collect();
        let b: Vec<RunMeta> = (0..4).map(|_| with_rss(1_150_976)).collect();
        let opts = Options {
            rules: Rules {
                threshold_pct: 10.0,
                ..Default::default()
            },
            ..Default::default()
        };
        let c = compare(&[group("a", a.clone()), group("b", b)], &opts).unwrap();
        let rss = row(&c, "rss").changes[1].clone().unwrap();
        assert!(rss.percent > 10.0 && rss.p.unwrap() < 0.05, "{rss:?}");
        assert_eq!(
            rss.verdict,
            Verdict::NoChange {
                quiet: Quiet::BelowResolution
            }
        );
        assert_eq!(
            c.overall.verdict,
            OverallVerdict::NoChange,
            "{}",
            c.overall.line
        );
        let gates = gate::parse_gates("rss>+5%").unwrap();
        assert_eq!(
            gate::overall(&gate::check_gates(&c, &gates)),
            GateStatus::Passed
        );
        let b: Vec<RunMeta> = (0..4).map(|_| with_rss(3_140_384)).collect();
        let c = compare(&[group("a", a), group("b", b)], &opts).unwrap();
        let rss = row(&c, "rss").changes[1].clone().unwrap();
        assert_eq!(rss.verdict, Verdict::Regressed);
    }

    /// The same fixed rate, not held by the candidate: throughput is judged.
    #[test]
    fn a_rate_not_held_is_an_outcome() {
        let a: Vec<RunMeta> = (0..4)
            .map(|i| run(Some(20000.0), 19990.0 + i as f64, 40.0, 900.0))
            .collect();
        let b: Vec<RunMeta> = (0..4)
            .map(|i| run(Some(20000.0), 15000.0 + i as f64, 40.0, 900.0))
            .collect();
        let c = compare(&[group("a", a), group("b", b)], &Options::default()).unwrap();
        let tp = row(&c, "throughput");
        assert_eq!(tp.role, Role::Outcome);
        assert_eq!(
            tp.held[1].as_ref().unwrap().text(),
            "not held (\u{2212}25%)"
        );
        assert_eq!(tp.changes[1].as_ref().unwrap().verdict, Verdict::Regressed);
        assert_eq!(row(&c, "target_cpu").role, Role::Outcome, "same set rate");
        assert!(c.overall.line.contains("not held"), "{}", c.overall.line);
    }

    /// Single runs: every outcome is "cannot tell", and the overall line says why once.
    #[test]
    fn single_runs_cannot_tell() {
        let c = compare(
            &[
                group("a", vec![run(None, 1000.0, 40.0, 900.0)]),
                group("b", vec![run(None, 1389.0, 40.0, 900.0)]),
            ],
            &Options::default(),
        )
        .unwrap();
        assert_eq!(c.overall.verdict, OverallVerdict::CannotTell);
        assert!(
            c.overall.line.contains(
                "cannot tell: throughput, send rate, latency p99, target CPU per msg (one run"
            ),
            "{}",
            c.overall.line
        );
        assert!(c.notes[0].contains("--repeat 4"), "{:?}", c.notes);
    }

    fn profile(event: &str, unit: kiln_model::WeightUnit, lines: &[(&str, u64)]) -> Profile {
        use kiln_model::{EventInfo, FrameKind, ThreadId, NO_TIME};
        let mut p = Profile::new(EventInfo::new(event, unit));
        for (s, w) in lines {
            let f: Vec<_> = s
                .split(';')
                .map(|n| p.frame(n.as_bytes(), FrameKind::User))
                .collect();
            p.add_sample_path(&f, *w, NO_TIME, ThreadId::NONE);
        }
        p
    }

    /// CPU and off-CPU both recorded by both groups: a table each, off-CPU in time
    /// blocked per operation.
    #[test]
    fn off_cpu_is_compared_beside_cpu() {
        use kiln_model::WeightUnit;
        let g = |label: &str, lock_us: u64| {
            let runs: Vec<RunMeta> = (0..4)
                .map(|_| {
                    let mut m = run(Some(1000.0), 1000.0, 40.0, 900.0);
                    m.headline.operations = Some(10_000);
                    m
                })
                .collect();
            let profiles = runs
                .iter()
                .map(|_| {
                    vec![
                        profile("cpu-clock", WeightUnit::Period, &[("main;work", 1_000_000)]),
                        profile(
                            "offcpu",
                            WeightUnit::Microseconds,
                            &[("main;lock", lock_us), ("main;read", 50_000)],
                        ),
                    ]
                })
                .collect();
            Group {
                label: label.into(),
                runs,
                profiles,
                findings: Vec::new(),
            }
        };
        let c = compare(&[g("a", 100_000), g("b", 300_000)], &Options::default()).unwrap();
        let events: Vec<&str> = c.functions.iter().map(|t| t.event.as_str()).collect();
        assert_eq!(events, ["cpu-clock", "offcpu"]);
        let off = &c.functions[1];
        assert_eq!(off.unit, "us/msg");
        assert!(off.what.starts_with("time blocked per msg"), "{}", off.what);
        let lock = off.rows.iter().find(|r| r.name == "lock").unwrap();
        // 100 ms blocked over 10,000 messages: 10 µs per message, then 30.
        assert_eq!((lock.before.median, lock.after.median), (10.0, 30.0));
        assert_eq!(lock.change.verdict, Verdict::Regressed);
        // Ranked by change: lock and main (which holds it) moved by 20 µs, read not at all.
        let order: Vec<&str> = off.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(order, ["lock", "main", "read"]);
        // One event asked for: that table alone.
        let only = compare(
            &[g("a", 100_000), g("b", 300_000)],
            &Options {
                event: Some("offcpu".into()),
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(only.functions.len(), 1);
        assert!(matches!(
            compare(
                &[g("a", 1), g("b", 1)],
                &Options {
                    event: Some("page-faults".into()),
                    ..Options::default()
                }
            ),
            Err(CompareError::NoEvent(_))
        ));
    }

    /// Names from a store (group labels, function names) reach the terminal escaped:
    /// no escape sequence or reordering character in the text or Markdown tables.
    #[test]
    fn names_are_escaped_in_text_and_markdown() {
        use kiln_model::WeightUnit;
        let g = |label: &str, w: u64| {
            let runs: Vec<RunMeta> = (0..4)
                .map(|_| run(Some(1000.0), 1000.0, 40.0, 900.0))
                .collect();
            let profiles = runs
                .iter()
                .map(|_| {
                    vec![profile(
                        "cpu-clock",
                        WeightUnit::Period,
                        &[
                            ("main;evil\u{1b}]0:PWNED\u{7}", w),
                            ("main;gnp.exe\u{202e}", 5),
                        ],
                    )]
                })
                .collect();
            Group {
                label: label.into(),
                runs,
                profiles,
                findings: Vec::new(),
            }
        };
        let c = compare(
            &[g("a\u{1b}[31m", 1_000_000), g("b\u{202e}", 3_000_000)],
            &Options::default(),
        )
        .unwrap();
        for f in [export::Format::Text, export::Format::Markdown] {
            let mut out = Vec::new();
            f.exporter().export(&c, &mut out).unwrap();
            let out = String::from_utf8(out).unwrap();
            assert!(
                !out.contains('\u{1b}') && !out.contains('\u{202e}'),
                "{out}"
            );
            assert!(
                out.contains("evil\\") && out.contains("x1b") && out.contains("PWNED"),
                "{out}"
            );
        }
    }

    #[test]
    fn groups_need_runs() {
        assert!(matches!(
            compare(
                &[group("a", vec![run(None, 1.0, 1.0, 1.0)])],
                &Options::default()
            ),
            Err(CompareError::TooFew)
        ));
        assert!(matches!(
            compare(
                &[
                    group("a", vec![run(None, 1.0, 1.0, 1.0)]),
                    group("b", vec![])
                ],
                &Options::default()
            ),
            Err(CompareError::Empty(_))
        ));
    }
}
