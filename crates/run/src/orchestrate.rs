//! One pass of `kiln run`, as stages a reader can follow:
//!
//! 1. **prepare**: the recorder loads its programs and opens its events (it can take
//!    seconds: eBPF verification) while the load connects — but it does not sample yet
//!    ([`kiln_record::StartGate`]);
//! 2. **start**: the load starts; with no warm-up the recorder is ready first, so a load
//!    with its own schedule (a sweep) is recorded from its first second;
//! 3. **warm up**: the load runs unrecorded for `--warmup`;
//! 4. **measure**: the gate opens and the recorder samples for `-d`; a load that ends or
//!    fails stops it early;
//! 5. **finish**: the load is told to stop and given a grace period, the resource sampler
//!    takes its last sample;
//! 6. **build**: the run's metadata, series, window histograms and profiles.
use crate::headline;
use crate::pprof::{PprofResult, PprofSession};
use crate::procfs::ProcSampler;
use crate::remote::fleet::{merge_profiles, HostRecording};
use crate::remote::{RemoteHosts, RemoteLoad, RemoteRecordings};
use crate::{
    meta, LoadEvents, LoadOutcome, LoadTick, Phase, Progress, RunError, RunOptions, Workload,
};
use kiln_os::stop::Stop;
use kiln_record::{RecordError, RecordOptions, Recording, StartGate, StopReason, Target};
use kiln_store::{LoadInfo, RunData, RunMeta, RunStatus, Window};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

/// How long a load gets to end after it is told to stop: longer than the loads of other
/// hosts get ([`crate::remote::fleet::STOP_GRACE`]), so that a host's load that does not
/// stop is named, once, by the host's own deadline.
const LOAD_STOP_GRACE: Duration =
    Duration::from_secs(crate::remote::fleet::STOP_GRACE.as_secs() + 5);

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

fn lock(s: &Mutex<ProcSampler>) -> MutexGuard<'_, ProcSampler> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

type RecorderHandle<'s> = ScopedJoinHandle<'s, Result<Recording, RecordError>>;

/// How long `--warmup fleet` waits for a fleet that opens no more connections before the
/// measurement starts anyway (and says so).
pub const FLEET_STALL: Duration = Duration::from_secs(30);

/// Connections a fleet holds by the ticks so far: those its seconds counted connected,
/// less those dropped.
fn held(ticks: &[LoadTick]) -> u64 {
    (total(ticks, kiln_store::columns::CONNECTED) - total(ticks, kiln_store::columns::DROPPED))
        .round()
        .max(0.0) as u64
}

/// Counter `name`'s total over the load's ticks so far.
fn total(ticks: &[LoadTick], name: &str) -> f64 {
    ticks
        .iter()
        .flat_map(|t| t.values.iter().map(move |v| (v, t.interval_s)))
        .filter(|(v, _)| v.name == name)
        .filter_map(|(v, s)| Some(v.value? * s))
        .sum()
}

/// What the pass has seen so far.
struct Pass<'a> {
    opts: &'a RunOptions,
    stop: &'a Stop,
    on_progress: &'a mut dyn FnMut(&Progress),
    rx: Receiver<Msg>,
    sampler: Arc<Mutex<ProcSampler>>,
    t0: Instant,
    ticks: Vec<LoadTick>,
    outcome: Option<LoadOutcome>,
    started: bool,
    reasons: Vec<String>,
    measure_from: Option<Instant>,
    /// When the measurement ended: the progress line's measured seconds stop there, as
    /// the run's do.
    measure_to: Option<Instant>,
    /// The load was told to stop: its end is expected, not a reason.
    stopping: bool,
    /// The load ran its whole schedule (every step of a sweep) and ended: the recording
    /// stopped with it, as it should.
    schedule_done: bool,
    last_progress: Instant,
    /// The connections a fleet was asked to hold (a load of [`crate::FLEET_UNIT`]).
    fleet_asked: Option<u64>,
    /// Warnings of the pass itself (a fleet still connecting when the measurement began).
    warnings: Vec<String>,
    /// The services the target was connected to as the window ended, the load still
    /// running (a connection per call is open then, gone once the load stops).
    peers: Vec<kiln_store::Peer>,
}

