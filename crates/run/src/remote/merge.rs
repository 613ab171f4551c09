//! The seconds of loads driven from several hosts, merged exactly.
//!
//! Every agent ends its seconds on one grid of whole seconds of the controlling host's
//! clock ([`kiln_loadgen::engine::align_ticks`], with the grid's origin mapped to the
//! agent's clock), so the seconds of all agents cover the same instants. A second is known
//! by the grid second its middle lies in; the seconds of one index are merged: counts
//! summed, rates summed as counts over the merged interval, histograms merged (HdrHistogram
//! addition is exact: the merged histogram is the one all the values would have made), and
//! percentiles taken from the merged histogram, never averaged. A second is released once
//! every agent still running has reported it or a later one, so no agent's part is left out
//! and none is counted twice.
use crate::{LoadTick, Value, ValueKind};
use hdrhistogram::Histogram;
use kiln_loadgen::engine::report::HistogramSum;
use kiln_loadgen::Percentiles;
use std::collections::BTreeMap;

const SECOND: i128 = 1_000_000_000;

/// The grid second (1-based from `origin`) a tick belongs to: the one its middle lies in.
pub(crate) fn second_of(origin: u64, t: &LoadTick) -> i64 {
    let mid = t.end_ns as i128 - (t.interval_s * 0.5e9) as i128;
    ((mid - origin as i128).div_euclid(SECOND) + 1) as i64
}

#[derive(Default)]
struct Pending {
    parts: Vec<LoadTick>,
}

/// Merges the seconds of `hosts` agents.
pub(crate) struct Merger {
    origin: u64,
    pending: BTreeMap<i64, Pending>,
    /// The latest second each host reported; `None` before its first.
    latest: Vec<Option<i64>>,
    /// Hosts that will report no more.
    done: Vec<bool>,
}

impl Merger {
    /// A merger of `hosts` agents whose seconds end on the grid from `origin` (controller's
    /// clock, ns).
    pub fn new(origin: u64, hosts: usize) -> Self {
        Merger {
            origin,
            pending: BTreeMap::new(),
            latest: vec![None; hosts],
            done: vec![false; hosts],
        }
    }

    /// A second of `host` (its times on the controller's clock); returns the seconds that
    /// are now complete, in order.
    pub fn push(&mut self, host: usize, tick: LoadTick) -> Vec<LoadTick> {
        let k = second_of(self.origin, &tick);
        self.latest[host] = Some(self.latest[host].map_or(k, |l| l.max(k)));
        self.pending.entry(k).or_default().parts.push(tick);
        self.release(false)
    }

    /// `host` will report no more (its load ended, or it was lost).
    pub(crate) fn host_done(&mut self, host: usize) -> Vec<LoadTick> {
        self.done[host] = true;
        self.release(false)
    }

    /// Everything still held, in order.
    pub fn finish(&mut self) -> Vec<LoadTick> {
        self.release(true)
    }

    fn release(&mut self, all: bool) -> Vec<LoadTick> {
        // The latest second every running host has reached.
        let mut upto = i64::MAX;
        for (l, d) in self.latest.iter().zip(&self.done) {
            if !d {
                upto = upto.min(l.unwrap_or(i64::MIN));
            }
        }
        let mut out = Vec::new();
        while let Some((&k, _)) = self.pending.first_key_value() {
            if !all && k > upto {
                break;
            }
            if let Some(p) = self.pending.remove(&k) {
                out.push(merge(p.parts));
            }
        }
        out
    }
}

/// A latency's values in a second's row, from its percentiles.
pub(crate) fn latency_values(name: &str, p: Option<&Percentiles>) -> Vec<Value> {
    [
        ("p50", p.map(|p| p.p50_us)),
        ("p99", p.map(|p| p.p99_us)),
        ("p99.9", p.map(|p| p.p999_us)),
        ("max", p.map(|p| p.max_us)),
    ]
    .into_iter()
    .map(|(q, v)| Value {
        name: format!("{name} {q}"),
        unit: "us".to_string(),
        kind: ValueKind::Percentile,
        value: v.map(|v| v as f64),
    })
    .collect()
}

