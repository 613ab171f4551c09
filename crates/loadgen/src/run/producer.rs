//! A producer: one connection; this thread publishes, a second one reads confirms, returns
//! and flow-control notifications.
use super::Shared;
use crate::amqp::wire::{self, m, Dec};
use crate::amqp::{Connection, FrameReader, Writer};
use crate::stats::{record, Counters};
use crate::Error;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Messages encoded per loop turn: enough to amortise the write syscall, small enough that a
/// confirm window or a rate schedule is followed closely.
const BATCH: usize = 128;
/// Bytes buffered before a write when publishing flat out.
const FLUSH_BYTES: usize = 32 * 1024;

/// When each message is meant to be sent, in seconds since the load started.
///
/// Each message's intended time follows the previous one by 1/rate, whatever happened to the
/// actual sends; latency measured from these times is free of coordinated omission.
#[derive(Debug)]
pub(crate) struct Pacer {
    /// Intended time of the next message; infinite when the rate is 0 for good.
    pub next: f64,
    steps: Vec<(f64, u64)>,
}

impl Pacer {
    pub fn new(o: &crate::AmqpOptions) -> Option<Pacer> {
        if let Some(p) = o.publishing_interval {
            let ps = p.as_secs_f64();
            // Spread many idle producers over the interval instead of a thundering herd.
            return Some(Pacer {
                next: fastrand::f64() * ps,
                steps: vec![(1.0 / ps, 0)],
            });
        }
        let mut p = if !o.variable_rate.is_empty() {
            Pacer {
                next: 0.0,
                steps: o.variable_rate.clone(),
            }
        } else {
            Pacer {
                next: 0.0,
                steps: vec![(o.rate?, 0)],
            }
        };
        p.skip_idle();
        Some(p)
    }

    /// The rate in force at `t` and when that step ends (infinity for a fixed rate).
    fn rate_at(&self, t: f64) -> (f64, f64) {
        step_at(&self.steps, t)
    }

    /// Moves to the next message's intended time.
    pub fn advance(&mut self) {
        let (r, _) = self.rate_at(self.next);
        if r > 0.0 {
            self.next += 1.0 / r;
        }
        self.skip_idle();
    }

    /// Moves `next` out of steps whose rate is 0.
    fn skip_idle(&mut self) {
        for _ in 0..1000 {
            let (r, end) = self.rate_at(self.next);
            if r > 0.0 {
                return;
            }
            if end.is_infinite() {
                self.next = f64::INFINITY;
                return;
            }
            self.next = end;
        }
        self.next = f64::INFINITY;
    }
}

