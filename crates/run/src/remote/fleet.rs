//! The hosts of one run: their agents connected, their clocks measured, their loads merged
//! and their recordings placed on the controlling host's clock.
use super::clock::ClockMap;
use super::link::{self, Link, Patience, Routed};
use super::merge::{merged_report, run_histograms, AgentReport, Merger};
use super::wire::{FromAgent, RecordRequest, ToAgent, WireOutcome, WireRecorded};
use super::{HostSpec, RemoteOptions, SshConfig};
use crate::headline;
use crate::{EncodedLatency, LoadEvents, LoadOutcome, LoadTick, RunOptions, Workload};
use kiln_model::{Label, LabelSetId, LabelValue, Profile};
use kiln_os::stop::Stop;
use kiln_store::{HostInfo, LoadInfo, SeriesTable, TargetInfo, Window};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Clock exchanges at the start and at the end (the best of them is kept).
const EXCHANGES: usize = 16;

/// How long an agent's load may take to start beyond the engine's own start timeout (and
/// the connect timeout) before the agent counts as hung.
const START_WAIT: Duration = kiln_loadgen::engine::START_TIMEOUT;

/// How long a host's recorder may take to get ready (its eBPF programs loaded), beyond
/// the connect timeout.
const READY_WAIT: Duration = Duration::from_secs(60);

/// How long a load agent gets to end after it is told to stop.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(35);

/// Above this uncertainty the run warns that its hosts' seconds may not line up.
pub const UNCERTAINTY_WARNING_NS: u64 = 100_000_000;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Host {
    spec: HostSpec,
    roles: Vec<&'static str>,
    pids: Vec<u32>,
    link: Option<Arc<Link>>,
    clock: Mutex<Option<ClockMap>>,
    failure: Mutex<Option<String>>,
}

/// The other hosts of a run, connected.
pub struct RemoteHosts {
    hosts: Vec<Host>,
    load_rx: Mutex<Receiver<(usize, Routed)>>,
    record_rx: Mutex<Receiver<(usize, Routed)>>,
    heartbeat: Stop,
    patience: Patience,
}

impl RemoteHosts {
    /// Starts an agent on every host of `opts` (in parallel) and measures its clock. A host
    /// that cannot be reached is marked failed; the others are connected all the same.
    /// `stop` (the run's: Ctrl-C) ends every wait on a host, now and later, within
    /// `link::STOP_BUDGET` (0.8 s). No agent's frame past `max_input` bytes (the input
    /// limit) is read.
    pub fn connect(opts: &RemoteOptions, max_input: u64, stop: &Stop) -> RemoteHosts {
        let patience = Patience::new(opts.ssh.connect_timeout, stop.clone());
        let mut hosts: Vec<Host> = Vec::new();
        let mut add = |spec: &HostSpec, role: &'static str, pid: Option<u32>| {
            let i = match hosts.iter().position(|h| h.spec.name == spec.name) {
                Some(i) => i,
                None => {
                    hosts.push(Host {
                        spec: spec.clone(),
                        roles: Vec::new(),
                        pids: Vec::new(),
                        link: None,
                        clock: Mutex::new(None),
                        failure: Mutex::new(None),
                    });
                    hosts.len() - 1
                }
            };
            if !hosts[i].roles.contains(&role) {
                hosts[i].roles.push(role);
            }
            hosts[i].pids.extend(pid);
        };
        for a in &opts.agents {
            add(a, "load", None);
        }
        for (h, pid) in &opts.targets {
            add(h, "target", Some(*pid));
        }
        let (load_tx, load_rx) = std::sync::mpsc::channel();
        let (record_tx, record_rx) = std::sync::mpsc::channel();
        let ssh: &SshConfig = &opts.ssh;
        let results: Vec<Result<(Link, ClockMap), String>> = std::thread::scope(|s| {
            let handles: Vec<_> = hosts
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let (l, r) = (load_tx.clone(), record_tx.clone());
                    let (spec, patience) = (&h.spec, &patience);
                    eprintln!(
                        "kiln run: connecting to {} ({})",
                        spec.name, spec.destination
                    );
                    s.spawn(move || {
                        let link = Link::connect(i, spec, ssh, (l, r), patience, max_input)?;
                        let start = link.sync_clock(EXCHANGES)?;
                        Ok((link, ClockMap::new(start)))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("the connecting thread panicked".into()))
                })
                .collect()
        });
        for (h, r) in hosts.iter_mut().zip(results) {
            match r {
                Ok((link, map)) => {
                    h.link = Some(Arc::new(link));
                    *lock(&h.clock) = Some(map);
                }
                Err(e) => *lock(&h.failure) = Some(e),
            }
        }
        let heartbeat = Stop::new();
        link::heartbeat(
            hosts.iter().filter_map(|h| h.link.clone()).collect(),
            heartbeat.clone(),
        );
        RemoteHosts {
            hosts,
            load_rx: Mutex::new(load_rx),
            record_rx: Mutex::new(record_rx),
            heartbeat,
            patience,
        }
    }

    /// Hosts with `role` whose agent is connected.
    fn with_role(&self, role: &str) -> Vec<usize> {
        (0..self.hosts.len())
            .filter(|&i| self.hosts[i].roles.contains(&role) && self.live(i))
            .collect()
    }

    fn live(&self, i: usize) -> bool {
        self.hosts[i].link.is_some() && lock(&self.hosts[i].failure).is_none()
    }

    fn link(&self, i: usize) -> Option<&Arc<Link>> {
        self.hosts[i].link.as_ref()
    }

    fn map(&self, i: usize) -> Option<ClockMap> {
        *lock(&self.hosts[i].clock)
    }

    /// Marks host `i` failed (the first reason is kept).
    fn fail(&self, i: usize, why: String) {
        let mut f = lock(&self.hosts[i].failure);
        if f.is_none() {
            *f = Some(why);
        }
    }

    /// Whether any load agent was asked for.
    pub(crate) fn has_load(&self) -> bool {
        self.hosts.iter().any(|h| h.roles.contains(&"load"))
    }

    /// Why hosts failed, each as `NAME: reason`.
    pub fn failures(&self) -> Vec<String> {
        self.hosts
            .iter()
            .filter_map(|h| {
                lock(&h.failure)
                    .as_ref()
                    .map(|f| format!("host {} failed: {f}", h.spec.name))
            })
            .collect()
    }

    /// Measures every live host's clock again (the end of the run: the drift), says
    /// goodbye and waits for the agents to end.
    pub fn finish(&self) {
        self.heartbeat.raise();
        std::thread::scope(|s| {
            for (i, h) in self.hosts.iter().enumerate() {
                let Some(link) = self.link(i) else { continue };
                s.spawn(move || {
                    if lock(&h.failure).is_none() {
                        if let Ok(end) = link.sync_clock(EXCHANGES) {
                            if let Some(m) = lock(&h.clock).as_mut() {
                                m.end = Some(end);
                            }
                        }
                    }
                    link.close(Duration::from_secs(5));
                });
            }
        });
    }

    /// What the run keeps about its hosts.
    pub(crate) fn hosts_info(&self) -> Vec<HostInfo> {
        self.hosts
            .iter()
            .map(|h| {
                let hello = h.link.as_ref().map(|l| l.hello.clone()).unwrap_or_default();
                HostInfo {
                    name: h.spec.name.clone(),
                    destination: h.spec.destination.to_string(),
                    roles: h.roles.iter().map(|r| r.to_string()).collect(),
                    hostname: hello.hostname,
                    kernel: hello.kernel,
                    cpus: hello.cpus,
                    pids: h.pids.clone(),
                    clock: lock(&h.clock).map(|m| m.info()),
                    failure: lock(&h.failure).clone(),
                }
            })
            .collect()
    }

    /// Warnings about the hosts: clocks known to less than a tenth of a second.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        for h in &self.hosts {
            if let Some(m) = *lock(&h.clock) {
                let u = m.uncertainty_ns();
                if u > UNCERTAINTY_WARNING_NS {
                    w.push(format!(
                        "the clock of host {} is known to ±{:.3} s only (its SSH round trips were slow): its seconds and samples may be placed that far off",
                        h.spec.name,
                        u as f64 / 1e9
                    ));
                }
            }
        }
        w
    }

    /// Host `i`'s name.
    fn name(&self, i: usize) -> &str {
        &self.hosts[i].spec.name
    }
}

