//! The run report and the comparison page end to end: real runs (a program built here, the
//! testkit's RabbitMQ) rendered by `kiln run`, `kiln runs report` and `kiln compare -o
//! x.html`, then driven in headless Chromium by `web/tests/report.mjs` (playwright-core):
//! charts drawn, hover values equal to the stored series, a window's flame graphs equal to
//! the store's samples of that window, the window in the URL, sweep steps, compare's signs
//! and colours, hostile names as text, and no request leaving the page.
//!
//! Needs `npm ci` in `web/` and `/usr/bin/chromium`. `KILN_FIXTURES=DIR` keeps the pages
//! and the store's expectations in DIR; `KILN_SCREENSHOTS=DIR` keeps the screenshots.
use kiln_model::Quantity;
use kiln_store::{SqliteStore, Store};
use kiln_testkit::Started;
use predicates::prelude::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The test target: alternates every second between `phase_even` and `phase_odd` (each
/// spinning in its own loop, so each is a leaf), sleeping between ticks (off-CPU time in
/// `nanosleep`), with a longer nap every half second.
const PHASES_C: &str = r#"
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) void phase_even(void) {
    unsigned long x = 1;
    for (long i = 0; i < 300000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}
__attribute__((noinline)) void phase_odd(void) {
    unsigned long x = 7;
    for (long i = 0; i < 300000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}
__attribute__((noinline)) void nap(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, 0);
}
int main(void) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long n = 0;; n++) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - start.tv_sec) % 2 == 0) phase_even(); else phase_odd();
        nap(n % 50 == 0 ? 60 : 4);
    }
}
"#;

use kiln_testkit::kiln_in as kiln;

/// The phases program, built in `dir` and started.
fn phases(dir: &Path) -> Started {
    let src = dir.join("phases.c");
    std::fs::write(&src, PHASES_C).unwrap();
    let flags = ["-O2", "-fno-omit-frame-pointer", "-fno-inline"];
    let exe = kiln_testkit::build_c(dir, &src, "phases", &flags);
    Started::new(&exe, &[] as &[&str])
}

/// Latency percentiles of every window of whole load seconds (`[time[i], time[j]]`, ns
/// since the origin), as HdrHistogram merges the stored seconds: the oracle of the page's
/// window figures and legends. Keyed `START-END`, then the latency's name.
fn window_latencies(run: &kiln_store::RunData, origin: i64) -> Value {
    let Some(load) = run.series.iter().find(|t| t.name == "load") else {
        return json!({});
    };
    let mut per_name: Vec<(String, Vec<hdrhistogram::Histogram<u64>>)> = Vec::new();
    for h in run
        .histograms
        .iter()
        .filter(|h| h.window == kiln_store::PER_SECOND)
    {
        let seconds: Vec<_> = kiln_hdr::read_interval_log(&h.data)
            .unwrap()
            .into_iter()
            .map(|(_, h)| h)
            .collect();
        assert_eq!(
            seconds.len(),
            load.time_ns.len(),
            "one histogram per load second"
        );
        per_name.push((h.name.clone(), seconds));
    }
    let t: Vec<i64> = load.time_ns.iter().map(|&x| x as i64 - origin).collect();
    let mut out = serde_json::Map::new();
    for i in 0..t.len() {
        for j in i + 1..t.len() {
            let mut names = serde_json::Map::new();
            for (name, seconds) in &per_name {
                // Seconds i+1..=j: those ending after the window's start, up to its end.
                let mut acc = hdrhistogram::Histogram::<u64>::new(3).unwrap();
                acc.auto(true);
                for h in &seconds[i + 1..=j] {
                    acc.add(h).unwrap();
                }
                if acc.is_empty() {
                    continue;
                }
                names.insert(
                    name.clone(),
                    json!({
                        "p50": acc.value_at_quantile(0.5),
                        "p99": acc.value_at_quantile(0.99),
                        "p999": acc.value_at_quantile(0.999),
                        "max": acc.max(),
                        "count": acc.len(),
                    }),
                );
            }
            out.insert(format!("{}-{}", t[i], t[j]), Value::Object(names));
        }
    }
    Value::Object(out)
}

