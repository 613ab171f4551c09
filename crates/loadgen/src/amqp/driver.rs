//! The AMQP driver: topology, agents (one thread per producer or consumer connection), and
//! what it tells the engine.
use super::conn::{Connection, Uri, Writer};
use super::AmqpOptions;
use crate::engine::stats::{
    metrics, CounterDef, FlagDef, LatencyDef, LatencyId, LevelDef, Schema, Show,
};
use crate::engine::{Ctx, Driver, Report};
use crate::Error;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

metrics! {
    counters(COUNTERS) {
        sent, confirmed, nacked, returned, received, blocked_notifications, reconnects,
    }
    latencies(LATENCIES) {
        consumer_latency, consumer_latency_intended, confirm_latency, confirm_latency_intended,
    }
    flags(FLAGS) { blocked, stalled, disconnected }
    levels(LEVELS) { queue_depth }
}

/// What an AMQP run measures.
pub static SCHEMA: Schema = Schema {
    protocol: "amqp",
    counters: COUNTERS,
    latencies: LATENCIES,
    flags: FLAGS,
    levels: LEVELS,
    throughput: M.sent,
    throughput_unit: "msg/s",
    sent: M.sent,
    stall: Some((M.stalled, M.sent)),
};

const COUNTERS: &[CounterDef] = &[
    CounterDef {
        name: "sent",
        unit: "msg",
        description: "messages published (written to the socket)",
        show: Show::Always,
        rate_label: Some("sending rate"),
    },
    CounterDef {
        name: "confirmed",
        unit: "msg",
        description: "publisher confirms (acks) received",
        // Named here, not through `M`, which is made from this table.
        show: Show::NonZeroOrLatency(LatencyId::named(LATENCIES, "confirm_latency")),
        rate_label: Some("confirm rate"),
    },
    CounterDef {
        name: "nacked",
        unit: "msg",
        description: "publisher nacks received",
        show: Show::NonZero,
        rate_label: None,
    },
    CounterDef {
        name: "returned",
        unit: "msg",
        description: "unroutable messages returned (mandatory)",
        show: Show::NonZero,
        rate_label: None,
    },
    CounterDef {
        name: "received",
        unit: "msg",
        description: "messages delivered to consumers",
        show: Show::Always,
        rate_label: Some("receiving rate"),
    },
    CounterDef {
        name: "blocked_notifications",
        unit: "notification",
        description: "connection.blocked notifications received",
        show: Show::Never,
        rate_label: None,
    },
    CounterDef {
        name: "reconnects",
        unit: "conn",
        description: "successful reconnections (--reconnect)",
        show: Show::Never,
        rate_label: None,
    },
];

const LATENCIES: &[LatencyDef] = &[
    LatencyDef {
        name: "consumer_latency",
        csv: "consumer",
        line_label: "min/median/75th/95th/99th/99.9th/max consumer latency",
        summary_label: "consumer latency",
        description: "end to end: the send time in the message to its delivery",
    },
    LatencyDef {
        name: "consumer_latency_intended",
        csv: "consumer_intended",
        line_label: "from intended send",
        summary_label: "consumer latency from intended send",
        description: "end to end from the intended send time (rate-limited runs)",
    },
    LatencyDef {
        name: "confirm_latency",
        csv: "confirm",
        line_label: "confirm latency",
        summary_label: "confirm latency",
        description: "publish to publisher confirm",
    },
    LatencyDef {
        name: "confirm_latency_intended",
        csv: "confirm_intended",
        line_label: "",
        summary_label: "confirm latency from intended send",
        description: "intended publish time to publisher confirm (rate-limited runs)",
    },
];

const FLAGS: &[FlagDef] = &[
    FlagDef {
        name: "blocked",
        marker: "BLOCKED",
        description: "a connection.blocked was in force",
    },
    FlagDef {
        name: "stalled",
        marker: "STALLED",
        description: "producers had messages due but sent none",
    },
    FlagDef {
        name: "disconnected",
        marker: "DISCONNECTED",
        description: "a connection was down (lost, or reconnecting)",
    },
];

