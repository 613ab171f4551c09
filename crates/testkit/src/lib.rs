//! Real servers for kiln's tests.
//!
//! kiln's tests drive real brokers instead of mocks: a mock cannot show flow control, a
//! killed broker or a stream queue's offsets. This crate starts Debian's `mosquitto` (one
//! process, private config, [`Mosquitto`]) and `rabbitmq-server` (optionally with its MQTT
//! plugin, [`RabbitMq::start_with_plugins`]) as a private node: bound to 127.0.0.1 on free ports, with its own data, log, pid and
//! config files, its own Erlang cookie and its own `epmd`, so tests never touch a system
//! broker and several test binaries can run at once.
//!
//! Starting a broker costs 5–10 s, so test binaries share one through
//! [`shared_rabbitmq`] and give each test its own queue names; tests that kill a broker
//! start their own with [`RabbitMq::start`].
//!
//! HTTP servers for `kiln load http`: a private Debian nginx ([`Nginx`]: one worker,
//! keep-alive, a static file, an access log whose lines the tests count), the example Go
//! query server built from `examples/go-blockcache` ([`GoBlockCache`]), and small
//! misbehaving servers inside the test process ([`FaultServer`]). Servers are stopped by
//! PID when dropped, and by a guard process if the test binary dies first.
//!
//! A test's own network ([`in_private_netns`]): a network namespace with its own loopback
//! and `net.*` settings (a narrow ephemeral port range, say), for fleets of connections
//! past one source address without touching the machine's settings.
//!
//! Several hosts on one machine for `kiln run --agent` and `-p HOST:PID` ([`TestNet`]):
//! network namespaces joined by veth pairs to a bridge, each with its own private address
//! and its own Debian `sshd` ([`Sshd`], keys made by the test: [`SshKeys`]), optionally
//! with a shifted CLOCK_MONOTONIC (a time namespace).
//!
//! A private PostgreSQL server for the shared run store ([`Postgres`]): `initdb` into a
//! temporary directory, listening on 127.0.0.1 on a free port, stopped and started again
//! by PID to play a server restarted under a client.
//!
//! ```no_run
//! let broker = kiln_testkit::shared_rabbitmq().expect("rabbitmq-server installed");
//! println!("connect to {}", broker.uri());
//! ```
#![deny(missing_docs)]

mod browser;
mod go_blockcache;
pub mod go_oracle;
mod hosts;
mod http_faults;
mod mosquitto;
mod netns;
mod nginx;
pub mod perf_oracle;
mod postgres;
mod proc;
mod programs;
mod rabbitmq;

pub use browser::{run_browser_checks, web_dir};
pub use go_blockcache::{build_go_blockcache, go_blockcache_source, go_command, GoBlockCache};
pub use hosts::{NetHost, SshKeys, Sshd, TestNet};
pub use http_faults::{Fault, FaultServer};
pub use mosquitto::{Mosquitto, MosquittoOptions, Witness};
pub use netns::{in_private_netns, set_sysctl};
pub use nginx::{AccessEntry, Nginx, NginxOptions};
pub use postgres::{have_postgres, postgres_installed, Postgres, POSTGRES_BIN};
pub use proc::{alive, bpf_links, children, monotonic_ns, schedstat, signal, Hog};
pub use programs::{build_c, build_hot, build_ticker, Started};
pub use rabbitmq::{
    free_port, listening, shared_rabbitmq, shared_rabbitmq_mqtt, RabbitMq, RabbitMqOptions,
};

/// Asserts that a finished command succeeded (its status, standard output and error in
/// the message when it did not) and returns its standard output.
#[track_caller]
pub fn succeeded(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The last 20 lines of the log file at `path` (empty when it cannot be read): what a
/// fixture's errors show of a server that did not start.
pub(crate) fn log_tail(path: &std::path::Path) -> String {
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Why a test server could not be started or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A program the fixture needs is not installed.
    #[error("{program} not found: {advice}")]
    NotInstalled {
        /// Path that was looked for.
        program: String,
        /// What to install.
        advice: &'static str,
    },
    /// An I/O error while preparing or starting a server.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The server did not become ready in time.
    #[error("{server} did not start within {seconds} s; its log: {log}")]
    StartTimeout {
        /// Which server.
        server: String,
        /// How long we waited.
        seconds: u64,
        /// Last lines of its log.
        log: String,
    },
    /// A log line a fixture reads does not have the expected shape.
    #[error("{path}:{line}: unexpected log line: {text}")]
    BadLog {
        /// The log file.
        path: String,
        /// Line number (1-based).
        line: usize,
        /// The line.
        text: String,
    },
    /// Building a test program failed.
    #[error("{what} failed:\n{output}")]
    Build {
        /// The build command.
        what: String,
        /// What it printed.
        output: String,
    },
    /// A command that sets a fixture up failed (`rabbitmqctl join_cluster`).
    #[error("{what} failed:\n{output}")]
    Command {
        /// The command.
        what: String,
        /// What it printed.
        output: String,
    },
    /// A previous attempt to start the shared server failed.
    #[error("the shared broker failed to start earlier: {0}")]
    SharedFailed(String),
}

/// A test that cannot run here says so and returns, where `KILN_REQUIRE_ANCHORS` is not
/// set (a developer's machine without the part); where it is set (`scripts/test.sh`,
/// CI), a missing part fails the test instead of letting it pass unseen.
pub fn skip(why: &str) {
    assert!(
        std::env::var_os("KILN_REQUIRE_ANCHORS").is_none(),
        "required (KILN_REQUIRE_ANCHORS is set), but {why}"
    );
    eprintln!("SKIPPED: {why}");
}

/// The lines a child process writes, read on a thread of their own, so that a test can
/// wait for the one that says the child is ready (a load's first second, a run's
/// measurement starting) instead of sleeping, and still have every line at the end.
pub struct Lines {
    rx: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Lines {
    /// Follows `from` (a child's stdout or stderr) until it ends.
    pub fn follow<R: std::io::Read + Send + 'static>(from: R) -> Lines {
        use std::io::BufRead;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(from).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Lines {
            rx,
            seen: Vec::new(),
        }
    }

    /// Follows the child's stdout and waits up to `within` for its first line (a load's
    /// first second: it is connected and running); panics naming `what` when none came.
    pub fn first_of(
        child: &mut std::process::Child,
        what: &str,
        within: std::time::Duration,
    ) -> Lines {
        let mut lines = Lines::follow(child.stdout.take().expect("the child's stdout piped"));
        assert!(
            lines.wait_for(within, |_| true).is_some(),
            "{what} printed nothing in {within:?}"
        );
        lines
    }

    /// Waits up to `within` for a line `ready` accepts and returns it; `None` when the
    /// stream ended or the time passed first.
    pub fn wait_for(
        &mut self,
        within: std::time::Duration,
        ready: impl Fn(&str) -> bool,
    ) -> Option<String> {
        let deadline = std::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => {
                    let hit = ready(&line);
                    self.seen.push(line.clone());
                    if hit {
                        return Some(line);
                    }
                }
                Err(_) => return None,
            }
        }
    }

    /// Every line, those already seen and the rest until the stream ends (call once the
    /// child has exited or been told to), joined with newlines.
    pub fn all(mut self) -> String {
        while let Ok(line) = self.rx.recv() {
            self.seen.push(line);
        }
        let mut s = self.seen.join("\n");
        s.push('\n');
        s
    }
}