impl Drop for RemoteHosts {
    fn drop(&mut self) {
        self.heartbeat.raise();
    }
}

/// A load of kiln's engine run by every `--agent` at once, each running the load as given;
/// their seconds merged exactly into the run's, and each agent's kept as its own series.
pub struct RemoteLoad<'a> {
    fleet: &'a RemoteHosts,
    info: LoadInfo,
    argv: Vec<String>,
    per_host: Vec<(usize, Vec<LoadTick>)>,
    /// The grid's origin (controller ns) the agents' seconds end on.
    origin: u64,
    /// Per agent as `per_host`: latency histograms that came but could not be decoded.
    undecoded: Vec<usize>,
    reports: Vec<AgentReport>,
}

impl<'a> RemoteLoad<'a> {
    /// The load `info` describes (a kiln load protocol and its flags) on `fleet`'s agents.
    pub fn new(fleet: &'a RemoteHosts, info: LoadInfo) -> Self {
        let mut argv = vec![info.protocol.clone()];
        argv.extend(info.argv.iter().cloned());
        RemoteLoad {
            fleet,
            info,
            argv,
            per_host: Vec::new(),
            origin: 0,
            undecoded: Vec::new(),
            reports: Vec::new(),
        }
    }

    /// Each agent's seconds as its own series (`load@NAME`), and its latency histograms of
    /// `w` (window `measure@NAME`), and what could not be merged.
    ///
    /// An agent's histograms of `w` are of the parts of its seconds that the run's merged
    /// seconds in `w` hold (a second spanning grid seconds split as the merge splits it),
    /// so that the run's histogram of `w` is exactly the sum of the agents'.
    pub(crate) fn host_data(
        &self,
        w: &Window,
    ) -> (
        Vec<SeriesTable>,
        Vec<kiln_store::StoredHistogram>,
        Vec<String>,
    ) {
        let mut series = Vec::new();
        let mut hists = Vec::new();
        let mut warnings = Vec::new();
        let hosts: Vec<&[LoadTick]> = self.per_host.iter().map(|(_, t)| &t[..]).collect();
        let in_w = super::merge::parts_in(self.origin, &hosts, &|t| headline::in_window(t, w));
        for (p, (i, ticks)) in self.per_host.iter().enumerate() {
            let name = self.fleet.name(*i);
            if let Some(&n @ 1..) = self.undecoded.get(p) {
                warnings.push(format!(
                    "host {name}: {n} latency histogram(s) it sent could not be decoded: the run's percentiles leave them out"
                ));
            }
            let mut t = headline::load_series(ticks);
            t.name = kiln_store::columns::on_host(kiln_store::columns::LOAD, name);
            if !t.time_ns.is_empty() {
                series.push(t);
            }
            let (merged, skipped) = headline::merged_all(&in_w[p]);
            if skipped > 0 {
                warnings.push(format!(
                    "host {name}: {skipped} per-second latency histogram(s) of '{}' could not be merged: its own percentiles leave them out",
                    w.name
                ));
            }
            for (hname, h) in merged {
                if let Ok(data) = kiln_hdr::encode_histogram(&h) {
                    hists.push(kiln_store::StoredHistogram {
                        name: hname,
                        window: format!("{}@{name}", w.name),
                        unit: "us".into(),
                        data,
                    });
                }
            }
        }
        (series, hists, warnings)
    }
}

