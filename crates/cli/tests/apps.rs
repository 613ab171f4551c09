//! kiln's exports opened by the applications they are for: a real recording (two
//! processes of a small C program under a shell, `kiln record -e cpu`) exported with
//! `kiln collapse -o r.speedscope.json`, then loaded by speedscope's own released app
//! (the `speedscope` npm package, served from 127.0.0.1) in headless Chromium, which
//! must show the profile's name, one profile per thread, each thread's total and every
//! function's self time as kiln's own recording has them; and its gecko export
//! (`kiln collapse -o r.gecko.json`) loaded by the Firefox Profiler's own loading code
//! (the `@firefox-devtools/profiler-cli` package), which must find every thread with its
//! leaf functions, samples and CPU time (web/tests/apps.mjs).
mod exports;
use kiln_formats::{read, ReadOptions};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

use kiln_testkit::kiln;

/// What the recording holds, per thread: the tid, the thread's total in nanoseconds, its
/// first sample's (in time), and each leaf function's self time in nanoseconds (samples ×
/// the timer's period).
fn expected(rec: &Path) -> serde_json::Value {
    let mut opts = ReadOptions::default();
    opts.collapse.perf.aggregate = false;
    let p = read(Some(rec), &opts).unwrap().collapsed.profile;
    let period = p.event.sample_period_ns.expect("cpu-clock has a period");
    // Per thread: total, self time per leaf, the first sample's (time, weight).
    type PerThread = (u64, BTreeMap<String, u64>, (u64, u64));
    let mut threads: BTreeMap<u32, PerThread> = BTreeMap::new();
    for i in 0..p.samples.len() {
        let t = p.samples.thread[i];
        let w = p.samples.weight[i] * period;
        let leaf = p.frames.get(p.stacks.frame(p.samples.stack[i])).name;
        let e = threads
            .entry(t.0)
            .or_insert_with(|| (0, BTreeMap::new(), (u64::MAX, 0)));
        e.0 += w;
        *e.1.entry(p.strings.get_lossy(leaf).into_owned())
            .or_default() += w;
        e.2 = e.2.min((p.samples.time[i], w));
    }
    let threads: Vec<serde_json::Value> = threads
        .into_iter()
        .map(|(t, (total, selfs, (_, first)))| {
            let info = p
                .threads
                .get(kiln_model::ThreadId(t))
                .expect("samples name their thread");
            json!({
                "tid": info.tid.expect("recorded threads have a tid"),
                "name": p.strings.get_lossy(info.name),
                "totalNs": total,
                "firstNs": first,
                "selfNs": selfs,
            })
        })
        .collect();
    json!({ "event": p.event.name, "periodNs": period, "threads": threads })
}

#[test]
fn speedscope_and_the_firefox_profiler_open_a_recording_exported_by_kiln() {
    let dir = tempfile::tempdir().unwrap();
    let (rec, _) = exports::record_and_export(dir.path(), "r.speedscope.json");
    let mut expect = expected(&rec);
    let threads = expect["threads"].as_array().unwrap().len();
    assert!(threads >= 2, "two processes recorded: {expect}");
    // The input, as given, names the export.
    expect["title"] = json!(rec.display().to_string());
    expect["file"] = json!("r.speedscope.json");
    std::fs::write(
        dir.path().join("speedscope.expect.json"),
        serde_json::to_vec_pretty(&expect).unwrap(),
    )
    .unwrap();
    // The same recording for the Firefox Profiler (loaded by its own code).
    let gecko = dir.path().join("r.gecko.json");
    kiln()
        .args(["collapse", "-q"])
        .arg(&rec)
        .arg("-o")
        .arg(&gecko)
        .assert()
        .success();
    expect["file"] = json!("r.gecko.json");
    std::fs::write(
        dir.path().join("gecko.expect.json"),
        serde_json::to_vec_pretty(&expect).unwrap(),
    )
    .unwrap();
    // The viewer's page of it, whose own speedscope export is opened there too.
    kiln()
        .args(["flamegraph", "-o"])
        .arg(dir.path().join("r.html"))
        .arg(&rec)
        .assert()
        .success();
    let web = kiln_testkit::web_dir();
    assert!(
        web.join("node_modules/speedscope/dist/release/index.html")
            .is_file(),
        "speedscope is missing: run `npm ci` in {}",
        web.display()
    );
    kiln_testkit::run_browser_checks("apps.mjs", dir.path());
}
