//! The MQTT driver: one event loop (epoll through mio) holding every connection.
//!
//! Nothing per connection but its socket and a small [`Conn`]: buffers are allocated only
//! while a packet is half-read or a write is half-done, so an idle connection costs a few
//! hundred bytes of the client's memory (the socket buffers are the kernel's). Timers
//! (keepalive pings, connect timeouts, publish schedules, reconnects) sit in one heap.
use super::codec::{self, kind, Packet};
use super::options::{MqttOptions, Scenario};
use crate::engine::body::{self, LoadId, Origin, Stamp};
use crate::engine::fleet;
use crate::engine::pacer::{Constant, Schedule};
use crate::engine::stats::{
    metrics, CounterDef, CounterId, FlagDef, LatencyDef, LevelDef, Schema, Show,
};
use crate::engine::{Ctx, Driver, Report};
use crate::Error;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::io::{Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Mutex;
use std::time::Duration;

metrics! {
    counters(COUNTERS) {
        connected, failed, dropped, reconnects, pings, pongs, sent, acked, received, lost,
        duplicated, out_of_order, refused, foreign,
    }
    latencies(LATENCIES) {
        connect_latency, ping_latency, latency, latency_intended, ack_latency,
    }
    flags(FLAGS) { disconnected, stalled }
    levels(LEVELS) { in_flight, undelivered }
}

const LEVELS: &[LevelDef] = &[
    LevelDef {
        name: "in_flight",
        unit: "msg",
        description: "QoS 1 and 2 messages published and not yet acknowledged by the broker \
                      (PUBACK, PUBCOMP), at the end of the second",
    },
    LevelDef {
        name: "undelivered",
        unit: "msg",
        description: "this load's messages sent and not yet received by its subscribers (each \
                      subscriber's copy counted), at the end of the second",
    },
];

const COUNTERS: &[CounterDef] = &[
    CounterDef::new("connected", "conn", "connections accepted (CONNACK success)", Show::NonZero).rate("connect rate"),
    CounterDef::new("failed", "conn", "connection attempts that failed or were refused", Show::NonZero),
    CounterDef::new("dropped", "conn", "established connections lost", Show::NonZero),
    CounterDef::new("reconnects", "conn", "connections established again (--reconnect)", Show::NonZero),
    CounterDef::new("pings", "ping", "PINGREQ sent", Show::NonZero),
    CounterDef::new("pongs", "ping", "PINGRESP received", Show::NonZero),
    CounterDef::new("sent", "msg", "PUBLISH written", Show::NonZero).rate("sending rate"),
    CounterDef::new("acked", "msg", "PUBACK (QoS 1) or PUBCOMP (QoS 2) received", Show::NonZero).rate("ack rate"),
    CounterDef::new("received", "msg", "PUBLISH delivered to subscribers", Show::NonZero).rate("receiving rate"),
    CounterDef::new("lost", "msg", "messages a subscriber never received (gaps in a publisher's sequence, and its tail after the drain)", Show::NonZero),
    CounterDef::new("duplicated", "msg", "messages a subscriber received again", Show::NonZero),
    CounterDef::new("out_of_order", "msg", "messages received after a later one of the same publisher", Show::NonZero),
    CounterDef::new("refused", "packet", "CONNACK/SUBACK/PUBACK refusals and server DISCONNECTs (by reason code name in events)", Show::NonZero),
    CounterDef::new("foreign", "msg", "messages received in pubsub that this load did not publish (other loads and clients on the topics, or a previous run's backlog): counted, never as duplicates or losses", Show::NonZero),
];

const LATENCIES: &[LatencyDef] = &[
    LatencyDef {
        name: "connect_latency",
        csv: "connect",
        line_label: "connect latency",
        summary_label: "connect latency (TCP connect to CONNACK)",
        description: "TCP connect to CONNACK",
    },
    LatencyDef {
        name: "ping_latency",
        csv: "ping",
        line_label: "ping",
        summary_label: "ping round trip",
        description: "PINGREQ to PINGRESP",
    },
    LatencyDef {
        name: "latency",
        csv: "latency",
        line_label: "min/median/75th/95th/99th/99.9th/max latency",
        summary_label: "end-to-end latency",
        description: "publish (send time in the message) to delivery",
    },
    LatencyDef {
        name: "latency_intended",
        csv: "latency_intended",
        line_label: "from intended send",
        summary_label: "end-to-end latency from intended send",
        description: "intended send time to delivery (no coordinated omission)",
    },
    LatencyDef {
        name: "ack_latency",
        csv: "ack",
        line_label: "ack latency",
        summary_label: "publish to PUBACK/PUBCOMP",
        description: "PUBLISH written to PUBACK (QoS 1) or PUBCOMP (QoS 2)",
    },
];

const FLAGS: &[FlagDef] = &[
    FlagDef {
        name: "disconnected",
        marker: "DISCONNECTED",
        description: "a connection was down",
    },
    FlagDef {
        name: "stalled",
        marker: "STALLED",
        description: "publishers had messages due but sent none",
    },
];

const fn schema(throughput: CounterId, unit: &'static str) -> Schema {
    Schema {
        protocol: "mqtt",
        counters: COUNTERS,
        latencies: LATENCIES,
        flags: FLAGS,
        levels: LEVELS,
        throughput,
        throughput_unit: unit,
        sent: M.sent,
        stall: Some((M.stalled, M.sent)),
    }
}

/// What `conn` measures (throughput: connections per second).
pub static SCHEMA_CONN: Schema = schema(M.connected, "conn/s");
/// What `pub` measures (throughput: messages sent per second).
pub static SCHEMA_PUB: Schema = schema(M.sent, "msg/s");
/// What `sub` and `pubsub` measure (throughput: messages received per second).
pub static SCHEMA_SUB: Schema = schema(M.received, "msg/s");

/// Per-publisher delivery accounting, as seen by the subscribers.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Delivery {
    /// Publisher index.
    pub publisher: u32,
    /// Messages it wrote.
    pub sent: u64,
    /// Messages subscribers received from it (each subscriber counts; duplicates too).
    pub received: u64,
    /// Never received.
    pub lost: u64,
    /// Received again.
    pub duplicated: u64,
    /// Received after a later message.
    pub out_of_order: u64,
    /// Not received by this load's subscribers, and not judged lost: a shared subscription
    /// whose group other loads' subscribers share (they may have received them).
    #[serde(default)]
    pub not_received_here: u64,
}

/// One subscriber's (or a shared group's) view of one publisher's sequence.
#[derive(Debug, Clone, Default)]
struct Track {
    /// Highest sequence seen + 1 (0: none yet).
    next: u64,
    /// Bit i set: sequence `next - 1 - i` was seen (the last 1024).
    seen: [u64; 16],
    missing: u64,
    received: u64,
    dup: u64,
    ooo: u64,
}

/// What a connection writes: a PUBLISH sent for the first time is counted as sent once
/// its last byte is written; everything else (control packets, resent PUBLISHes) is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    Control,
    Publish,
}

/// What a received sequence number was to its track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// The next one, or later (the ones between are missing until they come).
    InOrder,
    /// One missing until now, or one too old to tell: first seen, out of order.
    Late,
    /// Seen before.
    Duplicate,
}