impl Pass<'_> {
    /// Handles one message from the load.
    fn take(&mut self, m: Msg) {
        match m {
            Msg::Started(pid) => {
                self.started = true;
                lock(&self.sampler).set_load_pid(pid);
            }
            Msg::Tick(t) => self.ticks.push(t),
            Msg::Done(o) => {
                if self.stopping {
                    // Ended because it was told to.
                } else if self.measure_from.is_some()
                    && o.failure.is_none()
                    && !o.windows.is_empty()
                    && !self.stop.is_raised()
                {
                    // A sweep that ran every step: its schedule is the measurement, however
                    // long -d was.
                    self.schedule_done = true;
                } else if let Some(from) = self.measure_from {
                    let at = from.elapsed().as_secs_f64();
                    self.reasons.push(match &o.failure {
                        Some(f) => format!("the load failed {at:.1} s into the measurement: {f}"),
                        None => format!("the load ended {at:.1} s into the measurement"),
                    });
                } else if o.started || self.started {
                    self.reasons.push(match &o.failure {
                        Some(f) => format!("the load failed before the measurement: {f}"),
                        None => "the load ended before the measurement".into(),
                    });
                }
                self.outcome = Some(o);
            }
        }
    }

    /// Waits up to `d` for a message from the load; returns false when the load has gone.
    fn pump(&mut self, d: Duration) -> bool {
        match self.rx.recv_timeout(d) {
            Ok(m) => {
                self.take(m);
                true
            }
            Err(RecvTimeoutError::Timeout) => true,
            Err(RecvTimeoutError::Disconnected) => false,
        }
    }

    fn progress(&mut self, phase: Phase, force: bool) {
        if !force && self.last_progress.elapsed() < Duration::from_secs(1) {
            return;
        }
        self.last_progress = Instant::now();
        let last = self.ticks.last();
        let p = Progress {
            phase,
            elapsed_s: self.t0.elapsed().as_secs_f64(),
            measured_s: self.measure_from.map_or(0.0, |m| {
                self.measure_to
                    .unwrap_or_else(Instant::now)
                    .saturating_duration_since(m)
                    .as_secs_f64()
            }),
            rate: last.and_then(|t| {
                t.completed
                    .or(t.sent)
                    .map(|c| c as f64 / t.interval_s.max(1e-9))
            }),
            p99_us: last.and_then(LoadTick::p99_us),
            // (Never waiting for the sampler: on a saturated machine a sample can take
            // seconds, and the line that says the measurement began must not wait for it.)
            target_cpu_pct: match self.sampler.try_lock() {
                Ok(s) => s.latest_cpu_pct(),
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().latest_cpu_pct(),
                Err(std::sync::TryLockError::WouldBlock) => None,
            },
        };
        (self.on_progress)(&p);
    }

    /// Waits until the recorders, here and on other hosts, are ready to sample (or have
    /// given up).
    fn await_ready(
        &mut self,
        gate: &StartGate,
        recorder: Option<&RecorderHandle<'_>>,
        remote: &mut Option<RemoteRecordings<'_>>,
    ) {
        loop {
            let local = recorder.is_none_or(|r| gate.ready.is_raised() || r.is_finished());
            if let Some(r) = remote.as_mut() {
                r.poll(Duration::ZERO);
            }
            let others = remote.as_ref().is_none_or(|r| r.all_ready());
            if (local && others) || self.stop.is_raised() {
                return;
            }
            self.pump(Duration::from_millis(20));
            self.progress(Phase::Warmup, false);
        }
    }

    /// Waits until the load has started (its first second), ended, or the stop.
    fn await_start(&mut self) {
        while !self.started && self.outcome.is_none() && !self.stop.is_raised() {
            if !self.pump(Duration::from_millis(50)) {
                break;
            }
        }
    }

    /// Lets the load run unrecorded for the warm-up; with `--warmup fleet`, then until the
    /// fleet holds every connection asked for (or opens none for [`FLEET_STALL`]).
    fn warm_up(&mut self) {
        let end = Instant::now() + self.opts.warmup;
        while self.outcome.is_none() && !self.stop.is_raised() && Instant::now() < end {
            let wait = end
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(200));
            if !self.pump(wait) {
                break;
            }
            self.progress(Phase::Warmup, false);
        }
        let Some(asked) = self.fleet_asked.filter(|_| self.opts.warmup_fleet) else {
            return;
        };
        let (mut last, mut since) = (held(&self.ticks), Instant::now());
        while self.outcome.is_none() && !self.stop.is_raised() && last < asked {
            if since.elapsed() >= FLEET_STALL {
                self.warnings.push(format!(
                    "--warmup fleet: the fleet opened no connection for {} s at {last} of {asked}; the measurement started without the rest",
                    FLEET_STALL.as_secs()
                ));
                return;
            }
            if !self.pump(Duration::from_millis(200)) {
                break;
            }
            self.progress(Phase::Warmup, false);
            let now = held(&self.ticks);
            if now > last {
                (last, since) = (now, Instant::now());
            }
        }
    }

    /// A fleet that does not hold every connection asked for when the measurement begins
    /// is said: its figures cover a fleet still growing.
    fn check_fleet_at_start(&mut self) {
        let Some(asked) = self.fleet_asked else {
            return;
        };
        let now = held(&self.ticks);
        if now < asked && self.outcome.is_none() && !self.stop.is_raised() {
            // Attempts that failed are not coming (without --reconnect): a fleet short of
            // them is the broker's refusal, not one still growing.
            let failed = total(&self.ticks, kiln_store::columns::FAILED).round() as u64;
            let why = if failed > 0 {
                format!(
                    "{} connection attempts failed (the load's events say why: refused, or not answered in time)",
                    kiln_model::thousands(failed)
                )
            } else {
                "still connecting: its figures cover a fleet still growing; --warmup fleet waits for every connection".to_string()
            };
            self.warnings.push(format!(
                "the fleet held {} of the {} connections asked for when the measurement began ({why})",
                kiln_model::thousands(now),
                kiln_model::thousands(asked)
            ));
        }
    }

    /// Keeps reading the load while the recorders sample; a load that ends stops them.
    /// Without a recorder here, the measurement lasts `-d` (or until the load ends or the
    /// stop).
    fn measure(
        &mut self,
        recorder: Option<&RecorderHandle<'_>>,
        rec_stop: &Stop,
        remote: &mut Option<RemoteRecordings<'_>>,
    ) {
        self.check_fleet_at_start();
        let from = Instant::now();
        self.measure_from = Some(from);
        // Said as it begins (not at the next second's line): a log, or a script
        // measuring the same seconds by another account, needs the moment.
        self.progress(Phase::Measure, true);
        let end = from + self.opts.duration;
        loop {
            let over = match recorder {
                Some(r) => r.is_finished(),
                None => Instant::now() >= end || rec_stop.is_raised(),
            };
            if over {
                break;
            }
            let had = self.outcome.is_some();
            let wait = end
                .saturating_duration_since(Instant::now())
                .clamp(Duration::from_millis(1), Duration::from_millis(100));
            self.pump(wait);
            if !had && self.outcome.is_some() {
                rec_stop.raise();
            }
            if let Some(r) = remote.as_mut() {
                r.poll(Duration::ZERO);
            }
            self.progress(Phase::Measure, false);
        }
        self.measure_to = Some(Instant::now());
    }

    /// Tells the load to stop and waits for its outcome.
    fn finish_load(&mut self, load_stop: &Stop) {
        self.stopping = true;
        load_stop.raise();
        self.progress(Phase::Finishing, true);
        let deadline = Instant::now() + LOAD_STOP_GRACE;
        while self.outcome.is_none() {
            match self
                .rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(m) => self.take(m),
                Err(_) => {
                    self.reasons.push(format!(
                        "the load did not stop within {} s of being told to",
                        LOAD_STOP_GRACE.as_secs()
                    ));
                    break;
                }
            }
        }
    }
}

