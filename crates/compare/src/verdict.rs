//! The verdict on one change, decided here and only here, from the two groups' values,
//! `--alpha` and `--threshold`:
//!
//! | the groups | the change of the medians | verdict |
//! |---|---|---|
//! | not comparable (incomplete runs, other hosts) | any | cannot tell: not comparable |
//! | a group of one run | any | cannot tell: one run |
//! | groups too small to ever reach p ≤ alpha (3 vs 3 at 0.05) | any | cannot tell: too few repeats (and how many would do) |
//! | p ≤ alpha | ≥ threshold | improved / regressed, by the figure's direction |
//! | p ≤ alpha | < threshold | no change (real, but below the threshold) |
//! | p > alpha | < threshold | no change (within noise) |
//! | p > alpha | ≥ threshold | cannot tell: the noise is wider than the change |
//!
//! Runs of one interleaved experiment (`kiln run --variant`) are decided by the same
//! table from their rounds ([`decide_paired`]): the change is the Hodges–Lehmann estimate
//! of the rounds' ratios with its confidence interval, the p-value the Wilcoxon
//! signed-rank test's, the fewest rounds that can show a change 6 at 0.05.
//!
//! A `--fail-if` gate ([`super::gate`]) fires only on a change past its limit that is
//! also beyond noise (p ≤ alpha); the gate's own limit stands in for the threshold.
use super::figures::Better;
use super::stats::{
    hodges_lehmann, mann_whitney, percent_change, signed_rank, smallest_group, smallest_p,
    smallest_paired_p, smallest_rounds, Stat,
};
use serde::Serialize;

/// How sure a comparison must be before it calls a change real.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rules {
    /// Largest p-value called significant (`--alpha`). Default: 0.05.
    pub alpha: f64,
    /// Smallest change of the median, in percent, called a change at all (`--threshold`,
    /// critcmp's threshold): on a shared machine identical configurations differ by a
    /// few percent run to run in ways a handful of repeats cannot average out. Default: 5.
    pub threshold_pct: f64,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            alpha: 0.05,
            threshold_pct: 5.0,
        }
    }
}

impl Rules {
    /// Whether `p` is significant at `alpha` (with room for rounding: 2/70 at 0.0286).
    pub fn significant(&self, p: f64) -> bool {
        p <= self.alpha * (1.0 + 1e-9)
    }
}

/// Why a change cannot be told from noise.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Unsure {
    /// A group has a single run: its noise is unknown.
    OneRun {
        /// The smallest group size that can reach alpha.
        need: usize,
    },
    /// The groups are too small for the test ever to reach alpha.
    TooFewRepeats {
        /// The smallest p-value these sizes can give.
        smallest_p: f64,
        /// The smallest group size that can reach alpha.
        need: usize,
        /// How many runs (or rounds) of each group measured the figure: fewer than the
        /// groups' runs when some did not.
        measured: [usize; 2],
    },
    /// The groups overlap: the runs of a group differ from each other by as much as the
    /// change.
    Noise {
        /// Half the range of the noisier group, percent of its median.
        spread_pct: f64,
    },
    /// Beyond the noise within the groups, but no more than earlier groups of the
    /// baseline's configuration moved from it: the machine drifts between groups of runs
    /// by that much.
    Drift {
        /// The largest move of an earlier group's median from the baseline's, percent.
        floor_pct: f64,
        /// How many earlier groups.
        groups: usize,
    },
    /// The runs cannot be compared (incomplete, on other hosts).
    NotComparable {
        /// Why.
        reason: String,
    },
}

impl Unsure {
    /// In words, for a person.
    pub fn text(&self) -> String {
        match self {
            Unsure::OneRun { need } => {
                format!("one run: noise unknown (kiln run --repeat {need})")
            }
            // Groups of one size: more repeats are the remedy. Of two sizes, some runs did
            // not measure the figure: saying "--repeat N" to groups that had N would be
            // wrong.
            Unsure::TooFewRepeats {
                smallest_p,
                need,
                measured: [m, n],
            } if m != n => format!(
                "too few repeats: {m} and {n} runs measured this figure, which can never reach the alpha (smallest p {smallest_p:.3}): each group needs {need} runs that measure it"
            ),
            Unsure::TooFewRepeats {
                smallest_p, need, ..
            } => format!(
                "too few repeats: these groups can never reach the alpha (smallest p {smallest_p:.3}; --repeat {need} can)"
            ),
            Unsure::Noise { spread_pct } => {
                format!("noise (±{spread_pct:.1}% run to run) wider than the change")
            }
            Unsure::Drift { floor_pct, groups } => format!(
                "within the noise floor: {groups} earlier group(s) of the baseline's configuration moved up to ±{floor_pct:.1}% from it"
            ),
            Unsure::NotComparable { reason } => format!("not comparable: {reason}"),
        }
    }

