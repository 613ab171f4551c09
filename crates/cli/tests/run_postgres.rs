//! `kiln run`, `kiln runs` and `kiln compare` with a shared PostgreSQL store (Debian's
//! PostgreSQL 15 started here, private, on 127.0.0.1): two machines' runs saved at once
//! and compared, a server restarted during a run, and one that stays away (the run kept
//! in a local file, pushed later).
use assert_cmd::Command;
use kiln_testkit::Started;
use kiln_testkit::{have_postgres, Postgres};
use kiln_testkit::{json, runs};
use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

/// `kiln` with `KILN_STORE` set to `store`, in `dir`.
fn kiln(store: &str, dir: &Path) -> Command {
    let mut c = kiln_testkit::kiln();
    c.env("KILN_STORE", store).current_dir(dir);
    c
}

/// A `kiln run` in the background, on `machine` (a tag), into `store` (`--store`).
fn spawn_run(
    store: &str,
    dir: &Path,
    name: &str,
    machine: &str,
    pid: &str,
    args: &[&str],
) -> Child {
    kiln_testkit::kiln_process()
        .current_dir(dir)
        .env_remove("KILN_STORE")
        .args(["run", "--store", store, "--name", name, "--tag"])
        .arg(format!("machine={machine}"))
        .args(args)
        .args(["-p", pid, "exec", "--", "sleep", "600"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(c: Child) -> (std::process::ExitStatus, String, String) {
    let out = c.wait_with_output().unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The number of kiln sessions on the server matching `filter` (SQL).
fn kiln_sessions(pg: &Postgres, filter: &str) -> String {
    let out = std::process::Command::new(format!("{}/psql", kiln_testkit::POSTGRES_BIN))
        .args(["-X", "-A", "-t", "-d", &pg.url("postgres"), "-c"])
        .arg(format!(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'kiln' {filter}"
        ))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn wait_for(what: &str, ok: impl FnMut() -> bool) {
    assert!(
        kiln_testkit::poll_until(Duration::from_secs(60), ok).is_some(),
        "{what}"
    );
}

/// Starts a `kiln run` (as [`spawn_run`]) and returns once it has opened its store: its
/// session is idle after reading the schema's version (or creating the schema).
fn spawn_run_and_await_store(
    pg: &Postgres,
    store: &str,
    dir: &Path,
    name: &str,
    pid: &str,
    args: &[&str],
) -> Child {
    // No session left from an earlier kiln, so that the one seen is this run's.
    wait_for("earlier kiln sessions never ended", || {
        kiln_sessions(pg, "") == "0"
    });
    let c = spawn_run(store, dir, name, "test-box", pid, args);
    wait_for("kiln run never opened its store", || {
        // Its last statement opening the store: the transaction that checks the listing
        // trigger (committed, or rolled back when it was there). Not the schema's check
        // before it: a server stopped between the two is one kiln could not open (seen on
        // a machine busy with another suite: 'run store …: Connection refused').
        kiln_sessions(pg, "AND state = 'idle' AND query IN ('COMMIT', 'ROLLBACK')") != "0"
    });
    c
}

#[test]
fn two_machines_record_into_one_store_and_compare() {
    if !have_postgres() {
        return;
    }
    let pg = Postgres::start().unwrap();
    let url = pg.create_database("team").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let exe = kiln_testkit::build_ticker(dir.path());
    let (ta, tb) = (Started::new(&exe, &["40"]), Started::new(&exe, &["10"]));
    // Two machines saving into one store at once.
    let a = spawn_run(
        &url,
        dir.path(),
        "a",
        "test-box",
        &ta.pid(),
        &["-d", "2", "--repeat", "2"],
    );
    let b = spawn_run(
        &url,
        dir.path(),
        "b",
        "laptop",
        &tb.pid(),
        &["-d", "2", "--repeat", "2"],
    );
    for c in [a, b] {
        let (st, out, err) = finish(c);
        assert!(st.success(), "{out}\n{err}");
        let shown = url.trim_start_matches("postgres://");
        assert!(
            out.contains(&format!("stored in postgres://{shown}")),
            "{out}"
        );
        // The report goes to the working directory.
        assert!(err.contains("kiln run: report ./"), "{err}");
    }
    let all = runs(Path::new(&url));
    assert_eq!(all.len(), 4);
    let mut ids: Vec<i64> = all.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 4, "distinct ids");
    for r in &all {
        let machine = if r["name"] == "a" {
            "test-box"
        } else {
            "laptop"
        };
        assert_eq!(r["tags"], serde_json::json!([["machine", machine]]), "{r}");
        let report = dir
            .path()
            .join(format!("{}-{}.html", r["name"].as_str().unwrap(), r["id"]));
        assert!(report.exists(), "{}", report.display());
    }
    // `kiln runs` lists both machines' runs; --store works as KILN_STORE does.
    kiln_testkit::kiln()
        .args(["runs", "--store", &url])
        .assert()
        .success()
        .stdout(predicate::str::contains(" a ").and(predicate::str::contains(" b ")));
    // Compared across machines: a quarter of the variable work, less target CPU.
    let out = kiln(&url, dir.path())
        .args(["compare", "a", "b", "--format", "json"])
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out);
    let cmp = json(&out.stdout);
    let cpu = cmp["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "target_cpu")
        .unwrap_or_else(|| panic!("{cmp:#}"));
    let pct = cpu["changes"][1]["percent"].as_f64().unwrap();
    assert!(pct < -30.0, "target CPU change {pct}%: {cpu}");
    assert!(cmp["functions"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["name"] == "variable_work"));
    // A stored run is a profile input from the shared store too.
    kiln(&url, dir.path())
        .args(["collapse", "run:a"])
        .assert()
        .success()
        .stdout(predicate::str::contains("variable_work"));
    kiln(&url, dir.path())
        .args(["runs", "show", "b"])
        .assert()
        .success()
        .stdout(predicate::str::contains("tags: machine=laptop"));
    // Exported from the shared store: the one-file SQLite store, readable anywhere.
    let file = dir.path().join("a.kiln");
    kiln(&url, dir.path())
        .args(["runs", "export", "a", "-o"])
        .arg(&file)
        .assert()
        .success();
    assert!(std::fs::read(&file)
        .unwrap()
        .starts_with(b"SQLite format 3\0"));
    let local = file.to_str().unwrap();
    assert_eq!(runs(Path::new(local)).len(), 2);
    // Removed from the shared store.
    kiln(&url, dir.path())
        .args(["runs", "rm", "b"])
        .assert()
        .success();
    assert_eq!(runs(Path::new(&url)).len(), 2);
    // A database without a store: nothing to list, and a reader creates nothing.
    let empty = pg.create_database("empty").unwrap();
    kiln(&empty, dir.path())
        .arg("runs")
        .assert()
        .success()
        .stderr(predicate::str::contains("no runs yet"));
    kiln(&empty, dir.path())
        .args(["compare", "a", "b"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("no run store at"));
}

#[test]
fn a_server_restarted_during_a_run_or_gone_loses_no_run() {
    if !have_postgres() {
        return;
    }
    let mut pg = Postgres::start().unwrap();
    // With a password in the URL (trust authentication ignores it): never printed.
    let url = format!("postgres://kiln:s3cret@127.0.0.1:{}/postgres", pg.port());
    let dir = tempfile::tempdir().unwrap();
    let exe = kiln_testkit::build_ticker(dir.path());
    let t = Started::new(&exe, &["10"]);

    // Restarted while the run measures: saved in the store once it is back.
    let c = spawn_run_and_await_store(&pg, &url, dir.path(), "restarted", &t.pid(), &["-d", "3"]);
    pg.restart().unwrap();
    let (st, out, err) = finish(c);
    assert!(st.success(), "{out}\n{err}");
    assert!(!err.contains("kept in"), "{err}");
    let all = runs(Path::new(&url));
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["name"], "restarted");

    // Stopped during the run and still away after the retries: kept in a local file,
    // with a message saying where and how to push it; the exit status says so.
    let c = spawn_run_and_await_store(&pg, &url, dir.path(), "away", &t.pid(), &["-d", "3"]);
    pg.stop();
    let (st, out, err) = finish(c);
    assert_eq!(st.code(), Some(1), "{out}\n{err}");
    let fallback = dir.path().join("kiln-unsaved-runs.db");
    assert!(
        err.contains("the run is kept in kiln-unsaved-runs.db as #1")
            && err.contains("Connection refused")
            && err.contains(
                "kiln runs import kiln-unsaved-runs.db --store 'postgres://kiln@127.0.0.1:"
            ),
        "{err}"
    );
    assert!(!err.contains("s3cret") && !out.contains("s3cret"), "{err}");
    assert!(
        out.contains("stored in kiln-unsaved-runs.db as #1"),
        "{out}"
    );
    assert!(fallback.exists());
    assert_eq!(runs(&fallback)[0]["name"], "away");
    // Pushed once the server is back.
    pg.start_again().unwrap();
    kiln(&url, dir.path())
        .args(["runs", "import", "kiln-unsaved-runs.db"])
        .assert()
        .success();
    let names: Vec<Value> = runs(Path::new(&url))
        .iter()
        .map(|r| r["name"].clone())
        .collect();
    assert_eq!(names, ["restarted", "away"]);
    kiln(&url, dir.path())
        .args(["compare", "restarted", "away", "--format", "json"])
        .assert()
        .success();
}
