//! OTLP profiles out (`-o x.otlp.pb`, opentelemetry-proto v1.8.0), read back by the
//! OpenTelemetry project's own Go bindings (`go.opentelemetry.io/proto/otlp/collector/
//! profiles/v1development` v0.1.0, generated from that .proto) in
//! crates/formats/tests/otlpdecode, and by the OpenTelemetry Collector's data model
//! (`go.opentelemetry.io/collector/pdata/pprofile` v0.136.0, what its OTLP receiver
//! decodes a request with): a real recording's stacks, threads, values and sample times
//! as kiln's own folded output and recording have them.
use kiln_testkit::go_oracle as common;
mod exports;
use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use kiln_testkit::kiln;

/// Builds and runs the Go decoder on `file`; its output.
fn decode(dir: &Path, file: &Path) -> String {
    let bin = go_build("otlpdecode", dir);
    let out = std::process::Command::new(&bin).arg(file).output().unwrap();
    assert!(
        out.status.success(),
        "otlpdecode {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn otlp_export_decodes_with_opentelemetrys_bindings() {
    if !have_go() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (rec, otlp) = exports::record_and_export(dir.path(), "r.otlp.pb");
    let text = decode(dir.path(), &otlp);
    let profiles: Vec<Vec<&str>> = text
        .lines()
        .filter_map(|l| l.strip_prefix("profile "))
        .map(|l| l.split(' ').collect())
        .collect();
    assert_eq!(profiles.len(), 1, "one event, one profile: {text}");
    let p = &profiles[0];
    let kp = kiln_formats::read(Some(&rec), &Default::default())
        .unwrap()
        .collapsed
        .profile;
    let period = kp.event.sample_period_ns.unwrap();
    assert_eq!(
        &p[..4],
        ["cpu-clock", "nanoseconds", "cpu-clock", "nanoseconds"]
    );
    assert_eq!(p[4], period.to_string(), "the period");
    assert!(text.contains("scope kiln "), "{text}");
    // Stacks: the same as kiln's folded output, values count × period.
    let mut stacks: BTreeMap<String, i64> = BTreeMap::new();
    let mut threads = BTreeSet::new();
    let mut n = 0;
    for l in text.lines().filter_map(|l| l.strip_prefix("stack ")) {
        let mut f = l.split('\t');
        let (thread, stack, v) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        let v: i64 = v.parse().unwrap();
        assert_eq!(v % period as i64, 0, "{l}: a whole number of samples");
        *stacks.entry(stack.to_string()).or_default() += v / period as i64;
        threads.insert(thread.to_string());
        n += 1;
    }
    assert_eq!(p[7], n.to_string(), "sample count");
    // The Collector's data model reads the same samples and total.
    let total: i64 = stacks.values().sum::<i64>() * period as i64;
    assert!(
        text.lines()
            .any(|l| l == format!("pdata profile 0 samples {n} total {total}")),
        "the Collector's pdata disagrees: {text}"
    );
    let out = kiln().args(["collapse", "-q"]).arg(&rec).output().unwrap();
    assert!(out.status.success());
    let folded = folded_map(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(stacks, folded, "stacks and counts as kiln's folded output");
    // Threads: every recorded thread, by name and tid.
    let want: BTreeSet<String> = kp
        .threads
        .iter()
        .filter(|(id, _)| kp.samples.thread.contains(id))
        .map(|(_, t)| format!("{}/{}", kp.strings.get_lossy(t.name), t.tid.unwrap()))
        .collect();
    assert!(want.len() >= 2, "{want:?}");
    assert_eq!(threads, want, "threads as attributes");
    // A .kiln file has no wall-clock time: no sample times, rather than wrong ones.
    let stamps = |text: &str| -> usize {
        text.lines()
            .find_map(|l| l.strip_prefix("timestamps "))
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(stamps(&text), 0, "no wall clock, no timestamps");
    let (a, b) = kp.samples.time_range().unwrap();
    assert_eq!(p[6], (b - a).to_string(), "the profile's duration");
    // Straight from the recorder, which knows the wall clock: every sample's time, each
    // within the profile's range (checked by the decoder).
    let direct = dir.path().join("d.otlp.pb");
    let exe = dir.path().join("hot");
    kiln()
        .args(["record", "-e", "cpu", "-o"])
        .arg(&direct)
        .arg("--")
        .arg(&exe)
        .arg("0.2")
        .assert()
        .success();
    let text = decode(dir.path(), &direct);
    let samples: i64 = text
        .lines()
        .filter_map(|l| l.strip_prefix("stack "))
        .map(|l| l.rsplit_once('\t').unwrap().1.parse::<i64>().unwrap() / period as i64)
        .sum();
    assert!(samples > 0, "{text}");
    assert_eq!(stamps(&text) as i64, samples, "one time per sample");
    let start: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("profile "))
        .unwrap()
        .split(' ')
        .nth(5)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        start > 1_600_000_000_000_000_000,
        "a wall-clock start: {start}"
    );
}

#[test]
fn otlp_by_name_and_among_the_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let folded = dir.path().join("x.folded");
    std::fs::write(&folded, "main;work 3\nmain;idle 1\n").unwrap();
    let out = dir.path().join("x.bin");
    kiln()
        .args(["collapse", "-q", "--output-format", "otlp"])
        .arg(&folded)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let bytes = std::fs::read(&out).unwrap();
    assert!(!bytes.is_empty());
    let e = kiln()
        .args(["collapse", "-q"])
        .arg(&folded)
        .arg("-o")
        .arg(dir.path().join("x.png"))
        .output()
        .unwrap();
    assert!(!e.status.success());
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("otlp (.otlp.pb)"),
        "{}",
        String::from_utf8_lossy(&e.stderr)
    );
}

