//! A target that exits in the first seconds of `kiln run`, before its load starts: the run
//! is stored, incomplete, saying so, and no message names a flag the user did not give
//! (`--target-pid` when the user gave `-p`).
use std::process::{Command, Stdio};
use std::time::Duration;

use kiln_testkit::kiln_in as kiln;
use kiln_testkit::runs_or_empty as runs;

/// The target has exited (a zombie this test has not reaped: it is still in /proc, so
/// kiln's first check passes, as for a target that exits just after it) and the load
/// cannot connect: stored incomplete, the target's exit named as the reason.
#[test]
fn a_target_that_exited_before_the_load_started_is_a_stored_incomplete_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let mut dead = Command::new("true").stdout(Stdio::null()).spawn().unwrap();
    let pid = dead.id();
    let exited = kiln_testkit::poll_until(Duration::from_secs(60), || {
        std::fs::read(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            let i = s.iter().rposition(|&c| c == b')').unwrap_or(0);
            s[i + 1..].trim_ascii_start().starts_with(b"Z")
        })
    });
    assert!(exited.is_some(), "the target never exited");
    let url = format!("http://127.0.0.1:{}/", kiln_testkit::unused_port());
    let out = kiln(&store)
        .args([
            "run",
            "--name",
            "early",
            "-d",
            "2",
            "--no-report",
            "--unwind",
            "copy",
        ])
        .args(["-p", &pid.to_string(), "load", "http", "-c", "1", &url])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    let _ = dead.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(!stderr.contains("--target-pid"), "{stderr}");
    let stored = runs(&store);
    assert_eq!(stored.len(), 1, "{stdout}{stderr}");
    let reason = stored[0]["status"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with(&format!("the target (pid {pid}) exited "))
            && reason.contains("before the load started (the load: "),
        "{reason}"
    );
    assert!(stdout.contains("(INCOMPLETE: the target (pid"), "{stdout}");
}

/// A target killed as soon as `kiln run` is under way: whenever it falls (before the load
/// starts, before the recording, during the measurement), the run is stored incomplete
/// with the target's exit as its reason, and nothing says `--target-pid`.
#[test]
fn a_target_killed_as_the_run_starts_is_a_stored_incomplete_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let server = kiln_testkit::FaultServer::start(kiln_testkit::Fault::None).unwrap();
    let mut target = Command::new("sleep").arg("600").spawn().unwrap();
    let pid = target.id();
    let mut run = kiln_testkit::kiln_process()
        .env("KILN_STORE", &store)
        .args(["run", "--name", "killed", "-d", "5", "--no-report"])
        .args([
            "-p",
            &pid.to_string(),
            "load",
            "http",
            "-c",
            "1",
            "-R",
            "20",
        ])
        .arg(server.url("/"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Under way: its first progress line (the run began, its target checked).
    let mut lines = kiln_testkit::Lines::follow(run.stderr.take().unwrap());
    let under_way = lines.wait_for(Duration::from_secs(300), |l| {
        l.starts_with("warm-up") || l.starts_with("measuring")
    });
    assert!(under_way.is_some(), "{}", lines.all());
    let _ = target.kill();
    let _ = target.wait();
    let ended = kiln_testkit::poll_until(Duration::from_secs(300), || {
        matches!(run.try_wait(), Ok(Some(_)))
    });
    if ended.is_none() {
        let _ = run.kill();
    }
    let out = run.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = lines.all();
    assert!(ended.is_some(), "kiln run did not end: {stdout}{stderr}");
    assert!(!stderr.contains("--target-pid"), "{stderr}");
    let stored = runs(&store);
    assert_eq!(stored.len(), 1, "{stdout}{stderr}");
    assert_eq!(stored[0]["status"]["complete"], false);
    let reason = stored[0]["status"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("the target") && reason.contains("exited"),
        "{reason}"
    );
}
