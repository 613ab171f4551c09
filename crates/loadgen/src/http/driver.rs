//! The HTTP driver: what it measures, its worker threads, and the target's CPU beside it.
use super::client::{Worker, WorkerConfig};
use super::request::Plan;
use super::{ErrorKind, HttpOptions};
use crate::engine::fleet::Spread;
use crate::engine::pacer::{Constant, Schedule};
use crate::engine::stats::{
    metrics, CounterDef, CounterId, FlagDef, LatencyDef, LatencyId, LevelDef, Schema, Show,
};
use crate::engine::{Ctx, Driver, Report};
use crate::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

metrics! {
    counters(COUNTERS) {
        sent, answered, unanswered, not_sent, bytes_read, bytes_written, connects,
        target_cpu_user_us, target_cpu_sys_us, target_ctx_switches, client_cpu_us,
        machine_busy_us, target_runq_wait_us, split_responses, split_wait_us,
    }
    latencies(LATENCIES) { latency_intended, latency }
    flags(FLAGS) { stalled, errors }
    levels(LEVELS) { accept_backlog }
    arrays {
        /// Counters `status_1xx` to `status_5xx`: responses by status class.
        status: [CounterId; 5] = [
            CounterId::named(COUNTERS, "status_1xx"),
            CounterId::named(COUNTERS, "status_2xx"),
            CounterId::named(COUNTERS, "status_3xx"),
            CounterId::named(COUNTERS, "status_4xx"),
            CounterId::named(COUNTERS, "status_5xx"),
        ],
        /// Counters `err_connect` to `err_other`: failed requests by kind, in
        /// [`ErrorKind`]'s order.
        err: [CounterId; 6] = [
            CounterId::named(COUNTERS, "err_connect"),
            CounterId::named(COUNTERS, "err_timeout"),
            CounterId::named(COUNTERS, "err_reset"),
            CounterId::named(COUNTERS, "err_closed"),
            CounterId::named(COUNTERS, "err_protocol"),
            CounterId::named(COUNTERS, "err_other"),
        ],
    }
}

const COUNTERS: &[CounterDef] = &[
    CounterDef {
        name: "sent",
        unit: "req",
        description: "requests written to a connection",
        show: Show::Always,
        rate_label: Some("sending rate"),
    },
    CounterDef {
        name: "answered",
        unit: "req",
        description: "complete responses, any status",
        show: Show::Always,
        rate_label: Some("answered rate"),
    },
    CounterDef::new("status_1xx", "req", "responses 100-199", Show::NonZero),
    CounterDef::new("status_2xx", "req", "responses 200-299", Show::Always),
    CounterDef::new("status_3xx", "req", "responses 300-399", Show::NonZero),
    CounterDef::new("status_4xx", "req", "responses 400-499", Show::NonZero),
    CounterDef::new("status_5xx", "req", "responses 500-599", Show::NonZero),
    CounterDef::new(
        "err_connect",
        "attempt",
        "connection attempts that failed (refused, unreachable)",
        Show::NonZero,
    ),
    CounterDef::new(
        "err_timeout",
        "req",
        "requests without a complete response within --timeout",
        Show::NonZero,
    ),
    CounterDef::new(
        "err_reset",
        "req",
        "requests lost to a reset connection",
        Show::NonZero,
    ),
    CounterDef::new(
        "err_closed",
        "req",
        "requests whose connection the server closed before or while answering",
        Show::NonZero,
    ),
    CounterDef::new(
        "err_protocol",
        "req",
        "responses that are not valid HTTP/1.1",
        Show::NonZero,
    ),
    CounterDef::new("err_other", "req", "other socket errors", Show::NonZero),
    CounterDef::new(
        "unanswered",
        "req",
        "requests still in flight when the run ended (after the drain)",
        Show::NonZero,
    ),
    CounterDef::new(
        "not_sent",
        "req",
        "scheduled requests (-R) that found no free connection before the end",
        Show::NonZero,
    ),
    CounterDef::new("bytes_read", "B", "bytes of responses read", Show::Always),
    CounterDef::new(
        "split_responses",
        "req",
        "responses whose last byte arrived 20 ms or more after their first (written in parts; the rest waited)",
        Show::NonZero,
    ),
    CounterDef::new(
        "split_wait_us",
        "µs",
        "the time between the first and the last byte of the split responses, summed",
        Show::Never,
    ),
    CounterDef::new(
        "bytes_written",
        "B",
        "bytes of requests written",
        Show::Never,
    ),
    CounterDef::new("connects", "conn", "connections opened", Show::Never),
    CounterDef::new(
        "target_cpu_user_us",
        "µs",
        "user CPU time of the --target-pid processes",
        Show::Never,
    ),
    CounterDef::new(
        "target_cpu_sys_us",
        "µs",
        "system CPU time of the --target-pid processes",
        Show::Never,
    ),
    CounterDef::new(
        "target_ctx_switches",
        "switch",
        "context switches (voluntary and not) of the --target-pid processes' threads",
        Show::Never,
    ),
    CounterDef::new(
        "client_cpu_us",
        "µs",
        "CPU time (user + system) of kiln itself",
        Show::Never,
    ),
    CounterDef::new(
        "machine_busy_us",
        "µs",
        "CPU time of the whole machine, all CPUs, not idle (/proc/stat)",
        Show::Never,
    ),
    CounterDef::new(
        "target_runq_wait_us",
        "µs",
        "time the --target-pid processes' threads were runnable but waited for a CPU (/proc/PID/task/*/schedstat)",
        Show::Never,
    ),
];

