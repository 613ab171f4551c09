//! The seconds of loads driven from several hosts, merged exactly.
//!
//! Every agent ends its seconds on one grid of whole seconds of the controlling host's
//! clock ([`kiln_loadgen::Load::align_ticks`], with the grid's origin mapped to the
//! agent's clock), so the seconds of all agents cover the same instants. A second is known
//! by the grid second its middle lies in; a second that spans several grid seconds (an
//! agent's long last second, its drain included) is split at the grid's boundaries first,
//! its counts and histograms shared by length, pro rata, and each part marked with the
//! flag [`PRO_RATA`]. The seconds of one index are merged: counts
//! summed, rates summed as counts over the merged interval, histograms merged (HdrHistogram
//! addition is exact: the merged histogram is the one all the values would have made), and
//! percentiles taken from the merged histogram, never averaged. A second is released once
//! every agent still running has reported it or a later one, so no agent's part is left out
//! and none is counted twice.
use crate::{EncodedLatency, LoadTick, Value, ValueKind};
use hdrhistogram::Histogram;
use kiln_loadgen::Percentiles;
use std::collections::BTreeMap;

const SECOND: i128 = 1_000_000_000;

/// A grid boundary this close to either end of a second does not split it: agents end
/// their seconds within milliseconds of the grid (the clocks' uncertainty).
const SLACK_NS: i128 = 50_000_000;

/// The flag of a merged second holding a share, by length, of an agent's longer second
/// (1), not counts that agent made in that grid second.
pub(crate) const PRO_RATA: &str = "pro rata";

/// The grid second (1-based from `origin`) a tick belongs to: the one its middle lies in.
pub(crate) fn second_of(origin: u64, t: &LoadTick) -> i64 {
    let mid = t.end_ns as i128 - (t.interval_s * 0.5e9) as i128;
    ((mid - origin as i128).div_euclid(SECOND) + 1) as i64
}

/// `t` as parts that each lie in one grid second, with their grid seconds. A second that
/// spans grid boundaries (more than [`SLACK_NS`] inside it) is cut at them: each part has
/// its share of the counts and of each histogram bucket by its length (rounded so that
/// the parts add up to the whole exactly), its percentiles from its share of the
/// histograms, its rates and flags as the whole's, and the flag [`PRO_RATA`].
pub(crate) fn split(origin: u64, t: LoadTick) -> Vec<(i64, LoadTick)> {
    let end = t.end_ns as i128;
    let len = (t.interval_s * 1e9) as i128;
    let start = end - len;
    let o = origin as i128;
    let mut cuts = vec![start];
    let mut k = (start + SLACK_NS - o).div_euclid(SECOND) + 1;
    while o + k * SECOND < end - SLACK_NS {
        cuts.push(o + k * SECOND);
        k += 1;
    }
    if cuts.len() == 1 || len <= 0 {
        return vec![(second_of(origin, &t), t)];
    }
    cuts.push(end);
    // The cumulative share of the whole at each cut.
    let at: Vec<f64> = cuts
        .iter()
        .map(|c| (c - start) as f64 / len as f64)
        .collect();
    let share = |n: u64, j: usize| -> u64 {
        let upto = |f: f64| (n as f64 * f).round() as u64;
        upto(at[j + 1]).saturating_sub(upto(at[j]))
    };
    let mut parts: Vec<LoadTick> = (0..cuts.len() - 1)
        .map(|j| LoadTick {
            end_ns: cuts[j + 1].max(0) as u64,
            interval_s: (cuts[j + 1] - cuts[j]) as f64 / 1e9,
            completed: t.completed.map(|n| share(n, j)),
            sent: t.sent.map(|n| share(n, j)),
            values: t.values.clone(),
            latency: Vec::new(),
        })
        .collect();
    for (name, h) in t
        .latency
        .iter()
        .filter_map(|l| Some((&l.name, l.decode()?)))
    {
        let h = &h;
        let mut shares: Vec<Histogram<u64>> =
            parts.iter().map(|_| Histogram::new_from(h)).collect();
        for v in h.iter_recorded() {
            for (j, part) in shares.iter_mut().enumerate() {
                let n = share(v.count_at_value(), j);
                if n > 0 {
                    // The bucket's own value: it fits the same histogram.
                    let _ = part.record_n(v.value_iterated_to(), n);
                }
            }
        }
        for (part, h) in parts.iter_mut().zip(shares) {
            for v in latency_values(name, Percentiles::of(&h).as_ref()) {
                if let Some(x) = part.values.iter_mut().find(|x| x.name == v.name) {
                    *x = v;
                }
            }
            part.latency
                .extend(EncodedLatency::encode(name.clone(), &h));
        }
    }
    for part in &mut parts {
        part.values.push(Value {
            name: PRO_RATA.into(),
            unit: "bool".into(),
            kind: ValueKind::Flag,
            value: Some(1.0),
        });
    }
    parts
        .into_iter()
        .map(|p| (second_of(origin, &p), p))
        .collect()
}

