//! A PerfTest-compatible AMQP 0.9.1 load generator with honest latency.
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
//! - **The whole series**, not only a summary, as JSON and CSV ([`report`]).
//! - **Faults.** A broker that is not running fails within seconds naming the URI; a broker
//!   that dies mid-run ends the run with the results so far (or, with `reconnect`, the
//!   run continues and the gap is marked).
//!
//! The library does the work ([`run`], [`sweep`]); the `kiln` binary only converts flags into
//! [`AmqpOptions`] and prints. Later `kiln run` drives the same library while it profiles
//! the broker, which is why results are plain serde types.
//!
//! # Design constraints
//! The client shares the machine with the broker it measures (often two cores), so its CPU
//! per message is a goal. That is why the AMQP client inside is hand-written and
//! synchronous: blocking sockets, one thread reading and one writing per connection,
//! hand-written framing into a reused buffer and batched writes cost less per message than
//! a general async client's per-message futures and channels (measured in `bench/amqp/`).
//!
//! # Message layout
//! Like PerfTest: a 4-byte big-endian sequence number, then an 8-byte timestamp (here
//! nanoseconds since the Unix epoch, so a consumer in another process on the same host can
//! read it), padded with zeros to `--size` (default and minimum 12). Rate-limited runs add
//! the intended send time in bytes 12..20 and so use at least 20 bytes.
#![deny(missing_docs)]

mod amqp;
pub mod http;
mod options;
pub mod report;
mod run;
mod stats;
mod sweep;

pub use amqp::{FieldValue, Uri};
pub use options::{parse_key_values, parse_value_duration, AmqpOptions, QueuePattern};
pub use run::run;
pub use stats::{Event, Percentiles, Report, Summary, Tick};
pub use sweep::{parse_sweep, sweep, SweepRow};

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
    #[error("cannot connect to {uri}: {source} (is the broker running and listening there?)")]
    Connect {
        /// The URI (password removed).
        uri: String,
        /// The socket error.
        source: std::io::Error,
    },
    /// The AMQP handshake failed.
    #[error("AMQP handshake with {uri} failed: {reason}")]
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
    /// The broker sent bytes that are not valid AMQP 0.9.1.
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
    /// An output file could not be written.
    #[error("cannot write {path}: {source}")]
    Output {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}