const FLAGS: &[FlagDef] = &[
    FlagDef {
        name: "stalled",
        marker: "STALLED",
        description: "requests were due (-R) but none was sent",
    },
    FlagDef {
        name: "errors",
        marker: "ERRORS",
        description: "some request failed or a connection attempt failed",
    },
];

/// Latencies of a closed-loop run: the service time first in the summary.
const LATENCIES: &[LatencyDef] = &[
        LatencyDef {
            name: "latency_intended",
            csv: "intended",
            line_label: "",
            summary_label: "latency from intended send",
            description: "intended send time to complete response (-R only)",
        },
        LatencyDef {
            name: "latency",
            csv: "latency",
            line_label: "min/median/75th/95th/99th/99.9th/max latency (closed-loop)",
            summary_label: "latency (closed-loop: from each actual send; a slow response delays the next send, so queueing is not counted — use -R)",
            description: "actual send to complete response",
        },
];

/// Latencies of a constant-rate run: the same two, labelled for latency from the intended
/// send time first.
const LATENCIES_RATE: &[LatencyDef] = &[
    LatencyDef {
        name: "latency_intended",
        csv: "intended",
        line_label: "min/median/75th/95th/99th/99.9th/max latency from intended send",
        summary_label: "latency from intended send",
        description: "intended send time to complete response (-R only)",
    },
    LatencyDef {
        name: "latency",
        csv: "latency",
        line_label: "service time",
        summary_label: "service time (actual send to response)",
        description: "actual send to complete response",
    },
];

// The latencies' handles, made from the closed loop's table, name the same latencies in the
// constant rate's.
const _: () = {
    assert!(
        LatencyId::named(LATENCIES_RATE, "latency_intended").index() == M.latency_intended.index()
    );
    assert!(LatencyId::named(LATENCIES_RATE, "latency").index() == M.latency.index());
};

const LEVELS: &[LevelDef] = &[LevelDef {
    name: "accept_backlog",
    unit: "conn",
    description: "connections waiting in the server's accept queue (its listening socket's \
                  queue in /proc/net/tcp; when the server runs on this host)",
}];

/// What a closed-loop HTTP run measures.
pub static SCHEMA: Schema = Schema {
    protocol: "http",
    counters: COUNTERS,
    latencies: LATENCIES,
    flags: FLAGS,
    levels: LEVELS,
    throughput: M.answered,
    throughput_unit: "req/s",
    sent: M.sent,
    stall: Some((M.stalled, M.sent)),
};

/// What a constant-rate HTTP run measures: the same values, latency from the intended send
/// time first.
pub static SCHEMA_RATE: Schema = Schema {
    protocol: "http",
    counters: COUNTERS,
    latencies: LATENCIES_RATE,
    flags: FLAGS,
    levels: LEVELS,
    throughput: M.answered,
    throughput_unit: "req/s",
    sent: M.sent,
    stall: Some((M.stalled, M.sent)),
};

impl ErrorKind {
    /// The counter of requests failed with this kind (`err_NAME`).
    pub(crate) fn counter(self) -> CounterId {
        M.err[self as usize]
    }
}

/// Status codes and error messages the workers saw, merged at their end.
#[derive(Debug)]
pub(crate) struct Extra {
    pub status: Vec<u64>,
    pub details: [Option<String>; 6],
    /// Target CPU sampling failed (the process ended, no permission).
    pub target_error: Option<String>,
}

impl Default for Extra {
    fn default() -> Self {
        Extra {
            status: vec![0; 1000],
            details: Default::default(),
            target_error: None,
        }
    }
}

impl Extra {
    pub fn merge(&mut self, status: &[u64], details: &mut [Option<String>; 6]) {
        for (a, b) in self.status.iter_mut().zip(status) {
            *a += b;
        }
        for (a, b) in self.details.iter_mut().zip(details.iter_mut()) {
            if a.is_none() {
                *a = b.take();
            }
        }
    }
}

/// An HTTP load, ready to run: [`crate::engine::run`] drives it.
#[derive(Debug)]
pub struct HttpDriver {
    pub(crate) opts: HttpOptions,
    plan: Arc<Plan>,
    pub(crate) extra: Mutex<Extra>,
}

impl HttpDriver {
    /// Checks the options, compiles the targets and checks that the server accepts a
    /// connection.
    pub fn new(opts: HttpOptions) -> Result<Self, Error> {
        opts.validate()?;
        let plan = Arc::new(opts.plan()?);
        Ok(Self::with_plan(opts, plan))
    }

