//! `kiln agent`: kiln on another host, driven by the controlling kiln over the SSH
//! channel's stdin and stdout.
//!
//! It serves what a run asks of a host — a load of kiln's engine, a recording of local
//! processes with their `/proc` series, clock exchanges — and never outlives the run: it
//! dies with its parent (`PR_SET_PDEATHSIG`, the sshd session that started it), exits at
//! once when its stdin ends (the controlling kiln or its SSH connection is gone) and when
//! nothing has come from the controller for [`WATCHDOG`] (the controller sends a
//! heartbeat every second). Its standard output is the protocol's alone: anything else
//! the process prints goes to its stderr.
use super::wire::{self, FromAgent, Hello, RecordRequest, ToAgent, WireOutcome, WireRecorded};
use crate::procfs::ProcSampler;
use crate::{LoadEvents, LoadTick, Workload};
use kiln_os::stop::Stop;
use kiln_record::{EventSpec, RecordOptions, StartGate, StopReason, Target, UnwindMode};
use std::io::{BufReader, Write};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An agent with no word from its controller for this long stops everything and exits
/// (a network that went silent without closing the connection).
pub(crate) const WATCHDOG: Duration = Duration::from_secs(10);

/// Builds a load from its command line (`mqtt conn -c 100 …`, as after `kiln load`).
pub type LoadFactory = dyn Fn(&[String]) -> Result<Box<dyn Workload>, String> + Sync;

type Out = Arc<Mutex<std::fs::File>>;

fn send(out: &Out, msg: &FromAgent, blobs: &[&[u8]]) {
    let mut f = out.lock().unwrap_or_else(|p| p.into_inner());
    if wire::write_frame(&mut *f, msg, blobs).is_err() {
        // The controller is gone: nothing may outlive it.
        std::process::exit(3);
    }
}

/// The agent's time namespace's CLOCK_MONOTONIC offset, ns (0 outside one).
fn timens_monotonic_ns() -> i64 {
    let s = kiln_os::proc::read_text("/proc/self/timens_offsets").unwrap_or_default();
    s.lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next()? == "monotonic").then_some(())?;
            let secs: i64 = w.next()?.parse().ok()?;
            let ns: i64 = w.next()?.parse().ok()?;
            Some(secs * 1_000_000_000 + ns)
        })
        .unwrap_or(0)
}

struct Events<'a> {
    out: &'a Out,
}

impl LoadEvents for Events<'_> {
    fn started(&mut self, _pid: Option<u32>) {
        send(self.out, &FromAgent::LoadStarted, &[]);
    }
    fn tick(&mut self, mut tick: LoadTick) {
        // The histograms travel as the frame's blobs, in `latency` order (the message
        // itself carries their names only), so their bytes move there without a copy.
        let blobs: Vec<Vec<u8>> = tick
            .latency
            .iter_mut()
            .map(|l| std::mem::take(&mut l.data))
            .collect();
        let refs: Vec<&[u8]> = blobs.iter().map(Vec::as_slice).collect();
        send(self.out, &FromAgent::Tick(tick), &refs);
    }
}

/// Dies with the controlling kiln (none: it is gone already) and takes fd 1 for the
/// protocol, fd 1 becoming stderr, so that nothing printed by accident can break a frame.
fn protocol_out() -> Option<Out> {
    // SAFETY: prctl and getppid have no memory effects; PR_SET_PDEATHSIG takes a signal.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() == 1 {
            return None;
        }
    }
    // SAFETY: dup/dup2 on the process's standard descriptors; the new one is owned here.
    unsafe {
        let fd = libc::dup(1);
        if fd < 0 {
            return None;
        }
        libc::dup2(2, 1);
        Some(Arc::new(Mutex::new(std::fs::File::from_raw_fd(fd))))
    }
}

/// The protocol's magic and the agent's hello; false when the controlling kiln is gone.
fn hello(out: &Out, timens: i64) -> bool {
    let (host, kernel) = (crate::meta::host_name(), crate::meta::kernel_release());
    {
        let mut f = out.lock().unwrap_or_else(|p| p.into_inner());
        if f.write_all(wire::MAGIC).is_err() {
            return false;
        }
    }
    send(
        out,
        &FromAgent::Hello(Hello {
            version: env!("CARGO_PKG_VERSION").into(),
            build: own_build(),
            hostname: host,
            kernel,
            cpus: crate::meta::cpus(),
            pid: std::process::id(),
            timens_monotonic_ns: timens,
        }),
        &[],
    );
    true
}

