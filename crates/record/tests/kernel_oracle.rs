//! Kernel frames against an independent oracle: `perf record -g` samples the same process
//! for the same seconds, and the functions where the kernel was interrupted (the leaves of
//! kernel stacks) must carry the same shares in kiln's profile as in perf's
//! (`perf report --no-children --sort sym`). No frame may name kiln's own eBPF programs,
//! and no sample may fall on an address kallsyms does not cover.
mod common;

use common::*;
use kiln_record::{record, RecordOptions, Target};
use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The address of each kernel text symbol, so that aliases (`__x86_indirect_thunk_rax`
/// and `__pi___x86_indirect_thunk_rax`) compare as one function.
fn kernel_addresses() -> HashMap<String, u64> {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let mut m = HashMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(a), Some(k), Some(n)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if matches!(k, "t" | "T" | "w" | "W") {
            if let Ok(a) = u64::from_str_radix(a, 16) {
                m.entry(n.to_string()).or_insert(a);
            }
        }
    }
    m
}

/// perf's share of samples per kernel leaf function (percent of all samples).
fn perf_kernel_leaves(data: &std::path::Path) -> Vec<(String, f64)> {
    let out = Command::new("perf")
        .args([
            "report",
            "--no-children",
            "--sort",
            "sym",
            "--stdio",
            "-g",
            "none",
            "-i",
        ])
        .arg(data)
        .stderr(Stdio::null())
        .output()
        .expect("perf report runs");
    assert!(out.status.success(), "perf report failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (pct, rest) = l.trim().split_once('%')?;
            let name = rest.trim().strip_prefix("[k] ")?;
            Some((name.trim().to_string(), pct.trim().parse().ok()?))
        })
        .collect()
}

/// Records `exe ARGS` (running about 8 s) with kiln and with `perf record -g` at once for
/// 3 s, and compares their kernel leaves.
fn agree_with_perf(exe: &std::path::Path, args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(exe).args(args).spawn().unwrap();
    let pid = child.id();
    let data = dir.path().join("perf.data");
    let mut perf = Command::new("perf")
        .args([
            "record",
            "-q",
            "-g",
            "-F",
            "999",
            "-p",
            &pid.to_string(),
            "-o",
        ])
        .arg(&data)
        .args(["--", "sleep", "3"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("perf record starts");
    let mut opts = RecordOptions::new(Target::Pids(vec![pid]));
    opts.duration = Some(Duration::from_secs(3));
    let rec = record(&opts).expect("recording works");
    assert!(perf.wait().unwrap().success(), "perf record failed");
    child.kill().ok();
    child.wait().ok();

    let lines = folded(&rec.profiles[0]);
    let total: u64 = lines.iter().map(|l| l.1).sum();
    assert!(total > 300, "too few samples: {total}\n{}", dump(&lines));
    for (frames, _) in &lines {
        for f in frames {
            assert!(
                !f.starts_with("bpf_prog_") && f != "[bpf]" && f != "[unknown kernel]",
                "a frame that is no function of the process: {f}\n{}",
                dump(&lines)
            );
        }
    }
    let addr = kernel_addresses();
    let key = |n: &str| addr.get(n).map_or(n.to_string(), |a| format!("{a:x}"));
    let mut kiln: HashMap<String, f64> = HashMap::new();
    for (frames, w) in &lines {
        let leaf = frames.last().unwrap();
        if addr.contains_key(leaf.as_str()) {
            *kiln.entry(key(leaf)).or_default() += 100.0 * *w as f64 / total as f64;
        }
    }
    let mut perf: HashMap<String, (String, f64)> = HashMap::new();
    for (n, pct) in perf_kernel_leaves(&data) {
        let e = perf.entry(key(&n)).or_insert((n, 0.0));
        e.1 += pct;
    }
    let mut top: Vec<_> = perf.iter().filter(|(_, (_, p))| *p >= 4.0).collect();
    top.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1));
    assert!(!top.is_empty(), "perf saw no kernel leaf above 4%");
    let report = || {
        top.iter()
            .map(|(k, (n, p))| {
                format!(
                    "{n}: perf {p:.1}%, kiln {:.1}%\n",
                    kiln.get(*k).unwrap_or(&0.0)
                )
            })
            .collect::<String>()
    };
    for (k, (_, p)) in &top {
        let ours = kiln.get(*k).copied().unwrap_or(0.0);
        assert!(
            (ours - p).abs() <= f64::max(4.0, 0.35 * p),
            "kernel leaves disagree with perf:\n{}\n{}",
            report(),
            dump(&lines)
        );
    }
}

#[test]
fn syscall_loop_kernel_leaves_agree_with_perf() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(dir.path(), "syscalls.c", "syscalls", &["-O2"]);
    agree_with_perf(&exe, &["8"]);
}

#[test]
fn loopback_echo_kernel_leaves_agree_with_perf() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(dir.path(), "echo.c", "echo", &["-O2", "-pthread"]);
    agree_with_perf(&exe, &["8"]);
}
