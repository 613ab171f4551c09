//! On-CPU recording of C programs with known hot functions, built with and without frame
//! pointers, unwound in the kernel and from stack copies: the split of the work must come
//! out as designed and stacks must reach main.
mod common;

use common::*;
use kiln_record::{record, RecordOptions, StopReason, Target, UnwindMode};
use std::time::Duration;

const NO_FP: [&str; 5] = [
    "-O2",
    "-fno-inline",
    "-fno-ipa-icf",
    "-fno-optimize-sibling-calls",
    "-fomit-frame-pointer",
];
const FP: [&str; 5] = [
    "-O2",
    "-fno-inline",
    "-fno-ipa-icf",
    "-fno-optimize-sibling-calls",
    "-fno-omit-frame-pointer",
];

fn check_hot(flags: &[&str], name: &str, mode: UnwindMode) {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(dir.path(), "hot.c", name, flags);
    let mut opts = RecordOptions::new(Target::Command(vec![exe.into(), "1.5".into()]));
    opts.duration = Some(Duration::from_secs(20));
    opts.unwind = mode;
    let rec = record(&opts).expect("recording works");
    assert_eq!(rec.stopped, StopReason::TargetExited);
    assert!(rec.exit_status.unwrap().success());
    assert_eq!(rec.profiles.len(), 1);
    let p = &rec.profiles[0];
    assert_eq!(p.event.name, "cpu-clock");
    let lines = folded(p);
    let total: u64 = lines.iter().map(|l| l.1).sum();
    assert!(
        total > 100,
        "1.5 s of CPU at 999 Hz gives up to 1500 samples, got {total}\n{}",
        dump(&lines)
    );
    let complete = |f: &[String]| {
        f.first().map(String::as_str) == Some(name)
            && f.iter().any(|x| x == "main")
            && f.len() >= 2
            && f[f.len() - 2] == "work"
    };
    let (a, a_ok) = leaf_weight(&lines, "hot_a", complete);
    let (b, b_ok) = leaf_weight(&lines, "hot_b", complete);
    let share = a as f64 / (a + b) as f64;
    assert!(
        (share - 2.0 / 3.0).abs() < 0.08,
        "hot_a share {share:.3} (a={a}, b={b})\n{}",
        dump(&lines)
    );
    assert!(
        (a + b) as f64 > 0.9 * total as f64,
        "hot functions should take nearly all samples\n{}",
        dump(&lines)
    );
    assert!(
        (a_ok + b_ok) as f64 >= 0.97 * (a + b) as f64,
        "stacks must reach main through work: {a_ok}+{b_ok} of {a}+{b}\n{}",
        dump(&lines)
    );
    // Per-sample time and thread are kept.
    assert_eq!(p.samples.len() as u64, rec.summary.samples[0]);
    let (t0, t1) = p.samples.time_range().expect("timestamps");
    assert!(
        t1 > t0 && (t1 - t0) > 1_000_000_000,
        "the samples span the run"
    );
    let th = p.threads.get(p.samples.thread[0]).expect("thread known");
    assert!(th.pid.is_some() && th.tid.is_some());
    // The summary says how the stacks were unwound, and every sample is accounted for.
    #[cfg(not(feature = "bpf"))]
    assert_eq!(
        mode,
        UnwindMode::Copy,
        "without eBPF, stacks are unwound from copies"
    );
    #[cfg(feature = "bpf")]
    match (mode, &rec.summary.in_kernel) {
        (UnwindMode::Kernel, Some(k)) => {
            assert!(
                k.ended_at_root + k.no_tables >= rec.summary.samples[0] * 97 / 100,
                "in-kernel walks should end at the root: {k:?}"
            );
            assert!(k.cfi_frames > 0 || k.fp_frames > 0, "{k:?}");
        }
        (UnwindMode::Copy, None) => {}
        (m, k) => panic!("unwind mode {m:?} but in-kernel summary {k:?}"),
    }
}

#[test]
#[cfg(feature = "bpf")] // unwound in the kernel
fn hot_functions_with_frame_pointers() {
    check_hot(&FP, "hot-fp", UnwindMode::Kernel);
}

#[test]
fn hot_functions_with_frame_pointers_from_stack_copies() {
    check_hot(&FP, "hot-fp-copy", UnwindMode::Copy);
}

#[test]
fn hot_functions_without_frame_pointers_from_stack_copies() {
    check_hot(&NO_FP, "hot-nofp-copy", UnwindMode::Copy);
}

