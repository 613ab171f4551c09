//! A consumer: one connection, one thread reading deliveries in place and batching acks.
use super::conn::{Connection, FrameReader, Writer};
use super::driver::{Shared, M};
use super::wire::{self, m, Assembled, Deliveries, Delivery};
use crate::engine::body::{self, Stamp};
use crate::Error;
use std::time::{Duration, Instant};

/// Timestamps further than this from now are not ours (another publisher's messages).
const PLAUSIBLE_NS: u64 = 3_600_000_000_000;

struct State {
    received: u64,
}

pub(super) fn run(sh: &Shared, idx: usize) {
    let mut st = State { received: 0 };
    let name = format!("consumer {idx}");
    sh.agent(&name, |connected| session(sh, idx, &mut st, connected));
}

/// How many times a consumer sets up again when its named queue vanished between its
/// declaration and its `basic.consume`.
const VANISHED_RETRIES: u32 = 20;

fn session(
    sh: &Shared,
    idx: usize,
    st: &mut State,
    connected: &mut dyn FnMut(),
) -> Result<(), Error> {
    let (reader, writer) = set_up(sh, idx)?;
    sh.register(&writer);
    connected();
    consume_loop(sh, idx, st, reader, &writer)
}

/// Connects, declares the consumer's queue and starts consuming from it.
///
/// An auto-deleted queue is deleted by the broker when its last consumer leaves, a moment
/// after: the previous step of a sweep (its consumers just gone) can have it deleted between
/// this consumer's `queue.declare` (answered by the dying queue) and its `basic.consume`
/// (404 NOT_FOUND). The setup is then made again on a new connection, declaring the queue
/// anew, so the steps of a sweep hand over without losing it.
fn set_up(sh: &Shared, idx: usize) -> Result<(FrameReader, std::sync::Arc<Writer>), Error> {
    let mut tries = 0;
    loop {
        match try_set_up(sh, idx) {
            Err(Error::Closed { code: 404, .. })
                if !sh.topo.queues.is_empty() && tries < VANISHED_RETRIES && !sh.stopping() =>
            {
                tries += 1;
                if sh.ctx.stop().sleep(Duration::from_millis(50)) {
                    return Err(Error::Start("stopped while setting up".into()));
                }
            }
            r => return r,
        }
    }
}

fn try_set_up(sh: &Shared, idx: usize) -> Result<(FrameReader, std::sync::Arc<Writer>), Error> {
    let o = sh.opts;
    let topo = &sh.topo;
    let mut conn = Connection::open(sh.uri, &format!("kiln-consumer-{idx}"))?;
    if o.qos > 0 {
        conn.qos(o.qos)?;
    }
    let queue = if topo.queues.is_empty() {
        conn.declare_exchange(&o.exchange, &o.exchange_type)?;
        let q = conn.declare_queue("", false, true, true, &o.queue_args)?;
        conn.bind(&q, &o.exchange, &topo.routing_key)?;
        q
    } else {
        let q = topo.queues[idx % topo.queues.len()].clone();
        topo.declare(&mut conn, o, Some(&q))?;
        q
    };
    conn.consume(&queue, &format!("kiln-{idx}"), o.autoack, &o.consumer_args)?;
    Ok(conn.split())
}

/// Reads the next frame and assembles deliveries (`basic.deliver`, its content header,
/// its body frames): a delivery when its last frame has come, `None` otherwise.
fn next_delivery(
    sh: &Shared,
    reader: &mut FrameReader,
    writer: &Writer,
    deliveries: &mut Deliveries,
) -> Result<Option<Delivery>, Error> {
    let f = reader.next()?;
    let channel = f.channel;
    Ok(match deliveries.feed(f).map_err(|what| short(sh, what))? {
        Assembled::Delivery(d) => Some(d),
        Assembled::Method(m::BASIC_CANCEL, _) => {
            return Err(Error::Closed {
                uri: sh.uri.display(),
                code: 0,
                text: "the broker cancelled the consumer (queue deleted?)".into(),
            })
        }
        Assembled::Method(id @ (m::CONN_CLOSE | m::CHAN_CLOSE), mut d) => {
            return Err(super::driver::closed_by_broker(
                &mut d,
                Some(id),
                channel,
                writer,
                sh,
            ));
        }
        Assembled::Method(..) | Assembled::Nothing => None,
    })
}

/// A delivery's latencies, from the send time (and intended send time) stamped in its
/// body.
fn record_latency(sh: &Shared, slot: usize, d: &Delivery) {
    let stamp = Stamp::read(&d.prefix[..d.got.min(body::WITH_INTENDED)]);
    let now = crate::engine::clock::real_ns();
    if let Some(s) = stamp.filter(|s| now.abs_diff(s.sent_ns) < PLAUSIBLE_NS) {
        let mut h = sh.ctx.hists(slot);
        h.record(M.consumer_latency, now.saturating_sub(s.sent_ns) / 1000);
        if let Some(it) = s
            .intended_ns
            .filter(|&it| sh.opts.rate_limited() && now.abs_diff(it) < PLAUSIBLE_NS)
        {
            h.record(M.consumer_latency_intended, now.saturating_sub(it) / 1000);
        }
    }
}