#[derive(Default)]
struct Pending {
    /// Each host's part, by host.
    parts: Vec<(usize, LoadTick)>,
}

/// A released grid second (1-based from the origin) and each host's part of it.
pub(crate) type KeptSecond = (i64, Vec<(usize, LoadTick)>);

/// Merges the seconds of `hosts` agents.
pub(crate) struct Merger {
    origin: u64,
    pending: BTreeMap<i64, Pending>,
    /// The latest second each host reported; `None` before its first.
    latest: Vec<Option<i64>>,
    /// Hosts that will report no more.
    done: Vec<bool>,
    /// With [`Merger::keeping_parts`]: each released grid second's parts, by host.
    kept: Option<Vec<KeptSecond>>,
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
            kept: None,
        }
    }

    /// As [`Merger::new`], keeping each released second's parts by host
    /// ([`Merger::kept_parts`]).
    pub(crate) fn keeping_parts(origin: u64, hosts: usize) -> Self {
        Merger {
            kept: Some(Vec::new()),
            ..Merger::new(origin, hosts)
        }
    }

    /// The parts, by host, of each grid second released so far (with
    /// [`Merger::keeping_parts`]; empty otherwise): what each host gave each merged second.
    pub(crate) fn kept_parts(&self) -> &[KeptSecond] {
        self.kept.as_deref().unwrap_or_default()
    }

    /// A second of `host` (its times on the controller's clock); returns the seconds that
    /// are now complete, in order.
    pub fn push(&mut self, host: usize, tick: LoadTick) -> Vec<LoadTick> {
        for (k, part) in split(self.origin, tick) {
            // The host is through grid second k once a second of its ends at k's end; a
            // part that ends before (cut at the grid, or its last) leaves k open.
            let through =
                if part.end_ns as i128 >= self.origin as i128 + k as i128 * SECOND - SLACK_NS {
                    k
                } else {
                    k - 1
                };
            self.latest[host] = Some(self.latest[host].map_or(through, |l| l.max(through)));
            let parts = &mut self.pending.entry(k).or_default().parts;
            // A host's second cut at the grid and its next second meet in one grid
            // second: one after the other, their lengths add up.
            match parts.iter_mut().find(|(h, _)| *h == host) {
                Some((_, mine)) => {
                    let before = std::mem::take(mine);
                    *mine = combine(vec![before, part], true);
                }
                None => parts.push((host, part)),
            }
        }
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
                if let Some(kept) = &mut self.kept {
                    kept.push((k, p.parts.clone()));
                }
                out.push(merge(p.parts.into_iter().map(|(_, t)| t).collect()));
            }
        }
        out
    }
}

/// What each host gave the merged seconds `keep` accepts: the hosts' seconds merged as the
/// run merges them (split at the grid, a host's parts of one grid second one after the
/// other), and of each merged second `keep` accepts, every host's part, by host. The sums
/// of the parts are the kept merged seconds exactly.
pub(crate) fn parts_in(
    origin: u64,
    hosts: &[&[LoadTick]],
    keep: &dyn Fn(&LoadTick) -> bool,
) -> Vec<Vec<LoadTick>> {
    let mut m = Merger::keeping_parts(origin, hosts.len());
    for (p, ticks) in hosts.iter().enumerate() {
        for t in ticks.iter() {
            m.push(p, t.clone());
        }
    }
    m.finish();
    let mut out: Vec<Vec<LoadTick>> = hosts.iter().map(|_| Vec::new()).collect();
    for (_, parts) in m.kept_parts() {
        if keep(&merge(parts.iter().map(|(_, t)| t.clone()).collect())) {
            for (p, t) in parts {
                out[*p].push(t.clone());
            }
        }
    }
    out
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
    combine(parts, false)
}

