//! The event loop: one thread per `-t`, each with its share of the connections in one
//! epoll set (mio), keep-alive, optional pipelining, and — with a rate — the engine's
//! [`Schedule`] of intended send times, as every protocol takes it, waited for with a
//! `timerfd` (epoll's own timeout has millisecond grain). Each request due is a ticket
//! carrying its intended time; latency from it is free of coordinated omission.
//!
//! Every request issued ends in exactly one bucket: a response (by status), a timeout, a
//! reset, a connection the server closed, a response that did not parse, or "unanswered
//! when the run ended". Tickets of the rate schedule that found no free connection before
//! the end are counted as not sent. Nothing is dropped silently.
use super::driver::{Extra, M};
use super::request::Plan;
use super::response::{ParseError, ResponseReader};
use super::stamped;
use super::ErrorKind;
use crate::engine::fleet::Spread;
use crate::engine::pacer::Schedule;
use crate::engine::Ctx;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::collections::VecDeque;
use std::io::{ErrorKind as IoKind, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const TIMER: Token = Token(usize::MAX - 1);
/// How long connections that fail to connect wait before trying again.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(100);
/// Longest the loop sleeps without looking at the stop flag and the clock.
const MAX_POLL: Duration = Duration::from_millis(20);
/// A closed loop with at least this many requests in flight naps between looks at its
/// sockets instead of sleeping on epoll (`wait`).
const NAP_MIN_IN_FLIGHT: usize = 16;
/// One nap (the kernel's timer slack, 50 µs by default, comes on top).
const NAP: Duration = Duration::from_micros(20);
/// Naps before the thread sleeps on epoll after all (nothing came back for this long).
const NAP_FOR: Duration = Duration::from_millis(1);

/// What one worker thread does.
#[derive(Debug)]
pub(crate) struct WorkerConfig {
    /// This thread's index and the number of threads (request numbers interleave).
    pub index: u32,
    pub threads: u32,
    /// Connections this thread keeps.
    pub connections: usize,
    /// The run-wide number of this thread's first connection (source addresses go
    /// round-robin over every thread's connections).
    pub first: usize,
    /// Requests in flight per connection (1: no pipelining).
    pub pipeline: usize,
    /// This thread's share of the engine's schedule; `None`: closed loop.
    pub schedule: Option<Schedule>,
    pub timeout: Duration,
    /// How long in-flight requests may still be answered after issuing stops.
    pub drain: Duration,
    /// Stop issuing after this many requests from this thread (0: no limit).
    pub max_requests: u64,
}

#[derive(Debug, Clone, Copy)]
struct Sent {
    seq: u64,
    intended_ns: Option<u64>,
    sent_ns: u64,
    head: bool,
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum ConnState {
    Down { retry_ns: u64 },
    Connecting,
    Open,
}

/// A response whose last byte arrived this long after its first is counted as split
/// (`split_responses`, `split_wait_us`): Linux delays an ACK 40 ms at least.
const SPLIT_NS: u64 = 20_000_000;

#[derive(Debug)]
struct Conn {
    sock: Option<TcpStream>,
    state: ConnState,
    reader: ResponseReader,
    inflight: VecDeque<Sent>,
    wbuf: Vec<u8>,
    wpos: usize,
    /// Requests issued and responses completed on this connection (this generation).
    seq: u64,
    done: u64,
    generation: u64,
    /// The server asked to close after the response in progress: send nothing more.
    closing: bool,
    /// Index in the free list, when free.
    free: bool,
    /// When the first bytes of the response being read arrived (ns on the run's clock).
    first_byte_ns: Option<u64>,
}

impl Conn {
    fn new() -> Self {
        Conn {
            sock: None,
            state: ConnState::Down { retry_ns: 0 },
            reader: ResponseReader::new(),
            inflight: VecDeque::new(),
            wbuf: Vec::new(),
            wpos: 0,
            seq: 0,
            done: 0,
            generation: 0,
            closing: false,
            free: false,
            first_byte_ns: None,
        }
    }
}

/// A request's deadline: (when, connection, generation, its sequence number).
type Deadline = (u64, usize, u64, u64);

pub(crate) struct Worker<'a> {
    cfg: WorkerConfig,
    plan: &'a Plan,
    ctx: &'a Ctx,
    /// The agent slot this thread counts into.
    agent: usize,
    /// Time 0 of the load (the engine's start).
    base: Instant,
    /// Responses by exact status code, and the first message of each error kind, merged
    /// into the driver's `extra` at the end.
    status: Vec<u64>,
    details: [Option<String>; 6],
    extra: &'a Mutex<Extra>,
    /// Where connections come from (`--source-address`).
    spread: &'a Spread,
    poll: Poll,
    conns: Vec<Conn>,
    /// Open connections that can take another request.
    free: Vec<usize>,
    deadlines: VecDeque<Deadline>,
    /// Intended send times of due tickets waiting for a free connection.
    backlog: VecDeque<u64>,
    /// No ticket is left to release: the request limit is reached.
    schedule_done: bool,
    timer: Option<TimerFd>,
    /// The timer woke the loop in this iteration.
    timer_woke: bool,
    /// Period of this thread's schedule, ns (the timer repeats at it).
    period_ns: u64,
    /// Requests of the schedule released in this iteration.
    released: u64,
    issued: u64,
    rng: fastrand::Rng,
    rbuf: Vec<u8>,
    issuing: bool,
    /// The load started (requests may be sent).
    started: bool,
}

impl<'a> Worker<'a> {
    pub fn new(
        cfg: WorkerConfig,
        plan: &'a Plan,
        ctx: &'a Ctx,
        extra: &'a Mutex<Extra>,
        spread: &'a Spread,
    ) -> std::io::Result<Self> {
        let poll = Poll::new()?;
        let base = ctx
            .clock()
            .instant_at(ctx.go_ns().unwrap_or_else(|| ctx.ns()));
        let timer = if cfg.schedule.is_some() {
            let t = TimerFd::new()?;
            poll.registry()
                .register(&mut mio::unix::SourceFd(&t.fd), TIMER, Interest::READABLE)?;
            Some(t)
        } else {
            None
        };
        let seed = cfg.index as u64 * 0x9e37_79b9_7f4a_7c15 + 1;
        Ok(Worker {
            conns: (0..cfg.connections).map(|_| Conn::new()).collect(),
            agent: cfg.index as usize,
            cfg,
            plan,
            ctx,
            base,
            status: vec![0; 1000],
            details: Default::default(),
            extra,
            spread,
            poll,
            free: Vec::new(),
            deadlines: VecDeque::new(),
            backlog: VecDeque::new(),
            schedule_done: false,
            timer,
            timer_woke: false,
            period_ns: 0,
            released: 0,
            issued: 0,
            rng: fastrand::Rng::with_seed(seed),
            rbuf: vec![0; 64 * 1024],
            issuing: true,
            started: false,
        })
    }

    fn now_ns(&self) -> u64 {
        ns_since(self.base)
    }

    /// Opens the connections, counts itself in `ready`, waits for the load to start, then
    /// runs until the end, the stop, or the request limit, and drains.
    pub fn run(mut self, ready: &AtomicUsize) {
        let mut events = Events::with_capacity(1024);
        self.connect_all(&mut events);
        ready.fetch_add(1, Ordering::SeqCst);
        self.start();
        let mut drain_until = None;
        loop {
            let now = self.now_ns();
            if self.issuing && self.over() {
                // Requests due before the end but not sent yet are counted as not sent.
                self.release_tickets(now);
                self.issuing = false;
                if let Some(tf) = &self.timer {
                    tf.disarm();
                }
                drain_until = Some(now + self.cfg.drain.as_nanos() as u64);
            }
            if !self.issuing {
                let inflight: usize = self.conns.iter().map(|c| c.inflight.len()).sum();
                if inflight == 0 || drain_until.is_some_and(|d| now >= d) {
                    break;
                }
            }
            if self.issuing {
                self.release_tickets(now);
                self.dispatch();
            }
            self.reconnect_due(now);
            let timeout = self.poll_timeout(self.now_ns(), drain_until);
            if let Err(e) = self.wait(&mut events, timeout) {
                if e.kind() != IoKind::Interrupted {
                    self.fatal(format!("epoll failed: {e}"));
                    break;
                }
            }
            for ev in events.iter() {
                self.on_event(ev);
            }
            self.expire(self.now_ns());
        }
        self.finish();
    }

    /// Connections first (bounded by --timeout): the schedule starts when every thread
    /// has its connections, so connection setup is not counted as queueing.
    fn connect_all(&mut self, events: &mut Events) {
        for i in 0..self.conns.len() {
            self.connect(i);
        }
        let t0 = Instant::now();
        while self.conns.iter().any(|c| c.state == ConnState::Connecting)
            && !self.ctx.stopping()
            && t0.elapsed() < self.cfg.timeout
        {
            if self
                .poll
                .poll(events, Some(Duration::from_millis(20)))
                .is_err()
            {
                break;
            }
            for ev in events.iter() {
                let i = ev.token().0;
                if i < self.conns.len() && self.conns[i].state == ConnState::Connecting {
                    self.on_connect_event(i);
                }
            }
        }
    }

    /// Waits for the load to start; the schedule's clock starts then, and the timer
    /// repeats at the period of the rate in force when the first request is due.
    fn start(&mut self) {
        if self.ctx.wait_go() {
            let go = self.ctx.go_ns().unwrap_or_else(|| self.ctx.ns());
            self.base = self.ctx.clock().instant_at(go);
            for c in &mut self.conns {
                if let ConnState::Down { retry_ns } = &mut c.state {
                    *retry_ns = 0;
                }
            }
        } else {
            self.issuing = false;
        }
        self.started = true;
        if let (Some(next), Some(tf)) = (self.next_due_ns(), &self.timer) {
            let rate = self
                .cfg
                .schedule
                .as_ref()
                .map_or(0.0, |s| s.rate(next as f64 / 1e9));
            self.period_ns = if rate > 0.0 {
                ((1e9 / rate) as u64).max(1)
            } else {
                0
            };
            tf.arm(self.base, next, self.period_ns);
        }
    }

    /// Whether issuing is over: the stop, or the request limit reached with nothing
    /// waiting to be sent.
    fn over(&self) -> bool {
        self.ctx.stopping()
            || (self.cfg.max_requests > 0
                && self.issued >= self.cfg.max_requests
                && self.backlog.is_empty())
    }

    /// One readiness event: the timer's tick, or a connection's.
    fn on_event(&mut self, ev: &mio::event::Event) {
        let t = ev.token();
        if t == TIMER {
            // Reading the expiration count also re-arms the repeating timer (the kernel
            // restarts it on read), so no timerfd_settime per request.
            if let Some(tf) = &self.timer {
                tf.drain();
            }
            self.timer_woke = true;
            return;
        }
        let i = t.0;
        if i >= self.conns.len() {
            return;
        }
        match self.conns[i].state {
            ConnState::Connecting => self.on_connect_event(i),
            ConnState::Open => {
                if ev.is_writable() {
                    self.flush(i);
                }
                let hup = ev.is_read_closed() || ev.is_error();
                if ev.is_readable() || hup {
                    self.on_readable(i, hup);
                }
            }
            ConnState::Down { .. } => {}
        }
    }

    /// Waits up to `timeout` for readiness. A thread asleep on epoll is woken by the
    /// server's write of a response, and the server pays for that wake-up; in a closed
    /// loop the server is what is measured (and usually the bottleneck), so with many
    /// requests in flight the thread naps on a timer between looks that do not block,
    /// and its own timer wakes it. Latency does not move with it: a response ends at the
    /// kernel's receive time (`stamped`).
    fn wait(&mut self, events: &mut Events, timeout: Duration) -> std::io::Result<()> {
        let mut left = timeout;
        if !timeout.is_zero() && self.napping() {
            let t0 = Instant::now();
            loop {
                self.poll.poll(events, Some(Duration::ZERO))?;
                let spent = t0.elapsed();
                if !events.is_empty() || spent + NAP >= timeout.min(NAP_FOR) {
                    left = timeout.saturating_sub(spent);
                    if !events.is_empty() || left.is_zero() {
                        return Ok(());
                    }
                    break;
                }
                std::thread::sleep(NAP);
            }
        }
        self.poll.poll(events, Some(left))
    }

    /// Whether to nap rather than sleep on epoll: a closed loop with at least
    /// NAP_MIN_IN_FLIGHT requests in flight (with fewer, a nap would hold back requests
    /// the server could already answer).
    fn napping(&self) -> bool {
        if !self.issuing || self.cfg.schedule.is_some() {
            return false;
        }
        let mut n = 0;
        for c in &self.conns {
            n += c.inflight.len();
            if n >= NAP_MIN_IN_FLIGHT {
                return true;
            }
        }
        false
    }

    fn poll_timeout(&mut self, now: u64, drain_until: Option<u64>) -> Duration {
        let mut t = MAX_POLL.as_nanos() as u64;
        if let Some(&(d, ..)) = self.deadlines.front() {
            t = t.min(d.saturating_sub(now));
        }
        if let Some(d) = drain_until {
            t = t.min(d.saturating_sub(now));
        }
        for c in &self.conns {
            if let ConnState::Down { retry_ns } = c.state {
                t = t.min(retry_ns.saturating_sub(now));
                break;
            }
        }
        if let Some(next) = self.next_due_ns().filter(|_| self.issuing) {
            if next <= now {
                return Duration::ZERO;
            }
            // epoll rounds timeouts up to milliseconds; the timerfd, repeating at the
            // schedule's period, wakes us on time. Its period is rounded down to whole ns,
            // so it drifts early: when it woke us before the next request was due, it
            // starts again from that request's time.
            if std::mem::take(&mut self.timer_woke) && self.released == 0 {
                if let Some(tf) = &self.timer {
                    tf.arm(self.base, next, self.period_ns);
                }
            }
        }
        Duration::from_nanos(t)
    }

    /// When the schedule's next ticket is due, ns after the start (rounded up, so that the
    /// ticket is due by then); `None` in a closed loop or when no ticket is left (at or
    /// after the end of the run, or at the request limit).
    fn next_due_ns(&self) -> Option<u64> {
        if self.schedule_done {
            return None;
        }
        let t = self.cfg.schedule.as_ref()?.next()?;
        (t < self.ctx.end_s()).then(|| (t * 1e9).ceil() as u64)
    }

    /// Moves due tickets of the schedule into the backlog, each with its intended time.
    fn release_tickets(&mut self, now: u64) {
        self.released = 0;
        let Some(schedule) = self.cfg.schedule.as_mut() else {
            return;
        };
        let (now_s, end_s) = (now as f64 / 1e9, self.ctx.end_s());
        let max = self.cfg.max_requests;
        while !self.schedule_done {
            if max > 0 && self.issued + self.backlog.len() as u64 >= max {
                self.schedule_done = true;
                break;
            }
            // Nothing is scheduled at or after the end of the run.
            let Some(t) = schedule.take_due(now_s, end_s) else {
                break;
            };
            self.backlog.push_back((t * 1e9) as u64);
            self.released += 1;
        }
    }

    /// Sends what can be sent: backlog tickets (rate) or a full pipeline (closed loop).
    fn dispatch(&mut self) {
        if self.cfg.schedule.is_some() {
            while !self.backlog.is_empty() {
                let Some(i) = self.take_free() else { break };
                let intended = self.backlog.pop_front();
                self.issue(i, intended);
            }
        } else {
            while let Some(i) = self.take_free() {
                if self.cfg.max_requests > 0 && self.issued >= self.cfg.max_requests {
                    self.conns[i].free = false;
                    break;
                }
                self.issue(i, None);
            }
        }
    }

    fn take_free(&mut self) -> Option<usize> {
        while let Some(i) = self.free.pop() {
            let c = &mut self.conns[i];
            c.free = false;
            if c.state == ConnState::Open && !c.closing && c.inflight.len() < self.cfg.pipeline {
                return Some(i);
            }
        }
        None
    }

    fn mark_free(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.free
            && c.state == ConnState::Open
            && !c.closing
            && c.inflight.len() < self.cfg.pipeline
        {
            c.free = true;
            self.free.push(i);
        }
    }

    /// Writes one request on connection `i` (it is open and has room).
    fn issue(&mut self, i: usize, intended_ns: Option<u64>) {
        let n = self.issued * self.cfg.threads as u64 + self.cfg.index as u64;
        self.issued += 1;
        let c = &mut self.conns[i];
        if c.wpos == c.wbuf.len() {
            c.wbuf.clear();
            c.wpos = 0;
        }
        let before = c.wbuf.len();
        let head = self.plan.render(n, &mut self.rng, &mut c.wbuf);
        let bytes = (c.wbuf.len() - before) as u64;
        c.seq += 1;
        let sent_ns = ns_since(self.base);
        c.inflight.push_back(Sent {
            seq: c.seq,
            intended_ns,
            sent_ns,
            head,
        });
        self.deadlines.push_back((
            sent_ns + self.cfg.timeout.as_nanos() as u64,
            i,
            c.generation,
            c.seq,
        ));
        self.ctx.add(self.agent, M.sent, 1);
        self.ctx.add(self.agent, M.bytes_written, bytes);
        self.flush(i);
        self.mark_free(i);
    }

    /// Writes as much of the connection's buffer as the socket takes.
    fn flush(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_mut() else { return };
        while c.wpos < c.wbuf.len() {
            match sock.write(&c.wbuf[c.wpos..]) {
                Ok(0) => {
                    self.fail_conn(i, ErrorKind::Reset, "write returned 0".into());
                    return;
                }
                Ok(n) => c.wpos += n,
                Err(e) if e.kind() == IoKind::WouldBlock => return,
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => {
                    let k = classify(&e);
                    self.fail_conn(i, k, e.to_string());
                    return;
                }
            }
        }
        c.wbuf.clear();
        c.wpos = 0;
    }

    /// Reads what the socket has. After a short read the socket is drained and the next
    /// edge brings new data — unless the peer also closed or reset (`hup`), which gives no
    /// further edge: then read on to the end or the error.
    fn on_readable(&mut self, i: usize, hup: bool) {
        loop {
            let Some(sock) = self.conns[i].sock.as_ref() else {
                return;
            };
            match stamped::read(sock, &mut self.rbuf) {
                Ok((0, _)) => {
                    self.on_eof(i);
                    return;
                }
                Ok((n, stamp)) => {
                    self.ctx.add(self.agent, M.bytes_read, n as u64);
                    let arrived = stamped::arrived(stamp, ns_since(self.base));
                    if !self.consume(i, n, arrived) {
                        return;
                    }
                    if n < self.rbuf.len() && !hup {
                        return;
                    }
                }
                Err(e) if e.kind() == IoKind::WouldBlock => return,
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => {
                    let k = classify(&e);
                    self.fail_conn(i, k, e.to_string());
                    return;
                }
            }
        }
    }

    /// Parses `n` bytes of `rbuf` for connection `i`, which arrived at `arrived` (ns on
    /// the run's clock); false if the connection was closed.
    fn consume(&mut self, i: usize, n: usize, arrived: u64) -> bool {
        let mut at = 0;
        while at < n {
            let c = &mut self.conns[i];
            let head = c.inflight.front().is_some_and(|s| s.head);
            if c.inflight.is_empty() {
                // Bytes nobody asked for.
                self.fail_conn(
                    i,
                    ErrorKind::Protocol,
                    "the server sent bytes without a request".into(),
                );
                return false;
            }
            let first = *c.first_byte_ns.get_or_insert(arrived);
            match c.reader.feed(&self.rbuf[at..n], head) {
                Ok((used, None)) => {
                    at += used;
                    debug_assert_eq!(at, n);
                    break;
                }
                Ok((used, Some(resp))) => {
                    at += used;
                    let now = arrived;
                    let Some(sent) = c.inflight.pop_front() else {
                        break;
                    };
                    c.done = sent.seq;
                    c.first_byte_ns = None;
                    // A response whose last bytes came long after its first: the server
                    // wrote it in parts and the rest waited (for the client's delayed ACK
                    // under Nagle's algorithm, or for the server's work between them).
                    let split = now.saturating_sub(first);
                    if split >= SPLIT_NS {
                        self.ctx.add(self.agent, M.split_responses, 1);
                        self.ctx.add(self.agent, M.split_wait_us, split / 1000);
                    }
                    if !resp.keep_alive {
                        c.closing = true;
                    }
                    let (closing, behind) = (c.closing, c.inflight.len());
                    self.response(
                        resp.status,
                        now.saturating_sub(sent.sent_ns),
                        sent.intended_ns.map(|t| now.saturating_sub(t)),
                    );
                    if closing {
                        if behind == 0 {
                            self.close_and_reconnect(i, 0);
                        } else {
                            let k = behind;
                            self.fail_conn(
                                i,
                                ErrorKind::Closed,
                                format!("the server closed the connection with {k} request(s) pipelined behind"),
                            );
                        }
                        return false;
                    }
                    if self.issuing {
                        if self.cfg.schedule.is_some() {
                            if let Some(t) = self.backlog.pop_front() {
                                self.issue(i, Some(t));
                            } else {
                                self.mark_free(i);
                            }
                        } else if self.cfg.max_requests == 0 || self.issued < self.cfg.max_requests
                        {
                            self.issue(i, None);
                        }
                    }
                }
                Err(e) => {
                    self.fail_conn(i, ErrorKind::Protocol, e.to_string());
                    return false;
                }
            }
        }
        true
    }

    fn on_eof(&mut self, i: usize) {
        let c = &mut self.conns[i];
        match c.reader.eof() {
            Ok(Some(resp)) => {
                // A body that ran to the end of the connection.
                let now = ns_since(self.base);
                if let Some(sent) = c.inflight.pop_front() {
                    self.response(
                        resp.status,
                        now.saturating_sub(sent.sent_ns),
                        sent.intended_ns.map(|t| now.saturating_sub(t)),
                    );
                }
                if self.conns[i].inflight.is_empty() {
                    self.close_and_reconnect(i, 0);
                } else {
                    self.fail_conn(i, ErrorKind::Closed, "closed by the server".into());
                }
            }
            Ok(None) if c.inflight.is_empty() => self.close_and_reconnect(i, 0),
            Ok(None) => self.fail_conn(
                i,
                ErrorKind::Closed,
                "the server closed the connection before answering".into(),
            ),
            Err(ParseError::Truncated) => self.fail_conn(
                i,
                ErrorKind::Closed,
                "the server closed the connection in the middle of a response".into(),
            ),
            Err(e) => self.fail_conn(i, ErrorKind::Protocol, e.to_string()),
        }
    }

    /// Counts every request in flight on `i` as failed with `kind`, then reconnects.
    fn fail_conn(&mut self, i: usize, kind: ErrorKind, detail: String) {
        let c = &mut self.conns[i];
        let lost = c.inflight.len() as u64;
        self.error(kind, lost, detail);
        self.close_and_reconnect(i, 0);
    }

    fn close_and_reconnect(&mut self, i: usize, delay_ns: u64) {
        let c = &mut self.conns[i];
        if let Some(mut s) = c.sock.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.inflight.clear();
        c.reader = ResponseReader::new();
        c.first_byte_ns = None;
        c.wbuf.clear();
        c.wpos = 0;
        c.seq = 0;
        c.done = 0;
        c.generation += 1;
        c.closing = false;
        c.state = ConnState::Down {
            retry_ns: ns_since(self.base) + delay_ns,
        };
        if delay_ns == 0 {
            self.connect(i);
        }
    }

    fn reconnect_due(&mut self, now: u64) {
        if !self.issuing {
            return;
        }
        for i in 0..self.conns.len() {
            if let ConnState::Down { retry_ns } = self.conns[i].state {
                if retry_ns <= now {
                    self.connect(i);
                }
            }
        }
    }

    fn connect(&mut self, i: usize) {
        if !self.issuing {
            return;
        }
        self.ctx.add(self.agent, M.connects, 1);
        match self.spread.connect(self.cfg.first + i, self.plan.addr) {
            Ok((mut s, _)) => {
                stamped::enable(&s);
                let r = self.poll.registry().register(
                    &mut s,
                    Token(i),
                    Interest::READABLE | Interest::WRITABLE,
                );
                if let Err(e) = r {
                    self.connect_failed(i, &e);
                    return;
                }
                let c = &mut self.conns[i];
                c.sock = Some(s);
                c.state = ConnState::Connecting;
            }
            Err(e) => self.connect_failed(i, &e),
        }
    }

    fn connect_failed(&mut self, i: usize, e: &dyn std::fmt::Display) {
        let detail = format!("connecting to {}: {e}", self.plan.addr);
        self.error(ErrorKind::Connect, 1, detail);
        let c = &mut self.conns[i];
        if let Some(mut s) = c.sock.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.state = ConnState::Down {
            retry_ns: ns_since(self.base) + RECONNECT_BACKOFF.as_nanos() as u64,
        };
    }

    fn on_connect_event(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(s) = c.sock.as_ref() else { return };
        match s.take_error() {
            Ok(Some(e)) | Err(e) => {
                self.connect_failed(i, &e);
                return;
            }
            Ok(None) => {}
        }
        match s.peer_addr() {
            Ok(_) => {
                let _ = s.set_nodelay(true);
                c.state = ConnState::Open;
                self.mark_free(i);
                if self.issuing && self.started {
                    self.dispatch();
                }
            }
            Err(e) if e.kind() == IoKind::NotConnected => {} // not yet
            Err(e) => self.connect_failed(i, &e),
        }
    }

    /// Times out requests whose deadline passed (and with them their connection).
    fn expire(&mut self, now: u64) {
        while let Some(&(d, i, generation, seq)) = self.deadlines.front() {
            let c = &self.conns[i];
            let pending = c.generation == generation && c.done < seq && !c.inflight.is_empty();
            if pending && d > now {
                break;
            }
            // Answered (or lost with its connection) requests leave the queue too.
            self.deadlines.pop_front();
            if pending {
                let t = self.cfg.timeout;
                self.fail_conn(
                    i,
                    ErrorKind::Timeout,
                    format!("no complete response within {t:?}"),
                );
            }
        }
    }

    fn fatal(&mut self, what: String) {
        self.error(ErrorKind::Other, 0, what);
    }

    /// Counts a complete response and records its latencies.
    fn response(&mut self, status: u16, service_ns: u64, intended_ns: Option<u64>) {
        let a = self.agent;
        self.ctx.add(a, M.answered, 1);
        if (100..600).contains(&status) {
            self.ctx.add(a, M.status[status as usize / 100 - 1], 1);
        }
        self.status[(status as usize).min(999)] += 1;
        let mut h = self.ctx.hists(a);
        h.record(M.latency, (service_ns / 1000).max(1));
        if let Some(t) = intended_ns {
            h.record(M.latency_intended, (t / 1000).max(1));
        }
    }

    /// Counts `requests` failed with `kind` (a failed connection attempt counts once).
    fn error(&mut self, kind: ErrorKind, requests: u64, detail: String) {
        let n = if kind == ErrorKind::Connect {
            1
        } else {
            requests
        };
        self.ctx.add(self.agent, kind.counter(), n);
        self.ctx.flag_pulse(M.errors);
        let d = &mut self.details[kind as usize];
        if d.is_none() {
            *d = Some(detail);
        }
    }

    fn finish(&mut self) {
        let unanswered: u64 = self.conns.iter().map(|c| c.inflight.len() as u64).sum();
        self.ctx.add(self.agent, M.unanswered, unanswered);
        self.ctx
            .add(self.agent, M.not_sent, self.backlog.len() as u64);
        for c in &mut self.conns {
            if let Some(mut sock) = c.sock.take() {
                let _ = self.poll.registry().deregister(&mut sock);
            }
        }
        let mut x = self.extra.lock().unwrap_or_else(|p| p.into_inner());
        x.merge(&self.status, &mut self.details);
    }
}

fn ns_since(base: Instant) -> u64 {
    base.elapsed().as_nanos() as u64
}

fn classify(e: &std::io::Error) -> ErrorKind {
    match e.kind() {
        IoKind::ConnectionReset | IoKind::BrokenPipe | IoKind::ConnectionAborted => {
            ErrorKind::Reset
        }
        IoKind::TimedOut => ErrorKind::Timeout,
        IoKind::ConnectionRefused => ErrorKind::Connect,
        _ => ErrorKind::Other,
    }
}

/// A CLOCK_MONOTONIC timerfd armed at absolute times, repeating (nanosecond resolution).
struct TimerFd {
    fd: i32,
}

impl TimerFd {
    fn new() -> std::io::Result<Self> {
        // SAFETY: plain syscall; the fd is owned by this struct and closed on drop.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(TimerFd { fd })
    }

    /// Arms the timer for `at_ns` after `base`, then every `interval_ns`.
    fn arm(&self, base: Instant, at_ns: u64, interval_ns: u64) {
        let now_rel = base.elapsed().as_nanos() as u64;
        let now_mono = kiln_os::clock::monotonic_ns();
        let target = now_mono + at_ns.saturating_sub(now_rel).max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: (interval_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (interval_ns % 1_000_000_000) as libc::c_long,
            },
            it_value: libc::timespec {
                tv_sec: (target / 1_000_000_000) as libc::time_t,
                tv_nsec: (target % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid fd and itimerspec.
        unsafe {
            libc::timerfd_settime(
                self.fd,
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
    }

    /// Reads the expiration count; a repeating timer is restarted by this read.
    fn drain(&self) {
        let mut b = [0u8; 8];
        // SAFETY: reads at most 8 bytes into b.
        unsafe { libc::read(self.fd, b.as_mut_ptr() as *mut libc::c_void, 8) };
    }

    /// Stops the timer.
    fn disarm(&self) {
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let spec = libc::itimerspec {
            it_interval: zero,
            it_value: zero,
        };
        // SAFETY: valid fd and itimerspec.
        unsafe { libc::timerfd_settime(self.fd, 0, &spec, std::ptr::null_mut()) };
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        // SAFETY: the fd is ours.
        unsafe { libc::close(self.fd) };
    }
}
