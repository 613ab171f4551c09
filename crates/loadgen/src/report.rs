//! Console lines like PerfTest's, and the whole run as JSON and CSV files.
use crate::stats::{Percentiles, Report, Summary, Tick};
use crate::sweep::SweepRow;
use crate::Error;
use kiln_model::io::AtomicFile;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

fn lat(p: &Option<Percentiles>) -> String {
    match p {
        Some(p) => format!(
            "{}/{}/{}/{}/{}/{}/{} µs",
            p.min_us, p.p50_us, p.p75_us, p.p95_us, p.p99_us, p.p999_us, p.max_us
        ),
        None => "-".into(),
    }
}

/// One line per second, shaped like PerfTest's:
/// `id: test-1, time 1.000 s, sent: 5000 msg/s, confirmed: …, received: …,
/// min/median/75th/95th/99th/99.9th/max consumer latency: 1/2/…/9 µs`, with flow-control
/// markers appended.
pub fn format_tick(id: &str, t: &Tick) -> String {
    let mut s = format!(
        "id: {id}, time {:.3} s, sent: {:.0} msg/s",
        t.time_s,
        t.rate(t.sent)
    );
    if t.confirmed > 0 || t.confirm_latency.is_some() {
        let _ = write!(s, ", confirmed: {:.0} msg/s", t.rate(t.confirmed));
    }
    if t.nacked > 0 {
        let _ = write!(s, ", nacked: {:.0} msg/s", t.rate(t.nacked));
    }
    if t.returned > 0 {
        let _ = write!(s, ", returned: {:.0} msg/s", t.rate(t.returned));
    }
    let _ = write!(s, ", received: {:.0} msg/s", t.rate(t.received));
    if t.consumer_latency.is_some() {
        let _ = write!(
            s,
            ", min/median/75th/95th/99th/99.9th/max consumer latency: {}",
            lat(&t.consumer_latency)
        );
    }
    if t.consumer_latency_intended.is_some() {
        let _ = write!(
            s,
            ", from intended send: {}",
            lat(&t.consumer_latency_intended)
        );
    }
    if t.confirm_latency.is_some() {
        let _ = write!(s, ", confirm latency: {}", lat(&t.confirm_latency));
    }
    for (flag, word) in [
        (t.blocked, "BLOCKED"),
        (t.stalled, "STALLED"),
        (t.disconnected, "DISCONNECTED"),
    ] {
        if flag {
            let _ = write!(s, " [{word}]");
        }
    }
    s
}

/// The final summary, PerfTest's lines plus flow control and faults.
pub fn format_summary(s: &Summary) -> String {
    let id = &s.id;
    let mut o = String::new();
    let _ = writeln!(o, "id: {id}, duration: {:.3} s, sent: {}, confirmed: {}, nacked: {}, returned: {}, received: {}",
        s.duration_s, s.sent, s.confirmed, s.nacked, s.returned, s.received);
    let _ = writeln!(o, "id: {id}, sending rate avg: {:.0} msg/s", s.send_rate);
    if s.confirmed > 0 {
        let _ = writeln!(o, "id: {id}, confirm rate avg: {:.0} msg/s", s.confirm_rate);
    }
    let _ = writeln!(
        o,
        "id: {id}, receiving rate avg: {:.0} msg/s",
        s.receive_rate
    );
    for (name, p) in [
        ("consumer latency", &s.consumer_latency),
        (
            "consumer latency from intended send",
            &s.consumer_latency_intended,
        ),
        ("confirm latency", &s.confirm_latency),
        (
            "confirm latency from intended send",
            &s.confirm_latency_intended,
        ),
    ] {
        if p.is_some() {
            let _ = writeln!(
                o,
                "id: {id}, {name} min/median/75th/95th/99th/99.9th/max {}",
                lat(p)
            );
        }
    }
    let _ = writeln!(
        o,
        "id: {id}, flow control: {} blocked notification(s), {} s blocked, {} s stalled, {} s disconnected, {} reconnect(s)",
        s.blocked_notifications, s.blocked_seconds, s.stalled_seconds, s.disconnected_seconds, s.reconnects
    );
    if s.interrupted {
        let _ = writeln!(o, "id: {id}, interrupted: results up to the interruption");
    }
    if let Some(f) = &s.failure {
        let _ = writeln!(o, "id: {id}, ended early: {f}");
    }
    o
}

fn out_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Output {
        path: path.display().to_string(),
        source,
    }
}

fn write_file(
    path: &Path,
    f: impl FnOnce(&mut AtomicFile) -> std::io::Result<()>,
) -> Result<(), Error> {
    let mut file = AtomicFile::create(path).map_err(out_err(path))?;
    f(&mut file).map_err(out_err(path))?;
    file.commit().map_err(out_err(path))
}

/// Writes the whole report as pretty JSON, atomically.
pub fn write_json(path: &Path, r: &Report) -> Result<(), Error> {
    write_file(path, |f| {
        serde_json::to_writer_pretty(&mut *f, r).map_err(std::io::Error::other)?;
        f.write_all(b"\n")
    })
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

fn pheader(prefix: &str) -> String {
    ["min", "p50", "p75", "p95", "p99", "p999", "max"]
        .iter()
        .map(|q| format!("{prefix}_{q}_us"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Writes the series as CSV (one row per second; latency columns in µs, empty when none),
/// atomically.
pub fn write_csv(path: &Path, series: &[Tick]) -> Result<(), Error> {
    write_file(path, |f| {
        writeln!(
            f,
            "time_s,interval_s,sent,confirmed,nacked,returned,received,{},{},{},{},blocked,stalled,disconnected",
            pheader("consumer"),
            pheader("consumer_intended"),
            pheader("confirm"),
            pheader("confirm_intended")
        )?;
        for t in series {
            writeln!(
                f,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                t.time_s,
                t.interval_s,
                t.sent,
                t.confirmed,
                t.nacked,
                t.returned,
                t.received,
                pcols(&t.consumer_latency),
                pcols(&t.consumer_latency_intended),
                pcols(&t.confirm_latency),
                pcols(&t.confirm_latency_intended),
                t.blocked as u8,
                t.stalled as u8,
                t.disconnected as u8
            )?;
        }
        Ok(())
    })
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

/// Writes the sweep as CSV, atomically.
pub fn write_sweep_csv(path: &Path, rows: &[SweepRow]) -> Result<(), Error> {
    write_file(path, |f| {
        writeln!(
            f,
            "attempted_rate,send_rate,receive_rate,{},{}",
            pheader("consumer"),
            pheader("consumer_intended")
        )?;
        for r in rows {
            writeln!(
                f,
                "{},{:.1},{:.1},{},{}",
                r.attempted_rate,
                r.send_rate,
                r.receive_rate,
                pcols(&r.consumer_latency),
                pcols(&r.consumer_latency_intended)
            )?;
        }
        Ok(())
    })
}

/// Writes the sweep as JSON, atomically.
pub fn write_sweep_json(path: &Path, rows: &[SweepRow]) -> Result<(), Error> {
    write_file(path, |f| {
        serde_json::to_writer_pretty(&mut *f, rows).map_err(std::io::Error::other)?;
        f.write_all(b"\n")
    })
}
