//! Load runs against a real RabbitMQ (Debian's rabbitmq-server, a private node on
//! 127.0.0.1 started by kiln-testkit). One broker is shared by the tests of this binary, each
//! with its own queue names; tests that kill or block a broker start their own.
use kiln_loadgen::amqp::{run, AmqpSummary};
use kiln_loadgen::{AmqpOptions, FieldValue, Report, Tick};
use kiln_os::stop::Stop;
use kiln_testkit::{RabbitMq, RabbitMqOptions};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn summary(r: &Report) -> AmqpSummary {
    AmqpSummary::of(&r.headline)
}

fn uri() -> String {
    kiln_testkit::shared_rabbitmq()
        .expect("rabbitmq-server starts")
        .uri()
}

fn go(o: &AmqpOptions) -> (Report, Vec<Tick>) {
    let stop = Stop::new();
    let mut ticks = Vec::new();
    let r = run(o, &stop, &mut |t| {
        // The second's histograms come with the tick as it happens; they add up to the
        // percentiles the series keeps.
        for (h, l) in t.histograms.iter().zip(&t.latencies) {
            let counted = h.as_ref().map_or(0, |h| h.len());
            assert_eq!(counted, l.percentiles.map_or(0, |p| p.count));
        }
        let mut t = t.clone();
        t.histograms.clear();
        ticks.push(t);
    })
    .expect("run completes");
    (r, ticks)
}

fn base(id: &str) -> AmqpOptions {
    AmqpOptions {
        uri: uri(),
        id: id.into(),
        // A bound for runs that end on message counts: they never get near it.
        time: Some(Duration::from_secs(60)),
        ..Default::default()
    }
}

fn args(kv: &[(&str, &str)]) -> Vec<(String, FieldValue)> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), FieldValue::infer(v)))
        .collect()
}

/// What the broker says is left in a queue (ready + unacknowledged), once the broker has
/// processed the acks already sent (it handles them asynchronously): polls up to 10 s while
/// the depth is not yet 0.
fn queue_depth(name: &str) -> u64 {
    let mut d = queue_depth_now(name);
    for _ in 0..20 {
        if d == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
        d = queue_depth_now(name);
    }
    d
}

fn queue_depth_now(name: &str) -> u64 {
    let b = kiln_testkit::shared_rabbitmq().unwrap();
    let out = b
        .ctl(&[
            "list_queues",
            "-q",
            "--no-table-headers",
            "name",
            "messages",
        ])
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    s.lines()
        .filter_map(|l| l.split_once('\t'))
        .find(|(n, _)| n.trim() == name)
        .and_then(|(_, m)| m.trim().parse().ok())
        .unwrap_or_else(|| panic!("queue {name} not listed: {s}"))
}

#[test]
fn classic_queue_counts_every_message_exactly() {
    let o = AmqpOptions {
        queue: Some("kiln-exact".into()),
        producers: 2,
        consumers: 2,
        pmessages: 3000,
        cmessages: 3000,
        auto_delete: false,
        ..base("exact")
    };
    let (r, ticks) = go(&o);
    let s = &summary(&r);
    assert_eq!((s.sent, s.received), (6000, 6000), "{s:?}");
    assert!(s.failure.is_none() && !s.interrupted);
    assert_eq!(r.series, ticks, "every tick was shown as it happened");
    assert_eq!(
        r.series.iter().map(|t| t.counter("sent")).sum::<u64>(),
        6000
    );
    assert_eq!(
        r.series.iter().map(|t| t.counter("received")).sum::<u64>(),
        6000
    );
    let lat = s.consumer_latency.expect("latency measured");
    assert_eq!(lat.count, 6000);
    assert!(lat.min_us <= lat.p50_us && lat.p50_us <= lat.p99_us && lat.p99_us <= lat.max_us);
    assert!(s.confirm_latency.is_none() && s.consumer_latency_intended.is_none());
    assert_eq!(
        queue_depth("kiln-exact"),
        0,
        "every delivery was acknowledged"
    );
}

