//! The figures an external load command prints about its own run — wrk's or wrk2's
//! summary, pgbench's (or its `-P` progress lines when it was stopped before the
//! summary), ApacheBench's, RabbitMQ PerfTest's — so that a run driven by `exec --` has
//! its throughput and latency in `kiln runs` and `kiln compare` beside the target's CPU.
//! One table, [`PARSERS`]: each tool's reader beside its siblings.
use serde::Serialize;

/// What a load command's summary says.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CommandSummary {
    /// Which tool's output it was read from (`wrk`, `pgbench`, `ab`, `perftest`).
    pub tool: String,
    /// What one operation is, as the tool counts them: the run's unit (`req`, `tx`, `msg`).
    pub unit: String,
    /// What its latency measures (`request`, `transaction`, `consumer`).
    pub latency: String,
    /// Operations completed.
    pub requests: u64,
    /// Over this many seconds.
    pub seconds: f64,
    /// Operations completed per second.
    pub requests_per_s: f64,
    /// Operations sent per second, where the tool counts them apart (PerfTest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_per_s: Option<f64>,
    /// Latency percentiles, as (percentile, µs).
    pub latency_us: Vec<(f64, f64)>,
    /// Mean latency, µs, where the tool gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_latency_us: Option<f64>,
    /// The longest latency, µs, where the tool gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_latency_us: Option<f64>,
    /// Failed operations (socket errors and non-2xx/3xx responses, failed transactions).
    pub errors: u64,
    /// Read from the tool's periodic lines because it stopped before its summary: the
    /// figures are the mean over those lines.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_progress: bool,
}

/// A tool's reader: its summary in a command's output, if there.
pub type Reader = fn(&str) -> Option<CommandSummary>;

/// Each tool's reader, tried in order on the command's output (stdout, then stderr); the
/// first that finds its summary wins.
pub const PARSERS: &[(&str, Reader)] = &[
    ("wrk", wrk),
    ("pgbench", pgbench),
    ("ab", apache_bench),
    ("perftest", perftest),
];

/// Reads a load command's output; `None` when no tool's summary is in it.
pub fn parse(stdout: &str, stderr: &str) -> Option<CommandSummary> {
    let out = format!("{stdout}\n{stderr}");
    PARSERS.iter().find_map(|(tool, read)| {
        let mut s = read(&out)?;
        s.tool = (*tool).to_string();
        if s.max_latency_us.is_none() {
            s.max_latency_us = s.latency_us.iter().find(|p| p.0 == 100.0).map(|p| p.1);
        }
        // Figures that overflowed (a sum of absurd lines) say nothing.
        s.is_finite().then_some(s)
    })
}

impl CommandSummary {
    /// An empty summary of operations counted as `unit`, latency measuring `latency`.
    fn of(unit: &str, latency: &str) -> Self {
        CommandSummary {
            unit: unit.into(),
            latency: latency.into(),
            ..Default::default()
        }
    }

    fn is_finite(&self) -> bool {
        [self.requests_per_s, self.seconds]
            .into_iter()
            .chain(self.sent_per_s)
            .chain(self.mean_latency_us)
            .chain(self.max_latency_us)
            .chain(self.latency_us.iter().flat_map(|&(p, v)| [p, v]))
            .all(f64::is_finite)
    }
}

fn duration_us(s: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = s.strip_suffix("us").or_else(|| s.strip_suffix("µs")) {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60e6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e6)
    } else {
        return None;
    };
    Some(number(num)? * scale).filter(|v| v.is_finite())
}

