//! # kiln-run: drive a load, profile the target under it, on one clock
//!
//! `kiln run` is the loop the seeds' engineers do by hand in four shell windows: start a
//! load, `perf record` the server at the right moment, write down rates and latencies,
//! render, change one thing, do it again, compare. [`run`] does one pass:
//!
//! ```text
//! kiln run --name before -p "$(pgrep -o beam.smp)" -e cpu,offcpu -d 30 --warmup 5 load amqp -x 1 -y 1 -r 20000
//! kiln run --name wrk-48 -p "$(pgrep -x myserver)" -d 30 exec -- wrk -c 48 -d 40 http://127.0.0.1:8080/q
//! ```
//!
//! 1. the load starts (a [`Workload`]: a kiln load protocol, or an external command,
//!    [`ExecLoad`]) and the target's resources are sampled from `/proc` every second
//!    ([`procfs`]);
//! 2. after the warm-up, the target is recorded (`kiln record`'s events) for the duration:
//!    that is the *measurement window*;
//! 3. the load is stopped (unless it ended first), and everything — metadata, the load's
//!    and the target's series, latency histograms of the window, the profiles — becomes one
//!    [`kiln_store::RunData`], headline figures computed over the window only.
//!
//! ## Design constraints
//!
//! * **One clock.** Profile samples, off-CPU blocks, the load's seconds and the resource
//!   samples are all stamped with CLOCK_MONOTONIC ns ([`kiln_os::clock`]), so a window
//!   of the run (the measurement, a sweep step, a bad second picked in the report) selects
//!   the same time in each.
//! * **One stop.** The caller's [`Stop`] (the binary's signal handling) ends everything;
//!   the run derives its own stops for the load and the recorder from it
//!   ([`Stop::child`]), so the end of the measurement stops the load without looking like
//!   a Ctrl-C, and a Ctrl-C stops both.
//! * **Nothing is lost.** A target that exits, a load that fails or ends early, a recorder
//!   that cannot start, a signal: the run is still returned, marked incomplete with the
//!   reason ([`kiln_store::RunStatus`]), for the caller to store.
//! * **The target's own view.** With [`RunOptions::pprof`], a Go target's CPU, mutex,
//!   block, heap and goroutine profiles of the same window are fetched from its
//!   `net/http/pprof` endpoint and kept beside kiln's ([`pprof`]).
//! * **Protocol-neutral.** The orchestration knows loads only through [`Workload`]: per-second
//!   [`LoadTick`]s of named values with units and latency histograms.
#![deny(missing_docs)]

mod engine;
mod exec;
pub mod files;
mod headline;
pub mod jvm;
mod meta;
mod orchestrate;
pub mod pprof;
pub mod procfs;
pub mod remote;
pub mod summary;
pub mod variants;

pub use engine::EngineLoad;
pub use exec::ExecLoad;
pub use files::{read_options, FileReaders};
pub use headline::{group_cpu, GroupCpu, FLEET_UNIT};
pub(crate) use kiln_hdr::decode_histogram;
pub use orchestrate::run;
pub use orchestrate::{sweep_too_long, FLEET_STALL};

use kiln_os::stop::Stop;
use kiln_record::{EventSpec, UnwindMode};
use kiln_store::{Attachment, LoadInfo, Window};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Why a run could not be made at all (a run that merely ended early is returned,
/// marked incomplete, instead).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The target process does not exist.
    #[error("no process {0} (the target must be running; give its pid with -p)")]
    NoTarget(u32),
    /// The load could not start (nothing was measured).
    #[error("the load did not start: {0}")]
    LoadStart(String),
    /// An option has a value that cannot work.
    #[error("invalid {flag}: {reason}")]
    Option {
        /// The flag.
        flag: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// What a value of a load's second measures, which says how the same second from several
/// sources (load agents on other hosts) combines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueKind {
    /// A counter's rate over the second (unit `X/s`): its count is the rate times the
    /// second's length, and counts add.
    #[default]
    Rate,
    /// A latency percentile (µs) of the second's histogram: taken again from the merged
    /// histograms.
    Percentile,
    /// A flag, 0 or 1: set when any source set it.
    Flag,
    /// A level observed at the end of the second (a queue's depth, messages): sources that
    /// watch the same queue agree, so the largest reading stands.
    Level,
}

/// One value of a load's second: a counter's rate, a latency percentile or a flag, as a
/// column of the run's `load` series.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Value {
    /// Its column (`sent`, `consumer_latency p99`, `blocked`).
    pub name: String,
    /// Its unit (`msg/s`, `us`, `bool`).
    pub unit: String,
    /// What it measures.
    pub kind: ValueKind,
    /// The value, when the second has one.
    pub value: Option<f64>,
}

