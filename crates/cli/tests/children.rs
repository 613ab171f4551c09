//! The programs `kiln run` starts around its runs — a variant's set-up command,
//! `--after-each` — on real processes: a hung one ends on the first SIGTERM with its whole
//! process group (nothing orphaned under PID 1) or at `--setup-timeout`; a run is saved
//! before its after-each runs; a gigabyte of output is kept within a bound and a store
//! holding more than its readers accept is reported damaged by `kiln runs check`.
use kiln_testkit::Started;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use kiln_testkit::kiln_in as kiln;
use kiln_testkit::{alive, json, runs_or_empty as runs};

/// A target for the runs: a sleeping process (nothing to record; the runs are about what
/// runs around them).
fn target() -> Started {
    Started::new(Path::new("/bin/sleep"), &["100000"])
}

/// `kiln run` as a process, its output piped, with `args` after `run`.
fn kiln_run(store: &Path, args: &[&str]) -> Child {
    kiln_testkit::kiln_process()
        .env("KILN_STORE", store)
        .arg("run")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` to exit (it must: the test fails after `limit` otherwise, killing it)
/// and returns its status code and standard error.
fn finish(mut child: Child, limit: Duration) -> (Option<i32>, String) {
    let ended = kiln_testkit::poll_until(limit, || matches!(child.try_wait(), Ok(Some(_))));
    if ended.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("kiln did not end within {limit:?} of the signal");
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The pid a command wrote to `file`, once it has.
fn pid_in(file: &Path) -> u32 {
    let seen = kiln_testkit::poll_until(Duration::from_secs(600), || {
        std::fs::read_to_string(file).is_ok_and(|s| s.ends_with('\n'))
    });
    assert!(seen.is_some(), "{} was never written", file.display());
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A shell command that starts a background sleep (a grandchild of kiln), writes its pid
/// to `file`, and waits: hung, with something of its own to orphan.
fn hung(file: &Path) -> String {
    format!("sleep 100000 & echo $! > '{}'; wait", file.display())
}

#[test]
fn a_hung_set_up_ends_on_the_first_sigterm_with_its_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let t = target();
    let bg = dir.path().join("bg.pid");
    let child = kiln_run(
        &store,
        &[
            "--variant",
            &format!("a={}", hung(&bg)),
            "--variant",
            "b=true",
            "-d",
            "1",
            "--no-report",
            "--unwind",
            "copy",
            "-p",
            &t.pid(),
            "exec",
            "--",
            "sleep",
            "600",
        ],
    );
    let sleeper = pid_in(&bg);
    assert!(alive(sleeper));
    kiln_testkit::signal(child.id(), libc::SIGTERM);
    let (code, stderr) = finish(child, Duration::from_secs(120));
    assert_eq!(code, Some(143), "{stderr}");
    assert!(
        stderr.contains("was ended by kiln: stopped on SIGTERM"),
        "{stderr}"
    );
    assert!(stderr.contains("the experiment"), "{stderr}");
    assert!(
        kiln_testkit::poll_until(Duration::from_secs(60), || !alive(sleeper)).is_some(),
        "the set-up's background sleep {sleeper} outlived kiln"
    );
    assert!(runs(&store).is_empty());
}

#[test]
fn a_set_up_past_its_timeout_is_ended_and_stops_the_experiment() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let t = target();
    let bg = dir.path().join("bg.pid");
    let child = kiln_run(
        &store,
        &[
            "--variant",
            &format!("a={}", hung(&bg)),
            "--variant",
            "b=true",
            "--setup-timeout",
            "1",
            "-d",
            "1",
            "--no-report",
            "-p",
            &t.pid(),
            "exec",
            "--",
            "sleep",
            "600",
        ],
    );
    let sleeper = pid_in(&bg);
    let (code, stderr) = finish(child, Duration::from_secs(300));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("was ended by kiln: it ran past --setup-timeout 1 s"),
        "{stderr}"
    );
    assert!(
        kiln_testkit::poll_until(Duration::from_secs(60), || !alive(sleeper)).is_some(),
        "the set-up's background sleep {sleeper} outlived its timeout"
    );
}

/// The run is in the store while its after-each still runs; the first SIGTERM ends the
/// after-each (and what it started), and the stored run says how it ended.
#[test]
fn a_run_is_saved_before_its_after_each_and_a_hung_one_ends_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let t = target();
    let bg = dir.path().join("bg.pid");
    let child = kiln_run(
        &store,
        &[
            "--name",
            "saved-first",
            "--after-each",
            &format!("echo cleaning; {}", hung(&bg)),
            "-d",
            "1",
            "--no-report",
            "--unwind",
            "copy",
            "-p",
            &t.pid(),
            "exec",
            "--",
            "sleep",
            "600",
        ],
    );
    let sleeper = pid_in(&bg);
    let before = runs(&store);
    assert_eq!(
        before.len(),
        1,
        "the run is stored before its after-each ends"
    );
    assert_eq!(before[0]["name"], "saved-first");
    kiln_testkit::signal(child.id(), libc::SIGTERM);
    let (code, stderr) = finish(child, Duration::from_secs(120));
    assert_eq!(code, Some(143), "{stderr}");
    assert!(
        kiln_testkit::poll_until(Duration::from_secs(60), || !alive(sleeper)).is_some(),
        "the after-each's background sleep {sleeper} outlived kiln"
    );
    let after = runs(&store);
    assert_eq!(after.len(), 1, "{after:#?}");
    let shown = kiln_testkit::show(&store, "#1");
    let cmd = &shown["commands"][0];
    assert_eq!(cmd["role"], "after-each", "{shown:#}");
    assert_eq!(cmd["stopped"], "stopped on SIGTERM", "{shown:#}");
    let out = kiln(&store)
        .args(["runs", "attachment", "#1", "after-each.stdout", "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(kiln_testkit::succeeded(&out), "cleaning\n");
}

/// 1.1 GB of a set-up's output: kept as its first and last 8 MiB, the rest counted; every
/// reader reads the run.
#[test]
fn a_gigabyte_of_set_up_output_is_kept_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let t = target();
    let total: u64 = 1_100_000_000;
    let out = kiln(&store)
        .args([
            "run",
            "--variant",
            &format!("a=head -c {total} /dev/zero; echo end-of-output"),
            "--variant",
            "b=true",
            "--repeat",
            "1",
            "-d",
            "1",
            "--no-report",
            "--unwind",
            "copy",
            "-p",
            &t.pid(),
            "exec",
            "--",
            "sleep",
            "600",
        ])
        .timeout(Duration::from_secs(900))
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out);
    let list = kiln(&store)
        .args(["runs", "attachment", "--list", "a"])
        .output()
        .unwrap();
    let text = kiln_testkit::succeeded(&list);
    assert!(text.contains("setup.stdout"), "{text}");
    let got = kiln(&store)
        .args(["runs", "attachment", "a", "setup.stdout", "-o", "-"])
        .output()
        .unwrap();
    kiln_testkit::succeeded(&got);
    let data = got.stdout;
    let keep = 8 << 20;
    let written = total + b"end-of-output\n".len() as u64;
    let left_out = written - 2 * keep as u64;
    let marker = format!("\n[kiln: {left_out} bytes left out here]\n");
    assert_eq!(data.len(), 2 * keep + marker.len());
    assert!(data[..keep].iter().all(|&b| b == 0));
    assert_eq!(&data[keep..keep + marker.len()], marker.as_bytes());
    assert!(data.ends_with(b"\0\0end-of-output\n"));
    let shown = kiln_testkit::show(&store, "a");
    let notes = shown["commands"][0]["notes"].to_string();
    assert!(
        notes.contains(&format!("stdout: {written} bytes written")),
        "{shown:#}"
    );
    let check = kiln(&store).args(["runs", "check"]).output().unwrap();
    kiln_testkit::succeeded(&check);
}

/// A stored attachment larger than the readers accept (here the input limit lowered to
/// 1 MiB under a 2 MiB attachment): every reader would fail on the run, so `kiln runs
/// check` reports it damaged, naming the attachment.
#[test]
fn runs_check_reports_an_attachment_past_the_input_limit() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let t = target();
    let out = kiln(&store)
        .args([
            "run",
            "--name",
            "big",
            "--after-each",
            "head -c 2097152 /dev/zero",
            "-d",
            "1",
            "--no-report",
            "--unwind",
            "copy",
            "-p",
            &t.pid(),
            "exec",
            "--",
            "sleep",
            "600",
        ])
        .timeout(Duration::from_secs(600))
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out);
    let ok = kiln(&store).args(["runs", "check"]).output().unwrap();
    kiln_testkit::succeeded(&ok);
    let check = kiln(&store)
        .args(["--max-input", "1M", "runs", "check"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success(), "{text}{err}");
    assert!(
        text.contains("run #1 'big' is damaged: attachment 'after-each.stdout': its size, 2097152 bytes, exceeds the input limit"),
        "{text}"
    );
    assert!(err.contains("1 damaged"), "{err}");
}