#[test]
fn an_otlp_file_given_as_input_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let folded = dir.path().join("x.folded");
    std::fs::write(&folded, "main;work 3\nmain;idle 1\n").unwrap();
    let out = dir.path().join("x.otlp.pb");
    kiln()
        .args(["collapse", "-q"])
        .arg(&folded)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let e = kiln().args(["collapse", "-q"]).arg(&out).output().unwrap();
    assert!(!e.status.success());
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(
        msg.contains("x.otlp.pb") && msg.contains("OTLP profiles request"),
        "{msg}"
    );
}

/// The Collector scripts/install-deps.sh builds (`KILN_OTELCOL`, else
/// `~/go/bin/otelcol-kiln`); `None` (and a note) when it is missing, a failure when the
/// test suite requires every anchor.
fn otelcol() -> Option<PathBuf> {
    let path = std::env::var_os("KILN_OTELCOL").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join("go/bin/otelcol-kiln"),
        PathBuf::from,
    );
    if path.is_file() {
        return Some(path);
    }
    kiln_testkit::skip(&format!(
        "no OpenTelemetry Collector at {} (scripts/install-deps.sh builds it)",
        path.display()
    ));
    None
}

/// A collector started by the test, stopped by its PID when dropped.
struct Collector(std::process::Child);

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// POSTs `body` to `http://127.0.0.1:port{path}`; the response's status line.
fn post(port: u16, path: &str, body: &[u8]) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    s.write_all(body)?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp)?;
    let text = String::from_utf8_lossy(&resp);
    Ok(text.lines().next().unwrap_or_default().to_string())
}

/// Starts the Collector `bin` with its OTLP/HTTP receiver on a free port of 127.0.0.1 and
/// the debug exporter (detailed) writing to `dir/otelcol.log`; returns once it listens.
fn start_collector(bin: &Path, dir: &Path) -> (Collector, u16, PathBuf) {
    let port = kiln_testkit::free_port().unwrap();
    let config = dir.join("otelcol.yaml");
    std::fs::write(
        &config,
        format!(
            "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:{port}\n\
             exporters:\n  debug:\n    verbosity: detailed\n\
             service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [debug]\n  \
             telemetry:\n    metrics:\n      level: none\n"
        ),
    )
    .unwrap();
    let log = dir.join("otelcol.log");
    // One file description for both streams: two would write over each other.
    let out = std::fs::File::create(&log).unwrap();
    let err = out.try_clone().unwrap();
    let col = Collector(
        std::process::Command::new(bin)
            .arg("--config")
            .arg(&config)
            // Profiles are in development: the Collector takes them behind this gate.
            .arg("--feature-gates=service.profilesSupport")
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap(),
    );
    // The receiver listens once the collector is up.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the collector did not listen:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    (col, port, log)
}

