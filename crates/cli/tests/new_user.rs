//! What a new user trips over, end to end on a real RabbitMQ (Debian's 3.10, its MQTT
//! plugin on): each either prevented or explained in the message they see.
use kiln_testkit::Started;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

use kiln_testkit::kiln_in as kiln;

fn broker() -> Option<&'static kiln_testkit::RabbitMq> {
    match kiln_testkit::shared_rabbitmq_mqtt() {
        Ok(b) => Some(b),
        Err(e) => {
            kiln_testkit::skip(&format!("RabbitMQ with its MQTT plugin: {e}"));
            None
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
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

/// Keeps `Started` and `Value` and `Path` used by the tests that follow.
#[allow(dead_code)]
fn runs(store: &Path) -> Vec<Value> {
    let out = kiln(store).args(["runs", "--json"]).output().unwrap();
    serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

#[allow(dead_code)]
fn sleeper() -> Started {
    Started::new(Path::new("/bin/sleep"), &["100000"])
}