/// Acknowledgements waiting to be written: one per `every` deliveries (multiple when
/// `every` > 1), written in batches.
struct Acks {
    buf: Vec<u8>,
    every: u64,
    unacked: u64,
    last_tag: u64,
}

impl Acks {
    fn delivered(&mut self, tag: u64) {
        self.last_tag = tag;
        self.unacked += 1;
        if self.unacked >= self.every {
            wire::ack(&mut self.buf, self.last_tag, self.every > 1);
            self.unacked = 0;
        }
    }

    /// Acknowledges every delivery not acknowledged yet.
    fn all(&mut self) {
        if self.unacked > 0 {
            wire::ack(&mut self.buf, self.last_tag, true);
            self.unacked = 0;
        }
    }

    fn write(&mut self, writer: &Writer) -> Result<(), Error> {
        if !self.buf.is_empty() {
            writer.write(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

fn consume_loop(
    sh: &Shared,
    idx: usize,
    st: &mut State,
    mut reader: FrameReader,
    writer: &Writer,
) -> Result<(), Error> {
    let o = sh.opts;
    let ctx = sh.ctx;
    let slot = sh.consumer(idx);
    let measure = !o.json_body;
    let mut acks = Acks {
        buf: Vec::with_capacity(4096),
        every: o.multi_ack_every.max(1) as u64,
        unacked: 0,
        last_tag: 0,
    };
    let mut deliveries = Deliveries::default();
    let mut pace_start: Option<(Instant, u64)> = None;
    loop {
        if let Some(d) = next_delivery(sh, &mut reader, writer, &mut deliveries)? {
            st.received += 1;
            // Counted where its latency is recorded, one by one: the receive counter and
            // the latency histogram are one event's and must agree whenever the loop ends
            // (a batch of counts still pending when a timed run stopped left the counter
            // one short of the histogram).
            ctx.add(slot, M.received, 1);
            if measure {
                record_latency(sh, slot, &d);
            }
            if !o.autoack {
                acks.delivered(d.tag);
            }
            let done = o.cmessages > 0 && st.received >= o.cmessages;
            let throttled = o.consumer_rate.is_some() || !o.consumer_latency.is_zero();
            if done || throttled || acks.buf.len() > 16 * 1024 || !reader.has_frame() {
                if done {
                    acks.all();
                }
                acks.write(writer)?;
            }
            if done {
                // Leave at once: messages prefetched beyond our count go back to the queue
                // for the other consumers instead of sitting unacknowledged here. Close
                // politely and wait for close-ok, so the broker has applied every ack sent
                // (an abrupt close can lose acks still in its socket buffer, and those
                // messages would be delivered again).
                close_politely(&mut reader, writer);
                sh.consumer_done();
                return Ok(());
            }
            // Simulated processing time and the consumer rate: both wake on the stop, so
            // -z stays a hard deadline whatever -L is.
            if !o.consumer_latency.is_zero() && ctx.stop().sleep(o.consumer_latency) {
                return Ok(());
            }
            if let Some(rate) = o.consumer_rate {
                let (t0, n0) = *pace_start.get_or_insert((Instant::now(), st.received - 1));
                let due = Duration::from_secs_f64((st.received - n0) as f64 / rate.max(1e-9));
                let el = t0.elapsed();
                if due > el && ctx.stop().sleep((due - el).min(Duration::from_secs(5))) {
                    return Ok(());
                }
            }
        }
        // Multi-ack leftovers are acked when the broker has nothing more for us right now,
        // so a prefetch smaller than --multi-ack-every cannot deadlock the run.
        if acks.unacked > 0 && !reader.has_frame() {
            acks.all();
            acks.write(writer)?;
        }
    }
}

fn close_politely(reader: &mut FrameReader, writer: &Writer) {
    let mut out = Vec::new();
    wire::method_frame(&mut out, 0, m::CONN_CLOSE, |e| {
        e.u16(200).shortstr("message count reached").u16(0).u16(0);
    });
    if writer.write(&out).is_ok() {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            match reader.next() {
                Ok(f)
                    if f.kind == wire::FRAME_METHOD
                        && wire::method_id(f.payload) == Some(m::CONN_CLOSE_OK) =>
                {
                    break
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    writer.shutdown();
}

fn short(sh: &Shared, what: &str) -> Error {
    Error::Protocol {
        uri: sh.uri.display(),
        reason: format!("short {what} frame"),
    }
}