/// Ends the agent when the controlling kiln has said nothing for [`WATCHDOG`].
fn watchdog(last_word: Arc<AtomicU64>) {
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(500));
        let quiet =
            kiln_os::clock::monotonic_ns().saturating_sub(last_word.load(Ordering::Relaxed));
        if quiet > WATCHDOG.as_nanos() as u64 {
            eprintln!(
                "kiln agent: nothing from the controlling kiln for {} s: stopping",
                WATCHDOG.as_secs()
            );
            std::process::exit(3);
        }
    });
}

/// Serves the controlling kiln on stdin/stdout until it says goodbye (exit status 0) or
/// goes away (the process exits at once, status 3). No frame past `max_input` bytes (the
/// input limit) is read.
pub fn serve(make_load: &LoadFactory, max_input: u64) -> i32 {
    let Some(out) = protocol_out() else {
        return 3;
    };
    let timens = timens_monotonic_ns();
    if !hello(&out, timens) {
        return 3;
    }
    let last_word = Arc::new(AtomicU64::new(kiln_os::clock::monotonic_ns()));
    watchdog(last_word.clone());
    // Each load its own stop: one stopped before does not stop the next.
    let mut load_stop = Stop::new();
    let load_busy = std::sync::atomic::AtomicBool::new(false);
    let rec_stop = Stop::new();
    let gate = StartGate::default();
    let mut stdin = BufReader::with_capacity(1 << 16, std::io::stdin());
    std::thread::scope(|scope| {
        let mut load: Option<std::thread::ScopedJoinHandle<()>> = None;
        let mut recorder = None;
        loop {
            let msg = match wire::read_frame_limited::<ToAgent>(
                &mut stdin,
                &|_| wire::MAX_CONTROL,
                max_input,
            ) {
                Ok((m, _)) => m,
                Err(e) => {
                    eprintln!("kiln agent: the controlling kiln is gone ({e}): stopping");
                    std::process::exit(3);
                }
            };
            let now = kiln_os::clock::monotonic_ns();
            last_word.store(now, Ordering::Relaxed);
            match msg {
                ToAgent::Ping { id } => {
                    let pong = FromAgent::Pong {
                        id,
                        recv_ns: now,
                        send_ns: kiln_os::clock::monotonic_ns(),
                    };
                    send(&out, &pong, &[]);
                }
                ToAgent::StartLoad { argv, grid_ns } => {
                    // The slot is free once the last load ended, however it ended.
                    if load_busy.load(Ordering::SeqCst) {
                        send(&out, &failed("load", "a load is already running"), &[]);
                        continue;
                    }
                    if let Some(h) = load.take() {
                        let _ = h.join();
                    }
                    load_stop = Stop::new();
                    load_busy.store(true, Ordering::SeqCst);
                    let (out, stop, busy) = (&out, load_stop.clone(), &load_busy);
                    load = Some(scope.spawn(move || {
                        let last = |m: FromAgent| {
                            // Free before the last word: the next start may follow it at once.
                            busy.store(false, Ordering::SeqCst);
                            send(out, &m, &[]);
                        };
                        run_load(make_load, &argv, grid_ns, &stop, &last, out)
                    }));
                }
                ToAgent::StopLoad => load_stop.raise(),
                ToAgent::Record(req) => {
                    if recorder.is_some() {
                        send(
                            &out,
                            &failed("record", "a recording is already running"),
                            &[],
                        );
                        continue;
                    }
                    let (out, stop, gate) = (&out, &rec_stop, &gate);
                    recorder = Some(scope.spawn(move || record(&req, gate, stop, timens, out)));
                }
                ToAgent::Go => gate.go.raise(),
                ToAgent::StopRecord => rec_stop.raise(),
                ToAgent::Bye => break,
            }
        }
        load_stop.raise();
        rec_stop.raise();
        gate.go.raise();
    });
    0
}

fn failed(what: &str, reason: &str) -> FromAgent {
    FromAgent::Failed {
        what: what.into(),
        reason: reason.into(),
    }
}

/// This binary's build: its GNU build id (what the controller names its copy by).
pub(crate) fn own_build() -> String {
    crate::meta::build_id(std::path::Path::new("/proc/self/exe"))
}

