//! Counters, latency histograms and the serialisable results of a run.
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Percentiles {
    /// Number of measured messages.
    pub count: u64,
    /// Minimum.
    pub min_us: u64,
    /// Median.
    pub p50_us: u64,
    /// 75th percentile.
    pub p75_us: u64,
    /// 95th percentile.
    pub p95_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// Maximum.
    pub max_us: u64,
}

impl Percentiles {
    pub(crate) fn of(h: &Histogram<u64>) -> Option<Self> {
        if h.is_empty() {
            return None;
        }
        Some(Percentiles {
            count: h.len(),
            min_us: h.min(),
            p50_us: h.value_at_quantile(0.5),
            p75_us: h.value_at_quantile(0.75),
            p95_us: h.value_at_quantile(0.95),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            max_us: h.max(),
        })
    }
}

/// One second of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Tick {
    /// Seconds since the start of the load at the end of this interval.
    pub time_s: f64,
    /// Length of the interval in seconds (about 1; shorter for the last one).
    pub interval_s: f64,
    /// Messages published (written to the socket) in the interval.
    pub sent: u64,
    /// Publisher confirms (acks) received.
    pub confirmed: u64,
    /// Publisher nacks received.
    pub nacked: u64,
    /// Messages returned as unroutable (mandatory).
    pub returned: u64,
    /// Messages delivered to consumers.
    pub received: u64,
    /// End-to-end latency (timestamp in the message to delivery).
    pub consumer_latency: Option<Percentiles>,
    /// End-to-end latency from the *intended* send time (rate-limited runs only).
    pub consumer_latency_intended: Option<Percentiles>,
    /// Publish to confirm latency.
    pub confirm_latency: Option<Percentiles>,
    /// Publish-intended to confirm latency (rate-limited runs only).
    pub confirm_latency_intended: Option<Percentiles>,
    /// A `connection.blocked` was in force at some point in the interval.
    pub blocked: bool,
    /// Producers had messages to send but sent none in this interval.
    pub stalled: bool,
    /// Some connection was down (lost, or reconnecting) in this interval.
    pub disconnected: bool,
}

impl Tick {
    /// `count` per second in this interval.
    pub fn rate(&self, count: u64) -> f64 {
        if self.interval_s > 0.0 {
            count as f64 / self.interval_s
        } else {
            0.0
        }
    }
}

/// Something that happened during a run, at a time.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// Seconds since the start of the load.
    pub time_s: f64,
    /// `blocked`, `unblocked`, `connection-lost`, `reconnected`, `interrupted`.
    pub kind: String,
    /// Details (the broker's reason, the error).
    pub detail: String,
}

/// Totals of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// The run's `--id`.
    pub id: String,
    /// Duration of the load in seconds.
    pub duration_s: f64,
    /// Messages published.
    pub sent: u64,
    /// Confirms received.
    pub confirmed: u64,
    /// Nacks received.
    pub nacked: u64,
    /// Unroutable messages returned.
    pub returned: u64,
    /// Messages received by consumers.
    pub received: u64,
    /// Average sending rate, msg/s.
    pub send_rate: f64,
    /// Average confirm rate, msg/s.
    pub confirm_rate: f64,
    /// Average receiving rate, msg/s.
    pub receive_rate: f64,
    /// Consumer latency over the whole run.
    pub consumer_latency: Option<Percentiles>,
    /// Consumer latency from intended send times (rate-limited runs).
    pub consumer_latency_intended: Option<Percentiles>,
    /// Confirm latency over the whole run.
    pub confirm_latency: Option<Percentiles>,
    /// Confirm latency from intended send times (rate-limited runs).
    pub confirm_latency_intended: Option<Percentiles>,
    /// `connection.blocked` notifications received.
    pub blocked_notifications: u64,
    /// Seconds with a block in force.
    pub blocked_seconds: u64,
    /// Seconds in which publishing stalled.
    pub stalled_seconds: u64,
    /// Seconds with a connection down.
    pub disconnected_seconds: u64,
    /// Successful reconnections (`reconnect`).
    pub reconnects: u64,
    /// The fault that ended the run early (a lost connection without `reconnect`), if any.
    pub failure: Option<String>,
    /// The run was stopped by Ctrl-C (or the caller's stop flag).
    pub interrupted: bool,
}

