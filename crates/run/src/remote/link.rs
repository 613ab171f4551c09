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

/// How long a message may wait for room in the pipe to ssh (an agent that stopped reading).
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

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
    // agents and keeps the run), and kiln ends the whole group (ssh and whatever it
    // started) on every path. It dies with kiln too, however kiln ends.
    kiln_os::child::own_group(&mut c);
    c
}

/// Starts `c` from a thread that lives as long as the process (the death signal of an ssh
/// child follows the thread that started it, and the threads that connect end early), its
/// group registered for the signal handler's [`kiln_os::child::kill_all`] until [`end`].
fn spawn(c: Command) -> std::io::Result<Child> {
    let child = spawn_here(c)?;
    kiln_os::child::register(child.id());
    Ok(child)
}

fn spawn_here(mut c: Command) -> std::io::Result<Child> {
    type Order = (Command, Sender<std::io::Result<Child>>);
    static SPAWNER: std::sync::OnceLock<Option<Sender<Order>>> = std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Order>();
        std::thread::Builder::new()
            .name("kiln-ssh-spawner".into())
            .spawn(move || {
                for (mut c, back) in rx {
                    let _ = back.send(c.spawn());
                }
            })
            .ok()
            .map(|_| tx)
    });
    let Some(tx) = spawner else { return c.spawn() };
    let (back, rx) = std::sync::mpsc::channel();
    if let Err(mut e) = tx.send((c, back)) {
        return e.0 .0.spawn();
    }
    rx.recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("the ssh spawner is gone")))
}

/// Kills `child`'s process group (ssh and what it started) and reaps it: how it ended.
fn end(child: &mut Child) -> Option<std::process::ExitStatus> {
    // SAFETY: kill(2); the group is the child's own (process_group(0)), and the child is
    // reaped only here, after: its PID, the group's id, cannot have been reused.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.kill();
    kiln_os::child::unregister(child.id());
    child.wait().ok()
}

/// Whether `child` has exited (without reaping it: [`end`] does, after its group).
fn exited(child: &Child) -> bool {
    kiln_os::child::has_exited(child)
}

/// How long connecting to a host may take, and the run's stop, which ends every wait on a
/// host: once it is raised, waits share [`STOP_BUDGET`] from the moment it was first seen.
#[derive(Debug, Clone)]
pub(crate) struct Patience {
    pub timeout: Duration,
    pub stop: kiln_os::stop::Stop,
    stopped_at: Arc<std::sync::OnceLock<Instant>>,
}

/// How long all waits on hosts may go on once the run is stopped (Ctrl-C).
/// (0.8 s: with the save after it, kiln ends within about a second of the stop.)
pub(crate) const STOP_BUDGET: Duration = Duration::from_millis(800);

impl Patience {
    pub fn new(timeout: Duration, stop: kiln_os::stop::Stop) -> Patience {
        Patience {
            timeout,
            stop,
            stopped_at: Arc::default(),
        }
    }

    /// `d`, or the end of the stop's budget when the run is stopped and that is sooner.
    pub fn deadline(&self, d: Instant) -> Instant {
        if !self.stop.is_raised() {
            return d;
        }
        d.min(*self.stopped_at.get_or_init(Instant::now) + STOP_BUDGET)
    }
}