/// A variant's own target (`--variant-pid`) that exits during the experiment: the
/// experiment stops, saying so, naming --variant-pid (not -p), and keeps the runs made.
#[test]
fn a_variants_target_that_exits_stops_the_experiment_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let a = target();
    // b's target is no child of the test: once killed, it is reaped at once.
    let out = std::process::Command::new("sh")
        .args(["-c", "sleep 100000 >/dev/null 2>&1 & echo $!"])
        .output()
        .unwrap();
    let b: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let child = kiln_run(
        &store,
        &[
            "--variant",
            &format!("a=kill -9 {b}"),
            "--variant",
            "b=true",
            "--variant-pid",
            &format!("a={}", a.pid()),
            "--variant-pid",
            &format!("b={b}"),
            "-d",
            "1",
            "--no-report",
            "--unwind",
            "copy",
            "exec",
            "--",
            "sleep",
            "600",
        ],
    );
    let (code, stderr) = finish(child, Duration::from_secs(600));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "variant 'b': its target, process {b} (--variant-pid), has exited"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("stops at round 1 (variant 'b'); the 1 run(s) made before it are stored"),
        "{stderr}"
    );
    assert!(!stderr.contains("with -p"), "{stderr}");
    assert_eq!(runs(&store).len(), 1);
}

