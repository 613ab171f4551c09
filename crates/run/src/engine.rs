//! kiln's own load protocols as [`Load`]s.
use crate::{Load, LoadEvents, LoadOutcome, LoadTick};
use kiln_loadgen::{AmqpOptions, Percentiles, Tick};
use kiln_model::stop::Stop;
use kiln_store::LoadInfo;

/// `kiln load amqp` under `kiln run`.
#[derive(Debug, Clone)]
pub struct AmqpLoad {
    opts: AmqpOptions,
    argv: Vec<String>,
}

impl AmqpLoad {
    /// The load of `opts`, given on the command line as `argv`.
    pub fn new(opts: AmqpOptions, argv: Vec<String>) -> Self {
        AmqpLoad { opts, argv }
    }
}

fn latency_values(
    out: &mut Vec<(String, String, Option<f64>)>,
    name: &str,
    p: &Option<Percentiles>,
) {
    for (q, v) in [
        ("p50", p.map(|p| p.p50_us)),
        ("p99", p.map(|p| p.p99_us)),
        ("p99.9", p.map(|p| p.p999_us)),
        ("max", p.map(|p| p.max_us)),
    ] {
        out.push((
            format!("{name} latency {q}"),
            "us".into(),
            v.map(|v| v as f64),
        ));
    }
}

fn convert(t: &Tick, o: &AmqpOptions) -> LoadTick {
    let r = |n: u64| Some(t.rate(n));
    let mut values = vec![
        ("sent".to_string(), "msg/s".to_string(), r(t.sent)),
        ("received".into(), "msg/s".into(), r(t.received)),
    ];
    if o.confirm.is_some() {
        values.push(("confirmed".into(), "msg/s".into(), r(t.confirmed)));
        values.push(("nacked".into(), "msg/s".into(), r(t.nacked)));
    }
    values.push(("returned".into(), "msg/s".into(), r(t.returned)));
    latency_values(&mut values, "consumer", &t.consumer_latency);
    if o.rate_limited() {
        latency_values(
            &mut values,
            "consumer (intended)",
            &t.consumer_latency_intended,
        );
    }
    if o.confirm.is_some() {
        latency_values(&mut values, "confirm", &t.confirm_latency);
    }
    let flag = |b: bool| Some(if b { 1.0 } else { 0.0 });
    values.push(("blocked".into(), "bool".into(), flag(t.blocked)));
    values.push(("stalled".into(), "bool".into(), flag(t.stalled)));
    values.push(("disconnected".into(), "bool".into(), flag(t.disconnected)));
    let completed = if o.consumers > 0 {
        t.received
    } else if o.confirm.is_some() {
        t.confirmed
    } else {
        t.sent
    };
    LoadTick {
        end_ns: kiln_model::clock::monotonic_ns(),
        interval_s: t.interval_s,
        completed: Some(completed),
        sent: Some(t.sent),
        values,
        latency: Vec::new(),
    }
}

impl Load for AmqpLoad {
    fn info(&self) -> LoadInfo {
        LoadInfo {
            protocol: "amqp".into(),
            argv: self.argv.clone(),
            unit: "msg".into(),
            report: serde_json::Value::Null,
        }
    }

    fn run(&mut self, stop: &Stop, events: &mut dyn LoadEvents) -> LoadOutcome {
        let mut started = false;
        let o = self.opts.clone();
        let r = kiln_loadgen::run(&self.opts, stop.as_flag(), &mut |t| {
            if !started {
                started = true;
                events.started(None);
            }
            events.tick(convert(t, &o));
        });
        match r {
            Ok(report) => LoadOutcome {
                started: true,
                ended_by_itself: !stop.is_raised(),
                failure: report.summary.failure.clone(),
                report: serde_json::to_value(&report).unwrap_or_default(),
                ..Default::default()
            },
            Err(e) if !started => LoadOutcome::failed_to_start(e.to_string()),
            Err(e) => LoadOutcome {
                started: true,
                ended_by_itself: true,
                failure: Some(e.to_string()),
                ..Default::default()
            },
        }
    }
}