/// One second of a load, protocol-neutral: the one type of a second after the load
/// engine, kept by the run, sent by agents (its histograms as the frame's blobs) and
/// merged across hosts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadTick {
    /// End of the interval, CLOCK_MONOTONIC ns.
    pub end_ns: u64,
    /// Its length, seconds.
    pub interval_s: f64,
    /// Operations completed in it (messages received, requests answered), when counted.
    pub completed: Option<u64>,
    /// Operations sent in it (messages published), when counted.
    pub sent: Option<u64>,
    /// Every value of the second: rates (`msg/s`), latency percentiles (`us`), flags
    /// (`bool`: 0 or 1), levels (`msg`).
    pub values: Vec<Value>,
    /// The second's latency histograms (µs), the headline one first, each holding a
    /// value; merged exactly over a window.
    pub latency: Vec<EncodedLatency>,
}

/// One latency histogram of a second (µs), encoded once as the run store and the agents'
/// wire carry it (HdrHistogram's V2 with Deflate: a few hundred bytes instead of the
/// ~190 KB of a decoded histogram, so an hour-long run stays small).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EncodedLatency {
    /// Its name (`consumer_latency`, `request`).
    pub name: String,
    /// The encoded histogram; on the agents' wire it travels as the frame's blob, not in
    /// the message.
    pub data: Vec<u8>,
}

/// In a message, a histogram is its name (its bytes are the frame's blob).
impl Serialize for EncodedLatency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name)
    }
}

impl<'de> Deserialize<'de> for EncodedLatency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(EncodedLatency {
            name: String::deserialize(d)?,
            data: Vec::new(),
        })
    }
}

impl EncodedLatency {
    /// `h` encoded under `name`; `None` when it holds no value or cannot be encoded.
    pub fn encode(name: impl Into<String>, h: &hdrhistogram::Histogram<u64>) -> Option<Self> {
        if h.is_empty() {
            return None;
        }
        Some(EncodedLatency {
            name: name.into(),
            data: kiln_hdr::encode_histogram(h).ok()?,
        })
    }

    /// The histogram, unless its bytes are not one (an agent's may not be).
    pub fn decode(&self) -> Option<hdrhistogram::Histogram<u64>> {
        decode_histogram(&self.data)
    }
}

impl LoadTick {
    /// The value named `name`, when the second has it.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.values
            .iter()
            .find(|v| v.name == name)
            .and_then(|v| v.value)
    }

    /// A counter's count in this second: its rate times the second's length (0 when the
    /// second has none).
    pub fn count(&self, name: &str) -> f64 {
        self.value(name).map_or(0.0, |r| r * self.interval_s)
    }

    /// The 99th percentile of its headline latency (µs), when it has one.
    pub fn p99_us(&self) -> Option<f64> {
        let first = self.latency.first()?;
        self.value(&format!("{} p99", first.name))
    }
}

/// How a load ended.
#[derive(Debug, Default)]
pub struct LoadOutcome {
    /// It started (connected, spawned); otherwise the run is an error.
    pub started: bool,
    /// It ended on its own (a count, its own duration, a failure) rather than by the stop.
    pub ended_by_itself: bool,
    /// What went wrong, if anything.
    pub failure: Option<String>,
    /// The load's own options and summary.
    pub report: serde_json::Value,
    /// Files to keep with the run.
    pub attachments: Vec<Attachment>,
    /// Windows the load defines (sweep steps), CLOCK_MONOTONIC ns.
    pub windows: Vec<Window>,
    /// Whole-run latency histograms, when the load keeps them (µs).
    pub histograms: Vec<(String, hdrhistogram::Histogram<u64>)>,
}

impl LoadOutcome {
    /// A load that could not start.
    pub(crate) fn failed_to_start(why: String) -> Self {
        LoadOutcome {
            failure: Some(why),
            ended_by_itself: true,
            ..Default::default()
        }
    }
}

/// What a running load reports.
pub trait LoadEvents {
    /// The load is going (connected; an external command spawned, with its pid).
    fn started(&mut self, pid: Option<u32>);
    /// A second has passed.
    fn tick(&mut self, tick: LoadTick);
}

