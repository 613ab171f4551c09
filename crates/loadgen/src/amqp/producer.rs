//! A producer: one connection; this thread publishes, a second one reads confirms, returns
//! and flow-control notifications.
use super::conn::{Connection, FrameReader, Writer};
use super::driver::{Shared, M};
use super::wire::{self, m};
use crate::engine::body::{self, Stamp};
use crate::engine::pacer::{self, Constant, Schedule, Steps};
use crate::Error;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Most messages encoded per loop turn: enough to amortise the write syscall, small enough
/// that a confirm window or a rate schedule is followed closely.
const BATCH: usize = 128;
/// Bytes buffered before a write; a batch never holds more than this plus one message, so
/// memory stays bounded whatever the message size.
const FLUSH_BYTES: usize = 32 * 1024;

/// The schedule of one producer, from the options (`None`: as fast as possible).
pub(crate) fn schedule(o: &super::AmqpOptions) -> Option<Schedule> {
    if let Some(p) = o.publishing_interval {
        let ps = p.as_secs_f64();
        // Spread many idle producers over the interval instead of a thundering herd.
        return Some(Schedule::new(Box::new(Constant {
            rate: 1.0 / ps,
            offset: fastrand::f64() * ps,
        })));
    }
    if !o.variable_rate.is_empty() {
        return Some(Schedule::new(Box::new(Steps::new(&o.variable_rate))));
    }
    o.rate.map(|r| {
        Schedule::new(Box::new(Constant {
            rate: r,
            offset: 0.0,
        }))
    })
}

/// Publisher-confirm bookkeeping: send times by delivery tag in a ring the reader thread
/// empties as acks arrive.
struct Window {
    max: u64,
    mask: u64,
    sent_ns: Vec<AtomicU64>,
    intended_ns: Vec<AtomicU64>,
    next_tag: AtomicU64,
    lowest: AtomicU64,
    outstanding: AtomicU64,
    waiting: AtomicBool,
}

impl Window {
    fn new(max: u32) -> Self {
        let cap = (max as u64 * 2).next_power_of_two().max(64);
        Window {
            max: max as u64,
            mask: cap - 1,
            sent_ns: (0..cap).map(|_| AtomicU64::new(0)).collect(),
            intended_ns: (0..cap).map(|_| AtomicU64::new(0)).collect(),
            next_tag: AtomicU64::new(1),
            lowest: AtomicU64::new(1),
            outstanding: AtomicU64::new(0),
            waiting: AtomicBool::new(false),
        }
    }

    /// How many more messages may be published now.
    fn avail(&self) -> u64 {
        let out = self.outstanding.load(Ordering::Acquire);
        let span = self.next_tag.load(Ordering::Relaxed) - self.lowest.load(Ordering::Acquire);
        (self.max.saturating_sub(out)).min(self.mask + 1 - span.min(self.mask + 1))
    }

    /// Handles `basic.ack`/`basic.nack` for `tag` (and below, when `multiple`).
    fn settle(&self, sh: &Shared, slot: usize, tag: u64, multiple: bool, nack: bool) {
        let now = sh.ctx.ns();
        let next = self.next_tag.load(Ordering::Acquire);
        if tag == 0 || tag >= next {
            return;
        }
        let mut k = 0u64;
        let mut h = sh.ctx.hists(slot);
        let mut one = |t: u64| {
            let slot = (t & self.mask) as usize;
            let v = self.sent_ns[slot].swap(0, Ordering::AcqRel);
            let iv = self.intended_ns[slot].swap(0, Ordering::AcqRel);
            if v != 0 {
                k += 1;
                if !nack {
                    h.record(M.confirm_latency, now.saturating_sub(v - 1) / 1000);
                    if iv != 0 {
                        h.record(
                            M.confirm_latency_intended,
                            now.saturating_sub(iv - 1) / 1000,
                        );
                    }
                }
            }
        };
        let lo = self.lowest.load(Ordering::Acquire);
        if multiple {
            for t in lo..=tag {
                one(t);
            }
            self.lowest.store(lo.max(tag + 1), Ordering::Release);
        } else {
            one(tag);
            if tag == lo {
                let mut l = lo + 1;
                while l < next
                    && self.sent_ns[(l & self.mask) as usize].load(Ordering::Acquire) == 0
                {
                    l += 1;
                }
                self.lowest.store(l, Ordering::Release);
            }
        }
        drop(h);
        self.outstanding.fetch_sub(k, Ordering::AcqRel);
        sh.ctx
            .add(slot, if nack { M.nacked } else { M.confirmed }, k);
    }
}