impl Track {
    fn see(&mut self, seq: u64) -> Seen {
        self.received += 1;
        if seq >= self.next {
            let gap = seq - self.next;
            self.missing += gap;
            self.shift(gap + 1);
            self.seen[0] |= 1;
            self.next = seq + 1;
            return Seen::InOrder;
        }
        let back = self.next - 1 - seq;
        if back >= 1024 {
            // Too old to tell: counted as out of order.
            self.ooo += 1;
            self.missing = self.missing.saturating_sub(1);
            return Seen::Late;
        }
        let (w, b) = ((back / 64) as usize, back % 64);
        if self.seen[w] >> b & 1 == 1 {
            self.dup += 1;
            Seen::Duplicate
        } else {
            self.seen[w] |= 1 << b;
            self.ooo += 1;
            self.missing = self.missing.saturating_sub(1);
            Seen::Late
        }
    }

    fn shift(&mut self, by: u64) {
        if by >= 1024 {
            self.seen = [0; 16];
            return;
        }
        let (words, bits) = ((by / 64) as usize, (by % 64) as u32);
        for i in (0..16).rev() {
            let hi = if i >= words { self.seen[i - words] } else { 0 };
            let lo = if i > words {
                self.seen[i - words - 1]
            } else {
                0
            };
            self.seen[i] = if bits == 0 {
                hi
            } else {
                hi << bits | lo >> (64 - bits)
            };
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Idle,
    Pub(u32),
    Sub(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// Not yet opened, or waiting to reconnect.
    Waiting,
    /// TCP connecting.
    Connecting,
    /// CONNECT sent.
    Handshake,
    /// SUBSCRIBE sent.
    Subscribing,
    Ready,
    Closed,
}

/// One connection.
struct Conn {
    sock: Option<TcpStream>,
    role: Role,
    st: St,
    /// Bytes of a packet not yet complete.
    rbuf: Vec<u8>,
    /// Bytes not yet written, from `wpos`.
    wbuf: Vec<u8>,
    wpos: usize,
    /// End offsets in `wbuf` of PUBLISH packets not yet fully written.
    ends: VecDeque<usize>,
    wblocked: bool,
    started_ns: u64,
    last_tx_ns: u64,
    ping_ns: u64,
    ever: bool,
    /// Publisher state.
    pubs: Option<Box<PubState>>,
    /// QoS 2 packet ids received and not yet released (subscribers).
    rel: Vec<u16>,
    /// MQTT 5 topic aliases the server allows.
    alias_max: u16,
}

/// A QoS 1/2 message not yet acknowledged.
struct Inflight {
    pid: u16,
    sent_ns: u64,
    /// PUBREC received (QoS 2): PUBREL is what to send again.
    released: bool,
    /// Wholly written to a socket once (counted as sent).
    written: bool,
    /// The PUBLISH, kept only with a persistent session, to send again (DUP) after a
    /// reconnect.
    packet: Vec<u8>,
}

struct PubState {
    schedule: Option<Schedule>,
    seq: u32,
    /// Messages encoded (sequence numbers used).
    sent: u64,
    /// Of those, never written (their connection closed first).
    unsent: u64,
    next_pid: u16,
    inflight: VecDeque<Inflight>,
    window: u16,
    alias_set: bool,
    topic: Vec<u8>,
    done: bool,
}

/// What a run leaves besides its counters.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub deliveries: Vec<Delivery>,
    /// The load's identity in its messages (pub, pubsub).
    pub load: Option<LoadId>,
    /// Shared subscription with other loads in the group: messages not received here.
    pub unjudged: Option<u64>,
    /// Foreign messages of the run's other agents (the same nonce).
    pub from_run: u64,
    pub refusals: BTreeMap<String, u64>,
    pub drops: BTreeMap<String, u64>,
    pub failures: BTreeMap<String, u64>,
}

/// Distinct reasons kept for lost connections and for failed connection attempts; the
/// rest are counted under one line.
const MAX_REASONS: usize = 20;

/// Counts `why` in `reasons` (control characters shown safely, cut to `max` characters),
/// under "other reasons" once [`MAX_REASONS`] distinct ones are kept.
fn count_reason(reasons: &mut BTreeMap<String, u64>, why: &str, max: usize) {
    let key = kiln_model::text::clean_cut(why, max).into_owned();
    let key = if reasons.len() < MAX_REASONS || reasons.contains_key(&key) {
        key
    } else {
        "other reasons".to_string()
    };
    *reasons.entry(key).or_insert(0) += 1;
}

/// An MQTT load, ready to run.
#[derive(Debug)]
pub struct MqttDriver {
    opts: MqttOptions,
    addr: SocketAddr,
    /// Filled at the end of the run: per-publisher delivery, refusals by name, lost
    /// connections and failed connection attempts by reason.
    outcome: Mutex<Outcome>,
    spread: fleet::Spread,
}

impl MqttDriver {
    /// Checks the options, resolves the host and runs the pre-flight check (see
    /// [`fleet`]): the connections' source addresses, ports, open files (the soft limit
    /// raised as far as they need) and memory, before any connection.
    pub fn new(opts: MqttOptions) -> Result<Self, Error> {
        opts.validate()?;
        let addr = resolve(&opts)?;
        let plan = fleet::preflight(&fleet_of(&opts, addr), opts.no_preflight)?;
        Ok(MqttDriver {
            opts,
            addr,
            spread: fleet::Spread::new(plan.sources),
            outcome: Mutex::new(Outcome::default()),
        })
    }
}

/// The broker's address.
fn resolve(opts: &MqttOptions) -> Result<SocketAddr, Error> {
    (opts.host.as_str(), opts.port)
        .to_socket_addrs()
        .map_err(|e| Error::Connect {
            uri: opts.display(),
            source: e,
        })?
        .next()
        .ok_or_else(|| Error::Connect {
            uri: opts.display(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "host has no address"),
        })
}

/// Memory per idle connection on kiln's side: 0.22 KiB of kiln's own (RSS growth with
/// 10,000 idle connections, 2026-11-26) on top of the kernel's socket.
const KILN_BYTES_PER_CONNECTION: u64 = 230;

/// What `opts` opens, for the pre-flight check: publishers also hold a message of
/// `-s` bytes per unacknowledged slot.
fn fleet_of(opts: &MqttOptions, addr: SocketAddr) -> fleet::Fleet {
    let publishing = matches!(opts.scenario, Scenario::Pub | Scenario::PubSub);
    let per_pub = if publishing {
        (opts.size as u64 + 64) * opts.inflight as u64
    } else {
        0
    };
    let conns = opts.connections();
    let pubs = if publishing { opts.count as u64 } else { 0 };
    let base = fleet::KERNEL_BYTES_PER_CONNECTION + KILN_BYTES_PER_CONNECTION;
    fleet::Fleet {
        connections: conns,
        destination: addr,
        sources: opts.source_addresses.clone(),
        bytes_per_connection: base + per_pub * pubs / conns.max(1),
    }
}

/// The pre-flight check of `opts` (a sweep's largest step): what `kiln load` and
/// `kiln run` print before the load starts.
pub fn preflight(opts: &MqttOptions) -> Result<fleet::Plan, Error> {
    opts.validate()?;
    let addr = resolve(opts)?;
    fleet::preflight(&fleet_of(opts, addr), opts.no_preflight)
}

/// How often the levels are observed (the engine takes the latest at each second's end).
const LEVELS_EVERY_NS: u64 = 250_000_000;

struct Loop<'a> {
    o: &'a MqttOptions,
    d: &'a MqttDriver,
    ctx: &'a Ctx,
    poll: Poll,
    conns: Vec<Conn>,
    timers: BinaryHeap<Reverse<(u64, u32)>>,
    /// Publishers that can publish now (as fast as possible, or a window that opened).
    ready: VecDeque<u32>,
    scratch: Vec<u8>,
    out: Vec<u8>,
    tracks: Vec<Vec<Track>>,
    shared: bool,
    npubs: u32,
    nsubs: u32,
    subs_ready: u32,
    launched: u32,
    refusals: BTreeMap<String, u64>,
    /// Lost connections by reason (a malformed packet and what was wrong with it, the
    /// broker's DISCONNECT, a reset...), as `sub` names them when one ends its run.
    drops: BTreeMap<String, u64>,
    /// Connection attempts that failed, by reason (at most [`MAX_REASONS`] distinct).
    failures: BTreeMap<String, u64>,
    first_error: Option<Error>,
    go: bool,
    /// Sessions outlive connections (clean session off): unacknowledged messages are sent
    /// again after a reconnect.
    persistent: bool,
    pubs_done: u32,
    sent_total: u64,
    /// This load's identity in its messages.
    me: LoadId,
    /// Foreign messages stamped by another kiln load (layout 2).
    other_loads: u64,
    /// Of those, the run's other agents' (the same nonce).
    from_run: u64,
    /// Foreign messages of layout 1 or of a layout unknown here, told once each.
    told_layouts: [bool; 2],
    /// Shared subscription with other loads' subscribers in the group: messages of this
    /// load not received here, not judged lost.
    unjudged: Option<u64>,
}

/// What a scenario measures.
pub fn schema_for(opts: &MqttOptions) -> &'static Schema {
    match opts.scenario {
        Scenario::Conn => &SCHEMA_CONN,
        Scenario::Pub => &SCHEMA_PUB,
        Scenario::Sub | Scenario::PubSub => &SCHEMA_SUB,
    }
}

