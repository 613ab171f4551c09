//! What a new user trips over, end to end on a real RabbitMQ (Debian's 3.10, its MQTT
//! plugin on): each either prevented or explained in the message they see.
use kiln_testkit::Started;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

use kiln_testkit::kiln_in as kiln;
use kiln_testkit::{runs_or_empty as runs, text};

fn broker() -> Option<&'static kiln_testkit::RabbitMq> {
    match kiln_testkit::shared_rabbitmq_mqtt() {
        Ok(b) => Some(b),
        Err(e) => {
            kiln_testkit::skip(&format!("RabbitMQ with its MQTT plugin: {e}"));
            None
        }
    }
}

/// kiln's default MQTT 5 CONNECT to a broker that speaks 3.1.1 only: the error says which
/// version kiln sent and to give `-V 4`, which then connects.
#[test]
fn a_refused_protocol_version_says_what_was_sent_and_what_to_give() {
    let Some(b) = broker() else { return };
    let port = b.mqtt_port().expect("the MQTT plugin's port").to_string();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let out = kiln(&store)
        .args(["load", "mqtt", "conn", "-h", "127.0.0.1", "-p", &port])
        .args(["-c", "1", "-z", "2"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        all.contains("kiln sent MQTT 5 (-V 5, the default); give -V 4"),
        "{all}"
    );
    let out = kiln(&store)
        .args(["load", "mqtt", "conn", "-h", "127.0.0.1", "-p", &port])
        .args(["-V", "4", "-c", "1", "-z", "2"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{all}");
    assert!(!all.contains("kiln sent MQTT"), "{all}");
}

/// A fleet opened at one connection per 50 ms: measured at once, it is still connecting,
/// which the run says (and the headline holds the count beside the one asked for);
/// `--warmup fleet` waits until it holds every connection.
#[test]
fn a_fleet_still_connecting_is_said_and_warmup_fleet_waits_for_it() {
    let Some(b) = broker() else { return };
    let port = b.mqtt_port().expect("the MQTT plugin's port").to_string();
    let beam = b.beam_pid().expect("the broker's pid").to_string();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let fleet = |name: &str, warmup: &str| {
        kiln(&store)
            .args([
                "run",
                "--name",
                name,
                "-d",
                "2",
                "--warmup",
                warmup,
                "--no-report",
            ])
            .args(["--unwind", "copy", "-p", &beam])
            .args([
                "load",
                "mqtt",
                "conn",
                "-V",
                "4",
                "-h",
                "127.0.0.1",
                "-p",
                &port,
            ])
            .args(["-c", "150", "-i", "50", "--prefix", name])
            .timeout(Duration::from_secs(600))
            .output()
            .unwrap()
    };
    let out = fleet("growing", "0");
    let said = text(&out.stdout);
    assert!(
        said.contains(
            "of the 150 connections asked for when the measurement began (still connecting"
        ),
        "{said}{}",
        text(&out.stderr)
    );
    assert!(said.contains("connections held of 150 asked for"), "{said}");
    let r = &runs(&store)[0];
    assert!(
        r["warnings"]
            .to_string()
            .contains("when the measurement began"),
        "{r:#}"
    );
    let out = fleet("whole", "fleet");
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(!said.contains("when the measurement began"), "{said}");
    assert!(said.contains(": 150 connections held"), "{said}");
}

/// A repeat whose load cannot start (the broker stopped after the first run) is tried
/// once more once the broker had time to settle; failing again, the group keeps the
/// repeats it has and says which failed.
#[test]
fn a_failed_repeat_is_retried_and_the_group_keeps_what_it_has() {
    let b = match kiln_testkit::RabbitMq::start() {
        Ok(b) => b,
        Err(e) => return kiln_testkit::skip(&format!("RabbitMQ: {e}")),
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let go = dir.path().join("go");
    let t = Started::new(Path::new("/bin/sleep"), &["100000"]);
    // After the first run the broker stops (the test stops it while the after-each waits).
    let after = format!(
        "[ -e '{0}.done' ] || {{ while [ ! -e '{0}' ]; do sleep 0.1; done; touch '{0}.done'; }}",
        go.display()
    );
    let mut child = kiln_testkit::kiln_process()
        .env("KILN_STORE", &store)
        .args([
            "run",
            "--name",
            "flaky",
            "--repeat",
            "3",
            "-d",
            "1",
            "--no-report",
        ])
        .args(["--unwind", "copy", "--after-each", &after, "-p", &t.pid()])
        .args([
            "load",
            "amqp",
            "-h",
            &b.uri(),
            "-x",
            "1",
            "-y",
            "1",
            "-r",
            "100",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let first = kiln_testkit::poll_until(Duration::from_secs(600), || runs(&store).len() == 1);
    assert!(first.is_some(), "the first run was never stored");
    b.ctl(&["stop_app"]).unwrap();
    std::fs::write(&go, b"").unwrap();
    let ended = kiln_testkit::poll_until(Duration::from_secs(600), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if ended.is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert!(ended.is_some(), "{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("repeat 2/3 failed: ")
            && err.contains("trying it once more once the broker settles"),
        "{err}"
    );
    assert!(err.contains("repeat 2/3 failed again: "), "{err}");
    assert!(
        err.contains("1 of 3 repeats stored; failed: repeat 2 (") && err.contains("; repeat 3 ("),
        "{err}"
    );
    assert_eq!(runs(&store).len(), 1);
}

/// A sweep whose `-d` is shorter than its steps: said before the run and kept with it;
/// the steps it cut short are marked in the table and the JSON.
#[test]
fn a_sweep_longer_than_its_measurement_is_said_and_its_cut_steps_marked() {
    let Some(b) = broker() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let t = Started::new(Path::new("/bin/sleep"), &["100000"]);
    let queue = format!("kiln-new-user-sweep-{}", std::process::id());
    let out = kiln(&store)
        .args([
            "run",
            "--name",
            "short",
            "-d",
            "5",
            "--no-report",
            "--unwind",
            "copy",
        ])
        .args([
            "-p",
            &t.pid(),
            "load",
            "amqp",
            "-h",
            &b.uri(),
            "-x",
            "1",
            "-y",
            "1",
        ])
        .args(["-z", "3", "--rate-sweep", "100,200,300", "--queue", &queue])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    let (said, err) = (text(&out.stdout), text(&out.stderr));
    assert!(
        err.contains("warning: -d 5 s is shorter than the sweep: its 3 steps of 3 s take 9 s")
            && err.contains("give -d 19 or more"),
        "{err}"
    );
    assert!(said.contains("(cut short: "), "{said}{err}");
    let v = kiln_testkit::show(&store, "short");
    assert!(
        v["warnings"].to_string().contains("shorter than the sweep"),
        "{v:#}"
    );
    let steps = v["sweep"]["steps"].as_array().expect("the sweep's steps");
    assert!(
        steps.iter().any(|s| s["cut_short_s"].is_number()),
        "{:#}",
        v["sweep"]
    );
}

/// A named queue is durable only with `-f persistent`, as the README and --help say.
#[test]
fn a_named_queue_is_durable_only_with_f_persistent() {
    let Some(b) = broker() else { return };
    let help = kiln_testkit::kiln()
        .args(["load", "amqp", "--help"])
        .output()
        .unwrap();
    let help = text(&help.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("durable only with -f persistent"), "{help}");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let pid = std::process::id();
    for (queue, flags) in [
        (format!("kiln-transient-{pid}"), &[][..]),
        (format!("kiln-durable-{pid}"), &["-f", "persistent"][..]),
    ] {
        let out = kiln(&store)
            .args([
                "load",
                "amqp",
                "-h",
                &b.uri(),
                "-x",
                "1",
                "-y",
                "1",
                "-z",
                "1",
            ])
            .args(["-u", &queue, "--auto-delete", "false"])
            .args(flags)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let listed = b.ctl(&["list_queues", "name", "durable"]).unwrap();
    let listed = text(&listed.stdout);
    let durable = |q: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(q))
            .unwrap_or_else(|| panic!("no queue {q}: {listed}"))
            .trim_end()
            .ends_with("true")
    };
    assert!(!durable(&format!("kiln-transient-{pid}")), "{listed}");
    assert!(durable(&format!("kiln-durable-{pid}")), "{listed}");
    for q in ["transient", "durable"] {
        let _ = b.ctl(&["delete_queue", &format!("kiln-{q}-{pid}")]);
    }
}

/// `kiln load mqtt -s 32` (smaller than kiln's 36-byte stamp) is accepted, as emqtt-bench
/// takes any size: the messages are sent at that size and counted as the broker delivers
/// them, and the run says what it cannot measure.
#[test]
fn a_payload_smaller_than_the_stamp_is_sent_and_what_it_cannot_measure_said() {
    let Some(b) = broker() else { return };
    let port = b.mqtt_port().expect("the MQTT plugin's port").to_string();
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("small");
    let out = kiln_testkit::kiln()
        .args([
            "load",
            "mqtt",
            "pubsub",
            "-V",
            "4",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
        ])
        .args([
            "-s",
            "32",
            "-c",
            "2",
            "--subscribers",
            "1",
            "-I",
            "10",
            "-q",
            "1",
        ])
        .args([
            "-L",
            "100",
            "-t",
            "kiln-small/%i",
            "--prefix",
            "small",
            "-o",
        ])
        .arg(&prefix)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(
        said.contains("200 sent, ")
            && said.contains("-s 32 is smaller than kiln's 36-byte stamp")
            && said.contains("lost, duplicated and out-of-order messages are not counted"),
        "{said}"
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(prefix.with_extension("json")).unwrap())
            .unwrap();
    assert!(
        json["totals"]["received"].as_u64().unwrap_or(0) >= 200,
        "{:#}",
        json["totals"]
    );
    // 32 bytes carry the send time: the messages' latency is measured.
    let latencies = json["headline"]["latencies"].to_string();
    assert!(latencies.contains("latency"), "{latencies}");
    // 8 bytes carry nothing of it, and the run says so.
    let out = kiln_testkit::kiln()
        .args([
            "load",
            "mqtt",
            "pub",
            "-V",
            "4",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
        ])
        .args(["-s", "8", "-c", "1", "-I", "10", "-q", "1", "-L", "20"])
        .args(["-t", "kiln-small/x", "--prefix", "tiny"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(said.contains("nor is a message's latency"), "{said}");
}

/// A BEAM started with `+JPperf map` whose map kiln cannot read (here moved away while
/// it runs): kiln does not tell it to start with `+JPperf map`, but says it was, and
/// where kiln looked.
#[test]
fn a_vm_started_with_its_perf_map_is_not_told_to_start_with_it() {
    let Some(b) = broker() else { return };
    let beam = b.beam_pid().expect("the broker's pid");
    let map = format!("/tmp/perf-{beam}.map");
    let aside = format!("/tmp/perf-{beam}.map.kiln-test-aside");
    if std::fs::rename(&map, &aside).is_err() {
        return kiln_testkit::skip("the broker wrote no perf map to move aside");
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let queue = format!("kiln-new-user-jit-{}", std::process::id());
    let out = kiln(&store)
        .args([
            "run",
            "--name",
            "jit",
            "-d",
            "3",
            "--no-report",
            "--unwind",
            "copy",
        ])
        .args(["-p", &beam.to_string(), "load", "amqp", "-h", &b.uri()])
        .args(["-x", "1", "-y", "1", "-r", "2000", "--queue", &queue])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    let _ = std::fs::rename(&aside, &map);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{said}");
    assert!(!said.contains("start the VM with +JPperf map"), "{said}");
    assert!(
        said.contains("have no name") && said.contains("started with its perf map on"),
        "{said}"
    );
}
