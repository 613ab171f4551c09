//! Several hosts on one machine: network namespaces joined by veth pairs to a bridge, each
//! with its own address in a private range and, when a test asks, its own `sshd`.
//!
//! `kiln run --agent ssh://…` and `-p HOST:PID` reach other machines over SSH. The tests
//! make those machines here: [`TestNet::create`] adds a bridge in the test's own namespace
//! (its address, [`TestNet::gateway`], is the controlling host on the test network) and one
//! namespace per host, each joined to the bridge by a veth pair and given `10.200.S.N`
//! (S chosen free on this machine, N = 2, 3…). Processes started with [`NetHost::command`]
//! run in that namespace: they see only its network, share the machine's processes and
//! files. [`Sshd::start`] runs Debian's `openssh-server` in a namespace with its own
//! configuration, host key and one authorized key ([`SshKeys`], made with `ssh-keygen`),
//! listening on the namespace's address; optionally in a time namespace whose
//! CLOCK_MONOTONIC is shifted (a host with a wrong clock).
//!
//! Everything is removed when the [`TestNet`] is dropped — every process left in its
//! namespaces stopped by PID, the namespaces and the bridge deleted — and by a guard
//! process when the test binary dies first.
use crate::proc::{alive, signal};
use crate::Error;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

const IP: &str = "/usr/sbin/ip";
const SSHD: &str = "/usr/sbin/sshd";
const SSH_KEYGEN: &str = "/usr/bin/ssh-keygen";

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// Runs `ip ARGS…` (in namespace `ns` when given) and fails with its stderr.
fn ip(ns: Option<&str>, args: &[&str]) -> Result<(), Error> {
    let mut cmd = Command::new(IP);
    if let Some(ns) = ns {
        cmd.args(["netns", "exec", ns, IP]);
    }
    let out = cmd
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(io(format!("running ip {}", args.join(" "))))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::Io {
            what: format!("ip {}", args.join(" ")),
            source: std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        })
    }
}

/// One host of a [`TestNet`]: a network namespace and its address.
#[derive(Debug, Clone)]
pub struct NetHost {
    /// The namespace's name (`ip netns`).
    pub netns: String,
    /// Its address on the test network.
    pub addr: Ipv4Addr,
}

impl NetHost {
    /// `program` to be run inside the host's namespace (`ip netns exec NS program`; the
    /// process is `program` itself: `ip` execs it).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(IP);
        c.args(["netns", "exec", &self.netns]).arg(program);
        c
    }

    /// The PIDs of the processes in the host's namespace now.
    pub fn pids(&self) -> Vec<u32> {
        netns_pids(&self.netns)
    }
}

