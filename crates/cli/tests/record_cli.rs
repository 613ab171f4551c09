//! `kiln record` as a user runs it: where stacks are unwound, what it reports on stderr,
//! and clear refusals with the right exit codes.
use assert_cmd::Command;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

fn kiln() -> Command {
    Command::cargo_bin("kiln").unwrap()
}

/// Builds the recorder tests' hot.c (two hot functions under work() under main()).
fn hot(dir: &Path) -> PathBuf {
    let exe = dir.join("hot");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../record/tests/programs/hot.c");
    let st = std::process::Command::new("cc")
        .args([
            "-O2",
            "-fno-inline",
            "-fno-optimize-sibling-calls",
            "-fomit-frame-pointer",
            "-o",
        ])
        .arg(&exe)
        .arg(src)
        .status()
        .expect("cc runs");
    assert!(st.success());
    exe
}

fn hot_under_main(folded: &str) -> (u64, u64) {
    let mut all = 0;
    let mut rooted = 0;
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        if stack.ends_with(";hot_a") || stack.ends_with(";hot_b") {
            all += n;
            if stack.starts_with("hot;_start;") && stack.contains(";main;work;") {
                rooted += n;
            }
        }
    }
    (all, rooted)
}

#[test]
fn unwinds_in_the_kernel_and_says_how_every_walk_ended() {
    let dir = tempfile::tempdir().unwrap();
    let exe = hot(dir.path());
    let out = dir.path().join("cpu.folded");
    kiln()
        .args(["record", "--unwind", "kernel", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&exe)
        .arg("1")
        .assert()
        .success()
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("stacks unwound in the kernel: "))
        .stderr(predicate::str::contains(" reached their root"));
    let (all, rooted) = hot_under_main(&std::fs::read_to_string(&out).unwrap());
    assert!(all > 300 && rooted * 100 >= all * 97, "{rooted} of {all}");
}

#[test]
fn unwinds_stack_copies_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let exe = hot(dir.path());
    let assert = kiln()
        .args([
            "record",
            "--unwind",
            "copy",
            "--",
            exe.to_str().unwrap(),
            "1",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("stacks unwound in the kernel").not());
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let (all, rooted) = hot_under_main(&stdout);
    assert!(all > 300 && rooted * 100 >= all * 97, "{rooted} of {all}");
}

