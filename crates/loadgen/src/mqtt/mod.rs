//! MQTT 3.1, 3.1.1 and 5 (mosquitto, RabbitMQ's MQTT plugin, EMQX…), emqtt-bench's habits.
//!
//! Scenarios: `conn` (a fleet of idle connections kept alive with pings), `sub`, `pub`, and
//! `pubsub` (both sides in one process, so end-to-end latency needs no clock sync and every
//! message is accounted for per publisher: received, lost, duplicated, out of order).
//!
//! One event loop (epoll through mio) holds every connection; see [`MqttDriver`].
pub mod codec;
mod driver;
mod options;
pub mod report;

pub use driver::{preflight, Delivery, MqttDriver, SCHEMA_CONN, SCHEMA_PUB, SCHEMA_SUB};
pub use options::{MqttOptions, Scenario};
pub use report::{format_summary, format_tick, schema, MqttSummary};

use crate::engine::stats::{CounterId, Tick};
use crate::engine::{Load, Report};
use crate::Error;
use kiln_os::stop::Stop;

/// Runs an MQTT load to its end (see [`crate::engine::run`]).
pub fn run(
    opts: &MqttOptions,
    stop: &Stop,
    on_tick: &mut dyn FnMut(&Tick),
) -> Result<Report, Error> {
    let d = MqttDriver::new(opts.clone())?;
    crate::engine::run(&d, stop, on_tick)
}

/// Runs `opts` once per total publishing rate (`--rate-sweep`), each `opts.time` long (10 s
/// if unset), the rate split over the publishers.
pub fn sweep(
    opts: &MqttOptions,
    rates: &[f64],
    stop: &Stop,
    on_tick: &mut dyn FnMut(&Tick),
) -> Result<Report, Error> {
    let drivers: Vec<MqttDriver> = rates
        .iter()
        .map(|&r| {
            let mut o = opts.clone();
            o.pub_interval_ms = 1000.0 * o.count as f64 / r;
            o.time = Some(opts.time.unwrap_or(std::time::Duration::from_secs(10)));
            MqttDriver::new(o)
        })
        .collect::<Result<_, _>>()?;
    let mut drivers = drivers.into_iter();
    crate::engine::sweep::run_sweep(
        "rate",
        rates,
        |_| drivers.next().expect("one driver per rate"),
        stop,
        on_tick,
    )
}

/// An MQTT load as `kiln run` starts it: one run, or a rate sweep.
#[derive(Debug, Clone)]
pub struct MqttLoad {
    /// The options.
    pub opts: MqttOptions,
    /// Total rates of a `--rate-sweep`, if any.
    pub sweep: Option<Vec<f64>>,
}

impl Load for MqttLoad {
    fn protocol(&self) -> &'static str {
        "mqtt"
    }
    fn schema(&self) -> &'static crate::engine::stats::Schema {
        driver::schema_for(&self.opts)
    }
    fn completed(&self) -> CounterId {
        match self.opts.scenario {
            Scenario::Conn => driver::M.connected,
            Scenario::Pub if self.opts.qos > 0 => driver::M.acked,
            Scenario::Pub => driver::M.sent,
            Scenario::Sub | Scenario::PubSub => driver::M.received,
        }
    }
    fn id(&self) -> &str {
        &self.opts.id
    }
    fn schedule(&self) -> Option<(usize, std::time::Duration)> {
        let steps = self.sweep.as_ref()?.len();
        Some((
            steps,
            self.opts.time.unwrap_or(std::time::Duration::from_secs(10)),
        ))
    }
    fn settings(&self) -> crate::engine::Settings {
        let o = &self.opts;
        let publishes = matches!(o.scenario, Scenario::Pub | Scenario::PubSub);
        crate::engine::Settings {
            rate: (publishes && self.sweep.is_none() && o.pub_interval_ms > 0.0)
                .then(|| o.count as f64 * 1000.0 / o.pub_interval_ms),
            concurrency: Some(o.count as f64),
        }
    }
    fn preflight(&self) -> Result<Vec<String>, Error> {
        Ok(preflight(&self.opts)?.notes())
    }
    fn align_ticks(&mut self, origin_mono_ns: u64) {
        self.opts.tick_grid_ns = origin_mono_ns;
    }
    fn run(&mut self, stop: &Stop, on_tick: &mut dyn FnMut(&Tick)) -> Result<Report, Error> {
        match &self.sweep {
            Some(r) => sweep(&self.opts, r, stop, on_tick),
            None => run(&self.opts, stop, on_tick),
        }
    }
}
