//! The protocol-neutral load engine.
//!
//! A protocol is a [`Driver`]: it declares what it measures ([`Schema`]: named counters,
//! latencies and flags), opens its connections and drives its traffic, counting into the
//! [`Ctx`] it is handed. The engine owns everything else, once for every protocol:
//!
//! - the clocks ([`clock`]): every second of the series carries its `CLOCK_MONOTONIC` end;
//! - the pacers ([`pacer`]): when each message or request is *meant* to be sent;
//! - the message layout ([`body`]);
//! - the ticker: once a second it sums the agents' counters, drains their latency
//!   histograms and emits a [`Tick`]; the series, the whole-run histograms and the
//!   [`LoadHeadline`] make the [`Report`];
//! - the end: a duration (a hard deadline: every wait in the engine and the drivers wakes on
//!   the run's [`Stop`]), the driver's own end (message counts), a failure, or the caller's
//!   stop;
//! - sweeps ([`sweep`]): one run per step, each step's window on `CLOCK_MONOTONIC`;
//! - outputs ([`report`]): JSON, CSV and text lines.
//!
//! A driver's agents (threads, or event loops) each count into their own slot, so agents
//! never contend on a cache line; the ticker sums them.
pub mod body;
pub mod clock;
pub mod fleet;
pub mod pacer;
pub mod report;
pub mod stats;
pub mod sweep;

use crate::Error;
use clock::Clock;
use hdrhistogram::Histogram;
use kiln_os::stop::Stop;
use stats::{
    merge, per_second, record, Count, CounterId, Event, Flag, FlagId, LatencyId, Level, LevelId,
    Schema, Tick,
};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

pub use report::{HistogramBlob, LoadHeadline, Report, Step, Throughput};

/// A level not observed (a NaN payload no observation stores: [`Ctx::set_level`] keeps
/// only finite values).
const NO_LEVEL: u64 = u64::MAX;

/// How long agents may take to connect before the load counts as failed to start.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Seconds from a load's start (at `go_mono_ns`) to the end of its first tick, on the
/// grid of whole seconds from `grid` (0: no grid).
fn first_tick_s(grid: u64, go_mono_ns: u64) -> f64 {
    if grid == 0 {
        return 1.0;
    }
    let phase = (go_mono_ns as i128 - grid as i128).rem_euclid(1_000_000_000);
    let s = (1_000_000_000 - phase) as f64 / 1e9;
    if s < 0.05 {
        s + 1.0
    } else {
        s
    }
}

/// A load that `kiln load` and `kiln run` start the same way.
///
/// [`Load::run`] runs until the load's own end (its duration, its message counts, the last
/// step of a sweep) or until `stop` is raised — `kiln run` raises it when its measurement
/// window ends, Ctrl-C raises it too — and returns the [`Report`]; without a duration or
/// counts it runs until `stop`. `on_tick` sees every second as it completes.
pub trait Load: Send {
    /// Protocol name (`amqp`, `mqtt`, `http`).
    fn protocol(&self) -> &'static str;
    /// What the protocol measures (its counters, latencies and flags, and which counter is
    /// the throughput): `kiln run` reads every second through it.
    fn schema(&self) -> &'static Schema;
    /// The counter of completed operations with these options — messages received when
    /// there are consumers, connections held by an idle fleet — which `kiln run` divides
    /// the target's CPU by. Default: the schema's throughput counter.
    fn completed(&self) -> CounterId {
        self.schema().throughput
    }
    /// What fixes the load's size — a rate it was set to, how many producers or
    /// connections drive it — as opposed to what it measured. Default: nothing fixed.
    fn settings(&self) -> Settings {
        Settings::default()
    }
    /// A sweep's schedule: how many steps, each how long. `kiln run` checks its `-d`
    /// against it before the run. Default: no sweep.
    fn schedule(&self) -> Option<(usize, std::time::Duration)> {
        None
    }
    /// The run's label (`--id`).
    fn id(&self) -> &str;
    /// Makes this load end its seconds on the grid of whole seconds from `origin_mono_ns`
    /// (`CLOCK_MONOTONIC`, ns) instead of counting them from its own start: the first
    /// second is shorter (from the start to the first grid instant; one under 50 ms joins
    /// the next), the others end on the grid. `kiln agent` sets it for each load it runs,
    /// with an origin on the controlling host's clock mapped to its own, so that the
    /// seconds of loads driven from several hosts end at the same instants and merge
    /// exactly (counts summed over the same seconds, the same seconds' histograms merged).
    /// 0: every second from the load's start (the default).
    fn align_ticks(&mut self, origin_mono_ns: u64);
    /// The pre-flight check of a load that opens many connections ([`fleet`]): before
    /// any connection, an error naming every shortfall of this machine and what to add,
    /// or lines worth printing (the fleet's account against the limits; with
    /// `--no-preflight`, the shortfalls as warnings). The load runs the same check
    /// again when it starts. Default: nothing to check.
    fn preflight(&self) -> Result<Vec<String>, Error> {
        Ok(Vec::new())
    }
    /// Runs the load. An `Err` means it could not start (bad options, nothing listening,
    /// refused credentials); faults during the run end it with `Ok` and
    /// [`LoadHeadline::failure`] set, keeping the results so far.
    fn run(&mut self, stop: &Stop, on_tick: &mut dyn FnMut(&Tick)) -> Result<Report, Error>;
}