/// A stripped binary has no names for its functions; samples anywhere in one function
/// still share one frame, named after the image and the function's start (from its
/// unwind information), so the split of the work survives stripping.
#[test]
fn stripped_functions_are_named_by_their_start() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(dir.path(), "hot.c", "hot-stripped", &NO_FP);
    let st = std::process::Command::new("strip")
        .arg(&exe)
        .status()
        .expect("strip runs (binutils)");
    assert!(st.success());
    let mut opts = RecordOptions::new(Target::Command(vec![exe.into(), "1.5".into()]));
    opts.duration = Some(Duration::from_secs(20));
    let rec = record(&opts).expect("recording works");
    let lines = folded(&rec.profiles[0]);
    let mut leaves: std::collections::HashMap<String, u64> = Default::default();
    let mut total = 0;
    for (f, w) in &lines {
        total += w;
        let leaf = f.last().unwrap();
        if leaf.starts_with("hot-stripped+0x") {
            *leaves.entry(leaf.clone()).or_default() += w;
        }
    }
    let mut top: Vec<u64> = leaves.values().copied().collect();
    top.sort_unstable_by(|a, b| b.cmp(a));
    assert!(
        top.len() >= 2 && top[0] + top[1] > total * 9 / 10,
        "two leaf functions should take nearly all samples: {leaves:?}\n{}",
        dump(&lines)
    );
    let share = top[0] as f64 / (top[0] + top[1]) as f64;
    assert!(
        (share - 2.0 / 3.0).abs() < 0.08,
        "the larger function's share {share:.3}\n{}",
        dump(&lines)
    );
}

#[test]
#[cfg(feature = "bpf")] // unwound in the kernel
fn hot_functions_without_frame_pointers_unwind_with_cfi() {
    check_hot(&NO_FP, "hot-nofp", UnwindMode::Kernel);
}

#[test]
fn system_wide_sees_a_process_started_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(
        dir.path(),
        "hot.c",
        "hot-sys",
        &[
            "-O2",
            "-fno-inline",
            "-fno-ipa-icf",
            "-fno-optimize-sibling-calls",
        ],
    );
    // Runs longer than the recording's start-up can take on a loaded machine; killed
    // when the recording ends.
    let mut child = std::process::Command::new(&exe).arg("60").spawn().unwrap();
    let mut opts = RecordOptions::new(Target::System);
    opts.duration = Some(Duration::from_secs(1));
    let rec = record(&opts).expect("system-wide recording works");
    child.kill().ok();
    child.wait().unwrap();
    assert_eq!(rec.stopped, StopReason::Duration);
    let lines = folded(&rec.profiles[0]);
    let (a, a_ok) = leaf_weight(&lines, "hot_a", |f| {
        f[0] == "hot-sys" && f.iter().any(|x| x == "main")
    });
    assert!(a > 10 && a_ok == a, "{a_ok} of {a}\n{}", dump(&lines));
    let threads: std::collections::HashSet<_> = rec.profiles[0]
        .threads
        .iter()
        .filter_map(|(_, t)| t.pid)
        .collect();
    assert!(threads.len() > 1, "other processes are sampled too");
}

/// A shell that runs a while, then execs the program: the kernel must not walk the
/// program's stacks with the shell's tables (it ties them to the shell's address space
/// and leaves the next samples to stack copies until the program's tables arrive).
#[test]
#[cfg(feature = "bpf")] // unwound in the kernel
fn a_process_that_execs_is_unwound_with_its_new_tables() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(dir.path(), "hot.c", "hot-exec", &NO_FP);
    let script = format!(
        "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; exec '{}' 1.5",
        exe.display()
    );
    let mut opts = RecordOptions::new(Target::Command(vec![
        "sh".into(),
        "-c".into(),
        script.into(),
    ]));
    opts.duration = Some(Duration::from_secs(30));
    opts.unwind = UnwindMode::Kernel;
    let rec = record(&opts).expect("recording works");
    let lines = folded(&rec.profiles[0]);
    let shell: u64 = lines
        .iter()
        .filter(|(f, _)| f[0] == "sh")
        .map(|l| l.1)
        .sum();
    assert!(
        shell > 50,
        "the shell ran before the exec\n{}",
        dump(&lines)
    );
    let complete = |f: &[String]| {
        f[0] == "hot-exec" && f.iter().any(|x| x == "main") && f[f.len() - 2] == "work"
    };
    let (a, a_ok) = leaf_weight(&lines, "hot_a", complete);
    let (b, b_ok) = leaf_weight(&lines, "hot_b", complete);
    // 1.5 s of the program at 999 Hz, of which a loaded machine may give it a tenth.
    assert!(a + b > 100, "{a}+{b}\n{}", dump(&lines));
    assert!(
        (a_ok + b_ok) as f64 >= 0.97 * (a + b) as f64,
        "after the exec, stacks must be the program's: {a_ok}+{b_ok} of {a}+{b}\n{}",
        dump(&lines)
    );
}
