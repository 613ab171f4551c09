//! HTTP/1.1 load: the protocol side of `kiln load http`.
//!
//! wrk's and vegeta's habits — `-c` connections over `-t` threads, keep-alive, a closed
//! loop by default or a constant rate (`-R`, wrk2), several URLs or a vegeta targets file
//! with per-request variables ([`request`]) — on an event-driven client
//! ([`client`](self)): each thread keeps its connections in one epoll set, renders requests
//! into reused buffers and reads responses incrementally without storing bodies
//! ([`response`]). With a rate, every request has an intended send time and latency is
//! measured from it (no coordinated omission); the service time (actual send → response)
//! is kept beside it.
//!
//! # Design constraints
//! The client shares a small machine with the server it measures, so its CPU per request
//! is a goal: no task or future per request, no allocation per request once connections
//! are warm, one `write` and about one `read` per request, latency recorded into
//! HdrHistograms under a per-thread mutex that only the once-a-second reader contends.
mod client;
mod driver;
pub mod report;
pub mod request;
pub mod response;
mod stamped;
mod target;

pub use driver::{HttpDriver, SCHEMA, SCHEMA_RATE};
pub use report::{find_plateau, format_sweep, sweep_rows, HttpSummary, Plateau, SweepRow};
pub use request::{
    parse_header, parse_targets, parse_targets_file, parse_url, Csv, Plan, Target, Url,
};

use crate::engine::stats::{Schema, Tick};
use crate::engine::{Load, Report};
use crate::Error;
use kiln_os::stop::Stop;
use std::path::PathBuf;
use std::time::Duration;

/// Why a request failed (or, for `Connect`, a connection attempt).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// A connection could not be opened (refused, unreachable…). Counted per attempt.
    Connect,
    /// No complete response within `--timeout`.
    Timeout,
    /// The connection was reset (RST, broken pipe).
    Reset,
    /// The server closed the connection before or while answering.
    Closed,
    /// The response was not valid HTTP/1.1.
    Protocol,
    /// Anything else (epoll or socket errors).
    Other,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub const ALL: [ErrorKind; 6] = [
        ErrorKind::Connect,
        ErrorKind::Timeout,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::Protocol,
        ErrorKind::Other,
    ];

    /// Lower-case name used in reports (`connect`, `timeout`…); the series counter is
    /// `err_NAME`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Other => "other",
        }
    }
}

/// An HTTP load. Defaults follow wrk where it has one (see [`HttpOptions::default`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HttpOptions {
    /// What to request, in turn (request i uses target i mod len).
    pub targets: Vec<Target>,
    /// Headers added to every request (`-H`).
    pub headers: Vec<(String, String)>,
    /// CSV file feeding `{csv:…}` variables. Default none.
    pub csv: Option<PathBuf>,
    /// Open connections (`-c`). Default 10 (wrk's).
    pub connections: u32,
    /// Threads (`-t`). Default 2 (wrk's); never more than connections.
    pub threads: u32,
    /// Load duration (`-d`). Default 10 s (wrk's); `None`: until stopped.
    pub duration: Option<Duration>,
    /// Total requests per second (`-R`). Default `None`: closed loop, each connection sends
    /// its next request when the previous response arrives.
    pub rate: Option<f64>,
    /// A request without a complete response after this long fails as a timeout and its
    /// connection is replaced (`--timeout`). Default 2 s (wrk's).
    pub timeout: Duration,
    /// Requests in flight per connection (`--pipeline`). Default 1: no pipelining.
    pub pipeline: u32,
    /// Stop after this many requests (0: no limit). Default 0.
    pub max_requests: u64,
    /// Processes whose CPU time and context switches are counted beside the load
    /// (`--target-pid`). Default none.
    pub target_pids: Vec<u32>,
    /// The flag the user gave the target's pids with, for messages: `None` for
    /// `--target-pid`, `Some("-p")` when they are `kiln run -p`'s.
    #[serde(skip)]
    pub target_pids_flag: Option<&'static str>,
    /// The run's label (`--id`). Default `http`.
    pub id: String,
    /// Local addresses the connections are bound to, round-robin (`--source-address`);
    /// empty (default): the kernel's choice (see [`crate::engine::fleet`]).
    #[serde(default)]
    pub source_addresses: Vec<std::net::IpAddr>,
    /// Run even when the pre-flight check finds the connections do not fit this machine
    /// (`--no-preflight`). Default false.
    #[serde(default)]
    pub no_preflight: bool,
    /// The `CLOCK_MONOTONIC` instant (ns) whole seconds of this load's ticks are counted
    /// from ([`crate::Load::align_ticks`]); 0 (default): every second from the load's start.
    #[serde(skip)]
    pub tick_grid_ns: u64,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            tick_grid_ns: 0,
            targets: Vec::new(),
            headers: Vec::new(),
            csv: None,
            connections: 10,
            threads: 2,
            duration: Some(Duration::from_secs(10)),
            rate: None,
            timeout: Duration::from_secs(2),
            pipeline: 1,
            max_requests: 0,
            target_pids: Vec::new(),
            target_pids_flag: None,
            id: "http".into(),
            source_addresses: Vec::new(),
            no_preflight: false,
        }
    }
}