/// One second from `parts`: seconds of several hosts over the same instants (its length
/// the longest), or of one host one after the other (`consecutive`: the sum of theirs).
fn combine(parts: Vec<LoadTick>, consecutive: bool) -> LoadTick {
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return LoadTick::default();
    };
    let rest: Vec<LoadTick> = parts.collect();
    if rest.is_empty() {
        return first;
    }
    let all: Vec<&LoadTick> = std::iter::once(&first).chain(rest.iter()).collect();
    let interval_s = if consecutive {
        all.iter().map(|t| t.interval_s).sum()
    } else {
        all.iter().map(|t| t.interval_s).fold(0.0, f64::max)
    };
    let end_ns = all.iter().map(|t| t.end_ns).max().unwrap_or(0);
    let sum = |f: fn(&LoadTick) -> Option<u64>| {
        let v: Vec<u64> = all.iter().filter_map(|t| f(t)).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    // Histograms by name, in first-seen order: kiln's one merge, whose range grows to
    // hold every host's values.
    let (latency, _) = crate::headline::merged_all(all.iter().copied());
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
        latency: latency
            .iter()
            .filter_map(|(n, h)| EncodedLatency::encode(n.clone(), h))
            .collect(),
    }
}

/// An agent's report of its load, as it sent it.
pub(crate) struct AgentReport {
    /// The host's name.
    pub host: String,
    /// The report (kiln's load report).
    pub report: serde_json::Value,
    /// Its load's start and end on this host's clock, when the host's clock is known.
    pub span: Option<(u64, u64)>,
}

/// The agents' reports as one, the sum of every agent's: totals added, the whole run's
/// latency percentiles from `hists` (every agent's seconds' histograms merged), start the
/// earliest and end the latest (on this host's clock), throughput the total over that
/// span, flag seconds the most of any agent; every agent's own under `agents`, and the
/// hosts whose report could not be read under `unreadable` (left out of the sum).
pub(crate) fn merged_report(
    agents: &[AgentReport],
    hists: &[(String, Histogram<u64>)],
) -> serde_json::Value {
    use kiln_loadgen::engine::report::LoadHeadline;
    use kiln_loadgen::engine::stats::{Count, Latency};
    let mut read: Vec<(&AgentReport, LoadHeadline)> = Vec::new();
    let mut unreadable = Vec::new();
    for a in agents {
        match serde_json::from_value::<LoadHeadline>(a.report["headline"].clone()) {
            Ok(h) => read.push((a, h)),
            Err(e) => unreadable.push(serde_json::json!({"host": a.host, "error": e.to_string()})),
        }
    }
    let Some((first, h0)) = read.first() else {
        if agents.is_empty() {
            return serde_json::Value::Null;
        }
        return serde_json::json!({"agents": agents_json(agents), "unreadable": unreadable});
    };
    let mut h = h0.clone();
    let mut totals: Vec<Count> = Vec::new();
    let mut flags: Vec<Count> = Vec::new();
    let mut failures = Vec::new();
    let (mut start, mut end, mut start_unix) = (u64::MAX, 0u64, u64::MAX);
    for (a, rh) in &read {
        for c in &rh.totals {
            match totals.iter_mut().find(|t| t.name == c.name) {
                Some(t) => t.value = t.value.saturating_add(c.value),
                None => totals.push(c.clone()),
            }
        }
        for c in &rh.flag_seconds {
            match flags.iter_mut().find(|t| t.name == c.name) {
                Some(t) => t.value = t.value.max(c.value),
                None => flags.push(c.clone()),
            }
        }
        let (s, e) = a.span.unwrap_or((rh.start_mono_ns, rh.end_mono_ns));
        start = start.min(s);
        end = end.max(e);
        start_unix = start_unix.min(rh.start_unix_ns);
        if let Some(f) = &rh.failure {
            failures.push(format!("{}: {f}", a.host));
        }
        h.interrupted |= rh.interrupted;
    }
    h.start_mono_ns = start;
    h.end_mono_ns = end.max(start);
    h.start_unix_ns = start_unix;
    h.duration_s = (h.end_mono_ns - h.start_mono_ns) as f64 / 1e9;
    h.totals = totals;
    h.flag_seconds = flags;
    h.failure = (!failures.is_empty()).then(|| failures.join("; "));
    let counter = h.throughput.counter.clone();
    h.throughput.value = h.rate(&counter);
    for l in h.latencies.iter_mut() {
        l.percentiles = hists
            .iter()
            .find(|(n, _)| *n == l.name)
            .and_then(|(_, s)| Percentiles::of(s));
    }
    for (n, s) in hists {
        if !h.latencies.iter().any(|l| l.name == *n) {
            h.latencies.push(Latency {
                name: n.clone().into(),
                unit: "µs".into(),
                percentiles: Percentiles::of(s),
            });
        }
    }
    let mut v = first.report.clone();
    if let Some(o) = v.as_object_mut() {
        o.insert("totals".into(), serde_json::json!(h.named_totals()));
        o.insert(
            "headline".into(),
            serde_json::to_value(&h).unwrap_or_default(),
        );
        o.insert("agents".into(), agents_json(agents));
        if !unreadable.is_empty() {
            o.insert("unreadable".into(), unreadable.into());
        }
        if let Some(d) = run_delivery(&read) {
            o.insert("delivery".into(), d);
        }
        o.remove("summary");
        o.remove("events");
    }
    v
}