    /// In a few words, for a table cell (the overall line and the notes say the rest).
    pub fn short(&self) -> String {
        match self {
            Unsure::OneRun { .. } => "one run".into(),
            Unsure::TooFewRepeats { .. } => "too few repeats".into(),
            Unsure::Noise { spread_pct } => format!("noise ±{spread_pct:.0}%"),
            Unsure::Drift { floor_pct, .. } => format!("noise floor ±{floor_pct:.0}%"),
            Unsure::NotComparable { .. } => "not comparable".into(),
        }
    }
}

/// Why a change counts as none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Quiet {
    /// Within noise and below the threshold.
    WithinNoise,
    /// Beyond noise, but below the threshold.
    BelowThreshold,
    /// A difference smaller than the figure can show ([`super::figures::Figure::resolution`]:
    /// RSS max under 1 MiB).
    BelowResolution,
}

/// The verdict on a change.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Better, beyond noise, by at least the threshold.
    Improved,
    /// Worse, beyond noise, by at least the threshold.
    Regressed,
    /// No change worth the name.
    NoChange {
        /// Why.
        quiet: Quiet,
    },
    /// Change and noise cannot be told apart.
    CannotTell {
        /// Why.
        #[serde(flatten)]
        why: Unsure,
    },
}

impl Verdict {
    /// `improved`, `regressed`, `no change`, `cannot tell`.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoChange { .. } => "no change",
            Verdict::CannotTell { .. } => "cannot tell",
        }
    }

    /// Whether the change is beyond noise and the threshold.
    pub(crate) fn is_change(&self) -> bool {
        matches!(self, Verdict::Improved | Verdict::Regressed)
    }
}

/// One group's change against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// Relative change of the median, percent (infinite from zero).
    pub percent: f64,
    /// Two-sided p-value, when both groups have repeats: Mann-Whitney's, or the
    /// signed-rank test's when `paired`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// Measured round by round (runs of one interleaved experiment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired: Option<Paired>,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// A change measured round by round: each round's ratio of the candidate's value to the
/// baseline's (the difference when a value is zero or negative).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Paired {
    /// Rounds with a value on both sides.
    pub rounds: usize,
    /// The confidence interval of the change, percent (the Hodges–Lehmann interval of the
    /// rounds' log ratios).
    pub ci_pct: [f64; 2],
    /// The interval's exact coverage (0.969 for 6 rounds at alpha 0.05).
    pub coverage: f64,
    /// Each round's values, baseline then candidate.
    #[serde(skip)]
    pub pairs: Vec<(f64, f64)>,
}

impl Paired {
    /// The rounds' differences on the scale the test runs on: log ratios when every value
    /// is positive, else plain differences.
    pub fn differences(pairs: &[(f64, f64)]) -> (Vec<f64>, bool) {
        let ratio = pairs.iter().all(|(b, a)| *b > 0.0 && *a > 0.0);
        let d = pairs
            .iter()
            .map(|(b, a)| if ratio { (a / b).ln() } else { a - b })
            .collect();
        (d, ratio)
    }
}

impl Change {
    /// The change in words: `+14.0% regressed (p=0.008)`, `-0.4% no change (within
    /// noise, p=0.69)`, `+38.9% cannot tell (one run)`; paired, with its interval:
    /// `+14.0% [+11.2, +16.9] regressed (p=0.031)`.
    pub fn text(&self) -> String {
        let pct = if self.percent.is_finite() {
            format!("{:+.1}%", self.percent)
        } else {
            "new".into()
        };
        match &self.paired {
            Some(pr) if pr.ci_pct.iter().all(|v| v.is_finite()) => format!(
                "{pct} [{:+.1}, {:+.1}] {}",
                pr.ci_pct[0],
                pr.ci_pct[1],
                self.verdict_text()
            ),
            _ => format!("{pct} {}", self.verdict_text()),
        }
    }

