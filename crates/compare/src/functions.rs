//! The function table of a comparison: functions judged like figures.
//!
//! Each function's cost is computed per run — CPU (or off-CPU) time per operation spent
//! in it and its callees, which stays meaningful when the rate changes, unlike a share of
//! the profile — so that repeats give each function a median, a spread and a verdict
//! ([`super::verdict::decide`]) as the headline figures have. The table is ranked by the
//! change of that cost. Thread-name root frames and runtime plumbing
//! ([`kiln_model::transform::PLUMBING_FRAMES`]) are left out: they sit under every sample
//! and would fill the table with their noise. Runs that count no operations fall back
//! to shares of the profile.
use super::figures::Better;
use super::stats::Stat;
use super::verdict::{decide, Change, Rules};
use kiln_model::{FrameKind, Profile, Quantity};
use kiln_store::RunMeta;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// One function's change.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FunctionRow {
    /// The function.
    pub name: String,
    /// Self share of the merged profile before, %.
    pub self_before: f64,
    /// Self share after, %.
    pub self_after: f64,
    /// Total share (with callees) before, %.
    pub total_before: f64,
    /// Total share after, %.
    pub total_after: f64,
    /// Its cost per run of each group, in the table's unit.
    pub before: Stat,
    /// The same after.
    pub after: Stat,
    /// The change of the median cost, and its verdict.
    pub change: Change,
}

impl FunctionRow {
    /// Change of the median cost, in the table's unit.
    pub fn delta(&self) -> f64 {
        self.after.median - self.before.median
    }
}

/// The functions of one event, first group against last.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FunctionTable {
    /// The event (`cpu-clock`, `offcpu`).
    pub event: String,
    /// The cost's unit: `us/op` (time per operation) or `%` (share of the profile).
    pub unit: String,
    /// What the cost is, in words.
    pub what: String,
    /// The largest movers, by change of cost.
    pub rows: Vec<FunctionRow>,
    /// Functions whose change is beyond noise (improved or regressed), all of them, not
    /// only the rows shown: what the differential flame graph colours.
    pub beyond_noise: Vec<String>,
    /// Distinct functions left out as thread names or plumbing.
    pub folded: usize,
}

/// How a run's weights of one event become a cost per operation: µs per unit of weight
/// per operation, or `None` when the run cannot say.
fn per_op_scale(m: &RunMeta, p: &Profile) -> Option<f64> {
    let total = p.total_weight();
    let ops = m.headline.operations.filter(|&o| o > 0)? as f64;
    if total == 0 {
        return None;
    }
    if p.event.is_clock() {
        // The target's CPU per operation as /proc counted it, spread over the profile's
        // shares: sampling losses do not bias it.
        return m.headline.cpu_per_op_us.map(|c| c / total as f64);
    }
    match p.event.quantity() {
        Quantity::Time { ns_per_unit } => Some(ns_per_unit as f64 / 1e3 / ops),
        Quantity::Samples {
            period_ns: Some(ns),
        } => Some(ns as f64 / 1e3 / ops),
        _ => None,
    }
}

/// Names of the root (process or thread) frames of `p`.
fn roots(p: &Profile) -> HashSet<Vec<u8>> {
    p.frames
        .iter()
        .filter(|(_, f)| f.kind == FrameKind::Root)
        .map(|(_, f)| p.strings.get(f.name).to_vec())
        .collect()
}

fn merged(runs: &[(&RunMeta, &Profile)]) -> Profile {
    let mut out = runs[0].1.clone();
    for (_, p) in &runs[1..] {
        out.merge_from(p);
    }
    out
}

/// Every function's cost in each run, before and after: its total weight per operation
/// (µs) when every run counted its operations, else its share of the run's profile (%).
struct Costs {
    /// Whether the costs are per operation.
    per_op: bool,
    /// By function name: the costs in the runs before and in the runs after.
    costs: HashMap<Vec<u8>, (Vec<f64>, Vec<f64>)>,
    /// Names of the profiles' root frames (thread names), left out of the table.
    skip: HashSet<Vec<u8>>,
}

impl Costs {
    fn of(before: &[(&RunMeta, &Profile)], after: &[(&RunMeta, &Profile)]) -> Self {
        let scales: Vec<Option<f64>> = before
            .iter()
            .chain(after)
            .map(|(m, p)| per_op_scale(m, p))
            .collect();
        let per_op = scales.iter().all(Option::is_some);
        let cost = |i: usize, p: &Profile| -> f64 {
            if per_op {
                scales[i].unwrap_or(0.0)
            } else {
                let t = p.total_weight();
                if t == 0 {
                    0.0
                } else {
                    100.0 / t as f64
                }
            }
        };
        let mut skip: HashSet<Vec<u8>> = HashSet::new();
        let mut costs: HashMap<Vec<u8>, (Vec<f64>, Vec<f64>)> = HashMap::new();
        let (nb, na) = (before.len(), after.len());
        for (i, (_, p)) in before.iter().chain(after).enumerate() {
            skip.extend(roots(p));
            let scale = cost(i, p);
            for (name, (_, total)) in kiln_diff::function_weights(p) {
                let e = costs
                    .entry(name)
                    .or_insert_with(|| (vec![0.0; nb], vec![0.0; na]));
                let v = total as f64 * scale;
                if i < nb {
                    e.0[i] = v;
                } else {
                    e.1[i - nb] = v;
                }
            }
        }
        Costs {
            per_op,
            costs,
            skip,
        }
    }
}