/// The collector's log once it holds every one of `wants` (or after 60 s): the debug
/// exporter writes a batch's count before its records.
fn log_with(log: &Path, wants: &[&str]) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if wants.iter().all(|w| text.contains(w)) || std::time::Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn an_opentelemetry_collector_takes_kilns_profiles() {
    let Some(bin) = otelcol() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (rec, otlp) = exports::record_and_export(dir.path(), "r.otlp.pb");
    let kp = kiln_formats::read(Some(&rec), &Default::default())
        .unwrap()
        .collapsed
        .profile;
    // Samples of one stack and thread are one OTLP sample.
    let records: BTreeSet<(u32, u32)> = (0..kp.samples.len())
        .map(|i| (kp.samples.stack[i].0, kp.samples.thread[i].0))
        .collect();
    let (col, port, log) = start_collector(&bin, dir.path());
    // kiln sends what it writes to r.otlp.pb: `--otlp-endpoint` with the base URL.
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = kiln()
        .current_dir(dir.path())
        .args(["collapse", "-q"])
        .arg(&rec)
        .args(["--otlp-endpoint", &endpoint])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{stderr}\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert!(out.stdout.is_empty(), "sent, not written to stdout");
    let body = std::fs::read(&otlp).unwrap();
    assert!(
        stderr.contains(&format!(
            "1 profile ({} bytes) sent to {endpoint}/v1development/profiles",
            body.len()
        )),
        "{stderr}"
    );
    // The same bytes as the file, posted by hand, are taken too.
    let status = post(port, "/v1development/profiles", &body).unwrap();
    assert!(status.contains(" 200 "), "{status}");
    // The debug exporter logs what the pipeline carried: every thread the recording
    // sampled (its `sh` children only when one ran on a CPU as it was sampled: on a busy
    // machine none may have).
    let want = format!("\"sample records\": {}", records.len());
    let threads: BTreeSet<String> = kp
        .samples
        .thread
        .iter()
        .filter_map(|&t| kp.threads.get(t))
        .map(|t| kp.strings.get_lossy(t.name).into_owned())
        .collect();
    assert!(threads.contains("hot"), "{threads:?}");
    let names: Vec<String> = threads
        .iter()
        .map(|n| format!("-> thread.name: {n}"))
        .collect();
    let mut wants: Vec<&str> = vec![&want];
    wants.extend(names.iter().map(String::as_str));
    let text = log_with(&log, &wants);
    drop(col);
    assert!(
        text.contains(&want),
        "want {want} in the collector's log:\n{text}"
    );
    assert!(text.contains("\"resource profiles\": 1"), "{text}");
    for name in &threads {
        assert!(
            text.contains(&format!("-> thread.name: {name}")),
            "thread {name} in the collector's log:\n{text}"
        );
    }
}

