//! MQTT loads against real brokers started privately on 127.0.0.1: mosquitto (3.1, 3.1.1,
//! 5) and RabbitMQ's MQTT plugin (3.1.1).
use kiln_loadgen::mqtt::{codec::Version, run, MqttOptions, MqttSummary, Scenario};
use kiln_loadgen::Report;
use kiln_os::stop::Stop;
use kiln_testkit::{Mosquitto, MosquittoOptions, RabbitMq, RabbitMqOptions};
use std::time::{Duration, Instant};

fn opts(port: u16, scenario: Scenario) -> MqttOptions {
    MqttOptions {
        scenario,
        host: "127.0.0.1".into(),
        port,
        interval_ms: 0.0,
        time: Some(Duration::from_secs(60)),
        ..Default::default()
    }
}

fn go(o: &MqttOptions) -> Report {
    run(o, &Stop::new(), &mut |_| {}).expect("run completes")
}

fn summary(r: &Report) -> MqttSummary {
    serde_json::from_value(r.summary.clone()).unwrap()
}

/// Publishers × limit messages through `port`, every one accounted for.
fn exact(port: u16, version: Version, qos: u8, topic: &str) {
    let o = MqttOptions {
        count: 4,
        subscribers: 2,
        qos,
        version,
        limit: 500,
        pub_interval_ms: 2.0,
        inflight: 8,
        topic: format!("{topic}/%i"),
        ..opts(port, Scenario::PubSub)
    };
    let r = go(&o);
    let h = &r.headline;
    let ctx = format!("{version:?} QoS {qos}: {:?} {:?}", h.totals, r.events);
    assert!(h.failure.is_none(), "{ctx}");
    assert_eq!(h.total("sent"), 2000, "{ctx}");
    // Two subscribers each receive every message of every publisher.
    assert_eq!(h.total("received"), 4000, "{ctx}");
    assert_eq!(
        (h.total("lost"), h.total("duplicated"), h.total("foreign")),
        (0, 0, 0),
        "{ctx}"
    );
    if qos > 0 {
        assert_eq!(h.total("acked"), 2000, "{ctx}");
        assert_eq!(h.latency("ack_latency").unwrap().count, 2000);
    }
    assert_eq!(h.latency("latency").unwrap().count, 4000);
    assert_eq!(h.latency("latency_intended").unwrap().count, 4000);
    // Every message delivered: the last second leaves nothing undelivered and nothing
    // awaiting an acknowledgement; each second of the run observed both levels.
    let last = r.series.last().expect("a second");
    assert_eq!(last.level("undelivered"), Some(0.0), "{ctx}");
    assert_eq!(last.level("in_flight"), Some(0.0), "{ctx}");
    assert!(
        r.series.iter().all(|t| t.level("undelivered").is_some()),
        "{ctx}"
    );
    let s = summary(&r);
    assert_eq!(s.delivery.len(), 4);
    for d in &s.delivery {
        assert_eq!(
            (d.sent, d.received, d.lost, d.duplicated),
            (500, 1000, 0, 0),
            "{d:?}"
        );
    }
    let words = [
        "at least once held",
        "exactly once held",
        "every message arrived",
    ];
    assert!(words.iter().any(|w| s.verdict.contains(w)), "{}", s.verdict);
}

#[test]
fn mosquitto_accounts_for_every_message_at_each_qos_and_version() {
    let b = Mosquitto::start().expect("mosquitto starts");
    for (v, qos) in [
        (Version::V5, 0),
        (Version::V5, 1),
        (Version::V5, 2),
        (Version::V4, 1),
        (Version::V3, 2),
    ] {
        exact(b.port(), v, qos, &format!("exact/{v:?}/{qos}"));
    }
}

#[test]
fn rabbitmq_mqtt_plugin_accounts_for_every_message() {
    let b = RabbitMq::start_with_plugins(&RabbitMqOptions::default(), &["rabbitmq_mqtt"])
        .expect("rabbitmq with its MQTT plugin starts");
    let port = b.mqtt_port().unwrap();
    for qos in [0, 1] {
        exact(port, Version::V4, qos, &format!("rabbit/{qos}"));
    }
}

