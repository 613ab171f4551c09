//! Latency distributions from the stored HdrHistograms: the percentile plot the RabbitMQ
//! performance article draws (latency on a log scale against "nines" of percentile),
//! exact for a window and mergeable across repeated runs.
use hdrhistogram::Histogram;
use kiln_store::StoredHistogram as Stored;
use serde::Serialize;

/// A latency distribution: `(percentile, value)` points in increasing order.
#[derive(Clone, Debug, Serialize)]
pub struct Distribution {
    /// What it measures (`consumer_latency`, `request`), with the group's label in a
    /// comparison.
    pub name: String,
    /// Index of the group (comparisons) or 0.
    pub group: usize,
    /// Whether it is measured from the intended send time.
    pub intended: bool,
    /// Values recorded.
    pub count: u64,
    /// Percentiles (0–100, below 100) and values at them, µs.
    pub points: Vec<(f64, f64)>,
    /// Largest value, µs.
    pub max: f64,
}

use kiln_hdr::HistogramSum;

/// The histograms named `name` for window `window`, merged; `None` if there are none (or
/// none can be read: `skipped` counts those).
pub fn merged<'a>(
    hists: impl IntoIterator<Item = &'a Stored>,
    name: &str,
    window: &str,
    skipped: &mut usize,
) -> Option<Histogram<u64>> {
    let mut sum = HistogramSum::default();
    for h in hists
        .into_iter()
        .filter(|h| h.name == name && h.window == window)
    {
        sum.add_encoded(&h.data);
    }
    *skipped += sum.skipped;
    sum.finish()
}

/// The percentile curve of `h`: HdrHistogram's percentile iteration (5 ticks per half
/// distance to 100%), as `hdrhistogram`'s `percentiles` output lists it.
pub fn distribution(name: &str, group: usize, h: &Histogram<u64>) -> Distribution {
    let mut points: Vec<(f64, f64)> = Vec::new();
    for v in h.iter_quantiles(5) {
        let q = v.quantile_iterated_to() * 100.0;
        if q >= 100.0 {
            break;
        }
        let value = h.highest_equivalent(v.value_iterated_to()) as f64;
        if points.last().is_some_and(|&(pq, _)| pq >= q) {
            continue;
        }
        points.push((q, value));
    }
    Distribution {
        name: name.to_string(),
        group,
        intended: name.ends_with("_intended") || name.ends_with("(intended)"),
        count: h.len(),
        points,
        max: h.max() as f64,
    }
}

/// Latency percentiles of a window (µs): p50, p99, p99.9, max.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WindowPercentiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
    /// Values recorded.
    pub count: u64,
}

/// The percentiles of `h`.
pub fn percentiles(h: &Histogram<u64>) -> WindowPercentiles {
    WindowPercentiles {
        p50: h.value_at_quantile(0.5) as f64,
        p99: h.value_at_quantile(0.99) as f64,
        p999: h.value_at_quantile(0.999) as f64,
        max: h.max() as f64,
        count: h.len(),
    }
}

/// A run's per-second latency histograms as the page merges them for any window: every
/// bucket's value once (HdrHistogram's highest equivalent value of the bucket, what its
/// `value_at_quantile` answers), and per second the buckets it counted. Merging the
/// seconds of a window and walking the buckets up to a quantile gives exactly the
/// percentile of the merged histogram.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PerSecond {
    /// Bucket values, µs, ascending.
    pub values: Vec<u64>,
    /// One entry per latency.
    pub series: Vec<LatencySeconds>,
}

/// One latency's seconds.
#[derive(Clone, Debug, Serialize)]
pub struct LatencySeconds {
    /// What it measures (`consumer_latency`).
    pub name: String,
    /// End of each second, ns since the page's origin (the `load` series' times).
    pub time: Vec<i64>,
    /// Per second: pairs of (index into `values`, as the difference from the previous
    /// pair's index, the first from 0) and count.
    pub counts: Vec<Vec<u64>>,
}

