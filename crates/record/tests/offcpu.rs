//! Off-CPU profiles (eBPF, kiln-bpf) of lock contention: C threads on a pthread mutex and
//! Go goroutines holding a mutex across a blocking system call.
#![cfg(feature = "bpf")]
mod common;

use common::*;
use kiln_model::WeightUnit;
use kiln_record::{record, EventSpec, RecordOptions, Target};
use std::process::Command;
use std::time::Duration;

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the struct it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn offcpu(argv: Vec<std::ffi::OsString>) -> kiln_model::Profile {
    let mut opts = RecordOptions::new(Target::Command(argv));
    opts.events = vec![EventSpec::OffCpu];
    opts.duration = Some(Duration::from_secs(30));
    let before = monotonic_ns();
    let rec = record(&opts).expect("off-CPU recording works (root, BTF)");
    let after = monotonic_ns();
    // Each entry is stamped with the end of its latest block: within the recording.
    let (first, last) = rec.profiles[0].samples.time_range().expect("timestamps");
    assert!(
        before <= first && last <= after,
        "sample times {first}..{last} outside the recording {before}..{after}"
    );
    assert!(
        rec.summary.warnings.is_empty(),
        "{:?}",
        rec.summary.warnings
    );
    let p = rec.profiles.into_iter().next().unwrap();
    assert_eq!(p.event.unit, WeightUnit::Nanoseconds);
    p
}

#[test]
fn c_threads_contending_on_a_pthread_mutex() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(
        dir.path(),
        "mutex.c",
        "mutex",
        &["-O2", "-pthread", "-fno-optimize-sibling-calls"],
    );
    let p = offcpu(vec![exe.into(), "1".into()]);
    let lines = folded(&p);
    let under = |f: &[String], name: &str| f.iter().any(|x| x == name);
    let mut total = 0u64;
    let mut in_hold = 0u64;
    let mut lock_wait = 0u64;
    let mut sleeping = 0u64;
    for (f, w) in &lines {
        if f[0] != "mutex" {
            continue;
        }
        total += w;
        if under(f, "hold_lock") && under(f, "worker") {
            in_hold += w;
            if f.iter()
                .any(|x| x.contains("lock_wait") || x.contains("futex_wait"))
            {
                lock_wait += w;
            } else if f.iter().any(|x| x.contains("nanosleep")) {
                sleeping += w;
            }
        }
    }
    // Four threads for one second: about 4 s off CPU, 3/4 of it waiting for the lock.
    assert!(
        total > 2_000_000_000,
        "{total} ns off CPU\n{}",
        dump(&lines)
    );
    // The rest is main() joining the threads.
    assert!(
        in_hold as f64 > 0.7 * total as f64,
        "{in_hold} of {total}\n{}",
        dump(&lines)
    );
    let share = lock_wait as f64 / (lock_wait + sleeping) as f64;
    assert!(
        share > 0.55 && share < 0.9,
        "lock wait share {share:.2}\n{}",
        dump(&lines)
    );
}

#[test]
fn go_goroutines_holding_a_mutex_across_a_syscall() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("gomutex");
    let go = if std::path::Path::new("/usr/local/go/bin/go").exists() {
        "/usr/local/go/bin/go"
    } else {
        "go"
    };
    let st = Command::new(go)
        .args(["build", "-o"])
        .arg(&exe)
        .arg(programs().join("mutex.go"))
        .env("GO111MODULE", "off")
        .env("GOFLAGS", "")
        .status()
        .expect("go runs");
    assert!(st.success());
    let p = offcpu(vec![exe.into(), "1".into()]);
    let lines = folded(&p);
    let mut total = 0u64;
    let mut held = 0u64;
    for (f, w) in &lines {
        if f[0] != "gomutex" {
            continue;
        }
        total += w;
        let h = f.iter().position(|x| x == "main.holdAcrossSyscall");
        let wk = f.iter().position(|x| x == "main.worker");
        if let (Some(h), Some(wk)) = (h, wk) {
            if wk < h
                && f.iter()
                    .any(|x| x.contains("Nanosleep") || x.contains("nanosleep"))
            {
                held += w;
            }
        }
    }
    // One goroutine at a time sleeps 2 ms holding the lock: about 1 s of the run.
    assert!(
        held > 500_000_000,
        "{held} ns of {total} in main.worker;main.holdAcrossSyscall;…Nanosleep\n{}",
        dump(&lines)
    );
}
