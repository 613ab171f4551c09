//! The `kiln collapse` and `kiln diff` commands as a user runs them: stdout and stderr
//! checked separately, exit codes, and outputs that appear whole or not at all.
use assert_cmd::Command;
use predicates::prelude::*;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../collapse/tests/data/perf")
        .join(name)
}

fn kiln() -> Command {
    Command::cargo_bin("kiln").unwrap()
}

#[test]
fn collapses_from_stdin_and_summarises_on_stderr() {
    let input = std::fs::read(fixture("tracepoints.txt")).unwrap();
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
        .arg(fixture("erlang-jit.txt"))
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
        .stderr(predicate::str::contains("unknown input format \"nope\""));
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
