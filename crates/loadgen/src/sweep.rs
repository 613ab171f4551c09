//! Rate sweeps: one short run per attempted rate, to find where latency turns.
use crate::stats::{Percentiles, Tick};
use crate::{AmqpOptions, Error};
use std::sync::atomic::AtomicBool;

/// One attempted rate and what it achieved.
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
    /// Why this step ended early, if it did.
    pub failure: Option<String>,
}

/// Parses `FROM:TO:STEPS` (evenly spaced, inclusive) or a comma list `1000,2000,5000`.
/// Rates are totals over all producers.
pub fn parse_sweep(s: &str) -> Result<Vec<f64>, Error> {
    let bad = |reason: &str| Error::Option {
        flag: "--rate-sweep",
        value: s.to_string(),
        reason: reason.to_string(),
    };
    let num = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| *v > 0.0 && v.is_finite())
    };
    let rates: Vec<f64> = if s.contains(':') {
        let p: Vec<&str> = s.split(':').collect();
        if p.len() != 3 {
            return Err(bad(
                "expected FROM:TO:STEPS, e.g. 1000:20000:5, or a list 1000,5000",
            ));
        }
        let (a, b) = (
            num(p[0]).ok_or_else(|| bad("FROM must be a rate > 0"))?,
            num(p[1]).ok_or_else(|| bad("TO must be a rate > 0"))?,
        );
        let n: usize = p[2]
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| bad("STEPS must be 1-100"))?;
        if n == 1 {
            vec![a]
        } else {
            (0..n)
                .map(|i| a + (b - a) * i as f64 / (n - 1) as f64)
                .collect()
        }
    } else {
        s.split(',')
            .map(|x| num(x).ok_or_else(|| bad(&format!("'{}' is not a rate > 0", x.trim()))))
            .collect::<Result<_, _>>()?
    };
    if rates.is_empty() {
        return Err(bad("no rates"));
    }
    Ok(rates)
}

/// Runs `opts` once per rate (each `opts.time` long, 10 s if unset), with the total rate split
/// evenly over the producers. `on_tick` sees `(rate, tick)`. Stops early on `stop` or a failed
/// step, returning the rows so far.
pub fn sweep(
    opts: &AmqpOptions,
    rates: &[f64],
    stop: &AtomicBool,
    on_tick: &mut dyn FnMut(f64, &Tick),
) -> Result<Vec<SweepRow>, Error> {
    let mut rows = Vec::new();
    for &rate in rates {
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        let mut o = opts.clone();
        o.rate = Some(rate / o.producers.max(1) as f64);
        o.variable_rate.clear();
        o.publishing_interval = None;
        o.time = Some(opts.time.unwrap_or(std::time::Duration::from_secs(10)));
        let r = crate::run(&o, stop, &mut |t| on_tick(rate, t))?;
        let s = r.summary;
        let failed = s.failure.is_some();
        rows.push(SweepRow {
            attempted_rate: rate,
            send_rate: s.send_rate,
            receive_rate: s.receive_rate,
            consumer_latency: s.consumer_latency,
            consumer_latency_intended: s.consumer_latency_intended,
            confirm_latency: s.confirm_latency,
            failure: s.failure,
        });
        if failed {
            break;
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_specs() {
        assert_eq!(
            parse_sweep("1000:5000:5").unwrap(),
            vec![1000.0, 2000.0, 3000.0, 4000.0, 5000.0]
        );
        assert_eq!(parse_sweep("10, 20").unwrap(), vec![10.0, 20.0]);
        for bad in ["1:2", "a,b", "0:10:2", "1:10:0", ""] {
            let e = parse_sweep(bad).unwrap_err().to_string();
            assert!(e.contains("--rate-sweep"), "{bad}: {e}");
        }
    }
}
