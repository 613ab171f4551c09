//! Compatibility with inferno-flamegraph (and so flamegraph.pl): both render the same
//! folded input; the rectangles must agree.
//!
//! What is compared, and why not everything:
//! * **Width of every stack path** (the `fg:w` of each rectangle, summed per path from the
//!   root): always equal.
//! * **Position (`fg:x`) and level** of every rectangle, except under a parent whose
//!   children inferno splits. inferno and flamegraph.pl merge *sorted lines*, so a
//!   function with both its own samples and callees (`run;foo 4` and `run;foo;baz 7`) is
//!   drawn twice when a sibling's name sorts between ` ` and `;` (`run;foo.bar 9`:
//!   `.` sorts after the space and before `;`). kiln merges the call tree, so `foo` is one
//!   rectangle and its siblings are ordered around it; their positions differ, the widths
//!   do not.
//! * **Tooltips**: inferno's `name (N samples, P%)` (and `; ±D%` in a diff) text equals
//!   kiln's for every unsplit rectangle.
//! * **Zero-width rectangles**: with `--minwidth 0`, inferno and flamegraph.pl still draw
//!   frames of width 0 (in a differential graph, stacks whose second count is 0). They
//!   are invisible; kiln leaves them out, so they are dropped from inferno's side here.
//! * Colours are random in inferno by default; they are not compared.
//!
//! The test needs `inferno-flamegraph` (in `~/.cargo/bin` or on `PATH`; CI installs it with
//! `cargo install inferno`). Without it, it prints why and passes without comparing.
mod common;

use common::{by_path, data_dir, frames, render_folded, Drawn, StackPath as Path};
use kiln_flamegraph::{MinWidth, Options};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

fn inferno() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let candidates = home
        .map(|h| h.join(".cargo/bin/inferno-flamegraph"))
        .into_iter()
        .chain(std::env::var_os("PATH").into_iter().flat_map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("inferno-flamegraph"))
                .collect::<Vec<_>>()
        }));
    candidates.into_iter().find(|p| p.is_file())
}

/// Rectangles drawn by kiln, how many matched inferno's exactly, how many parents inferno
/// splits; `None` when inferno is not installed.
fn compare(fixture: &str) -> Option<(usize, usize, usize)> {
    let Some(inferno) = inferno() else {
        kiln_testkit::skip(
            "inferno-flamegraph not found in ~/.cargo/bin or PATH (cargo install inferno)",
        );
        return None;
    };
    let input = data_dir().join(fixture);
    let out = Command::new(&inferno)
        .arg("--minwidth")
        .arg("0")
        .arg(&input)
        .output()
        .expect("run inferno-flamegraph");
    assert!(
        out.status.success(),
        "inferno failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut theirs_drawn = frames(&String::from_utf8(out.stdout).unwrap());
    theirs_drawn.retain(|d| d.w > 0);
    let theirs = by_path(&theirs_drawn);

    let mut opts = Options::default();
    opts.min_width = MinWidth::Pixels(0.0);
    let (svg, _) = render_folded(&std::fs::read(&input).unwrap(), &opts);
    let ours = by_path(&frames(&svg));

    // Paths inferno draws more than once, and the parents whose children it splits.
    let mut count: BTreeMap<&Path, usize> = BTreeMap::new();
    for (p, _) in &theirs {
        *count.entry(p).or_default() += 1;
    }
    let split: BTreeSet<Path> = count
        .iter()
        .filter(|(_, &n)| n > 1)
        .map(|(p, _)| p[..p.len() - 1].to_vec())
        .collect();
    let affected = |p: &Path| (0..p.len()).any(|k| split.contains(&p[..k]));

    // 1. Width per path.
    let sum = |v: &[(Path, Drawn)]| {
        let mut m: BTreeMap<Path, u64> = BTreeMap::new();
        for (p, d) in v {
            *m.entry(p.clone()).or_default() += d.w;
        }
        m
    };
    pretty_assertions::assert_eq!(sum(&theirs), sum(&ours), "{fixture}: width per stack path");

    // 2. Position and tooltip of every rectangle not under a split parent.
    let theirs_one: BTreeMap<&Path, &Drawn> = theirs
        .iter()
        .filter(|(p, _)| count[p] == 1)
        .map(|(p, d)| (p, d))
        .collect();
    let mut checked = 0;
    for (p, d) in &ours {
        if affected(p) || count.get(p) != Some(&1) {
            continue;
        }
        let t = theirs_one[p];
        assert_eq!((d.x, d.w), (t.x, t.w), "{fixture}: position of {p:?}");
        assert_eq!(d.title, t.title, "{fixture}: tooltip of {p:?}");
        checked += 1;
    }
    eprintln!(
        "{fixture}: {} rectangles, {checked} compared exactly, {} parents split by inferno",
        ours.len(),
        split.len()
    );
    Some((ours.len(), checked, split.len()))
}

#[test]
fn same_rectangles_as_inferno_on_a_real_perf_profile() {
    if let Some((drawn, checked, split)) = compare("real.folded") {
        assert_eq!(
            split, 0,
            "no sibling names sort between ' ' and ';' in this profile"
        );
        assert_eq!(checked, drawn, "every rectangle is identical");
        assert!(drawn > 1000);
    }
}

#[test]
fn same_rectangles_as_inferno_where_it_splits_a_function() {
    if let Some((drawn, checked, split)) = compare("simple.folded") {
        // `main;run` has children `foo` (own samples and callees) and `foo.bar`.
        assert_eq!(split, 1);
        assert!(checked > 0 && checked < drawn, "{checked} of {drawn}");
    }
}

#[test]
fn same_differential_as_inferno() {
    if let Some((drawn, checked, split)) = compare("diff.folded") {
        assert_eq!(split, 0);
        assert_eq!(checked, drawn, "positions and `; +D%` tooltips agree");
    }
}
