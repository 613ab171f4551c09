//! The figures of a wrk or wrk2 summary, when an external load command prints one: the
//! Go seed drives its server with wrk, and its throughput belongs in `kiln runs` and
//! `kiln compare` beside the target's CPU.
use serde::Serialize;

/// What a wrk summary says.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WrkSummary {
    /// Requests completed.
    pub requests: u64,
    /// Over this many seconds.
    pub seconds: f64,
    /// `Requests/sec`.
    pub requests_per_s: f64,
    /// Latency percentiles (`--latency`), as (percentile, µs).
    pub latency_us: Vec<(f64, f64)>,
    /// Socket errors and non-2xx/3xx responses.
    pub errors: u64,
}

fn duration_us(s: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = s.strip_suffix("us") {
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
    Some(num.parse::<f64>().ok()? * scale)
}

/// Parses wrk's (or wrk2's) output; `None` when it holds no summary.
pub fn parse(out: &str) -> Option<WrkSummary> {
    let mut s = WrkSummary::default();
    let mut found = false;
    for line in out.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Requests/sec:") {
            s.requests_per_s = rest.trim().parse().ok()?;
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
        } else {
            let mut parts = t.split_ascii_whitespace();
            if let (Some(p), Some(v), None) = (parts.next(), parts.next(), parts.next()) {
                if let (Some(p), Some(us)) = (
                    p.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()),
                    duration_us(v),
                ) {
                    s.latency_us.push((p, us));
                }
            }
        }
    }
    found.then_some(s)
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
        let s = parse(out).unwrap();
        assert_eq!(s.requests, 752565);
        assert!((s.seconds - 10.1).abs() < 1e-9);
        assert!((s.requests_per_s - 74513.42).abs() < 1e-9);
        assert_eq!(s.latency_us, vec![(50.0, 117.0), (99.0, 1440.0)]);
        assert_eq!(s.errors, 8);
        assert!(parse("no summary here").is_none());
    }
}