/// What the recording gave, as the run keeps it.
#[derive(Default)]
struct Recorded {
    window: Option<(u64, u64)>,
    profiles: Vec<kiln_model::Profile>,
    warnings: Vec<String>,
    /// CPU seconds kiln's eBPF programs used over the recording (when measured).
    bpf_cpu_s: Option<f64>,
}

fn recorded(
    r: Option<std::thread::Result<Result<Recording, RecordError>>>,
    pids: &[u32],
    stop: &Stop,
    schedule_done: bool,
    reasons: &mut Vec<String>,
) -> Recorded {
    let mut out = Recorded::default();
    match r {
        Some(Ok(Ok(rec))) => {
            out.window = rec.sampling_window();
            let secs = out.window.map_or(0.0, |(a, b)| (b - a) as f64 / 1e9);
            match rec.stopped {
                StopReason::Duration => {}
                StopReason::TargetExited => {
                    // A process kiln did not start ends without saying why; the kernel
                    // logs the kills its OOM killer makes.
                    reasons.push(format!(
                        "the target exited {secs:.1} s into the measurement{}",
                        oom_said(
                            pids,
                            out.window.map_or(0, |w| w.0.saturating_sub(OOM_SLACK_NS))
                        )
                    ))
                }
                StopReason::Interrupted => {
                    if !stop.is_raised() && !schedule_done && reasons.is_empty() {
                        reasons.push("the recording was stopped early".into());
                    }
                }
                _ => reasons.push("the recording stopped early".into()),
            }
            let mut rec = rec;
            rec.summary.find_packages();
            out.warnings =
                headline::recording_warnings(&rec.summary, out.window.map_or(0, |w| w.0));
            out.bpf_cpu_s = rec.summary.own_bpf_cpu_ns().map(|ns| ns as f64 / 1e9);
            out.profiles = rec.profiles;
        }
        Some(Ok(Err(RecordError::NoSuchProcess(_)))) => {
            reasons.push("the target exited before the recording could start".into())
        }
        Some(Ok(Err(e))) => reasons.push(format!("the recording failed: {e}")),
        Some(Err(_)) => reasons.push("the recording failed: the recorder panicked".into()),
        None => {}
    }
    out
}

/// The fleet's load in place of `load` when other hosts run it (not an `exec` load).
fn fleet_load<'f>(
    fleet: &'f Option<RemoteHosts>,
    load: &dyn Workload,
) -> Result<Option<RemoteLoad<'f>>, RunError> {
    match fleet {
        Some(f) if f.has_load() => {
            let info = load.info();
            if info.protocol == "exec" {
                return Err(RunError::Option {
                    flag: "--agent",
                    reason: "agents run kiln's own loads (load amqp|mqtt|http), not exec".into(),
                });
            }
            Ok(Some(RemoteLoad::new(f, info)))
        }
        _ => Ok(None),
    }
}