/// The queue's depth each second is the broker's own count: with no consumer, every
/// message confirmed stays ready in the queue, so the depth grows with the messages sent,
/// and its last reading agrees with `rabbitmqctl list_queues` once the load has stopped.
#[test]
fn the_queue_depth_each_second_is_the_brokers_count() {
    let name = "kiln-depth";
    let o = AmqpOptions {
        queue: Some(name.into()),
        producers: 1,
        consumers: 0,
        rate: Some(2000.0),
        confirm: Some(100),
        auto_delete: false,
        time: Some(Duration::from_secs(3)),
        ..base("depth")
    };
    let (r, ticks) = go(&o);
    let depths: Vec<f64> = ticks
        .iter()
        .filter_map(|t| t.level("queue_depth"))
        .collect();
    assert!(depths.len() >= 2, "a reading every second: {ticks:#?}");
    assert!(
        depths.windows(2).all(|w| w[1] >= w[0]),
        "nothing consumes, so the queue only grows: {depths:?}"
    );
    let sent = r.total("sent") as f64;
    let last = *depths.last().unwrap();
    let broker = queue_depth_now(name) as f64;
    assert!(broker > 0.0 && broker <= sent, "{broker} of {sent}");
    // The last reading was taken within the last quarter second of the load (500 messages
    // at 2000/s), against the broker's count after it.
    assert!(
        (broker - last).abs() <= 0.1 * broker,
        "kiln read {last}, the broker lists {broker}: {depths:?}"
    );
    // The per-second line and the CSV carry it.
    let line = kiln_loadgen::engine::report::format_tick(
        &kiln_loadgen::amqp::SCHEMA,
        "depth",
        ticks.last().unwrap(),
    );
    assert!(line.contains("queue depth: "), "{line}");
    let b = kiln_testkit::shared_rabbitmq().unwrap();
    let _ = b.ctl(&["delete_queue", name]);
}

#[test]
fn quorum_queue_with_confirms_persistence_multi_ack_and_qos() {
    let o = AmqpOptions {
        queue: Some("kiln-quorum".into()),
        queue_args: args(&[("x-queue-type", "quorum")]),
        confirm: Some(100),
        persistent: true,
        multi_ack_every: 10,
        qos: 50,
        pmessages: 2000,
        cmessages: 2000,
        ..base("quorum")
    };
    let (r, _) = go(&o);
    let s = &summary(&r);
    assert_eq!(
        (s.sent, s.confirmed, s.nacked, s.received),
        (2000, 2000, 0, 2000),
        "{s:?}"
    );
    assert_eq!(s.confirm_latency.expect("confirm latency").count, 2000);
    assert_eq!(
        queue_depth("kiln-quorum"),
        0,
        "multi-acks covered every message"
    );
}

#[test]
fn stream_with_confirms_read_from_first_offset() {
    let o = AmqpOptions {
        queue: Some("kiln-stream".into()),
        queue_args: args(&[("x-queue-type", "stream")]),
        consumer_args: args(&[("x-stream-offset", "first")]),
        confirm: Some(500),
        persistent: true,
        qos: 500,
        pmessages: 3000,
        cmessages: 3000,
        size: 100,
        ..base("stream")
    };
    let (r, _) = go(&o);
    let s = &summary(&r);
    assert_eq!(
        (s.sent, s.confirmed, s.received),
        (3000, 3000, 3000),
        "{s:?}"
    );
    assert_eq!(s.consumer_latency.unwrap().count, 3000);
}