/// A number, finite and not negative (a count, a rate, a time).
fn number(s: &str) -> Option<f64> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// wrk's or wrk2's summary (`Requests/sec:`; percentiles with `--latency`).
fn wrk(out: &str) -> Option<CommandSummary> {
    let mut s = CommandSummary::of("req", "request");
    let mut found = false;
    for line in out.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Requests/sec:") {
            s.requests_per_s = number(rest)?;
            found = true;
        } else if let Some((n, rest)) = t.split_once(" requests in ") {
            s.requests = n.trim().parse().unwrap_or(0);
            if let Some(d) = rest.split(',').next().and_then(duration_us) {
                s.seconds = d / 1e6;
            }
        } else if let Some(rest) = t.strip_prefix("Socket errors:") {
            s.errors += rest
                .split(',')
                .filter_map(|p| p.split_ascii_whitespace().last()?.parse::<u64>().ok())
                .sum::<u64>();
        } else if let Some(rest) = t.strip_prefix("Non-2xx or 3xx responses:") {
            s.errors += rest.trim().parse::<u64>().unwrap_or(0);
        } else if let Some(rest) = t.strip_prefix("Latency ") {
            // Thread Stats: `Latency   135.54us  101.58us   5.21ms   94.65%` (avg, stdev, max).
            let w: Vec<&str> = rest.split_ascii_whitespace().collect();
            if let [avg, _, max, ..] = w.as_slice() {
                s.mean_latency_us = duration_us(avg);
                s.max_latency_us = duration_us(max);
            }
        } else {
            let mut parts = t.split_ascii_whitespace();
            if let (Some(p), Some(v), None) = (parts.next(), parts.next(), parts.next()) {
                if let (Some(p), Some(us)) = (p.strip_suffix('%').and_then(number), duration_us(v))
                {
                    s.latency_us.push((p, us));
                }
            }
        }
    }
    found.then_some(s)
}

/// pgbench's summary (`tps = …`, `latency average = …`), or, when it was stopped before
/// printing one (it has no handler for SIGINT), the mean of its `-P` progress lines
/// (`progress: 3.0 s, 1547.0 tps, lat 2.580 ms stddev 1.528, 0 failed`).
fn pgbench(out: &str) -> Option<CommandSummary> {
    let mut s = CommandSummary::of("tx", "transaction");
    let mut tps = None;
    // Progress: (interval end s, tps, latency ms, failed).
    let mut progress: Vec<(f64, f64, Option<f64>, u64)> = Vec::new();
    for line in out.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("tps = ") {
            tps = rest.split_ascii_whitespace().next().and_then(number);
        } else if let Some(rest) = t.strip_prefix("latency average = ") {
            s.mean_latency_us = rest
                .split_ascii_whitespace()
                .next()
                .and_then(number)
                .map(|ms| ms * 1e3);
        } else if let Some(rest) = t.strip_prefix("number of transactions actually processed:") {
            // `12345` or `12345/20000` (with -t).
            s.requests = rest
                .trim()
                .split('/')
                .next()
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0);
        } else if let Some(rest) = t.strip_prefix("number of failed transactions:") {
            s.errors = rest
                .split_ascii_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
        } else if let Some(rest) = t.strip_prefix("duration:") {
            s.seconds = rest
                .split_ascii_whitespace()
                .next()
                .and_then(number)
                .unwrap_or(0.0);
        } else if let Some(rest) = t.strip_prefix("progress: ") {
            let mut at = None;
            let mut rate = None;
            let mut lat = None;
            let mut failed = 0;
            for part in rest.split(',') {
                let w: Vec<&str> = part.split_ascii_whitespace().collect();
                match w.as_slice() {
                    [n, "s"] => at = number(n),
                    [n, "tps"] => rate = number(n),
                    ["lat", n, "ms", ..] => lat = number(n),
                    [n, "failed"] => failed = n.parse().unwrap_or(0),
                    _ => {}
                }
            }
            if let (Some(at), Some(rate)) = (at, rate) {
                progress.push((at, rate, lat, failed));
            }
        }
    }
    if let Some(tps) = tps {
        s.requests_per_s = tps;
        return Some(s);
    }
    // Stopped before its summary: the progress lines, each over its own interval.
    let last = progress.last()?.0;
    let mut prev = 0.0;
    let (mut done, mut lat_sum, mut lat_n) = (0.0, 0.0, 0.0);
    for &(at, rate, lat, failed) in &progress {
        let n = rate * (at - prev).max(0.0);
        done += n;
        if let Some(l) = lat {
            lat_sum += l * n;
            lat_n += n;
        }
        s.errors += failed;
        prev = at;
    }
    s.seconds = last;
    s.requests = done.round() as u64;
    s.requests_per_s = if last > 0.0 { done / last } else { 0.0 };
    s.mean_latency_us = (lat_n > 0.0).then(|| lat_sum / lat_n * 1e3);
    s.from_progress = true;
    Some(s)
}