/// The local recorder's options: the run's events and rate, stopped by `rec_stop` and
/// started by `gate`.
fn record_options(opts: &RunOptions, rec_stop: &Stop, gate: &StartGate) -> RecordOptions {
    let mut rec_opts = RecordOptions::new(Target::Pids(opts.pids.clone()));
    rec_opts.events = opts.events.clone();
    rec_opts.frequency = opts.frequency;
    rec_opts.duration = Some(opts.duration);
    rec_opts.offcpu_min_block_us = opts.min_block_us;
    rec_opts.unwind = opts.unwind;
    rec_opts.stop = Some(rec_stop.clone());
    rec_opts.gate = Some(gate.clone());
    rec_opts
}

/// Samples `/proc` every `every` until `sampler_stop`.
fn spawn_sampler<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
    sampler: Arc<Mutex<ProcSampler>>,
    sampler_stop: Stop,
    every: Duration,
) {
    scope.spawn(move || {
        // Above the machine's other work (when kiln may: root), so that on a saturated
        // machine a sample is read at its time and in a moment, not stretched over the
        // seconds the sampler would wait for a CPU: its seconds are the series' grid. It
        // reads /proc and sleeps: what it takes from the target is small either way.
        // SAFETY: setpriority on this thread's own id; failure leaves it as it was.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            let _ = libc::setpriority(libc::PRIO_PROCESS, tid, -10);
        }
        let mut next = Instant::now() + every;
        while !sampler_stop.sleep_until(next) {
            lock(&sampler).sample();
            // A sample that took longer than the period (a saturated machine) is not made
            // up for by samples back to back, which would hold the sampler's lock without
            // a pause: the next comes at least half a period after this one ended.
            next = (next + every).max(Instant::now() + every / 2);
        }
    });
}

/// What the window gave: whether it measured, the target's own profiles (being fetched),
/// a JVM target's thread dumps, and the window (monotonic ns).
type WindowMeasured = (
    bool,
    Option<PprofSession>,
    Option<crate::jvm::DumpResult>,
    Option<(u64, u64)>,
    Option<PprofResult>,
);

/// What the scoped part of a pass hands back: the local recording, whether the gate
/// opened, the target's own profiles, and the measured window (monotonic ns).
struct Measured {
    recording: Option<std::thread::Result<Result<Recording, RecordError>>>,
    gate_opened: bool,
    fetched: Option<PprofResult>,
    dumps: Option<crate::jvm::DumpResult>,
    window: Option<(u64, u64)>,
    /// A Go target's goroutine waits over the window (with an off-CPU profile).
    parks: Option<PprofResult>,
}

impl<'a> Pass<'a> {
    fn new(
        opts: &'a RunOptions,
        stop: &'a Stop,
        on_progress: &'a mut dyn FnMut(&Progress),
        rx: Receiver<Msg>,
        sampler: Arc<Mutex<ProcSampler>>,
    ) -> Self {
        Pass {
            opts,
            stop,
            on_progress,
            rx,
            sampler,
            t0: Instant::now(),
            ticks: Vec::new(),
            outcome: None,
            started: false,
            reasons: Vec::new(),
            measure_from: None,
            measure_to: None,
            stopping: false,
            schedule_done: false,
            last_progress: Instant::now(),
            fleet_asked: None,
            warnings: Vec::new(),
            peers: Vec::new(),
        }
    }

    /// Step 4 of a pass, the measurement, unless the load never started, ended already,
    /// or a stop: the gate opens, the other hosts sample, the target's own profiles are
    /// fetched, a JVM target's thread dumps are taken. Returns whether it measured, the
    /// profiles' session, the dumps and the window (monotonic ns).
    fn measure_window(
        &mut self,
        gate: &StartGate,
        recorder: Option<&RecorderHandle<'_>>,
        rec_stop: &Stop,
        remote: &mut Option<RemoteRecordings<'_>>,
    ) -> WindowMeasured {
        let opts = self.opts;
        let measuring = self.outcome.is_none()
            && !self.stop.is_raised()
            && recorder.is_none_or(|r| gate.ready.is_raised() && !r.is_finished());
        let mut session = None;
        let mut dumps = None;
        let mut window = None;
        let mut parks = None;
        if measuring {
            gate.go.raise();
            let from = kiln_os::clock::monotonic_ns();
            if let Some(r) = remote.as_ref() {
                r.go();
            }
            // The target's own profiles of the same window, when asked for: fetched on
            // threads of their own, concurrently with the window.
            session = (!opts.pprof.is_empty())
                .then(|| crate::pprof::begin(&opts.pprof, opts.duration, opts.max_input));
            // A JVM target's thread dumps, spread over the window on a thread of their own.
            let jvm = opts
                .pids
                .first()
                .and_then(|&pid| crate::jvm::begin(pid, opts.duration, opts.jvm_dumps, self.stop));
            // A Go target's goroutines park without blocking a thread: with an off-CPU
            // profile asked for, their waits are traced too.
            let go = go_parks(opts);
            self.measure(recorder, rec_stop, remote);
            window = Some((from, kiln_os::clock::monotonic_ns()));
            self.peers = peers_seen(&opts.pids);
            parks = go.map(finish_go_parks);
            dumps = jvm.map(|j| j.finish());
            if let Some(r) = remote.as_ref() {
                r.stop();
            }
            session = session.map(|s| s.end());
        } else {
            rec_stop.raise();
            gate.go.raise();
            if let Some(r) = remote.as_ref() {
                r.stop();
            }
        }
        (measuring, session, dumps, window, parks)
    }

