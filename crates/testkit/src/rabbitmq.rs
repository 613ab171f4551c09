//! A private RabbitMQ node.
use crate::Error;
use std::fmt::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const SERVER: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";
const CTL: &str = "/usr/lib/rabbitmq/bin/rabbitmqctl";
const EPMD: &str = "/usr/bin/epmd";
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// Whether a server listens at `addr:port`: a connection is taken, and not by the
/// connecting socket itself (free ports are ephemeral ones, and a connect to a port nobody
/// listens on can pick that same port as its source and connect to itself; a test then
/// took a server for ready before it had bound its port).
pub fn listening(addr: impl Into<std::net::IpAddr>, port: u16) -> bool {
    std::net::TcpStream::connect((addr.into(), port))
        .is_ok_and(|s| s.local_addr().ok() != s.peer_addr().ok())
}

/// A port that was free on 127.0.0.1 a moment ago (the OS picks it).
pub fn free_port() -> Result<u16, Error> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| io("binding 127.0.0.1:0", e))?;
    let port = l
        .local_addr()
        .map_err(|e| io("reading local address", e))?
        .port();
    Ok(port)
}

fn io(what: &str, source: std::io::Error) -> Error {
    Error::Io {
        what: what.to_string(),
        source,
    }
}

/// Extra settings for a broker.
#[derive(Debug, Clone, Default)]
pub struct RabbitMqOptions {
    /// Lines appended to the node's `rabbitmq.conf` (new-style sysctl format), e.g.
    /// `vm_memory_high_watermark.absolute = 1` to make the broker block publishers at once.
    /// Default: none.
    pub extra_config: Vec<String>,
    /// The address AMQP clients connect to. Default (`None`): 127.0.0.1; a
    /// [`crate::TestNet`]'s gateway makes the broker reachable from the test's hosts
    /// (Erlang distribution and epmd stay on 127.0.0.1).
    pub address: Option<std::net::Ipv4Addr>,
    /// Lines of the node's `rabbitmq-env.conf` (variables without their `RABBITMQ_`
    /// prefix), e.g. `SCHEDULER_BUSY_WAIT_THRESHOLD=medium` for the VM's `+sbwt`. Default:
    /// none.
    pub env_conf: Vec<String>,
}

/// A running private RabbitMQ node. Dropping it shuts the node and its epmd down.
#[derive(Debug)]
pub struct RabbitMq {
    dir: tempfile::TempDir,
    node: String,
    address: std::net::Ipv4Addr,
    port: u16,
    mqtt_port: Option<u16>,
    dist_port: u16,
    epmd_port: u16,
    server: Option<Child>,
    epmd: Option<Child>,
}

impl RabbitMq {
    /// Starts a node with default settings and waits until it accepts connections.
    pub fn start() -> Result<Self, Error> {
        Self::start_with(&RabbitMqOptions::default())
    }

    /// Starts a node with `opts` and waits until it accepts connections.
    pub fn start_with(opts: &RabbitMqOptions) -> Result<Self, Error> {
        Self::start_with_plugins(opts, &[])
    }

    /// Starts a node with `opts` and `plugins` enabled, e.g. `rabbitmq_mqtt` (its listener
    /// then gets a free port of its own, [`RabbitMq::mqtt_port`], and allows anonymous
    /// clients as guest).
    pub fn start_with_plugins(opts: &RabbitMqOptions, plugins: &[&str]) -> Result<Self, Error> {
        Self::start_node(opts, plugins, None)
    }

