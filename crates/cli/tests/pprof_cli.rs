//! pprof through the command line: kiln's profiles out to pprof and `go tool pprof`
//! agreeing with kiln on them, pprof back in to the same folded stacks, output formats
//! chosen by extension or --output-format, and broken files refused with their name.
use common::*;
use kiln_testkit::go_oracle as common;
use kiln_testkit::perf_fixture;
use predicates::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

use kiln_testkit::kiln;

/// `kiln collapse ARGS` to folded stacks on stdout, as a map.
fn collapse(args: &[&std::ffi::OsStr]) -> BTreeMap<String, i64> {
    let out = kiln()
        .arg("collapse")
        .arg("-q")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kiln collapse {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    folded_map(&String::from_utf8(out.stdout).unwrap())
}

/// The total `go tool pprof -top` reports (`... of N total`), as printed.
fn top_total(file: &Path) -> String {
    let out = go()
        .args(["tool", "pprof", "-top"])
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("% of ") && l.ends_with(" total"))
        .unwrap_or_else(|| panic!("no total in {text}"));
    line.rsplit_once("% of ")
        .unwrap()
        .1
        .trim_end_matches(" total")
        .to_string()
}

#[test]
fn folded_to_pprof_and_back() {
    if !have_go() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.folded");
    let text = "main;serve;parse 120\nmain;serve;respond 30\nmain;idle 7\nmain 3\n";
    std::fs::write(&input, text).unwrap();
    let want = folded_map(text);
    for name in ["out.pb.gz", "out.pb", "out.pprof"] {
        let out = dir.path().join(name);
        kiln()
            .args(["collapse", "-q"])
            .arg(&input)
            .arg("-o")
            .arg(&out)
            .assert()
            .success()
            .stdout("");
        let gz = std::fs::read(&out).unwrap().starts_with(&[0x1f, 0x8b]);
        assert_eq!(gz, name != "out.pb", "{name}: gzipped or not by extension");
        let r = raw(&out);
        assert_eq!(r.types, ["samples/count"]);
        assert_eq!(r.folded(0), want, "{name}: go tool pprof -raw");
        assert_eq!(top_total(&out), "160", "{name}: go tool pprof -top");
        assert_eq!(collapse(&[out.as_os_str()]), want, "{name}: read back");
    }
    // --output-format to standard output.
    let out = kiln()
        .args(["collapse", "-q", "--output-format", "pprof"])
        .arg(&input)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.starts_with(&[0x1f, 0x8b]));
    let piped = dir.path().join("piped.pb.gz");
    std::fs::write(&piped, &out.stdout).unwrap();
    assert_eq!(raw(&piped).folded(0), want);
}

#[test]
fn perf_script_to_pprof_agrees_with_go_tool_pprof() {
    if !have_go() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (fixture_name, count_samples) in [
        ("cpu-fp.txt", false),
        ("cpu-fp.txt", true),
        ("pid-tid.txt", false),
    ] {
        let input = perf_fixture(fixture_name);
        let mut args = vec![input.as_os_str()];
        if count_samples {
            args.push("--count-samples".as_ref());
        }
        let kiln_folded = collapse(&args);
        let out = dir.path().join("perf.pb.gz");
        kiln()
            .args(["collapse", "-q"])
            .args(&args)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        let r = raw(&out);
        let ctx = format!(
            "{fixture_name} count_samples={count_samples}: {:?}",
            r.types
        );
        // Periods of cpu-clock are nanoseconds; counted samples (no period known from
        // the text) are counts.
        let unit = if count_samples {
            "count"
        } else {
            "nanoseconds"
        };
        assert_eq!(r.types, [format!("cpu-clock:ppp/{unit}")], "{ctx}");
        assert_eq!(r.folded(0), kiln_folded, "{ctx}");
        let total: i64 = kiln_folded.values().sum();
        assert_eq!(r.total(0, &[]), total, "{ctx}");
        if count_samples {
            assert_eq!(top_total(&out), total.to_string(), "{ctx}");
        }
        // Back in kiln: the same stacks; threads travel as labels and come back.
        assert_eq!(collapse(&[out.as_os_str()]), kiln_folded, "{ctx}");
        let tids = |p: &kiln_model::Profile| {
            let mut t: Vec<(Option<u32>, Vec<u8>)> = p
                .threads
                .iter()
                .map(|(_, t)| (t.tid, p.strings.get(t.name).to_vec()))
                .collect();
            t.sort();
            t
        };
        let read = |path: &Path| {
            kiln_formats::read(Some(path), &Default::default())
                .unwrap()
                .collapsed
                .profile
        };
        let (before, after) = (read(&input), read(&out));
        assert!(before.threads.len() > 1, "{ctx}");
        assert_eq!(tids(&after), tids(&before), "{ctx}: threads");
    }
}