    /// The other hosts' recordings, then their clocks once more (the drift) and goodbye;
    /// their failures join the reasons.
    fn gather_hosts(
        &mut self,
        fleet: &RemoteHosts,
        remote: Option<RemoteRecordings<'_>>,
        window: Option<(u64, u64)>,
    ) -> Vec<HostRecording> {
        let mut remote = remote;
        if let Some(r) = remote.as_mut() {
            r.collect(REMOTE_RECORDING_WAIT);
        }
        fleet.finish();
        let hosts = remote.map(|r| r.take(window)).unwrap_or_default();
        // A host whose failure ended the load is in its reason already: said once.
        for failure in fleet.failures() {
            if !self.reasons.iter().any(|r| r.contains(&failure)) {
                self.reasons.push(failure);
            }
        }
        hosts
    }

    /// A stop from outside is the first reason.
    fn note_interruption(&mut self) {
        if let Some(sig) = self.stop.signal() {
            self.reasons
                .insert(0, format!("interrupted by {}", signal_name(sig)));
        } else if self.stop.is_raised() {
            self.reasons.insert(0, "interrupted".into());
        }
    }
}

/// The target's peers as the window ends, read up to five times 20 ms apart until one
/// reading finds any: a connection per call lives a few milliseconds, and on a busy
/// machine one may close between the reading of the target's descriptors and that of the
/// kernel's TCP table (a Python server opening one per request to the service it calls
/// was read with none, beside a CI run).
fn peers_seen(pids: &[u32]) -> Vec<kiln_store::Peer> {
    let mut seen = Vec::new();
    for i in 0..5 {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        seen = merge_peers(seen, crate::procfs::peers(pids));
        if !seen.is_empty() {
            break;
        }
    }
    seen
}

/// Two readings of the target's peers as one: each address once, with the most
/// connections either saw, the busiest first.
fn merge_peers(a: Vec<kiln_store::Peer>, b: Vec<kiln_store::Peer>) -> Vec<kiln_store::Peer> {
    let mut out: Vec<kiln_store::Peer> = Vec::new();
    for p in a.into_iter().chain(b) {
        match out.iter_mut().find(|o| o.address == p.address) {
            Some(o) => {
                o.connections = o.connections.max(p.connections);
                if o.process.is_none() {
                    o.process = p.process;
                }
            }
            None => out.push(p),
        }
    }
    out.sort_by(|x, y| {
        y.connections
            .cmp(&x.connections)
            .then(x.address.cmp(&y.address))
    });
    out
}

/// Starts tracing the goroutine waits of a Go target when the run records off-CPU time.
fn go_parks(opts: &RunOptions) -> Option<Result<kiln_record::goparks::GoParkSession, String>> {
    if !opts.events.contains(&kiln_record::EventSpec::OffCpu) {
        return None;
    }
    kiln_record::goparks::begin(*opts.pids.first()?)
}

/// The goroutine waits traced over the window, as the run keeps them.
fn finish_go_parks(started: Result<kiln_record::goparks::GoParkSession, String>) -> PprofResult {
    let (mut profile, warnings) = match started {
        Ok(s) => s.finish(),
        Err(w) => (None, vec![w]),
    };
    // The name the findings and the pages look for.
    if let Some(p) = profile.as_mut() {
        p.event.name = kiln_store::GOROUTINE_WAITS_EVENT.into();
    }
    PprofResult {
        profiles: profile.into_iter().collect(),
        attachments: Vec::new(),
        warnings,
    }
}

/// The target's own profiles fetched over the window join the run, with their warnings.
fn add_fetched(data: &mut RunData, fetched: Option<PprofResult>) {
    if let Some(f) = fetched {
        data.meta
            .events
            .extend(f.profiles.iter().map(|p| p.event.name.clone()));
        data.profiles.extend(f.profiles);
        data.attachments.extend(f.attachments);
        data.meta.warnings.extend(f.warnings);
    }
}

/// The stops, the start gate and the sampler a pass's threads share.
struct Controls {
    sampler: Arc<Mutex<ProcSampler>>,
    sampler_stop: Stop,
    load_stop: Stop,
    rec_stop: Stop,
    gate: StartGate,
}