fn netns_pids(ns: &str) -> Vec<u32> {
    Command::new(IP)
        .args(["netns", "pids", ns])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A private network of hosts on this machine. Dropping it removes everything.
#[derive(Debug)]
pub struct TestNet {
    bridge: String,
    gateway: Ipv4Addr,
    hosts: Vec<NetHost>,
    guard: Option<(Child, ChildStdin)>,
}

/// Chooses a /24 of 10.200.0.0/16 that no interface of this machine uses, under a lock so
/// that test binaries creating networks at once choose different ones.
fn free_subnet(bridge: &str) -> Result<u8, Error> {
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/kiln-testnet.lock")
        .map_err(io("opening /tmp/kiln-testnet.lock"))?;
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a file descriptor we own; released when `lock` is closed.
    unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    let used = Command::new(IP)
        .args(["-o", "-4", "addr", "show"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let start = 20 + (std::process::id() % 200) as u8;
    for k in 0..230u16 {
        let s = ((start as u16 + k) % 230 + 20) as u8;
        if !used.contains(&format!("inet 10.200.{s}.")) {
            ip(
                None,
                &["addr", "add", &format!("10.200.{s}.1/24"), "dev", bridge],
            )?;
            return Ok(s);
        }
    }
    Err(Error::Io {
        what: "choosing a test subnet".into(),
        source: std::io::Error::other("every 10.200.S.0/24 is in use"),
    })
}

impl TestNet {
    /// Creates `n` hosts joined by a bridge, with addresses 10.200.S.2 … 10.200.S.(n+1).
    /// Needs root (network namespaces).
    pub fn create(n: usize) -> Result<TestNet, Error> {
        if !Path::new(IP).exists() {
            return Err(Error::NotInstalled {
                program: IP.into(),
                advice: "install Debian's iproute2 package",
            });
        }
        let tag = format!("{}{}", std::process::id(), seq());
        let bridge = format!("kb{tag}");
        let mut net = TestNet {
            bridge: bridge.clone(),
            gateway: Ipv4Addr::UNSPECIFIED,
            hosts: Vec::new(),
            guard: None,
        };
        ip(None, &["link", "add", &bridge, "type", "bridge"])?;
        // The guard exists from the bridge on, so nothing outlives a test binary that dies.
        let names: Vec<String> = (0..n).map(|i| format!("kiln-{tag}-{i}")).collect();
        net.guard = Some(guard(&bridge, &names)?);
        let s = free_subnet(&bridge)?;
        net.gateway = Ipv4Addr::new(10, 200, s, 1);
        ip(None, &["link", "set", &bridge, "up"])?;
        for (i, ns) in names.iter().enumerate() {
            ip(None, &["netns", "add", ns])?;
            let addr = Ipv4Addr::new(10, 200, s, i as u8 + 2);
            net.hosts.push(NetHost {
                netns: ns.clone(),
                addr,
            });
            let outer = format!("kv{tag}-{i}");
            let inner = format!("ki{tag}-{i}");
            ip(
                None,
                &[
                    "link", "add", &outer, "type", "veth", "peer", "name", &inner,
                ],
            )?;
            ip(None, &["link", "set", &inner, "netns", ns])?;
            ip(None, &["link", "set", &outer, "master", &bridge])?;
            ip(None, &["link", "set", &outer, "up"])?;
            ip(
                Some(ns),
                &["addr", "add", &format!("{addr}/24"), "dev", &inner],
            )?;
            ip(Some(ns), &["link", "set", &inner, "up"])?;
            ip(Some(ns), &["link", "set", "lo", "up"])?;
        }
        Ok(net)
    }

    /// The controlling host's address on the test network (the bridge's): servers a
    /// test runs outside the namespaces listen here to be reachable from every host.
    pub fn gateway(&self) -> Ipv4Addr {
        self.gateway
    }

    /// The hosts.
    pub fn hosts(&self) -> &[NetHost] {
        &self.hosts
    }

    /// Host `i`.
    pub fn host(&self, i: usize) -> &NetHost {
        &self.hosts[i]
    }
}

fn seq() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static SEQ: AtomicU32 = AtomicU32::new(0);
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// A shell that, when this process exits without disarming it, stops every process left
/// in the namespaces (by PID) and deletes the namespaces and the bridge.
fn guard(bridge: &str, namespaces: &[String]) -> Result<(Child, ChildStdin), Error> {
    let mut script = String::from("read line; [ \"$line\" = disarm ] && exit 0; ");
    for ns in namespaces {
        script.push_str(&format!(
            "for p in $({IP} netns pids {ns} 2>/dev/null); do kill -KILL $p; done; {IP} netns del {ns} 2>/dev/null; "
        ));
    }
    script.push_str(&format!("{IP} link del {bridge} 2>/dev/null; exit 0"));
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(io("starting the test network's guard"))?;
    let stdin = child.stdin.take().ok_or_else(|| Error::Io {
        what: "opening the guard's pipe".into(),
        source: std::io::ErrorKind::BrokenPipe.into(),
    })?;
    Ok((child, stdin))
}

impl Drop for TestNet {
    fn drop(&mut self) {
        for h in &self.hosts {
            // Twice: a process may start another while the first round runs.
            for _ in 0..2 {
                for p in netns_pids(&h.netns) {
                    signal(p, libc::SIGKILL);
                }
            }
            let t = Instant::now();
            while !netns_pids(&h.netns).is_empty() && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = ip(None, &["netns", "del", &h.netns]);
        }
        let _ = ip(None, &["link", "del", &self.bridge]);
        if let Some((mut child, mut stdin)) = self.guard.take() {
            use std::io::Write;
            let _ = stdin.write_all(b"disarm\n");
            drop(stdin);
            let _ = child.wait();
        }
    }
}

/// A client key pair, the authorized-keys file holding its public half, and a known-hosts
/// file for the test's sshd host keys: what `ssh` needs to reach the test hosts without a
/// question.
#[derive(Debug)]
pub struct SshKeys {
    dir: tempfile::TempDir,
}

impl SshKeys {
    /// Generates the client key (ed25519, no passphrase) and the host key the test's sshds
    /// share.
    pub fn generate() -> Result<SshKeys, Error> {
        if !Path::new(SSH_KEYGEN).exists() || !Path::new(SSHD).exists() {
            return Err(Error::NotInstalled {
                program: SSHD.into(),
                advice: "install Debian's openssh-server and openssh-client packages",
            });
        }
        let dir = tempfile::Builder::new()
            .prefix("kiln-ssh-")
            .tempdir()
            .map_err(io("creating the SSH keys' directory"))?;
        for name in ["id", "host_key"] {
            let st = Command::new(SSH_KEYGEN)
                .args(["-q", "-t", "ed25519", "-N", "", "-C", "kiln-test", "-f"])
                .arg(dir.path().join(name))
                .stdin(Stdio::null())
                .status()
                .map_err(io("running ssh-keygen"))?;
            if !st.success() {
                return Err(Error::Io {
                    what: "ssh-keygen".into(),
                    source: std::io::Error::other(format!("exited with {st}")),
                });
            }
        }
        std::fs::copy(
            dir.path().join("id.pub"),
            dir.path().join("authorized_keys"),
        )
        .map_err(io("writing authorized_keys"))?;
        std::fs::write(dir.path().join("known_hosts"), "").map_err(io("writing known_hosts"))?;
        Ok(SshKeys { dir })
    }

    /// The client's private key.
    pub fn identity(&self) -> PathBuf {
        self.dir.path().join("id")
    }

    /// The known-hosts file (every sshd started with these keys is added).
    pub fn known_hosts(&self) -> PathBuf {
        self.dir.path().join("known_hosts")
    }

    /// The `ssh` command line that reaches the test hosts with these keys, as
    /// `kiln run --ssh-command` takes it.
    pub fn ssh_command(&self) -> String {
        format!(
            "ssh -i {} -o UserKnownHostsFile={} -o StrictHostKeyChecking=yes -o BatchMode=yes -o LogLevel=ERROR",
            self.identity().display(),
            self.known_hosts().display()
        )
    }

    fn add_known_host(&self, addr: Ipv4Addr, port: u16) -> Result<(), Error> {
        let pubkey = std::fs::read_to_string(self.dir.path().join("host_key.pub"))
            .map_err(io("reading the host key"))?;
        let key: Vec<&str> = pubkey.split_whitespace().take(2).collect();
        let line = format!("[{addr}]:{port} {}\n", key.join(" "));
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(self.known_hosts())
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .map_err(io("writing known_hosts"))
    }
}

/// A private `sshd` in a test host's namespace, stopped by PID when dropped (with every
/// session it started).
#[derive(Debug)]
pub struct Sshd {
    child: Option<Child>,
    dir: tempfile::TempDir,
    host: NetHost,
    port: u16,
}

impl Sshd {
    /// Starts sshd on `host`'s address with `keys` (root may log in with the key). With
    /// `monotonic_offset_s`, sshd and every session run in a time namespace whose
    /// CLOCK_MONOTONIC is that many seconds ahead of (or behind) the machine's.
    pub fn start(
        host: &NetHost,
        keys: &SshKeys,
        monotonic_offset_s: Option<i64>,
    ) -> Result<Sshd, Error> {
        // Debian's sshd needs its privilege separation directory.
        std::fs::create_dir_all("/run/sshd").map_err(io("creating /run/sshd"))?;
        let dir = tempfile::Builder::new()
            .prefix("kiln-sshd-")
            .tempdir()
            .map_err(io("creating sshd's directory"))?;
        let port = crate::free_port()?;
        let conf = format!(
            "Port {port}\nListenAddress {addr}\nHostKey {key}\nPidFile {dir}/sshd.pid\n\
             AuthorizedKeysFile {auth}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n\
             PrintMotd no\nPrintLastLog no\nLogLevel ERROR\nMaxStartups 100\nMaxSessions 100\n",
            addr = host.addr,
            key = keys.dir.path().join("host_key").display(),
            dir = dir.path().display(),
            auth = keys.dir.path().join("authorized_keys").display(),
        );
        let conf_path = dir.path().join("sshd_config");
        std::fs::write(&conf_path, conf).map_err(io("writing sshd_config"))?;
        let log =
            std::fs::File::create(dir.path().join("sshd.log")).map_err(io("creating sshd.log"))?;
        let mut cmd = host.command(match monotonic_offset_s {
            Some(_) => "unshare",
            None => SSHD,
        });
        if let Some(off) = monotonic_offset_s {
            cmd.args(["--time", &format!("--monotonic={off}"), SSHD]);
        }
        let child = cmd
            .args(["-D", "-e", "-f"])
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(io("starting sshd"))?;
        let mut me = Sshd {
            child: Some(child),
            dir,
            host: host.clone(),
            port,
        };
        let t = Instant::now();
        loop {
            if crate::listening(host.addr, port) {
                break;
            }
            if let Some(Ok(Some(st))) = me.child.as_mut().map(|c| c.try_wait()) {
                return Err(Error::StartTimeout {
                    server: format!("sshd (exited with {st})"),
                    seconds: t.elapsed().as_secs(),
                    log: crate::log_tail(&me.dir.path().join("sshd.log")),
                });
            }
            if t.elapsed() > Duration::from_secs(20) {
                return Err(Error::StartTimeout {
                    server: "sshd".into(),
                    seconds: 20,
                    log: crate::log_tail(&me.dir.path().join("sshd.log")),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        keys.add_known_host(host.addr, port)?;
        Ok(me)
    }

    /// Where `kiln run --agent` reaches it: `ssh://root@ADDR:PORT`.
    pub fn destination(&self) -> String {
        format!("ssh://root@{}:{}", self.host.addr, self.port)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The host it serves.
    pub fn host(&self) -> &NetHost {
        &self.host
    }

    /// The listening sshd's PID.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Stops the listening sshd and every process of its host's namespace (its sessions
    /// and what they started), by PID.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for _ in 0..2 {
            for p in self.host.pids() {
                if alive(p) {
                    signal(p, libc::SIGKILL);
                }
            }
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}