/// What a producer keeps across reconnections.
struct State {
    seq: u32,
    sent: u64,
    pacer: Option<Schedule>,
    json: Option<Vec<u8>>,
}

pub(super) fn run(sh: &Shared, idx: usize) {
    let o = sh.opts;
    let mut st = State {
        seq: 0,
        sent: 0,
        pacer: schedule(o),
        json: o.json_body.then(|| body::random_json(o.size)),
    };
    let name = format!("producer {idx}");
    sh.agent(&name, |connected| session(sh, idx, &mut st, connected));
}

fn session(
    sh: &Shared,
    idx: usize,
    st: &mut State,
    connected: &mut dyn FnMut(),
) -> Result<(), Error> {
    let o = sh.opts;
    let topo = &sh.topo;
    let mut conn = Connection::open(sh.uri, &format!("kiln-producer-{idx}"))?;
    let target = (!topo.queues.is_empty()).then(|| topo.queues[idx % topo.queues.len()].as_str());
    topo.declare(&mut conn, o, target)?;
    if o.confirm.is_some() {
        conn.confirm_select()?;
    }
    let rk = match target {
        Some(q) => topo.key_for(o, q),
        None => topo.routing_key.as_str(),
    };
    let enc = wire::Publish::new(&o.exchange, rk, o.mandatory, conn.frame_max(), o.persistent);
    let (reader, writer) = conn.split();
    sh.register(&writer);
    connected();
    if !sh.ctx.wait_go() {
        return Ok(());
    }
    let window = o.confirm.map(Window::new);
    let over = AtomicBool::new(false);
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    let failed_flag = AtomicBool::new(false);
    let me = std::thread::current();
    std::thread::scope(|s| {
        let rh = s.spawn(|| {
            let r = read_loop(sh, idx, reader, &writer, window.as_ref(), &me);
            if let Err(e) = r {
                if !over.load(Ordering::SeqCst) {
                    *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    failed_flag.store(true, Ordering::SeqCst);
                    me.unpark();
                }
            }
        });
        let r = publish_loop(sh, idx, st, &writer, window.as_ref(), &failed_flag, &enc);
        over.store(true, Ordering::SeqCst);
        writer.shutdown();
        let _ = rh.join();
        match r {
            Err(_) if failed_flag.load(Ordering::SeqCst) => Err(failed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
                .unwrap_or_else(|| closed(sh))),
            other => other,
        }
    })
}

fn closed(sh: &Shared) -> Error {
    Error::Io {
        uri: sh.uri.display(),
        source: std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "connection closed"),
    }
}

/// Encoded messages waiting to be written, with where each one ends: a message counts as
/// sent once its last byte is written, exactly once, even when a write fails half-way.
struct Batch {
    buf: Vec<u8>,
    ends: Vec<usize>,
}

impl Batch {
    fn flush(&mut self, writer: &Writer, sh: &Shared, slot: usize) -> Result<(), Error> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let r = writer.write_counted(&self.buf);
        let written = match &r {
            Ok(()) => self.buf.len(),
            Err((n, _)) => *n,
        };
        let whole = self.ends.iter().take_while(|&&e| e <= written).count();
        sh.ctx.add(slot, M.sent, whole as u64);
        self.buf.clear();
        self.ends.clear();
        r.map_err(|(_, e)| e)
    }
}