impl HttpOptions {
    /// Checks values that cannot work.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |flag: &'static str, value: String, reason: &str| {
            Err(Error::Option {
                flag,
                value,
                reason: reason.into(),
            })
        };
        if self.connections == 0 {
            return bad("-c", "0".into(), "at least one connection");
        }
        if self.threads == 0 {
            return bad("-t", "0".into(), "at least one thread");
        }
        if let Some(r) = self.rate {
            if !(r > 0.0 && r.is_finite()) {
                return bad("-R", r.to_string(), "a rate > 0 requests/s");
            }
        }
        if self.pipeline == 0 || self.pipeline > 1024 {
            return bad("--pipeline", self.pipeline.to_string(), "1-1024");
        }
        if self.timeout.is_zero() {
            return bad("--timeout", "0".into(), "a timeout > 0");
        }
        if self.targets.is_empty() {
            return bad("URL", String::new(), "give a URL or --targets FILE");
        }
        Ok(())
    }

    /// Checks that the `--target-pid` processes exist (the command line's check: a target
    /// that exits once the load runs is counted up to then, and said).
    pub fn check_target_pids(&self) -> Result<(), Error> {
        for p in &self.target_pids {
            if !std::path::Path::new(&format!("/proc/{p}")).exists() {
                return Err(Error::Option {
                    flag: self.target_pids_flag.unwrap_or("--target-pid"),
                    value: p.to_string(),
                    reason: "no such process".into(),
                });
            }
        }
        Ok(())
    }

    /// Compiles the targets (and reads the CSV file).
    pub fn plan(&self) -> Result<Plan, Error> {
        let csv = match &self.csv {
            Some(p) => Some(Csv::read(p)?),
            None => None,
        };
        Plan::new(&self.targets, &self.headers, csv)
    }
}

/// Memory per connection on kiln's side besides the kernel's socket: 0.41 KiB, kiln's RSS
/// growth from 1 to 5,000 keep-alive connections to nginx in a closed loop (2026-11-26).
const KILN_BYTES_PER_CONNECTION: u64 = 420;

/// The pre-flight check (see [`crate::engine::fleet`]) of `opts` against `plan`'s server,
/// for its largest sweep step; the soft open-files limit raised as the connections need.
pub(crate) fn preflight_plan(
    opts: &HttpOptions,
    plan: &Plan,
    sweep: Option<&Sweep>,
) -> Result<crate::engine::fleet::Plan, Error> {
    use crate::engine::fleet;
    let most = match sweep {
        Some(Sweep::Connections(c)) => c.iter().copied().max().unwrap_or(opts.connections),
        _ => opts.connections,
    };
    fleet::preflight(
        &fleet::Fleet {
            // The probe's connection ends before these open (a second later its pair in
            // TIME_WAIT is free again on loopback).
            connections: most as u64,
            destination: plan.addr,
            sources: opts.source_addresses.clone(),
            bytes_per_connection: fleet::KERNEL_BYTES_PER_CONNECTION + KILN_BYTES_PER_CONNECTION,
        },
        opts.no_preflight,
    )
}

/// The pre-flight check of an HTTP load: what `kiln load http` and `kiln run` print
/// before it starts (an error naming every shortfall).
pub fn preflight(
    opts: &HttpOptions,
    sweep: Option<&Sweep>,
) -> Result<crate::engine::fleet::Plan, Error> {
    opts.validate()?;
    let plan = opts.plan()?;
    preflight_plan(opts, &plan, sweep)
}

/// Checks that the server accepts a connection (within `timeout`, at most 5 s), so that a
/// wrong port fails at once with a clear error instead of a run full of connect errors.
pub fn probe(plan: &Plan, timeout: Duration) -> Result<(), Error> {
    std::net::TcpStream::connect_timeout(&plan.addr, timeout.min(Duration::from_secs(5)))
        .map(drop)
        .map_err(|source| Error::Connect {
            uri: format!("http://{} ({})", plan.authority, plan.addr),
            source,
        })
}

/// Runs an HTTP load to its end (see [`crate::engine::run`]).
pub fn run(
    opts: &HttpOptions,
    stop: &Stop,
    on_tick: &mut dyn FnMut(&Tick),
) -> Result<Report, Error> {
    let d = HttpDriver::new(opts.clone())?;
    crate::engine::run(&d, stop, on_tick)
}

/// What a sweep varies.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Sweep {
    /// `--rate-sweep`: one constant-rate step per total rate.
    Rate(Vec<f64>),
    /// `--concurrency-sweep`: one step per connection count (closed loop unless -R).
    Connections(Vec<u32>),
}

/// Parses `--concurrency-sweep 8,16,32` (or `FROM:TO:STEPS`).
pub fn parse_concurrency_sweep(s: &str) -> Result<Vec<u32>, Error> {
    let v = crate::engine::sweep::parse_steps("--concurrency-sweep", s)?;
    v.iter()
        .map(|&c| {
            let r = c.round();
            if (r - c).abs() > 1e-9 || !(1.0..=1_000_000.0).contains(&r) {
                Err(Error::Option {
                    flag: "--concurrency-sweep",
                    value: s.to_string(),
                    reason: format!("{c} is not a whole number of connections"),
                })
            } else {
                Ok(r as u32)
            }
        })
        .collect()
}

