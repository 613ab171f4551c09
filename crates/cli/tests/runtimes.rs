//! The runtimes whose JIT-compiled functions kiln names from their perf maps, seen as a
//! user sees them: a Node.js and a Java HTTP server under a load of `kiln run`, and the
//! first of the run's top functions is the server's hot function by its source name
//! (Node with `--perf-basic-prof`; a JVM asked for its map with `jcmd`, as kiln does
//! itself when the JVM has none). And a Python HTTP server (the standard library's
//! `http.server`, Debian's python3), whose functions kiln reads from the interpreter.
//! And a Java server whose pool waits on one monitor: kiln's own thread dumps of the JVM
//! name the synchronized method and the monitor's class, which the JIT inlined away from
//! the profile's frames.
use kiln_testkit::Lines;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

/// A server the test started, stopped by its pid when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` and waits for its `listening PORT` line.
fn serve(mut cmd: Command) -> (Server, u16) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let mut out = Lines::follow(child.stdout.take().unwrap());
    let server = Server(child);
    let line = out
        .wait_for(Duration::from_secs(60), |l| l.starts_with("listening "))
        .expect("the server says it listens");
    let port = line["listening ".len()..].trim().parse().unwrap();
    (server, port)
}

/// `kiln run` of the server `pid` under an HTTP load of two connections: its summary.
fn run_against(pid: u32, port: u16, store: &Path) -> String {
    let out = kiln_testkit::kiln_in(store)
        .args([
            "run",
            "--name",
            "hot",
            "--no-report",
            "-d",
            "3",
            "--warmup",
            "2",
        ])
        .args(["-p", &pid.to_string(), "load", "http", "-c", "2"])
        .arg(format!("http://127.0.0.1:{port}/"))
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out)
}

/// The names of the run's top functions (`top functions (cpu-clock, self):`), first first.
fn top_functions(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.contains("top functions (cpu-clock, self):"))
        .skip(1)
        .map_while(|l| {
            let l = l.trim_start();
            let (share, name) = l.split_once("%  ")?;
            share.parse::<f64>().ok()?;
            Some(name.trim_end_matches(" *").to_string())
        })
        .collect()
}

#[test]
fn a_node_servers_hot_javascript_function_leads_the_top_functions() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("node");
    // V8 writes its isolate log into the working directory with --perf-basic-prof.
    cmd.current_dir(dir.path())
        .args(["--perf-basic-prof", "--interpreted-frames-native-stack"])
        .arg(programs().join("hot_server.js"));
    let (server, port) = serve(cmd);
    let text = run_against(server.0.id(), port, &dir.path().join("runs.db"));
    let top = top_functions(&text);
    eprintln!("top functions: {top:?}");
    assert!(
        top.first().is_some_and(|f| f.contains("hotSpin")),
        "the JavaScript function first: {top:?}\n{text}"
    );
    let _ = std::fs::remove_file(format!("/tmp/perf-{}.map", server.0.id()));
}

#[test]
fn a_java_servers_hot_method_leads_the_top_functions() {
    let dir = tempfile::tempdir().unwrap();
    let st = Command::new("javac")
        .arg("-d")
        .arg(dir.path())
        .arg(programs().join("HotServer.java"))
        .status()
        .expect("javac runs (Debian package openjdk-17-jdk-headless)");
    assert!(st.success());
    let mut cmd = Command::new("java");
    cmd.args(["-XX:+PreserveFramePointer", "-cp"])
        .arg(dir.path())
        .arg("HotServer");
    let (server, port) = serve(cmd);
    let text = run_against(server.0.id(), port, &dir.path().join("runs.db"));
    let top = top_functions(&text);
    eprintln!("top functions: {top:?}");
    let _ = std::fs::remove_file(format!("/tmp/perf-{}.map", server.0.id()));
    assert!(
        top.first().is_some_and(|f| f.contains("HotServer.hotSpin")),
        "the Java method first: {top:?}\n{text}"
    );
}

#[test]
fn a_python_servers_hot_function_leads_the_top_functions() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(programs().join("hot_server.py"));
    let (server, port) = serve(cmd);
    let text = run_against(server.0.id(), port, &dir.path().join("runs.db"));
    let top = top_functions(&text);
    eprintln!("top functions: {top:?}");
    // A Python frame reads `qualname (file:line)`: the line is the one the loop stood at.
    assert!(
        top.first()
            .is_some_and(|f| f.starts_with("hot_spin (hot_server.py:")),
        "the Python function first: {top:?}\n{text}"
    );
}

/// A Java server's pool BLOCKED on one ledger's monitor (`Ledger.post`, synchronized):
/// the first lock finding names the method and the monitor's class from the thread dumps
/// kiln takes itself (HotSpot's attach protocol, no jcmd), and the run says how many it
/// took.
#[test]
fn a_java_monitor_is_named_from_the_jvms_thread_dumps() {
    let dir = tempfile::tempdir().unwrap();
    let st = Command::new("javac")
        .arg("-d")
        .arg(dir.path())
        .arg(programs().join("LedgerServer.java"))
        .status()
        .expect("javac runs (Debian package openjdk-17-jdk-headless)");
    assert!(st.success());
    let mut cmd = Command::new("java");
    cmd.args([
        "-XX:+PreserveFramePointer",
        "-Dsun.net.httpserver.nodelay=true",
        "-cp",
    ])
    .arg(dir.path())
    .arg("LedgerServer");
    let (server, port) = serve(cmd);
    let store = dir.path().join("runs.db");
    let out = kiln_testkit::kiln_in(&store)
        .args(["run", "--name", "ledger", "--no-report", "-e", "cpu,offcpu"])
        .args(["-d", "4", "--warmup", "3", "-p", &server.0.id().to_string()])
        .args(["load", "http", "-c", "16", "-d", "120s"])
        .arg(format!("http://127.0.0.1:{port}/"))
        .output()
        .unwrap();
    let text = kiln_testkit::succeeded(&out);
    let _ = std::fs::remove_file(format!("/tmp/perf-{}.map", server.0.id()));
    let dumps = text
        .lines()
        .find(|l| l.trim_start().starts_with("JVM thread dumps:"))
        .unwrap_or_else(|| panic!("the run says its thread dumps:\n{text}"));
    eprintln!("{dumps}");
    let taken: u32 = dumps
        .trim_start()
        .strip_prefix("JVM thread dumps: ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a count of dumps: {dumps}"));
    assert!(
        dumps.contains(&format!("{taken} of 4 taken")) && taken >= 1,
        "the dumps taken of the 4 asked for: {dumps}"
    );
    let v = kiln_testkit::show(&store, "ledger");
    let lock = v["findings"]
        .as_array()
        .expect("findings in the JSON")
        .iter()
        .find(|f| f["class"] == "lock-contention")
        .unwrap_or_else(|| panic!("a lock finding:\n{text}"));
    let claim = lock["claim"].as_str().unwrap();
    eprintln!("{claim}");
    assert!(
        claim.contains("in Ledger.post") && claim.contains("monitor of a Ledger "),
        "the method and the monitor's class named: {claim}\n{text}"
    );
    let evidence = lock["evidence"].to_string();
    assert!(
        evidence.contains("dumped pool-N-thread-N threads BLOCKED on it in")
            && evidence.contains(&format!("of {taken} dumps")),
        "the dumps counted in the evidence: {evidence}"
    );
}