fn publish_loop(
    sh: &Shared,
    idx: usize,
    st: &mut State,
    writer: &Writer,
    window: Option<&Window>,
    failed: &AtomicBool,
    enc: &wire::Publish,
) -> Result<(), Error> {
    let o = sh.opts;
    let ctx = sh.ctx;
    let slot = sh.producer(idx);
    let go_ns = ctx.go_ns().unwrap_or(0);
    let co = o.rate_limited() && !o.json_body;
    let end_s = ctx.end_s();
    let mut b = Batch {
        buf: Vec::with_capacity(FLUSH_BYTES * 2),
        ends: Vec::with_capacity(BATCH),
    };
    let mut intended = [0f64; BATCH];
    let sizes: Vec<(usize, u64)> = if o.variable_size.is_empty() {
        vec![(o.size, 0)]
    } else {
        o.variable_size.clone()
    };
    loop {
        if failed.load(Ordering::Relaxed) {
            return Err(closed(sh));
        }
        if sh.stopping() {
            return b.flush(writer, sh, slot);
        }
        if o.pmessages > 0 && st.sent >= o.pmessages {
            b.flush(writer, sh, slot)?;
            all_sent(sh, window, failed);
            return Ok(());
        }
        let now_s = ctx.ns().saturating_sub(go_ns) as f64 / 1e9;
        let size = pacer::step_at(&sizes, now_s).0;
        let msg_len = enc.encoded_len(st.json.as_ref().map_or(size.max(body::MIN), |j| j.len()));
        // Bound the batch by bytes as well as by count: 128 messages of 64 MiB would be 8 GiB.
        let mut n = (BATCH as u64).min((FLUSH_BYTES / msg_len.max(1)).max(1) as u64);
        if o.pmessages > 0 {
            n = n.min(o.pmessages - st.sent);
        }
        if let Some(w) = window {
            let a = w.avail();
            if a == 0 {
                b.flush(writer, sh, slot)?;
                w.waiting.store(true, Ordering::SeqCst);
                if w.avail() == 0 {
                    std::thread::park_timeout(Duration::from_millis(20));
                }
                w.waiting.store(false, Ordering::SeqCst);
                continue;
            }
            n = n.min(a);
        }
        if let Some(p) = st.pacer.as_mut() {
            let k = take_due(p, &mut intended[..n as usize], now_s, end_s);
            if k == 0 {
                b.flush(writer, sh, slot)?;
                let wait = p
                    .next()
                    .filter(|&t| t < end_s)
                    .map_or(0.05, |t| (t - now_s).clamp(0.0, 0.05));
                ctx.stop().sleep(Duration::from_secs_f64(wait));
                continue;
            }
            n = k as u64;
        }
        let stamps = Stamps { ctx, go_ns, co };
        stamps.encode(st, window, enc, &mut b, &intended[..n as usize], size);
        if b.buf.len() >= FLUSH_BYTES
            || st.pacer.is_some()
            || window.is_some_and(|w| w.avail() == 0)
        {
            b.flush(writer, sh, slot)?;
        }
    }
}

/// Every message of `--pmessages` sent: waits (bounded) for the last confirms so they
/// are counted, says the producer is done, and stays connected (idle) until the run ends,
/// so consumers and confirms finish.
fn all_sent(sh: &Shared, window: Option<&Window>, failed: &AtomicBool) {
    let stop = sh.ctx.stop();
    if let Some(w) = window {
        for _ in 0..1000 {
            if w.outstanding.load(Ordering::Acquire) == 0
                || failed.load(Ordering::Relaxed)
                || stop.sleep(Duration::from_millis(10))
            {
                break;
            }
        }
    }
    sh.producer_done();
    while !failed.load(Ordering::Relaxed) && !stop.sleep(Duration::from_millis(20)) {}
}

/// Fills `intended` with the schedule's due send times (seconds since the start), as
/// many as are due and fit; nothing is scheduled at or after the end of a timed run.
fn take_due(p: &mut Schedule, intended: &mut [f64], now_s: f64, end_s: f64) -> usize {
    let mut k = 0;
    while k < intended.len() {
        match p.take_due(now_s, end_s) {
            Some(t) => {
                intended[k] = t;
                k += 1;
            }
            None => break,
        }
    }
    k
}

/// How messages are stamped: the load's clock and start, and whether each carries its
/// intended send time (rate-limited, not JSON).
struct Stamps<'a> {
    ctx: &'a crate::engine::Ctx,
    go_ns: u64,
    co: bool,
}

