//! The `kiln collapse` and `kiln diff` commands as a user runs them: stdout and stderr
//! checked separately, exit codes, and outputs that appear whole or not at all.
use kiln_testkit::perf_fixture;
use predicates::prelude::*;
use std::path::PathBuf;

use kiln_testkit::kiln;

#[test]
fn collapses_from_stdin_and_summarises_on_stderr() {
    let input = std::fs::read(perf_fixture("tracepoints.txt")).unwrap();
    kiln()
        .args(["collapse", "--count-samples"])
        .write_stdin(input)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "worker_1;start_thread;worker;recurse;recurse;recurse;recurse;__mmap 14\n",
        ))
        .stderr(predicate::str::contains(
            "<stdin>: 84 samples read, 38 kept, 46 skipped (event 'syscalls:sys_enter_mmap')",
        ))
        .stderr(predicate::str::contains(
            "skipped 46: event 'sched:sched_switch'",
        ));
}

#[test]
fn merge_threads_and_quiet() {
    kiln()
        .args(["collapse", "-q", "--merge-threads", "--count-samples"])
        .arg(perf_fixture("erlang-jit.txt"))
        .assert()
        .success()
        .stderr("")
        .stdout(predicate::str::starts_with("scheduler;"));
}

#[test]
fn strict_mode_fails_with_file_and_line_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.folded");
    std::fs::write(&bad, "a;b 1\nnot a sample\n").unwrap();
    let out = dir.path().join("out.folded");
    kiln()
        .args(["collapse", "--strict", "-o"])
        .arg(&out)
        .arg(&bad)
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains(
            "bad.folded:2: no sample count at the end of the line: not a sample",
        ));
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file left behind"
    );
    // Without --strict: a warning, the line counted as skipped, the rest written.
    kiln()
        .args(["collapse", "-o"])
        .arg(&out)
        .arg(&bad)
        .assert()
        .success()
        .stderr(predicate::str::contains("warning: "))
        .stderr(predicate::str::contains(
            "2 samples read, 1 kept, 1 skipped",
        ));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "a;b 1\n");
}

#[test]
fn errors_name_the_problem() {
    kiln()
        .args(["collapse", "/nonexistent/x.perf"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "Failed to open '/nonexistent/x.perf'",
        ));
    kiln()
        .args(["collapse", "--format", "nope"])
        .write_stdin("a 1\n")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "unknown format 'nope': expected one of perf",
        ));
    kiln()
        .args(["collapse", "--no-such-flag"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--no-such-flag"));
    kiln()
        .args(["collapse", "--drop-frames", "("])
        .write_stdin("a 1\n")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("Invalid --drop-frames"));
    kiln()
        .arg("collapse")
        .write_stdin("hello world\n")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot tell the input format"));
}

#[test]
fn diff_folded_and_table() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.folded");
    let b = dir.path().join("b.folded");
    std::fs::write(&a, "main;rabbit_exchange:route/2 95\nmain;other 5\n").unwrap();
    std::fs::write(&b, "main;rabbit_exchange:route/2 25\nmain;other 75\n").unwrap();
    kiln()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .stdout("main;other 5 75\nmain;rabbit_exchange:route/2 95 25\n");
    kiln()
        .args(["diff", "--table", "3"])
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "rabbit_exchange:route/2     95.00    25.00   -70.00",
        ));
    let svg = dir.path().join("diff.svg");
    kiln()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .arg("-o")
        .arg(&svg)
        .assert()
        .success();
    let text = std::fs::read_to_string(&svg).unwrap();
    roxmltree::Document::parse_with_options(
        &text,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .expect("well-formed SVG");
    assert!(text.contains("rabbit_exchange:route/2"));
}