/// Everything a run produced: the summary, every second and the events.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Report {
    /// Format version of this document.
    pub version: u32,
    /// The options of the run.
    pub options: crate::AmqpOptions,
    /// Totals.
    pub summary: Summary,
    /// One entry per second.
    pub series: Vec<Tick>,
    /// Flow-control and connection events.
    pub events: Vec<Event>,
}

pub(crate) fn new_hist() -> Histogram<u64> {
    // 1 µs to 1 hour at 3 significant digits: ~200 KB per histogram, allocated once.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static histogram bounds are valid")
}

/// Latency histograms of one agent for the current interval. Each is allocated on first
/// use (~190 KB each), so thousands of idle producers cost nothing.
#[derive(Debug, Default)]
pub(crate) struct Hists {
    pub consumer: Option<Histogram<u64>>,
    pub consumer_intended: Option<Histogram<u64>>,
    pub confirm: Option<Histogram<u64>>,
    pub confirm_intended: Option<Histogram<u64>>,
}

/// A histogram of one agent and its counterpart in the collecting set.
type HistPair<'a> = (
    &'a mut Option<Histogram<u64>>,
    &'a mut Option<Histogram<u64>>,
);

/// Records `us` into a lazily allocated histogram (values beyond an hour are clamped).
pub(crate) fn record(h: &mut Option<Histogram<u64>>, us: u64) {
    h.get_or_insert_with(new_hist).saturating_record(us.max(1));
}

impl Hists {
    pub fn new() -> Self {
        Self::default()
    }

    fn pairs<'a>(&'a mut self, into: &'a mut Hists) -> [HistPair<'a>; 4] {
        [
            (&mut self.consumer, &mut into.consumer),
            (&mut self.consumer_intended, &mut into.consumer_intended),
            (&mut self.confirm, &mut into.confirm),
            (&mut self.confirm_intended, &mut into.confirm_intended),
        ]
    }

    /// Adds this interval's values into `into` and empties self.
    pub fn drain_into(&mut self, into: &mut Hists) {
        for (a, b) in self.pairs(into) {
            if let Some(a) = a.as_mut().filter(|a| !a.is_empty()) {
                let _ = b.get_or_insert_with(new_hist).add(&*a);
                a.reset();
            }
        }
    }

    /// Adds `other` into self without emptying it.
    pub fn add(&mut self, other: &mut Hists) {
        for (a, b) in other.pairs(self) {
            if let Some(a) = a.as_ref().filter(|a| !a.is_empty()) {
                let _ = b.get_or_insert_with(new_hist).add(a);
            }
        }
    }

    pub fn reset(&mut self) {
        for h in [
            &mut self.consumer,
            &mut self.consumer_intended,
            &mut self.confirm,
            &mut self.confirm_intended,
        ]
        .into_iter()
        .flatten()
        {
            h.reset();
        }
    }
}

pub(crate) fn pct(h: &Option<Histogram<u64>>) -> Option<Percentiles> {
    h.as_ref().and_then(Percentiles::of)
}

/// Counters of one producer or consumer. Each agent has its own so threads never share a
/// contended cache line; the ticker sums them once a second.
#[derive(Debug)]
pub(crate) struct Counters {
    pub sent: AtomicU64,
    pub confirmed: AtomicU64,
    pub nacked: AtomicU64,
    pub returned: AtomicU64,
    pub received: AtomicU64,
    pub hists: Mutex<Hists>,
}

impl Counters {
    pub fn new() -> Self {
        Counters {
            sent: AtomicU64::new(0),
            confirmed: AtomicU64::new(0),
            nacked: AtomicU64::new(0),
            returned: AtomicU64::new(0),
            received: AtomicU64::new(0),
            hists: Mutex::new(Hists::new()),
        }
    }

    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}