#[test]
fn sample_types_labels_and_errors_on_the_command_line() {
    if !have_go() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = go_profiles(tmp.path());
    let heap = dir.join("heap.pb.gz");
    let r = raw(&heap);
    for t in [
        "alloc_objects",
        "alloc_space",
        "inuse_objects",
        "inuse_space",
    ] {
        let got = collapse(&[heap.as_os_str(), "--sample-type".as_ref(), t.as_ref()]);
        assert_eq!(got.values().sum::<i64>(), r.total(r.index(t), &[]), "{t}");
    }
    // The default is go tool pprof's, and the summary says which and what else there is.
    kiln()
        .arg("collapse")
        .arg(&heap)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "sample type 'inuse_space' (bytes)",
        ))
        .stderr(predicate::str::contains("--sample-type"));
    kiln()
        .args(["collapse", "--sample-type", "nope"])
        .arg(&heap)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("has no sample type 'nope'"))
        .stderr(predicate::str::contains("alloc_space (bytes)"));
    let cpu = dir.join("cpu.pb.gz");
    let r = raw(&cpu);
    let got = collapse(&[
        cpu.as_os_str(),
        "--focus-label".as_ref(),
        "handler=put".as_ref(),
    ]);
    assert_eq!(
        got.values().sum::<i64>(),
        r.total(r.index("cpu"), &["handler:[put]"])
    );
    // The label is the goroutine's: a sample taken while the runtime preempted it
    // (runtime.mcall;runtime.asyncPreempt2.func1;…, on the scheduler's stack) carries it
    // with no frame of the handler's. Every other stack is under main.put.
    assert!(
        got.keys()
            .all(|k| k.contains("main.put") || k.split(';').all(|f| f.starts_with("runtime."))),
        "{got:?}"
    );
    // Outputs: an unknown extension lists what collapse writes.
    kiln()
        .arg("collapse")
        .arg(&cpu)
        .arg("-o")
        .arg(tmp.path().join("x.png"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot tell the output format of"))
        .stderr(predicate::str::contains("pprof (.pb.gz"));
    kiln()
        .arg("collapse")
        .arg(&cpu)
        .args(["--output-format", "gif"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("unknown format 'gif'"));
    // A truncated file: its name and what is wrong.
    let bytes = std::fs::read(&cpu).unwrap();
    let cut = tmp.path().join("cut.pb.gz");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    kiln()
        .arg("collapse")
        .arg(&cut)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cut.pb.gz"))
        .stderr(predicate::str::contains("truncated"));
}

#[test]
fn recorded_events_to_pprof_agree_with_go_tool_pprof() {
    if !have_go() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = kiln_testkit::build_hot(dir.path(), &["-O2", "-fno-inline"]);
    let rec = dir.path().join("rec.kiln");
    // CPU time, then time asleep (the shell waits for both).
    let script = format!("'{}' 0.3; sleep 0.05", exe.display());
    // Off-CPU time needs eBPF (root, BTF); without it the other events are checked.
    let mut events = "cpu,offcpu,page-faults,mmap";
    let ok = kiln()
        .args(["record", "-e", events, "-o"])
        .arg(&rec)
        .args(["--", "sh", "-c"])
        .arg(&script)
        .output()
        .unwrap()
        .status
        .success();
    if !ok {
        kiln_testkit::skip("offcpu is not recordable here; checking cpu, page-faults, mmap");
        events = "cpu,page-faults,mmap";
        kiln()
            .args(["record", "-e", events, "-o"])
            .arg(&rec)
            .args(["--", "sh", "-c"])
            .arg(&script)
            .assert()
            .success();
    }
    let r = kiln_formats::read(Some(&rec), &Default::default()).unwrap();
    assert!(r.collapsed.stats.read > 0);
    for event in events.split(',') {
        let filter = if event == "cpu" { "cpu-clock" } else { event };
        let kiln_folded = collapse(&[rec.as_os_str(), "--event-filter".as_ref(), filter.as_ref()]);
        let out = dir.path().join(format!("{event}.pb.gz"));
        kiln()
            .args(["collapse", "-q", "--event-filter", filter])
            .arg(&rec)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        let raw = raw(&out);
        let ctx = format!("{event}: {:?}", raw.types);
        match event {
            // Timer samples: counts and the CPU time they stand for, as Go's CPU profiles.
            "cpu" => {
                assert_eq!(raw.types[0], "samples/count", "{ctx}");
                assert!(raw.types[1].ends_with("/nanoseconds"), "{ctx}");
                assert_eq!(raw.folded(0), kiln_folded, "{ctx}");
                let (n, ns) = (raw.total(0, &[]), raw.total(1, &[]));
                assert!(
                    n > 0 && ns % n == 0 && ns / n >= 1_000_000,
                    "{ctx}: {n} {ns}"
                );
            }
            // Off-CPU blocks in microseconds: written in nanoseconds.
            "offcpu" => {
                assert_eq!(raw.types, ["offcpu/nanoseconds"], "{ctx}");
                let us: BTreeMap<String, i64> = kiln_folded
                    .iter()
                    .map(|(k, v)| (k.clone(), v * 1000))
                    .collect();
                assert_eq!(raw.folded(0), us, "{ctx}");
            }
            "page-faults" => {
                assert_eq!(raw.types, ["page-faults/count"], "{ctx}");
                assert_eq!(raw.folded(0), kiln_folded, "{ctx}");
            }
            _ => {
                assert_eq!(raw.types, ["mmap/bytes"], "{ctx}");
                assert_eq!(raw.folded(0), kiln_folded, "{ctx}");
            }
        }
        assert!(!kiln_folded.is_empty(), "{ctx}: no samples");
    }
}

#[test]
fn record_writes_one_pprof_per_event_and_one_speedscope_file_for_all() {
    let dir = tempfile::tempdir().unwrap();
    let exe = kiln_testkit::build_hot(dir.path(), &["-O2", "-fno-inline"]);
    let base = dir.path().join("r.pb.gz");
    kiln()
        .args(["record", "-e", "cpu,page-faults", "-o"])
        .arg(&base)
        .arg("--")
        .arg(&exe)
        .arg("0.2")
        .assert()
        .success();
    for ev in ["cpu-clock", "page-faults"] {
        let f = dir.path().join(format!("r.{ev}.pb.gz"));
        let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(bytes.starts_with(&[0x1f, 0x8b]), "{ev}: gzipped pprof");
        let p = kiln_formats::read(Some(&f), &Default::default())
            .unwrap()
            .collapsed
            .profile;
        assert!(!p.samples.is_empty(), "{ev}: samples");
    }
    assert!(!base.exists(), "one file per event, not the base name");
    let ss = dir.path().join("r.speedscope.json");
    kiln()
        .args(["record", "-e", "cpu,page-faults", "-o"])
        .arg(&ss)
        .arg("--")
        .arg(&exe)
        .arg("0.2")
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&ss).unwrap()).unwrap();
    let names: Vec<&str> = v["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for ev in ["cpu-clock", "page-faults"] {
        assert!(names.iter().any(|n| n.starts_with(ev)), "{ev} in {names:?}");
    }
}