/// One recording read as `perf script` text and as perf.data weighs the same on both
/// sides of `kiln diff` (periods, or one per sample with --count-samples; they used to be
/// periods on one side and samples on the other); profiles counting different things
/// are refused, except as shares (-n, --table).
#[test]
fn diff_weighs_perf_script_and_perf_data_alike_and_refuses_mixed_units() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("hot");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../record/tests/programs/hot.c");
    let st = std::process::Command::new("cc")
        .args(["-O2", "-fno-inline", "-fno-omit-frame-pointer", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("cc runs");
    assert!(st.success());
    let record = |name: &str, event: &[&str]| -> (PathBuf, PathBuf) {
        let data = dir.path().join(format!("{name}.data"));
        let st = std::process::Command::new("perf")
            .args(["record", "-q", "-g"])
            .args(event)
            .arg("-o")
            .arg(&data)
            .arg("--")
            .arg(&exe)
            .arg("1")
            .stdout(std::process::Stdio::null())
            .status()
            .expect("perf runs (Debian package linux-perf)");
        assert!(st.success(), "perf record failed");
        let text = std::process::Command::new("perf")
            .args(["script", "-i"])
            .arg(&data)
            .output()
            .expect("perf script runs");
        let perf = dir.path().join(format!("{name}.perf"));
        std::fs::write(&perf, text.stdout).unwrap();
        (perf, data)
    };
    let totals = |out: &[u8]| -> (u64, u64, usize) {
        let text = std::str::from_utf8(out).unwrap();
        let mut t = (0, 0, 0);
        for line in text.lines() {
            let mut it = line.rsplitn(3, ' ');
            let after: u64 = it.next().unwrap().parse().unwrap();
            let before: u64 = it.next().unwrap().parse().unwrap();
            t = (t.0 + before, t.1 + after, t.2 + 1);
        }
        t
    };
    let (cpu_text, cpu_data) = record("cpu", &["-F", "999"]);
    for extra in [&[][..], &["--count-samples"][..]] {
        let out = kiln()
            .arg("diff")
            .args(extra)
            .arg(&cpu_text)
            .arg(&cpu_data)
            .assert()
            .success();
        let (before, after, lines) = totals(&out.get_output().stdout);
        assert!(lines > 0 && before > 0, "{extra:?}");
        assert_eq!(
            before, after,
            "{extra:?}: the same recording weighs the same"
        );
        if extra.is_empty() {
            // cpu-clock periods: nanoseconds, about 1 ms a sample at 999 Hz.
            assert!(before > 100 * 900_000, "{before}");
        }
    }
    // Page faults (events) against cpu-clock (nanoseconds): refused, with the way out.
    let (faults_text, _) = record("faults", &["-e", "page-faults", "-c", "1"]);
    kiln()
        .arg("diff")
        .arg(&cpu_text)
        .arg(&faults_text)
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains(
            "the one before counts nanoseconds, the one after events",
        ))
        .stderr(predicate::str::contains("-n"));
    kiln()
        .args(["diff", "-n"])
        .arg(&cpu_text)
        .arg(&faults_text)
        .assert()
        .success();
    kiln()
        .args(["diff", "--table", "5"])
        .arg(&cpu_text)
        .arg(&faults_text)
        .assert()
        .success()
        .stdout(predicate::str::contains("self%"));
}

/// Format detection reads several lines: a first line with a negative count is one bad
/// line (it used to make the file unreadable: "cannot tell the input format"), and so is a
/// folded file of one 10 MB line, which detection sees cut at 64 KiB.
#[test]
fn one_bad_first_line_and_one_long_line_are_still_folded_input() {
    let dir = tempfile::tempdir().unwrap();
    let neg = dir.path().join("neg.folded");
    std::fs::write(&neg, "main;a -5\nmain;b 3\n").unwrap();
    kiln()
        .arg("collapse")
        .arg(&neg)
        .assert()
        .success()
        .stdout("main;b 3\n")
        .stderr(predicate::str::contains(
            "neg.folded:1: negative sample count",
        ))
        .stderr(predicate::str::contains("skipped 1: negative count"));
    let long = dir.path().join("long.folded");
    let mut line = String::new();
    while line.len() < 10 << 20 {
        line.push_str("some_function;");
    }
    line.push_str("leaf 42\n");
    std::fs::write(&long, &line).unwrap();
    let out = kiln().arg("collapse").arg(&long).assert().success();
    assert_eq!(out.get_output().stdout, line.as_bytes());
}
