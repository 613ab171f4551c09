//! Clusters compared node by node: a run that recorded several hosts (`-p HOST:PID`)
//! labels every sample with its host (`host=NAME`); beside the whole cluster's function
//! tables, each node present in both groups gets its own, from its samples alone.
use super::functions::{self, FunctionTable};
use super::verdict::Rules;
use kiln_model::{LabelMatch, Profile, SampleTable};
use kiln_store::RunMeta;

/// The hosts a profile's samples are labelled with, in first-seen order.
pub fn hosts_of(p: &Profile) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, set) in p.samples.label_sets.iter() {
        for l in set {
            if p.strings.get(l.key) != b"host" {
                continue;
            }
            if let kiln_model::LabelValue::Str(v) = l.value {
                let h = String::from_utf8_lossy(p.strings.get(v)).into_owned();
                if !out.contains(&h) {
                    out.push(h);
                }
            }
        }
    }
    out
}

/// The samples of `p` labelled `host=NAME`, with the same tables.
pub fn node_profile(p: &Profile, host: &str) -> Profile {
    let m = LabelMatch {
        key: b"host".to_vec(),
        value: host.as_bytes().to_vec(),
    };
    let mut out = Profile {
        strings: p.strings.clone(),
        frames: p.frames.clone(),
        stacks: p.stacks.clone(),
        threads: p.threads.clone(),
        samples: SampleTable::default(),
        event: p.event.clone(),
    };
    out.samples.label_sets = p.samples.label_sets.clone();
    let s = &p.samples;
    for i in 0..s.len() {
        if m.matches(&p.strings, s.label_sets.get(s.label_set(i))) {
            out.samples.push_labeled(
                s.stack[i],
                s.weight[i],
                s.time[i],
                s.thread[i],
                s.label_set(i),
            );
        }
    }
    out
}

/// A run's figures as seen by one node: its share of the cluster's CPU per operation (the
/// node's part of the profile), so that a node's function costs add up to the cluster's.
fn node_meta(m: &RunMeta, whole: &Profile, node: &Profile) -> RunMeta {
    let mut m = m.clone();
    let (w, n) = (whole.total_weight(), node.total_weight());
    if w > 0 {
        m.headline.cpu_per_op_us = m.headline.cpu_per_op_us.map(|c| c * n as f64 / w as f64);
    }
    m
}

/// One function table per event and node present in both groups' profiles, named
/// `EVENT on NODE`.
pub fn tables(
    event: &str,
    before: &[(&RunMeta, &Profile)],
    after: &[(&RunMeta, &Profile)],
    rules: &Rules,
    n: usize,
    op: &str,
) -> Vec<FunctionTable> {
    let hosts = |g: &[(&RunMeta, &Profile)]| -> Vec<String> {
        let mut h: Vec<String> = Vec::new();
        for (_, p) in g {
            for x in hosts_of(p) {
                if !h.contains(&x) {
                    h.push(x);
                }
            }
        }
        h
    };
    let (hb, ha) = (hosts(before), hosts(after));
    if hb.len() < 2 && ha.len() < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for host in hb.iter().filter(|h| ha.contains(h)) {
        let split = |g: &[(&RunMeta, &Profile)]| -> Vec<(RunMeta, Profile)> {
            g.iter()
                .map(|(m, p)| {
                    let node = node_profile(p, host);
                    (node_meta(m, p, &node), node)
                })
                .collect()
        };
        let (b, a) = (split(before), split(after));
        let rb: Vec<(&RunMeta, &Profile)> = b.iter().map(|(m, p)| (m, p)).collect();
        let ra: Vec<(&RunMeta, &Profile)> = a.iter().map(|(m, p)| (m, p)).collect();
        if let Some((mut t, _, _)) = functions::table(event, &rb, &ra, rules, n, op) {
            t.event = format!("{event} on {host}");
            out.push(t);
        }
    }
    out
}
