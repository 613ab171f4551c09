//! A private mosquitto broker.
use crate::rabbitmq::free_port;
use crate::Error;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MOSQUITTO: &str = "/usr/sbin/mosquitto";
const PASSWD: &str = "/usr/bin/mosquitto_passwd";

/// Settings of a mosquitto broker.
#[derive(Debug, Clone, Default)]
pub struct MosquittoOptions {
    /// Users and passwords; empty (default): anonymous clients are allowed.
    pub users: Vec<(String, String)>,
    /// Lines appended to `mosquitto.conf`. Default: none.
    pub extra_config: Vec<String>,
    /// Keep sessions and queued messages across [`Mosquitto::restart`] (saved when the
    /// broker shuts down). Default false.
    pub persistence: bool,
    /// The address to listen on. Default (`None`): 127.0.0.1; a [`crate::TestNet`]'s
    /// gateway makes the broker reachable from the test's hosts.
    pub address: Option<std::net::Ipv4Addr>,
}

/// A running private mosquitto on 127.0.0.1. Dropping it stops it.
#[derive(Debug)]
pub struct Mosquitto {
    dir: tempfile::TempDir,
    address: std::net::Ipv4Addr,
    port: u16,
    child: Option<Child>,
}

impl Mosquitto {
    /// Starts a broker that allows anonymous clients.
    pub fn start() -> Result<Self, Error> {
        Self::start_with(&MosquittoOptions::default())
    }