/// Copies this kiln binary to `path` on the host (through the same ssh: no scp needed). A
/// copy that makes no progress for the connect timeout, or a stop, ends it.
fn install(
    ssh: &SshConfig,
    dest: &Destination,
    build: &str,
    patience: &Patience,
) -> Result<(), String> {
    let dir = dir_word(&ssh.agent_dir);
    let script = format!(
        "d={dir}; mkdir -p \"$d\" && t=\"$d/.kiln-{build}.$$\" && cat > \"$t\" && chmod 755 \"$t\" && mv -f \"$t\" \"$d/kiln-{build}\""
    );
    let mut exe = std::fs::File::open("/proc/self/exe")
        .map_err(|e| format!("cannot read this kiln binary to copy it: {e}"))?;
    let mut cmd = ssh_command(ssh, dest, &script);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child =
        spawn(cmd).map_err(|e| format!("cannot run '{}': {e}", ssh.command.join(" ")))?;
    let stderr = tail_of(child.stderr.take());
    let progress = Arc::new(AtomicU64::new(kiln_os::clock::monotonic_ns()));
    if let Some(mut stdin) = child.stdin.take() {
        let progress = progress.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n @ 1..) = exe.read(&mut buf) {
                if std::io::Write::write_all(&mut stdin, &buf[..n]).is_err() {
                    return;
                }
                progress.store(kiln_os::clock::monotonic_ns(), Ordering::Relaxed);
            }
        });
    }
    loop {
        if exited(&child) {
            break;
        }
        let quiet = kiln_os::clock::monotonic_ns().saturating_sub(progress.load(Ordering::Relaxed));
        if patience.stop.is_raised() || quiet > patience.timeout.as_nanos() as u64 {
            end(&mut child);
            return Err(if patience.stop.is_raised() {
                format!("interrupted while copying kiln to {dest}")
            } else {
                format!(
                    "copying kiln to {dest} made no progress for {} s (--connect-timeout)",
                    patience.timeout.as_secs_f64()
                )
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let Some(status) = end(&mut child) else {
        return Err(format!(
            "copying kiln to {dest}: its ssh could not be waited for"
        ));
    };
    if status.success() {
        Ok(())
    } else {
        std::thread::sleep(Duration::from_millis(50));
        Err(format!(
            "copying kiln to {}:{} failed ({status}): {}",
            dest.host,
            ssh.agent_dir,
            lock(&stderr).text()
        ))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The last words of a stream, gathered by a thread of their own.
fn tail_of(r: Option<impl Read + Send + 'static>) -> Arc<Mutex<Tail>> {
    let tail = Arc::new(Mutex::new(Tail::default()));
    if let Some(mut e) = r {
        let tail = tail.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = e.read(&mut buf) {
                lock(&tail).push(&buf[..n]);
            }
        });
    }
    tail
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
    /// A send gave up half-way: nothing more can be framed on this link.
    broken: AtomicBool,
    patience: Patience,
}

/// Where a link's messages go once the agent greeted.
#[derive(Clone)]
struct Route {
    index: usize,
    name: String,
    load: Inbox,
    record: Inbox,
    pongs: Sender<(u64, u64, u64, u64)>,
    closed: Arc<AtomicBool>,
    /// The most bytes one frame may have (the input limit, `--max-input`).
    max_input: u64,
}

/// What came before the first message, and the first message.
enum Greeting {
    /// This build is not on the host yet.
    Missing,
    /// The stream ended, or went on too long, without the agent's marker.
    NoAgent(String),
    /// The agent greeted.
    Hello(Hello),
    /// The first message was not a greeting, or not a frame.
    Refused(String),
}

/// Reads the greeting, hands it to `greeted`, then routes the agent's messages until the
/// stream ends.
fn read_link(
    out: std::process::ChildStdout,
    route: Route,
    stderr: Arc<Mutex<Tail>>,
    greeted: Sender<Greeting>,
    marked: Arc<AtomicBool>,
) {
    let mut stdout = BufReader::with_capacity(1 << 16, out);
    let g = match wire::await_magic(&mut stdout) {
        Ok(Ok(_)) if !marked.swap(true, Ordering::SeqCst) => {
            match wire::read_frame_limited::<FromAgent>(
                &mut stdout,
                &|_| wire::MAX_CONTROL,
                route.max_input,
            ) {
                Ok((FromAgent::Hello(mut h), _)) => {
                    h.clean();
                    Greeting::Hello(h)
                }
                Ok((other, _)) => Greeting::Refused(format!(
                    "began with a '{}' message, not its greeting",
                    other.kind()
                )),
                Err(e) => Greeting::Refused(format!("did not greet: {e}")),
            }
        }
        Ok(Err(said)) if String::from_utf8_lossy(&said).contains(wire::MISSING) => {
            Greeting::Missing
        }
        Ok(Err(said)) if said.len() > wire::MAX_BEFORE_MAGIC => Greeting::NoAgent(format!(
            "wrote {} without the agent's marker",
            kiln_model::input::format_size(said.len() as u64)
        )),
        Ok(Ok(_)) | Ok(Err(_)) => Greeting::NoAgent("ended before the agent started".into()),
        Err(e) => Greeting::NoAgent(format!("ended before the agent started ({e})")),
    };
    let greeted_ok = matches!(g, Greeting::Hello(_));
    if greeted.send(g).is_err() || !greeted_ok {
        return;
    }
    let Route {
        index,
        name,
        load,
        record,
        pongs,
        closed,
        max_input,
    } = route;
    let limit = wire::from_agent_limit;
    let why = loop {
        match wire::read_frame_limited::<FromAgent>(&mut stdout, &limit, max_input) {
            Ok((
                FromAgent::Pong {
                    id,
                    recv_ns,
                    send_ns,
                },
                _,
            )) => {
                let t3 = kiln_os::clock::monotonic_ns();
                let _ = pongs.send((id, recv_ns, send_ns, t3));
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
        let said = lock(&stderr).text();
        let why = if said.is_empty() {
            why
        } else {
            format!("{why}: {said}")
        };
        let _ = load.send((index, Routed::Lost(why.clone())));
        let _ = record.send((index, Routed::Lost(why)));
    }
}

/// Starts the agent over ssh and waits for its greeting, within the connect timeout and
/// until a stop. `Ok(None)`: this build is not on the host yet.
fn start(
    ssh: &SshConfig,
    dest: &Destination,
    build: &str,
    patience: &Patience,
    route: &Route,
) -> Result<Option<(Child, Hello)>, String> {
    let dir = dir_word(&ssh.agent_dir);
    let remote = format!(
        "b={dir}/kiln-{build}; if [ -x \"$b\" ]; then exec \"$b\" agent; else echo {}; fi",
        wire::MISSING
    );
    let mut cmd = ssh_command(ssh, dest, &remote);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child =
        spawn(cmd).map_err(|e| format!("cannot run '{}': {e}", ssh.command.join(" ")))?;
    let stderr = tail_of(child.stderr.take());
    let Some(out) = child.stdout.take() else {
        end(&mut child);
        return Err("no stdout from ssh".into());
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let marked = Arc::new(AtomicBool::new(false));
    {
        let (route, stderr, marked) = (route.clone(), stderr.clone(), marked.clone());
        std::thread::Builder::new()
            .name(format!("kiln-link-{}", route.index))
            .spawn(move || read_link(out, route, stderr, tx, marked))
            .map_err(|e| e.to_string())?;
    }
    let deadline = Instant::now() + patience.timeout;
    let said = |why: String, child: &mut Child| {
        // ssh's own words on its way out (a refused connection, an unknown host).
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(200) && !exited(child) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let own = exited(child);
        let status = end(child);
        std::thread::sleep(Duration::from_millis(50));
        let said = lock(&stderr).text();
        let why = match status {
            Some(st) if own => format!("{why} ({st})"),
            _ => why,
        };
        if said.is_empty() {
            why
        } else {
            format!("{why}: {said}")
        }
    };
    let g = loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(g) => break g,
            Err(RecvTimeoutError::Timeout) if patience.stop.is_raised() => {
                end(&mut child);
                return Err(format!("interrupted while connecting to {dest}"));
            }
            Err(RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                let secs = patience.timeout.as_secs_f64();
                let why = if marked.load(Ordering::SeqCst) {
                    format!("the agent on {dest} began, then did not greet within {secs} s (--connect-timeout)")
                } else {
                    format!("no greeting from the agent on {dest} within {secs} s (--connect-timeout): the host, its sshd or ssh said nothing")
                };
                return Err(said(why, &mut child));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(said(format!("ssh to {dest}: its reader ended"), &mut child));
            }
        }
    };
    match g {
        Greeting::Hello(h) => Ok(Some((child, h))),
        Greeting::Missing => {
            end(&mut child);
            Ok(None)
        }
        Greeting::NoAgent(why) => Err(said(format!("ssh to {dest} {why}"), &mut child)),
        Greeting::Refused(why) => Err(said(format!("the agent on {dest} {why}"), &mut child)),
    }
}

impl Link {
    /// Starts kiln's agent on the host (copying this binary there first if that build is
    /// not there yet) and reads its greeting; its messages go to `load` and `record` (with
    /// `index`). Every wait ends by `patience`: its timeout, or the run's stop. No frame
    /// of the agent's past `max_input` bytes (the input limit) is read.
    pub fn connect(
        index: usize,
        spec: &HostSpec,
        ssh: &SshConfig,
        (load, record): (Inbox, Inbox),
        patience: &Patience,
        max_input: u64,
    ) -> Result<Link, String> {
        let build = super::agent::own_build();
        if build.is_empty() {
            return Err("this kiln binary has no build id to name its copy on other hosts by (link it with --build-id)".into());
        }
        let (pong_tx, pong_rx) = std::sync::mpsc::channel();
        let closed = Arc::new(AtomicBool::new(false));
        let route = Route {
            index,
            name: spec.name.clone(),
            load,
            record,
            pongs: pong_tx,
            closed: closed.clone(),
            max_input,
        };
        let dest = &spec.destination;
        let mut installed = false;
        let (mut child, hello) = match start(ssh, dest, &build, patience, &route)? {
            Some(s) => s,
            None => {
                install(ssh, dest, &build, patience)?;
                installed = true;
                start(ssh, dest, &build, patience, &route)?
                    .ok_or_else(|| format!("kiln was copied to {dest} but does not start there"))?
            }
        };
        if hello.build != build {
            end(&mut child);
            return Err(format!(
                "the agent on {} is build {}, not this kiln's {build}: remove {}/kiln-{build} there",
                spec.name, hello.build, ssh.agent_dir
            ));
        }
        let Some(stdin) = child.stdin.take() else {
            end(&mut child);
            return Err("no stdin to ssh".into());
        };
        // Sends never block: an agent that stops reading cannot hold kiln (see `send`).
        let fd = std::os::fd::AsRawFd::as_raw_fd(&stdin);
        // SAFETY: fcntl(2) on the pipe to ssh this link owns (its write end, not shared).
        unsafe {
            libc::fcntl(
                fd,
                libc::F_SETFL,
                libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK,
            )
        };
        if installed {
            eprintln!("kiln run: copied kiln to {dest}:{}", ssh.agent_dir);
        }
        Ok(Link {
            spec: spec.clone(),
            hello,
            stdin: Mutex::new(stdin),
            child: Mutex::new(child),
            pongs: Mutex::new(pong_rx),
            next_ping: AtomicU64::new(1),
            closed,
            broken: AtomicBool::new(false),
            patience: patience.clone(),
        })
    }

    /// Sends a message; false when the link is gone, or the agent has left its pipe full
    /// for [`SEND_TIMEOUT`] (less once the run is stopped): the link is broken then, a
    /// frame half sent.
    pub fn send(&self, m: &ToAgent) -> bool {
        use std::io::{ErrorKind, Write};
        let mut frame = Vec::new();
        if wire::write_frame(&mut frame, m, &[]).is_err() {
            return false;
        }
        let mut s = lock(&self.stdin);
        if self.broken.load(Ordering::SeqCst) {
            return false;
        }
        let deadline = self.patience.deadline(Instant::now() + SEND_TIMEOUT);
        let mut at = 0;
        while at < frame.len() {
            match s.write(&frame[at..]) {
                Ok(n @ 1..) => at += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                    let mut p = libc::pollfd {
                        fd: std::os::fd::AsRawFd::as_raw_fd(&*s),
                        events: libc::POLLOUT,
                        revents: 0,
                    };
                    // SAFETY: poll(2) on one descriptor this link owns, for 20 ms.
                    unsafe { libc::poll(&mut p, 1, 20) };
                }
                _ => {
                    self.broken.store(true, Ordering::SeqCst);
                    return false;
                }
            }
        }
        true
    }

    /// Measures the agent's clock against this one with `n` exchanges (each within
    /// [`PONG_TIMEOUT`], all within the stop's budget).
    pub(crate) fn sync_clock(&self, n: usize) -> Result<ClockSample, String> {
        let rx = lock(&self.pongs);
        let mut ex = Vec::with_capacity(n);
        for _ in 0..n {
            let id = self.next_ping.fetch_add(1, Ordering::SeqCst);
            let t0 = kiln_os::clock::monotonic_ns();
            if !self.send(&ToAgent::Ping { id }) {
                return Err(format!("the connection to {} is gone", self.spec.name));
            }
            let deadline = Instant::now() + PONG_TIMEOUT;
            loop {
                let d = self.patience.deadline(deadline);
                let wait = d
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(20));
                match rx.recv_timeout(wait) {
                    Ok((got, t1, t2, t3)) if got == id => {
                        ex.push(Exchange { t0, t1, t2, t3 });
                        break;
                    }
                    Ok(_) => continue,
                    Err(RecvTimeoutError::Timeout) if Instant::now() < d => continue,
                    Err(RecvTimeoutError::Timeout) if d < deadline => {
                        return Err(format!(
                            "the agent on {} did not answer a clock exchange before the stop",
                            self.spec.name
                        ))
                    }
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

    /// Says goodbye and waits up to `grace` (less once the run is stopped) for the agent
    /// and its ssh to end, then ends the ssh's process group.
    pub fn close(&self, grace: Duration) {
        self.closed.store(true, Ordering::SeqCst);
        self.send(&ToAgent::Bye);
        let mut c = lock(&self.child);
        let deadline = Instant::now() + grace;
        while Instant::now() < self.patience.deadline(deadline) {
            if exited(&c) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        end(&mut c);
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
        end(&mut lock(&self.child));
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
