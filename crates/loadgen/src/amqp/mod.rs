//! AMQP 0.9.1 (RabbitMQ), PerfTest-compatible.
//!
//! A small synchronous client specialised for load generation. Why not a general client:
//! the goal is the least client CPU per message, so the client takes load from the broker
//! it measures as little as possible. Blocking sockets with one thread reading and one
//! writing per connection, hand-written framing and batched writes cost less per message
//! than a general async client's per-message futures and channels (`bench/amqp/`).
mod conn;
mod consumer;
mod driver;
mod options;
mod producer;
pub mod report;
mod watch;
mod wire;

/// AMQP 0.9.1 framing as the load speaks it, for its fuzz target and its benchmark
/// against `amq-protocol`: frames split off a read buffer ([`parse_frame`](codec::parse_frame)),
/// a producer's messages ([`Publish`](codec::Publish)), a consumer's deliveries assembled
/// from their frames ([`Deliveries`](codec::Deliveries)) and its acknowledgements
/// ([`ack`](codec::ack)), a confirm read back ([`read_ack`](codec::read_ack)), and any
/// method frame written from its arguments ([`method_frame`](codec::method_frame) with an
/// [`Enc`](codec::Enc)), which the fuzz target uses to write a decoded frame back.
pub mod codec {
    pub use super::wire::{
        ack, method, method_frame, method_id, parse_frame, read_ack, Assembled, Dec, Deliveries,
        Delivery, Enc, Frame, Publish, Short, FRAME_BODY, FRAME_END, FRAME_HEADER, FRAME_HEARTBEAT,
        FRAME_METHOD,
    };
}

pub use conn::Uri;
pub use driver::{AmqpDriver, SCHEMA};
pub use options::{parse_key_values, parse_value_duration, AmqpOptions, QueuePattern};
pub use report::{format_summary, format_sweep, format_tick, sweep_rows, AmqpSummary, SweepRow};
pub use wire::FieldValue;

use crate::engine::stats::{CounterId, Tick};
use crate::engine::{Load, Report};
use crate::Error;
use kiln_os::stop::Stop;

/// Runs an AMQP load to its end (see [`crate::engine::run`]).
pub fn run(
    opts: &AmqpOptions,
    stop: &Stop,
    on_tick: &mut dyn FnMut(&Tick),
) -> Result<Report, Error> {
    let d = AmqpDriver::new(opts.clone())?;
    crate::engine::run(&d, stop, on_tick)
}

/// Parses `--rate-sweep`: `FROM:TO:STEPS` or a list `1000,2000,5000` (total rates).
pub fn parse_sweep(s: &str) -> Result<Vec<f64>, Error> {
    crate::engine::sweep::parse_steps("--rate-sweep", s)
}

/// Runs `opts` once per total rate (each `opts.time` long, 10 s if unset), the rate split
/// evenly over the producers. Ticks carry their step's index; see [`sweep_rows`].
pub fn sweep(
    opts: &AmqpOptions,
    rates: &[f64],
    stop: &Stop,
    on_tick: &mut dyn FnMut(&Tick),
) -> Result<Report, Error> {
    opts.validate()?;
    let step_opts = |rate: f64| {
        let mut o = opts.clone();
        o.rate = Some(rate / o.producers.max(1) as f64);
        o.variable_rate.clear();
        o.publishing_interval = None;
        o.time = Some(opts.time.unwrap_or(std::time::Duration::from_secs(10)));
        o
    };
    // Options are checked once; each step's driver is then built without failing.
    let drivers: Vec<AmqpDriver> = rates
        .iter()
        .map(|&r| AmqpDriver::new(step_opts(r)))
        .collect::<Result<_, _>>()?;
    let mut drivers = drivers.into_iter();
    let mut r = crate::engine::sweep::run_sweep(
        "rate",
        rates,
        |_| drivers.next().expect("one driver per rate"),
        stop,
        on_tick,
    )?;
    r.summary = serde_json::to_value(sweep_rows(&r)).unwrap_or_default();
    Ok(r)
}

/// An AMQP load as `kiln run` starts it: one run, or a rate sweep.
#[derive(Debug, Clone)]
pub struct AmqpLoad {
    /// The options.
    pub opts: AmqpOptions,
    /// Total rates of a `--rate-sweep`, if any.
    pub sweep: Option<Vec<f64>>,
}

impl Load for AmqpLoad {
    fn protocol(&self) -> &'static str {
        "amqp"
    }
    fn schema(&self) -> &'static crate::engine::stats::Schema {
        &driver::SCHEMA
    }
    fn completed(&self) -> CounterId {
        if self.opts.consumers > 0 {
            driver::M.received
        } else if self.opts.confirm.is_some() {
            driver::M.confirmed
        } else {
            driver::M.sent
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
        let fixed = self.sweep.is_none()
            && o.variable_rate.is_empty()
            && o.publishing_interval.is_none()
            && o.producers > 0;
        crate::engine::Settings {
            rate: o
                .rate
                .filter(|r| fixed && *r > 0.0)
                .map(|r| r * o.producers as f64),
            concurrency: Some(o.producers as f64),
        }
    }
    fn align_ticks(&mut self, origin_mono_ns: u64) {
        self.opts.tick_grid_ns = origin_mono_ns;
    }
    fn run(&mut self, stop: &Stop, on_tick: &mut dyn FnMut(&Tick)) -> Result<Report, Error> {
        match &self.sweep {
            Some(rates) => sweep(&self.opts, rates, stop, on_tick),
            None => run(&self.opts, stop, on_tick),
        }
    }
}