    /// Starts a second node of this node's cluster (RabbitMQ's own clustering: the same
    /// Erlang cookie and epmd, `rabbitmqctl join_cluster`), with its own ports and data,
    /// listening on the same address; waits until it has joined and accepts connections.
    /// Drop it before this node (its epmd is this node's).
    pub fn start_joined(&self) -> Result<RabbitMq, Error> {
        let opts = RabbitMqOptions {
            address: Some(self.address),
            ..Default::default()
        };
        let node = Self::start_node(&opts, &[], Some(self))?;
        for args in [
            &["stop_app"][..],
            &["join_cluster", &self.node][..],
            &["start_app"][..],
        ] {
            let out = node.ctl(args)?;
            if !out.status.success() {
                return Err(Error::Command {
                    what: format!("rabbitmqctl -n {} {}", node.node, args.join(" ")),
                    output: format!(
                        "{}{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    ),
                });
            }
        }
        let mut node = node;
        node.await_startup()?;
        Ok(node)
    }

    fn start_node(
        opts: &RabbitMqOptions,
        plugins: &[&str],
        peer: Option<&RabbitMq>,
    ) -> Result<Self, Error> {
        for p in [SERVER, CTL, EPMD] {
            if !Path::new(p).exists() {
                return Err(Error::NotInstalled {
                    program: p.to_string(),
                    advice: "install Debian's rabbitmq-server and erlang-nox packages",
                });
            }
        }
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dir = tempfile::Builder::new()
            .prefix("kiln-rabbitmq-")
            .tempdir()
            .map_err(|e| io("creating the broker's directory", e))?;
        let node = format!(
            "kiln{}x{}@localhost",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let port = free_port()?;
        let dist_port = free_port()?;
        let epmd_port = match peer {
            Some(p) => p.epmd_port,
            None => free_port()?,
        };
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).map_err(|e| io("creating HOME", e))?;
        let cookie = home.join(".erlang.cookie");
        let secret = match peer {
            // A cluster's nodes share one cookie.
            Some(p) => std::fs::read_to_string(p.dir().join("home/.erlang.cookie"))
                .map_err(|e| io("reading the cluster's Erlang cookie", e))?,
            None => format!("KILNTEST{}", node.len() * 7919 + port as usize),
        };
        std::fs::write(&cookie, secret).map_err(|e| io("writing the Erlang cookie", e))?;
        set_mode_600(&cookie)?;
        let mut conf = String::from("loopback_users = none\n");
        let mqtt_port = if plugins.contains(&"rabbitmq_mqtt") {
            let p = free_port()?;
            let _ = writeln!(
                conf,
                "mqtt.listeners.tcp.default = 127.0.0.1:{p}\nmqtt.allow_anonymous = true"
            );
            Some(p)
        } else {
            None
        };
        for l in &opts.extra_config {
            let _ = writeln!(conf, "{l}");
        }
        std::fs::write(dir.path().join("rabbitmq.conf"), conf)
            .map_err(|e| io("writing rabbitmq.conf", e))?;
        std::fs::write(
            dir.path().join("enabled_plugins"),
            format!("[{}].\n", plugins.join(",")),
        )
        .map_err(|e| io("writing enabled_plugins", e))?;
        let env_conf: String = opts.env_conf.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.path().join("rabbitmq-env.conf"), env_conf)
            .map_err(|e| io("writing rabbitmq-env.conf", e))?;

        let epmd = match peer {
            Some(_) => None,
            None => Some(
                Command::new(EPMD)
                    .args(["-port", &epmd_port.to_string(), "-address", "127.0.0.1"])
                    .env("HOME", &home)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| io("starting epmd", e))?,
            ),
        };
        let mut me = RabbitMq {
            dir,
            node,
            address: opts.address.unwrap_or(std::net::Ipv4Addr::LOCALHOST),
            port,
            mqtt_port,
            dist_port,
            epmd_port,
            server: None,
            epmd,
        };
        me.spawn_server()?;
        me.await_startup()?;
        Ok(me)
    }

    fn spawn_server(&mut self) -> Result<(), Error> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("console.log"))
            .map_err(|e| io("opening console.log", e))?;
        let log2 = log.try_clone().map_err(|e| io("cloning console.log", e))?;
        let mut cmd = Command::new(SERVER);
        self.env(&mut cmd);
        cmd.env("RABBITMQ_NODE_IP_ADDRESS", self.address.to_string())
            .env("RABBITMQ_NODE_PORT", self.port.to_string())
            .env("RABBITMQ_DIST_PORT", self.dist_port.to_string())
            // Erlang distribution listens on all interfaces unless told otherwise. The
            // JIT writes a perf map and keeps frame pointers (+JPperf map), as the
            // profiling workflows kiln serves run RabbitMQ; not the jitdump of
            // +JPperf true (45 MB a node in /tmp, which kiln does not read).
            .env(
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
                "+JPperf map -kernel inet_dist_use_interface {127,0,0,1}",
            )
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        self.server = Some(cmd.spawn().map_err(|e| io("starting rabbitmq-server", e))?);
        Ok(())
    }

    /// Starts the node again after [`RabbitMq::kill`], on the same ports and data, and waits
    /// until it accepts connections: a broker restart as clients see it.
    pub fn restart(&mut self) -> Result<(), Error> {
        self.kill()?;
        let _ = std::fs::remove_file(self.dir.path().join("rabbit.pid"));
        self.spawn_server()?;
        self.await_startup()
    }

    fn env(&self, cmd: &mut Command) {
        let d = self.dir.path();
        cmd.env("HOME", d.join("home"))
            .env("RABBITMQ_NODENAME", &self.node)
            .env("ERL_EPMD_PORT", self.epmd_port.to_string())
            .env("ERL_EPMD_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_CONF_ENV_FILE", d.join("rabbitmq-env.conf"))
            .env("RABBITMQ_CONFIG_FILE", d.join("rabbitmq.conf"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", d.join("enabled_plugins"))
            .env("RABBITMQ_MNESIA_BASE", d.join("mnesia"))
            .env("RABBITMQ_LOG_BASE", d.join("log"))
            .env("RABBITMQ_PID_FILE", d.join("rabbit.pid"));
    }

    fn await_startup(&mut self) -> Result<(), Error> {
        let start = Instant::now();
        loop {
            if let Some(s) = self.server.as_mut() {
                if let Ok(Some(status)) = s.try_wait() {
                    return Err(Error::StartTimeout {
                        server: format!("rabbitmq-server (exited with {status})"),
                        seconds: start.elapsed().as_secs(),
                        log: self.log_tail(),
                    });
                }
            }
            let ok = self
                .ctl(&["await_startup", "--timeout", "20"])
                .map(|o| o.status.success())
                .unwrap_or(false);
            if ok && listening(self.address, self.port) {
                return Ok(());
            }
            if start.elapsed() > START_TIMEOUT {
                return Err(Error::StartTimeout {
                    server: "rabbitmq-server".into(),
                    seconds: START_TIMEOUT.as_secs(),
                    log: self.log_tail(),
                });
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Runs `rabbitmqctl -n NODE args…` against this node.
    pub fn ctl(&self, args: &[&str]) -> Result<std::process::Output, Error> {
        let mut cmd = Command::new(CTL);
        self.env(&mut cmd);
        cmd.arg("-n")
            .arg(&self.node)
            .args(args)
            .stdin(Stdio::null());
        cmd.output().map_err(|e| io("running rabbitmqctl", e))
    }

    fn log_tail(&self) -> String {
        crate::log_tail(&self.dir.path().join("console.log"))
    }

    /// The AMQP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The MQTT port on 127.0.0.1, when the `rabbitmq_mqtt` plugin is enabled.
    pub fn mqtt_port(&self) -> Option<u16> {
        self.mqtt_port
    }

    /// `amqp://guest:guest@127.0.0.1:PORT` (or the address it was given).
    pub fn uri(&self) -> String {
        format!("amqp://guest:guest@{}:{}", self.address, self.port)
    }

    /// The Erlang node name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The broker's private directory (config, data, logs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The OS pid of the Erlang VM (`beam.smp`), read from the node's pid file.
    pub fn beam_pid(&self) -> Option<u32> {
        let s = std::fs::read_to_string(self.dir.path().join("rabbit.pid")).ok()?;
        s.trim().parse().ok()
    }

    /// Kills the Erlang VM with SIGKILL, as a crash would, and waits for the wrapper to end.
    /// Clients see their connections reset.
    pub fn kill(&mut self) -> Result<(), Error> {
        if let Some(pid) = self.beam_pid() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            remove_perf_map(pid);
        }
        if let Some(mut s) = self.server.take() {
            let _ = s.kill();
            let _ = s.wait();
        }
        Ok(())
    }

    /// Shuts the node down cleanly (`rabbitmqctl shutdown`), then stops its epmd.
    pub fn stop(&mut self) {
        let beam = self.beam_pid();
        if let Some(mut s) = self.server.take() {
            let ok = self
                .ctl(&["shutdown"])
                .map(|o| o.status.success())
                .unwrap_or(false);
            if !ok {
                if let Some(pid) = self.beam_pid() {
                    let _ = Command::new("kill")
                        .args(["-KILL", &pid.to_string()])
                        .status();
                }
                let _ = s.kill();
            }
            let _ = s.wait();
        }
        if let Some(mut e) = self.epmd.take() {
            let _ = e.kill();
            let _ = e.wait();
        }
        if let Some(pid) = beam {
            remove_perf_map(pid);
        }
    }

    /// Where the node's data, logs and config live, for diagnosing failures.
    pub fn log_dir(&self) -> PathBuf {
        self.dir.path().join("log")
    }
}

/// Removes the JIT's perf map (and a jitdump, if the node wrote one) of a node that ended.
fn remove_perf_map(beam: u32) {
    let _ = std::fs::remove_file(format!("/tmp/perf-{beam}.map"));
    let _ = std::fs::remove_file(format!("/tmp/jit-{beam}.dump"));
}

impl Drop for RabbitMq {
    fn drop(&mut self) {
        self.stop();
    }
}

fn set_mode_600(p: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| io("setting the cookie's mode", e))
}

/// One broker per test binary, started on first use.
///
/// Statics are never dropped and the test harness ends with `process::exit`, so a
/// destructor cannot stop this node. A reaper (`sh`) is started instead that blocks
/// reading a pipe whose write end only this process holds: when the test binary exits,
/// however it exits, the pipe closes and the reaper kills the node and its epmd by PID and
/// removes the node's directory.
pub fn shared_rabbitmq() -> Result<&'static RabbitMq, Error> {
    static SHARED: SharedSlot = OnceLock::new();
    shared(&SHARED, &[])
}

/// [`shared_rabbitmq`] with its MQTT plugin enabled ([`RabbitMq::mqtt_port`]): one per test
/// binary, apart from the plain one.
pub fn shared_rabbitmq_mqtt() -> Result<&'static RabbitMq, Error> {
    static SHARED: SharedSlot = OnceLock::new();
    shared(&SHARED, &["rabbitmq_mqtt"])
}