#[test]
fn rate_limit_and_latency_from_intended_send_time() {
    let o = AmqpOptions {
        queue: Some("kiln-rate".into()),
        rate: Some(200.0),
        time: Some(Duration::from_secs(3)),
        ..base("rate")
    };
    let (r, _) = go(&o);
    let s = &summary(&r);
    // Intended send times are 0, 5 ms, 10 ms…: no more than that schedule can be sent
    // (+2: float rounding of the schedule and the message due exactly at the end).
    assert!(s.sent > 0 && s.sent <= 603, "{s:?}");
    let a = s.consumer_latency.expect("latency");
    let i = s
        .consumer_latency_intended
        .expect("latency from intended send times");
    assert_eq!(i.count, a.count);
    // Each message is sent at or after its intended time, so every quantile is at least as large.
    assert!(i.p50_us >= a.p50_us && i.max_us >= a.max_us, "{a:?} {i:?}");
    assert_eq!(s.stalled_seconds, 0, "{:?}", r.series);
}

#[test]
fn variable_rate_follows_its_steps() {
    let o = AmqpOptions {
        queue: Some("kiln-vrate".into()),
        variable_rate: vec![(100.0, 1), (0.0, 1)],
        time: Some(Duration::from_secs(4)),
        ..base("vrate")
    };
    let (r, _) = go(&o);
    let s = &summary(&r);
    // Steps [0,1) and [2,3) ask for 100 messages each; [1,2) and [3,4) for none
    // (+3: float rounding at each step's end and the message due exactly at the end).
    assert!(s.sent > 100 && s.sent <= 203, "{s:?}");
    assert!(
        r.series[1].counter("sent") < r.series[0].counter("sent"),
        "{:?}",
        r.series
    );
    assert_eq!(
        s.stalled_seconds, 0,
        "idle steps are not stalls: {:?}",
        r.series
    );
    assert_eq!(s.received, s.sent);
}

#[test]
fn many_mostly_idle_producers_with_publishing_interval() {
    let o = AmqpOptions {
        queue: Some("kiln-interval".into()),
        producers: 30,
        publishing_interval: Some(Duration::from_secs(1)),
        time: Some(Duration::from_secs(3)),
        ..base("interval")
    };
    let (r, _) = go(&o);
    let s = &summary(&r);
    // Each producer's first message is due within its first second, then one per second.
    assert!(s.sent >= 30 && s.sent <= 90, "{s:?}");
    assert_eq!(s.received, s.sent, "{s:?}");
    assert_eq!(s.stalled_seconds, 0);
}

#[test]
fn unroutable_mandatory_messages_come_back() {
    let o = AmqpOptions {
        consumers: 0,
        mandatory: true,
        confirm: Some(50),
        pmessages: 200,
        routing_key: Some("nobody-listens".into()),
        ..base("mandatory")
    };
    let (r, _) = go(&o);
    let s = &summary(&r);
    assert_eq!(
        (s.sent, s.returned, s.confirmed, s.received),
        (200, 200, 200, 0),
        "{s:?}"
    );
}

#[test]
fn server_named_queues_give_each_consumer_every_message() {
    let o = AmqpOptions {
        consumers: 2,
        pmessages: 500,
        cmessages: 500,
        ..base("fanout")
    };
    let (r, _) = go(&o);
    assert_eq!(
        (summary(&r).sent, summary(&r).received),
        (500, 1000),
        "{:?}",
        summary(&r)
    );
}

#[test]
fn queue_pattern_spreads_producers_and_consumers() {
    let o = AmqpOptions {
        queue_pattern: Some(kiln_loadgen::QueuePattern {
            pattern: "kiln-pat-%d".into(),
            from: 1,
            to: 3,
        }),
        producers: 3,
        consumers: 3,
        pmessages: 400,
        cmessages: 400,
        auto_delete: false,
        ..base("pattern")
    };
    let (r, _) = go(&o);
    assert_eq!(
        (summary(&r).sent, summary(&r).received),
        (1200, 1200),
        "{:?}",
        summary(&r)
    );
    // Every queue of the pattern is empty once the broker has applied the acks: each got
    // exactly its producer's 400 messages and its consumer took exactly those.
    assert!(summary(&r).failure.is_none(), "{:?}", summary(&r));
    for q in ["kiln-pat-1", "kiln-pat-2", "kiln-pat-3"] {
        assert_eq!(queue_depth(q), 0, "{q}");
    }
}

