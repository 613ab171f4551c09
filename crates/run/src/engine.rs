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

/// Every value of a protocol-neutral second: counter rates, latency percentiles, flags.
fn convert(t: &Tick, completed: &str, sent: &str) -> LoadTick {
    let mut values = Vec::new();
    for c in &t.counters {
        values.push((
            c.name.to_string(),
            format!("{}/s", c.unit),
            Some(t.rate(&c.name)),
        ));
    }
    for l in &t.latencies {
        let p: Option<&Percentiles> = l.percentiles.as_ref();
        for (q, v) in [
            ("p50", p.map(|p| p.p50_us)),
            ("p99", p.map(|p| p.p99_us)),
            ("p99.9", p.map(|p| p.p999_us)),
            ("max", p.map(|p| p.max_us)),
        ] {
            values.push((format!("{} {q}", l.name), "us".into(), v.map(|v| v as f64)));
        }
    }
    for f in &t.flags {
        values.push((
            f.name.to_string(),
            "bool".into(),
            Some(if f.value { 1.0 } else { 0.0 }),
        ));
    }
    LoadTick {
        end_ns: t.end_mono_ns,
        interval_s: t.interval_s,
        completed: Some(t.counter(completed)),
        sent: Some(t.counter(sent)),
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
        let o = &self.opts;
        let completed = if o.consumers > 0 {
            "received"
        } else if o.confirm.is_some() {
            "confirmed"
        } else {
            "sent"
        };
        run_protocol(
            &mut kiln_loadgen::amqp::AmqpLoad {
                opts: self.opts.clone(),
                sweep: None,
            },
            completed,
            stop,
            events,
        )
    }
}

/// Runs a kiln load protocol, reporting its seconds as [`LoadTick`]s.
pub fn run_protocol(
    load: &mut dyn kiln_loadgen::Load,
    completed: &str,
    stop: &Stop,
    events: &mut dyn LoadEvents,
) -> LoadOutcome {
    let mut started = false;
    let r = load.run(stop, &mut |t| {
        if !started {
            started = true;
            events.started(None);
        }
        events.tick(convert(t, completed, "sent"));
    });
    match r {
        Ok(report) => LoadOutcome {
            started: true,
            ended_by_itself: !stop.is_raised(),
            failure: report.headline.failure.clone(),
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

/// Any other kiln load protocol (`kiln load mqtt …`) under `kiln run`.
pub struct ProtocolLoad {
    load: Box<dyn kiln_loadgen::Load>,
    argv: Vec<String>,
    unit: String,
    completed: String,
}

impl std::fmt::Debug for ProtocolLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProtocolLoad")
            .field("protocol", &self.load.protocol())
            .field("argv", &self.argv)
            .finish()
    }
}

impl ProtocolLoad {
    /// `load`, given on the command line as `argv`; `completed` names the counter of
    /// completed operations (`received`, `connected`), counted in `unit`.
    pub fn new(
        load: Box<dyn kiln_loadgen::Load>,
        argv: Vec<String>,
        unit: &str,
        completed: &str,
    ) -> Self {
        ProtocolLoad {
            load,
            argv,
            unit: unit.into(),
            completed: completed.into(),
        }
    }
}

impl Load for ProtocolLoad {
    fn info(&self) -> LoadInfo {
        LoadInfo {
            protocol: self.load.protocol().into(),
            argv: self.argv.clone(),
            unit: self.unit.clone(),
            report: serde_json::Value::Null,
        }
    }

    fn run(&mut self, stop: &Stop, events: &mut dyn LoadEvents) -> LoadOutcome {
        run_protocol(self.load.as_mut(), &self.completed, stop, events)
    }
}