impl Driver for MqttDriver {
    fn schema(&self) -> &'static Schema {
        schema_for(&self.opts)
    }

    fn agents(&self) -> usize {
        1
    }

    fn id(&self) -> &str {
        &self.opts.id
    }

    fn duration(&self) -> Option<Duration> {
        self.opts.time
    }

    fn run(&self, ctx: &Ctx) -> Result<(), Error> {
        let o = &self.opts;
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
                Scenario::Pub => Role::Pub(i),
                Scenario::Sub => Role::Sub(i),
                Scenario::PubSub if i < nsubs => Role::Sub(i),
                Scenario::PubSub => Role::Pub(i - nsubs),
            };
            conns.push(Conn {
                sock: None,
                role,
                st: St::Waiting,
                rbuf: Vec::new(),
                wbuf: Vec::new(),
                wpos: 0,
                ends: VecDeque::new(),
                wblocked: false,
                started_ns: 0,
                last_tx_ns: 0,
                ping_ns: 0,
                ever: false,
                pubs: None,
                rel: Vec::new(),
                alias_max: 0,
            });
        }
        let n_tracks = if nsubs == 0 {
            0
        } else if shared {
            1
        } else {
            nsubs as usize
        };
        let mut lp = Loop {
            o,
            d: self,
            ctx,
            poll,
            conns,
            timers: BinaryHeap::new(),
            ready: VecDeque::new(),
            scratch: vec![0; 64 * 1024],
            out: Vec::with_capacity(64 * 1024),
            tracks: (0..n_tracks)
                .map(|_| vec![Track::default(); npubs as usize])
                .collect(),
            shared,
            npubs,
            nsubs,
            subs_ready: 0,
            launched: 0,
            refusals: BTreeMap::new(),
            drops: BTreeMap::new(),
            failures: BTreeMap::new(),
            first_error: None,
            go: false,
            persistent: !o.clean,
            pubs_done: 0,
            sent_total: 0,
            me: o.load_id.unwrap_or_else(LoadId::random),
            other_loads: 0,
            from_run: 0,
            told_layouts: [false; 2],
            unjudged: None,
        };
        let r = lp.run();
        let deliveries = lp.deliveries();
        let mut out = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
        *out = Outcome {
            deliveries,
            load: (npubs > 0).then_some(lp.me),
            unjudged: lp.unjudged,
            from_run: lp.from_run,
            refusals: std::mem::take(&mut lp.refusals),
            drops: std::mem::take(&mut lp.drops),
            failures: std::mem::take(&mut lp.failures),
        };
        r
    }

    fn expects_traffic(&self, _ctx: &Ctx, _at_s: f64) -> bool {
        let o = &self.opts;
        matches!(o.scenario, Scenario::Pub | Scenario::PubSub)
            && (o.pub_interval_ms == 0.0 || o.count as f64 * 1000.0 / o.pub_interval_ms >= 2.0)
            && o.limit == 0
    }

    fn options(&self) -> serde_json::Value {
        serde_json::to_value(&self.opts).unwrap_or_default()
    }

    fn summary(&self, r: &Report) -> serde_json::Value {
        let out = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
        serde_json::to_value(super::report::Summary::of(&self.opts, r, &out)).unwrap_or_default()
    }
}

impl MqttOptions {
    /// The topic of client `i` (`%i` and `%c` replaced).
    pub(crate) fn topic_for(&self, i: u32) -> String {
        self.topic
            .replace("%i", &i.to_string())
            .replace("%c", &self.client_id(i))
    }

    /// The filter subscriber `i` subscribes to.
    pub(crate) fn sub_filter(&self, i: u32) -> String {
        match (&self.sub_topic, self.scenario) {
            (Some(t), _) => t
                .replace("%i", &i.to_string())
                .replace("%c", &self.client_id(i)),
            (None, Scenario::PubSub) => self.topic.replace("%i", "+").replace("%c", "+"),
            (None, _) => self.topic_for(i),
        }
    }

    /// The client id of connection `i`.
    pub(crate) fn client_id(&self, i: u32) -> String {
        format!("{}_{}_{i}", self.prefix, std::process::id())
    }
}

const RECONNECT_NS: u64 = 1_000_000_000;
/// Connection handshakes in progress at once.
const MAX_HANDSHAKES: usize = 100;

