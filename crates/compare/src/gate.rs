//! `--fail-if`: CI gates that fire only on a change past their limit **and** beyond noise.
//!
//! Each condition of the last group against the first ends in one of three outcomes:
//! passed (the change is within the limit, or past it but within noise and below the
//! threshold), fired (past the limit with p ≤ alpha: the gate's limit stands in for the
//! threshold), or cannot tell (past the limit, but the groups cannot show whether it is
//! real: one run, too few repeats, noise as wide as the change, runs not comparable). A CI job reads the three
//! from the exit status ([`GateStatus::exit_code`]): a gate that fires on noise gets
//! switched off, and one that passes what it cannot see is no gate.
use super::figures::{figure, Figure, Role, FIGURES};
use super::verdict::{Quiet, Unsure, Verdict};
use super::{Comparison, Row, Stat};
use serde::Serialize;

/// A `--fail-if` condition: `p99>+10%`, `throughput<-5%`, `cpu_per_op>50` (absolute, in
/// the figure's unit).
#[derive(Clone, Debug, PartialEq)]
pub struct Gate {
    /// The figure.
    pub figure: &'static Figure,
    /// `>` or `<`.
    pub greater: bool,
    /// The limit.
    pub limit: f64,
    /// Relative (percent change of the median) or absolute (the median itself).
    pub relative: bool,
    /// As written.
    pub text: String,
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
        let f = figure(name).ok_or_else(|| {
            let keys: Vec<&str> = FIGURES.iter().map(|m| m.key).collect();
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
        let limit: f64 = num
            .trim_start_matches('+')
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| format!("'{part}': '{value}' is not a number or a percentage"))?;
        out.push(Gate {
            figure: f,
            greater,
            limit,
            relative,
            text: part.to_string(),
        });
    }
    if out.is_empty() {
        return Err("no condition given".into());
    }
    Ok(out)
}

/// How one condition ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    /// Within its limit, or past it only within noise and the threshold.
    Passed,
    /// Past its limit, but the runs cannot show whether beyond noise.
    CannotTell,
    /// Past its limit and beyond noise.
    Fired,
}

impl GateStatus {
    /// The exit status of `kiln compare`: 0 passed, 3 fired, 4 cannot tell.
    pub fn exit_code(self) -> u8 {
        match self {
            GateStatus::Passed => 0,
            GateStatus::Fired => 3,
            GateStatus::CannotTell => 4,
        }
    }
}

/// One condition's outcome, with what the figure did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GateResult {
    /// The condition as written.
    pub condition: String,
    /// How it ended.
    pub status: GateStatus,
    /// What the figure did, in words.
    pub message: String,
}

/// The outcome of every condition for the last group against the first.
pub fn check_gates(c: &Comparison, gates: &[Gate]) -> Vec<GateResult> {
    gates.iter().map(|g| check(c, g)).collect()
}

/// The worst outcome: fired over cannot tell over passed.
pub fn overall(results: &[GateResult]) -> GateStatus {
    results
        .iter()
        .map(|r| r.status)
        .max()
        .unwrap_or(GateStatus::Passed)
}

/// An absolute limit on the candidate's own value (`past`: whether a value is past it):
/// beyond noise when every run is past it.
fn absolute(row: &Row, stat: &Stat, past: &dyn Fn(f64) -> bool) -> (GateStatus, String) {
    let all = stat.values.iter().all(|&v| past(v));
    let shown = super::format_value(stat.median, row.unit);
    if all {
        (
            GateStatus::Fired,
            format!("{} is {shown} (every run past the limit)", row.label),
        )
    } else if past(stat.median) {
        (
            GateStatus::CannotTell,
            format!(
                "{} is {shown}, but some runs are within the limit",
                row.label
            ),
        )
    } else {
        (GateStatus::Passed, format!("{} is {shown}", row.label))
    }
}

/// A setting or context past a relative limit: they carry no verdict, so a held rate
/// passes and the rest cannot be judged.
fn not_judged(row: &Row) -> (GateStatus, String) {
    let held = row.held.iter().flatten().all(|h| h.held) && !row.held.is_empty();
    if held {
        (
            GateStatus::Passed,
            format!("{}: the set rates were held", row.label),
        )
    } else {
        (
            GateStatus::CannotTell,
            format!(
                "{} is {} here, not judged ({})",
                row.label,
                serde_json::to_value(row.role)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                row.why.as_deref().unwrap_or("")
            ),
        )
    }
}

