//! Memory events (mmap tracepoint, page faults), a target that exits mid-recording, and
//! clear refusals (unknown PID, unknown tracepoint).
mod common;

use common::*;
use kiln_model::WeightUnit;
use kiln_record::{record, EventSpec, RecordError, RecordOptions, StopReason, Target};
use std::process::Command;
use std::time::Duration;

#[test]
fn mmap_and_page_faults_of_an_mmap_heavy_program() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(
        dir.path(),
        "memhog.c",
        "memhog",
        &["-O2", "-fno-inline", "-fno-optimize-sibling-calls"],
    );
    let mut opts = RecordOptions::new(Target::Command(vec![exe.into(), "100".into()]));
    opts.events = EventSpec::parse_list("mmap,page-faults,munmap,syscalls:sys_enter_mmap").unwrap();
    opts.duration = Some(Duration::from_secs(30));
    opts.buffer_pages = 8192;
    let rec = record(&opts).expect("recording works");
    assert_eq!(rec.profiles.len(), 4);
    assert_eq!(rec.summary.unweighable, 0);
    let lost = rec.summary.lost;
    let throttled = rec.summary.throttled;
    println!("{lost} events lost, {throttled} throttled");
    let names: Vec<_> = rec.profiles.iter().map(|p| p.event.name.as_str()).collect();
    assert_eq!(
        names,
        ["mmap", "page-faults", "munmap", "syscalls:sys_enter_mmap"]
    );
    // 100 rounds: 100 mmap and munmap calls of 64 pages each, and 64 * 100 page faults
    // in map_and_touch. `mmap` and `munmap` weigh bytes, the tracepoint counts calls, as
    // perf does. Every event is either in the profile or counted as lost (a 16 KiB stack
    // copy per event can outrun the reader on a busy machine).
    const REGION: u64 = 64 * 4096;
    let expect = [
        (100, REGION, WeightUnit::Bytes),
        (64 * 100, 1, WeightUnit::Events),
        (100, REGION, WeightUnit::Bytes),
        (100, 1, WeightUnit::Events),
    ];
    for (p, (events, each, unit)) in rec.profiles.iter().zip(expect) {
        assert_eq!(p.event.unit, unit, "{}", p.event.name);
        let expected = events * each;
        let lines = folded(p);
        let ours: u64 = lines
            .iter()
            .filter(|(f, _)| {
                f[0] == "memhog"
                    && f.iter().any(|x| x == "main")
                    && f.iter().any(|x| x == "map_and_touch")
            })
            .map(|l| l.1)
            .sum();
        assert!(
            ours <= expected && (ours + lost * each >= expected || throttled > 0),
            "{}: {ours} under main;map_and_touch, {lost} events lost, {throttled} throttled, \
             {expected} made\n{}",
            p.event.name,
            dump(&lines)
        );
        if lost == 0 && throttled == 0 {
            assert_eq!(ours, expected, "{}", p.event.name);
        }
    }
}

#[test]
fn target_exiting_mid_recording_still_gives_its_profile() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(
        dir.path(),
        "hot.c",
        "hot-exit",
        &["-O2", "-fno-inline", "-fno-ipa-icf"],
    );
    let mut child = Command::new(&exe).arg("60").spawn().unwrap();
    let pid = child.id();
    // The target dies 2 s into the sampling, however long the recorder took to start.
    let gate = kiln_record::StartGate::default();
    let mut opts = RecordOptions::new(Target::Pids(vec![pid]));
    opts.duration = Some(Duration::from_secs(30));
    opts.gate = Some(gate.clone());
    let killer = std::thread::spawn(move || {
        gate.ready.wait();
        gate.go.raise();
        std::thread::sleep(Duration::from_secs(2));
        // SAFETY: signalling the child this test started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let started = std::time::Instant::now();
    let rec = record(&opts).expect("recording works");
    killer.join().unwrap();
    child.wait().unwrap();
    assert_eq!(rec.stopped, StopReason::TargetExited);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "stopped at exit, not at -d"
    );
    let lines = folded(&rec.profiles[0]);
    let (a, _) = leaf_weight(&lines, "hot_a", |_| true);
    assert!(a > 5, "samples before the exit are kept\n{}", dump(&lines));
}

#[test]
fn unknown_pid_is_refused_clearly() {
    let opts = RecordOptions::new(Target::Pids(vec![4_194_303]));
    let e = record(&opts).unwrap_err();
    assert!(matches!(e, RecordError::NoSuchProcess(4_194_303)), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("no process with PID 4194303"), "{msg}");
}

#[test]
fn unknown_tracepoint_is_refused_clearly() {
    let me = std::process::id();
    for (ev, needle) in [
        ("nosuchcat:nosuch", "no tracepoint category 'nosuchcat'"),
        (
            "sched:no_such_event",
            "no tracepoint 'no_such_event' in 'sched'",
        ),
    ] {
        let mut opts = RecordOptions::new(Target::Pids(vec![me]));
        opts.events = vec![EventSpec::parse(ev).unwrap()];
        let e = record(&opts).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, RecordError::UnknownEvent { .. }), "{e:?}");
        assert!(msg.contains(needle) && msg.contains(ev), "{msg}");
    }
}

#[test]
fn a_tracepoint_by_name_records_the_scheduler() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(dir.path(), "hot.c", "hot-sched", &["-O2"]);
    let mut opts = RecordOptions::new(Target::Command(vec![exe.into(), "0.5".into()]));
    opts.events = vec![EventSpec::parse("sched:sched_process_exit").unwrap()];
    let rec = record(&opts).expect("recording works");
    let p = &rec.profiles[0];
    assert_eq!(p.event.name, "sched:sched_process_exit");
    let lines = folded(p);
    assert_eq!(p.total_weight(), 1, "one exit\n{}", dump(&lines));
    // main returned; libc's exit() ends in the kernel's do_exit, with both halves of the
    // stack present.
    let f = &lines[0].0;
    assert!(
        f[0] == "hot-sched" && f.iter().any(|x| x == "_start") && f.iter().any(|x| x == "do_exit"),
        "{}",
        dump(&lines)
    );
}

/// `brk` weighs the bytes the heap grew by (the break returned minus the previous
/// one): exactly what the program asked for under grow().
#[test]
fn brk_weighs_the_bytes_the_heap_grew_by() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(dir.path(), "brk.c", "brk", &["-O1", "-fno-inline"]);
    let mut opts = RecordOptions::new(Target::Command(vec![exe.into()]));
    opts.events = vec![EventSpec::parse("brk").unwrap()];
    let rec = record(&opts).expect("recording works");
    let p = &rec.profiles[0];
    assert_eq!(p.event.name, "brk");
    assert_eq!(p.event.unit, WeightUnit::Bytes);
    assert_eq!(rec.summary.lost, 0);
    let lines = folded(p);
    let grown: u64 = lines
        .iter()
        .filter(|(f, _)| f.iter().any(|x| x == "grow"))
        .map(|l| l.1)
        .sum();
    assert_eq!(grown, 5 * (1 << 20) + 3 * 4096, "\n{}", dump(&lines));
}