/// The per-second logs ([`kiln_store::PER_SECOND`]) of `hists`, aligned with the `load`
/// series' times `load_time` (CLOCK_MONOTONIC ns). A log that cannot be read, or whose
/// seconds are not the load's, is left out and counted in `skipped`.
pub fn per_second(
    hists: &[Stored],
    load_time: &[u64],
    origin: u64,
    skipped: &mut usize,
) -> PerSecond {
    use std::collections::BTreeMap;
    /// A second's buckets: (value, count).
    type Buckets = Vec<(u64, u64)>;
    let mut decoded: Vec<(String, Vec<Buckets>)> = Vec::new();
    for h in hists.iter().filter(|h| h.window == kiln_store::PER_SECOND) {
        let Ok(log) = kiln_hdr::read_interval_log(&h.data) else {
            *skipped += 1;
            continue;
        };
        // The log's timestamps are kept to the millisecond: line i is the load's row i.
        let aligned = log.len() == load_time.len()
            && log
                .iter()
                .zip(load_time)
                .all(|((end, _), &t)| end.abs_diff(t) <= 2_000_000);
        if !aligned {
            *skipped += 1;
            continue;
        }
        let seconds = log
            .into_iter()
            .map(|(_, x)| {
                x.iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value()))
                    .collect()
            })
            .collect();
        decoded.push((h.name.clone(), seconds));
    }
    let mut index: BTreeMap<u64, usize> = BTreeMap::new();
    for (_, secs) in &decoded {
        for s in secs {
            for &(v, _) in s {
                index.insert(v, 0);
            }
        }
    }
    for (i, k) in index.values_mut().enumerate() {
        *k = i;
    }
    let time: Vec<i64> = load_time
        .iter()
        .map(|&t| t as i64 - origin as i64)
        .collect();
    PerSecond {
        values: index.keys().copied().collect(),
        series: decoded
            .into_iter()
            .map(|(name, secs)| LatencySeconds {
                name,
                time: time.clone(),
                counts: secs
                    .into_iter()
                    .map(|s| {
                        let mut prev = 0usize;
                        let mut out = Vec::with_capacity(s.len() * 2);
                        for (v, c) in s {
                            let k = index[&v];
                            out.push((k - prev) as u64);
                            out.push(c);
                            prev = k;
                        }
                        out
                    })
                    .collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(name: &str, window: &str, values: &[u64]) -> Stored {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for &v in values {
            h.record(v).unwrap();
        }
        let data = kiln_hdr::encode_histogram(&h).unwrap();
        Stored {
            name: name.into(),
            window: window.into(),
            unit: "us".into(),
            data,
        }
    }

    /// An interval log as `kiln run` writes it: one line per second.
    fn log(seconds: &[(u64, &[u64])]) -> Vec<u8> {
        let hs: Vec<(u64, Histogram<u64>)> = seconds
            .iter()
            .map(|&(end, values)| {
                let mut h = Histogram::<u64>::new(3).unwrap();
                for &v in values {
                    h.record(v).unwrap();
                }
                (end, h)
            })
            .collect();
        kiln_hdr::write_interval_log("test", hs.iter().map(|(end, h)| (*end, 1.0, h))).unwrap()
    }

    #[test]
    fn per_second_buckets_merge_to_the_histograms_percentiles() {
        let s = 1_000_000_000u64;
        let a: Vec<u64> = (1..=900).collect();
        let b: Vec<u64> = (1000..=1100).chain([250_000]).collect();
        let secs: [(u64, &[u64]); 3] = [(11 * s, &a), (12 * s, &[]), (13 * s, &b)];
        let stored = Stored {
            name: "consumer".into(),
            window: kiln_store::PER_SECOND.into(),
            unit: "us".into(),
            data: log(&secs),
        };
        let mut skipped = 0;
        let times = [11 * s, 12 * s, 13 * s];
        let p = per_second(std::slice::from_ref(&stored), &times, 10 * s, &mut skipped);
        assert_eq!(skipped, 0);
        assert_eq!(p.series.len(), 1);
        let l = &p.series[0];
        assert_eq!(l.time, [s as i64, 2 * s as i64, 3 * s as i64]);
        assert!(l.counts[1].is_empty());
        // Merge every second as the page does and compare with HdrHistogram's own merge.
        let mut merged: Vec<u64> = vec![0; p.values.len()];
        for c in &l.counts {
            let mut k = 0usize;
            for pair in c.chunks(2) {
                k += pair[0] as usize;
                merged[k] += pair[1];
            }
        }
        let mut h = Histogram::<u64>::new(3).unwrap();
        for &v in a.iter().chain(&b) {
            h.record(v).unwrap();
        }
        let n: u64 = merged.iter().sum();
        assert_eq!(n, h.len());
        for q in [0.5, 0.99, 0.999] {
            let want = (q * n as f64).ceil().max(1.0) as u64;
            let mut run = 0;
            let at = merged.iter().position(|&c| {
                run += c;
                run >= want
            });
            assert_eq!(p.values[at.unwrap()], h.value_at_quantile(q), "q {q}");
        }
        let top = merged.iter().rposition(|&c| c > 0).unwrap();
        assert_eq!(p.values[top], h.max());
        // A log whose seconds are not the load's is left out, and said so; so is a damaged one.
        let p = per_second(
            std::slice::from_ref(&stored),
            &times[..2],
            10 * s,
            &mut skipped,
        );
        assert!(p.series.is_empty());
        assert_eq!(skipped, 1);
        let mut damaged = stored;
        damaged.data.truncate(damaged.data.len() / 2);
        damaged.data.extend_from_slice(b"not a log line\n");
        assert!(per_second(&[damaged], &times, 10 * s, &mut skipped)
            .series
            .is_empty());
        assert_eq!(skipped, 2);
    }

    #[test]
    fn repeats_merge_and_the_curve_rises() {
        let hs = [
            stored("consumer", "measure", &(1..=1000).collect::<Vec<_>>()),
            stored("consumer", "measure", &[5000, 6000]),
            stored("consumer", "rate=10", &[1]),
            Stored {
                name: "consumer".into(),
                window: "measure".into(),
                unit: "us".into(),
                data: b"damaged".to_vec(),
            },
        ];
        let mut skipped = 0;
        let h = merged(&hs, "consumer", "measure", &mut skipped).unwrap();
        assert_eq!(skipped, 1, "skipped");
        assert_eq!(h.len(), 1002);
        let d = distribution("consumer_intended", 1, &h);
        assert!(d.intended);
        assert_eq!(d.count, 1002);
        assert!(d
            .points
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert!(d.points.last().unwrap().1 >= 1000.0);
        assert_eq!(d.max as u64, h.max());
        let p = percentiles(&h);
        assert!(p.p50 >= 499.0 && p.p50 <= 502.0, "{p:?}");
        assert!(merged(&hs, "other", "measure", &mut skipped).is_none());
    }
}