/// The load of agent `p`: an MQTT load carries the run's nonce and the agent's index in
/// its messages (unless its flags give a nonce), so that each agent counts its own
/// messages exactly and the others' as foreign.
fn agent_argv(argv: &[String], nonce: u64, p: usize) -> Vec<String> {
    let mut v = argv.to_vec();
    let given = argv
        .iter()
        .any(|a| a == "--load-nonce" || a.starts_with("--load-nonce="));
    if argv.first().is_some_and(|p| p == "mqtt") && !given {
        v.extend([
            "--load-nonce".to_string(),
            format!("{nonce:016x}"),
            "--agent-index".to_string(),
            p.to_string(),
        ]);
    }
    v
}

/// The tick on this host's clock, its histograms the frame's blobs, and how many of them
/// could not be decoded (left out: an agent's bytes are not trusted to be histograms).
fn to_tick(mut t: LoadTick, blobs: Vec<Vec<u8>>, map: &ClockMap) -> (LoadTick, usize) {
    let sent = t.latency.len();
    t.latency = std::mem::take(&mut t.latency)
        .into_iter()
        .zip(blobs)
        .map(|(l, data)| EncodedLatency { data, ..l })
        .filter(|l| l.decode().is_some())
        .collect();
    t.end_ns = map.to_local(t.end_ns);
    let undecoded = sent.saturating_sub(t.latency.len());
    (t, undecoded)
}

/// Past these an agent's second is not believable: it is left out and counted.
const MAX_RATE: f64 = 1e9;
const MAX_VALUES: usize = 256;
const MAX_HISTOGRAMS: usize = 64;
/// The largest report an agent's `load_done` may carry into the run (a load's is ~2 KB),
/// and its deepest nesting.
const MAX_REPORT_JSON: usize = 256 << 10;
const MAX_REPORT_DEPTH: usize = 32;
/// The largest total a report may claim (2^53: exact as JSON numbers go).
const MAX_TOTAL: u64 = 1 << 53;

/// Why an agent's second cannot go into the run, if it cannot.
fn check_tick(t: &LoadTick, blobs: usize) -> Result<(), String> {
    // A load's last second may be empty (it stopped on a boundary).
    if !(t.interval_s.is_finite() && t.interval_s >= 0.0 && t.interval_s <= 3600.0) {
        return Err(format!("a second of {} s", t.interval_s));
    }
    let most = MAX_RATE * t.interval_s.max(1.0);
    for (what, n) in [("completed", t.completed), ("sent", t.sent)] {
        if let Some(n) = n.filter(|&n| n as f64 > most) {
            return Err(format!("{n} {what} in {} s", t.interval_s));
        }
    }
    if t.values.len() > MAX_VALUES {
        return Err(format!("{} values in a second", t.values.len()));
    }
    if let Some(v) = t
        .values
        .iter()
        .find(|v| v.value.is_some_and(|x| !x.is_finite()))
    {
        return Err(format!("value '{}' is not a number", v.name));
    }
    if t.latency.len() > MAX_HISTOGRAMS || t.latency.len() != blobs {
        return Err(format!(
            "{} histogram names for {blobs} histograms",
            t.latency.len()
        ));
    }
    Ok(())
}

