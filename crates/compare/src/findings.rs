//! The findings of two groups of runs side by side: which causes are new, gone, or
//! explain more or less of the outcome ([`kiln_findings`] made each run's).
use kiln_findings::{Class, Finding, Findings};
use serde::Serialize;

/// A class of cause in a group's runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Side {
    /// Runs that found it.
    pub runs: usize,
    /// Runs in the group.
    pub of: usize,
    /// The median share of the outcome it explains in those runs, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explains_pct: Option<f64>,
    /// What it explains a share of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub of_what: Option<String>,
    /// The claim of its most typical run (the median score).
    pub claim: String,
}

/// How a cause moved between the first group and the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Moved {
    /// Found after, not before.
    New,
    /// Found before, not after.
    Gone,
    /// Explains at least [`MOVED_POINTS`] points more of the outcome.
    Grew,
    /// Explains at least [`MOVED_POINTS`] points less.
    Shrank,
    /// About the same.
    Held,
}

/// A share of the outcome moved by at least this many points.
pub const MOVED_POINTS: f64 = 10.0;

/// One class of cause across the two groups.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FindingChange {
    /// The class.
    pub class: Class,
    /// In words.
    pub title: &'static str,
    /// How it moved.
    pub moved: Moved,
    /// In the first group (present in at least half its runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Side>,
    /// In the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Side>,
}

impl FindingChange {
    /// `lock contention new (explains 34% of the reqs' time)`.
    pub fn text(&self) -> String {
        let t = self.title.to_lowercase();
        let share = |s: &Option<Side>| {
            s.as_ref()
                .and_then(|s| Some(format!("{:.0}%", s.explains_pct?)))
        };
        match self.moved {
            Moved::New => format!(
                "{t} new{}",
                share(&self.after).map_or(String::new(), |p| format!(" ({p})"))
            ),
            Moved::Gone => format!(
                "{t} gone{}",
                share(&self.before).map_or(String::new(), |p| format!(" (was {p})"))
            ),
            Moved::Grew | Moved::Shrank | Moved::Held => format!(
                "{t} {} → {}",
                share(&self.before).unwrap_or_else(|| "-".into()),
                share(&self.after).unwrap_or_else(|| "-".into())
            ),
        }
    }
}

fn side(runs: &[Findings], class: Class) -> Option<Side> {
    let mut found: Vec<&Finding> = runs
        .iter()
        .filter_map(|f| f.findings.iter().find(|x| x.class == class))
        .collect();
    if found.is_empty() || found.len() * 2 < runs.len() {
        return None;
    }
    found.sort_by(|a, b| a.score.total_cmp(&b.score));
    let typical = found[found.len() / 2];
    let mut shares: Vec<f64> = found
        .iter()
        .filter_map(|x| x.explains.as_ref().map(|e| e.pct))
        .collect();
    shares.sort_by(f64::total_cmp);
    Some(Side {
        runs: found.len(),
        of: runs.len(),
        explains_pct: crate::stats::median(&shares),
        of_what: typical.explains.as_ref().map(|e| e.of.clone()),
        claim: typical.claim.clone(),
    })
}

/// The causes of `first`'s runs against `last`'s, the new and the gone first, then those
/// that moved, then those that held; empty when neither group's runs carry findings.
pub fn changes(first: &[Findings], last: &[Findings]) -> Vec<FindingChange> {
    let mut classes: Vec<Class> = first
        .iter()
        .chain(last)
        .flat_map(|f| f.findings.iter().map(|x| x.class))
        .collect();
    classes.sort();
    classes.dedup();
    let mut out: Vec<FindingChange> = classes
        .into_iter()
        .filter_map(|class| {
            let (before, after) = (side(first, class), side(last, class));
            let moved = match (&before, &after) {
                (None, None) => return None,
                (None, Some(_)) => Moved::New,
                (Some(_), None) => Moved::Gone,
                (Some(b), Some(a)) => match (b.explains_pct, a.explains_pct) {
                    (Some(x), Some(y)) if y - x >= MOVED_POINTS => Moved::Grew,
                    (Some(x), Some(y)) if x - y >= MOVED_POINTS => Moved::Shrank,
                    _ => Moved::Held,
                },
            };
            Some(FindingChange {
                class,
                title: class.title(),
                moved,
                before,
                after,
            })
        })
        .collect();
    out.sort_by_key(|c| match c.moved {
        Moved::New => 0,
        Moved::Gone => 1,
        Moved::Grew => 2,
        Moved::Shrank => 3,
        Moved::Held => 4,
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(classes: &[(Class, f64)]) -> Findings {
        Findings {
            findings: classes
                .iter()
                .map(|&(c, pct)| {
                    Finding::new("t", c, pct / 100.0, format!("{} {pct}", c.name()))
                        .explains(pct, "of the time")
                })
                .collect(),
            limits: Vec::new(),
        }
    }

    #[test]
    fn new_gone_moved_and_held() {
        let before = [
            found(&[(Class::CpuBound, 50.0), (Class::GarbageCollection, 40.0)]),
            found(&[(Class::CpuBound, 52.0), (Class::GarbageCollection, 42.0)]),
        ];
        let after = [
            found(&[(Class::CpuBound, 51.0), (Class::LockContention, 30.0)]),
            found(&[(Class::CpuBound, 70.0), (Class::LockContention, 34.0)]),
        ];
        let c = changes(&before, &after);
        let by = |k: Class| c.iter().find(|x| x.class == k).unwrap();
        assert_eq!(by(Class::LockContention).moved, Moved::New);
        assert_eq!(by(Class::GarbageCollection).moved, Moved::Gone);
        assert_eq!(by(Class::CpuBound).moved, Moved::Held);
        assert_eq!(c[0].class, Class::LockContention);
        assert_eq!(
            by(Class::LockContention).text(),
            "lock contention new (32%)"
        );
        // Found in fewer than half a group's runs: not that group's.
        let once = [found(&[(Class::Errors, 5.0)]), found(&[]), found(&[])];
        assert!(changes(&once, &once).is_empty());
    }
}
