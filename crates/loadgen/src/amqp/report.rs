//! PerfTest's view of a run: its summary fields, its console lines, the rate-sweep table.
use super::driver::{M, SCHEMA};
use crate::engine::report::{self as er, pheader, write_file, LoadHeadline, Report};
use crate::engine::stats::{Percentiles, Tick};
use crate::Error;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

/// Totals of a run, PerfTest's names (the `summary` object of the JSON file).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AmqpSummary {
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
    /// The run was stopped by Ctrl-C (or the caller's stop).
    pub interrupted: bool,
}

impl AmqpSummary {
    /// PerfTest's summary of a run's headline.
    pub fn of(h: &LoadHeadline) -> Self {
        AmqpSummary {
            id: h.id.clone(),
            duration_s: h.duration_s,
            sent: h.total_of(M.sent),
            confirmed: h.total_of(M.confirmed),
            nacked: h.total_of(M.nacked),
            returned: h.total_of(M.returned),
            received: h.total_of(M.received),
            send_rate: h.rate_of(M.sent),
            confirm_rate: h.rate_of(M.confirmed),
            receive_rate: h.rate_of(M.received),
            consumer_latency: h.latency_of(M.consumer_latency).copied(),
            consumer_latency_intended: h.latency_of(M.consumer_latency_intended).copied(),
            confirm_latency: h.latency_of(M.confirm_latency).copied(),
            confirm_latency_intended: h.latency_of(M.confirm_latency_intended).copied(),
            blocked_notifications: h.total_of(M.blocked_notifications),
            blocked_seconds: h.flag_seconds_of(M.blocked),
            stalled_seconds: h.flag_seconds_of(M.stalled),
            disconnected_seconds: h.flag_seconds_of(M.disconnected),
            reconnects: h.total_of(M.reconnects),
            failure: h.failure.clone(),
            interrupted: h.interrupted,
        }
    }
}

/// One line per second, shaped like PerfTest's:
/// `id: test-1, time 1.000 s, sent: 5000 msg/s, confirmed: …, received: …,
/// min/median/75th/95th/99th/99.9th/max consumer latency: 1/2/…/9 µs`, with flow-control
/// markers appended.
pub fn format_tick(id: &str, t: &Tick) -> String {
    er::format_tick(&SCHEMA, id, t)
}

/// The final summary, PerfTest's lines plus flow control and faults.
pub fn format_summary(h: &LoadHeadline) -> String {
    let flow = format!(
        "flow control: {} blocked notification(s), {} s blocked, {} s stalled, {} s disconnected, {} reconnect(s)",
        h.total_of(M.blocked_notifications),
        h.flag_seconds_of(M.blocked),
        h.flag_seconds_of(M.stalled),
        h.flag_seconds_of(M.disconnected),
        h.total_of(M.reconnects)
    );
    er::format_summary(&SCHEMA, h, &[flow])
}

/// Writes the series as CSV, atomically.
pub fn write_csv(path: &Path, series: &[Tick]) -> Result<(), Error> {
    er::write_csv(path, &SCHEMA, series)
}

/// One attempted rate of a sweep and what it achieved.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SweepRow {
    /// Total attempted rate (all producers), msg/s.
    pub attempted_rate: f64,
    /// Achieved sending rate, msg/s.
    pub send_rate: f64,
    /// Achieved receiving rate, msg/s.
    pub receive_rate: f64,
    /// Consumer latency.
    pub consumer_latency: Option<Percentiles>,
    /// Consumer latency from intended send times.
    pub consumer_latency_intended: Option<Percentiles>,
    /// Confirm latency.
    pub confirm_latency: Option<Percentiles>,
    /// `CLOCK_MONOTONIC` ns when the step started.
    pub start_mono_ns: u64,
    /// `CLOCK_MONOTONIC` ns when it ended.
    pub end_mono_ns: u64,
    /// Why this step ended early, if it did.
    pub failure: Option<String>,
}

/// The rows of a rate sweep's report.
pub fn sweep_rows(r: &Report) -> Vec<SweepRow> {
    r.steps
        .iter()
        .map(|s| {
            let h = &s.headline;
            SweepRow {
                attempted_rate: s.value,
                send_rate: h.rate_of(M.sent),
                receive_rate: h.rate_of(M.received),
                consumer_latency: h.latency_of(M.consumer_latency).copied(),
                consumer_latency_intended: h.latency_of(M.consumer_latency_intended).copied(),
                confirm_latency: h.latency_of(M.confirm_latency).copied(),
                start_mono_ns: s.start_mono_ns,
                end_mono_ns: s.end_mono_ns,
                failure: h.failure.clone(),
            }
        })
        .collect()
}

/// The rate-sweep table as aligned text.
pub fn format_sweep(rows: &[SweepRow]) -> String {
    let mut o = format!(
        "{:>12} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10} {:>14}\n",
        "attempted/s",
        "sent/s",
        "received/s",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
        "p99 intended µs"
    );
    for r in rows {
        let p = r.consumer_latency.as_ref();
        let pi = r.consumer_latency_intended.as_ref();
        let f = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        let _ = writeln!(
            o,
            "{:>12.0} {:>12.0} {:>12.0} {:>10} {:>10} {:>10} {:>10} {:>14}",
            r.attempted_rate,
            r.send_rate,
            r.receive_rate,
            f(p.map(|p| p.p50_us)),
            f(p.map(|p| p.p99_us)),
            f(p.map(|p| p.p999_us)),
            f(p.map(|p| p.max_us)),
            f(pi.map(|p| p.p99_us)),
        );
    }
    o
}

fn pcols(p: &Option<Percentiles>) -> String {
    match p {
        Some(p) => format!(
            "{},{},{},{},{},{},{}",
            p.min_us, p.p50_us, p.p75_us, p.p95_us, p.p99_us, p.p999_us, p.max_us
        ),
        None => ",,,,,,".into(),
    }
}

/// Writes the sweep as CSV, atomically.
pub fn write_sweep_csv(path: &Path, rows: &[SweepRow]) -> Result<(), Error> {
    write_file(path, |f| {
        writeln!(
            f,
            "attempted_rate,send_rate,receive_rate,{},{},start_mono_ns,end_mono_ns",
            pheader("consumer"),
            pheader("consumer_intended")
        )?;
        for r in rows {
            writeln!(
                f,
                "{},{:.1},{:.1},{},{},{},{}",
                r.attempted_rate,
                r.send_rate,
                r.receive_rate,
                pcols(&r.consumer_latency),
                pcols(&r.consumer_latency_intended),
                r.start_mono_ns,
                r.end_mono_ns
            )?;
        }
        Ok(())
    })
}

/// Writes the sweep as JSON, atomically.
pub fn write_sweep_json(path: &Path, rows: &[SweepRow]) -> Result<(), Error> {
    er::write_json(path, &rows)
}
