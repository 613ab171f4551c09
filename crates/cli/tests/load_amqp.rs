//! `kiln load amqp` as users run it: flag errors, an absent broker, a real run with files
//! written, and Ctrl-C.
use predicates::prelude::*;
use std::time::{Duration, Instant};

use kiln_testkit::kiln;

#[test]
fn bad_flags_are_named() {
    for (args, flag) in [
        (&["--variable-rate", "5x"][..], "--variable-rate"),
        (&["--variable-size", "4:10"][..], "--variable-size"),
        (&["-c", "0"][..], "--confirm"),
        (&["-s", "5"][..], "--size"),
        (&["--queue-args", "x-queue-type"][..], "--queue-args"),
        (
            &[
                "--queue-pattern",
                "q",
                "--queue-pattern-from",
                "1",
                "--queue-pattern-to",
                "2",
            ][..],
            "--queue-pattern",
        ),
        (&["--rate-sweep", "1:2"][..], "--rate-sweep"),
        (&["-h", "http://localhost"][..], "--uri"),
        (&["-P", "0"][..], "--publishing-interval"),
    ] {
        kiln()
            .args(["load", "amqp"])
            .args(args)
            .assert()
            .code(1)
            .stdout("")
            .stderr(predicate::str::starts_with("Error: ").and(predicate::str::contains(flag)));
    }
    // Unknown values and missing companions are clap's: exit 2, naming the flag.
    kiln()
        .args(["load", "amqp", "-f", "fast"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--flag"));
    kiln()
        .args(["load", "amqp", "--queue-pattern", "q-%d"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--queue-pattern-from"));
}

#[test]
fn help_is_long_only_because_h_is_the_uri() {
    kiln()
        .args(["load", "amqp", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--uri").and(predicate::str::contains("--pmessages")));
}

#[test]
fn absent_broker_fails_fast_naming_the_uri() {
    let port = kiln_testkit::free_port().unwrap();
    let t = Instant::now();
    kiln()
        .args([
            "load",
            "amqp",
            "-h",
            &format!("amqp://u:pw@127.0.0.1:{port}"),
            "-z",
            "5",
        ])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains(format!("cannot connect to amqp://u@127.0.0.1:{port}"))
                .and(predicate::str::contains("pw").not()),
        );
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn run_prints_perftest_lines_and_writes_json_and_csv() {
    let b = kiln_testkit::shared_rabbitmq().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("run1");
    let out = kiln()
        .args([
            "load",
            "amqp",
            "-h",
            &b.uri(),
            "-u",
            "cli-run",
            "-C",
            "2000",
            "-D",
            "2000",
            "-c",
            "100",
        ])
        .args(["--id", "cli<1>", "-o"])
        .arg(&prefix)
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("id: cli<1>, sending rate avg: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("consumer latency min/median/75th/95th/99th/99.9th/max"),
        "{stdout}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("wrote "), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(prefix.with_extension("json")).unwrap())
            .unwrap();
    assert_eq!(json["summary"]["sent"], 2000);
    assert_eq!(json["summary"]["received"], 2000);
    assert_eq!(json["summary"]["confirmed"], 2000);
    assert_eq!(json["options"]["confirm"], 100);
    let uri = json["options"]["uri"].as_str().unwrap();
    assert!(
        uri.starts_with("amqp://guest@127.0.0.1:"),
        "no password in the file: {uri}"
    );
    let csv = std::fs::read_to_string(prefix.with_extension("csv")).unwrap();
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("time_s,interval_s,sent,confirmed"));
    let sent: u64 = lines
        .map(|l| l.split(',').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(sent, 2000);
}

#[test]
fn ctrl_c_still_prints_the_summary_and_writes_files() {
    let b = kiln_testkit::shared_rabbitmq().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("interrupted");
    let child = kiln_testkit::kiln_process()
        .args([
            "load",
            "amqp",
            "-h",
            &b.uri(),
            "-u",
            "cli-int",
            "-r",
            "100",
            "-z",
            "60",
            "-o",
        ])
        .arg(&prefix)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once a second of sending is reported, however busy the machine.
    let mut child = child;
    let mut lines = kiln_testkit::Lines::follow(child.stdout.take().unwrap());
    let first = lines.wait_for(Duration::from_secs(60), |l| {
        l.contains(", time ") && !l.contains("sent: 0 msg/s")
    });
    assert!(first.is_some(), "no second of sending reported in 60 s");
    kiln_testkit::signal(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stdout = lines.all();
    assert!(
        stdout.contains("interrupted") && stdout.contains("sending rate avg"),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(prefix.with_extension("json")).unwrap())
            .unwrap();
    assert_eq!(json["summary"]["interrupted"], true);
    assert!(json["summary"]["sent"].as_u64().unwrap() > 0);
}

#[test]
fn consumer_latency_does_not_outlive_the_deadline_or_sigterm() {
    let b = kiln_testkit::shared_rabbitmq().unwrap();
    // -z is a hard deadline even while a consumer sleeps out a ~28 h consumer latency.
    let mut child = kiln_testkit::kiln_process()
        .args(["load", "amqp", "-h", &b.uri(), "-u", "cli-slow", "-r", "20"])
        .args(["-L", "99999999999", "-z", "2"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.and_then(|s| s.code()), Some(0), "ended at -z 2");
    // Without -z, SIGTERM ends it (exit 128 + 15) with the summary written.
    let child = kiln_testkit::kiln_process()
        .args([
            "load",
            "amqp",
            "-h",
            &b.uri(),
            "-u",
            "cli-slow2",
            "-r",
            "20",
        ])
        .args(["-L", "99999999999"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Told to stop once its first second is reported (its consumers are asleep by then).
    let mut child = child;
    let mut lines = kiln_testkit::Lines::follow(child.stdout.take().unwrap());
    let first = lines.wait_for(Duration::from_secs(60), |l| l.contains(", time "));
    assert!(first.is_some(), "no second reported in 60 s");
    kiln_testkit::signal(child.id(), libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143));
    assert!(lines.all().contains("interrupted"));
}

#[test]
fn huge_messages_keep_memory_bounded() {
    // 64 MiB messages: the producer once built 128 of them (8.4 GB) before each write.
    let b = kiln_testkit::shared_rabbitmq().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("huge");
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "maxrss_kb=%M"])
        .arg(kiln_testkit::kiln_bin())
        .args(["load", "amqp", "-h", &b.uri(), "-u", "cli-huge"])
        .args(["--size", "67108864", "-z", "4", "-o"])
        .arg(&prefix)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let kb: u64 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("maxrss_kb="))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(kb < 1024 * 1024, "max RSS {kb} KiB");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(prefix.with_extension("json")).unwrap())
            .unwrap();
    let (sent, received) = (
        json["summary"]["sent"].as_u64().unwrap(),
        json["summary"]["received"].as_u64().unwrap(),
    );
    assert!(
        sent > 0 && received <= sent,
        "sent {sent} received {received}"
    );
}
