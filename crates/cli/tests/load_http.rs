//! `kiln load http` as users run it: flag errors, a refused port, real runs against a
//! private nginx and the Go example, and Ctrl-C.
use kiln_testkit::{Nginx, NginxOptions};
use predicates::prelude::*;
use std::time::{Duration, Instant};

use kiln_testkit::kiln;

#[test]
fn bad_flags_and_urls_are_named() {
    for (args, what) in [
        (&["-c", "0", "http://127.0.0.1:1/"][..], "-c"),
        (&["-R", "0", "http://127.0.0.1:1/"][..], "-R"),
        (&["-H", "nocolon", "http://127.0.0.1:1/"][..], "-H"),
        (&["https://127.0.0.1:1/"][..], "https is not supported"),
        (&["http://127.0.0.1:1/{rand:5-1}"][..], "A <= B"),
        (&[][..], "give a URL"),
        (
            &["--targets", "/nonexistent/targets.txt"][..],
            "/nonexistent/targets.txt",
        ),
    ] {
        kiln()
            .args(["load", "http"])
            .args(args)
            .assert()
            .code(1)
            .stdout("")
            .stderr(predicate::str::starts_with("Error: ").and(predicate::str::contains(what)));
    }
    kiln()
        .args(["load", "http", "-d", "5x", "http://127.0.0.1:1/"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown unit"));
}

#[test]
fn a_refused_port_fails_at_once() {
    let port = kiln_testkit::free_port().unwrap();
    let t = Instant::now();
    kiln()
        .args(["load", "http", &format!("http://127.0.0.1:{port}/")])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("cannot connect")
                .and(predicate::str::contains(port.to_string())),
        );
    assert!(t.elapsed() < Duration::from_secs(5));
}

fn stdout_of(args: &[&str]) -> String {
    let out = kiln()
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

/// The `N` of `requests: N sent = M answered …`.
fn answered(s: &str) -> u64 {
    s.lines()
        .find_map(|l| l.split_once(" sent = "))
        .and_then(|(_, r)| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no accounting line in {s}"))
}

#[test]
fn closed_loop_and_constant_rate_against_nginx() {
    let n = Nginx::start_with(&NginxOptions::default()).unwrap();
    let s = stdout_of(&[
        "load",
        "http",
        "-c",
        "4",
        "-t",
        "1",
        "-d",
        "2s",
        &n.url("/"),
    ]);
    assert!(s.contains("id: http, time 1.000 s, sent: "), "{s}");
    assert!(s.contains("latency (closed-loop): "), "{s}");
    assert!(s.contains("latency is closed-loop"), "{s}");
    let got = answered(&s);
    let log = n.access_entries_settled(Duration::from_secs(5)).unwrap();
    assert_eq!(log.len() as u64, got, "{s}");
    assert!(s.contains(&format!("status: 200 × {got}")), "{s}");
    assert!(s.contains(" + 0 failed + 0 unanswered"), "{s}");

    let s = stdout_of(&[
        "load",
        "http",
        "-c",
        "16",
        "-R",
        "500",
        "-d",
        "2s",
        "--id",
        "r",
        &n.url("/"),
    ]);
    // Every scheduled request sent and answered, or said not sent: on a machine busy with
    // other work a response can take longer than the 16 connections' share of the
    // schedule (8 ms), and the one due then is counted, not dropped.
    let line = s
        .lines()
        .find(|l| l.starts_with("id: r, requests: "))
        .unwrap_or_else(|| panic!("no accounting line in {s}"));
    let sent: u64 = line["id: r, requests: ".len()..]
        .split(' ')
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        line.starts_with(&format!(
            "id: r, requests: {sent} sent = {sent} answered + 0 failed + 0 unanswered"
        )),
        "{s}"
    );
    let not_sent: u64 = line
        .split("; ")
        .nth(1)
        .map(|x| x.split(' ').next().unwrap().parse().unwrap())
        .unwrap_or(0);
    assert_eq!(sent + not_sent, 1000, "{s}");
    assert!(not_sent <= 20, "{s}");
    assert!(s.contains("id: r, latency from intended send min/"), "{s}");
    assert!(s.contains("service time (actual send to response)"), "{s}");
}

#[test]
fn a_concurrency_sweep_writes_its_table_windows_and_verdict() {
    let n = Nginx::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("sweep");
    let worker = n.worker_pids()[0].to_string();
    let s = stdout_of(&[
        "load",
        "http",
        "-t",
        "1",
        "-d",
        "1s",
        "--concurrency-sweep",
        "1,4",
        "--target-pid",
        &worker,
        "-o",
        prefix.to_str().unwrap(),
        &n.url("/"),
    ]);
    assert!(s.contains("connections 1: id: http, time "), "{s}");
    assert!(s.contains("connections 4: id: http, time "), "{s}");
    assert!(s.contains("connections   answered/s"), "{s}");
    // A verdict either way, in words.
    assert!(
        s.contains("throughput stops growing at ~")
            || s.contains("throughput stops following the connections at ~")
            || s.contains("throughput kept growing"),
        "{s}"
    );
    let csv = std::fs::read_to_string(dir.path().join("sweep.sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(
        csv.lines().nth(1).unwrap().starts_with("connections,1,"),
        "{csv}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("sweep.json")).unwrap())
            .unwrap();
    assert_eq!(json["steps"].as_array().unwrap().len(), 2);
    assert_eq!(json["steps"][1]["param"], "connections");
    assert!(json["summary"]["rows"][0]["target_cpu_pct"]
        .as_f64()
        .is_some());
    // Every request nginx logged is in the two steps' totals.
    let total = json["headline"]["totals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "answered")
        .unwrap()["value"]
        .as_u64()
        .unwrap();
    assert_eq!(
        n.access_entries_settled(Duration::from_secs(5))
            .unwrap()
            .len() as u64,
        total
    );
}

#[test]
fn ctrl_c_ends_the_run_with_a_summary() {
    let n = Nginx::start().unwrap();
    let mut child = kiln_testkit::kiln_process()
        .args(["load", "http", "-c", "2", "-d", "60s", &n.url("/")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once it has printed its first second.
    let lines =
        kiln_testkit::Lines::first_of(&mut child, "kiln load http", Duration::from_secs(30));
    // SAFETY: signalling our own child by its PID.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(status.code(), Some(130));
    let s = lines.all();
    assert!(s.contains("answered rate avg"), "{s}");
    assert!(
        s.contains("interrupted: results up to the interruption"),
        "{s}"
    );
}

/// Run `name` of `store` as `kiln runs show --json` gives it.
fn shown(store: &std::path::Path, name: &str) -> serde_json::Value {
    let out = kiln()
        .args(["runs", "show", name, "--json", "--store"])
        .arg(store)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// Under `kiln run`, an HTTP load without -d lasts as long as the run measures: a run of
/// 11 s after a warm-up is complete, never cut at the 10 s a load on its own lasts.
#[test]
fn under_kiln_run_a_load_without_a_duration_lasts_the_run() {
    let n = Nginx::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let worker = n.worker_pids()[0];
    kiln()
        .args(["run", "--name", "long", "-p", &worker.to_string()])
        .args(["-d", "11", "--warmup", "1", "--no-report", "--store"])
        .arg(&store)
        .args([
            "load",
            "http",
            "-t",
            "1",
            "-c",
            "2",
            "-R",
            "200",
            &n.url("/"),
        ])
        .assert()
        .success();
    let run = shown(&store, "long");
    assert_eq!(run["status"]["complete"], true, "{run:#}");
    let m = &run["measure"];
    let measured = (m["end_ns"].as_u64().unwrap() - m["start_ns"].as_u64().unwrap()) as f64 / 1e9;
    assert!(measured >= 10.9, "measured {measured} s of 11");
    // The load ran through the measurement: it answered in its last second too.
    let load_s = run["load"]["report"]["summary"]["duration_s"].as_f64();
    assert!(
        load_s.is_none_or(|d| d >= 11.5),
        "the load lasted {load_s:?} s"
    );
}

#[test]
fn under_kiln_run_each_sweep_step_is_a_window_and_the_target_is_the_runs() {
    let n = Nginx::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let worker = n.worker_pids()[0];
    kiln()
        .args([
            "run",
            "--name",
            "sweep",
            "-p",
            &worker.to_string(),
            // Longer than the sweep (two steps of 1 s): the run ends with the load, and a
            // recorder that starts late on a busy machine still sees both steps.
            "-d",
            "5",
        ])
        .arg("--store")
        .arg(&store)
        .args([
            "load",
            "http",
            "-t",
            "1",
            "-d",
            "1s",
            "--concurrency-sweep",
            "1,2",
            &n.url("/"),
        ])
        .assert()
        // On a loaded machine the recorder may start after this short sweep ended: the run
        // is then stored marked incomplete (exit 1); its load and windows are kept either way.
        .code(predicate::in_iter([0, 1]))
        .stdout(predicate::str::contains("stored in"));
    let run = shown(&store, "sweep");
    let windows: Vec<String> = run["windows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        windows.contains(&"connections=1".to_string()),
        "{windows:?}"
    );
    assert!(
        windows.contains(&"connections=2".to_string()),
        "{windows:?}"
    );
    let summary = &run["load"]["report"]["summary"];
    // The run's -p became the load's --target-pid: the sweep measured nginx's CPU.
    assert!(
        summary["rows"][0]["target_cpu_pct"].as_f64().is_some(),
        "{summary}"
    );
    assert!(
        summary["plateau"]["verdict"].as_str().is_some(),
        "{summary}"
    );
    // Each step is a window of the run: compared as two runs, read as a profile.
    let compare = |a: &str, b: &str| -> serde_json::Value {
        let out = kiln()
            .args(["compare", a, b, "--format", "json", "--store"])
            .arg(&store)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        serde_json::from_slice(&out).unwrap()
    };
    // A figure's median in each of the two groups.
    let medians = |cmp: &serde_json::Value, key: &str| -> [serde_json::Value; 2] {
        let row = cmp["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["key"] == key)
            .unwrap_or_else(|| panic!("no {key}: {cmp}"));
        [0, 1].map(|i| row["groups"][i]["median"].clone())
    };
    let per_step = medians(&compare("sweep@1", "sweep@connections=2"), "throughput")
        .map(|v| v.as_f64().expect("each step has its throughput"));
    let rows = summary["rows"].as_array().unwrap();
    for (i, row) in rows.iter().enumerate().take(2) {
        let answered = row["answered_rate"].as_f64().unwrap();
        assert!(
            (per_step[i] - answered).abs() <= 0.25 * answered.max(1.0),
            "step {i}: {} from the stored seconds, {answered} in the sweep table",
            per_step[i]
        );
    }
    // A span of the measurement's seconds is a window too: the first step's seconds,
    // given as seconds from the start of the measurement, are the first step.
    let first = run["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "connections=1")
        .unwrap();
    let ns = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap() as f64;
    let from = (ns(first, "start_ns") - ns(&run["measure"], "start_ns")) / 1e9;
    let to = (ns(first, "end_ns") - ns(&run["measure"], "start_ns")) / 1e9;
    let span_ref = format!("sweep@{from:.3}-{to:.3}");
    let cmp = compare(&span_ref, "sweep@1");
    let [span, step] = medians(&cmp, "throughput").map(|v| v.as_f64().unwrap());
    assert!(
        (span - step).abs() <= 1e-6 * step.max(1.0),
        "{span_ref}: {span}, the first step: {step}"
    );
    // Its latency from the run's per-second histograms: the step's, kept whole.
    let [p50_span, p50_step] = medians(&cmp, "p50");
    assert!(p50_span.is_number(), "{cmp}");
    assert_eq!(p50_span, p50_step, "{cmp}");
    kiln()
        .args(["runs", "show", "sweep@3", "--store"])
        .arg(&store)
        .assert()
        .failure()
        .stderr(predicate::str::contains("has no window '3'"))
        .stderr(predicate::str::contains("START-END"));
}

/// Every file descriptor kiln may open held by its connections (`ulimit -n 256`, 250
/// connections): kiln still measures its own CPU (getrusage needs no descriptor), and a
/// target it cannot read is said to be unreadable for that reason, not to have ended.
#[test]
fn with_every_descriptor_in_use_kiln_still_measures_itself() {
    let server = kiln_testkit::FaultServer::start(kiln_testkit::Fault::None).unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -n 256; exec '{}' load http -d 3 -c 250 --no-preflight --target-pid {} {}",
            kiln_testkit::kiln_bin().display(),
            std::process::id(),
            server.url("/")
        ))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let cpu: f64 = text
        .lines()
        .find_map(|l| {
            l.split_once("kiln CPU: ")?
                .1
                .split('%')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no kiln CPU: {text}"));
    assert!(cpu > 0.0, "{text}");
    if let Some(l) = text
        .lines()
        .find(|l| l.contains("could not be read from /proc"))
    {
        assert!(!l.contains("it ended"), "{l}");
    }
}
