//! Publishing: what is due on a connection, as far as its socket and window allow, and
//! what is sent again after a reconnect.
use super::{codec, kind, ConnState, Loop, MqttOptions, Outgoing, PublisherState, Role, Unacked};
use crate::engine::body::{self, Origin, Stamp};

impl Loop<'_> {
    /// Publishes what is due on connection `i` while the socket and the window allow.
    pub(super) fn pump(&mut self, i: usize) {
        let now = self.now();
        let go = self.ctx.go_ns().unwrap_or(0);
        if self.ctx.stopping() || self.conns[i].state != ConnState::Ready {
            return;
        }
        let mut out = std::mem::take(&mut self.packet_buf);
        out.clear();
        let Some(Batch { next_due, more }) = self.encode_due(i, now, go, &mut out) else {
            self.packet_buf = out;
            return;
        };
        if !out.is_empty() {
            let c = &mut self.conns[i];
            c.last_sent_ns = now;
            c.out_buf.extend_from_slice(&out);
        }
        self.packet_buf = out;
        self.flush(i);
        if let Some(t) = next_due {
            let at = go + (t * 1e9) as u64;
            self.timer(at, i as u32);
        }
        if more && !self.conns[i].write_blocked {
            self.ready.push_back(i as u32);
        }
    }

    /// Encodes into `out` the messages due on publisher connection `i` (at most 64 KiB of
    /// them, within its window and `--limit`); `None` when it is no publisher or its
    /// socket has enough to write already.
    fn encode_due(&mut self, i: usize, now: u64, go: u64, out: &mut Vec<u8>) -> Option<Batch> {
        let now_s = now.saturating_sub(go) as f64 / 1e9;
        let end_s = self.ctx.end_s();
        let o = self.opts;
        let persistent = self.persistent_session;
        let mut budget = 64 * 1024usize;
        let mut batch = Batch {
            next_due: None,
            more: false,
        };
        let c = &mut self.conns[i];
        let Role::Publisher(p) = c.role else {
            return None;
        };
        let ps = c.publisher.as_mut()?;
        let pending = c.out_buf.len() - c.written;
        if c.write_blocked || pending > 64 * 1024 {
            return None;
        }
        loop {
            if o.limit > 0 && ps.encoded >= o.limit {
                if !ps.at_limit && ps.unacked.is_empty() {
                    ps.at_limit = true;
                    self.publishers_done += 1;
                }
                break;
            }
            if o.qos > 0 && ps.unacked.len() >= ps.window as usize {
                break;
            }
            if budget == 0 {
                batch.more = true;
                break;
            }
            let intended = match ps.schedule.as_mut() {
                Some(s) => match s.take_due(now_s, end_s) {
                    Some(t) => Some(t),
                    None => {
                        batch.next_due = s.next().filter(|&t| t < end_s);
                        break;
                    }
                },
                None => None,
            };
            let real = crate::engine::clock::real_ns();
            let it_ns = intended.map(|t| self.ctx.clock().real_at(go + (t * 1e9) as u64));
            // A payload too small for the whole stamp carries what fits, without an
            // origin (which would not fit whole).
            let stamp = Stamp {
                seq: ps.next_seq,
                sent_ns: real,
                intended_ns: it_ns.filter(|_| o.size >= body::WITH_INTENDED),
                origin: if o.unmarked() {
                    Origin::Unmarked
                } else {
                    Origin::Load {
                        load: self.load_id,
                        publisher: p,
                    }
                },
            };
            let before = out.len();
            let alias = (o.topic_alias && c.topic_alias_max > 0).then_some(1u16);
            encode_next(o, ps, &stamp, alias, now, persistent, out);
            c.publish_ends.push_back(c.out_buf.len() + out.len());
            ps.next_seq = ps.next_seq.wrapping_add(1);
            ps.encoded += 1;
            budget = budget.saturating_sub(out.len() - before);
        }
        Some(batch)
    }

    /// Sends unacknowledged messages again after a reconnect with a persistent session: the
    /// PUBLISH (DUP set when the broker kept the session), or the PUBREL of a QoS 2 message
    /// already received.
    pub(super) fn resend(&mut self, i: usize, now: u64, dup: bool) {
        let Some(ps) = self.conns[i].publisher.as_mut() else {
            return;
        };
        let mut packets: Vec<(Vec<u8>, bool)> = Vec::new();
        for f in ps.unacked.iter_mut() {
            f.sent_ns = now;
            if f.pubrec_received {
                let mut b = Vec::with_capacity(4);
                codec::ack(&mut b, kind::PUBREL, f.pid);
                packets.push((b, false));
            } else if let Some(&first) = f.resend.first() {
                let mut b = f.resend.clone();
                // DUP only for what this session may have seen.
                b[0] = if dup && f.written {
                    first | 0x08
                } else {
                    first
                };
                packets.push((b, !f.written));
                f.written = true;
            }
        }
        if packets.is_empty() {
            return;
        }
        self.ctx.event(
            "resent",
            format!("client {i}: {} unacknowledged message(s)", packets.len()),
        );
        for (b, first_time) in packets {
            self.send(
                i,
                &b,
                if first_time {
                    Outgoing::NewPublish
                } else {
                    Outgoing::Control
                },
            );
        }
    }
}

/// What one batch of publishing left for later.
struct Batch {
    /// When the publisher's schedule has its next message due (seconds into the load).
    next_due: Option<f64>,
    /// The batch is full while more is due: the publisher queues again.
    more: bool,
}

/// Appends one PUBLISH of `ps` to `out`: `stamp` and the payload's padding, a new packet
/// id (QoS 1/2, kept as unacknowledged), the topic or its `alias` (the topic itself only
/// until the alias is set). With a persistent session, a copy with its full topic is
/// kept to send again after a reconnect: topic aliases do not outlive a connection.
fn encode_next(
    o: &MqttOptions,
    ps: &mut PublisherState,
    stamp: &Stamp,
    alias: Option<u16>,
    now: u64,
    persistent: bool,
    out: &mut Vec<u8>,
) {
    let mut head = [0u8; body::FULL];
    // The payload as asked, the stamp cut to it when it is smaller.
    let hl = stamp.write(&mut head).min(o.size);
    let pid = if o.qos > 0 {
        let pid = ps.next_packet_id;
        ps.next_packet_id = if ps.next_packet_id == u16::MAX {
            1
        } else {
            ps.next_packet_id + 1
        };
        ps.unacked.push_back(Unacked {
            pid,
            sent_ns: now,
            pubrec_received: false,
            written: true,
            resend: Vec::new(),
        });
        pid
    } else {
        0
    };
    let topic: &[u8] = if alias.is_some() && ps.alias_sent {
        b""
    } else {
        &ps.topic
    };
    let before = out.len();
    let publish = |topic, topic_alias| codec::Publish {
        version: o.version,
        qos: o.qos,
        retain: o.retain,
        dup: false,
        topic,
        pid,
        topic_alias,
        message_expiry: o.message_expiry,
    };
    codec::publish(out, &publish(topic, alias), &head[..hl], o.size);
    if alias.is_some() {
        ps.alias_sent = true;
    }
    if persistent && o.qos > 0 {
        let mut again = Vec::with_capacity(out.len() - before + ps.topic.len());
        codec::publish(&mut again, &publish(&ps.topic, None), &head[..hl], o.size);
        if let Some(f) = ps.unacked.back_mut() {
            f.resend = again;
        }
    }
}