/// One condition checked against the comparison's row of its figure.
fn check(c: &Comparison, g: &Gate) -> GateResult {
    let done = |status, message: String| GateResult {
        condition: g.text.clone(),
        status,
        message,
    };
    let Some(row) = c.rows.iter().find(|r| r.key == g.figure.key) else {
        return done(
            GateStatus::CannotTell,
            format!("the runs do not measure {}", g.figure.label),
        );
    };
    let last = row.groups.len().saturating_sub(1);
    let (Some(base), Some(stat)) = (
        row.groups.first().cloned().flatten(),
        row.groups.get(last).cloned().flatten(),
    ) else {
        return done(
            GateStatus::CannotTell,
            format!("{}: a group has no value", row.label),
        );
    };
    let past = |v: f64| if g.greater { v > g.limit } else { v < g.limit };
    if !g.relative {
        let (status, message) = absolute(row, &stat, &past);
        return done(status, message);
    }
    let Some(change) = row.changes.get(last).cloned().flatten() else {
        return done(
            GateStatus::CannotTell,
            format!("{}: no change to check", row.label),
        );
    };
    let text = change.text();
    if !past(change.percent) {
        return done(GateStatus::Passed, format!("{}: {text}", row.label));
    }
    if row.role != Role::Outcome {
        let (status, message) = not_judged(row);
        return done(status, message);
    }
    // The gate's own limit stands in for the threshold: past it, significance decides —
    // that the figure changed at all (the change's p), and that it moved past the limit
    // (`past_limit_p`): a change only its median puts past the limit is noise around it.
    let significant = change.p.is_some_and(|p| c.rules.significant(p));
    let past_p = match &change.paired {
        Some(pr) => past_limit_paired(&pr.pairs, g),
        None => past_limit_p(&base.values, &stat.values, g),
    };
    let past_limit = past_p.is_some_and(|p| c.rules.significant(p));
    let status = match &change.verdict {
        Verdict::CannotTell {
            why:
                Unsure::NotComparable { .. }
                | Unsure::OneRun { .. }
                | Unsure::TooFewRepeats { .. }
                | Unsure::Drift { .. },
        } => GateStatus::CannotTell,
        // Smaller than the figure can show: not a change, whatever its percentage.
        Verdict::NoChange {
            quiet: Quiet::BelowResolution,
        } => GateStatus::Passed,
        _ if significant && past_limit => GateStatus::Fired,
        Verdict::NoChange { .. } => GateStatus::Passed,
        _ => GateStatus::CannotTell,
    };
    let beyond = match past_p {
        Some(p) if !past_limit => format!(", not provably past {:+}% (p={p:.3})", g.limit),
        _ => String::new(),
    };
    done(status, format!("{}: {text}{beyond}", row.label))
}

/// How surely the candidate's runs are past a relative limit: the Mann-Whitney p of the
/// candidate's runs against the baseline's moved by the limit (a shift test), when the
/// candidate's median is past the moved baseline's; `None` when it is not (or when there
/// are no values).
fn past_limit_p(before: &[f64], after: &[f64], g: &Gate) -> Option<f64> {
    let moved: Vec<f64> = before.iter().map(|v| v * (1.0 + g.limit / 100.0)).collect();
    let (m, a) = (super::stats::median(&moved)?, super::stats::median(after)?);
    let past = if g.greater { a > m } else { a < m };
    past.then(|| super::stats::mann_whitney(after, &moved))
}

/// The same for runs paired by round: the signed-rank p of each round's candidate against
/// its baseline moved by the limit, when their Hodges–Lehmann centre is past it.
fn past_limit_paired(pairs: &[(f64, f64)], g: &Gate) -> Option<f64> {
    let moved: Vec<(f64, f64)> = pairs
        .iter()
        .map(|(b, a)| (b * (1.0 + g.limit / 100.0), *a))
        .collect();
    let (d, _) = super::verdict::Paired::differences(&moved);
    let centre = super::stats::hodges_lehmann(&d, 0.05)?.estimate;
    let past = if g.greater {
        centre > 0.0
    } else {
        centre < 0.0
    };
    past.then(|| super::stats::signed_rank(&d))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past the limit means surely past it: a candidate whose runs straddle the moved
    /// baseline is not, one whose every run is past it is.
    #[test]
    fn past_the_limit_is_a_shift_test() {
        let g = &parse_gates("cpu_per_msg>+10%").unwrap()[0];
        let before = [20.0, 20.5, 21.0, 19.5, 20.2];
        // +14% at the median, but runs from +2% to +25%: not surely past +10%.
        let noisy = [20.5, 22.8, 23.0, 24.0, 25.0];
        let p = past_limit_p(&before, &noisy, g).unwrap();
        assert!(p > 0.05, "{p}");
        // Every run past +10% of every baseline run: surely past.
        let firehose = [27.0, 27.5, 28.4, 26.5, 27.9];
        let p = past_limit_p(&before, &firehose, g).unwrap();
        assert!(p < 0.01, "{p}");
        // Below the moved baseline: no question to ask.
        assert_eq!(past_limit_p(&before, &before, g), None);
        // A lower limit moves the other way.
        let g = &parse_gates("throughput<-5%").unwrap()[0];
        let slow = [15.0, 15.5, 16.0, 15.2, 15.8];
        assert!(past_limit_p(&before, &slow, g).unwrap() < 0.01);
    }

    /// Paired by round: each round's candidate against its own baseline moved by the
    /// limit, whatever the drift between rounds.
    #[test]
    fn past_the_limit_paired_by_round() {
        let g = &parse_gates("cpu_per_msg>+10%").unwrap()[0];
        let drift = [20.0, 24.0, 30.0, 22.0, 35.0, 28.0];
        let far: Vec<(f64, f64)> = drift.iter().map(|b| (*b, b * 1.2)).collect();
        let p = past_limit_paired(&far, g).unwrap();
        assert!((p - 1.0 / 32.0).abs() < 1e-12, "{p}");
        // +11% in three rounds, +9% in the others: not surely past +10%.
        let near: Vec<(f64, f64)> = drift
            .iter()
            .enumerate()
            .map(|(i, b)| (*b, b * if i % 2 == 0 { 1.11 } else { 1.09 }))
            .collect();
        assert!(past_limit_paired(&near, g).is_none_or(|p| p > 0.05));
        let same: Vec<(f64, f64)> = drift.iter().map(|b| (*b, *b)).collect();
        assert_eq!(past_limit_paired(&same, g), None);
    }

    #[test]
    fn conditions_parse() {
        let g = parse_gates("p99>+10%, cpu_per_msg>+5%,throughput<-5%").unwrap();
        assert_eq!(g.len(), 3);
        assert_eq!(g[1].figure.key, "cpu_per_op");
        assert!(!g[2].greater && g[2].relative && g[2].limit == -5.0);
        assert!(parse_gates("p98>1").unwrap_err().contains("unknown figure"));
        assert!(parse_gates("p99=1").is_err());
        assert!(parse_gates("p99>inf").is_err());
        assert!(parse_gates(" , ").is_err());
    }
}