/// Steps 1 to 5 of a pass, on threads of their own: the recorders prepare, the load
/// warms up, the measurement, the load stops. The local recorder runs when the pass has
/// pids.
fn drive(
    pass: &mut Pass<'_>,
    load: &mut dyn Workload,
    c: &Controls,
    rec_opts: &RecordOptions,
    remote: &mut Option<RemoteRecordings<'_>>,
    tx: mpsc::Sender<Msg>,
) -> Measured {
    let opts = pass.opts;
    let stop = pass.stop;
    let local = !opts.pids.is_empty();
    std::thread::scope(|scope| {
        spawn_sampler(
            scope,
            c.sampler.clone(),
            c.sampler_stop.clone(),
            opts.sample_interval,
        );
        // 1. The recorders prepare (without sampling) from the start.
        let recorder = local.then(|| scope.spawn(move || kiln_record::record(rec_opts)));
        let start_load = |tx: mpsc::Sender<Msg>| {
            let load_stop = c.load_stop.clone();
            scope.spawn(move || {
                let mut events = Sender(tx.clone());
                let outcome = load.run(&load_stop, &mut events);
                let _ = tx.send(Msg::Done(outcome));
            });
        };
        // 2–3. With no warm-up the recorders are ready before the load starts; otherwise
        // they get ready while the load warms up. 4. The measurement.
        if opts.warmup.is_zero() && !opts.warmup_fleet {
            pass.await_ready(&c.gate, recorder.as_ref(), remote);
            start_load(tx);
        } else {
            start_load(tx);
            pass.await_start();
            pass.warm_up();
            pass.await_ready(&c.gate, recorder.as_ref(), remote);
        }
        let (gate_opened, session, dumps, window, parks) =
            pass.measure_window(&c.gate, recorder.as_ref(), &c.rec_stop, remote);
        let recording = recorder.map(|r| r.join());
        // 5. The load stops; the sampler takes its last sample; the fetches' answers are
        // collected (none is waited for past its deadline, or at all once stopped).
        pass.finish_load(&c.load_stop);
        lock(&c.sampler).sample();
        c.sampler_stop.raise();
        let fetched = session.map(|s| s.finish(stop));
        Measured {
            recording,
            gate_opened,
            fetched,
            dumps,
            window,
            parks,
        }
    })
}

