//! Kernel frames against an independent oracle: `perf record -g` samples the same process
//! for the same seconds, and the functions where the kernel was interrupted (the leaves of
//! kernel stacks) must carry the same shares in kiln's profile as in perf's
//! (`perf report --no-children --sort sym`). No frame may name kiln's own eBPF programs,
//! and no sample may fall on an address kallsyms does not cover.
mod common;

use common::*;
use kiln_record::{record, RecordOptions, Target};
use kiln_testkit::perf_oracle::{assert_kernel_leaves_agree, PerfRecord};
use std::process::Command;
use std::time::Duration;

/// Records `exe ARGS` (running about 8 s) with kiln and with `perf record -g` at once for
/// 3 s, and compares their kernel leaves.
fn agree_with_perf(exe: &std::path::Path, args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(exe).args(args).spawn().unwrap();
    let pid = child.id();
    let perf = PerfRecord::start(pid, 3, dir.path());
    let mut opts = RecordOptions::new(Target::Pids(vec![pid]));
    opts.duration = Some(Duration::from_secs(3));
    let rec = record(&opts).expect("recording works");
    let perf = perf.kernel_leaves();
    child.kill().ok();
    child.wait().ok();
    let text: String = folded(&rec.profiles[0])
        .iter()
        .map(|(f, w)| format!("{} {w}\n", f.join(";")))
        .collect();
    assert_kernel_leaves_agree(&text, &perf, 4.0);
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
