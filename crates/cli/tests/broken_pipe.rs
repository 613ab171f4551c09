//! `kiln … | head -1`: every command that writes to standard output, on real inputs, with
//! a reader that went away. The rule is one: the command ends quietly with 141 (128 +
//! SIGPIPE, what a shell reports for a program SIGPIPE ended), no error, no panic.
use kiln_model::{EventInfo, FrameKind, Profile};
use kiln_store::{Attachment, Headline, RunData, RunMeta, RunStatus, SqliteStore, Store, Window};
use kiln_testkit::perf_fixture;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `c` with standard output a pipe whose reader is closed before the command starts
/// (every write there fails with EPIPE); asserts it ended with 141 and said nothing of it.
fn assert_quiet_141(mut c: Command, what: &str) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = c
        .stdout(writer)
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{what}: {err}");
    for word in ["Error", "Broken pipe", "panicked"] {
        assert!(!err.contains(word), "{what}: {err}");
    }
}

/// A stored run with a profile, series-free headline figures and an attachment.
fn stored_run(name: &str, throughput: f64) -> RunData {
    let mut p = Profile::new(EventInfo {
        name: "cpu-clock".into(),
        ..Default::default()
    });
    let th = p.thread(Some(1), Some(1), b"main");
    for i in 0..2000u64 {
        let frames = [
            p.frame(b"main", FrameKind::User),
            p.frame(format!("work_{}", i % 300).as_bytes(), FrameKind::User),
        ];
        p.add_sample_path(&frames, 1_000_000, 1_000_000_000 + i * 1_000_000, th);
    }
    RunData {
        meta: RunMeta {
            name: name.into(),
            group: format!("{name}@1"),
            repeat: (1, 1),
            started_unix_ms: 1_795_449_600_000,
            status: RunStatus {
                complete: true,
                reason: None,
            },
            command_line: vec!["kiln".into(), "run".into()],
            host: "h".into(),
            events: vec!["cpu-clock".into()],
            measure: Window {
                name: "measure".into(),
                start_ns: 1_000_000_000,
                end_ns: 3_000_000_000,
            },
            headline: Headline {
                throughput: Some(throughput),
                p99_us: Some(250.0),
                ..Default::default()
            },
            ..Default::default()
        },
        profiles: vec![p],
        attachments: vec![Attachment {
            name: "load.stdout".into(),
            data: vec![b'x'; 200_000],
        }],
        ..Default::default()
    }
}

#[test]
fn profile_commands_end_quietly_when_the_reader_goes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("none.db");
    let fp = perf_fixture("cpu-fp.txt");
    let jit = perf_fixture("erlang-jit.txt");
    let cases: Vec<(&str, Vec<&std::ffi::OsStr>)> = vec![
        ("collapse", vec!["collapse".as_ref(), fp.as_os_str()]),
        (
            "collapse --output-format pprof",
            vec![
                "collapse".as_ref(),
                "--output-format".as_ref(),
                "pprof".as_ref(),
                "-o".as_ref(),
                "-".as_ref(),
                jit.as_os_str(),
            ],
        ),
        ("flamegraph", vec!["flamegraph".as_ref(), fp.as_os_str()]),
        (
            "diff",
            vec!["diff".as_ref(), fp.as_os_str(), jit.as_os_str()],
        ),
    ];
    for (what, args) in cases {
        let mut c = kiln_testkit::kiln_process_in(&store);
        c.args(args);
        assert_quiet_141(c, what);
    }
}

/// As `| head -1` does it: the reader takes a line, then goes; the rest of a large output
/// meets the closed pipe.
#[test]
fn collapse_into_head_1_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    // 40,000 distinct stacks: far more than a pipe holds.
    let big = dir.path().join("big.folded");
    let text: String = (0..40_000)
        .map(|i| format!("main;work;leaf_{i} {}\n", i + 1))
        .collect();
    std::fs::write(&big, text).unwrap();
    let mut child = kiln_testkit::kiln_process_in(&dir.path().join("none.db"))
        .args(["collapse", "-q"])
        .arg(&big)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("main;work;leaf_"), "{first}");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert!(err.is_empty(), "{err}");
}

#[test]
fn store_commands_end_quietly_when_the_reader_goes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let mut s = SqliteStore::open(&store).unwrap();
    for (i, name) in ["before", "after"].iter().enumerate() {
        s.save(&stored_run(name, 1000.0 + i as f64)).unwrap();
    }
    drop(s);
    for args in [
        &["runs"][..],
        &["runs", "--json"],
        &["runs", "show", "1"],
        &["runs", "show", "1", "--json"],
        &["runs", "export", "1", "-o", "-"],
        &["runs", "report", "1", "-o", "-"],
        &["runs", "attachment", "1", "load.stdout", "-o", "-"],
        &["runs", "attachment", "1", "--list"],
        &["compare", "1", "2"],
        &["compare", "before", "after", "--format", "json"],
        &["collapse", "run:before"],
        &["flamegraph", "run:1"],
    ] {
        let mut c = kiln_testkit::kiln_process_in(&store);
        c.args(args);
        assert_quiet_141(c, &args.join(" "));
    }
}

#[test]
fn a_load_ends_quietly_when_the_reader_goes() {
    let n = kiln_testkit::Nginx::start().unwrap();
    let mut c = kiln_testkit::kiln_process_in(Path::new("none.db"));
    c.args(["load", "http", "-d", "1", "-c", "2", &n.url("/")]);
    assert_quiet_141(c, "load http");
}

#[test]
fn a_recording_ends_quietly_when_the_reader_goes() {
    let mut c = kiln_testkit::kiln_process_in(Path::new("none.db"));
    c.args(["record", "--", "sh", "-c"])
        .arg("i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done");
    assert_quiet_141(c, "record");
}