/// One second from the same second of several hosts.
pub(crate) fn merge(parts: Vec<LoadTick>) -> LoadTick {
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return LoadTick::default();
    };
    let rest: Vec<LoadTick> = parts.collect();
    if rest.is_empty() {
        return first;
    }
    let all: Vec<&LoadTick> = std::iter::once(&first).chain(rest.iter()).collect();
    let interval_s = all.iter().map(|t| t.interval_s).fold(0.0, f64::max);
    let end_ns = all.iter().map(|t| t.end_ns).max().unwrap_or(0);
    let sum = |f: fn(&LoadTick) -> Option<u64>| {
        let v: Vec<u64> = all.iter().filter_map(|t| f(t)).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    // Histograms by name, in first-seen order: kiln's one merge, whose range grows to
    // hold every host's values.
    let mut sums: Vec<(String, HistogramSum)> = Vec::new();
    for t in &all {
        for (name, h) in &t.latency {
            match sums.iter_mut().find(|(n, _)| n == name) {
                Some((_, acc)) => acc.add(h),
                None => {
                    let mut acc = HistogramSum::default();
                    acc.add(h);
                    sums.push((name.clone(), acc));
                }
            }
        }
    }
    let latency: Vec<(String, Histogram<u64>)> = sums
        .into_iter()
        .filter_map(|(n, s)| Some((n, s.finish()?)))
        .collect();
    // Values by name, in first-seen order, each combined as its kind says.
    let mut order: Vec<&Value> = Vec::new();
    for t in &all {
        for v in &t.values {
            if !order.iter().any(|o| o.name == v.name) {
                order.push(v);
            }
        }
    }
    let from_hists: Vec<Value> = latency
        .iter()
        .flat_map(|(n, h)| latency_values(n, Percentiles::of(h).as_ref()))
        .collect();
    let mut values = Vec::with_capacity(order.len());
    for first in order {
        let each = all.iter().filter_map(|t| {
            t.values
                .iter()
                .find(|v| v.name == first.name)
                .map(|v| (v.value, t.interval_s))
        });
        let value = match first.kind {
            // From the merged histograms; the largest where a second has none.
            ValueKind::Percentile => match from_hists.iter().find(|v| v.name == first.name) {
                Some(v) => v.value,
                None => each.filter_map(|(v, _)| v).reduce(f64::max),
            },
            // Agents of one run watch the same queues: the deepest reading stands.
            ValueKind::Flag | ValueKind::Level => each.filter_map(|(v, _)| v).reduce(f64::max),
            ValueKind::Rate => {
                let counts: Vec<f64> = each.filter_map(|(v, i)| v.map(|v| v * i)).collect();
                (!counts.is_empty() && interval_s > 0.0)
                    .then(|| counts.iter().sum::<f64>() / interval_s)
            }
        };
        values.push(Value {
            value,
            ..first.clone()
        });
    }
    LoadTick {
        end_ns,
        interval_s,
        completed: sum(|t| t.completed),
        sent: sum(|t| t.sent),
        values,
        latency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};

    fn hist() -> Histogram<u64> {
        Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap()
    }

    /// Through the wire's encoding, as an agent's histograms travel.
    fn wire(h: &Histogram<u64>) -> Histogram<u64> {
        let mut b = Vec::new();
        V2Serializer::new().serialize(h, &mut b).unwrap();
        Deserializer::new().deserialize(&mut &b[..]).unwrap()
    }

    fn tick(end_ns: u64, interval_s: f64, completed: u64, lat: Vec<u64>) -> LoadTick {
        let mut h = hist();
        for v in &lat {
            h.record(*v).unwrap();
        }
        let p = Percentiles::of(&h);
        let mut values = vec![Value {
            name: "received".to_string(),
            unit: "msg/s".to_string(),
            kind: ValueKind::Rate,
            value: Some(completed as f64 / interval_s),
        }];
        values.extend(latency_values("consumer_latency", p.as_ref()));
        values.push(Value {
            name: "blocked".into(),
            unit: "bool".into(),
            kind: ValueKind::Flag,
            value: Some(0.0),
        });
        LoadTick {
            end_ns,
            interval_s,
            completed: Some(completed),
            sent: Some(completed),
            values,
            latency: vec![("consumer_latency".into(), wire(&h))],
        }
    }

    /// Two agents' seconds of raw latencies, merged, equal the histogram of all the raw
    /// latencies of each second, bucket by bucket; rates add up.
    #[test]
    fn merged_seconds_equal_the_histogram_of_all_raw_values() {
        let origin = 10_000_000_000u64;
        let mut m = Merger::new(origin, 2);
        let mut out = Vec::new();
        let mut all_raw: Vec<Vec<u64>> = vec![Vec::new(); 4];
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for k in 1..=3u64 {
            for host in 0..2 {
                let n = 100 + next() % 400;
                let raw: Vec<u64> = (0..n).map(|_| 1 + next() % 5_000_000).collect();
                all_raw[k as usize].extend(&raw);
                // Ends within a millisecond of the grid (clock uncertainty); the first
                // second of host 1 is partial (it started 0.4 s late).
                let end = origin + k * 1_000_000_000 + host * 700_000;
                let interval = if k == 1 && host == 1 { 0.6 } else { 1.0 };
                out.extend(m.push(host as usize, tick(end, interval, n, raw)));
            }
        }
        out.extend(m.host_done(0));
        out.extend(m.host_done(1));
        assert_eq!(out.len(), 3);
        for (i, t) in out.iter().enumerate() {
            let mut expect = hist();
            for v in &all_raw[i + 1] {
                expect.record(*v).unwrap();
            }
            let got = &t.latency[0].1;
            assert_eq!(got.len(), expect.len());
            let a: Vec<(u64, u64)> = got
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect();
            let b: Vec<(u64, u64)> = expect
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect();
            assert_eq!(a, b, "second {}", i + 1);
            assert_eq!(t.completed, Some(all_raw[i + 1].len() as u64));
            assert_eq!(
                t.value("consumer_latency p99"),
                Some(expect.value_at_quantile(0.99) as f64)
            );
            let rate = t.value("received").unwrap();
            assert!((rate * t.interval_s - all_raw[i + 1].len() as f64).abs() < 1e-6);
        }
    }

    /// A second is held until every running host reported it; a host that is done no
    /// longer holds anything back, and a short last second is its own.
    #[test]
    fn seconds_wait_for_every_running_host() {
        let origin = 0u64;
        let mut m = Merger::new(origin, 2);
        assert!(m.push(0, tick(1_000_000_000, 1.0, 5, vec![10])).is_empty());
        assert!(m.push(0, tick(2_000_000_000, 1.0, 5, vec![10])).is_empty());
        let r = m.push(1, tick(1_000_300_000, 1.0, 7, vec![20]));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].completed, Some(12));
        // A short last second just after the grid's second 2 is second 3.
        let last = tick(2_030_000_000, 0.03, 1, vec![30]);
        assert_eq!(second_of(origin, &last), 3);
        assert!(m.push(0, last).is_empty());
        let r = m.host_done(1);
        assert_eq!(
            r.iter().map(|t| t.completed).collect::<Vec<_>>(),
            [Some(5), Some(1)]
        );
    }
}
