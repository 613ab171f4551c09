//! Property tests on random profiles, against a slow, obviously correct model: a map from
//! every stack prefix to the sum of the weights of the samples under it.
mod common;

use common::{by_path, frames, StackPath};
use kiln_flamegraph::{Layout, MinWidth, Options};
use kiln_model::{FrameKind, Profile, ThreadId, NO_TIME};
use proptest::prelude::*;
use std::collections::BTreeMap;

const NAMES: &[&str] = &["a", "b", "a.b", "c", "main", "ab"];

fn samples() -> impl Strategy<Value = Vec<(Vec<usize>, u64)>> {
    prop::collection::vec(
        (prop::collection::vec(0..NAMES.len(), 1..6), 1u64..100),
        1..40,
    )
}

fn model(samples: &[(Vec<usize>, u64)]) -> BTreeMap<StackPath, u64> {
    let mut m = BTreeMap::new();
    for (stack, w) in samples {
        *m.entry(Vec::new()).or_insert(0) += w;
        for k in 1..=stack.len() {
            let path: StackPath = stack[..k].iter().map(|&i| NAMES[i].to_string()).collect();
            *m.entry(path).or_insert(0) += w;
        }
    }
    m
}

fn profile(samples: &[(Vec<usize>, u64)]) -> Profile {
    let mut p = Profile::default();
    for (stack, w) in samples {
        let frames: Vec<_> = stack
            .iter()
            .map(|&i| p.frame(NAMES[i].as_bytes(), FrameKind::Unknown))
            .collect();
        p.add_sample_path(&frames, *w, NO_TIME, ThreadId::NONE);
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn widths_are_totals_and_children_fit(
        s in samples(),
        layout in prop::sample::select(vec![Layout::Classic, Layout::LeftHeavy]),
        inverted in any::<bool>(),
        reverse in any::<bool>(),
    ) {
        let mut opts = Options::default();
        opts.min_width = MinWidth::Pixels(0.0);
        opts.interactive = false;
        opts.layout = layout;
        opts.inverted = inverted;
        opts.reverse = reverse;
        let mut out = Vec::new();
        let stats = kiln_flamegraph::render(&profile(&s), &opts, &mut out).unwrap();
        let svg = String::from_utf8(out).unwrap();
        let mut drawn = frames(&svg);
        let total: u64 = s.iter().map(|(_, w)| w).sum();
        prop_assert_eq!(stats.total, total);
        // Width in percent is proportional to the weight (4 decimals).
        for d in &drawn {
            prop_assert!((d.w_pct - 100.0 * d.w as f64 / total as f64).abs() <= 6e-5, "{:?}", d);
            prop_assert!((d.x_pct - 100.0 * d.x as f64 / total as f64).abs() <= 6e-5, "{:?}", d);
        }
        if inverted {
            // by_path expects the root at the largest y: mirror.
            for d in &mut drawn { d.y = -d.y; }
        }
        let got: BTreeMap<StackPath, u64> = by_path(&drawn).into_iter().map(|(p, d)| (p, d.w)).collect();
        let want = if reverse {
            let rev: Vec<_> = s.iter().map(|(st, w)| (st.iter().rev().copied().collect(), *w)).collect();
            model(&rev)
        } else {
            model(&s)
        };
        // Every prefix is one rectangle whose width is its total.
        prop_assert_eq!(got, want);
        // Children fit in their parent and siblings do not overlap (by_path found each
        // rectangle's parent by containment; check siblings here).
        let paths = by_path(&drawn);
        for (i, (p, d)) in paths.iter().enumerate() {
            for (q, e) in &paths[i + 1..] {
                if !p.is_empty() && p.len() == q.len() && p[..p.len() - 1] == q[..q.len() - 1] {
                    prop_assert!(d.x + d.w <= e.x || e.x + e.w <= d.x, "{:?} overlaps {:?}", p, q);
                }
            }
        }
    }

    #[test]
    fn flame_chart_keeps_sample_order(s in samples()) {
        let mut opts = Options::default();
        opts.min_width = MinWidth::Pixels(0.0);
        opts.interactive = false;
        opts.layout = Layout::FlameChart;
        let mut out = Vec::new();
        kiln_flamegraph::render(&profile(&s), &opts, &mut out).unwrap();
        let drawn = frames(&String::from_utf8(out).unwrap());
        // Slow model: level-1 runs of equal consecutive roots.
        let mut runs: Vec<(String, u64, u64)> = Vec::new();
        let mut t = 0;
        for (stack, w) in &s {
            let name = NAMES[stack[0]].to_string();
            match runs.last_mut() {
                Some((n, x, len)) if *n == name && *x + *len == t => *len += w,
                _ => runs.push((name, t, *w)),
            }
            t += w;
        }
        let root_y = drawn[0].y;
        let level1_y = drawn.iter().map(|d| d.y).filter(|&y| y < root_y).fold(f64::MIN, f64::max);
        let mut got: Vec<(String, u64, u64)> = drawn
            .iter()
            .filter(|d| d.y == level1_y)
            .map(|d| (common::name_of(&d.title).to_string(), d.x, d.w))
            .collect();
        got.sort_by_key(|r| r.1);
        prop_assert_eq!(got, runs);
    }
}