    pub(crate) fn with_plan(opts: HttpOptions, plan: Arc<Plan>) -> Self {
        HttpDriver {
            opts,
            plan,
            extra: Mutex::new(Extra::default()),
        }
    }

    fn threads(&self) -> u32 {
        self.opts.threads.min(self.opts.connections).max(1)
    }

    /// The run's schema: latency from the intended send first with -R.
    pub(crate) fn schema_for(opts: &HttpOptions) -> &'static Schema {
        if opts.rate.is_some() {
            &SCHEMA_RATE
        } else {
            &SCHEMA
        }
    }
}

impl Driver for HttpDriver {
    fn schema(&self) -> &'static Schema {
        Self::schema_for(&self.opts)
    }

    fn agents(&self) -> usize {
        self.threads() as usize
    }

    fn id(&self) -> &str {
        &self.opts.id
    }

    fn duration(&self) -> Option<Duration> {
        self.opts.duration
    }

    fn tick_grid_ns(&self) -> u64 {
        self.opts.tick_grid_ns
    }

    fn run(&self, ctx: &Ctx) -> Result<(), Error> {
        let spread = Spread::new(super::preflight_plan(&self.opts, &self.plan, None)?.sources);
        super::probe(&self.plan, self.opts.timeout)?;
        let o = &self.opts;
        let threads = self.threads();
        let spread = &spread;
        let ready = AtomicUsize::new(0);
        let mut target = None;
        std::thread::scope(|s| -> Result<(), Error> {
            let mut handles = Vec::new();
            let mut first = 0;
            for t in 0..threads {
                let conns =
                    (o.connections / threads + u32::from(t < o.connections % threads)) as usize;
                let cfg = WorkerConfig {
                    index: t,
                    threads,
                    connections: conns,
                    first,
                    pipeline: o.pipeline as usize,
                    // Threads interleave: thread t's first request is due t/R after the start.
                    schedule: o.rate.map(|r| {
                        Schedule::new(Box::new(Constant {
                            rate: r / threads as f64,
                            offset: t as f64 / r,
                        }))
                    }),
                    timeout: o.timeout,
                    drain: o.timeout.min(Duration::from_secs(2)),
                    max_requests: if o.max_requests == 0 {
                        0
                    } else {
                        o.max_requests / threads as u64
                            + u64::from((t as u64) < o.max_requests % threads as u64)
                    },
                };
                first += conns;
                let plan = &*self.plan;
                let extra = &self.extra;
                let ready = &ready;
                let h = std::thread::Builder::new()
                    .name(format!("kiln-http-{t}"))
                    .spawn_scoped(s, move || {
                        match Worker::new(cfg, plan, ctx, extra, spread) {
                            Ok(w) => w.run(ready),
                            Err(e) => {
                                ctx.fail(format!("cannot start an HTTP worker: {e}"));
                                ready.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                    })
                    .map_err(|e| Error::Start(format!("cannot start a thread: {e}")))?;
                handles.push(h);
            }
            // The load starts once every thread has opened its connections.
            while ready.load(Ordering::SeqCst) < threads as usize && !ctx.stopping() {
                ctx.stop().sleep(Duration::from_millis(1));
            }
            if !ctx.stopping() {
                ctx.start_load();
                target = Some(super::target::Sampler::new(&o.target_pids, self.plan.addr));
            }
            // Sample the target's and kiln's CPU while the workers run.
            while !handles.iter().all(|h| h.is_finished()) {
                if let Some(t) = target.as_mut() {
                    t.sample(ctx);
                }
                if ctx.stop().sleep(Duration::from_millis(200)) {
                    ctx.mark_end();
                    break;
                }
            }
            for h in handles {
                let _ = h.join();
            }
            let target_error = target.as_mut().and_then(|t| {
                t.sample(ctx);
                t.error()
            });
            if let Some(e) = target_error {
                self.extra
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .target_error = Some(e);
            }
            Ok(())
        })?;
        // The request limit was reached: the run ends by itself.
        if !ctx.stopping() {
            ctx.finish();
        }
        Ok(())
    }

    fn expects_traffic(&self, _ctx: &Ctx, _at_s: f64) -> bool {
        self.opts.rate.is_some_and(|r| r >= 2.0)
    }

    fn options(&self) -> serde_json::Value {
        serde_json::to_value(&self.opts).unwrap_or_default()
    }

    fn summary(&self, report: &Report) -> serde_json::Value {
        let x = self.extra.lock().unwrap_or_else(|p| p.into_inner());
        serde_json::to_value(super::report::HttpSummary::of(&self.opts, report, &x))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arrays of handles name the counters their positions stand for: a status class
    /// its class, an error kind its own counter.
    #[test]
    fn status_and_error_handles_name_their_counters() {
        for (i, c) in M.status.iter().enumerate() {
            let name = SCHEMA.counter_def(*c).name;
            assert_eq!(name, format!("status_{}xx", i + 1));
        }
        for k in ErrorKind::ALL {
            let name = SCHEMA.counter_def(k.counter()).name;
            assert_eq!(name, format!("err_{}", k.name()));
        }
    }
}