/// ApacheBench's summary (`Requests per second:`, `Percentage of the requests served
/// within a certain time (ms)`); it prints it on SIGINT too.
fn apache_bench(out: &str) -> Option<CommandSummary> {
    let mut s = CommandSummary::of("req", "request");
    let mut found = false;
    let mut in_percentiles = false;
    let field = |t: &str, name: &str| -> Option<f64> {
        t.strip_prefix(name)?
            .split_ascii_whitespace()
            .next()
            .and_then(number)
    };
    for line in out.lines() {
        let t = line.trim();
        if let Some(v) = field(t, "Requests per second:") {
            s.requests_per_s = v;
            found = true;
        } else if let Some(v) = field(t, "Complete requests:") {
            s.requests = v as u64;
        } else if let Some(v) = field(t, "Time taken for tests:") {
            s.seconds = v;
        } else if let Some(v) = field(t, "Failed requests:") {
            s.errors += v as u64;
        } else if let Some(v) = field(t, "Non-2xx responses:") {
            s.errors += v as u64;
        } else if t.starts_with("Time per request:")
            && t.ends_with("(mean)")
            && s.mean_latency_us.is_none()
        {
            s.mean_latency_us = field(t, "Time per request:").map(|ms| ms * 1e3);
        } else if t.starts_with("Percentage of the requests served") {
            in_percentiles = t.ends_with("(ms)");
        } else if in_percentiles {
            let mut w = t.split_ascii_whitespace();
            match (
                w.next().and_then(|p| p.strip_suffix('%')).and_then(number),
                w.next().and_then(number),
            ) {
                (Some(p), Some(ms)) => s.latency_us.push((p, ms * 1e3)),
                _ => in_percentiles = false,
            }
        }
    }
    found.then_some(s)
}

