//! What bench/hosts reads from a stored run of several hosts: each host's clock, and how
//! far the run's merged latency histograms are from the sum of its agents' own, bucket by
//! bucket: 0 when the merge is exact.
//!
//!   cargo run --release --manifest-path bench/hosts/check/Cargo.toml --target-dir target -- STORE RUN
use std::collections::BTreeMap;

fn buckets(data: &[u8]) -> (BTreeMap<u64, u64>, u64) {
    let h = kiln_store::hdr::decode_histogram(data).expect("a stored histogram decodes");
    let b = h
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect();
    (b, h.len())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (store, name) = (&args[1], &args[2]);
    let st = kiln_store::open_existing(std::path::Path::new(store)).expect("store");
    let id = st.resolve(name).expect("run")[0].id.expect("id");
    let run = st.load(id).expect("run loads");
    let mut out = serde_json::Map::new();
    out.insert(
        "hosts".into(),
        serde_json::to_value(&run.meta.hosts).unwrap(),
    );
    // Histograms of the measurement: merged against the sum of the hosts'.
    let mut hist = Vec::new();
    for h in run.histograms.iter().filter(|h| h.window == "measure") {
        let (merged, n) = buckets(&h.data);
        let mut sum: BTreeMap<u64, u64> = BTreeMap::new();
        let mut hosts = 0;
        for p in run
            .histograms
            .iter()
            .filter(|p| p.name == h.name && p.window.starts_with("measure@"))
        {
            hosts += 1;
            for (v, c) in buckets(&p.data).0 {
                *sum.entry(v).or_default() += c;
            }
        }
        if hosts == 0 {
            continue;
        }
        let keys: std::collections::BTreeSet<u64> =
            merged.keys().chain(sum.keys()).copied().collect();
        let diff: u64 = keys
            .iter()
            .map(|k| {
                merged
                    .get(k)
                    .copied()
                    .unwrap_or(0)
                    .abs_diff(sum.get(k).copied().unwrap_or(0))
            })
            .sum();
        hist.push(serde_json::json!({
            "name": h.name, "values": n, "hosts": hosts, "bucket_difference": diff,
        }));
    }
    out.insert("histograms".into(), hist.into());
    out.insert(
        "headline".into(),
        serde_json::to_value(&run.meta.headline).unwrap(),
    );
    println!("{}", serde_json::Value::Object(out));
}