/// What the store holds for the latest run named `reference`, times in ns since the start
/// of its measurement (the report's origin): series, windows, every sample.
fn expectations(store: &Path, reference: &str) -> Value {
    let s = SqliteStore::open_existing(store).unwrap();
    let id = s.resolve(reference).unwrap().last().unwrap().id.unwrap();
    let run = s.load(id).unwrap();
    let m = &run.meta;
    let o = m.measure.start_ns as i64;
    let rel = |t: u64| t as i64 - o;
    let tables: serde_json::Map<String, Value> = run
        .series
        .iter()
        .map(|t| {
            let cols: serde_json::Map<String, Value> = t
                .columns
                .iter()
                .map(|c| (c.name.clone(), json!(c.values)))
                .collect();
            (
                t.name.clone(),
                json!({ "time": t.time_ns.iter().map(|&x| rel(x)).collect::<Vec<_>>(), "columns": cols }),
            )
        })
        .collect();
    let profiles: Vec<Value> = run
        .profiles
        .iter()
        .map(|p| {
            let ns = match p.event.quantity() {
                Quantity::Time { ns_per_unit } => Some(ns_per_unit),
                _ => None,
            };
            let samples: Vec<Value> = (0..p.samples.len())
                .map(|i| {
                    let st = p.samples.stack[i];
                    let path: Vec<String> = p
                        .stacks
                        .path(st)
                        .iter()
                        .map(|&f| String::from_utf8_lossy(p.frame_name(f)).into_owned())
                        .collect();
                    json!([
                        rel(p.samples.time[i]),
                        p.samples.weight[i],
                        String::from_utf8_lossy(p.node_name(st)),
                        path.join(";")
                    ])
                })
                .collect();
            json!({ "event": p.event.name, "nsPerWeight": ns, "samples": samples })
        })
        .collect();
    json!({
        "latencies": window_latencies(&run, o),
        "completed": m.load.completed,
        "id": id,
        "name": m.name,
        "note": m.note,
        "tags": m.tags,
        "origin": o,
        "measure": [rel(m.measure.start_ns), rel(m.measure.end_ns)],
        "windows": m.windows.iter().map(|w| json!({"name": w.name, "start": rel(w.start_ns), "end": rel(w.end_ns)})).collect::<Vec<_>>(),
        "tables": tables,
        "profiles": profiles,
    })
}

/// What `kiln runs show` prints (text and JSON) for windows of the latest run `name`: each
/// of its named windows (a sweep's steps) and the seconds 1 to 3 of its measurement, each
/// with the window in ns since the page's origin: what the page must say of that window.
fn shown_windows(store: &Path, name: &str) -> Value {
    let s = SqliteStore::open_existing(store).unwrap();
    let id = s.resolve(name).unwrap().last().unwrap().id.unwrap();
    let m = s.load(id).unwrap().meta;
    let o = m.measure.start_ns as i64;
    let mut windows: Vec<(String, [i64; 2])> = m
        .windows
        .iter()
        .map(|w| {
            (
                format!("{name}@{}", w.name),
                [w.start_ns as i64 - o, w.end_ns as i64 - o],
            )
        })
        .collect();
    windows.push((format!("{name}@1-3"), [1_000_000_000, 3_000_000_000]));
    let show = |reference: &str, json: bool| {
        let mut c = kiln(store);
        c.args(["runs", "show", reference]);
        if json {
            c.arg("--json");
        }
        let out = c.output().unwrap();
        kiln_testkit::succeeded(&out);
        String::from_utf8(out.stdout).unwrap()
    };
    windows
        .into_iter()
        .map(|(reference, w)| {
            let json: Value = serde_json::from_str(&show(&reference, true)).unwrap();
            json!({ "ref": reference, "window": w, "text": show(&reference, false), "json": json })
        })
        .collect()
}

fn fixtures_dir(tmp: &Path, sub: &str) -> PathBuf {
    let dir = std::env::var_os("KILN_FIXTURES")
        .map(|d| PathBuf::from(d).join(sub))
        .unwrap_or_else(|| tmp.join(sub));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The total weight of the profile `kiln collapse REFERENCE` gives (folded stacks, each
/// line's last field its weight).
fn collapsed_total(store: &Path, reference: &str) -> f64 {
    let out = kiln(store).args(["collapse", reference]).output().unwrap();
    let text = kiln_testkit::succeeded(&out);
    let total: f64 = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let w = l.rsplit(' ').next().unwrap();
            w.parse::<f64>()
                .unwrap_or_else(|e| panic!("'{l}': weight {w}: {e}"))
        })
        .sum();
    assert!(total > 0.0, "{reference} has samples: {text}");
    total
}

/// Runs `web/tests/report.mjs` over the pages in `dir`.
fn browser(dir: &Path) {
    kiln_testkit::run_browser_checks("report.mjs", dir);
}

