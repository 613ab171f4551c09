//! speedscope and Firefox Profiler exports of a recording (a `perf script` fixture with
//! three threads): the structure each format's reader requires (speedscope's published
//! file format schema; the Firefox Profiler's processed tables), and the same stacks and
//! weights as kiln's folded output.
use kiln_formats::{read, write, Format, ReadOptions, WriteOptions};
use kiln_model::Profile;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn recording() -> Profile {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../collapse/tests/data/perf/cpu-fp.txt");
    let mut opts = ReadOptions::default();
    opts.collapse.perf.aggregate = false;
    read(Some(&path), &opts).unwrap().collapsed.profile
}

fn folded(p: &Profile) -> BTreeMap<String, u64> {
    let mut out = Vec::new();
    kiln_model::FoldedWriter::new(kiln_model::FoldedOptions::default())
        .write(p, &mut out)
        .unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            let (s, n) = l.rsplit_once(' ').unwrap();
            (s.to_string(), n.parse().unwrap())
        })
        .collect()
}

fn export(p: &Profile, f: Format) -> Value {
    let mut out = Vec::new();
    let o = WriteOptions {
        title: Some("cpu-fp".into()),
        ..Default::default()
    };
    write(std::slice::from_ref(p), f, &o, &mut out).unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn u(v: &Value) -> usize {
    v.as_u64().unwrap_or_else(|| panic!("not an index: {v}")) as usize
}

#[test]
fn speedscope_follows_the_file_format_schema() {
    let p = recording();
    let v = export(&p, Format::Speedscope);
    // Required by https://www.speedscope.app/file-format-schema.json.
    assert_eq!(
        v["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );
    let frames = v["shared"]["frames"].as_array().unwrap();
    for f in frames {
        assert!(f["name"].is_string(), "{f}");
        if let Some(l) = f.get("line") {
            assert!(l.is_u64());
        }
    }
    let profiles = v["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), p.threads.len(), "one profile per thread");
    assert!(u(&v["activeProfileIndex"]) < profiles.len());
    assert!(v["name"].is_string() && v["exporter"].is_string());
    let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
    for prof in profiles {
        assert_eq!(prof["type"], "sampled");
        assert!(prof["name"].is_string());
        let unit = prof["unit"].as_str().unwrap();
        assert!(
            [
                "none",
                "nanoseconds",
                "microseconds",
                "milliseconds",
                "seconds",
                "bytes"
            ]
            .contains(&unit),
            "{unit}"
        );
        assert_eq!(unit, "nanoseconds", "cpu-clock periods are nanoseconds");
        let samples = prof["samples"].as_array().unwrap();
        let weights = prof["weights"].as_array().unwrap();
        assert_eq!(samples.len(), weights.len());
        let total: u64 = weights.iter().map(|w| w.as_u64().unwrap()).sum();
        let (start, end) = (
            prof["startValue"].as_u64().unwrap(),
            prof["endValue"].as_u64().unwrap(),
        );
        assert!(start <= end);
        assert_eq!(end - start, total, "a sampled profile spans its weights");
        for (s, w) in samples.iter().zip(weights) {
            let names: Vec<&str> = s
                .as_array()
                .unwrap()
                .iter()
                .map(|i| frames[u(i)]["name"].as_str().unwrap())
                .collect();
            *stacks.entry(names.join(";")).or_default() += w.as_u64().unwrap();
        }
    }
    assert_eq!(stacks, folded(&p));
}

#[test]
fn gecko_threads_hold_every_sample_with_its_time() {
    let p = recording();
    let v = export(&p, Format::Gecko);
    let meta = &v["meta"];
    assert!(meta["version"].as_u64().unwrap() >= 24);
    assert!(meta["interval"].as_f64().unwrap() > 0.0);
    assert!(meta["product"].is_string());
    let threads = v["threads"].as_array().unwrap();
    assert_eq!(threads.len(), p.threads.len(), "one track per thread");
    let mut samples = 0;
    let mut weight_us = 0u64;
    let mut stacks = std::collections::BTreeSet::new();
    for t in threads {
        let s = &t["samples"];
        let n = u(&s["length"]);
        let stack = s["stack"].as_array().unwrap();
        let deltas = s["timeDeltas"].as_array().unwrap();
        assert_eq!(stack.len(), n);
        assert_eq!(deltas.len(), n);
        assert!(
            deltas.iter().all(|d| d.as_f64().unwrap() >= 0.0),
            "samples in time order"
        );
        let weights = s["weight"].as_array().unwrap();
        assert_eq!(weights.len(), n);
        let st = &t["stackTable"];
        let ft = &t["frameTable"];
        let fun = &t["funcTable"];
        let strings = t["stringArray"].as_array().unwrap();
        let ns = u(&st["length"]);
        assert_eq!(st["frame"].as_array().unwrap().len(), ns);
        for (i, pre) in st["prefix"].as_array().unwrap().iter().enumerate() {
            if !pre.is_null() {
                assert!(u(pre) < i, "a stack's prefix comes before it");
            }
        }
        for f in ft["func"].as_array().unwrap() {
            assert!(u(f) < u(&fun["length"]));
        }
        for name in fun["name"].as_array().unwrap() {
            assert!(u(name) < strings.len());
        }
        for (k, w) in stack.iter().zip(weights) {
            // Leaf to root through the prefixes, then root first.
            let mut names = Vec::new();
            let mut at = Some(u(k));
            while let Some(i) = at {
                let frame = u(&st["frame"][i]);
                let func = u(&ft["func"][frame]);
                names.push(strings[u(&fun["name"][func])].as_str().unwrap().to_string());
                at = st["prefix"][i].as_u64().map(|x| x as usize);
            }
            names.reverse();
            stacks.insert(names.join(";"));
            weight_us += w.as_u64().unwrap();
        }
        samples += n;
    }
    assert_eq!(samples, p.samples.len(), "every sample at its time");
    let want: Vec<String> = folded(&p).into_keys().collect();
    assert_eq!(stacks.into_iter().collect::<Vec<_>>(), want);
    // Nanoseconds written as whole microseconds per sample.
    let total_ns: u64 = p.samples.weight.iter().sum();
    assert!(weight_us * 1000 <= total_ns && total_ns - weight_us * 1000 < 1000 * samples as u64);
}
