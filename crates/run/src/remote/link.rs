//! The controlling side of one agent: an `ssh` child whose stdin and stdout carry the
//! protocol, the copy of kiln it runs on the other host, and the thread that reads it.
use super::clock::{ClockSample, Exchange};
use super::wire::{self, FromAgent, Hello, ToAgent};
use super::{Destination, HostSpec, SshConfig};
use std::io::{BufReader, Read};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a link's reader hands on: a message with its blobs, or the end of the link.
#[derive(Debug)]
pub(crate) enum Routed {
    Msg(FromAgent, Vec<Vec<u8>>),
    Lost(String),
}

/// Messages of one host, with its index in the fleet.
pub(crate) type Inbox = Sender<(usize, Routed)>;

/// How long an exchange may take before the agent counts as unresponsive.
const PONG_TIMEOUT: Duration = Duration::from_secs(10);

/// The last few KiB a stream said, for messages.
#[derive(Debug, Default)]
struct Tail(Vec<u8>);

impl Tail {
    fn push(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
        let over = self.0.len().saturating_sub(4096);
        self.0.drain(..over);
    }
    /// Its last lines, made safe for a terminal (another host's words).
    fn text(&self) -> String {
        let lines: Vec<&[u8]> = self
            .0
            .split(|&b| b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty())
            .collect();
        lines[lines.len().saturating_sub(6)..]
            .iter()
            .map(|l| kiln_model::text::clean_bytes(l.trim_ascii_end(), 200))
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

/// Single-quotes `s` for a POSIX shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The agent directory as a shell word: `~/x` is under the remote `$HOME`.
fn dir_word(dir: &str) -> String {
    match dir.strip_prefix("~/") {
        Some(rest) => format!("\"$HOME\"/{}", quote(rest)),
        None if dir == "~" => "\"$HOME\"".into(),
        None => quote(dir),
    }
}

fn ssh_command(ssh: &SshConfig, dest: &Destination, remote: &str) -> Command {
    let mut words = ssh.command.iter();
    let mut c = Command::new(words.next().map(String::as_str).unwrap_or("ssh"));
    c.args(words);
    if let Some(p) = dest.port {
        c.args(["-p", &p.to_string()]);
    }
    c.arg(match &dest.user {
        Some(u) => format!("{u}@{}", dest.host),
        None => dest.host.clone(),
    });
    c.arg(remote);
    // Its own process group: a Ctrl-C at the terminal is kiln's to handle (it stops the
    // agents and keeps the run); kiln's end closes the ssh's stdin, which ends the agent.
    use std::os::unix::process::CommandExt;
    c.process_group(0);
    c
}

/// Copies this kiln binary to `path` on the host (through the same ssh: no scp needed).
fn install(ssh: &SshConfig, dest: &Destination, build: &str) -> Result<(), String> {
    let dir = dir_word(&ssh.agent_dir);
    let script = format!(
        "d={dir}; mkdir -p \"$d\" && t=\"$d/.kiln-{build}.$$\" && cat > \"$t\" && chmod 755 \"$t\" && mv -f \"$t\" \"$d/kiln-{build}\""
    );
    let exe = std::fs::File::open("/proc/self/exe")
        .map_err(|e| format!("cannot read this kiln binary to copy it: {e}"))?;
    let out = ssh_command(ssh, dest, &script)
        .stdin(exe)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run '{}': {e}", ssh.command.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "copying kiln to {}:{} failed ({}): {}",
            dest.host,
            ssh.agent_dir,
            out.status,
            kiln_model::text::clean_bytes(out.stderr.trim_ascii(), wire::MAX_TEXT)
        ))
    }
}

/// One connected agent.
pub(crate) struct Link {
    pub spec: HostSpec,
    pub hello: Hello,
    stdin: Mutex<ChildStdin>,
    child: Mutex<Child>,
    pongs: Mutex<Receiver<(u64, u64, u64, u64)>>,
    next_ping: AtomicU64,
    closed: Arc<AtomicBool>,
}

struct Started {
    child: Child,
    stdout: BufReader<std::process::ChildStdout>,
    stderr: Arc<Mutex<Tail>>,
}