/// The `kiln` binary the tests built.
pub fn kiln_bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("kiln")
}

/// `kiln` as the tests built it, ready to be given arguments.
pub fn kiln() -> assert_cmd::Command {
    assert_cmd::Command::new(kiln_bin())
}

/// [`kiln`] as a process to spawn (to signal it, read its output as it goes).
pub fn kiln_process() -> std::process::Command {
    std::process::Command::new(kiln_bin())
}

/// Polls `cond` every 10 ms for up to `limit`; how long it took to hold, or `None`.
pub fn poll_until(
    limit: std::time::Duration,
    mut cond: impl FnMut() -> bool,
) -> Option<std::time::Duration> {
    let t = std::time::Instant::now();
    loop {
        if cond() {
            return Some(t.elapsed());
        }
        if t.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// [`kiln`] with its run store at `store` (`KILN_STORE`: a path, or a database URL as
/// one).
pub fn kiln_in(store: &std::path::Path) -> assert_cmd::Command {
    let mut c = kiln();
    c.env("KILN_STORE", store);
    c
}

/// [`kiln_process`] with its run store at `store` (`KILN_STORE`).
pub fn kiln_process_in(store: &std::path::Path) -> std::process::Command {
    let mut c = kiln_process();
    c.env("KILN_STORE", store);
    c
}

/// `out` (a command's standard output) as JSON; a panic showing it when it is not.
#[track_caller]
pub fn json(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(out)))
}

/// `kiln runs --json` of the store at `store` (a path, or a database URL as one).
#[track_caller]
pub fn runs(store: &std::path::Path) -> Vec<serde_json::Value> {
    let out = kiln_in(store).args(["runs", "--json"]).output().unwrap();
    succeeded(&out);
    match json(&out.stdout) {
        serde_json::Value::Array(runs) => runs,
        other => panic!("kiln runs --json printed no list: {other}"),
    }
}

/// `kiln runs --json` of the store at `store`, or no runs when kiln cannot list them (the
/// store not created yet, or being written by a run this test waits for): for waiting on a
/// run to land and for stores that may not exist. [`runs`] fails the test instead.
pub fn runs_or_empty(store: &std::path::Path) -> Vec<serde_json::Value> {
    let out = kiln_in(store).args(["runs", "--json"]).output().unwrap();
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

/// `kiln runs show REFERENCE --json` of the store at `store`: the stored run's metadata as
/// JSON; the test fails, showing kiln's output, when kiln does.
#[track_caller]
pub fn show(store: &std::path::Path, reference: &str) -> serde_json::Value {
    let out = kiln_in(store)
        .args(["runs", "show", reference, "--json"])
        .output()
        .unwrap();
    json(succeeded(&out).as_bytes())
}

/// The row keyed `key` in the `rows` of a comparison (`kiln compare --json`); a panic
/// showing the comparison when it has none.
#[track_caller]
pub fn row<'a>(cmp: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    cmp["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == key)
        .unwrap_or_else(|| panic!("no {key} in {cmp:#}"))
}

/// Bytes a command wrote, as text (invalid UTF-8 replaced).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The `perf script` fixture `name` of the collapse crate's tests
/// (`crates/collapse/tests/data/perf/`).
pub fn perf_fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../collapse/tests/data/perf")
        .join(name)
}

/// A TCP port on 127.0.0.1 that nothing listens on (bound once and released): a server
/// that is down, or a port to give a server of the test's own. [`free_port`] with the
/// test failing if no port can be bound.
#[track_caller]
pub fn unused_port() -> u16 {
    free_port().expect("binding a port on 127.0.0.1")
}

/// `prog` as found on `PATH`, if it is there.
pub fn which(prog: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(prog))
            .find(|f| f.exists())
    })
}

/// The GNU build id of the kiln under test, as readelf prints it.
pub fn kiln_build_id() -> String {
    let out = std::process::Command::new("readelf")
        .arg("-n")
        .arg(kiln_bin())
        .output()
        .unwrap_or_else(|e| panic!("readelf: {e}"));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .expect("kiln has a build id")
        .trim()
        .to_string()
}