/// Variants named with a space, `$(…)` and a quote: the `kiln compare …` kiln suggests at
/// the end is pasted into a shell as those names, compares them, and runs nothing else.
#[test]
fn the_suggested_compare_is_quoted_for_a_shell() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let t = target();
    let pwned = dir.path().join("pwned");
    let evil = format!("a b$(touch {})", pwned.display());
    let child = kiln_run(
        &store,
        &[
            "--variant",
            &format!("{evil}=true"),
            "--variant",
            "it's=true",
            "-d",
            "1",
            "--no-report",
            "--unwind",
            "copy",
            "-p",
            &t.pid(),
            "exec",
            "--",
            "sleep",
            "600",
        ],
    );
    let (code, stderr) = finish(child, Duration::from_secs(600));
    assert_eq!(code, Some(0), "{stderr}");
    let suggested = stderr
        .lines()
        .find_map(|l| {
            l.split_once("round by round with: ")?
                .1
                .strip_prefix("kiln ")
        })
        .unwrap_or_else(|| panic!("no suggestion: {stderr}"))
        .to_string();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("\"$KILN\" {suggested} --format json"))
        .env("KILN", kiln_testkit::kiln_bin())
        .env("KILN_STORE", &store)
        .output()
        .unwrap();
    assert!(!pwned.exists(), "the suggestion ran a command: {suggested}");
    let cmp = json(&out.stdout);
    let labels: Vec<&str> = cmp["groups"]
        .as_array()
        .unwrap_or_else(|| panic!("{cmp:#}\n{}", String::from_utf8_lossy(&out.stderr)))
        .iter()
        .map(|g| g["label"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(labels, [evil.as_str(), "it's"], "{suggested}");
}