type SharedSlot = OnceLock<Result<(RabbitMq, std::process::ChildStdin), String>>;

fn shared(slot: &'static SharedSlot, plugins: &[&str]) -> Result<&'static RabbitMq, Error> {
    let r = slot.get_or_init(|| {
        let b = RabbitMq::start_with_plugins(&RabbitMqOptions::default(), plugins)
            .map_err(|e| e.to_string())?;
        let reaper = b.reaper().map_err(|e| e.to_string())?;
        Ok((b, reaper))
    });
    match r {
        Ok((b, _)) => Ok(b),
        Err(e) => Err(Error::SharedFailed(e.clone())),
    }
}

impl RabbitMq {
    fn reaper(&self) -> Result<std::process::ChildStdin, Error> {
        let beam = self.beam_pid().map(|p| p.to_string()).unwrap_or_default();
        let epmd = self
            .epmd
            .as_ref()
            .map(|c| c.id().to_string())
            .unwrap_or_default();
        let wrapper = self
            .server
            .as_ref()
            .map(|c| c.id().to_string())
            .unwrap_or_default();
        let script = format!(
            "cat >/dev/null; kill -KILL {beam} {wrapper} {epmd} 2>/dev/null; sleep 1; rm -rf '{}' /tmp/perf-{beam}.map /tmp/jit-{beam}.dump",
            self.dir.path().display()
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| io("starting the broker's reaper", e))?;
        child.stdin.take().ok_or_else(|| {
            io(
                "opening the reaper's pipe",
                std::io::ErrorKind::BrokenPipe.into(),
            )
        })
    }
}
