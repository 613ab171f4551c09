//! Hosts that misbehave, played by fake ssh commands (shell scripts written by the tests
//! and given to `kiln run --ssh-command`): one that says nothing, one that starts the
//! agent's marker and goes quiet, one that writes without end, one that claims a 1 GiB
//! greeting, and an agent played by the test itself (through FIFOs) whose seconds and
//! report are lies. Each ends with a clear error or a run marked for what it is, a stop
//! ends the wait on a host, and no ssh is left behind (nor after kill -9 of kiln). And `kiln agent` itself, driven
//! over its stdin and stdout: a load that failed frees its slot.
use kiln_run::remote::wire::{self, FromAgent, Hello, ToAgent, WireOutcome};
use kiln_run::LoadTick;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kiln_testkit::{alive, monotonic_ns, show};

/// A fake ssh: `body` after a line that writes the script's PID to `ssh.pid`.
fn fake_ssh(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("ssh");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\necho $$ > '{}'\n{body}\n",
            dir.join("ssh.pid").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// `kiln run` of one agent `h` through the fake ssh, with a connect timeout of `timeout`
/// seconds.
fn run_through(dir: &Path, ssh: &Path, timeout: &str, run: &[&str]) -> Command {
    let mut c = kiln_testkit::kiln_process();
    c.env("KILN_STORE", dir.join("runs.db"))
        .args(["run", "--no-report", "--connect-timeout", timeout])
        .arg("--ssh-command")
        .arg(ssh)
        .arg("--agent-dir")
        .arg(dir.join("agents"))
        .args(["--agent", "h=ssh://fake", "-p", "h:1"])
        .args(run)
        .args(["load", "mqtt", "conn", "-h", "127.0.0.1", "-c", "1"]);
    c
}

/// The PIDs the fake ssh wrote (its own, and any it started).
fn pids(dir: &Path, file: &str) -> Vec<u32> {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn assert_gone(dir: &Path) {
    let mut p = pids(dir, "ssh.pid");
    p.extend(pids(dir, "more.pid"));
    assert!(!p.is_empty(), "the fake ssh ran");
    for pid in p {
        assert!(!alive(pid), "the fake ssh's process {pid} is left behind");
    }
}

/// A host that says nothing, or whose agent begins its marker and goes quiet, or that
/// writes without end, or that claims a 1 GiB greeting: each run ends with what went wrong
/// and the ssh (and what it started) ended.
#[test]
fn a_host_that_hangs_or_floods_ends_with_a_clear_error_and_no_ssh_left() {
    let cases: [(&str, &str, &str); 4] = [
        ("silent", "exec sleep 1000", "said nothing"),
        (
            "marker then silent",
            "printf '\\nKILN-AGENT/1\\n'\nexec sleep 1000",
            "began, then did not greet within 2 s (--connect-timeout)",
        ),
        ("endless bytes", "exec yes", "without the agent's marker"),
        (
            "a huge greeting",
            // The marker, then a length of 2^30 - 2, then zeros without end.
            "sleep 1000 &\necho $! > \"$(dirname \"$0\")/more.pid\"\nprintf '\\nKILN-AGENT/1\\n\\376\\377\\377\\077'\nexec cat /dev/zero",
            "a control frame of 1073741822 bytes is past its limit of 65536 bytes",
        ),
    ];
    for (what, body, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let ssh = fake_ssh(dir.path(), body);
        let t = std::time::Instant::now();
        let out = run_through(dir.path(), &ssh, "2", &["-d", "1"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        eprintln!("{what}: ended in {:.3} s", t.elapsed().as_secs_f64());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.contains("host h failed"), "{what}: {stderr}");
        assert!(stderr.contains(says), "{what}: {stderr}");
        assert_gone(dir.path());
    }
}

/// kiln connecting to a host whose ssh says nothing (with a 600 s timeout), once it has
/// said so and the ssh has started a child of its own: returns kiln, what it said so far
/// and the directory of the fake ssh.
fn connecting() -> (
    Child,
    BufReader<std::process::ChildStderr>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let ssh = fake_ssh(
        dir.path(),
        "sleep 1000 &\necho $! > \"$(dirname \"$0\")/more.pid\"\nexec sleep 1000",
    );
    let mut kiln = run_through(dir.path(), &ssh, "600", &["-d", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(kiln.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("connecting to h") {
        assert!(err.read_line(&mut said).unwrap() > 0, "{said}");
    }
    while pids(dir.path(), "more.pid").is_empty() {
        std::thread::sleep(Duration::from_millis(10));
    }
    (kiln, err, dir)
}

/// SIGINT while kiln connects to a host that says nothing: kiln ends, says it was
/// interrupted, exits 130, and the ssh and its child are gone.
#[test]
fn sigint_while_connecting_ends_the_run_and_the_ssh() {
    let (mut kiln, mut err, dir) = connecting();
    let t = std::time::Instant::now();
    signal(&kiln, libc::SIGINT);
    let mut said = String::new();
    err.read_to_string(&mut said).unwrap();
    let status = kiln.wait().unwrap();
    eprintln!("kiln ended {:.3} s after SIGINT", t.elapsed().as_secs_f64());
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(
        said.contains("interrupted while connecting to ssh://fake"),
        "{said}"
    );
    assert_gone(dir.path());
}

/// kill -9 of kiln while it connects: its ssh (in a process group of its own, which no
/// terminal signal reaches) dies with it, by the death signal kiln set on it.
#[test]
fn kill_9_of_kiln_while_connecting_takes_its_ssh_with_it() {
    let (mut kiln, _err, dir) = connecting();
    let ssh = pids(dir.path(), "ssh.pid")[0];
    signal(&kiln, libc::SIGKILL);
    let _ = kiln.wait();
    let mut waited = 0;
    while alive(ssh) && waited < 10_000 {
        std::thread::sleep(Duration::from_millis(10));
        waited += 10;
    }
    assert!(!alive(ssh), "the fake ssh {ssh} outlived kiln");
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on the test's own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// An agent played by the test: a fake ssh that joins its stdin and stdout to two FIFOs
/// the test holds.
struct PlayedAgent {
    dir: tempfile::TempDir,
    ssh: PathBuf,
}

impl PlayedAgent {
    fn new() -> PlayedAgent {
        let dir = tempfile::tempdir().unwrap();
        for f in ["down", "up"] {
            let st = Command::new("mkfifo")
                .arg(dir.path().join(f))
                .status()
                .unwrap();
            assert!(st.success());
        }
        let d = dir.path().display().to_string();
        let ssh = fake_ssh(
            dir.path(),
            &format!("cat '{d}/down' &\necho $! > '{d}/more.pid'\nexec cat > '{d}/up'"),
        );
        PlayedAgent { dir, ssh }
    }

    /// Opens the FIFOs (once kiln's ssh has), greets as this kiln's build, and hands
    /// every message from kiln to `on`, which answers through the writer.
    fn serve(&self, on: impl Fn(ToAgent, &mut dyn Write) + Send + 'static) {
        let (down, up) = (self.dir.path().join("down"), self.dir.path().join("up"));
        std::thread::spawn(move || {
            let mut w = std::fs::OpenOptions::new().write(true).open(down).unwrap();
            let mut r = BufReader::new(std::fs::File::open(up).unwrap());
            w.write_all(wire::MAGIC).unwrap();
            let hello = FromAgent::Hello(Hello {
                version: "test".into(),
                build: kiln_testkit::kiln_build_id(),
                hostname: "played".into(),
                cpus: 1,
                ..Default::default()
            });
            wire::write_frame(&mut w, &hello, &[]).unwrap();
            while let Ok((m, _)) = wire::read_frame::<ToAgent>(&mut r) {
                // Clock exchanges and an empty recording, as an agent on this host.
                let answer = match m {
                    ToAgent::Ping { id } => FromAgent::Pong {
                        id,
                        recv_ns: monotonic_ns(),
                        send_ns: monotonic_ns(),
                    },
                    ToAgent::Record(_) => FromAgent::RecordReady,
                    ToAgent::StopRecord => FromAgent::Recorded(Box::default()),
                    m => {
                        on(m, &mut w);
                        continue;
                    }
                };
                if wire::write_frame(&mut w, &answer, &[]).is_err() {
                    return;
                }
            }
        });
    }
}

/// An agent whose seconds claim 2^64 - 1 operations and whose report is nested 100
/// arrays deep with a total of 2^64 - 1: the lies stay out of the run, are counted, and
/// the run is stored marked incomplete with the reason.
#[test]
fn an_agents_impossible_seconds_and_report_stay_out_and_the_run_says_so() {
    let a = PlayedAgent::new();
    a.serve(|m, w| {
        if let ToAgent::StartLoad { grid_ns, .. } = m {
            wire::write_frame(w, &FromAgent::LoadStarted, &[]).unwrap();
            for s in 1..=3u64 {
                let t = FromAgent::Tick(LoadTick {
                    end_ns: grid_ns + s * 1_000_000_000,
                    interval_s: 1.0,
                    completed: Some(u64::MAX),
                    sent: Some(u64::MAX),
                    ..Default::default()
                });
                wire::write_frame(w, &t, &[]).unwrap();
            }
            let mut nested = serde_json::json!(1);
            for _ in 0..100 {
                nested = serde_json::json!([nested]);
            }
            let report = serde_json::json!({
                "headline": {"totals": [{"name": "completed", "unit": "", "value": u64::MAX}]},
                "deep": nested,
            });
            let done = FromAgent::LoadDone(WireOutcome {
                started: true,
                ended_by_itself: true,
                failure: None,
                report,
            });
            wire::write_frame(w, &done, &[]).unwrap();
        }
    });
    let store = a.dir.path().join("runs.db");
    let out = run_through(a.dir.path(), &a.ssh, "30", &["--name", "lies", "-d", "1"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let meta = show(&store, "lies");
    assert_eq!(meta["status"]["complete"], false, "{:#}", meta["status"]);
    let reason = meta["status"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("host h failed: it sent invalid data: 3 second(s) left out"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("{} completed", u64::MAX)),
        "{reason}"
    );
    assert!(
        reason.contains("its load report left out (nested 101 deep"),
        "{reason}"
    );
    let size = meta.to_string().len();
    eprintln!("stored metadata: {size} bytes");
    assert!(size < 64 << 10);
    assert!(
        meta["headline"]["operations"]
            .as_u64()
            .is_none_or(|o| o < 1 << 53),
        "{:#}",
        meta["headline"]
    );
    assert!(meta["load"]["report"]["deep"].is_null());
    assert_gone(a.dir.path());
}

/// An agent whose load does not stop when told: after the measurement kiln would wait
/// its grace for it; SIGINT ends that wait, and the run is stored with what it has,
/// marked interrupted, the host marked for it. The ssh is gone.
#[test]
fn sigint_ends_the_wait_for_a_load_that_does_not_stop_and_the_run_is_stored() {
    let a = PlayedAgent::new();
    let (told, stop_told) = std::sync::mpsc::channel();
    let told = std::sync::Mutex::new(told);
    a.serve(move |m, w| match m {
        ToAgent::StartLoad { .. } => {
            wire::write_frame(w, &FromAgent::LoadStarted, &[]).unwrap();
        }
        ToAgent::StopLoad => {
            let _ = told.lock().unwrap().send(());
        }
        _ => {}
    });
    let store = a.dir.path().join("runs.db");
    let mut kiln = run_through(a.dir.path(), &a.ssh, "30", &["--name", "deaf", "-d", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    stop_told
        .recv_timeout(Duration::from_secs(120))
        .expect("kiln tells the load to stop");
    let t = std::time::Instant::now();
    signal(&kiln, libc::SIGINT);
    let mut said = String::new();
    kiln.stderr
        .take()
        .unwrap()
        .read_to_string(&mut said)
        .unwrap();
    assert_eq!(kiln.wait().unwrap().code(), Some(130), "{said}");
    eprintln!(
        "kiln stored the run and ended {:.3} s after SIGINT",
        t.elapsed().as_secs_f64()
    );
    let meta = show(&store, "deaf");
    assert_eq!(meta["status"]["complete"], false);
    let reason = meta["status"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("interrupted by SIGINT"), "{reason}");
    assert!(
        reason.contains("host h failed: its load did not stop within 0.8 s of the run's stop"),
        "{reason}"
    );
    assert_gone(a.dir.path());
}

/// `kiln agent` driven directly: a load that fails at once (a load it does not know),
/// then one that fails connecting (no broker on the port): each start is served, none
/// refused as "already running".
#[test]
fn kiln_agent_frees_its_load_slot_however_the_load_ended() {
    let mut agent = kiln_testkit::kiln_process()
        .arg("agent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut to = agent.stdin.take().unwrap();
    let mut from = BufReader::new(agent.stdout.take().unwrap());
    assert!(wire::await_magic(&mut from).unwrap().is_ok());
    let (hello, _) = wire::read_frame::<FromAgent>(&mut from).unwrap();
    assert!(matches!(hello, FromAgent::Hello(_)), "{hello:?}");
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let loads: [&[&str]; 4] = [
        &["nosuch"],
        &["nosuch"],
        &["mqtt", "conn", "-h", "127.0.0.1", "-p", &port, "-c", "1"],
        &["nosuch"],
    ];
    for argv in loads {
        let start = ToAgent::StartLoad {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            grid_ns: 0,
        };
        wire::write_frame(&mut to, &start, &[]).unwrap();
        // Its end: a failure to start, or the load's end with its failure.
        let why = loop {
            match wire::read_frame::<FromAgent>(&mut from).unwrap().0 {
                FromAgent::Failed { reason, .. } => break reason,
                FromAgent::LoadDone(o) => break o.failure.unwrap_or_default(),
                _ => {}
            }
        };
        assert!(!why.is_empty(), "{argv:?}");
        assert!(!why.contains("already running"), "{argv:?}: {why}");
    }
    wire::write_frame(&mut to, &ToAgent::Bye, &[]).unwrap();
    assert!(agent.wait().unwrap().success());
}

/// An IPv6 destination reaches ssh as ssh writes it: the address without its brackets,
/// the port apart; one without brackets is refused with the form to use.
#[test]
fn ipv6_destinations_reach_ssh_without_their_brackets() {
    let dir = tempfile::tempdir().unwrap();
    let args = dir.path().join("args");
    let ssh = fake_ssh(
        dir.path(),
        &format!(
            "for a in \"$@\"; do echo \"$a\"; done > '{}'\necho 'no route' >&2\nexit 255",
            args.display()
        ),
    );
    let mut c = kiln_testkit::kiln_process();
    c.env("KILN_STORE", dir.path().join("runs.db"))
        .args(["run", "--no-report", "--connect-timeout", "2"])
        .arg("--ssh-command")
        .arg(&ssh)
        .args([
            "--agent",
            "x=ssh://bench@[::1]:2222",
            "-p",
            "x:1",
            "-d",
            "1",
        ])
        .args(["load", "mqtt", "conn", "-h", "127.0.0.1", "-c", "1"]);
    let out = c.stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no route"), "{stderr}");
    let words: Vec<String> = std::fs::read_to_string(&args)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let at = words.iter().position(|w| w == "-p").expect("a port");
    assert_eq!(words[at + 1..at + 3], ["2222", "bench@::1"], "{words:?}");
    let out = kiln_testkit::kiln_process()
        .env("KILN_STORE", dir.path().join("runs.db"))
        .args([
            "run",
            "--agent",
            "x=ssh://::1",
            "-p",
            "x:1",
            "load",
            "mqtt",
            "conn",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("ssh://[::1]"), "{stderr}");
}