    /// The verdict in words, without the change: `regressed (p=0.008)`.
    pub fn verdict_text(&self) -> String {
        let p = self.p.map(|p| format!("p={p:.3}"));
        let detail = match &self.verdict {
            Verdict::Improved | Verdict::Regressed => p,
            Verdict::NoChange { quiet } => Some(
                [
                    Some(match quiet {
                        Quiet::WithinNoise => "within noise".to_string(),
                        Quiet::BelowThreshold => "below the threshold".to_string(),
                        Quiet::BelowResolution => "under the figure's resolution".to_string(),
                    }),
                    p,
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(", "),
            ),
            Verdict::CannotTell { why } => Some(why.short()),
        };
        match detail {
            Some(d) => format!("{} ({d})", self.verdict.word()),
            None => self.verdict.word().to_string(),
        }
    }
}

/// The noise floor of a figure between groups: how far earlier groups of the baseline's
/// configuration moved from it (`kiln run` of the same name and configuration at other
/// times: an A/A history).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Floor {
    /// The largest move of an earlier group's median, percent of the baseline's.
    pub pct: f64,
    /// How many earlier groups.
    pub groups: usize,
}

/// Decides the change from `before` to `after` of a figure whose better direction is
/// `better`; `not_comparable` says why the runs cannot be compared at all; `floor` is the
/// noise floor between groups, when the baseline has a history.
pub fn decide(
    before: &Stat,
    after: &Stat,
    better: Better,
    rules: &Rules,
    not_comparable: Option<&str>,
    floor: Option<Floor>,
) -> Change {
    let percent = percent_change(before.median, after.median);
    let need = smallest_group(rules.alpha);
    let cannot = |why| Change {
        percent,
        p: None,
        paired: None,
        verdict: Verdict::CannotTell { why },
    };
    if let Some(reason) = not_comparable {
        return cannot(Unsure::NotComparable {
            reason: reason.to_string(),
        });
    }
    let (m, n) = (before.n(), after.n());
    if m < 2 || n < 2 {
        return cannot(Unsure::OneRun { need });
    }
    let smallest = smallest_p(m, n);
    if !rules.significant(smallest) {
        return cannot(Unsure::TooFewRepeats {
            smallest_p: smallest,
            need,
            measured: [m, n],
        });
    }
    let p = mann_whitney(&before.values, &after.values);
    let spread = before.spread_pct().max(after.spread_pct());
    Change {
        percent,
        p: Some(p),
        paired: None,
        verdict: judge(percent, p, spread, better, rules, floor),
    }
}

/// The last rows of the table, once the groups can show a change: `p` against alpha,
/// `percent` against the threshold (and the noise floor between groups); `spread_pct` is
/// the noise a "cannot tell" names.
fn judge(
    percent: f64,
    p: f64,
    spread_pct: f64,
    better: Better,
    rules: &Rules,
    floor: Option<Floor>,
) -> Verdict {
    let big = percent.abs() >= rules.threshold_pct;
    match (rules.significant(p), big) {
        (true, true) if floor.is_some_and(|f| percent.abs() <= f.pct) => {
            let f = floor.unwrap_or(Floor {
                pct: 0.0,
                groups: 0,
            });
            Verdict::CannotTell {
                why: Unsure::Drift {
                    floor_pct: f.pct,
                    groups: f.groups,
                },
            }
        }
        (true, true) => {
            let up = percent > 0.0;
            if up == (better == Better::Higher) {
                Verdict::Improved
            } else {
                Verdict::Regressed
            }
        }
        (true, false) => Verdict::NoChange {
            quiet: Quiet::BelowThreshold,
        },
        (false, false) => Verdict::NoChange {
            quiet: Quiet::WithinNoise,
        },
        (false, true) => Verdict::CannotTell {
            why: Unsure::Noise { spread_pct },
        },
    }
}

