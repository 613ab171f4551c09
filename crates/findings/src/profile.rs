//! What a CPU profile says a thread group did: its weight by the program's function (the
//! program's own frame nearest each sample's leaf, past the runtimes' and the C library's
//! frames) and by category (garbage collection, page faults, spinning…), the categories
//! being the ones every page shows ([`kiln_model::categories`]).
use crate::threads::group_of;
use kiln_model::categories::{Categoriser, Rules};
use kiln_model::waits::program_frame;
use kiln_model::{FrameId, FrameKind, Profile, ThreadId};
use std::collections::HashMap;

/// Which of `p`'s samples belong to thread group `group` (all of them for `None`).
pub fn in_group(p: &Profile, group: Option<&str>) -> Vec<bool> {
    let Some(g) = group else {
        return vec![true; p.samples.len()];
    };
    let of_thread: Vec<bool> = p
        .threads
        .iter()
        .map(|(_, t)| group_of(p.strings.get(t.name)) == g)
        .collect();
    p.samples
        .thread
        .iter()
        .map(|&t| t != ThreadId::NONE && of_thread.get(t.0 as usize).copied().unwrap_or(false))
        .collect()
}

/// Which of `p`'s samples have a stack `pred` holds for, given the stack's frames from
/// the root to the leaf (each stack walked once, however many samples share it).
pub fn with_stack(p: &Profile, mut pred: impl FnMut(&[FrameId]) -> bool) -> Vec<bool> {
    let mut path = Vec::new();
    let by_stack: Vec<bool> = p
        .stacks
        .ids()
        .map(|id| {
            path.clear();
            p.stacks.path_into(id, &mut path);
            pred(&path)
        })
        .collect();
    p.samples
        .stack
        .iter()
        .map(|s| by_stack.get(s.0 as usize).copied().unwrap_or(false))
        .collect()
}

/// The share of `p`'s weight in the samples `keep` marks (0 for an empty profile).
pub fn kept_share(p: &Profile, keep: &[bool]) -> f64 {
    let (mut kept, mut total) = (0u128, 0u128);
    for (i, &w) in p.samples.weight.iter().enumerate() {
        total += w as u128;
        if keep.get(i).copied().unwrap_or(false) {
            kept += w as u128;
        }
    }
    kept as f64 / total.max(1) as f64
}

/// The seconds `p`'s samples that `keep` marks stand for (0 for a profile with no time
/// per sample).
pub fn kept_seconds(p: &Profile, keep: &[bool]) -> f64 {
    let Some(ns) = p.event.ns_per_weight() else {
        return 0.0;
    };
    let w: u128 = p
        .samples
        .weight
        .iter()
        .zip(keep)
        .filter(|(_, &k)| k)
        .map(|(&w, _)| w as u128)
        .sum();
    w as f64 * ns / 1e9
}

/// `p`'s weight (of the samples `keep` marks) by the program's function nearest the leaf,
/// heaviest first, and the weight of those samples in all. Samples with no program frame
/// (all runtime, all kernel) are left out of the list, not of the total.
pub fn program_functions(p: &Profile, keep: &[bool]) -> (Vec<(String, u128)>, u128) {
    let mut by: HashMap<String, u128> = HashMap::new();
    let mut total = 0u128;
    let mut path = Vec::new();
    let mut seen: Vec<Option<Option<String>>> = vec![None; p.stacks.len()];
    for i in 0..p.samples.len() {
        if !keep.get(i).copied().unwrap_or(false) {
            continue;
        }
        let (st, w) = (p.samples.stack[i], p.samples.weight[i] as u128);
        total += w;
        let Some(slot) = seen.get_mut(st.0 as usize) else {
            continue;
        };
        let name = slot.get_or_insert_with(|| {
            path.clear();
            p.stacks.path_into(st, &mut path);
            let user: Vec<(String, FrameKind)> = path
                .iter()
                .map(|&f| {
                    (
                        String::from_utf8_lossy(p.frame_name(f)).into_owned(),
                        p.frames.get(f).kind,
                    )
                })
                .filter(|(_, k)| !matches!(k, FrameKind::Kernel | FrameKind::Root))
                .collect();
            // In a managed runtime the program is its JIT-compiled (or interpreted Python)
            // code: the deepest such frame, above the runtime's and the libraries' C.
            let managed = user
                .iter()
                .rposition(|(n, k)| {
                    matches!(k, FrameKind::Jit | FrameKind::Python) && !n.starts_with("$global::")
                })
                .map(|i| user[i].0.clone());
            let names: Vec<&str> = user.iter().map(|(n, _)| n.as_str()).collect();
            managed.or_else(|| program_frame(&names).map(|i| names[i].to_string()))
        });
        if let Some(n) = name {
            *by.entry(n.clone()).or_default() += w;
        }
    }
    let mut v: Vec<(String, u128)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    (v, total)
}

/// The built-in category rules, compiled once.
pub fn builtin() -> Option<&'static Categoriser> {
    static C: std::sync::OnceLock<Option<Categoriser>> = std::sync::OnceLock::new();
    C.get_or_init(|| Categoriser::new(&Rules::builtin()).ok())
        .as_ref()
}

/// Whether each of `p`'s samples is in one of the categories `pred` names.
pub fn in_categories(p: &Profile, pred: impl Fn(&str) -> bool) -> Vec<bool> {
    let Some(c) = builtin() else {
        return vec![false; p.samples.len()];
    };
    let names = c.categories();
    c.samples(p)
        .into_iter()
        .map(|i| names.get(i).is_some_and(|n| pred(n)))
        .collect()
}

/// `p`'s weight (of the samples `keep` marks) by category of the built-in rules, the
/// heaviest first, and in all.
pub fn categories(p: &Profile, keep: &[bool]) -> (Vec<(String, u128)>, u128) {
    let Some(c) = builtin() else {
        return (Vec::new(), 0);
    };
    let names = c.categories();
    let mut w: Vec<u128> = vec![0; names.len() + 2];
    let mut total = 0u128;
    for (i, cat) in c.samples(p).into_iter().enumerate() {
        if keep.get(i).copied().unwrap_or(false) {
            let x = p.samples.weight[i] as u128;
            w[cat] += x;
            total += x;
        }
    }
    let mut out: Vec<(String, u128)> = w
        .into_iter()
        .enumerate()
        .filter(|(_, x)| *x > 0)
        .map(|(i, x)| {
            let n = match i.checked_sub(names.len()) {
                None => names[i].clone(),
                Some(0) => kiln_model::categories::OTHER.to_string(),
                Some(_) => kiln_model::categories::OTHER_KERNEL.to_string(),
            };
            (n, x)
        })
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    (out, total)
}

/// The share (0 to 1) of `total` the categories named by `pred` weigh in `cats`.
pub fn share_of(cats: &(Vec<(String, u128)>, u128), pred: impl Fn(&str) -> bool) -> f64 {
    if cats.1 == 0 {
        return 0.0;
    }
    cats.0
        .iter()
        .filter(|(n, _)| pred(n))
        .map(|(_, w)| *w)
        .sum::<u128>() as f64
        / cats.1 as f64
}

/// The top `n` program functions of `keep`'s samples as `name (share)`, shares of the
/// samples' weight.
pub fn top_named(p: &Profile, keep: &[bool], n: usize) -> Vec<(String, f64)> {
    let (v, total) = program_functions(p, keep);
    if total == 0 {
        return Vec::new();
    }
    v.into_iter()
        .take(n)
        .map(|(name, w)| (name, w as f64 / total as f64))
        .collect()
}
