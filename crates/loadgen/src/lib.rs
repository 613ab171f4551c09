//! Load generators on one protocol-neutral engine, with honest latency.
//!
//! `kiln load amqp` takes RabbitMQ PerfTest's flags (`-x 1 -y 1 -c 2000 -z 60 …`) and
//! reports what PerfTest reports — sending, confirm and receiving rates, consumer and
//! confirm latency percentiles every second and in a summary — plus what it leaves out:
//!
//! - **Coordinated omission.** When the rate is limited each message also carries the time
//!   it was *meant* to be sent; latency from that time shows the queueing a stalled
//!   client hides when it measures from the actual send.
//! - **Flow control.** `connection.blocked`/`unblocked` notifications and seconds in which
//!   publishing stalled are marked in the series and counted in the summary.
//! - **The whole series**, not only a summary, as JSON and CSV.
//! - **Faults.** A broker that is not running fails within seconds naming the URI; refused
//!   credentials are named as such; a broker that dies mid-run ends the run with the results
//!   so far (or, with `reconnect`, the run continues and the gap is marked).
//!
//! # One engine, one driver per protocol
//! [`engine`] owns what every protocol shares: pacers (when each message or request is due),
//! the message layout, the once-a-second ticker, HdrHistogram latency, the report and its
//! JSON/CSV/text outputs, sweeps, and the stop. A protocol is an [`engine::Driver`] beside
//! the others ([`amqp`]: PerfTest's flags, a thread pair per connection; [`mqtt`]:
//! emqtt-bench's, one epoll event loop for every connection; HTTP sits beside them): it
//! declares its counters, latencies and flags in a [`engine::stats::Schema`] and counts into
//! the [`engine::Ctx`] it is handed, through typed handles made from the table's names at
//! compile time ([`CounterId`], [`LatencyId`], [`FlagId`]; each driver keeps its own in a
//! `Metrics` struct, `M`): `ctx.add(agent, M.sent, 1)`, `ctx.record(agent, M.latency, us)`.
//! A misspelt name does not compile, and a counter cannot stand where a latency is meant.
//! The same handles read a second back ([`Tick::count_of`], [`Load::completed`]).
//!
//! # Driving a load from another program (`kiln run`)
//! A load is a [`Load`] trait object: build it from options ([`amqp::AmqpLoad`],
//! [`mqtt::MqttLoad`]), then
//!
//! ```no_run
//! use kiln_loadgen::{amqp::{AmqpLoad, AmqpOptions}, Load};
//! let stop = kiln_os::stop::Stop::new();
//! let mut load: Box<dyn Load> = Box::new(AmqpLoad { opts: AmqpOptions::default(), sweep: None });
//! let report = load.run(&stop, &mut |tick| {
//!     // One protocol-neutral second: time_s, interval_s, end_mono_ns (CLOCK_MONOTONIC, the
//!     // clock `kiln record` stamps samples with), named counters with units, named latency
//!     // percentiles, flags.
//!     println!("{} {} sent/s", tick.end_mono_ns, tick.rate("sent"));
//! })?;
//! # Ok::<(), kiln_loadgen::Error>(())
//! ```
//!
//! - **It ends** on its own (`-z`, a hard deadline; message counts; the last step of a sweep)
//!   or when `stop` is raised — raise it when the measurement window closes. Without a
//!   duration or counts it runs until then.
//! - **[`Tick`]**: `time_s` since the load started, `interval_s`, `end_mono_ns`; `counters`
//!   ([`engine::stats::Count`]: name, unit, value — AMQP: `sent`, `confirmed`, `nacked`,
//!   `returned`, `received`…), `latencies` ([`engine::stats::Latency`], µs: service time and
//!   time from the intended send), `flags` (`blocked`, `stalled`, `disconnected`…); in a
//!   sweep, `step`. Units of every name are in the protocol's [`engine::stats::Schema`].
//! - **[`Report`]**: the neutral [`engine::LoadHeadline`] (primary throughput with its unit,
//!   totals by counter, latency percentiles by name, failure, interrupted, start and end as
//!   `CLOCK_MONOTONIC` ns), the whole `series`, `events`, mergeable whole-run latency
//!   `histograms` (HdrHistogram V2 deflate, by name), the protocol's own `options` and
//!   `summary` as JSON, and for sweeps `steps`, each with its `CLOCK_MONOTONIC` window and
//!   its own headline.
//!
//! # Design constraints
//! The client shares the machine with the server it measures (often two cores), so its CPU
//! per message is a goal. That is why the AMQP client inside is hand-written and
//! synchronous (see [`amqp`]), and why agents count into their own slots.
//!
//! # Message layout
//! In one place, [`engine::body`]: PerfTest's 4-byte big-endian sequence number and 8-byte
//! timestamp (here nanoseconds since the Unix epoch, so a consumer in another process on
//! the same host can read it), padded with zeros to `--size` (default and minimum 12);
//! rate-limited runs add the intended send time (20 bytes), delivery accounting the
//! message's origin: its load (a nonce unique across processes and hosts, and an agent
//! index) and its publisher in it (36 bytes, layout version 2).
#![deny(missing_docs)]