/// A workload `kiln run` drives: one of kiln's load protocols (the load engine's
/// [`kiln_loadgen::Load`]), an external command, or the loads of agents on other hosts.
pub trait Workload: Send {
    /// What it is, for the run's metadata.
    fn info(&self) -> LoadInfo;
    /// Ends the load's seconds on the grid of whole seconds from `origin_mono_ns`
    /// (`CLOCK_MONOTONIC`, ns; see [`kiln_loadgen::Load::align_ticks`]): `kiln agent` sets
    /// it for each load it runs, so that the seconds of several hosts merge exactly.
    fn align_ticks(&mut self, origin_mono_ns: u64);
    /// Runs until it ends by itself or `stop` is raised, reporting through `events`.
    fn run(&mut self, stop: &Stop, events: &mut dyn LoadEvents) -> LoadOutcome;
    /// A sweep's schedule ([`kiln_loadgen::Load::schedule`]): how many steps, each how
    /// long. Default: none.
    fn schedule(&self) -> Option<(usize, Duration)> {
        None
    }
}

/// Options of a run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `--name`. No default.
    pub name: String,
    /// Group of `--repeat`ed runs; default: the name and start time.
    pub group: Option<String>,
    /// Position in the group and its size. Default: (1, 1).
    pub repeat: (u32, u32),
    /// `--note`.
    pub note: Option<String>,
    /// `--tag k=v`.
    pub tags: Vec<(String, String)>,
    /// The target's processes. No default.
    pub pids: Vec<u32>,
    /// Events to record. Default: cpu.
    pub events: Vec<EventSpec>,
    /// cpu sampling frequency, Hz. Default: 999.
    pub frequency: u32,
    /// Off-CPU blocks shorter than this (µs) add no time. Default: 0.
    pub min_block_us: u64,
    /// Where stacks are unwound. Default: auto.
    pub unwind: UnwindMode,
    /// Measurement length. Default: 30 s.
    pub duration: Duration,
    /// Load time before the measurement. Default: 0.
    pub warmup: Duration,
    /// After `warmup`, warm up until a fleet (MQTT `conn`) holds every connection it was
    /// asked for (`--warmup fleet`), or has opened none for [`FLEET_STALL`]. Default: false.
    pub warmup_fleet: bool,
    /// kiln's command line, kept with the run.
    pub command_line: Vec<String>,
    /// Resource sampling interval. Default: 1 s.
    pub sample_interval: Duration,
    /// The target's `net/http/pprof` base URLs (`http://127.0.0.1:6060/debug/pprof/`),
    /// as [`pprof::normalise_url`] gives them: its own profiles of the measurement window
    /// are kept with the run. Default: none.
    pub pprof: Vec<String>,
    /// How many thread dumps to take of a JVM target over the measurement window (each a
    /// safepoint pause: see [`jvm`]); 0 takes none. Default: [`jvm::DUMPS`].
    pub jvm_dumps: u32,
    /// Other hosts: load agents and processes recorded there (`--agent`, `-p HOST:PID`),
    /// reached over SSH. Default: none.
    pub remote: remote::RemoteOptions,
    /// The most bytes a pprof answer may inflate to and an agent's frame may have
    /// (`--max-input`). Default: [`kiln_model::input::DEFAULT_LIMIT`].
    pub max_input: u64,
}

impl RunOptions {
    /// Defaults for a run named `name` of `pids`.
    pub fn new(name: &str, pids: Vec<u32>) -> Self {
        RunOptions {
            name: name.to_string(),
            group: None,
            repeat: (1, 1),
            note: None,
            tags: Vec::new(),
            pids,
            events: vec![EventSpec::Cpu],
            frequency: 999,
            min_block_us: 0,
            unwind: UnwindMode::Auto,
            duration: Duration::from_secs(30),
            warmup: Duration::ZERO,
            warmup_fleet: false,
            command_line: Vec::new(),
            sample_interval: Duration::from_secs(1),
            pprof: Vec::new(),
            jvm_dumps: jvm::DUMPS,
            remote: remote::RemoteOptions::default(),
            max_input: kiln_model::input::DEFAULT_LIMIT,
        }
    }
}

/// Where a run is, for a progress line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Load running, not measured yet.
    Warmup,
    /// Recording.
    Measure,
    /// Stopping the load, building the profiles.
    Finishing,
}

/// A progress report, about once a second.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Phase.
    pub phase: Phase,
    /// Seconds since the run started.
    pub elapsed_s: f64,
    /// Seconds into the measurement (0 before it).
    pub measured_s: f64,
    /// The load's latest second: completed operations per second.
    pub rate: Option<f64>,
    /// Its p99 latency, µs.
    pub p99_us: Option<f64>,
    /// Target CPU in the latest second, % of one CPU.
    pub target_cpu_pct: Option<f64>,
}
