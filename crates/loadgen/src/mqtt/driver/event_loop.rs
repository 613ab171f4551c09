//! The loop itself: connections opened as `-i` allows, timers, publishers that can go
//! on, epoll's events, and the end (the drain, then every connection closed).
use super::{Conn, ConnState, Loop, MqttDriver, Role, Scenario, Track};
use crate::engine::body::LoadId;
use crate::engine::Ctx;
use crate::Error;
use mio::Events;
use mio::Poll;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::time::Duration;

/// How often the levels are observed (the engine takes the latest at each second's end).
const LEVELS_EVERY_NS: u64 = 250_000_000;
/// Connection handshakes in progress at once.
const MAX_HANDSHAKES: usize = 100;

impl<'a> Loop<'a> {
    /// The loop of `d`'s load: every connection waiting to be opened, in its role.
    pub(super) fn new(d: &'a MqttDriver, ctx: &'a Ctx) -> Result<Self, Error> {
        let o = &d.opts;
        let (npubs, nsubs) = match o.scenario {
            Scenario::Conn => (0, 0),
            Scenario::Pub => (o.count, 0),
            Scenario::Sub => (0, o.count),
            Scenario::PubSub => (o.count, o.subscribers),
        };
        let shared = o.sub_filter(0).starts_with("$share/");
        let poll = Poll::new().map_err(|e| Error::Start(format!("epoll: {e}")))?;
        let total = o.connections() as usize;
        let mut conns = Vec::with_capacity(total);
        for i in 0..total as u32 {
            let role = match o.scenario {
                Scenario::Conn => Role::Idle,
                Scenario::Pub => Role::Publisher(i),
                Scenario::Sub => Role::Subscriber(i),
                Scenario::PubSub if i < nsubs => Role::Subscriber(i),
                Scenario::PubSub => Role::Publisher(i - nsubs),
            };
            conns.push(Conn::new(role));
        }
        let n_tracks = if nsubs == 0 {
            0
        } else if shared {
            1
        } else {
            nsubs as usize
        };
        Ok(Loop {
            opts: o,
            driver: d,
            ctx,
            poll,
            conns,
            timers: BinaryHeap::new(),
            ready: VecDeque::new(),
            read_buf: vec![0; 64 * 1024],
            packet_buf: Vec::with_capacity(64 * 1024),
            tracks: (0..n_tracks)
                .map(|_| vec![Track::default(); npubs as usize])
                .collect(),
            shared_subscription: shared,
            publishers: npubs,
            subscribers: nsubs,
            subscribed: 0,
            opened: 0,
            refusals: BTreeMap::new(),
            drops: BTreeMap::new(),
            failures: BTreeMap::new(),
            first_error: None,
            load_started: false,
            persistent_session: !o.clean,
            publishers_done: 0,
            load_id: o.load_id.unwrap_or_else(LoadId::random),
            other_loads: 0,
            from_run: 0,
            layouts_told: [false; 2],
            unjudged: None,
        })
    }

    /// Nanoseconds since the load's clock started.
    pub(super) fn now(&self) -> u64 {
        self.ctx.ns()
    }

    /// The broker, as messages name it.
    pub(super) fn uri(&self) -> String {
        self.opts.display()
    }

    /// Arms a timer of connection `i` at `at`.
    pub(super) fn timer(&mut self, at: u64, i: u32) {
        self.timers.push(Reverse((at, i)));
    }

    /// Connections to open at start: subscribers first, then the rest once every
    /// subscriber has its SUBACK.
    pub(super) fn launch_limit(&self) -> u32 {
        if self.opts.scenario == Scenario::PubSub && self.subscribed < self.subscribers {
            self.subscribers
        } else {
            self.conns.len() as u32
        }
    }