impl Loop<'_> {
    fn now(&self) -> u64 {
        self.ctx.ns()
    }

    fn uri(&self) -> String {
        self.o.display()
    }

    fn timer(&mut self, at: u64, i: u32) {
        self.timers.push(Reverse((at, i)));
    }

    /// Connections to open at start: subscribers first, then the rest once every
    /// subscriber has its SUBACK.
    fn launch_limit(&self) -> u32 {
        if self.o.scenario == Scenario::PubSub && self.subs_ready < self.nsubs {
            self.nsubs
        } else {
            self.conns.len() as u32
        }
    }

    fn run(&mut self) -> Result<(), Error> {
        let mut events = Events::with_capacity(1024);
        let interval_ns = (self.o.interval_ms * 1e6) as u64;
        let launch_start = self.now();
        let mut launch_clock = launch_start;
        let mut draining: Option<u64> = None;
        let mut levels_at = 0u64;
        loop {
            let now = self.now();
            if now >= levels_at {
                self.observe_levels();
                levels_at = now + LEVELS_EVERY_NS;
            }
            // Open connections as -i allows, at most 100 handshakes at a time: brokers listen
            // with small backlogs (mosquitto: 100), and a dropped SYN costs a 1 s retransmit.
            let pending = self
                .conns
                .iter()
                .take(self.launched as usize)
                .rev()
                .take(MAX_HANDSHAKES)
                .filter(|c| matches!(c.st, St::Connecting | St::Handshake))
                .count();
            let mut budget = MAX_HANDSHAKES.saturating_sub(pending);
            while draining.is_none()
                && self.launched < self.launch_limit()
                && budget > 0
                && (interval_ns == 0 || launch_clock <= now)
            {
                let i = self.launched;
                self.launched += 1;
                launch_clock += interval_ns;
                budget -= 1;
                self.open(i);
                if self.first_error.is_some() {
                    break;
                }
            }
            if let Some(e) = self.first_error.take() {
                if !self.go {
                    self.close_all();
                    return Err(e);
                }
                self.ctx.fail(e.to_string());
            }
            // Timers.
            while let Some(&Reverse((at, i))) = self.timers.peek() {
                if at > now {
                    break;
                }
                self.timers.pop();
                self.on_timer(i as usize, now);
            }
            // Publishers that can go on.
            let n = self.ready.len();
            for _ in 0..n {
                let Some(i) = self.ready.pop_front() else {
                    break;
                };
                self.pump(i as usize);
            }
            // The end: stop publishing, let subscribers drain, then leave.
            if self.ctx.stopping() && draining.is_none() {
                if self.nsubs == 0 || !self.go {
                    break;
                }
                draining = Some(self.now() + self.o.drain.as_nanos() as u64);
            }
            if let Some(until) = draining {
                if self.now() >= until || self.all_delivered() {
                    break;
                }
            }
            let mut timeout = self
                .timers
                .peek()
                .map(|&Reverse((at, _))| Duration::from_nanos(at.saturating_sub(self.now())))
                .unwrap_or(Duration::from_millis(50))
                .min(Duration::from_millis(50));
            if !self.ready.is_empty() {
                timeout = Duration::ZERO;
            }
            if self.launched < self.launch_limit() && draining.is_none() {
                timeout = timeout.min(Duration::from_nanos(
                    launch_clock.saturating_sub(self.now()).min(10_000_000),
                ));
            }
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
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
            if self.o.limit > 0
                && self.npubs > 0
                && self.pubs_done >= self.npubs
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

    /// The levels of the second so far: messages awaiting the broker's acknowledgement,
    /// and this load's messages its subscribers have not received yet (left unobserved
    /// with a shared subscription, whose subscribers each get only part, or too many pairs
    /// of publishers and subscribers to count four times a second).
    fn observe_levels(&self) {
        let in_flight: usize = self
            .conns
            .iter()
            .filter_map(|c| c.pubs.as_ref())
            .map(|ps| ps.inflight.len())
            .sum();
        self.ctx
            .set_level(M.in_flight, (self.npubs > 0).then_some(in_flight as f64));
        let pairs = self.npubs as u64 * self.tracks.len() as u64;
        let undelivered = (self.npubs > 0 && self.nsubs > 0 && !self.shared && pairs <= 100_000)
            .then(|| {
                let mut want = 0u64;
                let mut got = 0u64;
                for (p, sent) in self.pub_sent().iter().enumerate() {
                    for t in &self.tracks {
                        want += sent;
                        got += t[p].next.min(*sent).saturating_sub(t[p].missing);
                    }
                }
                want.saturating_sub(got) as f64
            });
        self.ctx.set_level(M.undelivered, undelivered);
    }

    fn all_delivered(&self) -> bool {
        let mut want = 0u64;
        let mut got = 0u64;
        for (p, sent) in self.pub_sent().iter().enumerate() {
            for t in &self.tracks {
                want += sent;
                got += t[p].next.min(*sent).saturating_sub(t[p].missing);
            }
        }
        got >= want
    }

    /// Per publisher: messages encoded (sequence numbers used), and of those never written.
    fn pub_counts(&self) -> Vec<(u64, u64)> {
        let mut v = vec![(0u64, 0u64); self.npubs as usize];
        for c in &self.conns {
            if let (Role::Pub(p), Some(ps)) = (c.role, &c.pubs) {
                v[p as usize] = (ps.sent, ps.unsent);
            }
        }
        v
    }

    fn pub_sent(&self) -> Vec<u64> {
        self.pub_counts().iter().map(|c| c.0).collect()
    }

    /// Messages never received by the end: each subscriber's gaps and tail of each
    /// publisher's sequence, less the messages that were never written. With a shared
    /// subscription whose group other loads' subscribers share (their messages came here),
    /// this load's subscribers get only part of its messages: the rest is not judged lost
    /// but kept as not received here (the run as a whole judges delivery).
    fn account_tail(&mut self) {
        let counts = self.pub_counts();
        let mut lost = 0;
        for t in &mut self.tracks {
            for (p, &(encoded, unsent)) in counts.iter().enumerate() {
                let tail = encoded.saturating_sub(t[p].next);
                t[p].missing = (t[p].missing + tail).saturating_sub(unsent);
                lost += t[p].missing;
            }
        }
        if self.shared && self.other_loads > 0 {
            self.unjudged = Some(lost);
        } else {
            self.ctx.add(0, M.lost, lost);
        }
    }

    fn deliveries(&self) -> Vec<Delivery> {
        let counts = self.pub_counts();
        (0..self.npubs as usize)
            .map(|p| {
                let mut d = Delivery {
                    publisher: p as u32,
                    sent: counts[p].0 - counts[p].1,
                    ..Default::default()
                };
                for t in &self.tracks {
                    d.received += t[p].received;
                    match self.unjudged {
                        Some(_) => d.not_received_here += t[p].missing,
                        None => d.lost += t[p].missing,
                    }
                    d.duplicated += t[p].dup;
                    d.out_of_order += t[p].ooo;
                }
                d
            })
            .collect()
    }

    fn open(&mut self, i: u32) {
        let now = self.now();
        let r = self.d.spread.connect(i as usize, self.d.addr);
        let c = &mut self.conns[i as usize];
        c.started_ns = now;
        match r {
            Ok((mut s, _)) => {
                if let Err(e) = self.poll.registry().register(
                    &mut s,
                    Token(i as usize),
                    Interest::READABLE | Interest::WRITABLE,
                ) {
                    self.failed(i as usize, format!("epoll: {e}"));
                    return;
                }
                c.sock = Some(s);
                c.st = St::Connecting;
                c.wblocked = true;
                let at = now + self.o.connect_timeout.as_nanos() as u64;
                self.timer(at, i);
            }
            Err(e) if e.out_of_ports => {
                let err = Error::Start(format!(
                    "connection {} of {} to {}: {e}",
                    i + 1,
                    self.conns.len(),
                    self.uri()
                ));
                let why = format!("cannot connect: {e}");
                self.failed_because(i as usize, err, why);
            }
            Err(e) => {
                let err = Error::Connect {
                    uri: self.uri(),
                    source: std::io::Error::new(e.error.kind(), e.to_string()),
                };
                self.failed_with(i as usize, err);
            }
        }
    }

    fn failed(&mut self, i: usize, why: String) {
        let e = Error::Handshake {
            uri: self.uri(),
            reason: why,
        };
        self.failed_with(i, e);
    }

    /// A connection attempt failed: counted; before the load started it ends the run.
    fn failed_with(&mut self, i: usize, e: Error) {
        let why = e.to_string();
        self.failed_because(i, e, why);
    }

    /// [`Self::failed_with`], counted under the reason `why`.
    fn failed_because(&mut self, i: usize, e: Error, why: String) {
        let was_up = self.conns[i].st == St::Ready;
        self.close(i);
        if was_up {
            return;
        }
        self.ctx.add(0, M.failed, 1);
        // Printed in the summary: the broker's words shown safely, cut.
        count_reason(&mut self.failures, &why, 300);
        if !self.go && self.first_error.is_none() {
            self.first_error = Some(e);
            return;
        }
        self.ctx.event("connect-failed", format!("client {i}: {e}"));
        if self.o.reconnect && !self.ctx.stopping() {
            let at = self.now() + RECONNECT_NS;
            self.conns[i].st = St::Waiting;
            self.conns[i].started_ns = at;
            self.timer(at, i as u32);
        }
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let Some(mut s) = c.sock.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.st = St::Closed;
        c.rbuf = Vec::new();
        c.wbuf = Vec::new();
        c.wpos = 0;
        // PUBLISH packets not (wholly) written: never sent.
        let unwritten = c.ends.len();
        c.ends.clear();
        c.rel = Vec::new();
        if let Some(p) = c.pubs.as_mut() {
            if self.persistent && self.o.qos > 0 {
                // Unacknowledged messages are sent again after the reconnect (those never
                // written count as sent then).
                let n = p.inflight.len();
                for f in p.inflight.iter_mut().skip(n.saturating_sub(unwritten)) {
                    f.written = false;
                }
            } else {
                // Never acknowledged now; those never written were never sent.
                p.inflight.clear();
                p.unsent += unwritten as u64;
            }
        }
    }

    /// An established connection was lost.
    fn dropped(&mut self, i: usize, why: String) {
        if self.conns[i].st != St::Ready && self.conns[i].st != St::Subscribing {
            self.failed(i, why);
            return;
        }
        self.close(i);
        if self.ctx.stopping() {
            return;
        }
        self.ctx.add(0, M.dropped, 1);
        // The reason, counted (the broker's words shown safely).
        count_reason(&mut self.drops, &why, 160);
        self.ctx.flag_pulse(M.disconnected);
        self.ctx
            .event("connection-lost", format!("client {i}: {why}"));
        if self.o.reconnect {
            self.ctx.flag_on(M.disconnected);
            let at = self.now() + RECONNECT_NS;
            self.conns[i].st = St::Waiting;
            self.conns[i].started_ns = at;
            self.timer(at, i as u32);
        } else if !matches!(self.o.scenario, Scenario::Conn) {
            self.ctx.fail(format!("client {i}: {why}"));
        }
    }

    fn close_all(&mut self) {
        let mut bye = Vec::new();
        codec::disconnect(&mut bye);
        for i in 0..self.conns.len() {
            if self.conns[i].st == St::Ready {
                if let Some(s) = self.conns[i].sock.as_mut() {
                    let _ = s.write(&bye);
                }
            }
            self.close(i);
        }
    }

    fn on_timer(&mut self, i: usize, now: u64) {
        let ka = self.o.keepalive as u64 * 1_000_000_000;
        let st = self.conns[i].st;
        match st {
            // While waiting, `started_ns` holds when to try again.
            St::Waiting
                if !self.ctx.stopping()
                    && self.conns[i].ever
                    && now >= self.conns[i].started_ns =>
            {
                self.open(i as u32);
            }
            St::Connecting | St::Handshake | St::Subscribing => {
                let c = &self.conns[i];
                if now >= c.started_ns + self.o.connect_timeout.as_nanos() as u64 {
                    let what = match st {
                        St::Connecting => "TCP connect",
                        St::Handshake => "CONNACK",
                        _ => "SUBACK",
                    };
                    let why = format!(
                        "no {what} within {} s (is the broker running, and is this an MQTT port?)",
                        self.o.connect_timeout.as_secs_f64()
                    );
                    self.failed(i, why);
                }
            }
            St::Ready => {
                if ka > 0 {
                    let c = &self.conns[i];
                    if c.ping_ns != 0 && now >= c.ping_ns + ka * 2 {
                        self.dropped(i, "no PINGRESP within two keepalive periods".into());
                        return;
                    }
                    if now >= c.last_tx_ns + ka && c.ping_ns == 0 {
                        let mut out = std::mem::take(&mut self.out);
                        out.clear();
                        codec::pingreq(&mut out);
                        self.conns[i].ping_ns = now;
                        self.ctx.add(0, M.pings, 1);
                        self.send(i, &out, Out::Control);
                        self.out = out;
                    }
                    let c = &self.conns[i];
                    let next = if c.ping_ns != 0 {
                        c.ping_ns + ka * 2
                    } else {
                        c.last_tx_ns + ka
                    };
                    if c.st == St::Ready {
                        self.timer(next.max(now + 1_000_000), i as u32);
                    }
                }
                if self.conns[i].pubs.is_some() {
                    self.pump(i);
                }
            }
            _ => {}
        }
    }

    fn on_writable(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.wblocked = false;
        if c.st == St::Connecting {
            let Some(sock) = c.sock.as_ref() else {
                return;
            };
            let err = match (sock.take_error(), sock.peer_addr()) {
                (Ok(Some(e)), _) | (Err(e), _) => Some(e),
                (Ok(None), Ok(_)) => None,
                (Ok(None), Err(e)) if e.kind() == std::io::ErrorKind::NotConnected => {
                    // Still connecting: a spurious wakeup.
                    c.wblocked = true;
                    return;
                }
                (Ok(None), Err(e)) => Some(e),
            };
            if let Some(e) = err {
                let err = Error::Connect {
                    uri: self.uri(),
                    source: e,
                };
                self.failed_with(i, err);
                return;
            }
            let c = &mut self.conns[i];
            c.st = St::Handshake;
            let id = self.o.client_id(i as u32);
            let mut out = std::mem::take(&mut self.out);
            out.clear();
            codec::connect(
                &mut out,
                &codec::Connect {
                    version: self.o.version,
                    client_id: &id,
                    keepalive: self.o.keepalive,
                    clean: self.o.clean,
                    username: self.o.username.as_deref(),
                    password: self.o.password.as_deref(),
                    session_expiry: self.o.session_expiry,
                    topic_alias_max: 0,
                },
            );
            self.send(i, &out, Out::Control);
            self.out = out;
            return;
        }
        self.flush(i);
        if self.conns[i].pubs.is_some() && self.conns[i].st == St::Ready {
            self.pump(i);
        }
    }

    /// Appends `bytes` to the connection's output and writes what the socket takes.
    fn send(&mut self, i: usize, bytes: &[u8], what: Out) {
        let now = self.now();
        let c = &mut self.conns[i];
        if c.sock.is_none() {
            return;
        }
        c.last_tx_ns = now;
        c.wbuf.extend_from_slice(bytes);
        if what == Out::Publish {
            c.ends.push_back(c.wbuf.len());
        }
        if !c.wblocked {
            self.flush(i);
        }
    }

    fn flush(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(s) = c.sock.as_mut() else {
            return;
        };
        let mut err = None;
        while c.wpos < c.wbuf.len() {
            match s.write(&c.wbuf[c.wpos..]) {
                Ok(0) => {
                    err = Some("the broker closed the connection".to_string());
                    break;
                }
                Ok(n) => c.wpos += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    c.wblocked = true;
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    err = Some(e.to_string());
                    break;
                }
            }
        }
        let mut whole = 0;
        while c.ends.front().is_some_and(|&e| e <= c.wpos) {
            c.ends.pop_front();
            whole += 1;
        }
        if c.wpos == c.wbuf.len() {
            c.wbuf.clear();
            c.wpos = 0;
            if c.wbuf.capacity() > 256 * 1024 {
                c.wbuf = Vec::new();
            }
        } else if c.wpos > 64 * 1024 {
            c.wbuf.drain(..c.wpos);
            for e in c.ends.iter_mut() {
                *e -= c.wpos;
            }
            c.wpos = 0;
        }
        if whole > 0 {
            self.ctx.add(0, M.sent, whole);
            self.sent_total += whole;
        }
        if let Some(e) = err {
            self.dropped(i, e);
        }
    }

    fn on_readable(&mut self, i: usize) {
        loop {
            let Some(s) = self.conns[i].sock.as_mut() else {
                return;
            };
            let n = match s.read(&mut self.scratch) {
                Ok(0) => {
                    let why = self.closed_reason(i);
                    self.dropped(i, why);
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let why = if self.conns[i].st == St::Connecting {
                        let err = Error::Connect {
                            uri: self.uri(),
                            source: e,
                        };
                        self.failed_with(i, err);
                        return;
                    } else {
                        e.to_string()
                    };
                    self.dropped(i, why);
                    return;
                }
            };
            // Parse from the connection's partial packet plus the new bytes (or straight
            // from the scratch buffer when nothing is pending: the common case).
            let mut data = std::mem::take(&mut self.conns[i].rbuf);
            let from_scratch = data.is_empty();
            if !from_scratch {
                data.extend_from_slice(&self.scratch[..n]);
            }
            let scratch = std::mem::take(&mut self.scratch);
            let buf: &[u8] = if from_scratch { &scratch[..n] } else { &data };
            let mut at = 0;
            let mut fatal = None;
            while at < buf.len() {
                if self.conns[i].st == St::Handshake && buf[at] >> 4 != kind::CONNACK {
                    fatal = Some(not_mqtt(&buf[at..]));
                    break;
                }
                match codec::decode(&buf[at..], self.o.version, 256 * 1024 * 1024) {
                    Ok(Some((p, len))) => {
                        at += len;
                        self.on_packet(i, p);
                        if self.conns[i].sock.is_none() {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        fatal = Some(format!("malformed packet from the broker: {e}"));
                        break;
                    }
                }
            }
            let rest = buf.get(at..).unwrap_or(&[]).to_vec();
            self.scratch = scratch;
            if let Some(why) = fatal {
                if self.conns[i].st == St::Handshake {
                    self.failed(i, why);
                } else {
                    self.dropped(i, why);
                }
                return;
            }
            if self.conns[i].sock.is_some() {
                self.conns[i].rbuf = rest;
            }
        }
    }

    fn closed_reason(&self, i: usize) -> String {
        match self.conns[i].st {
            St::Handshake => "the broker closed the connection without a CONNACK (not an MQTT broker, or one refusing this protocol version?)".into(),
            _ => "the broker closed the connection".into(),
        }
    }

    fn refused(&mut self, what: &str, code: u8) -> String {
        let name = codec::code_name(self.o.version, code);
        *self.refusals.entry(format!("{what} {name}")).or_insert(0) += 1;
        self.ctx.add(0, M.refused, 1);
        format!("{what} {code:#04x} {name}")
    }

    fn on_packet(&mut self, i: usize, p: Packet) {
        let now = self.now();
        match p {
            Packet::ConnAck {
                code,
                props,
                session_present,
            } => {
                if code != 0 {
                    let why = self.refused("CONNACK", code);
                    let reason = props.reason.map(|r| format!(": {r}")).unwrap_or_default();
                    self.failed(
                        i,
                        format!("the broker refused the connection: {why}{reason}"),
                    );
                    return;
                }
                let started = self.conns[i].started_ns;
                self.ctx
                    .record(0, M.connect_latency, now.saturating_sub(started) / 1000);
                if !self.go {
                    self.go = true;
                    self.ctx.start_load();
                }
                let c = &mut self.conns[i];
                c.alias_max = props.topic_alias_max;
                if c.ever {
                    self.ctx.add(0, M.reconnects, 1);
                    self.ctx.flag_off(M.disconnected);
                    self.ctx.event("reconnected", format!("client {i}"));
                }
                let c = &mut self.conns[i];
                c.ever = true;
                self.ctx.add(0, M.connected, 1);
                match c.role {
                    Role::Sub(s) => {
                        c.st = St::Subscribing;
                        let f = self.o.sub_filter(s);
                        let mut out = std::mem::take(&mut self.out);
                        out.clear();
                        codec::subscribe(&mut out, self.o.version, 1, &[&f], self.o.qos);
                        self.send(i, &out, Out::Control);
                        self.out = out;
                    }
                    Role::Pub(p) => {
                        c.st = St::Ready;
                        let window = (self.o.inflight).min(props.receive_max.max(1));
                        if c.pubs.is_none() {
                            let schedule = (self.o.pub_interval_ms > 0.0).then(|| {
                                let per = self.o.pub_interval_ms / 1000.0;
                                Schedule::new(Box::new(Constant {
                                    rate: 1.0 / per,
                                    offset: fastrand::f64() * per,
                                }))
                            });
                            c.pubs = Some(Box::new(PubState {
                                schedule,
                                seq: 0,
                                sent: 0,
                                unsent: 0,
                                next_pid: 1,
                                inflight: VecDeque::new(),
                                window,
                                alias_set: false,
                                topic: self.o.topic_for(p).into_bytes(),
                                done: false,
                            }));
                        } else if let Some(ps) = c.pubs.as_mut() {
                            ps.window = window;
                            ps.alias_set = false;
                            if !session_present && !ps.inflight.is_empty() {
                                // The broker kept no session: messages it had not
                                // acknowledged are published again as new ones (at least
                                // once, as the application sees it); a QoS 2 message it had
                                // received (PUBREC) stays delivered and is forgotten.
                                ps.inflight.retain(|f| !f.released);
                                self.ctx.event(
                                    "session-lost",
                                    format!(
                                        "client {i}: the broker kept no session; {} unacknowledged message(s) published again",
                                        ps.inflight.len()
                                    ),
                                );
                            }
                        }
                        self.arm_keepalive(i, now);
                        self.resend(i, now, session_present);
                        self.ready.push_back(i as u32);
                    }
                    Role::Idle => {
                        c.st = St::Ready;
                        self.arm_keepalive(i, now);
                    }
                }
            }
            Packet::SubAck { codes, .. } => {
                if let Some(&c) = codes.iter().find(|&&c| c >= 0x80) {
                    let why = self.refused("SUBACK", c);
                    self.failed(
                        i,
                        format!(
                            "the broker refused the subscription to '{}': {why}",
                            self.o.sub_filter(0)
                        ),
                    );
                    return;
                }
                if self.conns[i].st == St::Subscribing {
                    self.conns[i].st = St::Ready;
                    self.subs_ready += 1;
                    self.arm_keepalive(i, now);
                }
            }
            Packet::PingResp => {
                let c = &mut self.conns[i];
                if c.ping_ns != 0 {
                    let rtt = now.saturating_sub(c.ping_ns) / 1000;
                    c.ping_ns = 0;
                    self.ctx.add(0, M.pongs, 1);
                    self.ctx.record(0, M.ping_latency, rtt);
                }
            }
            Packet::Publish {
                qos, pid, payload, ..
            } => {
                self.delivered(i, payload);
                let mut out = std::mem::take(&mut self.out);
                out.clear();
                match qos {
                    1 => codec::ack(&mut out, kind::PUBACK, pid),
                    2 => {
                        if !self.conns[i].rel.contains(&pid) {
                            self.conns[i].rel.push(pid);
                        }
                        codec::ack(&mut out, kind::PUBREC, pid)
                    }
                    _ => {}
                }
                if !out.is_empty() {
                    self.send(i, &out, Out::Control);
                }
                self.out = out;
            }
            Packet::Ack { kind: k, pid, code } => self.on_ack(i, k, pid, code, now),
            Packet::Disconnect { code, reason } => {
                let why = self.refused("DISCONNECT", code);
                let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
                self.dropped(i, format!("the broker disconnected: {why}{reason}"));
            }
            Packet::UnsubAck { .. } | Packet::PingReq | Packet::Auth { .. } => {}
        }
    }

    /// Sends unacknowledged messages again after a reconnect with a persistent session: the
    /// PUBLISH (DUP set when the broker kept the session), or the PUBREL of a QoS 2 message
    /// already received.
    fn resend(&mut self, i: usize, now: u64, dup: bool) {
        let Some(ps) = self.conns[i].pubs.as_mut() else {
            return;
        };
        let mut packets: Vec<(Vec<u8>, bool)> = Vec::new();
        for f in ps.inflight.iter_mut() {
            f.sent_ns = now;
            if f.released {
                let mut b = Vec::with_capacity(4);
                codec::ack(&mut b, kind::PUBREL, f.pid);
                packets.push((b, false));
            } else if let Some(&first) = f.packet.first() {
                let mut b = f.packet.clone();
                // DUP only for what this session may have seen.
                b[0] = if dup && f.written {
                    first | 0x08
                } else {
                    first
                };
                packets.push((b, !f.written));
                f.written = true;
            }
        }
        if packets.is_empty() {
            return;
        }
        self.ctx.event(
            "resent",
            format!("client {i}: {} unacknowledged message(s)", packets.len()),
        );
        for (b, first_time) in packets {
            self.send(
                i,
                &b,
                if first_time {
                    Out::Publish
                } else {
                    Out::Control
                },
            );
        }
    }

    fn arm_keepalive(&mut self, i: usize, now: u64) {
        self.conns[i].last_tx_ns = now;
        if self.o.keepalive > 0 {
            let at = now + self.o.keepalive as u64 * 1_000_000_000;
            self.timer(at, i as u32);
        }
    }

    fn delivered(&mut self, i: usize, payload: &[u8]) {
        let Role::Sub(s) = self.conns[i].role else {
            return;
        };
        let st = Stamp::read(payload);
        // In pubsub only this load's messages count: stamped by one of its publishers
        // (its load id) after the load began.
        let ours = st.and_then(|st| match st.origin {
            Origin::Load { load, publisher }
                if load == self.me
                    && publisher < self.npubs
                    && st.sent_ns >= self.ctx.clock().real_at(0) =>
            {
                Some(publisher)
            }
            _ => None,
        });
        if self.npubs > 0 && ours.is_none() {
            self.foreign(st.map(|s| s.origin));
            return;
        }
        self.ctx.add(0, M.received, 1);
        let Some(st) = st else {
            return;
        };
        let now = crate::engine::clock::real_ns();
        {
            let mut h = self.ctx.hists(0);
            if now.abs_diff(st.sent_ns) < 3_600_000_000_000 {
                h.record(M.latency, now.saturating_sub(st.sent_ns) / 1000);
                if let Some(it) = st
                    .intended_ns
                    .filter(|&t| now.abs_diff(t) < 3_600_000_000_000)
                {
                    h.record(M.latency_intended, now.saturating_sub(it) / 1000);
                }
            }
        }
        let Some(p) = ours else {
            return;
        };
        let t = if self.shared { 0 } else { s as usize };
        if let Some(track) = self.tracks.get_mut(t).and_then(|v| v.get_mut(p as usize)) {
            // Sequence numbers wrap at 2^32; ours never get near it per run.
            match track.see(st.seq as u64) {
                Seen::InOrder => {}
                Seen::Late => self.ctx.add(0, M.out_of_order, 1),
                Seen::Duplicate => self.ctx.add(0, M.duplicated, 1),
            }
        }
    }

    /// A message this load did not publish: counted, and a layout it cannot place told
    /// once.
    fn foreign(&mut self, origin: Option<Origin>) {
        self.ctx.add(0, M.foreign, 1);
        match origin {
            Some(Origin::Load { load, .. }) if load != self.me => {
                self.other_loads += 1;
                if load.same_run(&self.me) {
                    self.from_run += 1;
                }
            }
            Some(Origin::Layout1 { .. }) if !self.told_layouts[0] => {
                self.told_layouts[0] = true;
                self.ctx.event(
                    "foreign-layout",
                    "messages of layout 1 (an older kiln: a publisher index without its load) are counted as foreign".into(),
                );
            }
            Some(Origin::Unknown { version }) if !self.told_layouts[1] => {
                self.told_layouts[1] = true;
                self.ctx.event(
                    "foreign-layout",
                    format!("messages of layout version {version} (this kiln writes and reads version {}) are counted as foreign", body::VERSION),
                );
            }
            _ => {}
        }
    }

    fn on_ack(&mut self, i: usize, k: u8, pid: u16, code: u8, now: u64) {
        if k == kind::PUBREL {
            // Subscriber side of QoS 2: release and complete.
            self.conns[i].rel.retain(|&p| p != pid);
            let mut out = std::mem::take(&mut self.out);
            out.clear();
            codec::ack(&mut out, kind::PUBCOMP, pid);
            self.send(i, &out, Out::Control);
            self.out = out;
            return;
        }
        if code >= 0x80 {
            let why = self.refused(
                if k == kind::PUBACK {
                    "PUBACK"
                } else {
                    "PUBREC"
                },
                code,
            );
            self.ctx.event("refused", format!("client {i}: {why}"));
        }
        let qos2 = self.o.qos == 2;
        let Some(ps) = self.conns[i].pubs.as_mut() else {
            return;
        };
        let Some(pos) = ps.inflight.iter().position(|e| e.pid == pid) else {
            return;
        };
        if k == kind::PUBREC && qos2 && code < 0x80 {
            ps.inflight[pos].released = true;
            ps.inflight[pos].packet = Vec::new();
            let mut out = std::mem::take(&mut self.out);
            out.clear();
            codec::ack(&mut out, kind::PUBREL, pid);
            self.send(i, &out, Out::Control);
            self.out = out;
            return;
        }
        let Some(Inflight { sent_ns: sent, .. }) = ps.inflight.remove(pos) else {
            return;
        };
        if (k == kind::PUBACK && !qos2) || k == kind::PUBCOMP || code >= 0x80 {
            if code < 0x80 {
                self.ctx.add(0, M.acked, 1);
                self.ctx
                    .record(0, M.ack_latency, now.saturating_sub(sent) / 1000);
            }
            self.ready.push_back(i as u32);
        }
    }

    /// Publishes what is due on connection `i` while the socket and the window allow.
    fn pump(&mut self, i: usize) {
        let now = self.now();
        let go = self.ctx.go_ns().unwrap_or(0);
        let now_s = now.saturating_sub(go) as f64 / 1e9;
        let end_s = self.ctx.end_s();
        let o = self.o;
        if self.ctx.stopping() || self.conns[i].st != St::Ready {
            return;
        }
        let mut budget = 64 * 1024usize;
        let persistent = self.persistent;
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let mut next_due = None;
        let mut more = false;
        {
            let c = &mut self.conns[i];
            let Role::Pub(p) = c.role else {
                self.out = out;
                return;
            };
            let Some(ps) = c.pubs.as_mut() else {
                self.out = out;
                return;
            };
            let pending = c.wbuf.len() - c.wpos;
            if c.wblocked || pending > 64 * 1024 {
                self.out = out;
                return;
            }
            loop {
                if o.limit > 0 && ps.sent >= o.limit {
                    if !ps.done && ps.inflight.is_empty() {
                        ps.done = true;
                        self.pubs_done += 1;
                    }
                    break;
                }
                if o.qos > 0 && ps.inflight.len() >= ps.window as usize {
                    break;
                }
                if budget == 0 {
                    more = true;
                    break;
                }
                let intended = match ps.schedule.as_mut() {
                    Some(s) => match s.take_due(now_s, end_s) {
                        Some(t) => Some(t),
                        None => {
                            next_due = s.next().filter(|&t| t < end_s);
                            break;
                        }
                    },
                    None => None,
                };
                let real = crate::engine::clock::real_ns();
                let it_ns = intended.map(|t| self.ctx.clock().real_at(go + (t * 1e9) as u64));
                let stamp = Stamp {
                    seq: ps.seq,
                    sent_ns: real,
                    intended_ns: it_ns,
                    origin: Origin::Load {
                        load: self.me,
                        publisher: p,
                    },
                };
                let mut head = [0u8; body::FULL];
                let hl = stamp.write(&mut head);
                let pid = if o.qos > 0 {
                    let pid = ps.next_pid;
                    ps.next_pid = if ps.next_pid == u16::MAX {
                        1
                    } else {
                        ps.next_pid + 1
                    };
                    ps.inflight.push_back(Inflight {
                        pid,
                        sent_ns: now,
                        released: false,
                        written: true,
                        packet: Vec::new(),
                    });
                    pid
                } else {
                    0
                };
                let alias = (o.topic_alias && c.alias_max > 0).then_some(1u16);
                let topic: &[u8] = if alias.is_some() && ps.alias_set {
                    b""
                } else {
                    &ps.topic
                };
                let before = out.len();
                codec::publish(
                    &mut out,
                    &codec::Publish {
                        version: o.version,
                        qos: o.qos,
                        retain: o.retain,
                        dup: false,
                        topic,
                        pid,
                        topic_alias: alias,
                        message_expiry: o.message_expiry,
                    },
                    &head[..hl],
                    o.size,
                );
                if alias.is_some() {
                    ps.alias_set = true;
                }
                if persistent && o.qos > 0 {
                    // Kept to send again after a reconnect, with its full topic: topic
                    // aliases do not outlive a connection.
                    let mut again = Vec::with_capacity(out.len() - before + ps.topic.len());
                    codec::publish(
                        &mut again,
                        &codec::Publish {
                            version: o.version,
                            qos: o.qos,
                            retain: o.retain,
                            dup: false,
                            topic: &ps.topic,
                            pid,
                            topic_alias: None,
                            message_expiry: o.message_expiry,
                        },
                        &head[..hl],
                        o.size,
                    );
                    if let Some(f) = ps.inflight.back_mut() {
                        f.packet = again;
                    }
                }
                c.ends.push_back(c.wbuf.len() + out.len());
                ps.seq = ps.seq.wrapping_add(1);
                ps.sent += 1;
                budget = budget.saturating_sub(out.len() - before);
            }
            if !out.is_empty() {
                c.last_tx_ns = now;
                c.wbuf.extend_from_slice(&out);
            }
        }
        self.out = out;
        self.flush(i);
        if let Some(t) = next_due {
            let at = go + (t * 1e9) as u64;
            self.timer(at, i as u32);
        }
        if more && !self.conns[i].wblocked {
            self.ready.push_back(i as u32);
        }
    }
}

fn not_mqtt(b: &[u8]) -> String {
    let shown: String = b
        .iter()
        .take(40)
        .map(|&c| {
            if (0x20..0x7f).contains(&c) {
                c as char
            } else {
                '.'
            }
        })
        .collect();
    format!("this is not an MQTT broker: it answered '{shown}' instead of a CONNACK")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_gaps_duplicates_and_reordering() {
        let mut t = Track::default();
        for s in [0, 1, 2, 5, 3, 3, 6] {
            t.see(s);
        }
        // 4 never came; 3 came late (out of order) and again (duplicate).
        assert_eq!(
            (t.next, t.missing, t.dup, t.ooo, t.received),
            (7, 1, 1, 1, 7)
        );
        let mut t = Track::default();
        t.see(0);
        t.see(5000);
        assert_eq!(t.missing, 4999);
        t.see(10);
        assert_eq!(
            (t.missing, t.ooo),
            (4998, 1),
            "too old to tell: out of order"
        );
        assert_eq!(t.see(4999), Seen::Late);
        assert_eq!((t.missing, t.ooo, t.dup), (4997, 2, 0));
        assert_eq!(t.see(4999), Seen::Duplicate);
        assert_eq!(t.dup, 1);
        assert_eq!(t.see(5001), Seen::InOrder);
    }
}