    /// Starts a broker with `opts` and waits until it accepts connections.
    pub fn start_with(opts: &MosquittoOptions) -> Result<Self, Error> {
        if !Path::new(MOSQUITTO).exists() {
            return Err(Error::NotInstalled {
                program: MOSQUITTO.into(),
                advice: "install Debian's mosquitto package",
            });
        }
        let io = |what: &str| {
            let what = what.to_string();
            move |source| Error::Io { what, source }
        };
        let dir = tempfile::Builder::new()
            .prefix("kiln-mosquitto-")
            .tempdir()
            .map_err(io("creating the broker's directory"))?;
        let port = free_port()?;
        let address = opts.address.unwrap_or(std::net::Ipv4Addr::LOCALHOST);
        let mut conf = format!(
            "listener {port} {address}\nmax_connections -1\nlog_dest file {}\nlog_type error\nlog_type warning\nlog_type notice\n",
            dir.path().join("mosquitto.log").display()
        );
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            // As root mosquitto would drop to the user mosquitto, who cannot write the
            // private directory (its log, its saved sessions).
            conf.push_str("user root\n");
        }
        if opts.persistence {
            let _ = writeln!(
                conf,
                "persistence true\npersistence_location {}/\nautosave_interval 0",
                dir.path().display()
            );
        } else {
            conf.push_str("persistence false\n");
        }
        if opts.users.is_empty() {
            conf.push_str("allow_anonymous true\n");
        } else {
            let pw = dir.path().join("passwd");
            for (i, (u, p)) in opts.users.iter().enumerate() {
                let mut cmd = Command::new(PASSWD);
                if i == 0 {
                    cmd.arg("-c");
                }
                let st = cmd
                    .args(["-b"])
                    .arg(&pw)
                    .args([u, p])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .map_err(io("running mosquitto_passwd"))?;
                if !st.success() {
                    return Err(Error::Io {
                        what: format!("mosquitto_passwd for user {u}"),
                        source: std::io::Error::other(format!("exited with {st}")),
                    });
                }
            }
            let _ = writeln!(
                conf,
                "allow_anonymous false\npassword_file {}",
                pw.display()
            );
        }
        for l in &opts.extra_config {
            let _ = writeln!(conf, "{l}");
        }
        let conf_path = dir.path().join("mosquitto.conf");
        std::fs::write(&conf_path, conf).map_err(io("writing mosquitto.conf"))?;
        let child = Command::new(MOSQUITTO)
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(io("starting mosquitto"))?;
        let mut me = Mosquitto {
            dir,
            address,
            port,
            child: Some(child),
        };
        me.await_startup()?;
        Ok(me)
    }

    fn await_startup(&mut self) -> Result<(), Error> {
        let t = Instant::now();
        loop {
            if crate::listening(self.address, self.port) {
                return Ok(());
            }
            if let Some(Ok(Some(st))) = self.child.as_mut().map(|c| c.try_wait()) {
                return Err(Error::StartTimeout {
                    server: format!("mosquitto (exited with {st})"),
                    seconds: t.elapsed().as_secs(),
                    log: self.log_tail(),
                });
            }
            if t.elapsed() > Duration::from_secs(20) {
                return Err(Error::StartTimeout {
                    server: "mosquitto".into(),
                    seconds: 20,
                    log: self.log_tail(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log_tail(&self) -> String {
        crate::log_tail(&self.dir.path().join("mosquitto.log"))
    }

    /// The broker's whole log (errors, warnings, notices: each client's connection with
    /// its address, `New client connected from 127.0.0.3:61000 as …`).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mosquitto.log")).unwrap_or_default()
    }

    /// The MQTT port (on 127.0.0.1 unless [`MosquittoOptions::address`] said otherwise).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The address it listens on.
    pub fn address(&self) -> std::net::Ipv4Addr {
        self.address
    }

    /// The broker's PID.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Kills the broker (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops the broker with SIGTERM (it saves its sessions when persistent) and starts it
    /// again on the same port: a broker restart as clients see it.
    pub fn restart(&mut self) -> Result<(), Error> {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let _ = c.wait();
        }
        let conf = self.dir.path().join("mosquitto.conf");
        let child = Command::new(MOSQUITTO)
            .arg("-c")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| Error::Io {
                what: "restarting mosquitto".into(),
                source,
            })?;
        self.child = Some(child);
        self.await_startup()
    }
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        self.kill();
    }
}

/// An independent subscriber (`mosquitto_sub -q 1` on a filter) counting the messages it
/// gets, one line per message (its topic) as they come. Dropping it stops it.
pub struct Witness {
    child: Child,
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Witness {
    /// Subscribes to `filter` on `b` and returns once it is subscribed: a marker it
    /// publishes on a topic of its own came back.
    pub fn start(b: &Mosquitto, filter: &str) -> Result<Witness, Error> {
        use std::io::BufRead;
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::sync::Arc;
        let (host, port) = (b.address().to_string(), b.port().to_string());
        let marker = format!("kiln-witness/{}", std::process::id());
        let mut child = Command::new("mosquitto_sub")
            .args(["-h", &host, "-p", &port, "-q", "1", "-F", "%t"])
            .args(["-t", filter, "-t", &marker])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|source| Error::Io {
                what: "starting mosquitto_sub".into(),
                source,
            })?;
        let out = child.stdout.take().expect("piped");
        let count = Arc::new(AtomicU64::new(0));
        let ready = Arc::new(AtomicBool::new(false));
        let (c, r, m) = (count.clone(), ready.clone(), marker.clone());
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if line == m {
                    r.store(true, Ordering::SeqCst);
                } else {
                    c.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        let mut w = Witness { child, count };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ready.load(Ordering::SeqCst) {
            if Instant::now() > deadline || w.child.try_wait().ok().flatten().is_some() {
                return Err(Error::StartTimeout {
                    server: "mosquitto_sub".into(),
                    seconds: 30,
                    log: "it never received its own marker".into(),
                });
            }
            let _ = Command::new("mosquitto_pub")
                .args([
                    "-h", &host, "-p", &port, "-q", "1", "-t", &marker, "-m", "1",
                ])
                .status();
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(w)
    }

    /// The messages received once there are `at_least`, or after 30 s the count so far.
    pub fn count(&self, at_least: u64) -> u64 {
        use std::sync::atomic::Ordering;
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.count.load(Ordering::SeqCst) < at_least && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.count.load(Ordering::SeqCst)
    }
}

impl Drop for Witness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