/// Runs one load; its last message (its end or why it could not start) goes to `last`.
fn run_load(
    make_load: &LoadFactory,
    argv: &[String],
    grid_ns: u64,
    stop: &Stop,
    last: &dyn Fn(FromAgent),
    out: &Out,
) {
    let mut load = match make_load(argv) {
        Ok(l) => l,
        Err(e) => return last(failed("load", &e)),
    };
    load.align_ticks(grid_ns);
    let o = load.run(stop, &mut Events { out });
    last(FromAgent::LoadDone(WireOutcome {
        started: o.started,
        ended_by_itself: o.ended_by_itself,
        failure: o.failure,
        report: o.report,
    }));
}

fn record(req: &RecordRequest, gate: &StartGate, stop: &Stop, timens: i64, out: &Out) {
    let mut reply = WireRecorded::default();
    let events: Result<Vec<EventSpec>, _> =
        req.events.iter().map(|e| EventSpec::parse(e)).collect();
    let events = match events {
        Ok(e) => e,
        Err(e) => {
            send(out, &failed("record", &e.to_string()), &[]);
            return;
        }
    };
    let mut ro = RecordOptions::new(Target::Pids(req.pids.clone()));
    ro.events = events;
    ro.frequency = req.frequency;
    ro.duration = Some(Duration::from_millis(req.duration_ms));
    ro.offcpu_min_block_us = req.min_block_us;
    ro.unwind = match req.unwind.as_str() {
        "kernel" => UnwindMode::Kernel,
        "copy" => UnwindMode::Copy,
        _ => UnwindMode::Auto,
    };
    ro.stop = Some(stop.clone());
    ro.gate = Some(gate.clone());
    reply.target = crate::meta::target_info(&req.pids);
    let sampler = Mutex::new(ProcSampler::new(&req.pids, None));
    let sampled = Stop::new();
    let rec = std::thread::scope(|s| {
        s.spawn(|| {
            while !sampled.is_raised() {
                sampler.lock().unwrap_or_else(|p| p.into_inner()).sample();
                sampled.sleep(Duration::from_secs(1));
            }
        });
        s.spawn(|| {
            while !gate.ready.sleep(Duration::from_millis(20)) {
                if sampled.is_raised() {
                    return;
                }
            }
            send(out, &FromAgent::RecordReady, &[]);
        });
        let r = kiln_record::record(&ro);
        sampled.raise();
        r
    });
    let mut sampler = sampler.into_inner().unwrap_or_else(|p| p.into_inner());
    sampler.sample();
    let mut blob = Vec::new();
    match rec {
        Ok(mut r) => {
            reply.window = r.sampling_window();
            reply.stopped = match r.stopped {
                StopReason::Duration => "duration",
                StopReason::TargetExited => "target exited",
                _ => "interrupted",
            }
            .into();
            reply.warnings =
                crate::headline::recording_warnings(&r.summary, reply.window.map_or(0, |w| w.0));
            reply.bpf_cpu_s = r.summary.own_bpf_cpu_ns().map(|ns| ns as f64 / 1e9);
            if let Some((a, b)) = reply.window {
                if let (Some(x), Some(y)) = (sampler.totals_at(a), sampler.totals_at(b)) {
                    reply.cpu = Some([
                        (
                            x.target_user_s,
                            x.target_system_s,
                            x.voluntary + x.involuntary,
                        ),
                        (
                            y.target_user_s,
                            y.target_system_s,
                            y.voluntary + y.involuntary,
                        ),
                    ]);
                }
            }
            // The kernel stamps samples on the machine's CLOCK_MONOTONIC; in a time
            // namespace the agent's clock (the one the exchanges measure) is shifted.
            if timens != 0 {
                for p in &mut r.profiles {
                    for t in &mut p.samples.time {
                        if *t != kiln_model::NO_TIME {
                            *t = (*t as i64).saturating_add(timens) as u64;
                        }
                    }
                }
            }
            if !r.profiles.is_empty() {
                blob = kiln_model::native::encode(&r.profiles);
            }
        }
        Err(e) => reply.error = Some(e.to_string()),
    }
    reply.peak_rss = sampler.peak_rss();
    reply.series = sampler.finish();
    let blobs: Vec<&[u8]> = if blob.is_empty() { vec![] } else { vec![&blob] };
    send(out, &FromAgent::Recorded(Box::new(reply)), &blobs);
}
