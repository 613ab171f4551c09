//! # kiln-diff: what changed between two profiles
//!
//! Two views of one comparison:
//!
//! * **Differential folded stacks** ([`write_diff_folded`]): every stack of either profile
//!   with its count before and after — `difffolded.pl`'s output, which differential flame
//!   graphs draw (`kiln diff before.folded after.folded | kiln flamegraph > diff.svg`).
//! * **The function table** ([`function_changes`]): each function's self and total share of
//!   its profile before and after, sorted by how much it moved — the table that says
//!   "`rabbit_exchange:route/2`: 9.5% → 2.5%". Shares, not counts, so two recordings of
//!   different lengths compare directly.
//!
//! A function's *self* share counts samples whose leaf it is; its *total* share counts
//! samples with it anywhere on the stack, once per sample even under recursion.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use kiln_model::{FrameId, Profile, StackId, WeightUnit};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;

/// Errors of the diff stage.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiffError {
    /// Writing failed.
    #[error("write failed: {0}")]
    Io(#[from] std::io::Error),
    /// The two profiles weigh their samples in different units (samples against
    /// nanoseconds, say): their counts cannot be subtracted. Shares can be compared
    /// ([`DiffOptions::normalize`], [`function_changes`]).
    #[error("the profiles do not count the same thing: the one before counts {}, the one after {}", describe(*.before), describe(*.after))]
    UnitsDiffer {
        /// The unit of the profile before.
        before: WeightUnit,
        /// The unit of the profile after.
        after: WeightUnit,
    },
    /// A profile's weights add up to more than 2^64-1.
    #[error(
        "the weights of the profile {side} add up to more than {} (2^64-1)",
        u64::MAX
    )]
    WeightOverflow {
        /// "before" or "after".
        side: &'static str,
    },
}

/// A unit in words.
fn describe(u: WeightUnit) -> &'static str {
    match u {
        WeightUnit::Samples => "samples",
        WeightUnit::Period => "event periods",
        WeightUnit::Nanoseconds => "nanoseconds",
        WeightUnit::Microseconds => "microseconds",
        WeightUnit::Bytes => "bytes",
        WeightUnit::Events => "events",
        other => other.name(),
    }
}

/// The unit of a profile's weights, when known: folded stacks do not say what their
/// counts are (no event, counted as samples), so they compare with anything.
fn known_unit(p: &Profile) -> Option<WeightUnit> {
    (!(p.event.name.is_empty() && p.event.unit == WeightUnit::Samples)).then_some(p.event.unit)
}

/// Whether the counts of two profiles can be compared as they are: both totals fit in
/// 64 bits, and the units are the same (or one of them is not known). Scaling one
/// profile to the other's total ([`DiffOptions::normalize`]) compares shares, whatever
/// the units.
pub fn comparable(before: &Profile, after: &Profile) -> Result<(), DiffError> {
    total(before, "before")?;
    total(after, "after")?;
    match (known_unit(before), known_unit(after)) {
        (Some(b), Some(a)) if a != b => Err(DiffError::UnitsDiffer {
            before: b,
            after: a,
        }),
        _ => Ok(()),
    }
}

/// The total weight of a profile, or an error if it does not fit in 64 bits (the
/// model's sums saturate).
fn total(p: &Profile, side: &'static str) -> Result<u64, DiffError> {
    p.samples
        .weight
        .iter()
        .try_fold(0u64, |a, &w| a.checked_add(w))
        .ok_or(DiffError::WeightOverflow { side })
}

/// Options of the differential folded output.
#[derive(Clone, Copy, Debug, Default)]
pub struct DiffOptions {
    /// Scale the "before" counts so both profiles have the same total (`difffolded.pl -n`).
    /// Default: false.
    pub normalize: bool,
}

/// Weight of every distinct stack path, as bytes (`a;b;c`).
pub(crate) fn stack_weights(p: &Profile) -> BTreeMap<Vec<u8>, u64> {
    let w = p.self_weights();
    let mut out = BTreeMap::new();
    let mut path = Vec::new();
    for (i, &x) in w.iter().enumerate() {
        if x == 0 {
            continue;
        }
        path.clear();
        p.stacks.path_into(StackId(i as u32), &mut path);
        let mut key = Vec::new();
        for (k, f) in path.iter().enumerate() {
            if k > 0 {
                key.push(b';');
            }
            key.extend_from_slice(p.frame_name(*f));
        }
        *out.entry(key).or_insert(0) += x;
    }
    out
}

