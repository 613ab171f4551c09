//! Load runs against a real RabbitMQ (Debian's rabbitmq-server, private node on 127.0.0.1).
//! One broker per test binary; each test uses its own queue names.
use kiln_loadgen::{run, AmqpOptions, FieldValue, Report, Tick};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

fn uri() -> String {
    kiln_testkit::shared_rabbitmq()
        .expect("rabbitmq-server starts")
        .uri()
}

fn go(o: &AmqpOptions) -> (Report, Vec<Tick>) {
    let stop = AtomicBool::new(false);
    let mut ticks = Vec::new();
    let r = run(o, &stop, &mut |t| ticks.push(t.clone())).expect("run completes");
    (r, ticks)
}

fn base(id: &str) -> AmqpOptions {
    AmqpOptions {
        uri: uri(),
        id: id.into(),
        time: Some(Duration::from_secs(30)),
        ..Default::default()
    }
}

#[test]
fn classic_queue_counts_every_message_exactly() {
    let o = AmqpOptions {
        queue: Some("kiln-exact".into()),
        pmessages: 5000,
        cmessages: 5000,
        ..base("exact")
    };
    let (r, ticks) = go(&o);
    let s = &r.summary;
    assert_eq!((s.sent, s.received), (5000, 5000), "{s:?}");
    assert!(s.failure.is_none());
    assert_eq!(r.series, ticks);
    assert_eq!(r.series.iter().map(|t| t.sent).sum::<u64>(), 5000);
    assert_eq!(r.series.iter().map(|t| t.received).sum::<u64>(), 5000);
    let lat = s.consumer_latency.expect("latency measured");
    assert_eq!(lat.count, 5000);
    assert!(lat.min_us <= lat.p50_us && lat.p50_us <= lat.p99_us && lat.p99_us <= lat.max_us);
    assert!(s.confirm_latency.is_none() && s.consumer_latency_intended.is_none());
}