/// Runs one pass: load, warm-up, measurement, and returns the run (complete or not).
pub fn run(
    opts: &RunOptions,
    load: &mut dyn Workload,
    stop: &Stop,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunData, RunError> {
    validate(opts)?;
    let short_sweep = sweep_too_long(opts, load.schedule());
    // Other hosts first: their agents start, their clocks are measured.
    let fleet =
        (!opts.remote.is_empty()).then(|| RemoteHosts::connect(&opts.remote, opts.max_input, stop));
    let mut fleet_load = fleet_load(&fleet, load)?;
    let load: &mut dyn Workload = match fleet_load.as_mut() {
        Some(f) => f,
        None => load,
    };
    let started_unix_ms = kiln_os::clock::unix_ms();
    let target = meta::target_info(&opts.pids);
    let load_info = load.info();
    let sampler = Arc::new(Mutex::new(ProcSampler::new(&opts.pids, None)));
    lock(&sampler).sample();
    let sampler_stop = Stop::new();
    let load_stop = stop.child();
    let rec_stop = stop.child();
    let gate = StartGate::default();
    let rec_opts = record_options(opts, &rec_stop, &gate);
    let mut remote = fleet
        .as_ref()
        .map(|f| RemoteRecordings::start(f, opts))
        .filter(|r| !r.is_empty());
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut pass = Pass::new(opts, stop, on_progress, rx, sampler.clone());
    pass.warnings.extend(short_sweep);
    pass.fleet_asked = (load_info.unit == crate::FLEET_UNIT)
        .then(|| load_info.concurrency.map(|c| c.round() as u64))
        .flatten();
    let local = !opts.pids.is_empty();
    let controls = Controls {
        sampler: sampler.clone(),
        sampler_stop,
        load_stop,
        rec_stop,
        gate,
    };
    let measured = drive(&mut pass, load, &controls, &rec_opts, &mut remote, tx);
    // The services the target calls: as its connections to them stood as the window
    // ended (a connection per call), and stand now (a client's pool keeps them open past
    // the load), the most of each.
    let mut target = target;
    target.peers = merge_peers(
        std::mem::take(&mut pass.peers),
        crate::procfs::peers(&opts.pids),
    );
    let target_gone = pass.outcome.as_ref().is_some_and(|o| !o.started)
        && !pass.started
        && early_exit(opts, &mut pass)?;
    let gate_opened = measured.gate_opened;
    // A recorder that failed before sampling counts whether or not the gate opened.
    let mut rec = match measured.recording {
        Some(recording) if gate_opened => recorded(
            Some(recording),
            &opts.pids,
            stop,
            pass.schedule_done,
            &mut pass.reasons,
        ),
        // The target's early end is said already.
        Some(Ok(Err(RecordError::NoSuchProcess(_)))) if target_gone => Recorded::default(),
        Some(Ok(Err(e))) => recorded(Some(Ok(Err(e))), &opts.pids, stop, false, &mut pass.reasons),
        _ => Recorded::default(),
    };
    if !local && gate_opened {
        rec.window = measured.window;
    }
    let mut hosts = match &fleet {
        Some(f) => pass.gather_hosts(f, remote, rec.window),
        None => Vec::new(),
    };
    pass.note_interruption();
    if !hosts.is_empty() {
        rec.profiles = merge_profiles(
            std::mem::take(&mut rec.profiles),
            &meta::host_name(),
            &mut hosts,
        );
    }
    let pass_warnings = std::mem::take(&mut pass.warnings);
    let sampler = std::mem::replace(&mut *lock(&sampler), ProcSampler::new(&[], None));
    let target = match hosts.first() {
        Some(h) if !local => h.target.clone(),
        _ => target,
    };
    let load_seconds = headline::seconds(&pass.ticks);
    let mut data = build(
        opts,
        started_unix_ms,
        target,
        load_info,
        pass.outcome.take().unwrap_or_default(),
        pass.ticks,
        sampler,
        rec,
        pass.reasons,
    );
    data.meta.warnings.extend(pass_warnings);
    if let Some(f) = &fleet {
        add_hosts(&mut data, f, fleet_load.as_ref(), hosts, &load_seconds);
    }
    add_fetched(&mut data, measured.fetched);
    add_fetched(&mut data, measured.parks);
    if let Some(d) = measured.dumps {
        data.attachments.extend(d.attachments);
        data.meta.warnings.extend(d.warnings);
    }
    Ok(data)
}

/// How far before the run the kernel log's OOM kills are read from: its clock and
/// CLOCK_MONOTONIC agree to well under this.
const OOM_SLACK_NS: u64 = 5_000_000_000;

/// Why a target process kiln did not start ended, when the kernel's log says its OOM
/// killer killed it since `since_ns` (CLOCK_MONOTONIC): `: the kernel's OOM killer killed
/// it (…)`, else nothing.
fn oom_said(pids: &[u32], since_ns: u64) -> String {
    pids.iter()
        .filter(|&&p| !kiln_os::proc::alive(p))
        .find_map(|&p| kiln_os::kmsg::oom_kill_of(p, since_ns))
        .map(|l| format!(": the kernel's OOM killer killed it (its log: \"{l}\")"))
        .unwrap_or_default()
}

/// The load did not start: when a target process has exited meanwhile, that is why the
/// run is cut short (it is stored, incomplete, saying so: `Ok(true)`); else the load's own
/// failure is the run's error.
fn early_exit(opts: &RunOptions, pass: &mut Pass<'_>) -> Result<bool, RunError> {
    let why = pass
        .outcome
        .as_ref()
        .and_then(|o| o.failure.clone())
        .unwrap_or_else(|| "it ended at once".into());
    let Some(gone) = opts.pids.iter().find(|&&p| !kiln_os::proc::alive(p)) else {
        return Err(RunError::LoadStart(why));
    };
    pass.reasons.push(format!(
        "the target (pid {gone}) exited {:.1} s after the run began, before the load started (the load: {why}){}",
        pass.t0.elapsed().as_secs_f64(),
        oom_said(
            &[*gone],
            kiln_os::clock::monotonic_ns()
                .saturating_sub(pass.t0.elapsed().as_nanos() as u64 + OOM_SLACK_NS)
        )
    ));
    Ok(true)
}

/// How long the other hosts get to send their recordings once sampling stopped (they
/// name every frame first).
const REMOTE_RECORDING_WAIT: Duration = Duration::from_secs(120);

/// The other hosts' part of the run: who they were and their clocks, each load agent's
/// own series and histograms, each recorded host's `/proc` series and its target's CPU in
/// the headline (the cluster's CPU per operation), their warnings.
fn add_hosts(
    data: &mut RunData,
    fleet: &RemoteHosts,
    load: Option<&RemoteLoad<'_>>,
    hosts: Vec<HostRecording>,
    load_seconds: &[(u64, u64)],
) {
    data.meta.hosts = fleet.hosts_info();
    data.meta.warnings.extend(fleet.warnings());
    if let Some(l) = load {
        let (series, hists, warnings) = l.host_data(&data.meta.measure);
        data.series.extend(series);
        data.histograms.extend(hists);
        data.meta.warnings.extend(warnings);
    }
    let h = &mut data.meta.headline;
    for r in hosts {
        data.meta.warnings.extend(r.warnings);
        data.series.extend(r.series);
        if let Some(b) = r.bpf_cpu_s {
            h.kiln_bpf_cpu_s = Some(h.kiln_bpf_cpu_s.unwrap_or(0.0) + b);
        }
    }
    // The cluster's CPU per operation: every host's target series counted by the rule.
    headline::measure(data, load_seconds);
}

/// What a sweep's `-d` must cover beyond its steps: the load connects (and probes the
/// server) before its first step begins. The measurement ends with the sweep's last step,
/// so a longer `-d` costs nothing.
const SWEEP_SLACK: Duration = Duration::from_secs(10);

/// A sweep (`steps` steps, each so long) must fit the measurement, or its last steps are
/// cut short or never measured: `-d` of the steps' time and [`SWEEP_SLACK`], less the
/// warm-up (during which the sweep already runs). What to say before the run (and keep
/// with it) when it does not; `kiln run` says it before its first run.
pub fn sweep_too_long(opts: &RunOptions, schedule: Option<(usize, Duration)>) -> Option<String> {
    let (steps, each) = schedule?;
    let sweep = each.saturating_mul(steps as u32);
    let need = (sweep + SWEEP_SLACK).saturating_sub(opts.warmup);
    (opts.duration < need).then(|| {
        format!(
            "-d {} s is shorter than the sweep: its {steps} steps of {} s take {} s, and its first begins once the load has connected; its last steps are cut short or not measured (marked in the sweep's table): give -d {} or more (the measurement ends with the sweep's last step, so a longer -d costs nothing)",
            opts.duration.as_secs_f64(),
            each.as_secs_f64(),
            sweep.as_secs_f64(),
            need.as_secs_f64().ceil()
        )
    })
}

fn validate(opts: &RunOptions) -> Result<(), RunError> {
    if opts.pids.is_empty() && opts.remote.targets.is_empty() {
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
    for u in &opts.pprof {
        crate::pprof::normalise_url(u).map_err(|reason| RunError::Option {
            flag: "--pprof",
            reason,
        })?;
    }
    if opts.duration.is_zero() {
        return Err(RunError::Option {
            flag: "-d/--duration",
            reason: "the measurement needs a positive duration".into(),
        });
    }
    Ok(())
}

/// 6. The run, from what the pass gathered.
#[allow(clippy::too_many_arguments)]
fn build(
    opts: &RunOptions,
    started_unix_ms: i64,
    target: kiln_store::TargetInfo,
    mut load_info: LoadInfo,
    outcome: LoadOutcome,
    ticks: Vec<LoadTick>,
    sampler: ProcSampler,
    rec: Recorded,
    reasons: Vec<String>,
) -> RunData {
    let now = kiln_os::clock::monotonic_ns();
    let (start, end) = rec.window.unwrap_or((now, now));
    let measure = Window {
        name: "measure".into(),
        start_ns: start,
        end_ns: end,
    };
    let (histograms, mut warnings) = headline::histograms(&measure, &ticks, &outcome);
    warnings.splice(0..0, rec.warnings);
    let mut series = vec![headline::load_series(&ticks)];
    series.retain(|s| !s.time_ns.is_empty());
    let copies = sampler.copies_followed();
    if copies > 0 {
        warnings.push(format!(
            "the target forked {copies} process{} running its own program during the run (a backend or worker for each connection): measured as the target from when each was a second old",
            if copies == 1 { "" } else { "es" }
        ));
    }
    if let (n @ 1.., why) = sampler.jvm_unread() {
        warnings.push(format!(
            "the JVM's own counters could not be read at {n} of the seconds sampled (those seconds have no jvm heap or collector figures): {}",
            why.unwrap_or("no reason given")
        ));
    }
    series.extend(sampler.finish());
    load_info.report = outcome.report;
    if load_info.unit.is_empty() {
        // An external command's operations, as its own summary counts them.
        if let Some(u) = load_info
            .report
            .pointer("/parsed/unit")
            .and_then(|u| u.as_str())
        {
            load_info.unit = u.to_string();
        }
    }
    let events = rec.profiles.iter().map(|p| p.event.name.clone()).collect();
    let meta = RunMeta {
        id: None,
        name: opts.name.clone(),
        group: opts
            .group
            .clone()
            .unwrap_or_else(|| format!("{}@{started_unix_ms}", opts.name)),
        repeat: opts.repeat,
        started_unix_ms,
        status: RunStatus {
            complete: reasons.is_empty(),
            reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
        },
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
        measure,
        windows: outcome.windows.clone(),
        headline: kiln_store::Headline {
            kiln_bpf_cpu_s: rec.bpf_cpu_s,
            beam: kiln_store::SchedulerStates::of_profiles(&rec.profiles),
            ..Default::default()
        },
        warnings,
        hosts: Vec::new(),
        experiment: None,
        round: None,
        commands: Vec::new(),
    };
    let mut data = RunData {
        meta,
        series,
        histograms,
        profiles: rec.profiles,
        attachments: outcome.attachments,
    };
    // The headline by the rule of every window's, over what the run keeps.
    let load_seconds = headline::seconds(&ticks);
    headline::measure(&mut data, &load_seconds);
    if let Some(w) = headline::command_summary_warning(&data) {
        data.meta.warnings.push(w);
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection per call is seen as the window ends, a pool's connections after: both
    /// are the target's peers, each once with the most connections seen.
    #[test]
    fn peers_read_twice_are_each_said_once() {
        let peer = |a: &str, n: u32, p: Option<&str>| kiln_store::Peer {
            address: a.into(),
            connections: n,
            process: p.map(String::from),
        };
        let during = vec![peer("127.0.0.1:9000", 14, Some("inventory (pid 7)"))];
        let after = vec![
            peer("127.0.0.1:5432", 4, Some("postgres (pid 812)")),
            peer("127.0.0.1:9000", 1, None),
        ];
        assert_eq!(
            merge_peers(during, after),
            vec![
                peer("127.0.0.1:9000", 14, Some("inventory (pid 7)")),
                peer("127.0.0.1:5432", 4, Some("postgres (pid 812)")),
            ]
        );
    }
}
