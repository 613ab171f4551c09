//! kiln's differential folded output against inferno-diff-folded (from crates.io) on the
//! same real folded profiles, with and without -n (normalise) and -s (strip hex): the same
//! lines (inferno prints them in hash order, kiln sorted).
use kiln_collapse::{folded, Input, Options};
use kiln_diff::{write_diff_folded, DiffOptions};
use kiln_model::transform::Transforms;
use std::path::{Path, PathBuf};
use std::process::Command;

fn inferno() -> PathBuf {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let found = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("inferno-diff-folded"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .chain([home.join(".cargo/bin/inferno-diff-folded")])
        .find(|p| p.is_file());
    // The anchor is part of the test suite's set-up: without it this test cannot tell
    // anything, so it fails rather than passing silently.
    found.unwrap_or_else(|| panic!("inferno-diff-folded not found: install it with `cargo install inferno` (scripts/install-deps.sh does)"))
}

fn load(path: &Path, strip: bool) -> kiln_model::Profile {
    let data = std::fs::read(path).unwrap();
    let c = folded::collapse(
        Input {
            name: "f",
            data: &data,
        },
        &Options::default(),
    )
    .unwrap();
    let t = Transforms {
        strip_addresses: strip,
        ..Default::default()
    };
    t.apply(&c.profile).0
}

fn sorted(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn matches_inferno_diff_folded() {
    let inferno = inferno();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../collapse/tests/data/results/perf");
    let a = dir.join("cpu-fp.addrs.folded");
    let b = dir.join("system-wide.addrs.folded");
    for (flags, normalize, strip) in [
        (vec![], false, false),
        (vec!["-n"], true, false),
        (vec!["-s"], false, true),
        (vec!["-n", "-s"], true, true),
    ] {
        let out = Command::new(&inferno)
            .args(&flags)
            .arg(&a)
            .arg(&b)
            .output()
            .unwrap();
        assert!(out.status.success());
        let theirs = String::from_utf8(out.stdout).unwrap();
        let mut ours = Vec::new();
        write_diff_folded(
            &load(&a, strip),
            &load(&b, strip),
            DiffOptions { normalize },
            &mut ours,
        )
        .unwrap();
        let ours = String::from_utf8(ours).unwrap();
        assert!(ours.lines().count() > 100, "a real comparison");
        assert_eq!(sorted(&ours), sorted(&theirs), "flags {flags:?}");
    }
}