#[test]
fn mqtt5_topic_aliases_expiry_and_shared_subscriptions() {
    let b = Mosquitto::start().expect("mosquitto starts");
    let o = MqttOptions {
        count: 3,
        subscribers: 3,
        qos: 1,
        limit: 300,
        pub_interval_ms: 2.0,
        topic: "shared/%i".into(),
        sub_topic: Some("$share/g/shared/+".into()),
        topic_alias: true,
        message_expiry: Some(60),
        ..opts(b.port(), Scenario::PubSub)
    };
    let r = go(&o);
    let h = &r.headline;
    // A shared subscription splits the messages over the group: each arrives once.
    assert_eq!(
        (
            h.total("sent"),
            h.total("received"),
            h.total("lost"),
            h.total("duplicated")
        ),
        (900, 900, 0, 0),
        "{:?}",
        h.totals
    );
}

#[test]
fn an_idle_fleet_is_held_over_two_keepalive_periods() {
    let b = Mosquitto::start().expect("mosquitto starts");
    let o = MqttOptions {
        count: 5000,
        keepalive: 2,
        time: Some(Duration::from_secs(7)),
        ..opts(b.port(), Scenario::Conn)
    };
    let r = go(&o);
    let h = &r.headline;
    assert_eq!(
        (h.total("connected"), h.total("failed"), h.total("dropped")),
        (5000, 0, 0),
        "{:?}",
        h.totals
    );
    // Every connection pinged at least twice (7 s, pings after 2 s idle), every ping answered
    // (those sent in the last moments are answered before the end or not counted as sent
    // pings yet: the run ends after their answers are read).
    assert!(h.total("pings") >= 10_000, "{:?}", h.totals);
    let unanswered = h.total("pings") - h.total("pongs");
    assert!(unanswered <= 5000, "{:?}", h.totals);
    assert!(r.series.iter().any(|t| t.counter("pongs") > 0));
    assert_eq!(h.throughput.unit, "conn/s");
}

