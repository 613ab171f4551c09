//! Latency distributions from the stored HdrHistograms: the percentile plot the RabbitMQ
//! performance article draws (latency on a log scale against "nines" of percentile),
//! exact for a window and mergeable across repeated runs.
use hdrhistogram::Histogram;
use kiln_store::Histogram as Stored;
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

/// Decodes a stored histogram (V2 deflate serialisation).
pub fn decode(data: &[u8]) -> Option<Histogram<u64>> {
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(data))
        .ok()
}

/// The histograms named `name` for window `window`, merged; `None` if there are none (or
/// none can be read: `skipped` counts those).
pub fn merged<'a>(
    hists: impl IntoIterator<Item = &'a Stored>,
    name: &str,
    window: &str,
    skipped: &mut usize,
) -> Option<Histogram<u64>> {
    let mut acc: Option<Histogram<u64>> = None;
    for h in hists
        .into_iter()
        .filter(|h| h.name == name && h.window == window)
    {
        let Some(x) = decode(&h.data) else {
            *skipped += 1;
            continue;
        };
        // Decoded histograms keep their recorded range; the sum must be able to grow.
        let a = acc.get_or_insert_with(|| {
            let mut a = Histogram::new_from(&x);
            a.auto(true);
            a
        });
        if a.add(&x).is_err() {
            *skipped += 1;
        }
    }
    acc.filter(|h| !h.is_empty())
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
pub struct Percentiles {
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
pub fn percentiles(h: &Histogram<u64>) -> Percentiles {
    Percentiles {
        p50: h.value_at_quantile(0.5) as f64,
        p99: h.value_at_quantile(0.99) as f64,
        p999: h.value_at_quantile(0.999) as f64,
        max: h.max() as f64,
        count: h.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

    fn stored(name: &str, window: &str, values: &[u64]) -> Stored {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for &v in values {
            h.record(v).unwrap();
        }
        let mut data = Vec::new();
        V2DeflateSerializer::new().serialize(&h, &mut data).unwrap();
        Stored {
            name: name.into(),
            window: window.into(),
            unit: "us".into(),
            data,
        }
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