/// What fixes a load's size: set by its options, not measured. `kiln compare` reports a
/// rate as held or not held, never as better or worse.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Settings {
    /// Operations per second in all the load was set to send; `None` for an open-ended
    /// load, a varying rate or a rate sweep.
    pub rate: Option<f64>,
    /// Producers, connections or publishing clients; `None` when a sweep varies it.
    pub concurrency: Option<f64>,
}

/// A protocol's side of a run.
pub trait Driver: Sync {
    /// What the protocol measures.
    fn schema(&self) -> &'static Schema;
    /// How many agents count into the [`Ctx`] (threads or event loops).
    fn agents(&self) -> usize;
    /// The run's label.
    fn id(&self) -> &str;
    /// The run's duration, if it has one.
    fn duration(&self) -> Option<Duration>;
    /// The origin (`CLOCK_MONOTONIC`, ns) of the grid the run's seconds end on; 0: every
    /// second from the start ([`Load::align_ticks`]).
    fn tick_grid_ns(&self) -> u64;
    /// Connects, calls [`Ctx::start_load`] once the load may start, drives the load until
    /// [`Ctx::stop`] is raised, then unblocks and joins its agents and returns. An `Err` (or
    /// [`Ctx::fail`] before the start) means the load could not start.
    fn run(&self, ctx: &Ctx) -> Result<(), Error>;
    /// Whether traffic was expected in the second ending at `at_s` (for the stall flag).
    fn expects_traffic(&self, _ctx: &Ctx, _at_s: f64) -> bool {
        false
    }
    /// The options as run, for the report (no passwords).
    fn options(&self) -> serde_json::Value;
    /// The protocol's own summary of a finished run.
    fn summary(&self, _report: &Report) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// One agent's counters and histograms.
#[derive(Debug)]
struct Agent {
    counters: Box<[AtomicU64]>,
    hists: Mutex<Vec<Option<Histogram<u64>>>>,
}

#[derive(Debug, Default)]
struct FlagState {
    now: AtomicU32,
    pulse: AtomicBool,
}

/// What a driver counts into, and the run's clock and stop.
#[derive(Debug)]
pub struct Ctx {
    schema: &'static Schema,
    clock: Clock,
    stop: Stop,
    caller: Stop,
    agents: Vec<Agent>,
    flags: Vec<FlagState>,
    /// Each level's latest observation, as f64 bits; [`NO_LEVEL`] until one succeeds.
    levels: Vec<AtomicU64>,
    events: Mutex<Vec<Event>>,
    failure: Mutex<Option<String>>,
    go_ns: OnceLock<u64>,
    end_ns: OnceLock<u64>,
    end_s: f64,
}

impl Ctx {
    fn new(
        schema: &'static Schema,
        agents: usize,
        caller: &Stop,
        duration: Option<Duration>,
    ) -> Self {
        let nl = schema.latencies.len();
        Ctx {
            schema,
            clock: Clock::new(),
            stop: caller.child(),
            caller: caller.clone(),
            agents: (0..agents)
                .map(|_| Agent {
                    counters: (0..schema.counters.len())
                        .map(|_| AtomicU64::new(0))
                        .collect(),
                    hists: Mutex::new((0..nl).map(|_| None).collect()),
                })
                .collect(),
            flags: (0..schema.flags.len())
                .map(|_| FlagState::default())
                .collect(),
            levels: (0..schema.levels.len())
                .map(|_| AtomicU64::new(NO_LEVEL))
                .collect(),
            events: Mutex::new(Vec::new()),
            failure: Mutex::new(None),
            go_ns: OnceLock::new(),
            end_ns: OnceLock::new(),
            end_s: duration.map_or(f64::INFINITY, |d| d.as_secs_f64()),
        }
    }

