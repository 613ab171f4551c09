//! `kiln runs export --format firefox` end to end: a real run (a C program built here as
//! the target, the testkit's nginx under `kiln load http` at a constant rate, a warm-up)
//! exported for the Firefox Profiler, checked as JSON here and loaded by the profiler's
//! own loading code (the pinned `@firefox-devtools/profiler-cli` package: its importer,
//! format upgraders and processing, run in Node by `web/tests/firefox.mjs`), which must
//! find every thread with its samples, the CPU threads' activity graphs drawn from the
//! CPU time their samples stand for, the off-CPU thread's time traced, every stored
//! series with a value as a counter track with its values, and the warm-up and the
//! measurement as markers, with their lengths.
//!
//! Needs `npm ci` in `web/`.
use kiln_store::{SqliteStore, Store};
use kiln_testkit::kiln_in as kiln;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Spins and naps forever, so it has samples in every second.
const BUSY_C: &str = r#"
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) void spin(void) {
    unsigned long x = 1;
    for (long i = 0; i < 300000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}
int main(void) {
    struct timespec ts = {0, 2000000L};
    for (;;) { spin(); nanosleep(&ts, 0); }
}
"#;

/// What the store holds of the run, as the profiler should show it: per thread (its
/// name as exported, tid and event) its samples, the CPU time they stand for (a timer's:
/// samples × period; the profiler counts the CPU since the thread's first sample) or the
/// time they trace (off-CPU blocks), per series its name and values, the phases.
fn expected(store: &Path, file: &str) -> Value {
    let s = SqliteStore::open(store).unwrap();
    let id = s.resolve("ff").unwrap().last().unwrap().id.unwrap();
    let run = s.load(id).unwrap();
    let several = run.profiles.len() > 1;
    let mut threads = Vec::new();
    for p in &run.profiles {
        // Per thread: samples, total weight, the (time, weight) of its first sample.
        type PerThread = (u64, u64, (u64, u64));
        let mut per: BTreeMap<(String, u32), PerThread> = BTreeMap::new();
        for i in 0..p.samples.len() {
            let t = p.threads.get(p.samples.thread[i]).expect("named thread");
            let name = p.strings.get_lossy(t.name).into_owned();
            let e = per
                .entry((name, t.tid.unwrap()))
                .or_insert((0, 0, (u64::MAX, 0)));
            e.0 += 1;
            e.1 += p.samples.weight[i];
            e.2 = e.2.min((p.samples.time[i], p.samples.weight[i]));
        }
        let period = p.event.sample_period_ns.filter(|_| p.event.is_clock());
        let traced = match p.event.quantity() {
            kiln_model::Quantity::Time { ns_per_unit } => Some(ns_per_unit as f64),
            _ => None,
        };
        for ((name, tid), (n, weight, (_, first))) in per {
            let name = if several {
                format!("{name} ({})", p.event.name)
            } else {
                name
            };
            threads.push(json!({
                "name": name, "tid": tid, "event": p.event.name, "samples": n,
                "cpuMs": period.map(|ns| (weight - first) as f64 * ns as f64 / 1e6),
                "tracedMs": traced.map(|ns| weight as f64 * ns / 1e6),
            }));
        }
    }
    let timeline = kiln_report::firefox_timeline(&run);
    json!({
        "file": file,
        "threads": threads,
        "counters": timeline.counters.iter().map(|c| json!({
            "name": c.name, "category": c.category,
            "values": c.values.iter().map(|v| v.unwrap_or(0.0)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "leftOut": timeline.left_out,
        "markers": timeline.markers.iter().map(|m| json!({"name": m.name, "ms": (m.end_ns - m.start_ns) as f64 / 1e6})).collect::<Vec<_>>(),
    })
}

/// The data a report page embeds (base64 of JSON, zlib-deflated when large).
fn page_data(html: &str) -> Value {
    let tag = html
        .find("id=\"kiln-report-data\"")
        .expect("the page's data");
    let open = tag + html[tag..].find('>').unwrap() + 1;
    let b64 = &html[open..open + html[open..].find("</script>").unwrap()];
    let compressed = html[tag..open].contains("data-compressed=\"1\"");
    let digit = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    } as u32;
    let mut bytes = Vec::new();
    for q in b64.trim().as_bytes().chunks(4) {
        let pad = q.iter().filter(|&&c| c == b'=').count();
        let v = q.iter().fold(0u32, |v, &c| {
            (v << 6) | if c == b'=' { 0 } else { digit(c) }
        });
        bytes.extend_from_slice(&v.to_be_bytes()[1..4 - pad]);
    }
    if compressed {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .unwrap();
        bytes = out;
    }
    serde_json::from_slice(&bytes).unwrap()
}

/// The length (ms) of the marker named `name` in a processed profile, from its threads'
/// marker tables and the profile's (or the thread's) string table.
fn marker_ms(fx: &Value, name: &str) -> f64 {
    let shared = fx["shared"]["stringArray"].as_array();
    for t in fx["threads"].as_array().unwrap() {
        let strings = shared.or(t["stringArray"].as_array()).unwrap();
        let Some(k) = strings.iter().position(|s| s == name) else {
            continue;
        };
        let m = &t["markers"];
        let names = m["name"].as_array().unwrap();
        if let Some(i) = names.iter().position(|n| n.as_u64() == Some(k as u64)) {
            return m["endTime"][i].as_f64().unwrap() - m["startTime"][i].as_f64().unwrap();
        }
    }
    panic!("no marker '{name}'")
}

#[test]
fn a_run_exported_for_the_firefox_profiler_loads_in_its_own_code() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("runs.db");
    let src = tmp.path().join("busy.c");
    std::fs::write(&src, BUSY_C).unwrap();
    let exe = kiln_testkit::build_c(
        tmp.path(),
        &src,
        "busy",
        &["-O2", "-fno-omit-frame-pointer"],
    );
    let target = kiln_testkit::Started::new(&exe, &[] as &[&str]);
    let nginx = kiln_testkit::Nginx::start().unwrap();
    kiln(&store)
        .args([
            "run",
            "--name",
            "ff",
            "-e",
            "cpu,offcpu",
            "-d",
            "3",
            "--warmup",
            "1",
        ])
        .args(["--no-report", "-p", &target.pid()])
        // The load outlasts the run: the warm-up starts once the profilers are attached
        // (loading eBPF programs takes a minute on a busy machine), and the run stops the
        // load when the measurement ends.
        .args([
            "load", "http", "-R", "200", "-c", "2", "-t", "1", "-d", "120s",
        ])
        .arg(nginx.url("/"))
        .timeout(Duration::from_secs(300))
        .assert()
        .success();
    // --format firefox with any name; the summary line says what it wrote.
    let file = tmp.path().join("run.json");
    let out = kiln(&store)
        .args(["runs", "export", "ff", "--format", "firefox", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("for the Firefox Profiler"), "{stderr}");
    let expect = expected(&store, "run.json");
    // The JSON itself: the processed format at a version the profiler upgrades, one
    // counter per series, the load's thread holding the two phases.
    let fx: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(fx["meta"]["preprocessedProfileVersion"], 55);
    let names: Vec<&str> = fx["counters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for want in ["load: ", "target: cpu user (%)"] {
        assert!(
            names.iter().any(|n| n.starts_with(want)),
            "{want}: {names:?}"
        );
    }
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("load: ") && n.contains("p99")),
        "a latency percentile: {names:?}"
    );
    let markers: Vec<&str> = expect["markers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        markers[..2],
        ["warm-up", "measurement"],
        "the load's seconds after it may follow"
    );
    for want in ["busy (cpu-clock)", "busy (offcpu)"] {
        assert!(
            expect["threads"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == want),
            "{want}: {expect}"
        );
    }
    // Each thread's samples: a timer's carry the CPU time each stands for (µs), an
    // off-CPU profile's are traced time (ms) without CPU deltas.
    for t in fx["threads"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        let s = &t["samples"];
        if name.ends_with("(cpu-clock)") {
            assert_eq!(s["weightType"], "samples", "{name}");
            let d = s["threadCPUDelta"].as_array().expect("CPU deltas");
            assert!(d.iter().all(|x| x.as_f64().unwrap() > 0.0), "{name}: {d:?}");
        } else if name.ends_with("(offcpu)") {
            assert_eq!(s["weightType"], "tracing-ms", "{name}");
            assert!(
                s.get("threadCPUDelta").is_none(),
                "{name}: CPU deltas unknown"
            );
        }
    }
    // A window of the run: the whole run, its measurement marker the window's second.
    assert!((marker_ms(&fx, "measurement") - 3000.0).abs() < 50.0);
    let win = tmp.path().join("win.json");
    kiln(&store)
        .args(["runs", "export", "ff@1-2", "--format", "firefox", "-o"])
        .arg(&win)
        .assert()
        .success();
    let w: Value = serde_json::from_slice(&std::fs::read(&win).unwrap()).unwrap();
    let ms = marker_ms(&w, "measurement");
    assert!((ms - 1000.0).abs() < 1.0, "the window's marker: {ms} ms");
    assert_eq!(
        w["threads"].as_array().unwrap().len(),
        fx["threads"].as_array().unwrap().len()
    );
    // Its page: the window's measurement (the headline's seconds) in the page's data.
    let page = tmp.path().join("win.html");
    kiln(&store)
        .args(["runs", "report", "ff@1-2", "-o"])
        .arg(&page)
        .assert()
        .success();
    let data = page_data(&std::fs::read_to_string(&page).unwrap());
    fn find<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
        match v {
            Value::Object(o) => o.get(key).or_else(|| o.values().find_map(|x| find(x, key))),
            Value::Array(a) => a.iter().find_map(|x| find(x, key)),
            _ => None,
        }
    }
    let m = find(&data, "measure").expect("a measure in the page's data");
    assert_eq!(
        (m["start"].as_i64(), m["end"].as_i64()),
        (Some(0), Some(1_000_000_000)),
        "the window is the page's measurement, its start the page's 0: {m}"
    );
    // kiln's own file holds whole runs: a window is refused, saying why.
    let e = refused(&store, &["runs", "export", "ff@1-2", "-o", "w.kiln"]);
    assert!(e.contains("is a window of a run"), "{e}");
    // A run the store lacks is said so, window or not.
    let e = refused(&store, &["runs", "export", "nosuch@1-2", "-o", "n.kiln"]);
    assert!(
        !e.contains("is a window of a run") && e.contains("nosuch"),
        "{e}"
    );
    // A window the run does not have is an error naming those it has.
    let e = refused(&store, &["runs", "report", "ff@nope", "-o", "x.html"]);
    assert!(
        e.contains("has no window 'nope'") && e.contains("measure"),
        "{e}"
    );
    // A name ending in .gecko.json needs no --format; an unknown format is an error
    // naming the ones there are.
    kiln(&store)
        .args(["runs", "export", "ff", "-o"])
        .arg(tmp.path().join("r.gecko.json"))
        .assert()
        .success();
    assert_eq!(
        std::fs::read(tmp.path().join("r.gecko.json")).unwrap(),
        std::fs::read(&file).unwrap()
    );
    let e = refused(
        &store,
        &["runs", "export", "ff", "--format", "chrome", "-o", "x.json"],
    );
    assert!(e.contains("chrome") && e.contains("gecko"), "{e}");
    // The profiler's own code.
    let dir = tmp.path();
    std::fs::write(dir.join("firefox.expect.json"), expect.to_string()).unwrap();
    let web = kiln_testkit::web_dir();
    let cli = web.join("node_modules/@firefox-devtools/profiler-cli/dist/profiler-cli.js");
    assert!(cli.is_file(), "run `npm ci` in {}", web.display());
    let out = std::process::Command::new("node")
        .arg(web.join("tests/firefox.mjs"))
        .arg(dir)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("all Firefox Profiler checks passed"),
        "{stdout}\n{stderr}"
    );
}

/// The message of a kiln command that must fail (its standard error).
fn refused(store: &Path, args: &[&str]) -> String {
    let out = kiln(store).args(args).output().unwrap();
    assert!(!out.status.success(), "kiln {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}