const LEVELS: &[LevelDef] = &[LevelDef {
    name: "queue_depth",
    unit: "msg",
    description: "messages ready in the load's named queues, as the broker answers a passive \
                  queue.declare on a connection of kiln's own (4 times a second)",
}];

/// Names and keys every agent agrees on.
#[derive(Debug)]
pub(crate) struct Topology {
    /// Named queues (from `--queue` or `--queue-pattern`); empty: one server-named
    /// exclusive queue per consumer.
    pub queues: Vec<String>,
    /// Routing key when there is no pattern.
    pub routing_key: String,
    pub durable: bool,
    pub auto_delete: bool,
}

impl Topology {
    fn new(o: &AmqpOptions) -> Self {
        let queues: Vec<String> = if let Some(p) = &o.queue_pattern {
            (p.from..=p.to)
                .map(|i| p.pattern.replacen("%d", &i.to_string(), 1))
                .collect()
        } else {
            o.queue.iter().cloned().collect()
        };
        let routing_key = match (&o.routing_key, queues.first()) {
            (Some(k), _) => k.clone(),
            (None, Some(q)) if o.exchange.is_empty() => q.clone(),
            _ => format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..)),
        };
        let special = matches!(o.queue_type(), Some("quorum") | Some("stream"));
        Topology {
            queues,
            routing_key,
            durable: o.persistent || special,
            auto_delete: o.auto_delete && !special,
        }
    }

    /// The key a queue is bound with (patterns bind each queue by its own name).
    pub fn key_for<'a>(&'a self, o: &AmqpOptions, queue: &'a str) -> &'a str {
        if o.queue_pattern.is_some() {
            queue
        } else {
            &self.routing_key
        }
    }

    /// Declares the exchange, then `queue` (or all named queues) with their bindings.
    pub fn declare(
        &self,
        c: &mut Connection,
        o: &AmqpOptions,
        queue: Option<&str>,
    ) -> Result<(), Error> {
        c.declare_exchange(&o.exchange, &o.exchange_type)?;
        let all: Vec<&str> = match queue {
            Some(q) => vec![q],
            None => self.queues.iter().map(String::as_str).collect(),
        };
        for q in all {
            c.declare_queue(q, self.durable, false, self.auto_delete, &o.queue_args)?;
            c.bind(q, &o.exchange, self.key_for(o, q))?;
        }
        Ok(())
    }
}

/// An AMQP load, ready to run: [`crate::engine::run`] drives it.
#[derive(Debug)]
pub struct AmqpDriver {
    pub(crate) opts: AmqpOptions,
    pub(crate) uri: Uri,
    producers_done: AtomicU32,
    consumers_done: AtomicU32,
}

impl AmqpDriver {
    /// Checks the options and the URI.
    pub fn new(opts: AmqpOptions) -> Result<Self, Error> {
        opts.validate()?;
        let uri = Uri::parse(&opts.uri)?;
        Ok(AmqpDriver {
            opts,
            uri,
            producers_done: AtomicU32::new(0),
            consumers_done: AtomicU32::new(0),
        })
    }
}

/// State shared by the agents of one run.
pub(crate) struct Shared<'a> {
    pub opts: &'a AmqpOptions,
    pub uri: &'a Uri,
    pub topo: Topology,
    pub ctx: &'a Ctx,
    pub ready: AtomicU32,
    pub producers_done: &'a AtomicU32,
    pub consumers_done: &'a AtomicU32,
    pub writers: Mutex<Vec<Arc<Writer>>>,
}