/// RabbitMQ PerfTest's summary (`sending rate avg: N msg/s`, `receiving rate avg: …`,
/// `consumer latency min/median/75th/95th/99th a/b/c/d/e µs`).
fn perftest(out: &str) -> Option<CommandSummary> {
    let mut s = CommandSummary::of("msg", "consumer");
    let mut received = None;
    let rate = |t: &str, name: &str| -> Option<f64> {
        let (_, rest) = t.split_once(name)?;
        rest.split_ascii_whitespace().next().and_then(number)
    };
    for line in out.lines() {
        let t = line.trim();
        if let Some(v) = rate(t, "receiving rate avg:") {
            received = Some(v);
        } else if let Some(v) = rate(t, "sending rate avg:") {
            s.sent_per_s = Some(v);
        } else if received.is_some() || s.sent_per_s.is_some() {
            // The summary's latency line follows its rates (the periodic lines hold one too).
            if let Some((names, rest)) = t
                .split_once("latency ")
                .and_then(|(_, r)| r.split_once(' '))
            {
                let mut w = rest.split_ascii_whitespace();
                let (Some(values), Some(unit)) = (w.next(), w.next()) else {
                    continue;
                };
                let scale = match unit {
                    "µs" | "us" => 1.0,
                    "ms" => 1e3,
                    "s" => 1e6,
                    _ => continue,
                };
                let at = |name: &str| -> Option<f64> {
                    match name {
                        "min" => Some(0.0),
                        "median" => Some(50.0),
                        "max" => Some(100.0),
                        n => n.strip_suffix("th").and_then(number),
                    }
                };
                s.latency_us = names
                    .split('/')
                    .zip(values.split('/'))
                    .filter_map(|(n, v)| Some((at(n)?, number(v)? * scale)))
                    .collect();
            }
        }
    }
    s.requests_per_s = received?;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrk_summary_parses() {
        let out = "Running 10s test @ http://127.0.0.1:8080/
  2 threads and 10 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   135.54us  101.58us   5.21ms   94.65%
  Latency Distribution
     50%  117.00us
     99%    1.44ms
  752565 requests in 10.10s, 609.44MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 5
Requests/sec:  74513.42
Transfer/sec:     60.34MB
";
        let s = parse(out, "").unwrap();
        assert_eq!(s.tool, "wrk");
        assert_eq!(s.requests, 752565);
        assert!((s.seconds - 10.1).abs() < 1e-9);
        assert!((s.requests_per_s - 74513.42).abs() < 1e-9);
        assert_eq!(s.latency_us, vec![(50.0, 117.0), (99.0, 1440.0)]);
        assert_eq!(s.mean_latency_us, Some(135.54));
        assert_eq!(s.max_latency_us, Some(5210.0));
        assert_eq!(s.errors, 8);
        assert!(parse("no summary here", "").is_none());
    }

    /// A tool's output as it printed it (the commands in `tests/data/load-summaries/COMMANDS`).
    fn fixture(name: &str) -> Option<CommandSummary> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/load-summaries/");
        let read = |ext: &str| std::fs::read_to_string(format!("{dir}{name}.{ext}")).unwrap();
        parse(&read("stdout"), &read("stderr"))
    }

    #[test]
    fn pgbench_says_its_rate_in_its_summary_or_in_its_progress_when_stopped() {
        let s = fixture("pgbench-T3").unwrap();
        assert_eq!((s.tool.as_str(), s.unit.as_str()), ("pgbench", "tx"));
        assert!((s.requests_per_s - 1540.673412).abs() < 1e-6);
        assert_eq!(s.requests, 4624);
        assert_eq!(s.mean_latency_us, Some(2586.0));
        assert!(!s.from_progress);
        // SIGINT kills it before its summary: its progress lines, on stderr, are the figures.
        let s = fixture("pgbench-sigint").unwrap();
        assert!(s.from_progress);
        let done = 1351.9 + 1514.8 + 1546.2;
        assert!((s.requests_per_s - done / 3.0).abs() < 1e-6, "{s:?}");
        assert_eq!(s.requests, done.round() as u64);
        let lat = (2.907 * 1351.9 + 2.636 * 1514.8 + 2.582 * 1546.2) / done * 1e3;
        assert!((s.mean_latency_us.unwrap() - lat).abs() < 1e-6);
        assert_eq!(s.errors, 0);
    }

    #[test]
    fn apache_bench_summary_parses_also_when_interrupted() {
        let s = fixture("ab-n2000").unwrap();
        assert_eq!((s.tool.as_str(), s.unit.as_str()), ("ab", "req"));
        assert_eq!(s.requests, 2000);
        assert!((s.requests_per_s - 328.43).abs() < 1e-9);
        let s = fixture("ab-sigint").unwrap();
        assert_eq!(s.requests, 5277);
        assert!((s.seconds - 2.996).abs() < 1e-9);
        assert!((s.requests_per_s - 1761.23).abs() < 1e-9);
        assert_eq!(s.mean_latency_us, Some(2271.0));
        assert_eq!(s.latency_us.first(), Some(&(50.0, 2000.0)));
        assert_eq!(
            s.latency_us.iter().find(|p| p.0 == 99.0),
            Some(&(99.0, 9000.0))
        );
        assert_eq!(s.latency_us.last(), Some(&(100.0, 15000.0)));
        assert_eq!(s.latency_us.len(), 9);
        assert_eq!(s.max_latency_us, Some(15000.0));
    }

    #[test]
    fn perftest_summary_gives_received_sent_and_consumer_latency() {
        let s = fixture("perftest-z5").unwrap();
        assert_eq!((s.tool.as_str(), s.unit.as_str()), ("perftest", "msg"));
        assert_eq!(s.requests_per_s, 2223.0);
        assert_eq!(s.sent_per_s, Some(2223.0));
        // The summary's percentiles, not a periodic line's.
        assert_eq!(
            s.latency_us,
            vec![
                (0.0, 147.0),
                (50.0, 267.0),
                (75.0, 411.0),
                (95.0, 59118.0),
                (99.0, 63080.0)
            ]
        );
        let s = fixture("perftest-sigint").unwrap();
        assert_eq!(s.requests_per_s, 2640.0);
        assert_eq!(s.latency_us[1], (50.0, 1745.0));
        // Each tool's summary is its own: no other reader takes it.
        for (name, tool) in [
            ("perftest-z5", "perftest"),
            ("ab-sigint", "ab"),
            ("pgbench-T3", "pgbench"),
        ] {
            assert_eq!(fixture(name).unwrap().tool, tool);
        }
    }
}