#[test]
fn refusals_are_clear() {
    kiln()
        .args(["record", "--unwind", "sideways", "--", "true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("invalid value 'sideways'"))
        .stderr(predicate::str::contains("kernel"));
    // A pid that cannot exist (above the kernel's pid_max limit of 2^22).
    kiln()
        .args(["record", "-p", "99999999", "-d", "1"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no process with PID 99999999"));
    kiln()
        .args(["record", "-d", "1"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("Nothing to record"));
}

/// A `.kiln` recording keeps every event; the other commands read it back (one event at
/// a time), and a damaged file is refused with the byte where it goes wrong.
#[test]
fn native_recordings_are_read_back_by_the_other_commands() {
    let dir = tempfile::tempdir().unwrap();
    let exe = hot(dir.path());
    let run = dir.path().join("run.kiln");
    kiln()
        .args(["record", "-e", "cpu,page-faults", "-o"])
        .arg(&run)
        .arg("--")
        .arg(&exe)
        .arg("1")
        .assert()
        .success();
    let cpu = kiln()
        .arg("collapse")
        .arg(&run)
        .assert()
        .success()
        .stderr(predicate::str::contains("(event 'cpu-clock')"))
        .stderr(predicate::str::contains(
            "event 'page-faults' (not the one kept",
        ));
    let cpu = String::from_utf8(cpu.get_output().stdout.clone()).unwrap();
    let (all, rooted) = hot_under_main(&cpu);
    assert!(all > 300 && rooted * 100 >= all * 97, "{rooted} of {all}");
    kiln()
        .args(["collapse", "--event-filter", "page-faults"])
        .arg(&run)
        .assert()
        .success()
        .stdout(predicate::str::contains("hot;_start;"))
        .stderr(predicate::str::contains("(event 'page-faults')"));
    let svg = dir.path().join("cpu.svg");
    kiln()
        .arg("flamegraph")
        .arg(&run)
        .arg("-o")
        .arg(&svg)
        .assert()
        .success();
    assert!(std::fs::read_to_string(&svg).unwrap().contains("hot_a"));
    // Damaged: cut in the middle.
    let bytes = std::fs::read(&run).unwrap();
    let cut = dir.path().join("cut.kiln");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    kiln()
        .arg("flamegraph")
        .arg(&cut)
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("not a valid kiln profile at byte"));
}

/// Off-CPU time with a minimum block: two 200 ms sleeps are there without one, gone
/// (and counted) with a minimum of one second. `--units ns` keeps nanoseconds.
#[test]
fn offcpu_min_block_keeps_long_blocks_only() {
    let script = ["sh", "-c", "sleep 0.2; sleep 0.2"];
    let all = kiln()
        .args(["record", "-e", "offcpu", "--units", "ns", "--"])
        .args(script)
        .assert()
        .success()
        .stderr(predicate::str::contains("kiln record: off-CPU: "));
    let folded = String::from_utf8(all.get_output().stdout.clone()).unwrap();
    let slept: u64 = folded
        .lines()
        .filter(|l| l.contains("nanosleep"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert!(slept >= 380_000_000, "{slept} ns in nanosleep\n{folded}");
    let long_only = kiln()
        .args(["record", "-e", "offcpu", "--min-block", "1000000", "--"])
        .args(script)
        .assert()
        .success()
        .stderr(
            predicate::str::is_match(r"off-CPU: \d+ blocks, [1-9]\d* shorter than --min-block")
                .unwrap(),
        );
    let folded = String::from_utf8(long_only.get_output().stdout.clone()).unwrap();
    assert!(!folded.contains("nanosleep"), "{folded}");
}

/// Off-CPU folded output is in microseconds by default, and a .kiln recording says so.
#[test]
fn offcpu_in_microseconds_by_default() {
    let script = ["sh", "-c", "sleep 0.2; sleep 0.2"];
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("off.kiln");
    let out = kiln()
        .args(["record", "-e", "offcpu", "--"])
        .args(script)
        .assert()
        .success()
        .stderr(predicate::str::contains(" us)"));
    let folded = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let slept: u64 = folded
        .lines()
        .filter(|l| l.contains("nanosleep"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    // Two 200 ms sleeps (each process blocks in its own: sh waits, sleep sleeps).
    assert!(
        (380_000..4_000_000).contains(&slept),
        "{slept} us in nanosleep\n{folded}"
    );
    kiln()
        .args(["record", "-e", "offcpu", "-o"])
        .arg(&run)
        .arg("--")
        .args(script)
        .assert()
        .success();
    let p = &kiln_model::native::read_file(&run).unwrap()[0];
    assert_eq!(p.event.unit, kiln_model::WeightUnit::Microseconds);
}

/// `--wakers`: the holder of a contended mutex shows above the waiters' lock waits, in
/// the chain palette; without -e offcpu the flag is refused.
#[test]
fn offcpu_wakers_show_the_lock_holder() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("wakers");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../record/tests/programs/wakers.c");
    let st = std::process::Command::new("cc")
        .args([
            "-O1",
            "-pthread",
            "-fno-inline",
            "-fno-optimize-sibling-calls",
            "-o",
        ])
        .arg(&exe)
        .arg(src)
        .status()
        .expect("cc runs");
    assert!(st.success());
    let svg = dir.path().join("wake.svg");
    kiln()
        .args(["record", "-e", "offcpu", "--wakers", "-o"])
        .arg(&svg)
        .arg("--")
        .arg(&exe)
        .args(["3", "50"])
        .assert()
        .success()
        .stderr(predicate::str::contains("blocks without their waker"));
    let svg = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse_with_options(
        &svg,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .expect("valid SVG");
    let titles: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter_map(|n| n.text())
        .collect();
    assert!(titles.iter().any(|t| t.starts_with("-- (")), "no separator");
    assert!(
        titles.iter().any(|t| t.starts_with("hold_and_work (")),
        "the holder is not above a lock wait"
    );
    kiln()
        .args(["record", "--wakers", "--", "true"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "--wakers goes with the offcpu event",
        ));
}