    /// The run's stop: raised at the end (duration, counts, failure, the caller's stop).
    /// Every wait of every agent must wake on it ([`Stop::sleep`]).
    pub fn stop(&self) -> &Stop {
        &self.stop
    }

    /// Whether the run is ending.
    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.is_raised()
    }

    /// The run's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Nanoseconds since the clock's origin.
    #[inline]
    pub fn ns(&self) -> u64 {
        self.clock.ns()
    }

    /// Marks the start of the load (time 0 of the series); later calls do nothing.
    pub fn start_load(&self) {
        let _ = self.go_ns.set(self.clock.ns());
    }

    /// When the load started, ns after the clock's origin (`None` before).
    pub fn go_ns(&self) -> Option<u64> {
        self.go_ns.get().copied()
    }

    /// Waits until the load starts; false if the run ended first.
    pub fn wait_go(&self) -> bool {
        while self.go_ns.get().is_none() {
            if self.stop.sleep(Duration::from_millis(1)) {
                return false;
            }
        }
        true
    }

    /// Seconds since the load started (0 before).
    #[inline]
    pub fn time_s(&self) -> f64 {
        let go = self.go_ns().unwrap_or(0);
        self.ns().saturating_sub(go) as f64 / 1e9
    }

    /// The run's duration in seconds (infinite without one): nothing is scheduled at or
    /// after it.
    pub fn end_s(&self) -> f64 {
        self.end_s
    }

    /// Adds `n` to `counter` of `agent`.
    #[inline]
    pub fn add(&self, agent: usize, counter: CounterId, n: u64) {
        self.agents[agent].counters[counter.index()].fetch_add(n, Ordering::Relaxed);
    }

    /// Records `us` microseconds into `latency` of `agent`.
    pub fn record(&self, agent: usize, latency: LatencyId, us: u64) {
        self.hists(agent).record(latency, us);
    }