fn start(
    ssh: &SshConfig,
    dest: &Destination,
    build: &str,
) -> Result<Result<Started, String>, String> {
    let dir = dir_word(&ssh.agent_dir);
    let remote = format!(
        "b={dir}/kiln-{build}; if [ -x \"$b\" ]; then exec \"$b\" agent; else echo {}; fi",
        wire::MISSING
    );
    let mut child = ssh_command(ssh, dest, &remote)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run '{}': {e}", ssh.command.join(" ")))?;
    let stderr = Arc::new(Mutex::new(Tail::default()));
    if let Some(mut e) = child.stderr.take() {
        let tail = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = e.read(&mut buf) {
                if n == 0 {
                    break;
                }
                tail.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(&buf[..n]);
            }
        });
    }
    let Some(out) = child.stdout.take() else {
        return Err("no stdout from ssh".into());
    };
    let mut stdout = BufReader::with_capacity(1 << 16, out);
    match wire::await_magic(&mut stdout) {
        Ok(Ok(_greeting)) => Ok(Ok(Started {
            child,
            stdout,
            stderr,
        })),
        Ok(Err(said)) if String::from_utf8_lossy(&said).contains(wire::MISSING) => {
            let _ = child.wait();
            Ok(Err("missing".into()))
        }
        Ok(Err(_)) | Err(_) => {
            let st = child.wait();
            // The stderr reader may still be copying the last words.
            std::thread::sleep(Duration::from_millis(50));
            let said = stderr.lock().unwrap_or_else(|p| p.into_inner()).text();
            Err(format!(
                "ssh to {} ended before the agent started ({}){}",
                dest,
                st.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string()),
                if said.is_empty() {
                    String::new()
                } else {
                    format!(": {said}")
                }
            ))
        }
    }
}