fn depth(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Why an agent's load report cannot go into the run, if it cannot.
fn check_report(r: &serde_json::Value) -> Result<(), String> {
    if !(r.is_object() || r.is_null()) {
        return Err("not an object".into());
    }
    let size = serde_json::to_vec(r).map_or(usize::MAX, |b| b.len());
    if size > MAX_REPORT_JSON {
        return Err(format!(
            "{} (at most {})",
            kiln_model::input::format_size(size as u64),
            kiln_model::input::format_size(MAX_REPORT_JSON as u64)
        ));
    }
    let d = depth(r);
    if d > MAX_REPORT_DEPTH {
        return Err(format!("nested {d} deep (at most {MAX_REPORT_DEPTH})"));
    }
    if let Some(totals) = r.pointer("/headline/totals") {
        let Some(totals) = totals.as_array() else {
            return Err("headline.totals is not a list".into());
        };
        for c in totals {
            match (c["name"].as_str(), c["value"].as_u64()) {
                (Some(_), Some(v)) if v <= MAX_TOTAL => {}
                _ => {
                    return Err(format!(
                        "headline.totals: {}",
                        kiln_model::text::clean_cut(&c.to_string(), 80)
                    ))
                }
            }
        }
    }
    if let Some(t) = r.pointer("/headline/throughput/value") {
        if !t.as_f64().is_some_and(|t| (0.0..=MAX_RATE).contains(&t)) && !t.is_null() {
            return Err(format!("a throughput of {t}"));
        }
    }
    Ok(())
}

/// What an agent sent that could not go into the run.
#[derive(Debug, Default, Clone)]
struct Invalid {
    seconds: usize,
    first: Option<String>,
    report: Option<String>,
}

impl Invalid {
    fn tick(&mut self, why: String) {
        self.seconds += 1;
        self.first.get_or_insert(why);
    }

    /// Why the run cannot trust this host, when it cannot.
    fn reason(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.seconds > 0 {
            parts.push(format!(
                "{} second(s) left out (the first: {})",
                self.seconds,
                self.first.as_deref().unwrap_or("")
            ));
        }
        if let Some(r) = &self.report {
            parts.push(format!("its load report left out ({r})"));
        }
        (!parts.is_empty()).then(|| format!("it sent invalid data: {}", parts.join("; ")))
    }
}

impl Workload for RemoteLoad<'_> {
    /// The agents' seconds are aligned already: each agent's load ends its seconds on the
    /// grid the controller sends it.
    fn align_ticks(&mut self, _origin_mono_ns: u64) {}

    fn info(&self) -> LoadInfo {
        let n = self.fleet.with_role("load").len().max(1) as f64;
        LoadInfo {
            rate: self.info.rate.map(|r| r * n),
            concurrency: self.info.concurrency.map(|c| c * n),
            ..self.info.clone()
        }
    }

    fn run(&mut self, stop: &Stop, events: &mut dyn LoadEvents) -> LoadOutcome {
        let fleet = self.fleet;
        let hosts = fleet.with_role("load");
        if hosts.is_empty() {
            return LoadOutcome::failed_to_start(format!(
                "no load agent could be started ({})",
                fleet.failures().join("; ")
            ));
        }
        let origin = kiln_os::clock::monotonic_ns();
        self.origin = origin;
        self.per_host = hosts.iter().map(|&i| (i, Vec::new())).collect();
        self.undecoded = vec![0; hosts.len()];
        let mut a = Agents::new(hosts);
        self.start_loads(&mut a, origin);
        let start_by = Instant::now() + START_WAIT + fleet.patience.timeout;
        let mut merger = Merger::new(origin, a.hosts.len());
        for (p, d) in a.done.iter().enumerate() {
            if *d {
                merger.host_done(p);
            }
        }
        let rx = lock(&fleet.load_rx);
        let mut stop_deadline: Option<Instant> = None;
        while a.done.iter().any(|d| !d) {
            if self.stop_overdue(&mut a, stop, &mut stop_deadline) {
                break;
            }
            if stop_deadline.is_none() && Instant::now() > start_by {
                for t in self.give_up_unstarted(&mut a, &mut merger) {
                    events.tick(t);
                }
            }
            let (i, msg) = match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(x) => x,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let Some(p) = a.hosts.iter().position(|&h| h == i) else {
                continue;
            };
            for t in self.on_message(&mut a, (p, i), msg, &mut merger, events) {
                events.tick(t);
            }
        }
        for t in merger.finish() {
            events.tick(t);
        }
        drop(rx);
        self.outcome(&a, stop_deadline.is_none())
    }
}

/// The load agents of a run and what each has said.
struct Agents {
    /// Each agent's index in the fleet.
    hosts: Vec<usize>,
    done: Vec<bool>,
    started: Vec<bool>,
    /// Whether it said anything (started, a second, failed).
    heard: Vec<bool>,
    outcomes: Vec<Option<WireOutcome>>,
    invalid: Vec<Invalid>,
    /// Whether any load started (the run's start was told).
    any_started: bool,
}

impl Agents {
    fn new(hosts: Vec<usize>) -> Self {
        let n = hosts.len();
        Agents {
            hosts,
            done: vec![false; n],
            started: vec![false; n],
            heard: vec![false; n],
            outcomes: vec![None; n],
            invalid: vec![Invalid::default(); n],
            any_started: false,
        }
    }
}

