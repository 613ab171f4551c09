//! kiln's own load protocols (the load engine's [`kiln_loadgen::Load`]s) under `kiln run`:
//! one adapter for every protocol, since the engine's seconds are already
//! protocol-neutral.
use crate::{LoadEvents, LoadOutcome, LoadTick, Value, ValueKind, Workload};
use kiln_loadgen::Tick;
use kiln_model::stop::Stop;
use kiln_store::{LoadInfo, Window};

/// A load of kiln's engine (`load amqp …`) driven by `kiln run`.
pub struct EngineLoad {
    load: Box<dyn kiln_loadgen::Load>,
    argv: Vec<String>,
}

impl std::fmt::Debug for EngineLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineLoad")
            .field("protocol", &self.load.protocol())
            .field("argv", &self.argv)
            .finish()
    }
}

impl EngineLoad {
    /// `load`, given on the command line as `argv` (the protocol's own flags).
    pub fn new(load: Box<dyn kiln_loadgen::Load>, argv: Vec<String>) -> Self {
        EngineLoad { load, argv }
    }
}

/// What one operation is: the unit of the counter of completed operations.
fn unit_of(load: &dyn kiln_loadgen::Load) -> String {
    let schema = load.schema();
    let completed = load.completed();
    schema
        .counters
        .iter()
        .find(|c| c.name == completed)
        .map(|c| c.unit.to_string())
        .unwrap_or_else(|| "op".into())
}

fn convert(t: &Tick, completed: &str) -> LoadTick {
    let mut values: Vec<Value> = Vec::new();
    for c in &t.counters {
        values.push(Value {
            name: c.name.to_string(),
            unit: format!("{}/s", c.unit),
            kind: ValueKind::Rate,
            value: Some(t.rate(&c.name)),
        });
    }
    for l in &t.latencies {
        values.extend(crate::remote::latency_values(
            &l.name,
            l.percentiles.as_ref(),
        ));
    }
    for f in &t.flags {
        values.push(Value {
            name: f.name.to_string(),
            unit: "bool".into(),
            kind: ValueKind::Flag,
            value: Some(if f.value { 1.0 } else { 0.0 }),
        });
    }
    let latency = t
        .latencies
        .iter()
        .zip(&t.histograms)
        .filter_map(|(l, h)| Some((l.name.to_string(), h.clone()?)))
        .collect();
    LoadTick {
        end_ns: t.end_mono_ns,
        interval_s: t.interval_s,
        completed: Some(t.counter(completed)),
        sent: t
            .counters
            .iter()
            .find(|c| c.name == "sent")
            .map(|c| c.value),
        values,
        latency,
    }
}

impl Workload for EngineLoad {
    fn info(&self) -> LoadInfo {
        let settings = self.load.settings();
        LoadInfo {
            protocol: self.load.protocol().into(),
            argv: self.argv.clone(),
            unit: unit_of(self.load.as_ref()),
            completed: self.load.completed().into(),
            report: serde_json::Value::Null,
            rate: settings.rate,
            concurrency: settings.concurrency,
        }
    }

    fn run(&mut self, stop: &Stop, events: &mut dyn LoadEvents) -> LoadOutcome {
        let mut started = false;
        let completed = self.load.completed();
        let r = self.load.run(stop, &mut |t| {
            if !started {
                started = true;
                events.started(None);
            }
            events.tick(convert(t, completed));
        });
        match r {
            Ok(report) => {
                let windows = report
                    .steps
                    .iter()
                    .map(|s| Window {
                        name: format!("{}={}", s.param, s.value),
                        start_ns: s.start_mono_ns,
                        end_ns: s.end_mono_ns,
                    })
                    .collect();
                LoadOutcome {
                    started: true,
                    ended_by_itself: !stop.is_raised(),
                    failure: report.headline.failure.clone(),
                    // The series is kept as the run's own table; here the rest.
                    report: serde_json::json!({
                        "protocol": report.protocol,
                        "options": report.options,
                        "summary": report.summary,
                        "headline": report.headline,
                        "totals": report.headline.named_totals(),
                        "events": report.events,
                        "steps": report.steps,
                    }),
                    windows,
                    ..Default::default()
                }
            }
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