impl Link {
    /// Starts kiln's agent on the host (copying this binary there first if that build is
    /// not there yet) and reads its greeting; its messages go to `load` and `record` (with
    /// `index`).
    pub fn connect(
        index: usize,
        spec: &HostSpec,
        ssh: &SshConfig,
        load: Inbox,
        record: Inbox,
    ) -> Result<Link, String> {
        let build = super::agent::own_build();
        if build.is_empty() {
            return Err("this kiln binary has no build id to name its copy on other hosts by (link it with --build-id)".into());
        }
        let mut installed = false;
        let started = match start(ssh, &spec.destination, &build)? {
            Ok(s) => s,
            Err(_) => {
                install(ssh, &spec.destination, &build)?;
                installed = true;
                start(ssh, &spec.destination, &build)?.map_err(|_| {
                    format!(
                        "kiln was copied to {} but does not start there",
                        spec.destination
                    )
                })?
            }
        };
        let Started {
            mut child,
            mut stdout,
            stderr,
        } = started;
        let hello = match wire::read_frame::<FromAgent>(&mut stdout) {
            Ok((FromAgent::Hello(mut h), _)) => {
                h.clean();
                h
            }
            Ok((other, _)) => {
                let _ = child.kill();
                return Err(format!(
                    "the agent on {} began with a '{}' message, not its greeting",
                    spec.name,
                    other.kind()
                ));
            }
            Err(e) => {
                let _ = child.kill();
                return Err(format!("the agent on {} did not greet: {e}", spec.name));
            }
        };
        if hello.build != build {
            let _ = child.kill();
            return Err(format!(
                "the agent on {} is build {}, not this kiln's {build}: remove {}/kiln-{build} there",
                spec.name, hello.build, ssh.agent_dir
            ));
        }
        let stdin = child.stdin.take().ok_or("no stdin to ssh")?;
        let (pong_tx, pong_rx) = std::sync::mpsc::channel();
        let closed = Arc::new(AtomicBool::new(false));
        if installed {
            eprintln!(
                "kiln run: copied kiln to {}:{}",
                spec.destination, ssh.agent_dir
            );
        }
        let link = Link {
            spec: spec.clone(),
            hello,
            stdin: Mutex::new(stdin),
            child: Mutex::new(child),
            pongs: Mutex::new(pong_rx),
            next_ping: AtomicU64::new(1),
            closed: closed.clone(),
        };
        let name = spec.name.clone();
        std::thread::Builder::new()
            .name(format!("kiln-link-{index}"))
            .spawn(move || {
                let why = loop {
                    match wire::read_frame::<FromAgent>(&mut stdout) {
                        Ok((
                            FromAgent::Pong {
                                id,
                                recv_ns,
                                send_ns,
                            },
                            _,
                        )) => {
                            let t3 = kiln_os::clock::monotonic_ns();
                            let _ = pong_tx.send((id, recv_ns, send_ns, t3));
                        }
                        Ok((m, blobs)) => {
                            let m = m.cleaned();
                            let to = match &m {
                                FromAgent::RecordReady | FromAgent::Recorded(_) => &record,
                                FromAgent::Failed { what, .. } if what == "record" => &record,
                                _ => &load,
                            };
                            let _ = to.send((index, Routed::Msg(m, blobs)));
                        }
                        Err(wire::FrameError::Malformed(e)) => {
                            break format!("the agent on {name} sent a malformed frame: {e}")
                        }
                        Err(_) => break format!("the connection to the agent on {name} ended"),
                    }
                };
                if !closed.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(50));
                    let said = stderr.lock().unwrap_or_else(|p| p.into_inner()).text();
                    let why = if said.is_empty() {
                        why
                    } else {
                        format!("{why}: {said}")
                    };
                    let _ = load.send((index, Routed::Lost(why.clone())));
                    let _ = record.send((index, Routed::Lost(why)));
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(link)
    }

    /// Sends a message; false when the link is gone.
    pub fn send(&self, m: &ToAgent) -> bool {
        let mut s = self.stdin.lock().unwrap_or_else(|p| p.into_inner());
        wire::write_frame(&mut *s, m, &[]).is_ok()
    }

    /// Measures the agent's clock against this one with `n` exchanges.
    pub(crate) fn sync_clock(&self, n: usize) -> Result<ClockSample, String> {
        let rx = self.pongs.lock().unwrap_or_else(|p| p.into_inner());
        let mut ex = Vec::with_capacity(n);
        for _ in 0..n {
            let id = self.next_ping.fetch_add(1, Ordering::SeqCst);
            let t0 = kiln_os::clock::monotonic_ns();
            if !self.send(&ToAgent::Ping { id }) {
                return Err(format!("the connection to {} is gone", self.spec.name));
            }
            let deadline = Instant::now() + PONG_TIMEOUT;
            loop {
                match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                    Ok((got, t1, t2, t3)) if got == id => {
                        ex.push(Exchange { t0, t1, t2, t3 });
                        break;
                    }
                    Ok(_) => continue,
                    Err(RecvTimeoutError::Timeout) => {
                        return Err(format!(
                            "the agent on {} did not answer a clock exchange within {} s",
                            self.spec.name,
                            PONG_TIMEOUT.as_secs()
                        ))
                    }
                    Err(RecvTimeoutError::Disconnected) => {
                        return Err(format!("the connection to {} is gone", self.spec.name))
                    }
                }
            }
        }
        ClockSample::best(&ex).ok_or_else(|| "no clock exchange".into())
    }

    /// Says goodbye and waits up to `grace` for the agent and its ssh to end, then kills
    /// the ssh.
    pub fn close(&self, grace: Duration) {
        self.closed.store(true, Ordering::SeqCst);
        self.send(&ToAgent::Bye);
        let mut c = self.child.lock().unwrap_or_else(|p| p.into_inner());
        let t = Instant::now();
        while t.elapsed() < grace {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
        let mut c = self.child.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(None) = c.try_wait() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Sends a heartbeat to every link every second until `done` is raised: an agent that
/// hears nothing for its watchdog's time stops.
pub(crate) fn heartbeat(links: Vec<Arc<Link>>, done: kiln_os::stop::Stop) {
    std::thread::Builder::new()
        .name("kiln-heartbeat".into())
        .spawn(move || {
            while !done.sleep(Duration::from_secs(1)) {
                for l in &links {
                    l.send(&ToAgent::Ping { id: 0 });
                }
            }
        })
        .ok();
}
