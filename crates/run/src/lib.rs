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
//! 1. the load starts (a [`Load`]: a kiln load protocol, or an external command,
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
//!   samples are all stamped with CLOCK_MONOTONIC ns ([`kiln_model::clock`]), so a window
//!   of the run (the measurement, a sweep step, a bad second picked in the report) selects
//!   the same time in each.
//! * **One stop.** The caller's [`Stop`] (the binary's signal handling) ends everything;
//!   the run derives its own stops for the load and the recorder from it
//!   ([`Stop::child`]), so the end of the measurement stops the load without looking like
//!   a Ctrl-C, and a Ctrl-C stops both.
//! * **Nothing is lost.** A target that exits, a load that fails or ends early, a recorder
//!   that cannot start, a signal: the run is still returned, marked incomplete with the
//!   reason ([`kiln_store::RunStatus`]), for the caller to store.
//! * **Protocol-neutral.** The orchestration knows loads only through [`Load`]: per-second
//!   [`LoadTick`]s of named values with units and latency histograms.
#![deny(missing_docs)]

pub mod compare;
mod engine;
mod exec;
mod headline;
mod meta;
pub mod procfs;
pub mod window;
pub mod wrk;

pub use engine::EngineLoad;
pub use exec::ExecLoad;
pub use headline::deserialise as decode_histogram;

use kiln_model::stop::Stop;
use kiln_model::Profile;
use kiln_record::{EventSpec, RecordOptions, StopReason, Target, UnwindMode};
use kiln_store::{Attachment, LoadInfo, RunData, RunMeta, RunStatus, Window};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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