impl RemoteLoad<'_> {
    /// Asks each agent to start its load on the grid of `origin`; an agent without a
    /// connection is done.
    fn start_loads(&self, a: &mut Agents, origin: u64) {
        let fleet = self.fleet;
        let nonce = kiln_loadgen::engine::body::LoadId::random().nonce;
        for (p, &i) in a.hosts.iter().enumerate() {
            let (Some(link), Some(map)) = (fleet.link(i), fleet.map(i)) else {
                a.done[p] = true;
                continue;
            };
            let m = ToAgent::StartLoad {
                argv: agent_argv(&self.argv, nonce, p),
                grid_ns: map.to_remote(origin),
            };
            if !link.send(&m) {
                fleet.fail(i, "the connection was lost before the load started".into());
                a.done[p] = true;
            }
        }
    }

    /// Passes the run's stop to the agents once, and fails those whose load has not
    /// stopped by the deadline; true when the wait is over.
    fn stop_overdue(&self, a: &mut Agents, stop: &Stop, deadline: &mut Option<Instant>) -> bool {
        let fleet = self.fleet;
        if stop.is_raised() && deadline.is_none() {
            for (p, &i) in a.hosts.iter().enumerate() {
                if !a.done[p] {
                    if let Some(l) = fleet.link(i) {
                        l.send(&ToAgent::StopLoad);
                    }
                }
            }
            *deadline = Some(Instant::now() + STOP_GRACE);
        }
        let Some(d) = *deadline else {
            return false;
        };
        let by = fleet.patience.deadline(d);
        if Instant::now() <= by {
            return false;
        }
        let why = if by < d {
            format!(
                "its load did not stop within {} s of the run's stop",
                link::STOP_BUDGET.as_secs_f64()
            )
        } else {
            format!("its load did not stop within {} s", STOP_GRACE.as_secs())
        };
        for (p, &i) in a.hosts.iter().enumerate() {
            if !a.done[p] {
                fleet.fail(i, why.clone());
                a.done[p] = true;
            }
        }
        true
    }

    /// Fails the agents whose load neither started nor failed in time; their seconds so
    /// far are handed on.
    fn give_up_unstarted(&self, a: &mut Agents, merger: &mut Merger) -> Vec<LoadTick> {
        let fleet = self.fleet;
        let mut out = Vec::new();
        for (p, &i) in a.hosts.iter().enumerate() {
            if !a.done[p] && !a.heard[p] {
                fleet.fail(
                    i,
                    format!(
                        "its load neither started nor failed within {} s",
                        (START_WAIT + fleet.patience.timeout).as_secs()
                    ),
                );
                if let Some(l) = fleet.link(i) {
                    l.send(&ToAgent::StopLoad);
                }
                a.done[p] = true;
                out.extend(merger.host_done(p));
            }
        }
        out
    }

    /// One message of agent `p` (fleet index `i`): the seconds it completes.
    fn on_message(
        &mut self,
        a: &mut Agents,
        (p, i): (usize, usize),
        msg: Routed,
        merger: &mut Merger,
        events: &mut dyn LoadEvents,
    ) -> Vec<LoadTick> {
        let fleet = self.fleet;
        match msg {
            Routed::Msg(FromAgent::LoadStarted, _) => {
                a.started[p] = true;
                a.heard[p] = true;
                if !a.any_started {
                    a.any_started = true;
                    events.started(None);
                }
                Vec::new()
            }
            Routed::Msg(FromAgent::Tick(t), blobs) => {
                a.heard[p] = true;
                let Some(map) = fleet.map(i) else {
                    return Vec::new();
                };
                if let Err(why) = check_tick(&t, blobs.len()) {
                    a.invalid[p].tick(why);
                    return Vec::new();
                }
                let (tick, undecoded) = to_tick(t, blobs, &map);
                self.undecoded[p] += undecoded;
                self.per_host[p].1.push(tick.clone());
                merger.push(p, tick)
            }
            Routed::Msg(FromAgent::LoadDone(o), _) => {
                self.load_done(a, (p, i), &o);
                a.outcomes[p] = Some(o);
                a.done[p] = true;
                merger.host_done(p)
            }
            Routed::Msg(FromAgent::Failed { reason, .. }, _) => {
                fleet.fail(i, format!("its load could not start: {reason}"));
                a.done[p] = true;
                merger.host_done(p)
            }
            Routed::Msg(_, _) => Vec::new(),
            Routed::Lost(why) => {
                if a.done[p] {
                    return Vec::new();
                }
                let at = kiln_os::clock::monotonic_ns().saturating_sub(self.origin) as f64 / 1e9;
                fleet.fail(i, format!("{why} ({at:.1} s after the load started)"));
                a.done[p] = true;
                merger.host_done(p)
            }
        }
    }

    /// An agent's load ended: its failure said, its report kept (with its span on this
    /// host's clock) or refused.
    fn load_done(&mut self, a: &mut Agents, (p, i): (usize, usize), o: &WireOutcome) {
        let fleet = self.fleet;
        if let Some(f) = &o.failure {
            fleet.fail(i, format!("its load failed: {f}"));
        }
        match check_report(&o.report) {
            Ok(()) => {
                let span = fleet.map(i).and_then(|m| {
                    let h = o.report.get("headline")?;
                    let at = |k: &str| h.get(k)?.as_u64().map(|ns| m.to_local(ns));
                    Some((at("start_mono_ns")?, at("end_mono_ns")?))
                });
                self.reports.push(AgentReport {
                    host: fleet.name(i).to_string(),
                    report: o.report.clone(),
                    span,
                });
            }
            Err(why) => a.invalid[p].report = Some(why),
        }
    }

    /// The run's outcome once every agent is done: invalid data said, a failure when no
    /// agent's load ran, the agents' reports merged.
    fn outcome(&self, a: &Agents, ended_by_itself: bool) -> LoadOutcome {
        let fleet = self.fleet;
        for (p, &i) in a.hosts.iter().enumerate() {
            if let Some(why) = a.invalid[p].reason() {
                fleet.fail(i, why);
            }
        }
        let ok = a.outcomes.iter().flatten().any(|o| o.failure.is_none());
        let failure = (!ok).then(|| {
            let f = fleet.failures();
            if f.is_empty() {
                "no agent's load ran".to_string()
            } else {
                f.join("; ")
            }
        });
        LoadOutcome {
            started: a.any_started || a.started.iter().any(|s| *s),
            ended_by_itself,
            failure,
            report: merged_report(
                &self.reports,
                &run_histograms(self.per_host.iter().flat_map(|(_, t)| t)),
            ),
            ..Default::default()
        }
    }
}

/// A host's recording, placed on the controlling host's clock.
pub(crate) struct HostRecording {
    pub profiles: Vec<Profile>,
    pub series: Vec<SeriesTable>,
    pub warnings: Vec<String>,
    pub target: TargetInfo,
    pub bpf_cpu_s: Option<f64>,
}

/// The recordings of `-p HOST:PID` targets.
pub struct RemoteRecordings<'a> {
    fleet: &'a RemoteHosts,
    hosts: Vec<usize>,
    ready: Vec<bool>,
    gone: Vec<bool>,
    /// Hosts not ready by then are marked failed.
    ready_by: Instant,
    got: Vec<Option<(WireRecorded, Vec<Vec<u8>>)>>,
}