#[test]
fn a_run_report_shows_exactly_the_window_it_is_given() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixtures_dir(tmp.path(), "program");
    let store = tmp.path().join("runs.db");
    let target = phases(tmp.path());
    let pid = target.pid();
    let name = "<img src=x onerror=window.__pwned=1>";
    let note = "</script><script>window.__pwned=2</script> & more";
    let out = kiln(&store)
        .args(["run", "--name", name, "--note", note])
        .args(["--tag", "k=<b>v</b>", "--tag", "build=\"x\""])
        .args(["-e", "cpu,offcpu", "-d", "5", "--warmup", "1", "-p", &pid])
        .args(["exec", "--", "sleep", "600"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The terminal's summary has the target's thread states by thread group.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("  thread states, % of a thread's time summed over the group"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("phases ") && l.ends_with('%')),
        "a row for the program's thread: {stdout}"
    );
    // kiln run writes the report beside the store by default and says where.
    let default = tmp
        .path()
        .join(format!("{}-1.html", kiln_report::file_name_part(name)));
    assert!(
        stderr.contains(&format!("kiln run: report {}", default.display())),
        "{stderr}"
    );
    let html = std::fs::read_to_string(&default).unwrap();
    assert!(!html.contains("<img src=x"), "the name is not markup");
    // kiln runs report, with the user's category rules first.
    let rules = tmp.path().join("cats.rules");
    std::fs::write(
        &rules,
        "# the test program's own work\nphase work = ^phase_(even|odd)$\n",
    )
    .unwrap();
    kiln(&store)
        .args(["runs", "report", "1", "-o"])
        .arg(dir.join("run.html"))
        .arg("--categories")
        .arg(&rules)
        .assert()
        .success()
        .stderr(predicate::str::contains("wrote"));
    std::fs::write(
        dir.join("run.expect.json"),
        expectations(&store, "1").to_string(),
    )
    .unwrap();
    // Malformed rules: the file and line are named, nothing is written.
    let bad = tmp.path().join("bad.rules");
    std::fs::write(&bad, "ok = ^a\nbroken = (unclosed\n").unwrap();
    let none = tmp.path().join("none.html");
    kiln(&store)
        .args(["runs", "report", "1", "-o"])
        .arg(&none)
        .arg("--categories")
        .arg(&bad)
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "bad.rules:2: invalid regular expression",
        ));
    assert!(!none.exists());
    kiln(&store)
        .args(["runs", "report", "nope", "-o"])
        .arg(&none)
        .assert()
        .failure()
        .stderr(predicate::str::contains("no run 'nope'"));
    // --report and --no-report cannot both be given.
    kiln(&store)
        .args([
            "run",
            "--report",
            "x.html",
            "--no-report",
            "-p",
            &pid,
            "exec",
            "--",
            "true",
        ])
        .assert()
        .code(2);
    // An idle target (asleep the whole time: no CPU sample, no off-CPU block ending) under a
    // name of 126 characters without a space (names are at most 128): the page says why
    // its flame graphs are empty and stays in its column.
    let idle = Started::new(Path::new("/bin/sleep"), &["600"]);
    let long = format!("{}<b>end", "long-name-".repeat(12));
    kiln(&store)
        .args(["run", "--name", &long, "-e", "cpu,offcpu", "-d", "2"])
        .args(["-p", &idle.pid()])
        .arg("--report")
        .arg(dir.join("idle.html"))
        .args(["exec", "--", "sleep", "600"])
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    std::fs::write(
        dir.join("idle.expect.json"),
        expectations(&store, &long).to_string(),
    )
    .unwrap();
    // One event: the page holds a single viewer (no URL prefix), its heading counts the
    // window's samples all the same.
    kiln(&store)
        .args(["run", "--name", "one-event", "-e", "cpu", "-d", "3"])
        .args(["-p", &pid])
        .arg("--report")
        .arg(dir.join("one.html"))
        .args(["exec", "--", "sleep", "600"])
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    std::fs::write(
        dir.join("one.expect.json"),
        expectations(&store, "one-event").to_string(),
    )
    .unwrap();
    browser(&dir);
    drop(idle);
    drop(target);
}

