//! `kiln load mqtt` as users run it: flag errors, a real run with files written.
use assert_cmd::Command;
use predicates::prelude::*;

fn kiln() -> Command {
    Command::cargo_bin("kiln").unwrap()
}

#[test]
fn bad_flags_and_uris_are_named() {
    for (args, flag) in [
        (&["pub", "-s", "10"][..], "-s"),
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
