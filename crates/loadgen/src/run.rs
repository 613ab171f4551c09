//! One load run: topology, agents (one thread per producer or consumer connection), and the
//! once-a-second ticker that turns counters and histograms into the series.
use crate::amqp::{Connection, Uri, Writer};
use crate::stats::{pct, Counters, Event, Hists, Report, Summary, Tick};
use crate::{AmqpOptions, Error};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod consumer;
mod producer;

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

/// State shared by the agents and the ticker for one run.
pub(crate) struct Shared<'a> {
    pub opts: &'a AmqpOptions,
    pub uri: Uri,
    pub topo: Topology,
    /// Monotonic origin of all timestamps in the run …
    pub base: Instant,
    /// … and the wall clock (ns since the epoch) at that moment, for message timestamps.
    pub base_real_ns: u64,
    /// When the load started (all agents connected), as ns after `base`.
    pub go_ns: OnceLock<u64>,
    pub stopping: AtomicBool,
    pub producers: Vec<Counters>,
    pub consumers: Vec<Counters>,
    pub ready: AtomicU32,
    pub producers_done: AtomicU32,
    pub consumers_done: AtomicU32,
    pub blocked_now: AtomicU32,
    pub blocked_in_tick: AtomicBool,
    pub blocked_notifications: AtomicU64,
    pub down_now: AtomicU32,
    pub down_in_tick: AtomicBool,
    pub reconnects: AtomicU64,
    pub events: Mutex<Vec<Event>>,
    pub failure: Mutex<Option<String>>,
    pub writers: Mutex<Vec<Arc<Writer>>>,
}

