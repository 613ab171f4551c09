//! The MQTT driver: one event loop (epoll through mio) holding every connection.
//!
//! Nothing per connection but its socket and a small [`Conn`]: buffers are allocated only
//! while a packet is half-read or a write is half-done, so an idle connection costs a few
//! hundred bytes of the client's memory (the socket buffers are the kernel's). Timers
//! (keepalive pings, connect timeouts, publish schedules, reconnects) sit in one heap.
//!
//! The loop is in parts by concern: `event_loop` (opening, timers, polling, the end),
//! `io` (sockets), `session` (the protocol's state machine), `publish`, `reconnect`
//! (failures and lost connections) and `delivery` (what subscribers received of each
//! publisher's sequence); `schema` says what the load measures.
mod delivery;
mod event_loop;
mod io;
mod publish;
mod reconnect;
mod schema;
mod session;

pub use delivery::Delivery;
pub(crate) use schema::M;
pub use schema::{schema_for, SCHEMA_CONN, SCHEMA_PUB, SCHEMA_SUB};

use super::codec::{self, kind, Packet};
use super::options::{MqttOptions, Scenario};
use crate::engine::body::LoadId;
use crate::engine::fleet;
use crate::engine::pacer::Schedule;
use crate::engine::stats::Schema;
use crate::engine::{Ctx, Driver, Report};
use crate::Error;
use delivery::Track;
use mio::net::TcpStream;
use mio::Poll;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Mutex;
use std::time::Duration;

/// What a connection is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// `conn`: kept alive with pings, nothing else.
    Idle,
    /// Publisher number `n` (its index among the publishers, in its messages' stamps).
    Publisher(u32),
    /// Subscriber number `n`.
    Subscriber(u32),
}

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConnState {
    /// Not yet opened, or waiting to reconnect.
    Waiting,
    /// TCP connecting.
    Connecting,
    /// CONNECT sent, waiting for the CONNACK.
    Handshake,
    /// SUBSCRIBE sent, waiting for the SUBACK.
    Subscribing,
    /// Established: pinging, publishing or receiving.
    Ready,
    /// Closed (by kiln, the broker or an error); waits for a reconnect only as `Waiting`.
    Closed,
}

/// One connection.
struct Conn {
    /// The socket, while open.
    socket: Option<TcpStream>,
    role: Role,
    state: ConnState,
    /// Bytes of a packet not yet complete.
    partial: Vec<u8>,
    /// What is to be written; bytes before `written` are already on the socket.
    out_buf: Vec<u8>,
    /// How much of `out_buf` the socket took.
    written: usize,
    /// End offsets in `out_buf` of new PUBLISH packets not yet wholly written (each is
    /// counted as sent when its last byte is written).
    publish_ends: VecDeque<usize>,
    /// The socket would block: writing waits for it to become writable.
    write_blocked: bool,
    /// When this connection attempt started (connect latency and timeout); while
    /// `Waiting` to reconnect, when to try again.
    attempt_ns: u64,
    /// When a packet was last sent (keepalive counts from it).
    last_sent_ns: u64,
    /// When the PINGREQ awaiting its PINGRESP was sent (0: none awaited).
    ping_sent_ns: u64,
    /// It had a CONNACK once: a new one is a reconnect.
    was_connected: bool,
    /// A publisher's state, from its first CONNACK on (kept across reconnects).
    publisher: Option<Box<PublisherState>>,
    /// QoS 2 packet ids received and not yet released by a PUBREL (subscribers).
    awaiting_release: Vec<u16>,
    /// The topic aliases the broker allows (MQTT 5; 0: none).
    topic_alias_max: u16,
}

impl Conn {
    fn new(role: Role) -> Self {
        Conn {
            socket: None,
            role,
            state: ConnState::Waiting,
            partial: Vec::new(),
            out_buf: Vec::new(),
            written: 0,
            publish_ends: VecDeque::new(),
            write_blocked: false,
            attempt_ns: 0,
            last_sent_ns: 0,
            ping_sent_ns: 0,
            was_connected: false,
            publisher: None,
            awaiting_release: Vec::new(),
            topic_alias_max: 0,
        }
    }
}

/// What a connection writes: a PUBLISH sent for the first time is counted as sent once
/// its last byte is written; everything else (control packets, resent PUBLISHes) is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outgoing {
    Control,
    NewPublish,
}