/// MQTT `pubsub` agents' delivery judged by the run as a whole: what all sent against what
/// all received of the run's messages (their own and the other agents'). With a shared
/// subscription whose group the agents share, no agent can judge alone (each got part of
/// every agent's messages); the sum can: every message to exactly one subscriber.
fn run_delivery(
    read: &[(&AgentReport, kiln_loadgen::engine::report::LoadHeadline)],
) -> Option<serde_json::Value> {
    let summaries: Vec<&serde_json::Value> =
        read.iter().map(|(a, _)| &a.report["summary"]).collect();
    if summaries.is_empty() || summaries.iter().any(|s| s["scenario"] != "pubsub") {
        return None;
    }
    let sum = |name: &str| read.iter().map(|(_, h)| h.total(name)).sum::<u64>();
    let (sent, own) = (sum(kiln_store::columns::SENT), sum("received"));
    let from_run: u64 = summaries
        .iter()
        .filter_map(|s| s["from_run"].as_u64())
        .sum();
    let shared = summaries.iter().any(|s| !s["not_received_here"].is_null());
    let (lost, dup) = (sum("lost"), sum("duplicated"));
    let received = own + from_run;
    let verdict = if !shared {
        format!(
            "each agent judged its own messages: {sent} sent, {lost} lost, {dup} duplicated in all"
        )
    } else if received == sent && dup == 0 {
        format!("shared subscription, judged by the run as a whole: {sent} sent by all agents, {received} received by all: every message delivered once")
    } else if received < sent {
        format!("shared subscription, judged by the run as a whole: {sent} sent by all agents, {received} received by all: {} never reached a subscriber of the run (lost, or taken by a subscriber of the group outside the run)", sent - received)
    } else {
        format!("shared subscription, judged by the run as a whole: {sent} sent by all agents, {received} received by all: {} more than sent (delivered more than once)", received - sent)
    };
    Some(serde_json::json!({
        "shared": shared,
        "sent": sent,
        "received": received,
        "lost": if shared { sent.saturating_sub(received) } else { lost },
        "duplicated": if shared { received.saturating_sub(sent).max(dup) } else { dup },
        "verdict": verdict,
    }))
}

/// The whole run's latency histograms: every second's of `ticks`, merged per name.
pub(crate) fn run_histograms<'a>(
    ticks: impl IntoIterator<Item = &'a LoadTick>,
) -> Vec<(String, Histogram<u64>)> {
    crate::headline::merged_all(ticks).0
}