    /// The histograms of `agent`, locked, to record several values at once.
    pub fn hists(&self, agent: usize) -> Hists<'_> {
        Hists(
            self.agents[agent]
                .hists
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        )
    }

    /// `flag` holds from now on (counted: one per connection, say).
    pub fn flag_on(&self, flag: FlagId) {
        let f = &self.flags[flag.index()];
        f.now.fetch_add(1, Ordering::SeqCst);
        f.pulse.store(true, Ordering::SeqCst);
    }

    /// One holder of `flag` let go of it.
    pub fn flag_off(&self, flag: FlagId) {
        let _ =
            self.flags[flag.index()]
                .now
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    /// `flag` held for a moment in the current second.
    pub fn flag_pulse(&self, flag: FlagId) {
        self.flags[flag.index()].pulse.store(true, Ordering::SeqCst);
    }

    /// `level` is `value` now (the latest observation; `None`: the observation failed, so
    /// the second has no value rather than a stale one).
    pub fn set_level(&self, level: LevelId, value: Option<f64>) {
        let bits = value
            .filter(|v| v.is_finite())
            .map_or(NO_LEVEL, f64::to_bits);
        self.levels[level.index()].store(bits, Ordering::Relaxed);
    }

    /// The levels' latest observations, in the schema's order.
    fn levels(&self) -> Vec<Level> {
        self.schema
            .levels
            .iter()
            .zip(&self.levels)
            .map(|(def, v)| {
                let bits = v.load(Ordering::Relaxed);
                Level {
                    name: def.name.into(),
                    unit: def.unit.into(),
                    value: (bits != NO_LEVEL).then(|| f64::from_bits(bits)),
                }
            })
            .collect()
    }

    /// Records an event at the current time.
    pub fn event(&self, kind: &str, detail: String) {
        let e = Event {
            time_s: (self.time_s() * 1000.0).round() / 1000.0,
            kind: kind.to_string(),
            detail,
        };
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e);
    }

    /// Records the first failure and ends the run (results so far are kept).
    pub fn fail(&self, what: String) {
        {
            let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
            if f.is_none() {
                *f = Some(what);
            }
        }
        self.stop.raise();
    }

    /// Whether a failure was recorded.
    pub fn failed(&self) -> bool {
        self.failure.lock().map(|f| f.is_some()).unwrap_or(true)
    }

    /// The driver reached its own end (message counts): ends the run.
    pub fn finish(&self) {
        self.stop.raise();
    }

    /// The driver told its agents to stop: the load ends now (messages sent after this are
    /// not expected; those sent before are counted and timed). Called once the stop is
    /// raised; the engine calls it itself if the driver does not.
    pub fn mark_end(&self) {
        let _ = self.end_ns.set(self.clock.ns());
    }

    fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn sums(&self) -> Vec<u64> {
        let mut s = vec![0u64; self.schema.counters.len()];
        for a in &self.agents {
            for (i, c) in a.counters.iter().enumerate() {
                s[i] += c.load(Ordering::Relaxed);
            }
        }
        s
    }
}

/// One agent's latency histograms, locked ([`Ctx::hists`]): several values recorded under
/// one lock, each into the latency its handle names.
#[derive(Debug)]
pub struct Hists<'a>(MutexGuard<'a, Vec<Option<Histogram<u64>>>>);

impl Hists<'_> {
    /// Records `us` microseconds into `latency`.
    #[inline]
    pub fn record(&mut self, latency: LatencyId, us: u64) {
        record(&mut self.0[latency.index()], us);
    }
}

/// Runs `driver` to its end and returns everything measured.
///
/// `stop` ends the run early (Ctrl-C, or `kiln run`'s window); `on_tick` sees every second as
/// it completes. A load that cannot start is an `Err`; a fault during the run ends it with
/// `Ok`, the results so far and [`LoadHeadline::failure`] set.
pub fn run(
    driver: &dyn Driver,
    stop: &Stop,
    on_tick: &mut dyn FnMut(&Tick),
) -> Result<Report, Error> {
    let schema = driver.schema();
    let ctx = Ctx::new(schema, driver.agents(), stop, driver.duration());
    let mut ticker = Ticker::new(schema);
    let mut startup: Option<Error> = None;
    std::thread::scope(|s| {
        let h = std::thread::Builder::new()
            .name("kiln-load".into())
            .spawn_scoped(s, || {
                let r = driver.run(&ctx);
                if r.is_err() {
                    ctx.stop.raise();
                }
                r
            });
        let h = match h {
            Ok(h) => h,
            Err(e) => {
                startup = Some(Error::Start(format!("cannot start the load thread: {e}")));
                return;
            }
        };
        // Wait for the driver to start the load, fail, or give up.
        let t = std::time::Instant::now();
        while ctx.go_ns().is_none() && !ctx.stopping() && !h.is_finished() {
            if t.elapsed() > START_TIMEOUT {
                ctx.fail(format!(
                    "the load did not start within {} s",
                    START_TIMEOUT.as_secs()
                ));
                break;
            }
            ctx.stop.sleep(Duration::from_millis(2));
        }
        if ctx.go_ns().is_none() {
            ctx.stop.raise();
            let r = h.join();
            startup = Some(match r {
                Ok(Err(e)) => e,
                Ok(Ok(())) => match ctx.failure() {
                    Some(f) => Error::Start(f),
                    None if stop.is_raised() => {
                        Error::Start("interrupted before the load started".into())
                    }
                    None => Error::Start("the load ended before it started".into()),
                },
                Err(_) => Error::Start("the load thread panicked".into()),
            });
            return;
        }
        ticker.drive(&ctx, driver, on_tick);
        ctx.stop.raise();
        let r = h.join();
        ctx.mark_end();
        match r {
            Ok(Err(e)) => ctx.fail(e.to_string()),
            Err(_) => ctx.fail("the load thread panicked".into()),
            Ok(Ok(())) => {}
        }
    });
    if let Some(e) = startup {
        return Err(e);
    }
    let go = ctx.go_ns().unwrap_or(0);
    let end_ns = ctx.end_ns.get().copied().unwrap_or_else(|| ctx.ns());
    let end_s = end_ns.saturating_sub(go) as f64 / 1e9;
    // The last partial second, counted after every agent has stopped.
    ticker.tick(&ctx, driver, end_s, on_tick, true);
    Ok(ticker.report(&ctx, driver, end_s))
}