/// A Go generic's name can hold `;` (`go.shape.struct { key string; values []string }`):
/// folded text writes it as `:`, as the perf reader and stackcollapse-perf.pl do, so the
/// function stays one frame when the text is read again.
#[test]
fn a_semicolon_in_a_function_name_stays_in_one_frame() {
    use kiln_model::{FrameKind, Profile, ThreadId, NO_TIME};
    let dir = tempfile::tempdir().unwrap();
    let generic = "slices.SortFunc[go.shape.struct { key string; values []string }]";
    let mut p = Profile::default();
    let frames = [
        p.frame(b"main.main", FrameKind::User),
        p.frame(generic.as_bytes(), FrameKind::User),
    ];
    p.add_sample_path(&frames, 7, NO_TIME, ThreadId::NONE);
    p.add_sample_path(&frames[..1], 2, NO_TIME, ThreadId::NONE);
    let file = dir.path().join("generic.pb.gz");
    let mut bytes = Vec::new();
    kiln_formats::write(
        &[p],
        kiln_formats::Format::Pprof,
        &Default::default(),
        &mut bytes,
    )
    .unwrap();
    std::fs::write(&file, bytes).unwrap();
    let folded = collapse(&[file.as_os_str()]);
    let want: BTreeMap<String, i64> = [
        ("main.main".to_string(), 2),
        (format!("main.main;{}", generic.replace(';', ":")), 7),
    ]
    .into();
    assert_eq!(folded, want);
    // Read again, the folded text has the same two frames.
    let text = dir.path().join("generic.folded");
    kiln()
        .args(["collapse", "-q"])
        .arg(&file)
        .arg("-o")
        .arg(&text)
        .assert()
        .success();
    assert_eq!(collapse(&[text.as_os_str()]), want);
}