fn agents_json(agents: &[AgentReport]) -> serde_json::Value {
    agents
        .iter()
        .map(|a| serde_json::json!({"host": a.host, "report": a.report}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist() -> Histogram<u64> {
        Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap()
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
            latency: crate::EncodedLatency::encode("consumer_latency", &h)
                .into_iter()
                .collect(),
        }
    }

    /// Each host's parts of the merged seconds in a window add up to the merged seconds in
    /// it exactly, also when one host's last second spans several grid seconds (its
    /// drain): its whole second's middle lies outside the window, its first part inside.
    #[test]
    fn each_hosts_parts_of_a_window_add_up_to_the_merged_seconds() {
        let origin = 10_000_000_000u64;
        let s = |k: u64| origin + k * 1_000_000_000;
        let a = vec![
            tick(s(1), 1.0, 10, vec![100; 10]),
            tick(s(2), 1.0, 10, vec![200; 10]),
            tick(s(3), 1.0, 10, vec![300; 10]),
        ];
        // b's last second: 2.0 s to 5.06 s, its middle at 3.53 s.
        let b = vec![
            tick(s(1), 1.0, 5, vec![1_000; 5]),
            tick(s(2), 1.0, 5, vec![2_000; 5]),
            tick(
                s(5) + 60_000_000,
                3.06,
                300,
                (0..300).map(|i| 50_000 + i).collect(),
            ),
        ];
        let window = (s(0), s(3));
        let keep = |t: &LoadTick| {
            let mid = t.end_ns - (t.interval_s * 0.5e9) as u64;
            mid >= window.0 && mid < window.1
        };
        let parts = parts_in(origin, &[&a, &b], &keep);
        let mut m = Merger::new(origin, 2);
        let mut all = Vec::new();
        for (t, u) in a.iter().zip(&b) {
            all.extend(m.push(0, t.clone()));
            all.extend(m.push(1, u.clone()));
        }
        all.extend(m.finish());
        let merged: Vec<LoadTick> = all.into_iter().filter(|t| keep(t)).collect();
        assert_eq!(merged.len(), 3);
        let whole = &run_histograms(&merged)[0].1;
        let by_host: Vec<Histogram<u64>> = parts
            .iter()
            .map(|p| run_histograms(p)[0].1.clone())
            .collect();
        // b's third grid second holds a third of its long second: inside the window.
        assert!(by_host[1].len() > 10, "{}", by_host[1].len());
        assert!(by_host[1].len() < 300, "{}", by_host[1].len());
        let mut sum = by_host[0].clone();
        sum.add(&by_host[1]).unwrap();
        assert_eq!(sum.len(), whole.len());
        for v in whole.iter_recorded() {
            assert_eq!(
                sum.count_at(v.value_iterated_to()),
                v.count_at_value(),
                "bucket {}",
                v.value_iterated_to()
            );
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
            let got = &t.latency[0].decode().unwrap();
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
        // Host 1 done: second 2 is complete; second 3 waits for host 0, whose second
        // ended before the grid's second 3 did (more of it may come).
        let r = m.host_done(1);
        assert_eq!(r.iter().map(|t| t.completed).collect::<Vec<_>>(), [Some(5)]);
        let r = m.host_done(0);
        assert_eq!(r.iter().map(|t| t.completed).collect::<Vec<_>>(), [Some(1)]);
    }

    fn counts(h: &Histogram<u64>) -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    }

    /// An agent's last second that spans three grid seconds and a bit (kh2: seconds ending
    /// …, 9.000, then 12.059, 804 messages, the drain included) is split across them by
    /// its length, every part marked, and nothing lost or counted twice; the other agent's
    /// seconds of the same grid seconds merge with the parts.
    #[test]
    fn a_second_spanning_grid_seconds_is_split_pro_rata_and_marked() {
        let origin = 0u64;
        let g = 1_000_000_000u64;
        let raw: Vec<u64> = (0..804).map(|i| 100 + (i * 37) % 9000).collect();
        let long = tick(12 * g + 59_000_000, 3.059, 804, raw.clone());
        let parts = split(origin, long.clone());
        assert_eq!(
            parts.iter().map(|p| p.0).collect::<Vec<_>>(),
            [10, 11, 12, 13],
            "the grid seconds ending at 10, 11, 12 and the 59 ms after 12"
        );
        let done: Vec<u64> = parts.iter().map(|p| p.1.completed.unwrap()).collect();
        assert_eq!(done.iter().sum::<u64>(), 804);
        // By length: 1/3.059 of 804 is 262.8, 0.059/3.059 is 15.5.
        assert_eq!(done, [263, 263, 262, 16]);
        let mut all = hist();
        for (_, p) in &parts {
            assert_eq!(p.value(PRO_RATA), Some(1.0), "every part is marked");
            assert!((p.interval_s - if p.end_ns > 12 * g { 0.059 } else { 1.0 }).abs() < 1e-9);
            // A part that got no value has no histogram.
            for l in &p.latency {
                all.add(l.decode().unwrap()).unwrap();
            }
            // Its rate is the whole second's; its count its own.
            let rate = p.value("received").unwrap();
            assert!((rate - 804.0 / 3.059).abs() < 1e-6);
        }
        assert_eq!(
            counts(&all),
            counts(&long.latency[0].decode().unwrap()),
            "every bucket shared exactly"
        );
        // An ordinary second, or one a few ms off the grid, is not split.
        let near = tick(5 * g + 3_000_000, 1.0, 10, vec![5]);
        assert_eq!(split(origin, near.clone()).len(), 1);
        let one = &split(origin, near.clone())[0];
        assert_eq!(
            (one.0, one.1.end_ns, one.1.completed),
            (5, near.end_ns, Some(10))
        );
        assert_eq!(one.1.value(PRO_RATA), None);
        // With another agent's whole seconds 10 to 12: each merged second has both.
        let mut m = Merger::new(origin, 2);
        let mut out = Vec::new();
        for k in 1..=9u64 {
            out.extend(m.push(1, tick(k * g, 1.0, 100, vec![10])));
        }
        out.extend(m.push(1, tick(10 * g, 1.0, 100, vec![10])));
        out.extend(m.push(1, tick(11 * g, 1.0, 100, vec![10])));
        out.extend(m.push(1, tick(12 * g, 1.0, 100, vec![10])));
        for k in 1..=9u64 {
            out.extend(m.push(0, tick(k * g, 1.0, 50, vec![10])));
        }
        out.extend(m.push(0, long));
        out.extend(m.host_done(0));
        out.extend(m.host_done(1));
        let got: Vec<(u64, Option<u64>, Option<f64>)> = out
            .iter()
            .map(|t| (t.end_ns, t.completed, t.value(PRO_RATA)))
            .collect();
        assert_eq!(got.len(), 13);
        assert_eq!(
            got[9],
            (10 * g, Some(363), Some(1.0)),
            "second 10: 100 + 263"
        );
        assert_eq!(got[10], (11 * g, Some(363), Some(1.0)));
        assert_eq!(got[11], (12 * g, Some(362), Some(1.0)));
        assert_eq!(got[12], (12 * g + 59_000_000, Some(16), Some(1.0)));
        assert_eq!(got[8].2, None, "second 9 holds no share");
        let total: u64 = out.iter().filter_map(|t| t.completed).sum();
        assert_eq!(total, 9 * 50 + 804 + 12 * 100);
    }

    /// A second that ended 0.3 s late is cut at the grid; its tail and the host's next
    /// (short) second share a grid second one after the other: their lengths add up, so
    /// the merged rate is its count over the whole second.
    #[test]
    fn a_late_second_and_the_next_share_a_grid_second_end_to_end() {
        let g = 1_000_000_000u64;
        let mut m = Merger::new(0, 2);
        let mut out = Vec::new();
        out.extend(m.push(1, tick(5 * g, 1.0, 100, vec![10])));
        out.extend(m.push(1, tick(6 * g, 1.0, 100, vec![10])));
        out.extend(m.push(0, tick(4 * g, 1.0, 130, vec![10])));
        out.extend(m.push(0, tick(5 * g + 300_000_000, 1.3, 130, vec![10])));
        out.extend(m.push(0, tick(6 * g, 0.7, 70, vec![10])));
        out.extend(m.host_done(0));
        out.extend(m.host_done(1));
        let six = out.iter().find(|t| t.end_ns == 6 * g).unwrap();
        // 30 of the late second's 130 (0.3 of 1.3 s), 70 of the next, 100 of host 1's.
        assert_eq!(six.completed, Some(200));
        assert!((six.interval_s - 1.0).abs() < 1e-9, "{}", six.interval_s);
        assert!((six.value("received").unwrap() - 200.0).abs() < 1e-6);
        assert_eq!(six.value(PRO_RATA), Some(1.0));
        let five = out.iter().find(|t| t.end_ns == 5 * g).unwrap();
        assert_eq!(five.completed, Some(200), "100 of 130, and host 1's 100");
    }

    /// An agent's report as `kiln agent` sends it, and the latencies of its seconds.
    fn report(
        lat: &[u64],
        sent: u64,
        start: u64,
        end: u64,
        failure: Option<&str>,
    ) -> (serde_json::Value, LoadTick) {
        let mut h = hist();
        for v in lat {
            h.record(*v).unwrap();
        }
        let headline = serde_json::json!({
            "protocol": "mqtt",
            "id": "x",
            "throughput": {"counter": "received", "unit": "msg/s", "value": sent as f64 * 1e9 / (end - start) as f64},
            "duration_s": (end - start) as f64 / 1e9,
            "start_mono_ns": start,
            "end_mono_ns": end,
            "start_unix_ns": start + 1_700_000_000_000_000_000,
            "totals": [
                {"name": "sent", "unit": "msg", "value": sent},
                {"name": "received", "unit": "msg", "value": sent},
            ],
            "latencies": [{"name": "consumer_latency", "unit": "µs", "percentiles": Percentiles::of(&h)}],
            "flag_seconds": [{"name": "stalled", "unit": "s", "value": sent % 3}],
            "failure": failure,
            "interrupted": false,
        });
        let r = serde_json::json!({
            "protocol": "mqtt",
            "options": {},
            "summary": {"verdict": "agent's own"},
            "headline": headline,
            "totals": {"sent": sent},
            "events": [],
            "steps": [],
        });
        (r, tick(end, 1.0, sent, lat.to_vec()))
    }

    /// The run's report is the sum of its agents': totals added, histograms merged,
    /// the earliest start and the latest end, throughput over that span.
    #[test]
    fn the_run_report_is_the_sum_of_every_agents() {
        let g = 1_000_000_000u64;
        let a: Vec<u64> = (1..=500).collect();
        let b: Vec<u64> = (1000..=1800).collect();
        let (ra, ta) = report(&a, 7_994, 100 * g, 110 * g, None);
        let (rb, tb) = report(&b, 7_995, 300 * g, 312 * g, Some("broker gone"));
        let agents = vec![
            AgentReport {
                host: "kh1".into(),
                report: ra,
                span: Some((5 * g, 15 * g)),
            },
            AgentReport {
                host: "kh2".into(),
                report: rb,
                span: Some((4 * g, 16 * g)),
            },
            AgentReport {
                host: "kh3".into(),
                report: serde_json::json!({"headline": 5}),
                span: None,
            },
        ];
        let hists = run_histograms([&ta, &tb]);
        let m = merged_report(&agents, &hists);
        let h: kiln_loadgen::engine::report::LoadHeadline =
            serde_json::from_value(m["headline"].clone()).unwrap();
        assert_eq!(h.total("sent"), 15_989);
        assert_eq!(h.total("received"), 15_989);
        assert_eq!(m["totals"]["sent"], 15_989);
        assert_eq!(
            (h.start_mono_ns, h.end_mono_ns),
            (4 * g, 16 * g),
            "on this host's clock"
        );
        assert_eq!(h.duration_s, 12.0);
        assert!((h.throughput.value - 15_989.0 / 12.0).abs() < 1e-9);
        let mut all = hist();
        for v in a.iter().chain(&b) {
            all.record(*v).unwrap();
        }
        assert_eq!(counts(&hists[0].1), counts(&all));
        assert_eq!(h.latencies[0].percentiles, Percentiles::of(&all));
        assert_eq!(h.flag_seconds[0].value, 2, "the most of any agent");
        assert_eq!(h.failure.as_deref(), Some("kh2: broker gone"));
        assert_eq!(
            m["agents"].as_array().unwrap().len(),
            3,
            "each agent's own is kept"
        );
        assert_eq!(m["unreadable"][0]["host"], "kh3");
        assert!(m.get("summary").is_none());
    }
}
