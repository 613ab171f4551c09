//! kiln's own load protocols (the load engine's [`kiln_loadgen::Load`]s) under `kiln run`:
//! one adapter for every protocol, since the engine's seconds are already
//! protocol-neutral.
use crate::{LoadEvents, LoadOutcome, LoadTick, Value, ValueKind, Workload};
use kiln_loadgen::{CounterId, Schema, Tick};
use kiln_os::stop::Stop;
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

/// The counter of completed operations (its definition in the load's schema).
fn completed_def(load: &dyn kiln_loadgen::Load) -> &'static kiln_loadgen::CounterDef {
    load.schema().counter_def(load.completed())
}

/// A second of the engine as `kiln run` keeps it. The completed and sent counts are read
/// by their handles in the load's schema, never by name.
fn convert(t: &Tick, schema: &Schema, completed: CounterId) -> LoadTick {
    let mut values: Vec<Value> = Vec::new();
    for (c, rate) in t.rates() {
        values.push(Value {
            name: c.name.to_string(),
            unit: format!("{}/s", c.unit),
            kind: ValueKind::Rate,
            value: Some(rate),
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
    for l in &t.levels {
        values.push(Value {
            name: l.name.to_string(),
            unit: l.unit.to_string(),
            kind: ValueKind::Level,
            value: l.value,
        });
    }
    let latency = t
        .latencies
        .iter()
        .zip(&t.histograms)
        .filter_map(|(l, h)| crate::EncodedLatency::encode(l.name.as_ref(), h.as_ref()?))
        .collect();
    LoadTick {
        end_ns: t.end_mono_ns,
        interval_s: t.interval_s,
        completed: t.count_of(completed),
        sent: t.count_of(schema.sent),
        values,
        latency,
    }
}

impl Workload for EngineLoad {
    fn align_ticks(&mut self, origin_mono_ns: u64) {
        self.load.align_ticks(origin_mono_ns);
    }

    fn schedule(&self) -> Option<(usize, std::time::Duration)> {
        self.load.schedule()
    }

    fn info(&self) -> LoadInfo {
        let settings = self.load.settings();
        LoadInfo {
            protocol: self.load.protocol().into(),
            argv: self.argv.clone(),
            unit: completed_def(self.load.as_ref()).unit.into(),
            completed: completed_def(self.load.as_ref()).name.into(),
            report: serde_json::Value::Null,
            rate: settings.rate,
            concurrency: settings.concurrency,
        }
    }

    fn run(&mut self, stop: &Stop, events: &mut dyn LoadEvents) -> LoadOutcome {
        let mut started = false;
        let completed = self.load.completed();
        let schema = self.load.schema();
        let r = self.load.run(stop, &mut |t| {
            if !started {
                started = true;
                events.started(None);
            }
            events.tick(convert(t, schema, completed));
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

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_loadgen::amqp::{AmqpLoad, AmqpOptions};
    use kiln_loadgen::engine::stats::Count;

    /// The load's columns every reader looks for by name ([`kiln_store::columns`]) are
    /// the names the protocols give their counters and levels (the load generator needs
    /// no store, so it spells its own).
    #[test]
    fn the_protocols_name_their_columns_as_the_store_declares_them() {
        use kiln_store::columns;
        let schemas = [
            &kiln_loadgen::amqp::SCHEMA,
            &kiln_loadgen::http::SCHEMA,
            &kiln_loadgen::http::SCHEMA_RATE,
            &kiln_loadgen::mqtt::SCHEMA_CONN,
            &kiln_loadgen::mqtt::SCHEMA_PUB,
            &kiln_loadgen::mqtt::SCHEMA_SUB,
        ];
        for s in schemas {
            assert_eq!(s.counter_def(s.sent).name, columns::SENT, "{}", s.protocol);
        }
        let fleet = &kiln_loadgen::mqtt::SCHEMA_CONN;
        assert!(fleet.counter(columns::CONNECTED).is_some());
        assert!(fleet.counter(columns::DROPPED).is_some());
        let amqp = &kiln_loadgen::amqp::SCHEMA;
        assert!(amqp.levels.iter().any(|l| l.name == columns::QUEUE_DEPTH));
    }

    fn tick(counts: &[(&'static str, u64)]) -> Tick {
        Tick {
            time_s: 1.0,
            interval_s: 0.5,
            end_mono_ns: 7_000_000_000,
            counters: counts
                .iter()
                .map(|&(name, value)| Count {
                    name: name.into(),
                    unit: "msg".into(),
                    value,
                })
                .collect(),
            latencies: Vec::new(),
            flags: Vec::new(),
            levels: Vec::new(),
            step: None,
            histograms: Vec::new(),
        }
    }

    /// The completed and sent counts are the load's own counters, read by the indices
    /// its schema and options give (messages received when there are consumers), and
    /// every counter becomes a rate over the second's length.
    #[test]
    fn completed_and_sent_come_from_the_schema() {
        let load = AmqpLoad {
            opts: AmqpOptions {
                consumers: 2,
                ..Default::default()
            },
            sweep: None,
        };
        let schema = kiln_loadgen::Load::schema(&load);
        let counts: Vec<(&'static str, u64)> = schema
            .counters
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name, 10 * (i as u64 + 1)))
            .collect();
        let t = convert(&tick(&counts), schema, kiln_loadgen::Load::completed(&load));
        let received = schema.counter("received").unwrap().index();
        assert_eq!(t.completed, Some(10 * (received as u64 + 1)));
        assert_eq!(t.sent, Some(10 * (schema.sent.index() as u64 + 1)));
        assert_eq!(
            schema.counter_def(schema.sent).name,
            kiln_store::columns::SENT
        );
        assert_eq!(t.value("received"), Some(20.0 * (received as f64 + 1.0)));
        assert_eq!(t.count("received"), 10.0 * (received as f64 + 1.0));
        assert_eq!(t.end_ns, 7_000_000_000);
        let info = EngineLoad::new(Box::new(load), vec![]).info();
        assert_eq!(
            (info.completed.as_str(), info.unit.as_str()),
            ("received", "msg")
        );
    }
}