impl<'a> RemoteRecordings<'a> {
    /// Asks every target host to prepare its recording (`opts`' events); sampling waits for
    /// [`RemoteRecordings::go`].
    pub fn start(fleet: &'a RemoteHosts, opts: &RunOptions) -> Self {
        let hosts = fleet.with_role("target");
        let mut r = RemoteRecordings {
            fleet,
            ready: vec![false; hosts.len()],
            gone: vec![false; hosts.len()],
            ready_by: Instant::now() + READY_WAIT + fleet.patience.timeout,
            got: (0..hosts.len()).map(|_| None).collect(),
            hosts,
        };
        let events: Vec<String> = opts.events.iter().filter_map(super::event_name).collect();
        let unwind = match opts.unwind {
            kiln_record::UnwindMode::Kernel => "kernel",
            kiln_record::UnwindMode::Copy => "copy",
            _ => "auto",
        };
        let backstop = opts.warmup + opts.duration + Duration::from_secs(120);
        for (p, &i) in r.hosts.iter().enumerate() {
            let req = RecordRequest {
                pids: fleet.hosts[i].pids.clone(),
                events: events.clone(),
                frequency: opts.frequency,
                min_block_us: opts.min_block_us,
                unwind: unwind.into(),
                duration_ms: backstop.as_millis() as u64,
            };
            if !fleet.link(i).is_some_and(|l| l.send(&ToAgent::Record(req))) {
                fleet.fail(
                    i,
                    "the connection was lost before the recording started".into(),
                );
                r.gone[p] = true;
            }
        }
        r
    }

    /// Whether no host records.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Handles what the hosts said within `d`.
    pub fn poll(&mut self, d: Duration) {
        if Instant::now() > self.ready_by {
            for (p, &i) in self.hosts.iter().enumerate() {
                if !self.ready[p] && !self.gone[p] {
                    self.fleet.fail(
                        i,
                        format!(
                            "its recorder was not ready within {} s",
                            (READY_WAIT + self.fleet.patience.timeout).as_secs()
                        ),
                    );
                    self.gone[p] = true;
                }
            }
        }
        let rx = lock(&self.fleet.record_rx);
        let mut wait = d;
        while let Ok((i, m)) = rx.recv_timeout(wait) {
            wait = Duration::ZERO;
            let Some(p) = self.hosts.iter().position(|&h| h == i) else {
                continue;
            };
            match m {
                Routed::Msg(FromAgent::RecordReady, _) => self.ready[p] = true,
                Routed::Msg(FromAgent::Recorded(r), blobs) => {
                    if let Some(e) = &r.error {
                        self.fleet.fail(i, format!("its recording failed: {e}"));
                    }
                    self.got[p] = Some((*r, blobs));
                    self.gone[p] = true;
                }
                Routed::Msg(FromAgent::Failed { reason, .. }, _) => {
                    self.fleet
                        .fail(i, format!("its recording could not start: {reason}"));
                    self.gone[p] = true;
                }
                Routed::Msg(_, _) => {}
                Routed::Lost(why) => {
                    if self.got[p].is_none() {
                        self.fleet.fail(i, why);
                    }
                    self.gone[p] = true;
                }
            }
        }
    }

    /// Whether every host is ready to sample (or gone).
    pub(crate) fn all_ready(&self) -> bool {
        self.ready.iter().zip(&self.gone).all(|(r, g)| *r || *g)
    }

    /// Whether every host has sent its recording (or is gone).
    pub(crate) fn all_in(&self) -> bool {
        self.gone.iter().all(|g| *g)
    }

    /// Starts sampling on every ready host.
    pub fn go(&self) {
        for (p, &i) in self.hosts.iter().enumerate() {
            if !self.gone[p] {
                if let Some(l) = self.fleet.link(i) {
                    l.send(&ToAgent::Go);
                }
            }
        }
    }

    /// Stops sampling on every host.
    pub fn stop(&self) {
        for (p, &i) in self.hosts.iter().enumerate() {
            if !self.gone[p] {
                if let Some(l) = self.fleet.link(i) {
                    l.send(&ToAgent::StopRecord);
                }
            }
        }
    }

    /// Waits until every host has sent its recording, or `within` passed.
    pub fn collect(&mut self, within: Duration) {
        let deadline = Instant::now() + within;
        while !self.all_in() && Instant::now() < self.fleet.patience.deadline(deadline) {
            self.poll(Duration::from_millis(100));
        }
        for (p, &i) in self.hosts.iter().enumerate() {
            if !self.gone[p] {
                let why = if self.fleet.patience.stop.is_raised() {
                    "its recording did not arrive before the stop".to_string()
                } else {
                    format!("its recording did not arrive within {} s", within.as_secs())
                };
                self.fleet.fail(i, why);
            }
        }
    }

