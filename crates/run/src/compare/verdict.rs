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
//! A `--fail-if` gate ([`super::gate`]) fires only on a change past its limit that is
//! also beyond noise (p ≤ alpha); the gate's own limit stands in for the threshold.
use super::figures::Better;
use super::stats::{mann_whitney, percent_change, smallest_group, smallest_p, Stat};
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
            Unsure::TooFewRepeats { smallest_p, need } => format!(
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
    /// Mann-Whitney two-sided p-value, when both groups have repeats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

impl Change {
    /// The change in words: `+14.0% regressed (p=0.008)`, `-0.4% no change (within
    /// noise, p=0.69)`, `+38.9% cannot tell (one run)`.
    pub fn text(&self) -> String {
        let pct = if self.percent.is_finite() {
            format!("{:+.1}%", self.percent)
        } else {
            "new".into()
        };
        format!("{pct} {}", self.verdict_text())
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
        });
    }
    let p = mann_whitney(&before.values, &after.values);
    let big = percent.abs() >= rules.threshold_pct;
    let verdict = match (rules.significant(p), big) {
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
            why: Unsure::Noise {
                spread_pct: before.spread_pct().max(after.spread_pct()),
            },
        },
    };
    Change {
        percent,
        p: Some(p),
        verdict,
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
                    need: 4
                }
            }
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
}