/// The table of `event` for runs `before` and `after` (each a run and its profile of the
/// event), with at most `limit` rows; also the two merged profiles (for the differential
/// flame graph).
pub fn table(
    event: &str,
    before: &[(&RunMeta, &Profile)],
    after: &[(&RunMeta, &Profile)],
    rules: &Rules,
    limit: usize,
    op: &str,
) -> Option<(FunctionTable, Profile, Profile)> {
    if before.is_empty() || after.is_empty() {
        return None;
    }
    let Costs {
        per_op,
        costs,
        skip,
    } = Costs::of(before, after);
    let folded = costs
        .keys()
        .filter(|n| skip.contains(*n) || kiln_model::transform::is_plumbing(n))
        .count();
    let (mb, ma) = (merged(before), merged(after));
    let shares: HashMap<String, kiln_diff::FunctionChange> = kiln_diff::function_changes(&mb, &ma)
        .ok()?
        .into_iter()
        .map(|c| (c.name.clone(), c))
        .collect();
    let mut rows: Vec<FunctionRow> = costs
        .into_iter()
        .filter(|(n, _)| !skip.contains(n) && !kiln_model::transform::is_plumbing(n))
        .filter_map(|(n, (b, a))| {
            let (b, a) = (Stat::of(b)?, Stat::of(a)?);
            let name = String::from_utf8_lossy(&n).into_owned();
            let s = shares.get(&name);
            let share = |f: fn(&kiln_diff::FunctionChange) -> f64| s.map_or(0.0, f);
            Some(FunctionRow {
                self_before: share(|c| c.self_before),
                self_after: share(|c| c.self_after),
                total_before: share(|c| c.total_before),
                total_after: share(|c| c.total_after),
                change: decide(&b, &a, Better::Lower, rules, None, None),
                before: b,
                after: a,
                name,
            })
        })
        .collect();
    rows.sort_by(|x, y| {
        y.delta()
            .abs()
            .total_cmp(&x.delta().abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    let beyond_noise = rows
        .iter()
        .filter(|r| r.change.verdict.is_change())
        .map(|r| r.name.clone())
        .collect();
    rows.truncate(limit);
    let offcpu = !mb.event.is_clock() && matches!(mb.event.quantity(), Quantity::Time { .. });
    let what = match (per_op, offcpu) {
        (true, false) => format!("CPU time per {op} in the function and its callees, µs"),
        (true, true) => format!("time blocked per {op} in the function and its callees, µs"),
        (false, _) => "share of the profile in the function and its callees, %".to_string(),
    };
    Some((
        FunctionTable {
            event: event.to_string(),
            unit: if per_op {
                format!("us/{op}")
            } else {
                "%".into()
            },
            what,
            rows,
            beyond_noise,
            folded,
        },
        mb,
        ma,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::{EventInfo, ThreadId, WeightUnit, NO_TIME};

    fn profile(lines: &[(&str, u64)]) -> Profile {
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Period));
        for (s, w) in lines {
            let f: Vec<_> = s
                .split(';')
                .enumerate()
                .map(|(i, n)| {
                    let kind = if i == 0 {
                        FrameKind::Root
                    } else {
                        FrameKind::User
                    };
                    p.frame(n.as_bytes(), kind)
                })
                .collect();
            p.add_sample_path(&f, *w, NO_TIME, ThreadId::NONE);
        }
        p
    }

    fn meta(ops: u64, cpu_per_op_us: f64) -> RunMeta {
        let mut m = RunMeta::default();
        m.headline.operations = Some(ops);
        m.headline.cpu_per_op_us = Some(cpu_per_op_us);
        m
    }

    /// A function whose share grows while its cost per operation falls ranks and reads
    /// by its cost: the rate went up, the work per message went down.
    #[test]
    fn ranked_by_cost_per_operation() {
        // Before: 40 µs/op, handle_msg 50% of it = 20 µs/op.
        let b = profile(&[
            ("scheduler;start_thread;handle_msg", 50),
            ("scheduler;start_thread;route", 50),
        ]);
        // After: 20 µs/op, handle_msg 60% = 12 µs/op; route 40% = 8 µs/op.
        let a = profile(&[
            ("scheduler;start_thread;handle_msg", 60),
            ("scheduler;start_thread;route", 40),
        ]);
        let (mb, ma) = (meta(1000, 40.0), meta(3000, 20.0));
        let mut before = vec![(&mb, &b); 4];
        let after = vec![(&ma, &a); 4];
        let (t, _, _) = table("cpu-clock", &before, &after, &Rules::default(), 10, "msg").unwrap();
        assert_eq!(t.unit, "us/msg");
        let names: Vec<&str> = t.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["route", "handle_msg"],
            "thread and plumbing frames folded"
        );
        assert_eq!(t.folded, 2);
        let h = &t.rows[1];
        assert!((h.before.median - 20.0).abs() < 1e-9 && (h.after.median - 12.0).abs() < 1e-9);
        assert!(h.self_after > h.self_before, "its share grew");
        // Identical runs in each group: the groups separate, every change is beyond noise.
        assert_eq!(h.change.verdict, super::super::verdict::Verdict::Improved);
        assert_eq!(t.beyond_noise.len(), 2);
        // Runs that count no operations compare shares.
        let mut m0 = mb.clone();
        m0.headline.operations = None;
        before[0] = (&m0, &b);
        let (t, _, _) = table("cpu-clock", &before, &after, &Rules::default(), 10, "msg").unwrap();
        assert_eq!(t.unit, "%");
        assert!(t.what.starts_with("share"));
    }
}