    /// The recordings, on the controlling host's clock (call after [`RemoteHosts::finish`], so
    /// that the drift is known). With the measurement's `window` (controller ns), samples
    /// placed outside it by more than the clock's uncertainty are left out and counted in
    /// a warning: an agent's recording starts at the gate and runs its duration from there,
    /// so it may end a round trip after the controller's measurement did.
    pub(crate) fn take(self, window: Option<(u64, u64)>) -> Vec<HostRecording> {
        let mut out = Vec::new();
        for (p, got) in self.got.into_iter().enumerate() {
            let i = self.hosts[p];
            let (Some((r, blobs)), Some(map)) = (got, self.fleet.map(i)) else {
                continue;
            };
            let name = self.fleet.name(i).to_string();
            let mut warnings: Vec<String> = r
                .warnings
                .iter()
                .map(|w| format!("host {name}: {w}"))
                .collect();
            let mut profiles = Vec::new();
            if let Some(b) = blobs.first() {
                let shown = std::path::PathBuf::from(format!("agent {name}"));
                match kiln_model::native::decode(b, &shown) {
                    Ok(ps) => {
                        let u = map.uncertainty_ns();
                        let keep = window.map(|(a, b)| (a.saturating_sub(u), b.saturating_add(u)));
                        for p in ps {
                            let mut labelled = Profile::new(p.event.clone());
                            let to_local = |t| map.to_local(t);
                            let left = add_host_samples(&mut labelled, &p, &name, &to_local, keep);
                            if left > 0 {
                                warnings.push(format!(
                                    "host {name}: {left} {} sample(s) outside the measurement (by more than the clock's uncertainty, {:.3} ms) left out",
                                    p.event.name,
                                    u as f64 / 1e6
                                ));
                            }
                            profiles.push(labelled);
                        }
                    }
                    Err(e) => {
                        warnings.push(format!("host {name}: its profiles could not be read: {e}"))
                    }
                }
            }
            if r.stopped == "target exited" {
                warnings.push(format!(
                    "host {name}: the target exited during the recording"
                ));
            }
            let series = r
                .series
                .into_iter()
                .map(|mut t| {
                    t.name = kiln_store::columns::on_host(&t.name, &name);
                    for x in &mut t.time_ns {
                        *x = map.to_local(*x);
                    }
                    t
                })
                .collect();
            out.push(HostRecording {
                profiles,
                series,
                warnings,
                target: r.target,
                bpf_cpu_s: r.bpf_cpu_s,
            });
        }
        out
    }
}

/// Appends `src`'s samples to `dst`, each labelled `host=NAME` (beside its own labels),
/// its time mapped by `map`.
///
/// With `keep` (controller ns), a timed sample that does not overlap it is left out; the
/// count left out is returned. An off-CPU block counts from its start over its length.
pub(crate) fn add_host_samples(
    dst: &mut Profile,
    src: &Profile,
    host: &str,
    map: &dyn Fn(u64) -> u64,
    keep: Option<(u64, u64)>,
) -> u64 {
    let span_ns = match src.event.quantity() {
        kiln_model::Quantity::Time { ns_per_unit } => ns_per_unit,
        _ => 0,
    };
    let mut left = 0u64;
    let imported = dst.import_tables(src);
    let key = dst.strings.intern(b"host");
    let value = dst.strings.intern(host.as_bytes());
    let host_label = Label {
        key,
        value: LabelValue::Str(value),
    };
    let mut sets: Vec<Option<LabelSetId>> = vec![None; imported.labels.len().max(1)];
    let s = &src.samples;
    for i in 0..s.len() {
        let own = s.label_set(i);
        let slot = own.0 as usize;
        if slot >= sets.len() {
            sets.resize(slot + 1, None);
        }
        let set = match sets[slot] {
            Some(x) => x,
            None => {
                let mapped = imported
                    .labels
                    .get(slot)
                    .copied()
                    .unwrap_or(LabelSetId::EMPTY);
                let mut labels: Vec<Label> = dst
                    .samples
                    .label_sets
                    .get(mapped)
                    .iter()
                    .filter(|l| l.key != key)
                    .copied()
                    .collect();
                labels.push(host_label);
                let x = dst.samples.label_sets.intern(&labels);
                sets[slot] = Some(x);
                x
            }
        };
        let th = s.thread[i];
        let th = if th == kiln_model::ThreadId::NONE {
            th
        } else {
            imported.threads[th.0 as usize]
        };
        let t = s.time[i];
        let t = if t == kiln_model::NO_TIME { t } else { map(t) };
        if let Some((a, b)) = keep {
            let end = t.saturating_add(s.weight[i].saturating_mul(span_ns));
            if t != kiln_model::NO_TIME && (t > b || end < a) {
                left += 1;
                continue;
            }
        }
        dst.samples.push_labeled(
            imported.stacks[s.stack[i].0 as usize],
            s.weight[i],
            t,
            th,
            set,
        );
    }
    left
}