#[test]
fn refusals_and_strangers_are_named_within_the_connect_timeout() {
    let b = Mosquitto::start_with(&MosquittoOptions {
        users: vec![("alice".into(), "right".into())],
        ..Default::default()
    })
    .expect("mosquitto starts");
    let t = Instant::now();
    let o = MqttOptions {
        username: Some("alice".into()),
        password: Some("wrong".into()),
        ..opts(b.port(), Scenario::Conn)
    };
    // mosquitto 2.0 answers a wrong password with "not authorized" (5: 0x87, 3.1.1: 5).
    for (v, want) in [
        (
            Version::V5,
            "refused the connection: CONNACK 0x87 Not authorized",
        ),
        (
            Version::V4,
            "refused the connection: CONNACK 0x05 Not Authorized",
        ),
    ] {
        let e = run(
            &MqttOptions {
                version: v,
                ..o.clone()
            },
            &Stop::new(),
            &mut |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(want) && !e.contains("wrong"), "{e}");
    }
    // The right password works.
    let ok = MqttOptions {
        password: Some("right".into()),
        count: 3,
        time: Some(Duration::from_secs(1)),
        ..o.clone()
    };
    assert_eq!(go(&ok).headline.total("connected"), 3);
    // An AMQP port is not an MQTT broker.
    let rabbit = kiln_testkit::shared_rabbitmq().expect("rabbitmq starts");
    let e = run(
        &opts(rabbit.port(), Scenario::Conn),
        &Stop::new(),
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("not an MQTT broker") && e.contains("AMQP"),
        "{e}"
    );
    // Nothing listening.
    let port = kiln_testkit::free_port().unwrap();
    let e = run(&opts(port, Scenario::Conn), &Stop::new(), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("refused") && e.contains(&format!("127.0.0.1:{port}")),
        "{e}"
    );
    assert!(t.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_broker_that_never_answers_times_out_clearly() {
    let b = Mosquitto::start().expect("mosquitto starts");
    // A stopped broker: the kernel accepts the connection, nobody answers CONNECT.
    let pid = b.pid().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .unwrap();
    let o = MqttOptions {
        connect_timeout: Duration::from_secs(2),
        count: 1,
        ..opts(b.port(), Scenario::Conn)
    };
    let t = Instant::now();
    let e = run(&o, &Stop::new(), &mut |_| {}).unwrap_err().to_string();
    std::process::Command::new("kill")
        .args(["-CONT", &pid])
        .status()
        .unwrap();
    assert!(e.contains("no CONNACK within 2 s"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
}

#[test]
fn qos0_losses_are_counted_not_hidden() {
    // A subscriber that falls behind a flat-out QoS 0 flood: mosquitto drops what it cannot
    // queue (max_queued_messages), and every drop shows as lost, per publisher.
    let b = Mosquitto::start_with(&MosquittoOptions {
        extra_config: vec!["max_queued_messages 10".into()],
        ..Default::default()
    })
    .expect("mosquitto starts");
    let o = MqttOptions {
        count: 4,
        subscribers: 1,
        qos: 0,
        pub_interval_ms: 0.0,
        size: 2000,
        time: Some(Duration::from_secs(2)),
        ..opts(b.port(), Scenario::PubSub)
    };
    let r = go(&o);
    let h = &r.headline;
    assert!(h.total("sent") > 0);
    assert_eq!(
        h.total("received") + h.total("lost") - h.total("duplicated"),
        h.total("sent"),
        "{:?}",
        h.totals
    );
    let s = summary(&r);
    assert_eq!(
        s.delivery.iter().map(|d| d.lost).sum::<u64>(),
        h.total("lost")
    );
}

#[test]
fn broker_restart_qos1_persistent_sessions_lose_nothing_and_qos0_losses_are_counted() {
    let mut b = Mosquitto::start_with(&MosquittoOptions {
        persistence: true,
        ..Default::default()
    })
    .expect("mosquitto starts");
    let port = b.port();
    let run_with_restart = |b: &mut Mosquitto, qos: u8| {
        let o = MqttOptions {
            count: 2,
            subscribers: 1,
            qos,
            version: Version::V4,
            clean: false,
            reconnect: true,
            inflight: 5,
            pub_interval_ms: 5.0,
            topic: format!("restart/{qos}/%i"),
            prefix: format!("restart{qos}"),
            time: Some(Duration::from_secs(6)),
            drain: Duration::from_secs(5),
            ..opts(port, Scenario::PubSub)
        };
        // The broker restarts once messages go through (a second with some received).
        let flowing = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                run(&o, &Stop::new(), &mut |t| {
                    if t.rate("received") > 0.0 {
                        flowing.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                })
                .expect("run completes")
            });
            let up = kiln_testkit::poll_until(Duration::from_secs(30), || {
                flowing.load(std::sync::atomic::Ordering::SeqCst)
            });
            assert!(up.is_some(), "no message went through before the restart");
            b.restart().expect("mosquitto restarts");
            h.join().unwrap()
        })
    };
    let r = run_with_restart(&mut b, 1);
    let h = &r.headline;
    let ctx = format!("{:?} {:?}", h.totals, r.events);
    assert!(
        h.total("reconnects") >= 3,
        "every client reconnected: {ctx}"
    );
    assert!(h.total("dropped") >= 3, "{ctx}");
    assert!(r.series.iter().any(|t| t.flag("disconnected")), "{ctx}");
    assert!(
        !r.events.iter().any(|e| e.kind == "session-lost"),
        "the restarted broker kept the sessions: {ctx}"
    );
    assert_eq!(h.total("lost"), 0, "QoS 1 with a persistent session: {ctx}");
    assert!(
        h.total("sent") > 1000 && h.total("received") >= h.total("sent"),
        "{ctx}"
    );
    assert!(summary(&r).verdict.contains("nothing lost"), "{ctx}");
    // QoS 0: what the restart swallowed is counted, per publisher, not hidden.
    let r = run_with_restart(&mut b, 0);
    let h = &r.headline;
    let ctx = format!("{:?} {:?}", h.totals, r.events);
    assert!(h.total("reconnects") >= 3, "{ctx}");
    assert_eq!(
        h.total("received") + h.total("lost") - h.total("duplicated"),
        h.total("sent"),
        "{ctx}"
    );
}