struct Ticker {
    schema: &'static Schema,
    prev: Vec<u64>,
    last_s: f64,
    interval: Vec<Option<Histogram<u64>>>,
    total: Vec<Option<Histogram<u64>>>,
    series: Vec<Tick>,
}

impl Ticker {
    fn new(schema: &'static Schema) -> Self {
        let n = schema.latencies.len();
        Ticker {
            schema,
            prev: vec![0; schema.counters.len()],
            last_s: 0.0,
            interval: (0..n).map(|_| None).collect(),
            total: (0..n).map(|_| None).collect(),
            series: Vec::new(),
        }
    }

    /// Emits a tick every second until the run is due to end or its stop is raised.
    fn drive(&mut self, ctx: &Ctx, driver: &dyn Driver, on_tick: &mut dyn FnMut(&Tick)) {
        let go = ctx.go_ns().unwrap_or(0);
        let mut next = first_tick_s(driver.tick_grid_ns(), ctx.clock.mono_at(go));
        loop {
            let wake_s = next.min(ctx.end_s);
            let at = ctx.clock.instant_at(go + (wake_s * 1e9) as u64);
            if ctx.stop.sleep_until(at) {
                return;
            }
            let now = ctx.time_s();
            if now >= ctx.end_s {
                return;
            }
            if now >= next {
                self.tick(ctx, driver, next, on_tick, false);
                next += 1.0;
            }
        }
    }

    fn tick(
        &mut self,
        ctx: &Ctx,
        driver: &dyn Driver,
        at_s: f64,
        on_tick: &mut dyn FnMut(&Tick),
        last: bool,
    ) {
        let interval_s = at_s - self.last_s;
        let sums = ctx.sums();
        let d: Vec<u64> = sums.iter().zip(&self.prev).map(|(a, b)| a - b).collect();
        for a in &ctx.agents {
            let mut h = a.hists.lock().unwrap_or_else(|p| p.into_inner());
            for (i, h) in h.iter_mut().enumerate() {
                if let Some(h) = h.as_mut().filter(|h| !h.is_empty()) {
                    merge(&mut self.interval[i], h);
                    h.reset();
                }
            }
        }
        let empty = self.interval.iter().flatten().all(|h| h.is_empty());
        if last && interval_s < 0.05 && d.iter().all(|&x| x == 0) && empty {
            return;
        }
        let s = self.schema;
        let mut flags: Vec<Flag> = s
            .flags
            .iter()
            .zip(&ctx.flags)
            .map(|(def, st)| {
                let now = st.now.load(Ordering::SeqCst) > 0;
                Flag {
                    name: def.name.into(),
                    value: st.pulse.swap(now, Ordering::SeqCst) || now,
                }
            })
            .collect();
        if let Some((flag, counter)) = s.stall {
            if d[counter.index()] == 0 && interval_s >= 0.5 && driver.expects_traffic(ctx, at_s) {
                flags[flag.index()].value = true;
            }
        }
        let go = ctx.go_ns().unwrap_or(0);
        let mut tick = Tick {
            histograms: self.interval.clone(),
            time_s: (at_s * 1000.0).round() / 1000.0,
            interval_s: (interval_s * 1000.0).round() / 1000.0,
            end_mono_ns: ctx.clock.mono_at(go + (at_s * 1e9) as u64),
            counters: s.counts(&d),
            latencies: s.latency_percentiles(&self.interval),
            flags,
            levels: ctx.levels(),
            step: None,
        };
        for (t, i) in self.total.iter_mut().zip(self.interval.iter_mut()) {
            if let Some(i) = i.as_mut() {
                merge(t, i);
                i.reset();
            }
        }
        self.prev = sums;
        self.last_s = at_s;
        on_tick(&tick);
        tick.histograms = Vec::new();
        self.series.push(tick);
    }