/// Writes `stack before after` for every stack of either profile, sorted by stack.
///
/// Refuses profiles whose units differ ([`comparable`]) unless `opts.normalize` scales
/// them to the same total.
pub fn write_diff_folded(
    before: &Profile,
    after: &Profile,
    opts: DiffOptions,
    out: &mut dyn Write,
) -> Result<(), DiffError> {
    let (ta, tb) = (total(before, "before")?, total(after, "after")?);
    if !opts.normalize {
        comparable(before, after)?;
    }
    let a = stack_weights(before);
    let b = stack_weights(after);
    let mut all: BTreeMap<&[u8], (u64, u64)> = BTreeMap::new();
    for (k, v) in &a {
        all.entry(k.as_slice()).or_default().0 = *v;
    }
    for (k, v) in &b {
        all.entry(k.as_slice()).or_default().1 = *v;
    }
    let mut n = itoa::Buffer::new();
    for (k, (x, y)) in all {
        let x = if opts.normalize && ta != tb && ta > 0 {
            (x as u128 * tb as u128 / ta as u128) as u64
        } else {
            x
        };
        out.write_all(k)?;
        out.write_all(b" ")?;
        out.write_all(n.format(x).as_bytes())?;
        out.write_all(b" ")?;
        out.write_all(n.format(y).as_bytes())?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// One function's share of each profile, in percent of that profile's total weight.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FunctionChange {
    /// The function (frame name, lossily decoded).
    pub name: String,
    /// Self share before, %.
    pub self_before: f64,
    /// Self share after, %.
    pub self_after: f64,
    /// Total share before, %.
    pub total_before: f64,
    /// Total share after, %.
    pub total_after: f64,
}

impl FunctionChange {
    /// Change of the self share, in percentage points.
    pub(crate) fn self_delta(&self) -> f64 {
        self.self_after - self.self_before
    }
    /// Change of the total share, in percentage points.
    pub(crate) fn total_delta(&self) -> f64 {
        self.total_after - self.total_before
    }
    /// Whether the function appears in only one of the profiles.
    pub fn is_new_or_gone(&self) -> bool {
        (self.total_before == 0.0) != (self.total_after == 0.0)
    }
}

/// Self and total weight of every function name of `p` (sums in 128 bits: frames of
/// one name and several kinds may count a sample twice). A function's total counts each
/// sample once, even under recursion.
pub fn function_weights(p: &Profile) -> HashMap<Vec<u8>, (u128, u128)> {
    let selfw = p.self_weights();
    let mut by_frame: HashMap<FrameId, (u128, u128)> = HashMap::new();
    let mut seen: Vec<FrameId> = Vec::new();
    let mut path = Vec::new();
    for (i, &w) in selfw.iter().enumerate() {
        if w == 0 {
            continue;
        }
        let id = StackId(i as u32);
        by_frame.entry(p.stacks.frame(id)).or_default().0 += u128::from(w);
        path.clear();
        p.stacks.path_into(id, &mut path);
        seen.clear();
        for f in &path {
            if !seen.contains(f) {
                seen.push(*f);
                by_frame.entry(*f).or_default().1 += u128::from(w);
            }
        }
    }
    // Frames with the same name but another kind are one function here.
    let mut out: HashMap<Vec<u8>, (u128, u128)> = HashMap::new();
    for (f, (s, t)) in by_frame {
        let e = out.entry(p.frame_name(f).to_vec()).or_default();
        e.0 += s;
        e.1 += t;
    }
    out
}

/// Every function of either profile with its shares, the largest movers first (by the
/// larger of the self and total changes, in absolute percentage points; ties by name).
/// Shares compare whatever the units of the two profiles.
pub fn function_changes(
    before: &Profile,
    after: &Profile,
) -> Result<Vec<FunctionChange>, DiffError> {
    let (ta, tb) = (total(before, "before")?, total(after, "after")?);
    let a = function_weights(before);
    let b = function_weights(after);
    let pct = |x: u128, total: u64| {
        if total == 0 {
            0.0
        } else {
            x as f64 * 100.0 / total as f64
        }
    };
    let mut names: Vec<&Vec<u8>> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    let mut rows: Vec<FunctionChange> = names
        .into_iter()
        .map(|n| {
            let (sa, xa) = a.get(n).copied().unwrap_or_default();
            let (sb, xb) = b.get(n).copied().unwrap_or_default();
            FunctionChange {
                name: String::from_utf8_lossy(n).into_owned(),
                self_before: pct(sa, ta),
                self_after: pct(sb, tb),
                total_before: pct(xa, ta),
                total_after: pct(xb, tb),
            }
        })
        .collect();
    let key = |r: &FunctionChange| r.self_delta().abs().max(r.total_delta().abs());
    rows.sort_by(|x, y| key(y).total_cmp(&key(x)).then_with(|| x.name.cmp(&y.name)));
    Ok(rows)
}

/// Writes the first `limit` rows as an aligned text table.
pub fn write_table(
    rows: &[FunctionChange],
    limit: usize,
    out: &mut dyn Write,
) -> Result<(), DiffError> {
    let rows = &rows[..rows.len().min(limit)];
    // Names come from the profiles read: shown through the one sanitiser (escaped, cut
    // to 80 characters), so a name cannot rewrite the terminal or reorder the row.
    let names: Vec<String> = rows
        .iter()
        .map(|r| kiln_model::text::clean_cut(&r.name, 80).into_owned())
        .collect();
    let width = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(8)
        .clamp(8, 100);
    writeln!(
        out,
        "{:<width$}  {:>8} {:>8} {:>8}  {:>8} {:>8} {:>8}",
        "function", "self%", "self%", "Δself", "total%", "total%", "Δtotal"
    )?;
    writeln!(
        out,
        "{:<width$}  {:>8} {:>8} {:>8}  {:>8} {:>8} {:>8}",
        "", "before", "after", "", "before", "after", ""
    )?;
    for (r, name) in rows.iter().zip(names) {
        let mark = match (r.total_before == 0.0, r.total_after == 0.0) {
            (true, false) => " (new)",
            (false, true) => " (gone)",
            _ => "",
        };
        writeln!(
            out,
            "{:<width$}  {:>8.2} {:>8.2} {:>+8.2}  {:>8.2} {:>8.2} {:>+8.2}{mark}",
            name,
            r.self_before,
            r.self_after,
            r.self_delta(),
            r.total_before,
            r.total_after,
            r.total_delta(),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::{FrameKind, ThreadId, NO_TIME};

    fn profile(lines: &[(&str, u64)]) -> Profile {
        let mut p = Profile::default();
        for (s, w) in lines {
            let f: Vec<_> = s
                .split(';')
                .map(|n| p.frame(n.as_bytes(), FrameKind::Unknown))
                .collect();
            p.add_sample_path(&f, *w, NO_TIME, ThreadId::NONE);
        }
        p
    }

    #[test]
    fn difffolded_semantics() {
        let a = profile(&[("main;route", 95), ("main;other", 5)]);
        let b = profile(&[("main;route", 25), ("main;other", 50), ("main;new", 125)]);
        let mut out = Vec::new();
        write_diff_folded(&a, &b, DiffOptions::default(), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "main;new 0 125\nmain;other 5 50\nmain;route 95 25\n"
        );
        let mut out = Vec::new();
        write_diff_folded(&a, &b, DiffOptions { normalize: true }, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "main;new 0 125\nmain;other 10 50\nmain;route 190 25\n"
        );
    }

    #[test]
    fn function_table_shares() {
        let a = profile(&[("main;rabbit_exchange:route/2", 95), ("main;f;f", 5)]);
        let b = profile(&[("main;rabbit_exchange:route/2", 25), ("main;f;f", 75)]);
        let rows = function_changes(&a, &b).unwrap();
        // Both moved 70 points: ties go by name.
        assert_eq!(rows[0].name, "f");
        assert_eq!(rows[1].name, "rabbit_exchange:route/2");
        assert_eq!((rows[1].self_before, rows[1].self_after), (95.0, 25.0));
        let f = rows.iter().find(|r| r.name == "f").unwrap();
        // Recursion counts once in the total.
        assert_eq!((f.total_before, f.total_after), (5.0, 75.0));
        let main = rows.iter().find(|r| r.name == "main").unwrap();
        assert_eq!((main.total_before, main.self_before), (100.0, 0.0));
        let mut out = Vec::new();
        write_table(&rows, 10, &mut out).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(
            t.contains("rabbit_exchange:route/2     95.00    25.00   -70.00"),
            "{t}"
        );
        // A name from a hostile file neither rewrites the terminal nor reorders its row.
        let a = profile(&[("main;evil\u{1b}]0x\u{7}\u{202e}txt", 1)]);
        let rows = function_changes(&a, &a).unwrap();
        let mut out = Vec::new();
        write_table(&rows, 10, &mut out).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(t.contains("evil\\x1b]0x\\x07\\u{202e}txt"), "{t}");
        assert!(!t.contains('\u{1b}') && !t.contains('\u{202e}'), "{t}");
    }

    #[test]
    fn counts_in_different_units_are_refused_shares_are_not() {
        let mut a = profile(&[("main;f", 5)]);
        let mut b = profile(&[("main;f", 7_000_000)]);
        // Folded input says nothing of its unit: comparable with anything.
        assert!(comparable(&a, &b).is_ok());
        a.event = kiln_model::EventInfo {
            name: "cpu-clock".into(),
            unit: WeightUnit::Samples,
            ..Default::default()
        };
        b.event = kiln_model::EventInfo {
            name: "cpu-clock".into(),
            unit: WeightUnit::Nanoseconds,
            ..Default::default()
        };
        let e = comparable(&a, &b).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the profiles do not count the same thing: the one before counts samples, the one after nanoseconds"
        );
        let mut out = Vec::new();
        assert!(matches!(
            write_diff_folded(&a, &b, DiffOptions::default(), &mut out),
            Err(DiffError::UnitsDiffer { .. })
        ));
        write_diff_folded(&a, &b, DiffOptions { normalize: true }, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "main;f 7000000 7000000\n");
        assert_eq!(function_changes(&a, &b).unwrap()[0].self_after, 100.0);
    }

    #[test]
    fn totals_beyond_64_bits_are_errors() {
        let big = profile(&[("main;a", u64::MAX), ("main;b", u64::MAX)]);
        let small = profile(&[("main;a", 1)]);
        let mut out = Vec::new();
        let e = write_diff_folded(&small, &big, DiffOptions::default(), &mut out).unwrap_err();
        assert!(
            matches!(e, DiffError::WeightOverflow { side: "after" }),
            "{e}"
        );
        assert!(function_changes(&big, &small).is_err());
    }
}