/// The run's profiles of every host, one per event: `local` (this host's, labelled with
/// `local_name` when other hosts recorded too) and each host's, every sample labelled with
/// its host.
pub(crate) fn merge_profiles(
    local: Vec<Profile>,
    local_name: &str,
    hosts: &mut [HostRecording],
) -> Vec<Profile> {
    if hosts.iter().all(|h| h.profiles.is_empty()) {
        return local;
    }
    let mut out: Vec<Profile> = Vec::new();
    for p in local {
        let mut l = Profile::new(p.event.clone());
        add_host_samples(&mut l, &p, local_name, &|t| t, None);
        out.push(l);
    }
    for h in hosts.iter_mut() {
        for p in std::mem::take(&mut h.profiles) {
            match out.iter_mut().find(|o| o.event.name == p.event.name) {
                Some(o) => o.merge_from(&p),
                None => out.push(p),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's samples outside the measurement are left out and counted; an off-CPU
    /// block that overlaps it by its length stays; untimed samples stay.
    #[test]
    fn host_samples_outside_the_window_are_left_out_and_counted() {
        use kiln_model::{EventInfo, FrameKind, ThreadId, WeightUnit, NO_TIME};
        let mut cpu = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let f = [cpu.frame(b"work", FrameKind::User)];
        for t in [100, 200, 300, NO_TIME] {
            cpu.add_sample_path(&f, 1, t, ThreadId::NONE);
        }
        let mut dst = Profile::new(cpu.event.clone());
        let shift = |t: u64| t + 1_000;
        let left = add_host_samples(&mut dst, &cpu, "h0", &shift, Some((1_150, 1_250)));
        assert_eq!(left, 2);
        assert_eq!(dst.samples.len(), 2);
        assert!(dst.samples.time.contains(&1_200));
        assert!(dst.samples.time.contains(&NO_TIME));

        let mut off = Profile::new(EventInfo::new("offcpu", WeightUnit::Nanoseconds));
        let g = [off.frame(b"wait", FrameKind::Kernel)];
        off.add_sample_path(&g, 100, 60, ThreadId::NONE); // 60-160: overlaps
        off.add_sample_path(&g, 10, 60, ThreadId::NONE); // 60-70: before
        let mut dst = Profile::new(off.event.clone());
        assert_eq!(
            add_host_samples(&mut dst, &off, "h0", &|t| t, Some((150, 250))),
            1
        );
        assert_eq!(dst.samples.len(), 1);
    }

    /// MQTT agents get the run's nonce and their index; other protocols and a nonce given
    /// in the flags are left as they are.
    #[test]
    fn mqtt_agents_carry_the_runs_nonce_and_their_index() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            agent_argv(&argv(&["mqtt", "pubsub", "-c", "4"]), 0xab, 1),
            argv(&[
                "mqtt",
                "pubsub",
                "-c",
                "4",
                "--load-nonce",
                "00000000000000ab",
                "--agent-index",
                "1"
            ])
        );
        let amqp = argv(&["amqp", "-x", "1"]);
        assert_eq!(agent_argv(&amqp, 0xab, 1), amqp);
        let given = argv(&["mqtt", "pub", "--load-nonce=12"]);
        assert_eq!(agent_argv(&given, 0xab, 1), given);
    }

    #[test]
    fn impossible_seconds_and_reports_are_named() {
        let ok = LoadTick {
            interval_s: 1.0,
            completed: Some(120_000),
            ..Default::default()
        };
        assert!(check_tick(&ok, 0).is_ok());
        assert!(check_tick(
            &LoadTick {
                interval_s: 0.0,
                ..ok.clone()
            },
            0
        )
        .is_ok());
        let bad = [
            (
                LoadTick {
                    interval_s: f64::NAN,
                    ..ok.clone()
                },
                0,
                "a second of NaN s",
            ),
            (
                LoadTick {
                    sent: Some(u64::MAX),
                    ..ok.clone()
                },
                0,
                "sent in 1 s",
            ),
            (
                LoadTick {
                    values: vec![crate::Value {
                        name: "acked".into(),
                        unit: "msg/s".into(),
                        kind: crate::ValueKind::Rate,
                        value: Some(f64::INFINITY),
                    }],
                    ..ok.clone()
                },
                0,
                "'acked' is not a number",
            ),
            (ok.clone(), 3, "0 histogram names for 3 histograms"),
        ];
        for (t, blobs, says) in bad {
            let e = check_tick(&t, blobs).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
        let good = serde_json::json!({"headline": {"totals": [{"name": "acked", "value": 7}],
            "throughput": {"value": 7.0}}});
        assert!(check_report(&good).is_ok());
        assert!(check_report(&serde_json::Value::Null).is_ok());
        for (r, says) in [
            (serde_json::json!([1]), "not an object"),
            (serde_json::json!({"x": "y".repeat(300_000)}), "at most 256"),
            (
                serde_json::json!({"headline": {"totals": [{"name": "a", "value": -1}]}}),
                "headline.totals",
            ),
            (
                serde_json::json!({"headline": {"throughput": {"value": -1e300}}}),
                "a throughput of",
            ),
        ] {
            let e = check_report(&r).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }

    fn cluster(a: u64, b: u64) -> Profile {
        use kiln_model::{EventInfo, FrameKind, ThreadId, WeightUnit, NO_TIME};
        let mut whole = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Period));
        for (host, f, w) in [("n1", "route", a), ("n2", "deliver", b)] {
            let mut p = Profile::default();
            let fr = [
                p.frame(b"main", FrameKind::User),
                p.frame(f.as_bytes(), FrameKind::User),
            ];
            p.add_sample_path(&fr, w, NO_TIME, ThreadId::NONE);
            add_host_samples(&mut whole, &p, host, &|t| t, None);
        }
        whole
    }

    /// The hosts' samples, labelled here, are what a comparison splits per node by.
    #[test]
    fn each_node_gets_its_own_table() {
        use kiln_compare::nodes::{hosts_of, node_profile, tables};
        use kiln_compare::Rules;
        use kiln_store::RunMeta;
        let mut m = RunMeta::default();
        m.headline.operations = Some(1000);
        m.headline.cpu_per_op_us = Some(30.0);
        let (b, a) = (cluster(100, 200), cluster(100, 50));
        assert_eq!(hosts_of(&b), ["n1", "n2"]);
        assert_eq!(node_profile(&b, "n2").total_weight(), 200);
        let before = vec![(&m, &b); 4];
        let after = vec![(&m, &a); 4];
        let t = tables("cpu-clock", &before, &after, &Rules::default(), 10, "msg");
        let names: Vec<&str> = t.iter().map(|t| t.event.as_str()).collect();
        assert_eq!(names, ["cpu-clock on n1", "cpu-clock on n2"]);
        let deliver = t[1].rows.iter().find(|r| r.name == "deliver").unwrap();
        // n2's share of 30 µs/msg: 20 before (200 of 300), 10 after (50 of 150).
        assert!((deliver.before.median - 20.0).abs() < 1e-6, "{deliver:?}");
        assert!((deliver.after.median - 10.0).abs() < 1e-6, "{deliver:?}");
    }
}