impl Shared<'_> {
    #[inline]
    pub fn stopping(&self) -> bool {
        self.ctx.stopping()
    }

    /// The agent slot of producer `i`.
    pub fn producer(&self, i: usize) -> usize {
        i
    }

    /// The agent slot of consumer `i`.
    pub fn consumer(&self, i: usize) -> usize {
        self.opts.producers as usize + i
    }

    pub fn register(&self, w: &Arc<Writer>) {
        self.writers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(w.clone());
        if self.stopping() {
            w.shutdown();
        }
    }

    /// A producer reached its message count; the run ends when every agent with a count
    /// has reached it.
    pub(crate) fn producer_done(&self) {
        self.producers_done.fetch_add(1, Ordering::SeqCst);
        self.check_done();
    }

    /// A consumer reached its message count.
    pub(crate) fn consumer_done(&self) {
        self.consumers_done.fetch_add(1, Ordering::SeqCst);
        self.check_done();
    }

    fn check_done(&self) {
        let o = self.opts;
        if o.pmessages == 0 && o.cmessages == 0 {
            return;
        }
        let p = o.pmessages == 0 || self.producers_done.load(Ordering::SeqCst) >= o.producers;
        let c = o.cmessages == 0 || self.consumers_done.load(Ordering::SeqCst) >= o.consumers;
        if p && c {
            self.ctx.finish();
        }
    }

    /// Runs one agent: sessions until done, and with `reconnect` new sessions after a lost
    /// connection, with the gap marked. A session calls its `connected` callback once its
    /// connection is set up.
    pub fn agent(
        &self,
        name: &str,
        mut session: impl FnMut(&mut dyn FnMut()) -> Result<(), Error>,
    ) {
        let mut ever = false;
        let mut down = false;
        let ctx = self.ctx;
        loop {
            let r = {
                let mut connected = || {
                    if !ever {
                        ever = true;
                        self.ready.fetch_add(1, Ordering::SeqCst);
                    }
                    if down {
                        down = false;
                        ctx.flag_off(M.disconnected);
                        ctx.add(0, M.reconnects, 1);
                        ctx.event("reconnected", name.to_string());
                    }
                };
                session(&mut connected)
            };
            match r {
                Ok(()) => break,
                Err(_) if self.stopping() => break,
                Err(e) => {
                    if !ever || !self.opts.reconnect {
                        // Before the load started a failure is a startup error; during it,
                        // without --reconnect, it ends the run with the results so far.
                        ctx.event("connection-lost", format!("{name}: {e}"));
                        ctx.fail(format!("{name}: {e}"));
                        break;
                    }
                    if !down {
                        down = true;
                        ctx.flag_on(M.disconnected);
                        ctx.event("connection-lost", format!("{name}: {e}"));
                    }
                    if ctx.stop().sleep(Duration::from_millis(500)) {
                        break;
                    }
                }
            }
        }
        if down {
            ctx.flag_off(M.disconnected);
        }
    }

    fn shutdown_all(&self) {
        for w in self
            .writers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            w.shutdown();
        }
    }

    /// Waits (waking on the stop) until `n` agents are connected; false on failure, stop or
    /// timeout.
    fn await_ready(&self, n: u32, since: Instant) -> bool {
        while self.ready.load(Ordering::SeqCst) < n {
            if self.ctx.failed() || self.stopping() {
                return false;
            }
            if since.elapsed() > crate::engine::START_TIMEOUT {
                self.ctx.fail(format!(
                    "agents did not connect within {} s",
                    crate::engine::START_TIMEOUT.as_secs()
                ));
                return false;
            }
            self.ctx.stop().sleep(Duration::from_millis(2));
        }
        true
    }
}

impl Driver for AmqpDriver {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn agents(&self) -> usize {
        (self.opts.producers + self.opts.consumers).max(1) as usize
    }

    fn id(&self) -> &str {
        &self.opts.id
    }

    fn duration(&self) -> Option<Duration> {
        self.opts.time
    }

    fn tick_grid_ns(&self) -> u64 {
        self.opts.tick_grid_ns
    }

