//! `kiln load mqtt` as users run it: flag errors, a real run with files written.
use predicates::prelude::*;

use kiln_testkit::kiln;

#[test]
fn bad_flags_and_uris_are_named() {
    for (args, flag) in [
        (&["pub", "-s", "300000000"][..], "-s"),
        (&["pub", "-q", "3"][..], "-q"),
        (&["pub", "-t", "a/+"][..], "-t"),
        (&["conn", "-V", "4", "--topic-alias"][..], "MQTT 5"),
        (&["conn", "--uri", "http://x"][..], "--uri"),
        (&["conn", "--uri", "mqtt://u:secret@h:99999"][..], "port"),
        (&["pub", "--rate-sweep", "1:2"][..], "--rate-sweep"),
    ] {
        kiln()
            .args(["load", "mqtt"])
            .args(args)
            .assert()
            .code(1)
            .stdout("")
            .stderr(
                predicate::str::starts_with("Error: ")
                    .and(predicate::str::contains(flag))
                    .and(predicate::str::contains("secret").not()),
            );
    }
    kiln()
        .args(["load", "mqtt", "pub", "--help"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("--interval_of_msg").and(predicate::str::contains("--host")),
        );
}

#[test]
fn pubsub_prints_lines_and_writes_json_and_csv() {
    let b = kiln_testkit::Mosquitto::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // -o names the JSON file itself: m1.json and m1.csv, not m1.json.json.
    let named = dir.path().join("m1.json");
    let prefix = dir.path().join("m1");
    let out = kiln()
        .args(["load", "mqtt", "pubsub", "-h", "127.0.0.1", "-p"])
        .arg(b.port().to_string())
        .args([
            "-c", "2", "-I", "5", "-q", "1", "-L", "200", "--id", "m<1>", "-o",
        ])
        .arg(&named)
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("id: m<1>, receiving rate avg: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("at least once held, nothing lost"),
        "{stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(prefix.with_extension("json")).unwrap())
            .unwrap();
    assert_eq!(json["protocol"], "mqtt");
    assert_eq!(json["summary"]["delivery"][0]["sent"], 200);
    assert_eq!(json["summary"]["delivery"][1]["received"], 200);
    assert!(json["histograms"].as_array().unwrap().len() >= 3);
    assert!(!dir.path().join("m1.json.json").exists());
    // Totals by name beside the headline's list, the same numbers.
    assert_eq!(json["totals"]["sent"], 400, "two publishers, -L 200 each");
    for c in json["headline"]["totals"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        assert_eq!(json["totals"][name], c["value"], "{name}");
    }
    let l = &json["headline"]["latencies"][0];
    assert_eq!(
        json["latencies"][l["name"].as_str().unwrap()],
        l["percentiles"]
    );
    let csv = std::fs::read_to_string(prefix.with_extension("csv")).unwrap();
    assert!(
        csv.starts_with("time_s,interval_s,connected,failed"),
        "{csv}"
    );
    // A broker that refuses: exit 1, the reason named.
    let port = kiln_testkit::free_port().unwrap();
    kiln()
        .args(["load", "mqtt", "conn", "-h", "127.0.0.1", "-p"])
        .arg(port.to_string())
        .assert()
        .code(1)
        .stderr(predicate::str::contains("refused"));
}

/// Two `kiln load mqtt pubsub` processes at once on one broker and the same topics (the
/// second started once the first printed its first second), their JSON reports.
fn two_loads(port: u16, extra: &[&str]) -> Vec<serde_json::Value> {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let bin = kiln_testkit::kiln_bin();
    let start = |name: &str| {
        std::process::Command::new(&bin)
            .args(["load", "mqtt", "pubsub", "-h", "127.0.0.1", "-p"])
            .arg(port.to_string())
            .args(["-c", "4", "-q", "1", "-L", "500", "-I", "10", "--id", name])
            .args(extra)
            .arg("-o")
            .arg(dir.path().join(name))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut a = start("a");
    let mut lines = std::io::BufReader::new(a.stdout.take().unwrap()).lines();
    // The first load is publishing: its first second is out.
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("id: a"), "{first}");
    let b = start("b");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(a.wait().unwrap().success(), "{}", rest.join("\n"));
    let out_b = b.wait_with_output().unwrap();
    assert!(
        out_b.status.success(),
        "{}",
        String::from_utf8_lossy(&out_b.stdout)
    );
    ["a", "b"]
        .iter()
        .map(|n| {
            let p = dir.path().join(n).with_extension("json");
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
        })
        .collect()
}

/// Two loads on the same topics count their own messages exactly and each other's as
/// foreign; an independent subscriber got what both sent.
#[test]
fn two_loads_on_one_broker_tell_their_messages_apart() {
    let b = kiln_testkit::Mosquitto::start().unwrap();
    let witness = kiln_testkit::Witness::start(&b, "bench/+").unwrap();
    let reports = two_loads(b.port(), &[]);
    let mut sent_all = 0;
    for r in &reports {
        let t = &r["totals"];
        let verdict = r["summary"]["verdict"].as_str().unwrap();
        assert_eq!(t["sent"], 2000, "4 publishers, -L 500: {verdict}");
        assert_eq!(t["lost"].as_u64().unwrap_or(0), 0, "{verdict}");
        assert_eq!(t["duplicated"].as_u64().unwrap_or(0), 0, "{verdict}");
        assert_eq!(t["out_of_order"].as_u64().unwrap_or(0), 0, "{verdict}");
        assert!(t["foreign"].as_u64().unwrap_or(0) > 0, "{verdict}");
        assert!(verdict.contains("at least once held"), "{verdict}");
        // Each publisher's messages reached the one subscriber once each.
        for d in r["summary"]["delivery"].as_array().unwrap() {
            assert_eq!(d["sent"], d["received"], "{d}");
        }
        assert_eq!(t["received"], t["sent"], "{verdict}");
        sent_all += t["sent"].as_u64().unwrap();
    }
    assert_ne!(
        reports[0]["summary"]["load"], reports[1]["summary"]["load"],
        "each load has its own id"
    );
    assert_eq!(witness.count(sent_all), sent_all);
}

/// With a shared subscription whose group both loads' subscribers share, neither load
/// calls lost what the other's subscribers received: the sum judges, and it is exact.
#[test]
fn shared_subscription_of_two_loads_is_judged_by_the_sum() {
    let b = kiln_testkit::Mosquitto::start().unwrap();
    let witness = kiln_testkit::Witness::start(&b, "bench/+").unwrap();
    let reports = two_loads(b.port(), &["--sub-topic", "$share/g/bench/+"]);
    let (mut sent, mut received, mut not_here, mut own_received) = (0, 0, 0, 0);
    for r in &reports {
        let t = &r["totals"];
        let s = &r["summary"];
        let verdict = s["verdict"].as_str().unwrap();
        assert_eq!(t["lost"].as_u64().unwrap_or(0), 0, "{verdict}");
        assert_eq!(t["duplicated"].as_u64().unwrap_or(0), 0, "{verdict}");
        assert!(t["foreign"].as_u64().unwrap_or(0) > 0, "{verdict}");
        assert!(
            verdict.contains("judged by the run as a whole"),
            "{verdict}"
        );
        sent += t["sent"].as_u64().unwrap();
        own_received += t["received"].as_u64().unwrap();
        received += t["received"].as_u64().unwrap() + t["foreign"].as_u64().unwrap();
        not_here += s["not_received_here"].as_u64().unwrap();
    }
    // Every message went to exactly one subscriber of the group.
    assert_eq!(received, sent);
    assert_eq!(own_received + not_here, sent);
    assert_eq!(witness.count(sent), sent);
}

/// Messages of the layout before the load nonce (an older kiln: a publisher index and
/// zeros) and of a layout version this kiln does not know are foreign, each told once,
/// never taken for the load's own.
#[test]
fn older_and_unknown_layouts_are_foreign_and_named() {
    let b = kiln_testkit::Mosquitto::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Layout 1: sequence 0, a send time, no intended time, publisher 0 (+1); then layout
    // version 9. Retained, so the load's subscriber gets them when it subscribes.
    let mut v1 = vec![0u8; 64];
    v1[4..12].copy_from_slice(&1_000u64.to_be_bytes());
    v1[20..24].copy_from_slice(&1u32.to_be_bytes());
    let mut v9 = v1.clone();
    v9[24..26].copy_from_slice(&9u16.to_be_bytes());
    for (topic, body) in [("bench/7", &v1), ("bench/8", &v9)] {
        let f = dir.path().join(topic.replace('/', "_"));
        std::fs::write(&f, body).unwrap();
        let st = std::process::Command::new("mosquitto_pub")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &b.port().to_string(),
                "-q",
                "1",
                "-r",
            ])
            .args(["-t", topic, "-f"])
            .arg(&f)
            .status()
            .unwrap();
        assert!(st.success());
    }
    let out = dir.path().join("r");
    kiln()
        .args(["load", "mqtt", "pubsub", "-h", "127.0.0.1", "-p"])
        .arg(b.port().to_string())
        .args(["-c", "2", "-q", "1", "-L", "20", "-I", "5", "-o"])
        .arg(&out)
        .assert()
        .success();
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap())
            .unwrap();
    let t = &r["totals"];
    assert_eq!(t["foreign"], 2, "{t}");
    assert_eq!(
        (t["sent"].as_u64(), t["received"].as_u64()),
        (Some(40), Some(40))
    );
    assert_eq!(t["duplicated"].as_u64().unwrap_or(0), 0, "{t}");
    let told: Vec<&str> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "foreign-layout")
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    assert_eq!(told.len(), 2, "{told:?}");
    assert!(told.iter().any(|d| d.contains("layout 1")), "{told:?}");
    assert!(
        told.iter().any(|d| d.contains("layout version 9")),
        "{told:?}"
    );
}
