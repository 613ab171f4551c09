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
        // cpu-clock's periods: CPU time, traced (ms) with each sample's CPU (µs).
        assert_eq!(s["weightType"], "tracing-ms");
        let cpu = s["threadCPUDelta"].as_array().expect("CPU deltas");
        for (w, d) in weights.iter().zip(cpu) {
            let (w, d) = (w.as_f64().unwrap(), d.as_f64().unwrap());
            assert!((w * 1e3 - d).abs() < 1e-6, "{w} ms of CPU, {d} µs");
        }
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
            weight_us += (w.as_f64().unwrap() * 1e3).round() as u64;
        }
        samples += n;
    }
    assert_eq!(samples, p.samples.len(), "every sample at its time");
    let want: Vec<String> = folded(&p).into_keys().collect();
    assert_eq!(stacks.into_iter().collect::<Vec<_>>(), want);
    // Nanoseconds written as ms to the microsecond per sample.
    let total_ns: u64 = p.samples.weight.iter().sum();
    assert!(weight_us * 1000 <= total_ns && total_ns - weight_us * 1000 < 1000 * samples as u64);
}

/// The processed profile format at the version kiln writes (`preprocessedProfileVersion`
/// 55, as samply's fxprof-processed-profile 0.8 writes it; the profiler upgrades it on
/// import to its current version): every field the profiler's type declarations
/// (`src/types/profile.js` at version 55) require, every table's columns as long as its
/// `length`, and every index (into the string array, the func, frame, stack, resource
/// and native symbol tables, the categories and their subcategories) in range.
#[test]
fn gecko_tables_are_complete_at_the_declared_version() {
    let p = recording();
    let v = export(&p, Format::Gecko);
    let meta = &v["meta"];
    assert_eq!(meta["preprocessedProfileVersion"], 55);
    assert_eq!(meta["version"], 24, "the Gecko format version beside it");
    for k in ["interval", "startTime", "processType", "product", "version"] {
        assert!(!meta[k].is_null(), "meta.{k} is required");
    }
    assert!(
        meta["markerSchema"].is_array(),
        "meta.markerSchema is required"
    );
    let categories = meta["categories"].as_array().unwrap();
    for c in categories {
        assert!(c["name"].is_string() && c["color"].is_string(), "{c}");
        assert!(!c["subcategories"].as_array().unwrap().is_empty(), "{c}");
    }
    assert!(v["libs"].is_array(), "libs is required");
    let threads = v["threads"].as_array().unwrap();
    assert!(!threads.is_empty());
    // Every table: exactly these columns (besides `length`), each `length` long.
    let table = |t: &Value, name: &str, columns: &[&str]| -> usize {
        let tab = &t[name];
        let n = u(&tab["length"]);
        for c in columns {
            let col = tab[c]
                .as_array()
                .unwrap_or_else(|| panic!("{name}.{c} is required"));
            assert_eq!(
                col.len(),
                n,
                "{name}.{c} has {} rows, length {n}",
                col.len()
            );
        }
        n
    };
    let index = |x: &Value, len: usize, what: &str| {
        let i = u(x);
        assert!(i < len, "{what}: index {i} out of range (0..{len})");
    };
    let opt_index = |x: &Value, len: usize, what: &str| {
        if !x.is_null() && x.as_i64() != Some(-1) {
            index(x, len, what);
        }
    };
    for t in threads {
        for k in [
            "processType",
            "processStartupTime",
            "registerTime",
            "name",
            "isMainThread",
            "pid",
            "tid",
        ] {
            assert!(!t[k].is_null(), "thread.{k} is required");
        }
        for k in ["processShutdownTime", "unregisterTime"] {
            assert!(t.get(k).is_some(), "thread.{k} is required (may be null)");
        }
        assert!(t["pausedRanges"].is_array());
        let strings = t["stringArray"].as_array().unwrap().len();
        let nsamples = table(t, "samples", &["stack", "weight"]);
        let st = table(t, "stackTable", &["frame", "prefix"]);
        let fr = table(
            t,
            "frameTable",
            &[
                "address",
                "inlineDepth",
                "category",
                "subcategory",
                "func",
                "nativeSymbol",
                "innerWindowID",
                "line",
                "column",
            ],
        );
        let fu = table(
            t,
            "funcTable",
            &[
                "name",
                "isJS",
                "relevantForJS",
                "resource",
                "fileName",
                "lineNumber",
                "columnNumber",
            ],
        );
        let res = table(t, "resourceTable", &["lib", "name", "host", "type"]);
        let ns = table(
            t,
            "nativeSymbols",
            &["libIndex", "address", "name", "functionSize"],
        );
        let mk = table(
            t,
            "markers",
            &["data", "name", "startTime", "endTime", "phase", "category"],
        );
        // Samples: times as deltas or absolute, a weight type the profiler knows.
        let s = &t["samples"];
        let times = s["timeDeltas"].as_array().or(s["time"].as_array()).unwrap();
        assert_eq!(times.len(), nsamples, "one time per sample");
        assert!(["samples", "tracing-ms", "bytes"].contains(&s["weightType"].as_str().unwrap()));
        for x in s["stack"].as_array().unwrap() {
            opt_index(x, st, "samples.stack");
        }
        for (i, (f, pre)) in t["stackTable"]["frame"]
            .as_array()
            .unwrap()
            .iter()
            .zip(t["stackTable"]["prefix"].as_array().unwrap())
            .enumerate()
        {
            index(f, fr, "stackTable.frame");
            opt_index(pre, i, "stackTable.prefix (an earlier stack)");
        }
        let ft = &t["frameTable"];
        for i in 0..fr {
            index(&ft["func"][i], fu, "frameTable.func");
            opt_index(&ft["nativeSymbol"][i], ns, "frameTable.nativeSymbol");
            let cat = &ft["category"][i];
            if !cat.is_null() {
                index(cat, categories.len(), "frameTable.category");
                let subs = categories[u(cat)]["subcategories"]
                    .as_array()
                    .unwrap()
                    .len();
                opt_index(&ft["subcategory"][i], subs, "frameTable.subcategory");
            }
            assert!(ft["inlineDepth"][i].is_u64());
        }
        let fut = &t["funcTable"];
        for i in 0..fu {
            index(&fut["name"][i], strings, "funcTable.name");
            opt_index(&fut["fileName"][i], strings, "funcTable.fileName");
            opt_index(&fut["resource"][i], res, "funcTable.resource");
            assert!(fut["isJS"][i].is_boolean() && fut["relevantForJS"][i].is_boolean());
        }
        for i in 0..res {
            index(
                &t["resourceTable"]["name"][i],
                strings,
                "resourceTable.name",
            );
        }
        for i in 0..ns {
            index(
                &t["nativeSymbols"]["name"][i],
                strings,
                "nativeSymbols.name",
            );
        }
        for i in 0..mk {
            index(&t["markers"]["name"][i], strings, "markers.name");
        }
    }
}
