//! `kiln run --variant` end to end: interleaved variants of one experiment against a real
//! target built here (the ticker), on a machine a CPU hog of the test's own makes drift
//! halfway, and `kiln compare` of the variants paired by round.
use kiln_testkit::json;
use kiln_testkit::row;
use kiln_testkit::Started;
use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use kiln_testkit::kiln_in as kiln;

fn stored(store: &Path) -> usize {
    let out = kiln(store).args(["runs", "--json"]).output().unwrap();
    // Nothing (or no store yet) before the first run is stored.
    serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|v| v.as_array().map(Vec::len))
        .unwrap_or(0)
}

fn compare(store: &Path, extra: &[&str]) -> (Value, std::process::Output) {
    let out = kiln(store)
        .args(["compare", "a", "b", "--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    let v = json(&out.stdout);
    (v, out)
}

/// CPU hogs of the test's own (one per CPU), killed by PID when dropped.
struct Hogs(Vec<Child>);

impl Hogs {
    fn start() -> Hogs {
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        Hogs(
            (0..n)
                .map(|_| {
                    std::process::Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .stdout(Stdio::null())
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The runs of one experiment as the store keeps them: each variant a group under its
/// name, every run with the experiment and its round, in ABBA order.
fn check_stored(store: &Path, rounds: usize) {
    let out = kiln(store).args(["runs", "--json"]).output().unwrap();
    kiln_testkit::succeeded(&out);
    let runs = json(&out.stdout);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2 * rounds);
    let mut order: Vec<(u64, String)> = runs
        .iter()
        .map(|r| {
            (
                r["id"].as_u64().unwrap(),
                r["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    order.sort();
    let names: Vec<&str> = order.iter().map(|(_, n)| n.as_str()).collect();
    let abba: Vec<&str> = ["a", "b", "b", "a"]
        .into_iter()
        .cycle()
        .take(2 * rounds)
        .collect();
    assert_eq!(names, abba);
    let experiments: Vec<&Value> = runs.iter().map(|r| &r["experiment"]).collect();
    assert!(
        experiments
            .iter()
            .all(|e| e.is_string() && *e == experiments[0]),
        "{experiments:?}"
    );
    for r in runs {
        assert!(
            r["round"]
                .as_u64()
                .is_some_and(|n| (1..=rounds as u64).contains(&n)),
            "{r}"
        );
        assert_eq!(r["commands"][0]["role"], "setup", "{r}");
        assert_eq!(r["commands"][0]["exit_code"], 0, "{r}");
    }
}

/// An A/A experiment on a machine that changes under it, halfway: the target's work drops
/// to a quarter after the 6th run (sent by --after-each, exactly between rounds 3 and 4:
/// a drift as large as a real change), and CPU hogs of the test's own (one per CPU) start
/// once those runs are stored. Run one group after the other across the same drift, the
/// A/A fires the gate; interleaved, kiln compare pairs the runs by round, says so, and no
/// gate fires in either direction.
#[test]
fn an_aa_experiment_under_drift_is_paired_and_fires_no_gate() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let exe = kiln_testkit::build_ticker(dir.path());
    let t = Started::new(&exe, &["40"]);
    let pid = t.pid();
    // The control: two groups one after the other, the drift between them.
    for (name, then) in [("seq-a", "USR1"), ("seq-b", "USR2")] {
        kiln(&store)
            .args([
                "run",
                "--name",
                name,
                "--repeat",
                "6",
                "-d",
                "1",
                "--no-report",
            ])
            .args(["-p", &pid, "exec", "--", "sleep", "600"])
            .timeout(Duration::from_secs(300))
            .assert()
            .success();
        kiln_testkit::succeeded(
            &std::process::Command::new("kill")
                .args([&format!("-{then}"), &pid])
                .output()
                .unwrap(),
        );
    }
    let out = kiln(&store)
        .args(["compare", "seq-a", "seq-b", "--fail-if", "target_cpu<-10%"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    eprintln!("A/A one group after the other: {said}");
    assert_eq!(out.status.code(), Some(3), "{said}");
    kiln(&store)
        .args(["runs", "rm", "seq-a", "seq-b"])
        .assert()
        .success();
    // The experiment: the same drift after its 6th run.
    let count = dir.path().join("count");
    let drift = format!(
        "n=$(($(cat {c} 2>/dev/null || echo 0) + 1)); echo $n > {c}; if [ $n -eq 6 ]; then kill -USR1 {pid}; fi",
        c = count.display()
    );
    let mut run = kiln_testkit::kiln_process();
    run.env("KILN_STORE", &store)
        .args(["run", "--variant", "a=true", "--variant", "b=true"])
        .args(["--after-each", &drift])
        .args(["--repeat", "6", "-d", "1", "--no-report", "-p"])
        .arg(&pid)
        .args(["exec", "--", "sleep", "600"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = run.spawn().unwrap();
    // Halfway (3 rounds of 2 variants stored), the machine gets busy.
    let deadline = Instant::now() + Duration::from_secs(300);
    while stored(&store) < 6 {
        if Instant::now() >= deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "6 runs not stored in 300 s ({} stored; kiln ended: {}):\n{}",
                stored(&store),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let hogs = Hogs::start();
    let out = child.wait_with_output().unwrap();
    drop(hogs);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("kiln compare a b"));
    check_stored(&store, 6);
    let (cmp, out) = compare(&store, &[]);
    kiln_testkit::succeeded(&out);
    let cpu = row(&cmp, "target_cpu");
    let change = &cpu["changes"][1];
    eprintln!(
        "A/A under drift: a {} b {} change {change}",
        cpu["groups"][0]["values"], cpu["groups"][1]["values"]
    );
    assert_eq!(change["paired"]["rounds"], 6, "{change}");
    assert!(
        cmp["notes"]
            .to_string()
            .contains("paired by round (interleaved experiment a/b@")
            && cmp["notes"]
                .to_string()
                .contains("6 rounds): Wilcoxon signed-rank"),
        "{}",
        cmp["notes"]
    );
    for gate in ["target_cpu>+10%", "target_cpu<-10%"] {
        let out = kiln(&store)
            .args(["compare", "a", "b", "--fail-if", gate])
            .output()
            .unwrap();
        assert_ne!(
            out.status.code(),
            Some(3),
            "{gate}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A real change made by the variants' set-up commands (a signal cutting the target's
/// variable work to a quarter, and one restoring it) is found round by round, with its
/// interval (8 rounds: on a machine this busy a round's runs can be starved in turn, and
/// 8 rounds still reach p < 0.05 with one round the other way, where 6 cannot); and a set-up that fails stops the experiment, naming the variant, the
/// command and its status, with the runs made before it stored.
#[test]
fn an_ab_experiment_finds_the_change_with_its_interval() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let exe = kiln_testkit::build_ticker(dir.path());
    let t = Started::new(&exe, &["40"]);
    let pid = t.pid();
    kiln(&store)
        .arg("run")
        .arg("--variant")
        .arg(format!("a=kill -USR2 {pid}"))
        .arg("--variant")
        .arg(format!("b=kill -USR1 {pid}; echo quarter"))
        .args(["--repeat", "8", "-d", "1", "--no-report", "-p", &pid])
        .args(["--after-each", "echo after"])
        .args(["exec", "--", "sleep", "600"])
        .timeout(Duration::from_secs(400))
        .assert()
        .success();
    check_stored(&store, 8);
    let (cmp, out) = compare(&store, &[]);
    kiln_testkit::succeeded(&out);
    let cpu = row(&cmp, "target_cpu");
    let change = &cpu["changes"][1];
    eprintln!(
        "A/B: a {} b {} change {change}",
        cpu["groups"][0]["values"], cpu["groups"][1]["values"]
    );
    assert_eq!(change["verdict"], "improved", "{change}");
    assert_eq!(change["paired"]["rounds"], 8, "{change}");
    let ci = &change["paired"]["ci_pct"];
    let (low, high) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
    let pct = change["percent"].as_f64().unwrap();
    // A quarter of 80% of the work: about -60%; the interval around the estimate, below 0.
    assert!(low <= pct && pct <= high && high < -20.0, "{change}");
    // The text says the interval and the analysis.
    kiln(&store)
        .args(["compare", "a", "b"])
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "[{low:+.1}, {high:+.1}] improved"
        )))
        .stdout(predicate::str::contains("paired by round"));
    kiln(&store)
        .args(["compare", "a", "b", "--fail-if", "target_cpu<-10%"])
        .assert()
        .code(3);
    // The set-up's output is kept with the run.
    let first_b = {
        let out = kiln(&store).args(["runs", "--json"]).output().unwrap();
        let runs = json(&out.stdout);
        runs.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "b")
            .unwrap()["id"]
            .as_u64()
            .unwrap()
    };
    let file = dir.path().join("setup.out");
    kiln(&store)
        .args([
            "runs",
            "attachment",
            &first_b.to_string(),
            "setup.stdout",
            "-o",
        ])
        .arg(&file)
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "quarter\n");
    // A set-up that fails in round 1: the run before it stays.
    kiln(&store)
        .args([
            "run",
            "--variant",
            "c=true",
            "--variant",
            "d=echo no >&2; exit 7",
        ])
        .args(["--repeat", "6", "-d", "1", "--no-report", "-p", &pid])
        .args(["exec", "--", "sleep", "600"])
        .timeout(Duration::from_secs(120))
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "variant 'd': its set-up command `echo no >&2; exit 7` exited with status 7",
        ))
        .stderr(predicate::str::contains(
            "the 1 run(s) made before it are stored",
        ));
    assert_eq!(stored(&store), 17);
}

/// Two builds side by side: each variant its own target (--variant-pid, no -p), in a
/// random order per round from a seed; each run profiles its variant's process.
#[test]
fn variants_with_their_own_targets_in_a_seeded_random_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let exe = kiln_testkit::build_ticker(dir.path());
    let (full, quarter) = (Started::new(&exe, &["40"]), Started::new(&exe, &["10"]));
    kiln(&store)
        .args(["run", "--variant", "full=", "--variant", "quarter="])
        .arg("--variant-pid")
        .arg(format!("full={}", full.pid()))
        .arg("--variant-pid")
        .arg(format!("quarter={}", quarter.pid()))
        .args(["--order", "random", "--seed", "3", "--repeat", "2"])
        .args(["-d", "1", "--no-report", "exec", "--", "sleep", "600"])
        .timeout(Duration::from_secs(200))
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "2 round(s) can never show a change",
        ));
    let out = kiln(&store).args(["runs", "--json"]).output().unwrap();
    kiln_testkit::succeeded(&out);
    let runs = json(&out.stdout);
    let mut runs: Vec<&Value> = runs.as_array().unwrap().iter().collect();
    runs.sort_by_key(|r| r["id"].as_u64());
    assert_eq!(runs.len(), 4);
    for r in &runs {
        let (pid, units) = match r["name"].as_str().unwrap() {
            "full" => (full.pid(), "40"),
            "quarter" => (quarter.pid(), "10"),
            other => panic!("a run named {other}"),
        };
        assert_eq!(r["target"]["pids"][0].to_string(), pid, "{r}");
        assert_eq!(r["target"]["cmdline"][1], units, "{r}");
    }
    // Each round one run of each variant, in the order seed 3 gives.
    let order: Vec<(u64, &str)> = runs
        .iter()
        .map(|r| (r["round"].as_u64().unwrap(), r["name"].as_str().unwrap()))
        .collect();
    let steps = kiln_run::variants::schedule(2, 2, kiln_run::variants::Order::Random(3));
    let names = ["full", "quarter"];
    let want: Vec<(u64, &str)> = steps
        .iter()
        .map(|s| (u64::from(s.round), names[s.variant]))
        .collect();
    assert_eq!(order, want);
}