/// An HTTP load against a server that answers 500 for five seconds of every ten (by its
/// own clock): the load's failing seconds, as stored, are markers on the report's axis.
#[test]
fn a_load_s_failures_are_markers_on_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixtures_dir(tmp.path(), "failures");
    let store = tmp.path().join("runs.db");
    let nginx = kiln_testkit::Nginx::start_with(&kiln_testkit::NginxOptions {
        server_lines: vec![
            r#"location /flaky { if ($msec ~ "[0-4]\.[0-9]+$") { return 500; } return 204; }"#
                .into(),
        ],
        ..Default::default()
    })
    .unwrap();
    let worker = nginx.worker_pids()[0].to_string();
    kiln(&store)
        .args([
            "run", "--name", "flaky", "-e", "cpu", "-d", "6", "--warmup", "1",
        ])
        .args(["-p", &worker, "--report"])
        .arg(dir.join("failures.html"))
        .args([
            "load", "http", "-R", "100", "-c", "2", "-t", "1", "-d", "15s",
        ])
        .arg(nginx.url("/flaky"))
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    std::fs::write(
        dir.join("failures.expect.json"),
        expectations(&store, "flaky").to_string(),
    )
    .unwrap();
    browser(&dir);
}

#[test]
fn rabbitmq_sweep_and_comparison_pages() {
    let broker = kiln_testkit::shared_rabbitmq().expect("rabbitmq-server installed");
    let beam = broker.beam_pid().expect("broker pid").to_string();
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixtures_dir(tmp.path(), "rabbitmq");
    let store = tmp.path().join("runs.db");
    let queue = |n: &str| format!("kiln-report-{n}-{}", std::process::id());
    // A rate sweep: two steps of 7 s, measured for 3 s (the recorder takes seconds to
    // start; the run must end before the load does), the report written where asked.
    let sweep = dir.join("sweep.html");
    kiln(&store)
        .args([
            "run",
            "--name",
            "sweep",
            "-e",
            "cpu,offcpu",
            "-d",
            "3",
            "-p",
            &beam,
        ])
        .arg("--report")
        .arg(&sweep)
        .args(["load", "amqp", "-h", &broker.uri(), "-x", "1", "-y", "1"])
        .args([
            "-z",
            "7",
            "--rate-sweep",
            "200,600",
            "--queue",
            &queue("sweep"),
        ])
        .timeout(Duration::from_secs(180))
        .assert()
        .success();
    let mut sweep_expect = expectations(&store, "sweep");
    sweep_expect["show"] = shown_windows(&store, "sweep");
    std::fs::write(dir.join("sweep.expect.json"), sweep_expect.to_string()).unwrap();
    // Two rates, compared; the first name is hostile.
    let slow = "<i>slow</i>";
    for (name, rate) in [(slow, "300"), ("fast", "900")] {
        kiln(&store)
            .args([
                "run", "--name", name, "-d", "3", "--warmup", "1", "-p", &beam,
            ])
            .arg("--no-report")
            .args([
                "load",
                "amqp",
                "-h",
                &broker.uri(),
                "-x",
                "1",
                "-y",
                "1",
                "-r",
                rate,
            ])
            .args(["--queue", &queue(rate)])
            .timeout(Duration::from_secs(180))
            .assert()
            .success();
    }
    let htmls = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .map(|e| e.path().extension().is_some_and(|x| x == "html"))
                .unwrap_or(false)
        })
        .count();
    assert_eq!(htmls, 0, "--no-report writes no report");
    kiln(&store)
        .args(["compare", slow, "fast", "-o"])
        .arg(dir.join("compare.html"))
        .assert()
        .success()
        .stderr(predicate::str::contains("wrote"));
    let first = expectations(&store, slow);
    let load = &first["tables"]["load"];
    // What `kiln compare` says of seconds 1-3 of both runs: the page's window must say it.
    let refs = [format!("{slow}@1-3"), "fast@1-3".to_string()];
    let out = kiln(&store)
        .arg("compare")
        .args(&refs)
        .args(["--format", "json"])
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out);
    let window: Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = kiln(&store).arg("compare").args(&refs).output().unwrap();
    kiln_testkit::succeeded(&out);
    let compare = json!({
        "labels": [slow, "fast"],
        "runs": [{ "load": load }],
        "window": { "json": window, "text": String::from_utf8(out.stdout).unwrap() },
    });
    std::fs::write(dir.join("compare.expect.json"), compare.to_string()).unwrap();
    browser(&dir);
}