/// The value of cycling `(value, seconds)` steps at time `t`, and when its step ends. A single
/// step with 0 seconds is a constant.
pub(crate) fn step_at<T: Copy>(steps: &[(T, u64)], t: f64) -> (T, f64) {
    if steps.len() == 1 && steps[0].1 == 0 {
        return (steps[0].0, f64::INFINITY);
    }
    let cycle: u64 = steps.iter().map(|s| s.1).sum();
    let cycles = (t / cycle as f64).floor();
    let mut at = cycles * cycle as f64;
    for &(v, d) in steps {
        at += d as f64;
        if t < at {
            return (v, at);
        }
    }
    (steps[0].0, at + steps[0].1 as f64)
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
    fn settle(&self, sh: &Shared, c: &Counters, tag: u64, multiple: bool, nack: bool) {
        let now = sh.mono_ns();
        let next = self.next_tag.load(Ordering::Acquire);
        if tag == 0 || tag >= next {
            return;
        }
        let mut k = 0u64;
        let mut h = c.hists.lock().unwrap_or_else(|p| p.into_inner());
        let mut one = |t: u64| {
            let slot = (t & self.mask) as usize;
            let v = self.sent_ns[slot].swap(0, Ordering::AcqRel);
            let iv = self.intended_ns[slot].swap(0, Ordering::AcqRel);
            if v != 0 {
                k += 1;
                if !nack {
                    record(&mut h.confirm, now.saturating_sub(v - 1) / 1000);
                    if iv != 0 {
                        record(&mut h.confirm_intended, now.saturating_sub(iv - 1) / 1000);
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
        Counters::add(if nack { &c.nacked } else { &c.confirmed }, k);
    }
}

/// What a producer keeps across reconnections.
struct State {
    seq: u32,
    sent: u64,
    pacer: Option<Pacer>,
    json: Option<Vec<u8>>,
}

pub(super) fn run(sh: &Shared, idx: usize) {
    let o = sh.opts;
    let mut st = State {
        seq: 0,
        sent: 0,
        pacer: Pacer::new(o),
        json: o.json_body.then(|| random_json(o.size)),
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
    let mut conn = Connection::open(&sh.uri, &format!("kiln-producer-{idx}"))?;
    let target = (!topo.queues.is_empty()).then(|| topo.queues[idx % topo.queues.len()].as_str());
    topo.declare(&mut conn, o, target)?;
    if o.confirm.is_some() {
        conn.confirm_select()?;
    }
    let rk = match target {
        Some(q) => topo.key_for(o, q),
        None => topo.routing_key.as_str(),
    };
    let mut method = Vec::new();
    wire::method_frame(&mut method, 1, m::BASIC_PUBLISH, |e| {
        e.u16(0)
            .shortstr(&o.exchange)
            .shortstr(rk)
            .u8(o.mandatory as u8);
    });
    let frame_max = conn.frame_max();
    let (reader, writer) = conn.split();
    sh.register(&writer);
    connected();
    if !sh.wait_go() {
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
        let enc = Encoder {
            method: &method,
            frame_max,
            persistent: o.persistent,
        };
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

struct Encoder<'a> {
    method: &'a [u8],
    frame_max: usize,
    persistent: bool,
}

impl Encoder<'_> {
    /// Appends publish + content header + body frames; `prefix` is written at the start of
    /// a zero-filled body of `size` bytes (or `json` is the body).
    fn message(&self, buf: &mut Vec<u8>, size: usize, prefix: &[u8], json: Option<&[u8]>) {
        buf.extend_from_slice(self.method);
        let body_len = json.map_or(size.max(prefix.len()), |j| j.len());
        let props = if self.persistent { 1 } else { 0 };
        buf.extend_from_slice(&[wire::FRAME_HEADER, 0, 1]);
        buf.extend_from_slice(&(14u32 + props).to_be_bytes());
        buf.extend_from_slice(&[0, 60, 0, 0]);
        buf.extend_from_slice(&(body_len as u64).to_be_bytes());
        if self.persistent {
            buf.extend_from_slice(&[0x10, 0x00, 2]);
        } else {
            buf.extend_from_slice(&[0, 0]);
        }
        buf.push(wire::FRAME_END);
        let chunk = self.frame_max - 8;
        let mut written = 0;
        while written < body_len {
            let n = chunk.min(body_len - written);
            buf.extend_from_slice(&[wire::FRAME_BODY, 0, 1]);
            buf.extend_from_slice(&(n as u32).to_be_bytes());
            let at = buf.len();
            match json {
                Some(j) => buf.extend_from_slice(&j[written..written + n]),
                None => {
                    buf.resize(at + n, 0);
                    if written < prefix.len() {
                        let k = (prefix.len() - written).min(n);
                        buf[at..at + k].copy_from_slice(&prefix[written..written + k]);
                    }
                }
            }
            buf.push(wire::FRAME_END);
            written += n;
        }
    }
}

fn publish_loop(
    sh: &Shared,
    idx: usize,
    st: &mut State,
    writer: &Writer,
    window: Option<&Window>,
    failed: &AtomicBool,
    enc: &Encoder,
) -> Result<(), Error> {
    let o = sh.opts;
    let c = &sh.producers[idx];
    let go_ns = sh.go_ns.get().copied().unwrap_or(0);
    let co = o.rate_limited() && !o.json_body;
    let end_s = o.time.map_or(f64::INFINITY, |t| t.as_secs_f64());
    let mut buf: Vec<u8> = Vec::with_capacity(FLUSH_BYTES * 2);
    let mut unflushed = 0u64;
    let mut intended = [0f64; BATCH];
    let sizes: Vec<(usize, u64)> = if o.variable_size.is_empty() {
        vec![(o.size, 0)]
    } else {
        o.variable_size.clone()
    };
    let flush = |buf: &mut Vec<u8>, unflushed: &mut u64| -> Result<(), Error> {
        if !buf.is_empty() {
            writer.write(buf)?;
            buf.clear();
            Counters::add(&c.sent, *unflushed);
            *unflushed = 0;
        }
        Ok(())
    };
    loop {
        if failed.load(Ordering::Relaxed) {
            return Err(closed(sh));
        }
        if sh.stopping() {
            return flush(&mut buf, &mut unflushed);
        }
        if o.pmessages > 0 && st.sent >= o.pmessages {
            flush(&mut buf, &mut unflushed)?;
            // Wait (bounded) for the last confirms so they are counted.
            if let Some(w) = window {
                for _ in 0..1000 {
                    if w.outstanding.load(Ordering::Acquire) == 0
                        || sh.stopping()
                        || failed.load(Ordering::Relaxed)
                    {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            sh.producers_done.fetch_add(1, Ordering::SeqCst);
            // Stay connected (idle) until the run ends, so consumers and confirms finish.
            while !sh.stopping() && !failed.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
            }
            return Ok(());
        }
        let mut n = BATCH as u64;
        if o.pmessages > 0 {
            n = n.min(o.pmessages - st.sent);
        }
        if let Some(w) = window {
            let a = w.avail();
            if a == 0 {
                flush(&mut buf, &mut unflushed)?;
                w.waiting.store(true, Ordering::SeqCst);
                if w.avail() == 0 {
                    std::thread::park_timeout(Duration::from_millis(20));
                }
                w.waiting.store(false, Ordering::SeqCst);
                continue;
            }
            n = n.min(a);
        }
        let now_s = sh.mono_ns().saturating_sub(go_ns) as f64 / 1e9;
        if let Some(p) = st.pacer.as_mut() {
            let mut k = 0;
            // Nothing is scheduled at or after the end of a timed run.
            while (k as u64) < n && p.next <= now_s && p.next < end_s {
                intended[k] = p.next;
                p.advance();
                k += 1;
            }
            if k == 0 {
                flush(&mut buf, &mut unflushed)?;
                let wait = (p.next - now_s).clamp(0.0, 0.05);
                std::thread::sleep(Duration::from_secs_f64(wait));
                continue;
            }
            n = k as u64;
        }
        let size = step_at(&sizes, now_s).0;
        let real = Shared::real_ns();
        let mono = sh.mono_ns();
        let mut tag = window.map_or(0, |w| w.next_tag.load(Ordering::Relaxed));
        for &it in intended.iter().take(n as usize) {
            let mut prefix = [0u8; 20];
            prefix[0..4].copy_from_slice(&st.seq.to_be_bytes());
            prefix[4..12].copy_from_slice(&real.to_be_bytes());
            let it_mono = go_ns + (it * 1e9) as u64;
            let plen = if co {
                prefix[12..20].copy_from_slice(&(sh.base_real_ns + it_mono).to_be_bytes());
                20
            } else {
                12
            };
            st.seq = st.seq.wrapping_add(1);
            if let Some(w) = window {
                let slot = (tag & w.mask) as usize;
                w.sent_ns[slot].store(mono + 1, Ordering::Release);
                w.intended_ns[slot].store(if co { it_mono + 1 } else { 0 }, Ordering::Release);
                tag += 1;
            }
            enc.message(&mut buf, size, &prefix[..plen], st.json.as_deref());
        }
        if let Some(w) = window {
            w.outstanding.fetch_add(n, Ordering::AcqRel);
            w.next_tag.store(tag, Ordering::Release);
        }
        st.sent += n;
        unflushed += n;
        if buf.len() >= FLUSH_BYTES || st.pacer.is_some() || window.is_some_and(|w| w.avail() == 0)
        {
            flush(&mut buf, &mut unflushed)?;
        }
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
    let c = &sh.producers[idx];
    let mut blocked = false;
    let r = (|| loop {
        let f = reader.next()?;
        if f.kind != wire::FRAME_METHOD {
            continue;
        }
        let id = wire::method_id(f.payload);
        let mut d = Dec::new(&f.payload[4..]);
        match id {
            Some(m::BASIC_ACK) | Some(m::BASIC_NACK) => {
                let tag = d.u64().unwrap_or(0);
                let multiple = d.u8().unwrap_or(0) & 1 == 1;
                if let Some(w) = window {
                    w.settle(sh, c, tag, multiple, id == Some(m::BASIC_NACK));
                    if w.waiting.load(Ordering::SeqCst) {
                        producer.unpark();
                    }
                }
            }
            Some(m::BASIC_RETURN) => Counters::add(&c.returned, 1),
            Some(m::CONN_BLOCKED) => {
                let reason = d.shortstr().unwrap_or("").to_string();
                if !blocked {
                    blocked = true;
                    sh.blocked_now.fetch_add(1, Ordering::SeqCst);
                }
                sh.blocked_in_tick.store(true, Ordering::SeqCst);
                sh.blocked_notifications.fetch_add(1, Ordering::SeqCst);
                sh.event("blocked", format!("producer {idx}: {reason}"));
            }
            Some(m::CONN_UNBLOCKED) => {
                if blocked {
                    blocked = false;
                    sh.blocked_now.fetch_sub(1, Ordering::SeqCst);
                }
                sh.event("unblocked", format!("producer {idx}"));
            }
            Some(m::CONN_CLOSE) | Some(m::CHAN_CLOSE) => {
                return Err(super::closed_by_broker(&mut d, id, f.channel, writer, sh));
            }
            _ => {}
        }
    })();
    if blocked {
        sh.blocked_now.fetch_sub(1, Ordering::SeqCst);
    }
    r
}

/// A JSON document of exactly `size` bytes with random keys and values.
fn random_json(size: usize) -> Vec<u8> {
    let mut s = String::from("{");
    let mut i = 0;
    while s.len() + 40 < size {
        if i > 0 {
            s.push(',');
        }
        let key: String = (0..6).map(|_| fastrand::alphanumeric()).collect();
        if fastrand::bool() {
            s.push_str(&format!("\"{key}\":{}", fastrand::u32(..)));
        } else {
            let v: String = (0..8).map(|_| fastrand::alphanumeric()).collect();
            s.push_str(&format!("\"{key}\":\"{v}\""));
        }
        i += 1;
    }
    let sep = if i > 0 { "," } else { "" };
    let pad = size.saturating_sub(s.len() + sep.len() + 7);
    s.push_str(sep);
    s.push_str("\"p\":\"");
    s.push_str(&"x".repeat(pad));
    s.push_str("\"}");
    s.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_cycle() {
        let steps = [(10.0, 2), (0.0, 3)];
        assert_eq!(step_at(&steps, 0.5), (10.0, 2.0));
        assert_eq!(step_at(&steps, 2.5), (0.0, 5.0));
        assert_eq!(step_at(&steps, 5.5), (10.0, 7.0));
        assert_eq!(step_at(&[(7usize, 0)], 1e9).0, 7);
    }

    #[test]
    fn pacer_skips_zero_rate_steps() {
        let o = crate::AmqpOptions {
            variable_rate: vec![(2.0, 1), (0.0, 1)],
            ..Default::default()
        };
        let mut p = Pacer::new(&o).unwrap();
        let mut times = vec![];
        while p.next < 4.0 {
            times.push(p.next);
            p.advance();
        }
        assert_eq!(times, vec![0.0, 0.5, 2.0, 2.5]);
    }

    #[test]
    fn json_body_has_the_size_and_parses() {
        for size in [12, 50, 1000] {
            let j = random_json(size);
            assert_eq!(j.len(), size, "size {size}");
            serde_json::from_slice::<serde_json::Value>(&j).unwrap();
        }
    }
}