impl Stamps<'_> {
    /// One message per intended time into the batch, each stamped and, under a confirm
    /// window, given its slot.
    fn encode(
        &self,
        st: &mut State,
        window: Option<&Window>,
        enc: &wire::Publish,
        b: &mut Batch,
        intended: &[f64],
        size: usize,
    ) {
        let (ctx, go_ns, co) = (self.ctx, self.go_ns, self.co);
        let real = crate::engine::clock::real_ns();
        let mono = ctx.ns();
        let mut tag = window.map_or(0, |w| w.next_tag.load(Ordering::Relaxed));
        for &it in intended {
            let it_ns = go_ns + (it * 1e9) as u64;
            let stamp = Stamp {
                seq: st.seq,
                sent_ns: real,
                intended_ns: co.then(|| ctx.clock().real_at(it_ns)),
                origin: body::Origin::Unmarked,
            };
            let mut prefix = [0u8; body::FULL];
            let plen = stamp.write(&mut prefix);
            st.seq = st.seq.wrapping_add(1);
            if let Some(w) = window {
                let slot = (tag & w.mask) as usize;
                w.sent_ns[slot].store(mono + 1, Ordering::Release);
                w.intended_ns[slot].store(if co { it_ns + 1 } else { 0 }, Ordering::Release);
                tag += 1;
            }
            enc.message(&mut b.buf, size, &prefix[..plen], st.json.as_deref());
            b.ends.push(b.buf.len());
        }
        let n = intended.len() as u64;
        if let Some(w) = window {
            w.outstanding.fetch_add(n, Ordering::AcqRel);
            w.next_tag.store(tag, Ordering::Release);
        }
        st.sent += n;
    }
}

fn read_loop(
    sh: &Shared,
    idx: usize,
    mut reader: FrameReader,
    writer: &Arc<Writer>,
    window: Option<&Window>,
    producer: &std::thread::Thread,
) -> Result<(), Error> {
    let ctx = sh.ctx;
    let slot = sh.producer(idx);
    let mut blocked = false;
    let r = (|| loop {
        let f = reader.next()?;
        if f.kind != wire::FRAME_METHOD {
            continue;
        }
        let (id, mut d) = wire::method(f.payload);
        match id {
            Some(m::BASIC_ACK) | Some(m::BASIC_NACK) => {
                let (tag, multiple) = wire::read_ack(&mut d).map_err(|_| short_ack(sh))?;
                if let Some(w) = window {
                    w.settle(sh, slot, tag, multiple, id == Some(m::BASIC_NACK));
                    if w.waiting.load(Ordering::SeqCst) {
                        producer.unpark();
                    }
                }
            }
            Some(m::BASIC_RETURN) => ctx.add(slot, M.returned, 1),
            Some(m::CONN_BLOCKED) => {
                let reason = d.shortstr().unwrap_or("").to_string();
                if !blocked {
                    blocked = true;
                    ctx.flag_on(M.blocked);
                }
                ctx.flag_pulse(M.blocked);
                ctx.add(slot, M.blocked_notifications, 1);
                ctx.event("blocked", format!("producer {idx}: {reason}"));
            }
            Some(m::CONN_UNBLOCKED) => {
                if blocked {
                    blocked = false;
                    ctx.flag_off(M.blocked);
                }
                ctx.event("unblocked", format!("producer {idx}"));
            }
            Some(m::CONN_CLOSE) | Some(m::CHAN_CLOSE) => {
                let e = super::driver::closed_by_broker(&mut d, id, f.channel, writer, sh);
                return Err(too_big(e, sh.opts));
            }
            _ => {}
        }
    })();
    if blocked {
        ctx.flag_off(M.blocked);
    }
    r
}

fn short_ack(sh: &Shared) -> Error {
    Error::Protocol {
        uri: sh.uri.display(),
        reason: "short basic.ack frame".into(),
    }
}

/// A broker that refuses a message for its size says so in a 406; name the flag.
fn too_big(e: Error, o: &super::AmqpOptions) -> Error {
    match e {
        Error::Closed {
            code: 406, text, ..
        } if text.contains("message size") => Error::Option {
            flag: "--size",
            value: o
                .variable_size
                .iter()
                .map(|s| s.0)
                .max()
                .unwrap_or(0)
                .max(o.size)
                .to_string(),
            reason: format!("larger than the broker accepts ({text})"),
        },
        e => e,
    }
}
