//! kiln against inferno-collapse-perf (from crates.io) on the same real recordings.
//!
//! Where inferno is right, the folded outputs are byte-identical. Where they differ, kiln
//! keeps something inferno loses, and each such difference is undone here by a named rule
//! before comparing, so any other difference fails the test:
//!
//! 1. `comm_with_number_word`: inferno takes the first all-digit word of a header as the
//!    thread id, so the thread `worker 1` becomes `worker` (its samples merge with other
//!    threads'); kiln anchors on the timestamp and keeps `worker_1`.
//! 2. `paren_frames`: inferno skips every frame whose symbol starts with `(` — meant for
//!    process names, it hits C++ `(anonymous namespace)::…` — and a sample left with no
//!    frame is dropped whole; kiln keeps them.
//! 3. `dash_one_task`: inferno cannot read the header of a task named `:-1` with pid `-1`
//!    and drops the sample; kiln keeps it.
//! 4. `deleted_module`: for a frame without symbol in a module perf marks `(deleted)`,
//!    inferno takes ` (deleted)` apart and names the frame `[unknown] `; kiln names it after
//!    the module like any other (`[memfd:sealed-91173221a7ea]`).
//! 5. `tracepoint_args`: inferno rejects headers followed by tracepoint argument text
//!    ("Weird event line") and loses every sample of such a recording; kiln keeps them.
mod common;
use common::*;
use kiln_collapse::{perf, Options};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Command;

fn inferno() -> PathBuf {
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("inferno-collapse-perf"))
                .collect()
        })
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cargo/bin/inferno-collapse-perf"));
    }
    let found = candidates.into_iter().find(|p| p.is_file());
    // The anchor is part of the test suite's set-up: without it this test cannot tell
    // anything, so it fails rather than passing silently.
    found.unwrap_or_else(|| panic!("inferno-collapse-perf not found: install it with `cargo install inferno` (scripts/install-deps.sh does)"))
}

/// Root frames as kiln and as inferno name them, for every header of the file: inferno
/// reads the first word made of digits (or `digits/digits`) as the pid/tid, and the words
/// before it as the comm.
fn inferno_roots(text: &str, with_pid: bool) -> HashMap<String, String> {
    let mut map = HashMap::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('\t') || line.starts_with('#') {
            continue;
        }
        let Some(h) = kiln_collapse::perf::parse_header(line.as_bytes()) else {
            continue;
        };
        let comm = String::from_utf8_lossy(h.comm).replace(' ', "_");
        let mut ours = comm.clone();
        if with_pid {
            ours = format!("{ours}-{}", String::from_utf8_lossy(h.pid_text));
        }
        let words: Vec<&str> = line
            .trim_start()
            .split(' ')
            .filter(|w| !w.is_empty())
            .collect();
        let is_id = |w: &str| {
            let w = w.replace('/', "");
            !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit())
        };
        let theirs = match words.iter().skip(1).position(|w| is_id(w)) {
            Some(i) => {
                let word = words[i + 1];
                let pid = word.split_once('/').map_or("?", |(p, _)| p);
                let c = words[..i + 1].join("_");
                if with_pid {
                    format!("{c}-{pid}")
                } else {
                    c
                }
            }
            None => continue,
        };
        map.insert(ours, theirs);
    }
    map
}

fn deleted_modules(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_suffix(" (deleted))"))
        .filter_map(|l| l.rsplit_once('/'))
        .map(|(_, name)| name.to_string())
        .collect()
}

/// kiln's folded output rewritten by the rules above into what inferno prints.
fn as_inferno_would(kiln: &str, text: &str, with_pid: bool) -> String {
    let roots = inferno_roots(text, with_pid);
    let deleted = deleted_modules(text);
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for line in kiln.lines() {
        let (stack, count) = line.rsplit_once(' ').unwrap();
        let count: u64 = count.parse().unwrap();
        let mut frames: Vec<String> = stack.split(';').map(str::to_string).collect();
        if frames[0].starts_with(":-1") {
            continue; // rule 3
        }
        if let Some(r) = roots.get(&frames[0]) {
            frames[0] = r.clone(); // rule 1
        }
        let root = frames.remove(0);
        frames.retain(|f| !f.starts_with('(')); // rule 2
        if frames.is_empty() {
            continue; // rule 2: nothing left, inferno drops the sample
        }
        for f in frames.iter_mut() {
            if deleted
                .iter()
                .any(|d| *f == format!("[{d}]") || f.starts_with(&format!("[{d} <")))
            {
                *f = "[unknown] ".to_string(); // rule 4
            }
        }
        let key = format!("{root};{}", frames.join(";"));
        *out.entry(key).or_default() += count;
    }
    out.into_iter().map(|(k, v)| format!("{k} {v}\n")).collect()
}

#[test]
fn matches_inferno_where_inferno_is_right() {
    let inferno = inferno();
    let dir = data_dir();
    for fx in [
        "cpu-fp",
        "cpu-dwarf",
        "mixed-events",
        "no-callchain",
        "anon-cpp",
        "pid-tid",
        "erlang-jit",
        "system-wide",
    ] {
        let path = dir.join(format!("perf/{fx}.txt"));
        let text = std::fs::read_to_string(&path).unwrap();
        for flags in [&[][..], &["--pid"][..], &["--all"][..], &["--addrs"][..]] {
            let out = Command::new(&inferno)
                .args(flags)
                .arg(&path)
                .output()
                .unwrap();
            assert!(out.status.success());
            let theirs = String::from_utf8(out.stdout).unwrap();
            let mut opts = Options::default();
            opts.perf.include_pid = flags.contains(&"--pid");
            opts.perf.annotate_kernel = flags.contains(&"--all");
            opts.perf.annotate_jit = flags.contains(&"--all");
            opts.perf.include_addrs = flags.contains(&"--addrs");
            let ours = folded(&run(&path, perf::collapse, &opts).profile);
            let expected = as_inferno_would(&ours, &text, flags.contains(&"--pid"));
            pretty_assertions::assert_eq!(expected, theirs, "{fx} {flags:?}");
        }
    }
}

#[test]
fn inferno_loses_tracepoint_recordings_kiln_keeps_them() {
    let inferno = inferno();
    let path = data_dir().join("perf/tracepoints.txt");
    let out = Command::new(&inferno).arg(&path).output().unwrap();
    // Rule 5: inferno prints nothing and warns.
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Weird event line"));
    let c = run(&path, perf::collapse, &Options::default());
    assert!(c.stats.kept > 0);
    assert_eq!(c.stats.read, c.stats.kept + c.stats.skipped_total());
}
