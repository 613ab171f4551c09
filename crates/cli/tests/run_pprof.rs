//! `kiln run --pprof`: a Go server's own profiles of the measurement window, fetched from
//! its net/http/pprof endpoint, stored beside kiln's and shown in the report; `go tool
//! pprof` as the oracle on the stored pprof bytes.
use common::*;
use kiln_store::{RunData, SqliteStore, Store};
use kiln_testkit::go_oracle as common;
use kiln_testkit::GoBlockCache;

use kiln_testkit::kiln_in as kiln;

fn profile<'a>(run: &'a RunData, event: &str) -> &'a kiln_model::Profile {
    run.profiles
        .iter()
        .find(|p| p.event.name == event)
        .unwrap_or_else(|| {
            let names: Vec<&str> = run.profiles.iter().map(|p| p.event.name.as_str()).collect();
            panic!("no profile '{event}' in {names:?}")
        })
}

fn total(p: &kiln_model::Profile) -> u64 {
    p.total_weight()
}

#[test]
fn a_go_servers_own_profiles_of_the_window_are_kept_beside_kilns() {
    if !have_go() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    // The report goes where the browser checks (web/tests/report.mjs) look for it.
    let pages = dir.path().join("pages");
    std::fs::create_dir_all(&pages).unwrap();
    let html = pages.join("pprof.html");
    // Every contention and every blocking event recorded: Go's mutex and block profiles.
    let mut server = GoBlockCache::start(
        4.0,
        &[
            "-data-mb",
            "64",
            "-mutex-profile-fraction",
            "1",
            "-block-profile-rate",
            "1",
        ],
    )
    .expect("go example starts");
    let base = server.url("/debug/pprof/");
    let dead = format!(
        "http://127.0.0.1:{}/debug/pprof/",
        kiln_testkit::unused_port()
    );
    // The server is up but serves no pprof there: 404s.
    let missing = server.url("/nope/");
    let window_s = 4u64;
    // The warm-up's contention happens before the window: the stored mutex and block
    // profiles must leave it out.
    let out = kiln(&db)
        .args(["run", "--name", "pp", "-p", &server.pid().to_string()])
        .args([
            "-e",
            "cpu,offcpu",
            "-d",
            &window_s.to_string(),
            "--warmup",
            "3",
        ])
        .arg("--pprof")
        .arg(format!("{base},{dead},{missing}"))
        .arg("--report")
        .arg(&html)
        .args(["load", "http", "-c", "16", "-t", "1", "-d", "60s"])
        .arg(server.url("/query?city={rand:0-255}"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kiln run failed: {stderr}");
    // What Go counted since the server started, fetched after the run.
    let since_start = |kind: &str| {
        let f = dir.path().join(format!("{kind}-absolute.pb.gz"));
        let o = go()
            .args(["tool", "pprof", "-proto", "-output"])
            .arg(&f)
            .arg(server.url(&format!("/debug/pprof/{kind}")))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        raw(&f)
    };
    let mutex_absolute = since_start("mutex");
    let block_absolute = since_start("block");
    server.stop();

    let store = SqliteStore::open_existing(&db).unwrap();
    let id = store.list().unwrap()[0].id.unwrap();
    let run = store.load(id).unwrap();
    let m = &run.meta;
    assert!(m.status.complete, "{:?}", m.status);
    let tag = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .replace(':', "_");
    let ev = |e: &str| format!("pprof {e} ({tag})");

    // The unreachable endpoint: warnings naming it, in the run and on stderr; nothing else lost.
    let dead_warnings: Vec<&String> = m.warnings.iter().filter(|w| w.contains(&dead)).collect();
    assert_eq!(dead_warnings.len(), 5, "{:#?}", m.warnings);
    assert!(
        dead_warnings.iter().all(|w| w.contains("refused")),
        "{dead_warnings:#?}"
    );
    assert!(
        stderr.contains(&format!("warning: pprof: {dead}mutex")),
        "{stderr}"
    );
    assert!(
        !m.warnings
            .iter()
            .any(|w| w.contains(&base) && w.contains("window's")),
        "{:#?}",
        m.warnings
    );

    // Every stored profile is what go tool pprof reads in its stored bytes, stack by stack.
    let names: Vec<String> = run.attachments.iter().map(|a| a.name.clone()).collect();
    for kind in ["cpu", "mutex", "block", "heap", "goroutine"] {
        let name = format!("pprof-{tag}-{kind}.pb.gz");
        assert!(names.contains(&name), "no attachment {name} in {names:?}");
        let file = dir.path().join(&name);
        kiln(&db)
            .args(["runs", "attachment", "pp", &name, "-o"])
            .arg(&file)
            .assert()
            .success();
        let r = raw(&file);
        let types: &[(&str, &str)] = match kind {
            "cpu" => &[("cpu", "cpu")],
            "mutex" => &[
                ("mutex delay", "delay"),
                ("mutex contentions", "contentions"),
            ],
            "block" => &[
                ("block delay", "delay"),
                ("block contentions", "contentions"),
            ],
            "heap" => &[
                ("heap alloc space", "alloc_space"),
                ("heap inuse space", "inuse_space"),
            ],
            _ => &[("goroutine", "goroutine")],
        };
        for (event, ty) in types {
            let p = profile(&run, &ev(event));
            let mut oracle = r.folded(r.index(ty));
            // A goroutine without a stack (Go lists one at times) is kept under a
            // `[no stack]` frame, as go tool pprof counts it in every total (named by
            // its first word, as raw_names names every frame).
            if let Some(v) = oracle.remove("") {
                *oracle.entry("[no".to_string()).or_default() += v;
            }
            assert_eq!(raw_names(p), oracle, "{event}: kiln and go tool pprof -raw");
            assert!(total(p) > 0, "{event} is empty");
        }
    }

    // Mutex and block: the window only (end minus start), not since the server started.
    for (kind, absolute) in [("mutex", &mutex_absolute), ("block", &block_absolute)] {
        let delay = total(profile(&run, &ev(&format!("{kind} delay")))) as i64;
        let all = absolute.total(absolute.index("delay"), &[]);
        assert!(
            delay < all,
            "{kind}: the window's delay {delay} ns is not less than the process's {all} ns"
        );
        let n = total(profile(&run, &ev(&format!("{kind} contentions")))) as i64;
        let all_n = absolute.total(absolute.index("contentions"), &[]);
        assert!(
            n < all_n,
            "{kind}: {n} contentions in the window, {all_n} in all"
        );
    }
    // The block profile says what the seed's engineer was looking for: goroutines waiting
    // for the block cache's mutex.
    let block = profile_folded(profile(&run, &ev("block delay")));
    let on_lock: i64 = block
        .iter()
        .filter(|(s, _)| s.contains("blockCache") && s.contains("sync.(*Mutex).Lock"))
        .map(|(_, v)| v)
        .sum();
    let all: i64 = block.values().sum();
    assert!(on_lock * 2 > all, "the cache's lock: {on_lock} of {all} ns");

    // kiln's off-CPU view of the same seconds sees the same wait: time blocked under the
    // cache's get (the lock, or the read made while holding it).
    let offcpu = profile_folded(profile(&run, "offcpu"));
    assert!(
        offcpu.keys().any(|s| s.contains("blockCache")),
        "kiln's off-CPU profile has the block cache"
    );

    // Go's CPU profile covers the window: no more CPU time than the machine's CPUs had in
    // it, and of the order of what /proc says the target used.
    let cpu_ns = total(profile(&run, &ev("cpu"))) as f64;
    let window_ns = m.measure.seconds() * 1e9;
    assert!(
        cpu_ns <= window_ns * f64::from(m.cpus) * 1.1,
        "{cpu_ns} ns of CPU in {window_ns} ns on {} CPUs",
        m.cpus
    );
    let proc_ns = m.headline.target_cpu_s.unwrap() * 1e9;
    assert!(
        cpu_ns > proc_ns * 0.3 && cpu_ns < proc_ns * 1.3,
        "Go's CPU profile {cpu_ns} ns, /proc {proc_ns} ns"
    );
    let cpu_raw = raw(&dir.path().join(format!("pprof-{tag}-cpu.pb.gz")));
    assert!(cpu_raw.total(cpu_raw.index("cpu"), &[]) > 0);

    // The report shows them, beside kiln's, saying where they come from: in headless
    // Chromium, as a reader sees the page.
    let page = std::fs::read_to_string(&html).unwrap();
    for e in ["cpu", "mutex delay", "block delay", "goroutine"] {
        assert!(page.contains(&ev(e)), "the report lacks '{}'", ev(e));
    }
    kiln_testkit::run_browser_checks("report.mjs", &pages);
}

#[test]
fn bad_pprof_urls_and_names_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let pid = std::process::id().to_string();
    let out = kiln(&db)
        .args(["run", "-p", &pid, "-d", "1", "--pprof", "localhost:6060"])
        .args(["exec", "--", "true"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--pprof") && e.contains("localhost:6060"), "{e}");
    // No such run, no such attachment: errors that say what there is.
    let out = kiln(&db)
        .args(["runs", "attachment", "nothing", "x", "-o", "/dev/null"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

/// The seed's plateau in kiln's words: a concurrency sweep of the Go example under
/// `--pprof` names the lock behind it (Go's block profile of the same seconds, which `go
/// tool pprof` reads the same in the file kiln kept), and the thread-level waits lead with
/// the program's code, not the goroutine serving kiln's own profile request.
#[test]
fn the_summary_names_the_lock_behind_the_plateau() {
    if !have_go() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let server = GoBlockCache::start(
        4.0,
        &[
            "-data-mb",
            "64",
            "-mutex-profile-fraction",
            "1",
            "-block-profile-rate",
            "1",
        ],
    )
    .expect("go example starts");
    let out = kiln(&db)
        .args(["run", "--name", "lock", "-p", &server.pid().to_string()])
        .args(["-e", "cpu,offcpu", "-d", "5", "--no-report"])
        .arg("--pprof")
        .arg(server.url("/debug/pprof/"))
        .args(["load", "http", "-t", "1", "-d", "2s"])
        .args(["--concurrency-sweep", "2,16"])
        .arg(server.url("/query?city={rand:0-255}"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kiln run failed: {stderr}\n{stdout}");

    // The first finding is the lock, at the program's frame that takes it (at the step
    // where the sweep broke, when it broke within the two steps).
    let first = stdout
        .lines()
        .skip_while(|l| !l.starts_with("  findings"))
        .nth(1)
        .unwrap_or_else(|| panic!("no findings:\n{stdout}"));
    assert!(
        first.contains("lock") && first.contains("main.(*blockCache).get"),
        "the first finding is not the cache's lock: {first}\n{stdout}"
    );
    // kiln's words: the lock and its caller, and its share of Go's block delay.
    let lead = "goroutines waited in sync.(*Mutex).Lock under main.(*blockCache).get: ";
    let line = stdout
        .lines()
        .find(|l| l.contains("goroutines waited in"))
        .unwrap_or_else(|| panic!("no Go wait in the summary:\n{stdout}"));
    assert!(
        line.contains(lead),
        "the first Go wait is not the cache's lock: {line}"
    );
    let kiln_share: f64 = line
        .split(lead)
        .nth(1)
        .and_then(|r| r.split('%').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no share in '{line}'"));
    assert!(
        stdout.contains("park without blocking a thread"),
        "the summary says why kiln's off-CPU view cannot show it:\n{stdout}"
    );
    assert!(
        stdout.contains("contended: sync.(*Mutex).Unlock under main.(*blockCache).get"),
        "{stdout}"
    );

    // The independent account: go tool pprof on the block profile kiln kept.
    let file = dir.path().join("block.pb.gz");
    kiln(&db)
        .args(["runs", "attachment", "lock", "pprof-block.pb.gz", "-o"])
        .arg(&file)
        .assert()
        .success();
    let r = raw(&file);
    let delay = r.folded(r.index("delay"));
    let all: i64 = delay.values().sum();
    let on_lock: i64 = delay
        .iter()
        .filter(|(s, _)| s.contains("main.(*blockCache).get;sync.(*Mutex).Lock"))
        .map(|(_, v)| v)
        .sum();
    assert!(all > 0, "go tool pprof finds no block delay");
    let go_share = on_lock as f64 * 100.0 / all as f64;
    assert!(
        go_share > 50.0,
        "go tool pprof: the lock is {go_share:.1}% of the delay"
    );
    assert!(
        (go_share - kiln_share).abs() <= 0.1,
        "kiln says {kiln_share}%, go tool pprof {go_share:.2}%"
    );

    // Thread-level waits: the program's code first; kiln's own request on its own line.
    let mut lines = stdout.lines();
    lines
        .find(|l| l.contains("where threads waited"))
        .unwrap_or_else(|| panic!("no 'where threads waited':\n{stdout}"));
    let first = lines.next().unwrap_or_default();
    assert!(
        first.contains("main.") && !first.contains("runtime.futex"),
        "the first wait is not the program's: '{first}'\n{stdout}"
    );
    // When kiln's off-CPU profile caught the goroutine serving kiln's profile request
    // (runtime/pprof's writer blocks a thread on the CPU profile's buffer), it is named.
    let store = SqliteStore::open_existing(&db).unwrap();
    let run = store.load(store.list().unwrap()[0].id.unwrap()).unwrap();
    let offcpu = profile_folded(profile(&run, "offcpu"));
    if offcpu
        .keys()
        .any(|s| s.contains("runtime/pprof.") || s.contains("net/http/pprof."))
    {
        assert!(
            stdout.contains("kiln's pprof requests "),
            "kiln's own request is not named:\n{stdout}"
        );
    }

    // Where the sweep found the plateau, the target's CPU is judged against what it can
    // use: here the machine's cores (the Go server has more threads than cores, no
    // quota), as /proc/stat counts them; "short of CPU" only with the machine's busy
    // share and the others named.
    if let Some(v) = stdout.lines().find(|l| {
        l.contains("throughput stops growing at")
            || l.contains("throughput stops following the connections at")
    }) {
        let stat = std::fs::read_to_string("/proc/stat").unwrap();
        let cores = stat
            .lines()
            .filter(|l| l.starts_with("cpu") && l.as_bytes()[3].is_ascii_digit())
            .count();
        assert!(
            v.contains(&format!("CPUs it can use (the machine's {cores} cores")),
            "{v}"
        );
        if v.contains("short of CPU") {
            assert!(
                v.contains("% busy") && v.contains("other processes used"),
                "{v}"
            );
        }
    }

    // kiln runs show says the same.
    let shown = kiln(&db).args(["runs", "show", "lock"]).output().unwrap();
    assert!(shown.status.success());
    assert!(String::from_utf8_lossy(&shown.stdout).contains(line.trim()));
}