    /// Runs the load to its end: the drain after the engine's stop, then every
    /// connection closed and what was never delivered counted.
    pub(super) fn run(&mut self) -> Result<(), Error> {
        let mut events = Events::with_capacity(1024);
        let interval_ns = (self.opts.interval_ms * 1e6) as u64;
        // When the next connection may open (`-i`).
        let mut launch_clock = self.now();
        let mut draining: Option<u64> = None;
        let mut levels_at = 0u64;
        loop {
            let now = self.now();
            if now >= levels_at {
                self.observe_levels();
                levels_at = now + LEVELS_EVERY_NS;
            }
            if draining.is_none() {
                self.open_due(now, interval_ns, &mut launch_clock);
            }
            if let Some(e) = self.first_error.take() {
                if !self.load_started {
                    self.close_all();
                    return Err(e);
                }
                self.ctx.fail(e.to_string());
            }
            self.fire_timers(now);
            self.pump_ready();
            // The end: stop publishing, let subscribers drain, then leave.
            if self.ctx.stopping() && draining.is_none() {
                if self.subscribers == 0 || !self.load_started {
                    break;
                }
                draining = Some(self.now() + self.opts.drain.as_nanos() as u64);
            }
            if let Some(until) = draining {
                if self.now() >= until || self.all_delivered() {
                    break;
                }
            }
            let timeout = self.poll_timeout(draining.is_none(), launch_clock);
            self.poll_events(&mut events, timeout)?;
            if self.opts.limit > 0
                && self.publishers > 0
                && self.publishers_done >= self.publishers
                && !self.ctx.stopping()
            {
                self.ctx.finish();
            }
        }
        self.ctx.mark_end();
        // The last second's levels as the load ends (its drain included).
        self.observe_levels();
        self.close_all();
        self.account_tail();
        Ok(())
    }

    /// Opens the connections due as -i allows, at most [`MAX_HANDSHAKES`] handshakes at a
    /// time: brokers listen with small backlogs (mosquitto: 100), and a dropped SYN costs
    /// a 1 s retransmit.
    fn open_due(&mut self, now: u64, interval_ns: u64, launch_clock: &mut u64) {
        let pending = self
            .conns
            .iter()
            .take(self.opened as usize)
            .rev()
            .take(MAX_HANDSHAKES)
            .filter(|c| matches!(c.state, ConnState::Connecting | ConnState::Handshake))
            .count();
        let mut budget = MAX_HANDSHAKES.saturating_sub(pending);
        while self.opened < self.launch_limit()
            && budget > 0
            && (interval_ns == 0 || *launch_clock <= now)
        {
            let i = self.opened;
            self.opened += 1;
            *launch_clock += interval_ns;
            budget -= 1;
            self.open(i);
            if self.first_error.is_some() {
                break;
            }
        }
    }

    /// Runs the timers that are due.
    fn fire_timers(&mut self, now: u64) {
        while let Some(&Reverse((at, i))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            self.on_timer(i as usize, now);
        }
    }

    /// Lets the publishers that can go on publish (each once; those with more to send
    /// queue again).
    fn pump_ready(&mut self) {
        let n = self.ready.len();
        for _ in 0..n {
            let Some(i) = self.ready.pop_front() else {
                break;
            };
            self.pump(i as usize);
        }
    }

    /// How long epoll may wait: until the next timer (50 ms at most), not at all while
    /// publishers are ready, and no later than the next connection to open.
    fn poll_timeout(&self, launching: bool, launch_clock: u64) -> Duration {
        let mut timeout = self
            .timers
            .peek()
            .map(|&Reverse((at, _))| Duration::from_nanos(at.saturating_sub(self.now())))
            .unwrap_or(Duration::from_millis(50))
            .min(Duration::from_millis(50));
        if !self.ready.is_empty() {
            timeout = Duration::ZERO;
        }
        if self.opened < self.launch_limit() && launching {
            timeout = timeout.min(Duration::from_nanos(
                launch_clock.saturating_sub(self.now()).min(10_000_000),
            ));
        }
        timeout
    }

    /// Waits for socket events (at most `timeout`) and handles them.
    fn poll_events(&mut self, events: &mut Events, timeout: Duration) -> Result<(), Error> {
        if let Err(e) = self.poll.poll(events, Some(timeout)) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(Error::Start(format!("epoll: {e}")));
            }
        }
        for ev in events.iter() {
            let i = ev.token().0;
            if i >= self.conns.len() {
                continue;
            }
            if ev.is_writable() {
                self.on_writable(i);
            }
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                self.on_readable(i);
            }
        }
        Ok(())
    }
}