/// A QoS 1/2 message not yet acknowledged.
struct Unacked {
    /// Its packet id.
    pid: u16,
    /// When it was (last) sent: the ack latency counts from it.
    sent_ns: u64,
    /// PUBREC received (QoS 2): PUBREL is what to send again.
    pubrec_received: bool,
    /// Wholly written to a socket once (counted as sent).
    written: bool,
    /// The PUBLISH, kept only with a persistent session, to send again (DUP) after a
    /// reconnect.
    resend: Vec<u8>,
}

/// A publisher's state, kept across its reconnects.
struct PublisherState {
    /// When messages are due (`--pub-interval`); `None`: as fast as the window allows.
    schedule: Option<Schedule>,
    /// The sequence number of its next message.
    next_seq: u32,
    /// Messages encoded (sequence numbers used).
    encoded: u64,
    /// Of those, never written (their connection closed first).
    never_written: u64,
    /// The packet id of its next QoS 1/2 message (1..=65535).
    next_packet_id: u16,
    /// QoS 1/2 messages not yet acknowledged, oldest first.
    unacked: VecDeque<Unacked>,
    /// How many may be unacknowledged at once (`--inflight`, at most the broker's
    /// receive maximum).
    window: u16,
    /// The topic alias was set on this connection (later messages send an empty topic).
    alias_sent: bool,
    /// Its topic.
    topic: Vec<u8>,
    /// It published its `--limit` and every message was acknowledged.
    at_limit: bool,
}

/// The event loop's state: every connection, the timers, and what the load counts
/// beyond the engine's counters.
struct Loop<'a> {
    opts: &'a MqttOptions,
    driver: &'a MqttDriver,
    ctx: &'a Ctx,
    poll: Poll,
    /// Every connection; its index is its epoll token and its client number.
    conns: Vec<Conn>,
    /// (when, connection) of keepalive, timeout, schedule and reconnect timers, earliest
    /// first.
    timers: BinaryHeap<Reverse<(u64, u32)>>,
    /// Publishers that can publish now (as fast as possible, or a window that opened).
    ready: VecDeque<u32>,
    /// What a socket read lands in.
    read_buf: Vec<u8>,
    /// A control packet or a batch of PUBLISHes being encoded.
    packet_buf: Vec<u8>,
    /// Per subscriber (one for a shared subscription), per publisher: what was received
    /// of the publisher's sequence.
    tracks: Vec<Vec<Track>>,
    /// The subscribers share one subscription (`$share/...`): each gets part.
    shared_subscription: bool,
    /// How many connections publish.
    publishers: u32,
    /// How many subscribe.
    subscribers: u32,
    /// Subscribers that have their SUBACK (publishers open once all have it).
    subscribed: u32,
    /// Connections opened so far (the next to open is this one).
    opened: u32,
    /// Refusals by packet and reason code name.
    refusals: BTreeMap<String, u64>,
    /// Lost connections by reason (a malformed packet and what was wrong with it, the
    /// broker's DISCONNECT, a reset...), as `sub` names them when one ends its run.
    drops: BTreeMap<String, u64>,
    /// Connection attempts that failed, by reason (at most [`MAX_REASONS`] distinct).
    failures: BTreeMap<String, u64>,
    /// A connection that failed before the load started: the run ends with it.
    first_error: Option<Error>,
    /// The first CONNACK came: the load has started.
    load_started: bool,
    /// Sessions outlive connections (clean session off): unacknowledged messages are sent
    /// again after a reconnect.
    persistent_session: bool,
    /// Publishers that published their `--limit`, all acknowledged.
    publishers_done: u32,
    /// This load's identity in its messages.
    load_id: LoadId,
    /// Foreign messages stamped by another kiln load (layout 2).
    other_loads: u64,
    /// Of those, the run's other agents' (the same nonce).
    from_run: u64,
    /// Foreign messages of layout 1 or of a layout unknown here, told once each.
    layouts_told: [bool; 2],
    /// Shared subscription with other loads' subscribers in the group: messages of this
    /// load not received here, not judged lost.
    unjudged: Option<u64>,
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

    fn tick_grid_ns(&self) -> u64 {
        self.opts.tick_grid_ns
    }

    fn run(&self, ctx: &Ctx) -> Result<(), Error> {
        let mut lp = Loop::new(self, ctx)?;
        let r = lp.run();
        let deliveries = lp.deliveries();
        let mut out = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
        *out = Outcome {
            deliveries,
            load: (lp.publishers > 0).then_some(lp.load_id),
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
        serde_json::to_value(super::report::MqttSummary::of(&self.opts, r, &out))
            .unwrap_or_default()
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