/// `kiln run --otlp-endpoint`: once stored, the run's profile reaches the Collector with
/// this host and the run as its resource, every sample record of the stored profile in
/// it.
#[test]
fn a_run_sends_its_profiles_with_host_and_run_attributes() {
    let Some(bin) = otelcol() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (col, port, log) = start_collector(&bin, dir.path());
    let exe = kiln_testkit::build_hot(dir.path(), &["-O2", "-fno-inline"]);
    let mut target = std::process::Command::new(&exe).arg("30").spawn().unwrap();
    let store = dir.path().join("runs.db");
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = kiln()
        .current_dir(dir.path())
        .env("KILN_STORE", &store)
        .args(["run", "--name", "otlp-run", "--tag", "site=lab", "-d", "1"])
        .args(["--no-report", "--otlp-endpoint", &endpoint, "-p"])
        .arg(target.id().to_string())
        .args(["exec", "--", "sleep", "600"])
        .output()
        .unwrap();
    // A collector that is not there: the run is stored all the same, the request kept,
    // and kiln exits 1.
    let gone = kiln_testkit::free_port().unwrap();
    let failed = kiln()
        .current_dir(dir.path())
        .env("KILN_STORE", &store)
        .args(["run", "--name", "unsent", "-d", "1", "--no-report"])
        .args(["--otlp-endpoint", &format!("http://127.0.0.1:{gone}"), "-p"])
        .arg(target.id().to_string())
        .args(["exec", "--", "sleep", "600"])
        .output()
        .unwrap();
    // The target started above, stopped by its PID.
    let _ = target.kill();
    let _ = target.wait();
    let e = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{e}");
    assert!(
        e.contains("kiln run: the OTLP export failed") && e.contains("kept in kiln-unsent-"),
        "{e}"
    );
    assert!(
        String::from_utf8_lossy(&failed.stdout).contains("unsent"),
        "the run's summary"
    );
    let unsent = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|f| {
            f.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("kiln-unsent-")
        })
        .count();
    assert_eq!(unsent, 1);
    let o = kiln()
        .env("KILN_STORE", &store)
        .args(["runs", "--json"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("\"unsent\""),
        "stored: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("kiln run: 1 profile (")
            && stderr.contains(&format!("sent to {endpoint}/v1development/profiles")),
        "{stderr}"
    );
    // The stored run's profile, as kiln reads it back from the store.
    let kept = dir.path().join("stored.kiln");
    let o = kiln()
        .env("KILN_STORE", &store)
        .args(["collapse", "-q", "run:otlp-run", "-o"])
        .arg(&kept)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let kp = kiln_formats::read(Some(&kept), &Default::default())
        .unwrap()
        .collapsed
        .profile;
    let records: BTreeSet<(u32, u32)> = (0..kp.samples.len())
        .map(|i| (kp.samples.stack[i].0, kp.samples.thread[i].0))
        .collect();
    assert!(!records.is_empty());
    let want = format!("\"sample records\": {}", records.len());
    let text = log_with(
        &log,
        &[
            &want,
            "-> kiln.run.tag.site: Str(lab)",
            "-> thread.name: hot",
        ],
    );
    drop(col);
    assert!(
        text.contains(&want),
        "want {want} in the collector's log:\n{text}"
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for attr in [
        format!("-> host.name: Str({})", host.trim()),
        "-> kiln.run.id: Int(1)".to_string(),
        "-> kiln.run.name: Str(otlp-run)".to_string(),
        "-> kiln.run.repeat: Str(1/1)".to_string(),
        format!("-> kiln.run.store: Str({})", store.display()),
        "-> kiln.run.tag.site: Str(lab)".to_string(),
        "-> thread.name: hot".to_string(),
    ] {
        assert!(
            text.contains(&attr),
            "{attr} in the collector's log:\n{text}"
        );
    }
}

/// A collector that is not there: the command fails saying so, and what it measured is
/// kept in a file that a later `curl` can send.
#[test]
fn an_absent_collector_keeps_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let exe = kiln_testkit::build_hot(dir.path(), &["-O2", "-fno-inline"]);
    let port = kiln_testkit::free_port().unwrap();
    let out = kiln()
        .current_dir(dir.path())
        .args(["record", "-e", "cpu", "--otlp-endpoint"])
        .arg(format!("http://127.0.0.1:{port}/"))
        .arg("--")
        .arg(&exe)
        .arg("0.2")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty(), "sent, not written to stdout");
    assert!(
        stderr.contains(&format!(
            "the OTLP export failed: http://127.0.0.1:{port}/v1development/profiles"
        )) && stderr.contains("kept in kiln-unsent-"),
        "{stderr}"
    );
    let kept: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("kiln-unsent-")
        })
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    // OpenTelemetry's own bindings read it: the recording's CPU profile and its stacks.
    if have_go() {
        let text = decode(dir.path(), &kept[0]);
        assert!(
            text.lines().any(|l| l.starts_with("profile cpu-clock ")),
            "{text}"
        );
        assert!(text.lines().any(|l| l.starts_with("stack ")), "{text}");
    }
    // A URL that is not one: refused before anything is recorded.
    let out = kiln()
        .args([
            "record",
            "-e",
            "cpu",
            "--otlp-endpoint",
            "127.0.0.1:4318",
            "--",
        ])
        .arg(&exe)
        .arg("0.2")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("--otlp-endpoint") && e.contains("127.0.0.1:4318"),
        "{e}"
    );
}