pub mod amqp;
pub mod engine;
pub mod http;
pub mod mqtt;

pub use amqp::{
    parse_key_values, parse_value_duration, AmqpOptions, FieldValue, QueuePattern, Uri,
};
pub use engine::stats::{
    CounterDef, CounterId, Event, FlagId, LatencyId, Level, LevelId, Percentiles, Schema, Tick,
};
pub use engine::{Load, LoadHeadline, Report, Settings};

/// The first 40 bytes a server answered, printable ASCII as itself and anything else as
/// `.`: what a handshake error shows of an answer from something else than the broker.
pub(crate) fn answer_shown(b: &[u8]) -> String {
    b.iter()
        .take(40)
        .map(|&c| {
            if (0x20..0x7f).contains(&c) {
                c as char
            } else {
                '.'
            }
        })
        .collect()
}

/// Why a load run could not start or was cut short.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The `--uri` is not an AMQP URI.
    #[error("invalid --uri '{uri}': {reason}")]
    Uri {
        /// The URI (password removed).
        uri: String,
        /// What is wrong.
        reason: String,
    },
    /// Nothing accepted a TCP connection at the URI.
    #[error("cannot connect to {uri}: {source} (is the server running and listening there?)")]
    Connect {
        /// The URI (password removed).
        uri: String,
        /// The socket error.
        source: std::io::Error,
    },
    /// The protocol handshake failed (refused, not this protocol, no answer).
    #[error("handshake with {uri} failed: {reason}")]
    Handshake {
        /// The URI (password removed).
        uri: String,
        /// What happened.
        reason: String,
    },
    /// The broker closed the channel or connection with an error.
    #[error("the broker at {uri} refused: {code} {text}")]
    Closed {
        /// The URI (password removed).
        uri: String,
        /// AMQP reply code (e.g. 406 PRECONDITION_FAILED).
        code: u16,
        /// The broker's reply text.
        text: String,
    },
    /// The connection failed while in use.
    #[error("connection to {uri} lost: {source}")]
    Io {
        /// The URI (password removed).
        uri: String,
        /// The socket error.
        source: std::io::Error,
    },
    /// The server sent bytes that are not valid for the protocol.
    #[error("protocol error from {uri}: {reason}")]
    Protocol {
        /// The URI (password removed).
        uri: String,
        /// What was wrong.
        reason: String,
    },
    /// An option has a value that cannot work.
    #[error("invalid {flag} '{value}': {reason}")]
    Option {
        /// The flag as typed on the command line, e.g. `--variable-rate`.
        flag: &'static str,
        /// The offending value.
        value: String,
        /// What is expected instead.
        reason: String,
    },
    /// The load could not start: a producer or consumer failed to connect or set up.
    #[error("starting the load failed: {0}")]
    Start(String),
    /// A URL cannot be loaded.
    #[error("invalid URL '{url}': {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// A targets file has a malformed line.
    #[error("{path}:{line}: {reason}")]
    Targets {
        /// The file.
        path: String,
        /// Line number (1-based; 0: the file as a whole).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A CSV file for `{csv:…}` variables is malformed.
    #[error("{path}:{line}: {reason}")]
    Csv {
        /// The file.
        path: String,
        /// Line number (1-based).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// An input file could not be read.
    #[error("cannot read {path}: {source}")]
    Input {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The pre-flight check found that the fleet does not fit this machine (before any
    /// connection was opened).
    #[error("the fleet does not fit this machine (checked before any connection; --no-preflight runs it anyway):{}", problems.iter().map(|p| format!("\n  - {p}")).collect::<String>())]
    Preflight {
        /// Each shortfall, with what to add.
        problems: Vec<String>,
    },
    /// An output file could not be written.
    #[error("cannot write {path}: {source}")]
    Output {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}