impl Shared<'_> {
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// Nanoseconds since `base`.
    pub fn mono_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// Wall-clock nanoseconds since the Unix epoch.
    pub fn real_ns() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    }

    /// Seconds since the load started (0 before it starts).
    pub fn time_s(&self) -> f64 {
        let go = self.go_ns.get().copied().unwrap_or(0);
        self.mono_ns().saturating_sub(go) as f64 / 1e9
    }

    pub fn event(&self, kind: &str, detail: String) {
        let e = Event {
            time_s: self.time_s(),
            kind: kind.to_string(),
            detail,
        };
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e);
    }

    /// Records the first failure; without `reconnect` it ends the run.
    pub fn fail(&self, what: String) {
        let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            *f = Some(what);
        }
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

    /// Waits until the load starts; false if the run ended first.
    pub fn wait_go(&self) -> bool {
        while self.go_ns.get().is_none() {
            if self.stopping() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
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
        loop {
            let r = {
                let mut connected = || {
                    if !ever {
                        ever = true;
                        self.ready.fetch_add(1, Ordering::SeqCst);
                    }
                    if down {
                        down = false;
                        self.down_now.fetch_sub(1, Ordering::SeqCst);
                        self.reconnects.fetch_add(1, Ordering::Relaxed);
                        self.event("reconnected", name.to_string());
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
                        self.fail(format!("{name}: {e}"));
                        self.event("connection-lost", format!("{name}: {e}"));
                        break;
                    }
                    if !down {
                        down = true;
                        self.down_now.fetch_add(1, Ordering::SeqCst);
                        self.down_in_tick.store(true, Ordering::SeqCst);
                        self.event("connection-lost", format!("{name}: {e}"));
                    }
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_millis(500) && !self.stopping() {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    if self.stopping() {
                        break;
                    }
                }
            }
        }
        if down {
            self.down_now.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Runs a load to completion and returns everything measured.
///
/// `stop` ends the run early (Ctrl-C); `on_tick` sees every second as it completes (the CLI
/// prints it). A broker that cannot be reached at the start is an `Err` naming the URI; a
/// connection lost during the run ends it with `Ok`, the results so far and
/// [`Summary::failure`] set (or, with `reconnect`, the run goes on).
pub fn run(
    opts: &AmqpOptions,
    stop: &AtomicBool,
    on_tick: &mut dyn FnMut(&Tick),
) -> Result<Report, Error> {
    opts.validate()?;
    let uri = Uri::parse(&opts.uri)?;
    let topo = Topology::new(opts);
    // Declare the shared topology first, on its own connection: an unreachable broker or a
    // refused declaration fails here, before any agent starts.
    let mut setup = Connection::open(&uri, "kiln-setup")?;
    topo.declare(&mut setup, opts, None)?;
    setup.close();

    let base = Instant::now();
    let sh = Shared {
        opts,
        uri,
        topo,
        base,
        base_real_ns: Shared::real_ns(),
        go_ns: OnceLock::new(),
        stopping: AtomicBool::new(false),
        producers: (0..opts.producers).map(|_| Counters::new()).collect(),
        consumers: (0..opts.consumers).map(|_| Counters::new()).collect(),
        ready: AtomicU32::new(0),
        producers_done: AtomicU32::new(0),
        consumers_done: AtomicU32::new(0),
        blocked_now: AtomicU32::new(0),
        blocked_in_tick: AtomicBool::new(false),
        blocked_notifications: AtomicU64::new(0),
        down_now: AtomicU32::new(0),
        down_in_tick: AtomicBool::new(false),
        reconnects: AtomicU64::new(0),
        events: Mutex::new(Vec::new()),
        failure: Mutex::new(None),
        writers: Mutex::new(Vec::new()),
    };
    let total_agents = opts.producers + opts.consumers;
    let mut ticker = Ticker::new();
    let mut startup_error = None;
    let mut end_s = 0.0;
    std::thread::scope(|s| {
        for i in 0..opts.consumers as usize {
            let sh = &sh;
            std::thread::Builder::new()
                .name(format!("kiln-consumer-{i}"))
                .spawn_scoped(s, move || consumer::run(sh, i))
                .map_err(|e| sh.fail(format!("cannot start a consumer thread: {e}")))
                .ok();
        }
        // Consumers first, as PerfTest does, so the first messages are not lost.
        let t = Instant::now();
        while sh.ready.load(Ordering::SeqCst) < opts.consumers
            && !sh.has_failure()
            && t.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        for i in 0..opts.producers as usize {
            let sh = &sh;
            std::thread::Builder::new()
                .name(format!("kiln-producer-{i}"))
                .stack_size(256 * 1024)
                .spawn_scoped(s, move || producer::run(sh, i))
                .map_err(|e| sh.fail(format!("cannot start a producer thread: {e}")))
                .ok();
        }
        while sh.ready.load(Ordering::SeqCst) < total_agents
            && !sh.has_failure()
            && t.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        if let Some(f) = sh.failure.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            startup_error = Some(f);
        } else if sh.ready.load(Ordering::SeqCst) < total_agents {
            startup_error = Some("agents did not connect within 60 s".to_string());
        }
        if startup_error.is_some() {
            sh.shutdown_all();
            return;
        }
        let _ = sh.go_ns.set(sh.mono_ns());
        ticker.drive(&sh, stop, on_tick);
        sh.shutdown_all();
        // The load ends when the agents are told to stop, not when the ticker noticed the
        // end was due: messages sent in between are counted, so they are timed too.
        end_s = sh.time_s();
    });
    if let Some(e) = startup_error {
        return Err(Error::Start(e));
    }
    // The last partial second, counted after every agent has stopped.
    ticker.tick(&sh, end_s, on_tick, true);
    Ok(ticker.report(&sh, end_s, stop.load(Ordering::SeqCst)))
}

impl Shared<'_> {
    fn has_failure(&self) -> bool {
        self.failure.lock().map(|f| f.is_some()).unwrap_or(true)
    }

    fn shutdown_all(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for w in self
            .writers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            w.shutdown();
        }
    }
}

struct Ticker {
    prev: [u64; 5],
    last_s: f64,
    interval: Hists,
    total: Hists,
    series: Vec<Tick>,
}

impl Ticker {
    fn new() -> Self {
        Ticker {
            prev: [0; 5],
            last_s: 0.0,
            interval: Hists::new(),
            total: Hists::new(),
            series: Vec::new(),
        }
    }

    /// Emits a tick every second until the run is due to end.
    fn drive(&mut self, sh: &Shared, stop: &AtomicBool, on_tick: &mut dyn FnMut(&Tick)) {
        let o = sh.opts;
        let mut next = 1.0;
        loop {
            std::thread::sleep(Duration::from_millis(10));
            let now = sh.time_s();
            let time_up = o.time.is_some_and(|t| now >= t.as_secs_f64());
            let limits = o.pmessages > 0 || o.cmessages > 0;
            let p_done =
                o.pmessages == 0 || sh.producers_done.load(Ordering::SeqCst) >= o.producers;
            let c_done =
                o.cmessages == 0 || sh.consumers_done.load(Ordering::SeqCst) >= o.consumers;
            let done = limits && p_done && c_done;
            let failed = sh.has_failure();
            if stop.load(Ordering::SeqCst) || time_up || done || failed {
                return;
            }
            if now >= next {
                self.tick(sh, next, on_tick, false);
                next += 1.0;
            }
        }
    }

    fn sums(sh: &Shared) -> [u64; 5] {
        let mut s = [0u64; 5];
        for c in sh.producers.iter().chain(sh.consumers.iter()) {
            s[0] += Counters::get(&c.sent);
            s[1] += Counters::get(&c.confirmed);
            s[2] += Counters::get(&c.nacked);
            s[3] += Counters::get(&c.returned);
            s[4] += Counters::get(&c.received);
        }
        s
    }

    fn tick(&mut self, sh: &Shared, at_s: f64, on_tick: &mut dyn FnMut(&Tick), last: bool) {
        let interval_s = at_s - self.last_s;
        let sums = Self::sums(sh);
        let d: Vec<u64> = sums.iter().zip(self.prev).map(|(a, b)| a - b).collect();
        for c in sh.producers.iter().chain(sh.consumers.iter()) {
            c.hists
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .drain_into(&mut self.interval);
        }
        if last && interval_s < 0.05 && d.iter().all(|&x| x == 0) && self.interval_is_empty() {
            return;
        }
        let o = sh.opts;
        // A second without sends is a stall only if the schedule asked for a few messages
        // in it: not in a zero step of --variable-rate, not for mostly idle producers.
        let expected_rate = if let Some(p) = o.publishing_interval {
            o.producers as f64 / p.as_secs_f64()
        } else if !o.variable_rate.is_empty() {
            producer::step_at(&o.variable_rate, (at_s - 0.5).max(0.0)).0 * o.producers as f64
        } else {
            o.rate.map_or(f64::INFINITY, |r| r * o.producers as f64)
        };
        let expects_traffic = o.producers > 0
            && expected_rate >= 2.0
            && (o.pmessages == 0 || sh.producers_done.load(Ordering::SeqCst) < o.producers);
        let blocked_now = sh.blocked_now.load(Ordering::SeqCst) > 0;
        let tick = Tick {
            time_s: (at_s * 1000.0).round() / 1000.0,
            interval_s: (interval_s * 1000.0).round() / 1000.0,
            sent: d[0],
            confirmed: d[1],
            nacked: d[2],
            returned: d[3],
            received: d[4],
            consumer_latency: pct(&self.interval.consumer),
            consumer_latency_intended: pct(&self.interval.consumer_intended),
            confirm_latency: pct(&self.interval.confirm),
            confirm_latency_intended: pct(&self.interval.confirm_intended),
            blocked: sh.blocked_in_tick.swap(blocked_now, Ordering::SeqCst) || blocked_now,
            stalled: expects_traffic && d[0] == 0 && interval_s >= 0.5,
            disconnected: sh.down_in_tick.swap(false, Ordering::SeqCst)
                || sh.down_now.load(Ordering::SeqCst) > 0,
        };
        self.total.add(&mut self.interval);
        self.interval.reset();
        self.prev = sums;
        self.last_s = at_s;
        on_tick(&tick);
        self.series.push(tick);
    }

    fn interval_is_empty(&self) -> bool {
        [
            &self.interval.consumer,
            &self.interval.consumer_intended,
            &self.interval.confirm,
            &self.interval.confirm_intended,
        ]
        .into_iter()
        .flatten()
        .all(|h| h.is_empty())
    }

    fn report(self, sh: &Shared, end_s: f64, interrupted: bool) -> Report {
        let t = Self::sums(sh);
        let dur = end_s.max(1e-9);
        let secs = |f: fn(&Tick) -> bool| self.series.iter().filter(|t| f(t)).count() as u64;
        let summary = Summary {
            id: sh.opts.id.clone(),
            duration_s: (end_s * 1000.0).round() / 1000.0,
            sent: t[0],
            confirmed: t[1],
            nacked: t[2],
            returned: t[3],
            received: t[4],
            send_rate: t[0] as f64 / dur,
            confirm_rate: t[1] as f64 / dur,
            receive_rate: t[4] as f64 / dur,
            consumer_latency: pct(&self.total.consumer),
            consumer_latency_intended: pct(&self.total.consumer_intended),
            confirm_latency: pct(&self.total.confirm),
            confirm_latency_intended: pct(&self.total.confirm_intended),
            blocked_notifications: sh.blocked_notifications.load(Ordering::SeqCst),
            blocked_seconds: secs(|t| t.blocked),
            stalled_seconds: secs(|t| t.stalled),
            disconnected_seconds: secs(|t| t.disconnected),
            reconnects: sh.reconnects.load(Ordering::SeqCst),
            failure: sh.failure.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            interrupted,
        };
        let events = std::mem::take(&mut *sh.events.lock().unwrap_or_else(|p| p.into_inner()));
        // The options as run, without the password.
        let mut options = sh.opts.clone();
        options.uri = sh.uri.display();
        Report {
            version: 1,
            options,
            summary,
            series: self.series,
            events,
        }
    }
}

/// The broker closed the connection or a channel (`id` is the method): answer with the
/// matching close-ok, so it can finish cleanly, and return the error naming its reason.
fn closed_by_broker(
    d: &mut crate::amqp::wire::Dec<'_>,
    id: Option<(u16, u16)>,
    channel: u16,
    writer: &Writer,
    sh: &Shared,
) -> Error {
    use crate::amqp::wire::{self, m};
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