/// Decides the change of a figure from runs paired by round (`pairs`: each round's
/// baseline and candidate values): the Hodges–Lehmann estimate of the rounds' ratios is
/// the change, with its exact interval at `1 - alpha`; the signed-rank test's p decides.
/// No noise floor between groups: the rounds cancel the drift it stands for.
pub fn decide_paired(
    pairs: &[(f64, f64)],
    better: Better,
    rules: &Rules,
    not_comparable: Option<&str>,
) -> Change {
    let pairs: Vec<(f64, f64)> = pairs
        .iter()
        .copied()
        .filter(|(b, a)| b.is_finite() && a.is_finite())
        .collect();
    let (d, ratio) = Paired::differences(&pairs);
    let base = super::stats::median(&pairs.iter().map(|p| p.0).collect::<Vec<_>>()).unwrap_or(0.0);
    let as_pct = |x: f64| {
        if ratio {
            (x.exp() - 1.0) * 100.0
        } else {
            percent_change(base, base + x)
        }
    };
    let shift = hodges_lehmann(&d, rules.alpha);
    let percent = shift.map_or(0.0, |s| as_pct(s.estimate));
    let paired = Some(Paired {
        rounds: pairs.len(),
        ci_pct: shift.map_or([f64::NAN; 2], |s| [as_pct(s.low), as_pct(s.high)]),
        coverage: shift.map_or(0.0, |s| s.coverage),
        pairs: pairs.clone(),
    });
    let cannot = |why| Change {
        percent,
        p: None,
        paired: paired.clone(),
        verdict: Verdict::CannotTell { why },
    };
    let need = smallest_rounds(rules.alpha);
    if let Some(reason) = not_comparable {
        return cannot(Unsure::NotComparable {
            reason: reason.to_string(),
        });
    }
    let n = pairs.len();
    if n < 2 {
        return cannot(Unsure::OneRun { need });
    }
    if !rules.significant(smallest_paired_p(n)) {
        return cannot(Unsure::TooFewRepeats {
            smallest_p: smallest_paired_p(n),
            need,
            measured: [n, n],
        });
    }
    let p = signed_rank(&d);
    // The noise: half the range of the rounds' changes.
    let each: Vec<f64> = d.iter().map(|x| as_pct(*x)).collect();
    let spread = (each.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        - each.iter().copied().fold(f64::INFINITY, f64::min))
        / 2.0;
    Change {
        percent,
        p: Some(p),
        paired,
        verdict: judge(percent, p, spread, better, rules, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(v: &[f64]) -> Stat {
        Stat::of(v.to_vec()).unwrap()
    }

    #[test]
    fn the_rules() {
        let r = Rules::default();
        let low = [100.0, 101.0, 99.0, 100.5];
        let high = [120.0, 121.0, 119.0, 122.0];
        // Separated groups of four, 20% apart: regressed for a cost, improved for a rate.
        let c = decide(&stat(&low), &stat(&high), Better::Lower, &r, None, None);
        assert_eq!(c.verdict, Verdict::Regressed);
        assert!((c.p.unwrap() - 2.0 / 70.0).abs() < 1e-12);
        assert_eq!(
            decide(&stat(&low), &stat(&high), Better::Higher, &r, None, None).verdict,
            Verdict::Improved
        );
        // The same, three against three: never significant at 0.05.
        let c = decide(
            &stat(&low[..3]),
            &stat(&high[..3]),
            Better::Lower,
            &r,
            None,
            None,
        );
        assert_eq!(
            c.verdict,
            Verdict::CannotTell {
                why: Unsure::TooFewRepeats {
                    smallest_p: 0.1,
                    need: 4,
                    measured: [3, 3]
                }
            }
        );
        // Four runs against three that measured the figure (one run without it): the
        // groups' size is not what is short, and the words say so.
        let c = decide(
            &stat(&low[..4]),
            &stat(&high[..3]),
            Better::Lower,
            &r,
            None,
            None,
        );
        let Verdict::CannotTell { why } = &c.verdict else {
            panic!("{c:?}")
        };
        assert_eq!(
            why.text(),
            "too few repeats: 4 and 3 runs measured this figure, which can never reach the alpha (smallest p 0.057): each group needs 4 runs that measure it"
        );
        // ... unless alpha allows it.
        let loose = Rules { alpha: 0.1, ..r };
        assert_eq!(
            decide(
                &stat(&low[..3]),
                &stat(&high[..3]),
                Better::Lower,
                &loose,
                None,
                None
            )
            .verdict,
            Verdict::Regressed
        );
        // One run each: whatever the change.
        let c = decide(
            &stat(&[100.0]),
            &stat(&[140.0]),
            Better::Lower,
            &r,
            None,
            None,
        );
        assert_eq!(
            c.verdict,
            Verdict::CannotTell {
                why: Unsure::OneRun { need: 4 }
            }
        );
        assert!(
            c.text().starts_with("+40.0% cannot tell (one run"),
            "{}",
            c.text()
        );
        // Separated but small: below the threshold.
        let near = [102.0, 103.0, 102.5, 103.5];
        assert_eq!(
            decide(&stat(&low), &stat(&near), Better::Lower, &r, None, None).verdict,
            Verdict::NoChange {
                quiet: Quiet::BelowThreshold
            }
        );
        // Interleaved and small: within noise.
        let same = [100.2, 100.8, 99.2, 100.1];
        assert_eq!(
            decide(&stat(&low), &stat(&same), Better::Lower, &r, None, None).verdict,
            Verdict::NoChange {
                quiet: Quiet::WithinNoise
            }
        );
        // Interleaved, medians 10% apart: the noise is wider than the change.
        let wide_a = [80.0, 95.0, 105.0, 140.0];
        let wide_b = [85.0, 110.0, 112.0, 150.0];
        let c = decide(
            &stat(&wide_a),
            &stat(&wide_b),
            Better::Lower,
            &r,
            None,
            None,
        );
        assert!(
            matches!(
                c.verdict,
                Verdict::CannotTell {
                    why: Unsure::Noise { .. }
                }
            ),
            "{c:?}"
        );
        // Beyond noise within the groups, but earlier groups of the baseline moved as far.
        let floor = Some(Floor {
            pct: 25.0,
            groups: 2,
        });
        let c = decide(&stat(&low), &stat(&high), Better::Lower, &r, None, floor);
        assert_eq!(c.text(), "+20.2% cannot tell (noise floor ±25%)");
        let floor = Some(Floor {
            pct: 10.0,
            groups: 2,
        });
        let c = decide(&stat(&low), &stat(&high), Better::Lower, &r, None, floor);
        assert_eq!(c.verdict, Verdict::Regressed);
        // Not comparable wins over everything.
        let c = decide(
            &stat(&low),
            &stat(&high),
            Better::Lower,
            &r,
            Some("other hosts"),
            None,
        );
        assert_eq!(c.text(), "+20.2% cannot tell (not comparable)");
        let Verdict::CannotTell { why } = c.verdict else {
            panic!("{c:?}")
        };
        assert_eq!(why.text(), "not comparable: other hosts");
    }
    /// Rounds that drift together: unpaired, the drift is a change; paired, only the
    /// rounds' ratios count.
    #[test]
    fn paired_rounds_cancel_drift() {
        let r = Rules::default();
        // A/A on a machine slowing down round by round (+10% a round), each round's two
        // runs within 1% of each other, either one first.
        let aa: Vec<(f64, f64)> = (0..6)
            .map(|i| {
                let level = 100.0 * 1.1f64.powi(i);
                let j = if i % 2 == 0 { 1.01 } else { 0.99 };
                (level, level * j)
            })
            .collect();
        let c = decide_paired(&aa, Better::Lower, &r, None);
        assert!(matches!(c.verdict, Verdict::NoChange { .. }), "{c:?}");
        assert!(c.percent.abs() < 1.0, "{c:?}");
        let pr = c.paired.as_ref().unwrap();
        assert_eq!(pr.rounds, 6);
        assert!(pr.ci_pct[0] < 0.0 && pr.ci_pct[1] > 0.0, "{pr:?}");
        // A real +20% under the same drift: regressed, at the smallest p 6 rounds give,
        // the interval around it.
        let ab: Vec<(f64, f64)> = aa.iter().map(|(b, a)| (*b, a * 1.2)).collect();
        let c = decide_paired(&ab, Better::Lower, &r, None);
        assert_eq!(c.verdict, Verdict::Regressed);
        assert!((c.p.unwrap() - 1.0 / 32.0).abs() < 1e-12);
        let pr = c.paired.as_ref().unwrap();
        assert!(pr.ci_pct[0] > 15.0 && pr.ci_pct[1] < 25.0, "{pr:?}");
        assert!((c.percent - 20.0).abs() < 1.5, "{c:?}");
        assert!(c.text().starts_with("+20."), "{}", c.text());
        assert!(c.text().contains("] regressed (p=0.031)"), "{}", c.text());
        // Five rounds can never reach 0.05.
        let c = decide_paired(&ab[..5], Better::Lower, &r, None);
        assert_eq!(
            c.verdict,
            Verdict::CannotTell {
                why: Unsure::TooFewRepeats {
                    smallest_p: 0.0625,
                    need: 6,
                    measured: [5, 5]
                }
            }
        );
        // Zero values: differences, the change against the baseline's median.
        let z = [
            (0.0, 1.0),
            (0.0, 1.0),
            (0.0, 1.0),
            (1.0, 2.0),
            (1.0, 2.0),
            (1.0, 2.0),
        ];
        let c = decide_paired(&z, Better::Lower, &r, None);
        assert_eq!(c.verdict, Verdict::Regressed);
        assert!((c.percent - 200.0).abs() < 1e-9, "{c:?}");
    }
}