    fn report(self, ctx: &Ctx, driver: &dyn Driver, end_s: f64) -> Report {
        let s = self.schema;
        let totals = ctx.sums();
        let go = ctx.go_ns().unwrap_or(0);
        let dur = end_s.max(1e-9);
        let flag_seconds = s
            .flags
            .iter()
            .map(|f| Count {
                name: f.name.into(),
                unit: "s".into(),
                value: self.series.iter().filter(|t| t.flag(f.name)).count() as u64,
            })
            .collect();
        let tp = s.counter_def(s.throughput);
        let headline = LoadHeadline {
            protocol: s.protocol.into(),
            id: driver.id().to_string(),
            throughput: Throughput {
                counter: tp.name.into(),
                unit: s.throughput_unit.into(),
                value: per_second(totals[s.throughput.index()], dur),
            },
            duration_s: (end_s * 1000.0).round() / 1000.0,
            start_mono_ns: ctx.clock.mono_at(go),
            end_mono_ns: ctx.clock.mono_at(go + (end_s * 1e9) as u64),
            start_unix_ns: ctx.clock.real_at(go),
            totals: s.counts(&totals),
            latencies: s.latency_percentiles(&self.total),
            flag_seconds,
            failure: ctx.failure(),
            interrupted: ctx.caller.is_raised(),
        };
        let histograms = s
            .latencies
            .iter()
            .zip(&self.total)
            .filter_map(|(l, h)| {
                let h = h.as_ref().filter(|h| !h.is_empty())?;
                HistogramBlob::encode(l.name, h)
            })
            .collect();
        let events = std::mem::take(&mut *ctx.events.lock().unwrap_or_else(|p| p.into_inner()));
        let mut r = Report {
            version: 1,
            protocol: s.protocol.into(),
            options: driver.options(),
            summary: serde_json::Value::Null,
            headline,
            series: self.series,
            events,
            steps: Vec::new(),
            histograms,
        };
        r.summary = driver.summary(&r);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::first_tick_s;

    #[test]
    fn ticks_end_on_the_grid() {
        // No grid: every second from the start.
        assert_eq!(first_tick_s(0, 123_456_789), 1.0);
        // Started 0.3 s past a grid second: the first tick is 0.7 s long.
        let grid = 5_000_000_000;
        assert!((first_tick_s(grid, 12_300_000_000) - 0.7).abs() < 1e-9);
        // A start before the grid's origin is on the same grid.
        assert!((first_tick_s(grid, 1_900_000_000) - 0.1).abs() < 1e-9);
        // Under 50 ms to the next grid second: it joins the one after.
        assert!((first_tick_s(grid, 12_970_000_000) - 1.03).abs() < 1e-9);
        // Exactly on the grid: a whole second.
        assert!((first_tick_s(grid, 13_000_000_000) - 1.0).abs() < 1e-9);
    }
}