/// One second of a load, protocol-neutral.
#[derive(Debug, Clone, Default)]
pub struct LoadTick {
    /// End of the interval, CLOCK_MONOTONIC ns.
    pub end_ns: u64,
    /// Its length, seconds.
    pub interval_s: f64,
    /// Operations completed in it (messages received, requests answered), when counted.
    pub completed: Option<u64>,
    /// Operations sent in it (messages published), when counted.
    pub sent: Option<u64>,
    /// Every value of the second as `(name, unit, value)`: rates (`msg/s`), latency
    /// percentiles (`us`), flags (`bool`: 0 or 1).
    pub values: Vec<(String, String, Option<f64>)>,
    /// The second's latency histograms (µs) by name, the headline one first; merged
    /// exactly over a window.
    pub latency: Vec<(String, hdrhistogram::Histogram<u64>)>,
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
    pub fn failed_to_start(why: String) -> Self {
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

/// A load `kiln run` can drive: a kiln load protocol or an external command.
pub trait Load: Send {
    /// What it is, for the run's metadata.
    fn info(&self) -> LoadInfo;
    /// Runs until it ends by itself or `stop` is raised, reporting through `events`.
    fn run(&mut self, stop: &Stop, events: &mut dyn LoadEvents) -> LoadOutcome;
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
    /// kiln's command line, kept with the run.
    pub command_line: Vec<String>,
    /// Resource sampling interval. Default: 1 s.
    pub sample_interval: Duration,
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
            command_line: Vec::new(),
            sample_interval: Duration::from_secs(1),
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

fn lock(
    s: &std::sync::Mutex<procfs::ProcSampler>,
) -> std::sync::MutexGuard<'_, procfs::ProcSampler> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

enum Msg {
    Started(Option<u32>),
    Tick(LoadTick),
    Done(LoadOutcome),
}

struct Sender(mpsc::Sender<Msg>);

impl LoadEvents for Sender {
    fn started(&mut self, pid: Option<u32>) {
        let _ = self.0.send(Msg::Started(pid));
    }
    fn tick(&mut self, tick: LoadTick) {
        let _ = self.0.send(Msg::Tick(tick));
    }
}

fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        s => format!("signal {s}"),
    }
}

/// How long a load gets to end after it is told to stop.
const LOAD_STOP_GRACE: Duration = Duration::from_secs(30);

/// Runs one pass: load, warm-up, measurement, and returns the run (complete or not).
pub fn run(
    opts: &RunOptions,
    load: &mut dyn Load,
    stop: &Stop,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunData, RunError> {
    if opts.pids.is_empty() {
        return Err(RunError::Option {
            flag: "-p/--pid",
            reason: "give the pid of the process to profile".into(),
        });
    }
    for &p in &opts.pids {
        if !std::path::Path::new(&format!("/proc/{p}")).exists() {
            return Err(RunError::NoTarget(p));
        }
    }
    if opts.duration.is_zero() {
        return Err(RunError::Option {
            flag: "-d/--duration",
            reason: "the measurement needs a positive duration".into(),
        });
    }
    let started_unix_ms = kiln_model::clock::unix_ms();
    let t0 = Instant::now();
    let target = meta::target_info(&opts.pids);
    let load_info = load.info();
    let sampler = std::sync::Arc::new(std::sync::Mutex::new(procfs::ProcSampler::new(
        &opts.pids, None,
    )));
    lock(&sampler).sample();
    let sampler_stop = Stop::new();
    let load_stop = stop.child();
    let rec_stop = stop.child();
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut rec_opts = RecordOptions::new(Target::Pids(opts.pids.clone()));
    rec_opts.events = opts.events.clone();
    rec_opts.frequency = opts.frequency;
    rec_opts.duration = Some(opts.duration);
    rec_opts.offcpu_min_block_us = opts.min_block_us;
    rec_opts.unwind = opts.unwind;
    rec_opts.stop = Some(rec_stop.clone());

    std::thread::scope(|scope| -> Result<RunData, RunError> {
        // Resource sampling, every interval, until the run ends.
        {
            let sampler = sampler.clone();
            let sampler_stop = sampler_stop.clone();
            let every = opts.sample_interval;
            scope.spawn(move || {
                let mut next = Instant::now() + every;
                while !sampler_stop.sleep_until(next) {
                    lock(&sampler).sample();
                    next += every;
                }
            });
        }
        // The load.
        {
            let tx = tx.clone();
            let load_stop = load_stop.clone();
            scope.spawn(move || {
                let mut events = Sender(tx.clone());
                let outcome = load.run(&load_stop, &mut events);
                let _ = tx.send(Msg::Done(outcome));
            });
        }
        drop(tx);

        let mut ticks: Vec<headline::Second> = Vec::new();
        let mut outcome: Option<LoadOutcome> = None;
        let mut last_progress = Instant::now();
        let progress = |phase,
                        ticks: &[headline::Second],
                        measure_from: Option<Instant>,
                        s: &procfs::ProcSampler| {
            let last = ticks.last();
            Progress {
                phase,
                elapsed_s: t0.elapsed().as_secs_f64(),
                measured_s: measure_from.map_or(0.0, |m| m.elapsed().as_secs_f64()),
                rate: last.and_then(|t| {
                    t.tick
                        .completed
                        .or(t.tick.sent)
                        .map(|c| c as f64 / t.tick.interval_s.max(1e-9))
                }),
                p99_us: last.and_then(|t| t.p99_us),
                target_cpu_pct: s.latest_cpu_pct(),
            }
        };
        // Until the load is going.
        let mut load_pid = None;
        loop {
            match rx.recv() {
                Ok(Msg::Started(pid)) => {
                    load_pid = pid;
                    break;
                }
                Ok(Msg::Tick(t)) => ticks.push(headline::Second::new(t)),
                Ok(Msg::Done(o)) => {
                    sampler_stop.raise();
                    if !o.started {
                        return Err(RunError::LoadStart(
                            o.failure.unwrap_or_else(|| "it ended at once".into()),
                        ));
                    }
                    outcome = Some(o);
                    break;
                }
                Err(_) => {
                    sampler_stop.raise();
                    return Err(RunError::LoadStart("the load thread ended".into()));
                }
            }
        }
        lock(&sampler).set_load_pid(load_pid);
        // Warm-up: the load runs, nothing is recorded.
        let warm_end = Instant::now() + opts.warmup;
        while outcome.is_none() && !stop.is_raised() && Instant::now() < warm_end {
            let wait = warm_end
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(200));
            match rx.recv_timeout(wait) {
                Ok(Msg::Tick(t)) => ticks.push(headline::Second::new(t)),
                Ok(Msg::Done(o)) => outcome = Some(o),
                Ok(Msg::Started(_)) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if last_progress.elapsed() >= Duration::from_secs(1) {
                on_progress(&progress(Phase::Warmup, &ticks, None, &lock(&sampler)));
                last_progress = Instant::now();
            }
        }
        let mut reasons: Vec<String> = Vec::new();
        if let Some(o) = &outcome {
            reasons.push(match &o.failure {
                Some(f) => format!("the load failed during the warm-up: {f}"),
                None => "the load ended during the warm-up".into(),
            });
        }
        // The measurement: record while the load runs.
        let measure_start = Instant::now();
        let mut measure_start_ns = kiln_model::clock::monotonic_ns();
        let recording = if reasons.is_empty() && !stop.is_raised() {
            let rec_opts = &rec_opts;
            let recorder = scope.spawn(move || kiln_record::record(rec_opts));
            while !recorder.is_finished() {
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(Msg::Tick(t)) => ticks.push(headline::Second::new(t)),
                    Ok(Msg::Done(o)) => {
                        let at = measure_start.elapsed().as_secs_f64();
                        reasons.push(match &o.failure {
                            Some(f) => {
                                format!("the load failed {at:.1} s into the measurement: {f}")
                            }
                            None => format!("the load ended {at:.1} s into the measurement"),
                        });
                        outcome = Some(o);
                        rec_stop.raise();
                    }
                    _ => {}
                }
                if last_progress.elapsed() >= Duration::from_secs(1) {
                    on_progress(&progress(
                        Phase::Measure,
                        &ticks,
                        Some(measure_start),
                        &lock(&sampler),
                    ));
                    last_progress = Instant::now();
                }
            }
            Some(recorder.join())
        } else {
            None
        };
        let mut measure_end_ns = kiln_model::clock::monotonic_ns();
        // Stop the load; it gets a grace period to finish its last second.
        load_stop.raise();
        on_progress(&progress(
            Phase::Finishing,
            &ticks,
            Some(measure_start),
            &lock(&sampler),
        ));
        let deadline = Instant::now() + LOAD_STOP_GRACE;
        while outcome.is_none() {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Msg::Tick(t)) => ticks.push(headline::Second::new(t)),
                Ok(Msg::Done(o)) => outcome = Some(o),
                Ok(Msg::Started(_)) => {}
                Err(_) => {
                    reasons.push(format!(
                        "the load did not stop within {} s of being told to",
                        LOAD_STOP_GRACE.as_secs()
                    ));
                    break;
                }
            }
        }
        lock(&sampler).sample();
        sampler_stop.raise();

        let recorded = recording.is_some();
        let mut warnings = Vec::new();
        let mut profiles: Vec<Profile> = Vec::new();
        let mut events = Vec::new();
        match recording {
            Some(Ok(Ok(rec))) => {
                if let Some((a, b)) = rec.sampling_window() {
                    measure_start_ns = a;
                    measure_end_ns = b;
                }
                match rec.stopped {
                    StopReason::Duration => {}
                    StopReason::TargetExited => reasons.push(format!(
                        "the target exited {:.1} s into the measurement",
                        (measure_end_ns.saturating_sub(measure_start_ns)) as f64 / 1e9
                    )),
                    StopReason::Interrupted => {
                        if !stop.is_raised() && reasons.is_empty() {
                            reasons.push("the recording was stopped early".into());
                        }
                    }
                    _ => reasons.push("the recording stopped early".into()),
                }
                warnings.extend(headline::recording_warnings(&rec.summary));
                events = rec.profiles.iter().map(|p| p.event.name.clone()).collect();
                profiles = rec.profiles;
            }
            Some(Ok(Err(kiln_record::RecordError::NoSuchProcess(_)))) => {
                measure_end_ns = measure_start_ns;
                reasons.push("the target exited before the recording could start".into())
            }
            Some(Ok(Err(e))) => {
                measure_end_ns = measure_start_ns;
                reasons.push(format!("the recording failed: {e}"))
            }
            Some(Err(_)) => reasons.push("the recording failed: the recorder panicked".into()),
            None => {}
        }
        if let Some(sig) = stop.signal() {
            reasons.insert(0, format!("interrupted by {}", signal_name(sig)));
        } else if stop.is_raised() {
            reasons.insert(0, "interrupted".into());
        }
        if !recorded {
            measure_end_ns = measure_start_ns;
        }
        let outcome = outcome.unwrap_or_default();
        let measure = Window {
            name: "measure".into(),
            start_ns: measure_start_ns,
            end_ns: measure_end_ns,
        };
        let sampler = std::mem::replace(&mut *lock(&sampler), procfs::ProcSampler::new(&[], None));
        let computed = headline::compute(&measure, &ticks, &sampler, &load_info, &outcome);
        warnings.extend(computed.warnings);
        let mut series = vec![headline::load_series(&ticks)];
        series.retain(|s| !s.time_ns.is_empty());
        series.extend(sampler.finish());
        let mut load_info = load_info;
        load_info.report = outcome.report;
        let status = RunStatus {
            complete: reasons.is_empty(),
            reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
        };
        let meta = RunMeta {
            id: None,
            name: opts.name.clone(),
            group: opts
                .group
                .clone()
                .unwrap_or_else(|| format!("{}@{started_unix_ms}", opts.name)),
            repeat: opts.repeat,
            started_unix_ms,
            status,
            command_line: opts.command_line.clone(),
            note: opts.note.clone(),
            tags: opts.tags.clone(),
            host: meta::host_name(),
            kernel: meta::kernel_release(),
            cpus: meta::cpus(),
            kiln_version: env!("CARGO_PKG_VERSION").to_string(),
            target,
            load: load_info,
            events,
            frequency: opts.frequency,
            measure: measure.clone(),
            windows: outcome.windows.clone(),
            headline: computed.headline,
            warnings,
        };
        Ok(RunData {
            meta,
            series,
            histograms: computed.histograms,
            profiles,
            attachments: outcome.attachments,
        })
    })
}