/// Runs one step per value of `sweep` (each `opts.duration` long, 10 s if unset). The
/// report's summary holds the table ([`SweepRow`]) and, for connections, the plateau.
pub fn sweep(
    opts: &HttpOptions,
    sweep: &Sweep,
    plateau_threshold: f64,
    stop: &Stop,
    on_tick: &mut dyn FnMut(&Tick),
) -> Result<Report, Error> {
    opts.validate()?;
    let plan = std::sync::Arc::new(opts.plan()?);
    preflight_plan(opts, &plan, Some(sweep))?;
    probe(&plan, opts.timeout)?;
    let mut base = opts.clone();
    base.duration = Some(opts.duration.unwrap_or(Duration::from_secs(10)));
    let (param, values): (&str, Vec<f64>) = match sweep {
        Sweep::Rate(r) => ("rate", r.clone()),
        Sweep::Connections(c) => ("connections", c.iter().map(|&c| c as f64).collect()),
    };
    let is_rate = matches!(sweep, Sweep::Rate(_));
    let mut r = crate::engine::sweep::run_sweep(
        param,
        &values,
        |v| {
            let mut o = base.clone();
            if is_rate {
                o.rate = Some(v);
            } else {
                o.connections = v as u32;
            }
            HttpDriver::with_plan(o, plan.clone())
        },
        stop,
        on_tick,
    )?;
    let rows = sweep_rows(&r, &base);
    let plateau = if is_rate {
        None
    } else {
        Some(find_plateau(&rows, plateau_threshold, &base))
    };
    r.summary = serde_json::json!({ "rows": rows, "plateau": plateau });
    Ok(r)
}

/// An HTTP load as `kiln load` and `kiln run` start it: one run or a sweep.
#[derive(Debug, Clone)]
pub struct HttpLoad {
    /// The options.
    pub opts: HttpOptions,
    /// A sweep, if any.
    pub sweep: Option<Sweep>,
    /// Throughput growth below which a concurrency step counts as the plateau (0.1: 10%).
    pub plateau_threshold: f64,
}

impl HttpLoad {
    /// What the load measures (latency from the intended send first with a rate).
    pub fn schema(&self) -> &'static Schema {
        if matches!(self.sweep, Some(Sweep::Rate(_))) {
            &SCHEMA_RATE
        } else {
            HttpDriver::schema_for(&self.opts)
        }
    }
}

impl Load for HttpLoad {
    fn protocol(&self) -> &'static str {
        "http"
    }
    fn schema(&self) -> &'static Schema {
        HttpLoad::schema(self)
    }
    fn id(&self) -> &str {
        &self.opts.id
    }
    fn schedule(&self) -> Option<(usize, Duration)> {
        let steps = match self.sweep.as_ref()? {
            Sweep::Rate(r) => r.len(),
            Sweep::Connections(c) => c.len(),
        };
        Some((steps, self.opts.duration.unwrap_or(Duration::from_secs(10))))
    }
    fn preflight(&self) -> Result<Vec<String>, Error> {
        Ok(preflight(&self.opts, self.sweep.as_ref())?.notes())
    }
    fn settings(&self) -> crate::engine::Settings {
        crate::engine::Settings {
            rate: self.opts.rate.filter(|_| self.sweep.is_none()),
            concurrency: (!matches!(self.sweep, Some(Sweep::Connections(_))))
                .then_some(self.opts.connections as f64),
        }
    }
    fn align_ticks(&mut self, origin_mono_ns: u64) {
        self.opts.tick_grid_ns = origin_mono_ns;
    }
    fn run(&mut self, stop: &Stop, on_tick: &mut dyn FnMut(&Tick)) -> Result<Report, Error> {
        match &self.sweep {
            Some(s) => sweep(&self.opts, s, self.plateau_threshold, stop, on_tick),
            None => run(&self.opts, stop, on_tick),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A target that is not there is named by the flag it was given with.
    #[test]
    fn a_missing_target_is_named_by_its_flag() {
        let mut o = HttpOptions {
            targets: vec![Target {
                method: "GET".into(),
                url: "http://127.0.0.1:1/".into(),
                headers: vec![],
                body: vec![],
            }],
            target_pids: vec![u32::MAX],
            ..Default::default()
        };
        assert!(
            o.validate().is_ok(),
            "existence is the command line's check"
        );
        let e = o.check_target_pids().unwrap_err().to_string();
        assert!(
            e.contains("--target-pid") && e.contains("no such process"),
            "{e}"
        );
        o.target_pids_flag = Some("-p");
        let e = o.check_target_pids().unwrap_err().to_string();
        assert!(e.contains("-p") && !e.contains("--target-pid"), "{e}");
        o.target_pids = vec![std::process::id()];
        assert!(o.check_target_pids().is_ok());
    }
}