#[test]
fn refused_declaration_names_the_broker_reason() {
    // A stream cannot be consumed without a prefetch: the broker closes the channel.
    let o = AmqpOptions {
        queue: Some("kiln-stream-noqos".into()),
        queue_args: args(&[("x-queue-type", "stream")]),
        ..base("noqos")
    };
    let e = run(&o, &Stop::new(), &mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("consumer 0") && e.contains("406"), "{e}");
}

#[test]
fn no_broker_is_a_fast_clear_error_naming_the_uri() {
    let port = kiln_testkit::free_port().unwrap();
    let o = AmqpOptions {
        uri: format!("amqp://guest:secret@127.0.0.1:{port}"),
        ..Default::default()
    };
    let t = Instant::now();
    let e = run(&o, &Stop::new(), &mut |_| {}).unwrap_err().to_string();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert!(
        e.contains(&format!("amqp://guest@127.0.0.1:{port}")) && e.contains("refused"),
        "{e}"
    );
    assert!(
        !e.contains("secret"),
        "the password stays out of messages: {e}"
    );
}

/// Waits until `flag` is raised by a load's tick, at most 60 s.
fn wait_until(flag: &AtomicBool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !flag.load(std::sync::atomic::Ordering::SeqCst) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn broker_killed_mid_run_keeps_results_so_far() {
    let mut b = RabbitMq::start().expect("broker starts");
    let o = AmqpOptions {
        uri: b.uri(),
        queue: Some("kiln-killed".into()),
        rate: Some(500.0),
        time: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    // Killed once a second with messages received is reported, however busy the machine.
    let flowing = AtomicBool::new(false);
    let r = std::thread::scope(|s| {
        let h = s.spawn(|| {
            run(&o, &Stop::new(), &mut |t| {
                if t.counter("received") > 0 {
                    flowing.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            })
        });
        wait_until(&flowing);
        b.kill().unwrap();
        h.join().unwrap()
    })
    .expect("a lost connection ends the run with results, not an error");
    let s = &summary(&r);
    let f = s.failure.as_deref().expect("the failure is reported");
    assert!(f.contains(&format!("127.0.0.1:{}", b.port())), "{f}");
    assert!(
        s.sent > 0 && s.received > 0 && !r.series.is_empty(),
        "{s:?}"
    );
    assert!(s.duration_s < 30.0, "the run ended at the fault: {s:?}");
    assert!(
        r.events.iter().any(|e| e.kind == "connection-lost"),
        "{:?}",
        r.events
    );
}

#[test]
fn reconnect_rides_through_a_broker_restart_and_marks_the_gap() {
    let mut b = RabbitMq::start().expect("broker starts");
    let o = AmqpOptions {
        uri: b.uri(),
        queue: Some("kiln-restart".into()),
        persistent: true,
        rate: Some(200.0),
        reconnect: true,
        time: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    let stop = Stop::new();
    let mut after_restart = 0u64;
    let restarted = AtomicBool::new(false);
    let (flowing, flowing_again) = (AtomicBool::new(false), AtomicBool::new(false));
    let r = std::thread::scope(|s| {
        let h = s.spawn(|| {
            run(&o, &stop, &mut |t| {
                let got = t.counter("received");
                if got > 0 {
                    flowing.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                if restarted.load(std::sync::atomic::Ordering::SeqCst) {
                    after_restart += got;
                    if after_restart > 0 {
                        flowing_again.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                }
            })
        });
        // Restarted once messages flow; stopped once they flow again (or after 60 s,
        // which the asserts below then judge).
        wait_until(&flowing);
        b.restart().expect("broker restarts");
        restarted.store(true, std::sync::atomic::Ordering::SeqCst);
        wait_until(&flowing_again);
        stop.raise();
        h.join().unwrap()
    })
    .expect("run");
    let s = &summary(&r);
    assert!(s.failure.is_none(), "{s:?}");
    assert!(s.interrupted);
    assert!(
        s.reconnects >= 2,
        "producer and consumer reconnected: {s:?} {:?}",
        r.events
    );
    assert!(s.disconnected_seconds >= 1 && r.series.iter().any(|t| t.flag("disconnected")));
    assert!(after_restart > 0, "messages flowed again after the restart");
}

#[test]
fn memory_alarm_blocks_publishers_and_the_stall_is_reported() {
    let b = RabbitMq::start_with(&RabbitMqOptions {
        extra_config: vec!["vm_memory_high_watermark.absolute = 1".into()],
        ..Default::default()
    })
    .expect("broker starts");
    let o = AmqpOptions {
        uri: b.uri(),
        queue: Some("kiln-blocked".into()),
        time: Some(Duration::from_secs(4)),
        ..Default::default()
    };
    let (r, _) = {
        let stop = Stop::new();
        let mut ticks = Vec::new();
        let r = run(&o, &stop, &mut |t| ticks.push(t.clone())).expect("run");
        (r, ticks)
    };
    let s = &summary(&r);
    assert!(s.blocked_notifications >= 1, "{s:?} {:?}", r.events);
    assert!(
        s.blocked_seconds >= 2 && s.stalled_seconds >= 2,
        "{s:?} {:?}",
        r.series
    );
    assert_eq!(s.received, 0);
    assert!(
        r.events
            .iter()
            .any(|e| e.kind == "blocked" && e.detail.contains("memory")),
        "{:?}",
        r.events
    );
}

#[test]
fn rate_sweep_runs_one_step_per_rate() {
    let o = AmqpOptions {
        queue: Some("kiln-sweep".into()),
        time: Some(Duration::from_secs(2)),
        ..base("sweep")
    };
    let rates = kiln_loadgen::amqp::parse_sweep("100,300").unwrap();
    let mut seen = Vec::new();
    let report = kiln_loadgen::amqp::sweep(&o, &rates, &Stop::new(), &mut |t| {
        seen.push(rates[t.step.unwrap() as usize])
    })
    .unwrap();
    let rows = kiln_loadgen::amqp::sweep_rows(&report);
    // Each step is a window of its own on CLOCK_MONOTONIC, one after the other.
    assert_eq!(report.steps.len(), 2);
    assert!(report.steps[0].start_mono_ns < report.steps[0].end_mono_ns);
    assert!(report.steps[0].end_mono_ns <= report.steps[1].start_mono_ns);
    for t in &report.series {
        let st = &report.steps[t.step.unwrap() as usize];
        assert!(t.end_mono_ns > st.start_mono_ns && t.end_mono_ns <= st.end_mono_ns + 1_000_000);
    }
    assert_eq!(
        rows.iter().map(|r| r.attempted_rate).collect::<Vec<_>>(),
        vec![100.0, 300.0]
    );
    for r in &rows {
        // No more than the schedule (+2 for rounding and the message due at the end).
        assert!(
            r.send_rate > 0.0 && r.send_rate * 2.0 <= r.attempted_rate * 2.0 + 2.0,
            "{r:?}"
        );
        assert!(
            r.consumer_latency_intended.is_some() && r.failure.is_none(),
            "{r:?}"
        );
    }
    assert!(seen.contains(&100.0) && seen.contains(&300.0));
}

/// Each step of a sweep starts its load anew; an auto-deleted queue (PerfTest's default) is
/// deleted by the broker a moment after the previous step's consumer left, possibly between
/// the next consumer's declaration and its consume. Every step must still start: ten
/// hand-overs, each after a step that left messages behind.
#[test]
fn a_sweep_hands_an_auto_deleted_queue_over_between_steps() {
    let o = AmqpOptions {
        queue: Some("kiln-sweep-autodelete".into()),
        auto_delete: true,
        time: Some(Duration::from_secs(1)),
        ..base("sweep-autodelete")
    };
    let rates = kiln_loadgen::amqp::parse_sweep("5000:50000:11").unwrap();
    let report = kiln_loadgen::amqp::sweep(&o, &rates, &Stop::new(), &mut |_| {}).unwrap();
    let rows = kiln_loadgen::amqp::sweep_rows(&report);
    assert_eq!(rows.len(), 11, "every step ran: {rows:#?}");
    for r in &rows {
        assert!(r.failure.is_none(), "{r:?}");
        assert!(r.send_rate > 0.0, "{r:?}");
    }
}

#[test]
fn json_bodies_and_variable_sizes_are_delivered() {
    let o = AmqpOptions {
        queue: Some("kiln-json".into()),
        json_body: true,
        size: 300,
        pmessages: 200,
        cmessages: 200,
        ..base("json")
    };
    let (r, _) = go(&o);
    assert_eq!((summary(&r).sent, summary(&r).received), (200, 200));
    assert!(
        summary(&r).consumer_latency.is_none(),
        "JSON bodies carry no timestamp"
    );
    let o = AmqpOptions {
        queue: Some("kiln-vsize".into()),
        // Bigger than a frame: bodies are split over several frames.
        variable_size: vec![(200_000, 1), (12, 1)],
        rate: Some(50.0),
        time: Some(Duration::from_secs(3)),
        ..base("vsize")
    };
    let (r, _) = go(&o);
    let s = &summary(&r);
    assert!(s.sent > 0 && s.received == s.sent, "{s:?}");
    assert_eq!(s.consumer_latency.unwrap().count, s.received);
}

#[test]
fn consumer_rate_limit_holds_consumers_back() {
    let o = AmqpOptions {
        queue: Some("kiln-crate".into()),
        consumer_rate: Some(100.0),
        qos: 10,
        rate: Some(400.0),
        time: Some(Duration::from_secs(3)),
        ..base("crate")
    };
    let (r, _) = go(&o);
    let s = &summary(&r);
    // The consumer takes at most 100/s over the run's actual length (+1 for the first
    // message, which starts its clock).
    assert!(
        s.received > 0 && s.received as f64 <= 100.0 * s.duration_s + 1.0 && s.sent > s.received,
        "{s:?}"
    );
}

#[test]
fn idle_connections_keep_alive_with_heartbeats() {
    // A 2 s heartbeat: a client that sends nothing for 4 s is dropped by the broker.
    let b = RabbitMq::start_with(&RabbitMqOptions {
        extra_config: vec!["heartbeat = 2".into()],
        ..Default::default()
    })
    .expect("broker starts");
    let o = AmqpOptions {
        uri: b.uri(),
        producers: 1,
        consumers: 1,
        publishing_interval: Some(Duration::from_secs(30)),
        time: Some(Duration::from_secs(7)),
        ..Default::default()
    };
    let (r, _) = {
        let stop = Stop::new();
        let r = run(&o, &stop, &mut |_| {}).expect("run");
        (r, ())
    };
    assert!(
        summary(&r).failure.is_none(),
        "{:?} {:?}",
        summary(&r),
        r.events
    );
    assert!(summary(&r).duration_s >= 6.9, "{:?}", summary(&r));
}

#[test]
fn consumer_latency_sleep_ends_at_the_deadline() {
    // A consumer told to spend ~28 hours on each message still stops at -z.
    let o = AmqpOptions {
        queue: Some("kiln-slow-consumer".into()),
        consumer_latency: Duration::from_micros(99_999_999_999),
        rate: Some(50.0),
        time: Some(Duration::from_secs(2)),
        ..base("slow")
    };
    let t = Instant::now();
    let (r, _) = go(&o);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let s = summary(&r);
    assert!(s.duration_s < 2.5, "{s:?}");
    assert_eq!(s.received, 1, "{s:?}");
    // And a caller's stop wakes it too.
    let o = AmqpOptions { time: None, ..o };
    let stop = Stop::new();
    // Raised once the load has reported its first second.
    let r = run(&o, &stop, &mut |_| stop.raise()).unwrap();
    assert!(summary(&r).interrupted && summary(&r).duration_s < 5.0);
}

#[test]
fn big_messages_are_never_received_more_than_sent() {
    // 1 MB messages end in the middle of a write when the run stops: messages written
    // before are counted as sent exactly once, so consumers never receive more.
    let o = AmqpOptions {
        queue: Some("kiln-big".into()),
        size: 1_000_000,
        time: Some(Duration::from_secs(2)),
        ..base("big")
    };
    let (r, _) = go(&o);
    let s = summary(&r);
    assert!(s.sent > 0 && s.received <= s.sent, "{s:?}");
    assert_eq!(
        r.series.iter().map(|t| t.counter("sent")).sum::<u64>(),
        s.sent
    );
}

#[test]
fn refused_credentials_are_named() {
    let b = kiln_testkit::shared_rabbitmq().unwrap();
    let o = AmqpOptions {
        uri: format!("amqp://guest:wrong@127.0.0.1:{}", b.port()),
        ..Default::default()
    };
    let e = run(&o, &Stop::new(), &mut |_| {}).unwrap_err().to_string();
    assert!(
        e.contains("refused user 'guest'") && e.contains("ACCESS_REFUSED"),
        "{e}"
    );
    assert!(!e.contains("wrong"), "no password in messages: {e}");
}

/// A server on a free port that writes `answer` to every connection, then closes it.
fn answering(answer: &'static [u8]) -> u16 {
    use std::io::Write;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten().take(4) {
            let _ = c.write_all(answer);
        }
    });
    port
}

#[test]
fn other_protocols_and_amqp_versions_are_named() {
    // No AMQP 1.0-only broker or SSH server is installable here: these listeners answer
    // the way such servers do (the AMQP spec: send the supported header and close).
    for (answer, want) in [
        (
            &b"AMQP\x00\x01\x00\x00"[..],
            "another AMQP version (AMQP 1.0)",
        ),
        (
            &b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"[..],
            "not an AMQP 0-9-1 server: it answered 'SSH-2.0-OpenSSH",
        ),
    ] {
        let port = answering(answer);
        let o = AmqpOptions {
            uri: format!("amqp://127.0.0.1:{port}"),
            ..Default::default()
        };
        let e = run(&o, &Stop::new(), &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains(want) && !e.contains("frame"), "{e}");
    }
    // A real server of another protocol: mosquitto resets the connection.
    let m = kiln_testkit::Mosquitto::start().expect("mosquitto starts");
    let o = AmqpOptions {
        uri: format!("amqp://127.0.0.1:{}", m.port()),
        ..Default::default()
    };
    let e = run(&o, &Stop::new(), &mut |_| {}).unwrap_err().to_string();
    assert!(
        e.contains("without answering the AMQP header (is this an AMQP 0-9-1 port?)"),
        "{e}"
    );
}

#[test]
fn messages_bigger_than_the_broker_accepts_name_the_size() {
    let b = RabbitMq::start_with(&RabbitMqOptions {
        extra_config: vec!["max_message_size = 1000000".into()],
        ..Default::default()
    })
    .expect("broker starts");
    let o = AmqpOptions {
        uri: b.uri(),
        queue: Some("kiln-too-big".into()),
        size: 2_000_000,
        time: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let r = run(&o, &Stop::new(), &mut |_| {}).unwrap();
    let f = summary(&r).failure.expect("the refusal ends the run");
    assert!(
        f.contains("--size '2000000'") && f.contains("larger than the broker accepts"),
        "{f}"
    );
    assert_eq!(summary(&r).received, 0);
}