/// A window dragged on the comparison page is judged by the page as `kiln compare
/// LABEL@START-END ...` judges it. Real runs of an HTTP load against nginx: two variants
/// interleaved in 6 rounds (paired by round: Wilcoxon signed-rank, Hodges–Lehmann) and a
/// group of 4 runs of its own (against the baseline: Mann-Whitney). The page's figures,
/// changes and p-values must equal the command's JSON (to 1e-9, relative), its verdicts the
/// command's, and every cell it shows must be in the command's text.
#[test]
fn a_window_on_the_comparison_page_is_judged_as_kiln_compare_judges_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixtures_dir(tmp.path(), "compare-window");
    let store = tmp.path().join("runs.db");
    let nginx = kiln_testkit::Nginx::start().unwrap();
    let worker = nginx.worker_pids()[0].to_string();
    let load = |cmd: &mut assert_cmd::Command| {
        cmd.args(["-d", "3", "--warmup", "1", "-e", "cpu", "-p", &worker])
            .arg("--no-report")
            .args(["load", "http", "-R", "200", "-c", "2", "-t", "1"])
            .arg(nginx.url("/"))
            .timeout(Duration::from_secs(400))
            .assert()
            .success();
    };
    load(
        kiln(&store)
            .args(["run", "--variant", "a=true", "--variant", "b=true"])
            .args(["--repeat", "6"]),
    );
    load(kiln(&store).args(["run", "--name", "c", "--repeat", "4"]));
    kiln(&store)
        .args(["compare", "a", "b", "c", "-o"])
        .arg(dir.join("compare-window.html"))
        .assert()
        .success();
    let refs = ["a@1-3", "b@1-3", "c@1-3"];
    let out = kiln(&store)
        .arg("compare")
        .args(refs)
        .args(["--format", "json"])
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = kiln(&store).arg("compare").args(refs).output().unwrap();
    kiln_testkit::succeeded(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    eprintln!("{text}");
    std::fs::write(
        dir.join("compare-window.expect.json"),
        json!({ "labels": ["a", "b", "c"], "window": [1, 3], "json": json, "text": text })
            .to_string(),
    )
    .unwrap();
    browser(&dir);
}

/// A window on the comparison page has its own profile: the window's function tables and
/// the overall line's clause on what moved in its profile are what `kiln compare
/// LABEL@START-END ...` prints for the same seconds, its differential flame graph holds
/// the samples `kiln collapse run:LABEL@START-END` gives for them (each side's total), and
/// a reload keeps the window. Real runs of nginx: four serving its small page, four a
/// 256 KiB file (its kernel's copying and sending grow), so the profile moves beyond noise.
#[test]
fn a_window_on_the_comparison_page_has_its_own_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixtures_dir(tmp.path(), "compare-profile");
    let store = tmp.path().join("runs.db");
    let nginx = kiln_testkit::Nginx::start().unwrap();
    std::fs::write(nginx.dir().join("html/big.bin"), vec![b'k'; 256 * 1024]).unwrap();
    let worker = nginx.worker_pids()[0].to_string();
    for (name, path) in [("small", "/"), ("big", "/big.bin")] {
        kiln(&store)
            .args(["run", "--name", name, "--repeat", "4"])
            .args(["-d", "4", "--warmup", "1", "-e", "cpu", "-p", &worker])
            .arg("--no-report")
            .args(["load", "http", "-R", "200", "-c", "2", "-t", "1"])
            .arg(nginx.url(path))
            .timeout(Duration::from_secs(400))
            .assert()
            .success();
    }
    kiln(&store)
        .args(["compare", "small", "big", "-o"])
        .arg(dir.join("compare-profile.html"))
        .assert()
        .success();
    let json = |refs: &[&str]| -> Value {
        let out = kiln(&store)
            .arg("compare")
            .args(refs)
            .args(["--format", "json"])
            .output()
            .unwrap();
        kiln_testkit::succeeded(&out);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let refs = ["small@1-3", "big@1-3"];
    let out = kiln(&store).arg("compare").args(refs).output().unwrap();
    kiln_testkit::succeeded(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    eprintln!("{text}");
    std::fs::write(
        dir.join("compare-profile.expect.json"),
        json!({
            "labels": ["small", "big"],
            "window": [1, 3],
            "json": json(&refs),
            "whole": json(&["small", "big"]),
            "text": text,
            // Each side's total weight, the window's and the whole measurements'.
            "collapsed": {
                "window": [collapsed_total(&store, "run:small@1-3"), collapsed_total(&store, "run:big@1-3")],
                "whole": [collapsed_total(&store, "run:small"), collapsed_total(&store, "run:big")],
            },
        })
        .to_string(),
    )
    .unwrap();
    browser(&dir);
}
