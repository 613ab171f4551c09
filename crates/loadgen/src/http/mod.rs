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
pub mod request;
pub mod response;
mod stats;

pub use request::{
    parse_header, parse_targets, parse_targets_file, parse_url, Csv, Plan, Target, Url,
};
pub use stats::{ErrorKind, ThreadStats};

use crate::Error;
use kiln_model::stop::Stop;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
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

    /// Compiles the targets (and reads the CSV file).
    pub fn plan(&self) -> Result<Plan, Error> {
        let csv = match &self.csv {
            Some(p) => Some(Csv::read(p)?),
            None => None,
        };
        Plan::new(&self.targets, &self.headers, csv)
    }
}

/// A load running on its threads.
pub struct Running {
    stats: Vec<Arc<Mutex<ThreadStats>>>,
    handles: Vec<JoinHandle<()>>,
    /// When the load started.
    pub started: Instant,
    /// The server's address.
    pub addr: std::net::SocketAddr,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").field("addr", &self.addr).finish()
    }
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

/// Starts the load: probes the server, then starts the threads. `stop` ends it early.
pub fn start(opts: &HttpOptions, stop: &Stop) -> Result<Running, Error> {
    opts.validate()?;
    let plan = Arc::new(opts.plan()?);
    probe(&plan, opts.timeout)?;
    let threads = opts.threads.min(opts.connections).max(1);
    let base = Instant::now();
    let mut stats = Vec::new();
    let mut handles = Vec::new();
    for t in 0..threads {
        let conns =
            (opts.connections / threads + u32::from(t < opts.connections % threads)) as usize;
        let rate = opts.rate.map(|r| r / threads as f64);
        let cfg = client::WorkerConfig {
            index: t,
            threads,
            connections: conns,
            pipeline: opts.pipeline as usize,
            rate,
            // Threads interleave: thread t's first tick is t/R after the start.
            rate_offset_ns: opts.rate.map_or(0, |r| (t as f64 * 1e9 / r) as u64),
            timeout: opts.timeout,
            end: opts.duration,
            drain: opts.timeout.min(Duration::from_secs(2)),
            max_requests: if opts.max_requests == 0 {
                0
            } else {
                opts.max_requests / threads as u64
                    + u64::from((t as u64) < opts.max_requests % threads as u64)
            },
        };
        let s = Arc::new(Mutex::new(ThreadStats::default()));
        stats.push(s.clone());
        let plan = plan.clone();
        let stop = stop.clone();
        let h = std::thread::Builder::new()
            .name(format!("kiln-http-{t}"))
            .spawn(
                move || match client::Worker::new(cfg, &plan, &stop, base, s.clone()) {
                    Ok(w) => w.run(),
                    Err(e) => {
                        let mut s = s.lock().unwrap_or_else(|p| p.into_inner());
                        s.error(ErrorKind::Other, 0, &format!("cannot start a worker: {e}"));
                        s.finished = true;
                    }
                },
            )
            .map_err(|e| Error::Start(format!("cannot start a thread: {e}")))?;
        handles.push(h);
    }
    Ok(Running {
        stats,
        handles,
        started: base,
        addr: plan.addr,
    })
}

impl Running {
    /// Everything counted since the last call (the per-second series reads this).
    pub fn take(&self) -> ThreadStats {
        let mut sum = ThreadStats::default();
        for s in &self.stats {
            let part = s.lock().unwrap_or_else(|p| p.into_inner()).take();
            sum.add(&part);
        }
        sum
    }

    /// Whether every thread has ended (time up, stop raised, request limit).
    pub fn finished(&self) -> bool {
        self.stats
            .iter()
            .all(|s| s.lock().unwrap_or_else(|p| p.into_inner()).finished)
    }

    /// Waits for the threads to end and returns what they counted since the last
    /// [`Running::take`].
    pub fn join(self) -> ThreadStats {
        for h in self.handles {
            let _ = h.join();
        }
        let mut sum = ThreadStats::default();
        for s in &self.stats {
            sum.add(&s.lock().unwrap_or_else(|p| p.into_inner()));
        }
        sum
    }
}