    fn run(&self, ctx: &Ctx) -> Result<(), Error> {
        let opts = &self.opts;
        let topo = Topology::new(opts);
        // Declare the shared topology first, on its own connection: an unreachable broker or
        // a refused declaration fails here, before any agent starts.
        let mut setup = Connection::open(&self.uri, "kiln-setup")?;
        topo.declare(&mut setup, opts, None)?;
        setup.close();
        let sh = Shared {
            opts,
            uri: &self.uri,
            topo,
            ctx,
            ready: AtomicU32::new(0),
            producers_done: &self.producers_done,
            consumers_done: &self.consumers_done,
            writers: Mutex::new(Vec::new()),
        };
        std::thread::scope(|s| {
            for i in 0..opts.consumers as usize {
                let sh = &sh;
                std::thread::Builder::new()
                    .name(format!("kiln-consumer-{i}"))
                    .spawn_scoped(s, move || super::consumer::run(sh, i))
                    .map_err(|e| ctx.fail(format!("cannot start a consumer thread: {e}")))
                    .ok();
            }
            // Consumers first, as PerfTest does, so the first messages are not lost.
            let t = Instant::now();
            if sh.await_ready(opts.consumers, t) {
                for i in 0..opts.producers as usize {
                    let sh = &sh;
                    std::thread::Builder::new()
                        .name(format!("kiln-producer-{i}"))
                        .stack_size(256 * 1024)
                        .spawn_scoped(s, move || super::producer::run(sh, i))
                        .map_err(|e| ctx.fail(format!("cannot start a producer thread: {e}")))
                        .ok();
                }
                if sh.await_ready(opts.producers + opts.consumers, t) {
                    ctx.start_load();
                    if !sh.topo.queues.is_empty() {
                        let sh = &sh;
                        std::thread::Builder::new()
                            .name("kiln-queue-watch".into())
                            .spawn_scoped(s, move || super::watch::run(sh))
                            .map_err(|e| {
                                ctx.event("queue-watch", format!("cannot start: {e}"));
                            })
                            .ok();
                    }
                }
            }
            ctx.stop().wait();
            // The load ends when the agents are told to stop: messages sent before are
            // counted, so they are timed too.
            ctx.mark_end();
            sh.shutdown_all();
        });
        Ok(())
    }

    fn expects_traffic(&self, _ctx: &Ctx, at_s: f64) -> bool {
        let o = &self.opts;
        // A second without sends is a stall only if the schedule asked for a few messages
        // in it: not in a zero step of --variable-rate, not for mostly idle producers.
        let expected_rate = if let Some(p) = o.publishing_interval {
            o.producers as f64 / p.as_secs_f64()
        } else if !o.variable_rate.is_empty() {
            crate::engine::pacer::step_at(&o.variable_rate, (at_s - 0.5).max(0.0)).0
                * o.producers as f64
        } else {
            o.rate.map_or(f64::INFINITY, |r| r * o.producers as f64)
        };
        o.producers > 0
            && expected_rate >= 2.0
            && (o.pmessages == 0 || self.producers_done.load(Ordering::SeqCst) < o.producers)
    }

    fn options(&self) -> serde_json::Value {
        // The options as run, without the password.
        let mut o = self.opts.clone();
        o.uri = self.uri.display();
        serde_json::to_value(o).unwrap_or(serde_json::Value::Null)
    }

    fn summary(&self, r: &Report) -> serde_json::Value {
        serde_json::to_value(super::report::AmqpSummary::of(&r.headline))
            .unwrap_or(serde_json::Value::Null)
    }
}

/// The broker closed the connection or a channel (`id` is the method): answer with the
/// matching close-ok, so it can finish cleanly, and return the error naming its reason.
pub(crate) fn closed_by_broker(
    d: &mut super::wire::Dec<'_>,
    id: Option<(u16, u16)>,
    channel: u16,
    writer: &Writer,
    sh: &Shared,
) -> Error {
    use super::wire::{self, m};
    let code = d.u16().unwrap_or(0);
    let text = d.shortstr().unwrap_or("").to_string();
    let ok = if id == Some(m::CONN_CLOSE) {
        m::CONN_CLOSE_OK
    } else {
        m::CHAN_CLOSE_OK
    };
    let mut out = Vec::new();
    wire::method_frame(&mut out, channel, ok, |_| {});
    let _ = writer.write(&out);
    Error::Closed {
        uri: sh.uri.display(),
        code,
        text,
    }
}
