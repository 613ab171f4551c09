//! The protocol's state machine: CONNACK, SUBACK, PINGRESP, PUBLISH and acks as they
//! arrive, keepalive pings and handshake timeouts.
use super::codec::ConnAckProps;
use super::schema::M;
use super::{codec, kind, ConnState, Loop, Outgoing, Packet, PublisherState, Role, Unacked};
use crate::engine::pacer::{Constant, Schedule};
use std::collections::VecDeque;

impl Loop<'_> {
    /// A timer of connection `i` is due: a reconnect, a handshake timeout, a keepalive
    /// ping (or the lack of its answer), or a publisher's schedule.
    pub(super) fn on_timer(&mut self, i: usize, now: u64) {
        let ka = self.opts.keepalive as u64 * 1_000_000_000;
        let st = self.conns[i].state;
        match st {
            // While waiting, `attempt_ns` holds when to try again.
            ConnState::Waiting
                if !self.ctx.stopping()
                    && self.conns[i].was_connected
                    && now >= self.conns[i].attempt_ns =>
            {
                self.open(i as u32);
            }
            ConnState::Connecting | ConnState::Handshake | ConnState::Subscribing => {
                let c = &self.conns[i];
                if now >= c.attempt_ns + self.opts.connect_timeout.as_nanos() as u64 {
                    let what = match st {
                        ConnState::Connecting => "TCP connect",
                        ConnState::Handshake => "CONNACK",
                        _ => "SUBACK",
                    };
                    let why = format!(
                        "no {what} within {} s (is the broker running, and is this an MQTT port?)",
                        self.opts.connect_timeout.as_secs_f64()
                    );
                    self.failed(i, why);
                }
            }
            ConnState::Ready => {
                if ka > 0 {
                    let c = &self.conns[i];
                    if c.ping_sent_ns != 0 && now >= c.ping_sent_ns + ka * 2 {
                        self.dropped(i, "no PINGRESP within two keepalive periods".into());
                        return;
                    }
                    if now >= c.last_sent_ns + ka && c.ping_sent_ns == 0 {
                        let mut out = std::mem::take(&mut self.packet_buf);
                        out.clear();
                        codec::pingreq(&mut out);
                        self.conns[i].ping_sent_ns = now;
                        self.ctx.add(0, M.pings, 1);
                        self.send(i, &out, Outgoing::Control);
                        self.packet_buf = out;
                    }
                    let c = &self.conns[i];
                    let next = if c.ping_sent_ns != 0 {
                        c.ping_sent_ns + ka * 2
                    } else {
                        c.last_sent_ns + ka
                    };
                    if c.state == ConnState::Ready {
                        self.timer(next.max(now + 1_000_000), i as u32);
                    }
                }
                if self.conns[i].publisher.is_some() {
                    self.pump(i);
                }
            }
            _ => {}
        }
    }

    /// Counts a refusal by its packet and reason code name; its words for messages.
    pub(super) fn refused(&mut self, what: &str, code: u8) -> String {
        let name = codec::code_name(self.opts.version, code);
        *self.refusals.entry(format!("{what} {name}")).or_insert(0) += 1;
        self.ctx.add(0, M.refused, 1);
        format!("{what} {code:#04x} {name}")
    }

    /// Handles one packet from the broker on connection `i`.
    pub(super) fn on_packet(&mut self, i: usize, p: Packet) {
        let now = self.now();
        match p {
            Packet::ConnAck {
                code,
                props,
                session_present,
            } => {
                if code != 0 {
                    let why = self.refused("CONNACK", code);
                    let reason = props.reason.map(|r| format!(": {r}")).unwrap_or_default();
                    // The protocol version refused (3.1.1's 1, MQTT 5's 0x84): say which
                    // kiln sent, and what to give instead.
                    let v5 = self.opts.version == codec::Version::V5;
                    let hint = if (!v5 && code == 1) || (v5 && code == 0x84) {
                        format!(" ({})", self.opts.version.hint())
                    } else {
                        String::new()
                    };
                    self.failed(
                        i,
                        format!("the broker refused the connection: {why}{reason}{hint}"),
                    );
                    return;
                }
                self.on_connected(i, &props, session_present, now);
            }
            Packet::SubAck { codes, .. } => self.on_suback(i, codes, now),
            Packet::PingResp => {
                let c = &mut self.conns[i];
                if c.ping_sent_ns != 0 {
                    let rtt = now.saturating_sub(c.ping_sent_ns) / 1000;
                    c.ping_sent_ns = 0;
                    self.ctx.add(0, M.pongs, 1);
                    self.ctx.record(0, M.ping_latency, rtt);
                }
            }
            Packet::Publish {
                qos, pid, payload, ..
            } => self.on_publish(i, qos, pid, payload),
            Packet::Ack { kind: k, pid, code } => self.on_ack(i, k, pid, code, now),
            Packet::Disconnect { code, reason } => {
                let why = self.refused("DISCONNECT", code);
                let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
                self.dropped(i, format!("the broker disconnected: {why}{reason}"));
            }
            Packet::UnsubAck { .. } | Packet::PingReq | Packet::Auth { .. } => {}
        }
    }

    /// A successful CONNACK: the load starts with the first; a subscriber subscribes, a
    /// publisher starts (or resumes) publishing.
    fn on_connected(
        &mut self,
        i: usize,
        props: &ConnAckProps<'_>,
        session_present: bool,
        now: u64,
    ) {
        let started = self.conns[i].attempt_ns;
        self.ctx
            .record(0, M.connect_latency, now.saturating_sub(started) / 1000);
        if !self.load_started {
            self.load_started = true;
            self.ctx.start_load();
        }
        let c = &mut self.conns[i];
        c.topic_alias_max = props.topic_alias_max;
        if c.was_connected {
            self.ctx.add(0, M.reconnects, 1);
            self.ctx.flag_off(M.disconnected);
            self.ctx.event("reconnected", format!("client {i}"));
        }
        let c = &mut self.conns[i];
        c.was_connected = true;
        self.ctx.add(0, M.connected, 1);
        match c.role {
            Role::Subscriber(s) => {
                c.state = ConnState::Subscribing;
                let f = self.opts.sub_filter(s);
                let mut out = std::mem::take(&mut self.packet_buf);
                out.clear();
                codec::subscribe(&mut out, self.opts.version, 1, &[&f], self.opts.qos);
                self.send(i, &out, Outgoing::Control);
                self.packet_buf = out;
            }
            Role::Publisher(p) => {
                c.state = ConnState::Ready;
                let window = (self.opts.inflight).min(props.receive_max.max(1));
                if c.publisher.is_none() {
                    let ps = self.new_publisher(p, window);
                    self.conns[i].publisher = Some(Box::new(ps));
                } else {
                    self.resume_publisher(i, window, session_present);
                }
                self.arm_keepalive(i, now);
                self.resend(i, now, session_present);
                self.ready.push_back(i as u32);
            }
            Role::Idle => {
                c.state = ConnState::Ready;
                self.arm_keepalive(i, now);
            }
        }
    }

    /// Publisher `p`'s state at its first CONNACK.
    fn new_publisher(&self, p: u32, window: u16) -> PublisherState {
        let schedule = (self.opts.pub_interval_ms > 0.0).then(|| {
            let per = self.opts.pub_interval_ms / 1000.0;
            Schedule::new(Box::new(Constant {
                rate: 1.0 / per,
                offset: fastrand::f64() * per,
            }))
        });
        PublisherState {
            schedule,
            next_seq: 0,
            encoded: 0,
            never_written: 0,
            next_packet_id: 1,
            unacked: VecDeque::new(),
            window,
            alias_sent: false,
            topic: self.opts.topic_for(p).into_bytes(),
            at_limit: false,
        }
    }

    /// A publisher connected again: its window anew, its topic alias to set again, and
    /// its unacknowledged messages published again as new ones if the broker kept no
    /// session.
    fn resume_publisher(&mut self, i: usize, window: u16, session_present: bool) {
        let Some(ps) = self.conns[i].publisher.as_mut() else {
            return;
        };
        ps.window = window;
        ps.alias_sent = false;
        if !session_present && !ps.unacked.is_empty() {
            // The broker kept no session: messages it had not acknowledged are published
            // again as new ones (at least once, as the application sees it); a QoS 2
            // message it had received (PUBREC) stays delivered and is forgotten.
            ps.unacked.retain(|f| !f.pubrec_received);
            self.ctx.event(
                "session-lost",
                format!(
                    "client {i}: the broker kept no session; {} unacknowledged message(s) published again",
                    ps.unacked.len()
                ),
            );
        }
    }

    /// A SUBACK: a refusal fails the connection; else the subscriber is ready.
    fn on_suback(&mut self, i: usize, codes: &[u8], now: u64) {
        if let Some(&c) = codes.iter().find(|&&c| c >= 0x80) {
            let why = self.refused("SUBACK", c);
            self.failed(
                i,
                format!(
                    "the broker refused the subscription to '{}': {why}",
                    self.opts.sub_filter(0)
                ),
            );
            return;
        }
        if self.conns[i].state == ConnState::Subscribing {
            self.conns[i].state = ConnState::Ready;
            self.subscribed += 1;
            self.arm_keepalive(i, now);
        }
    }

    /// A message delivered to a subscriber: accounted, and acknowledged as its QoS asks.
    fn on_publish(&mut self, i: usize, qos: u8, pid: u16, payload: &[u8]) {
        self.delivered(i, payload);
        let mut out = std::mem::take(&mut self.packet_buf);
        out.clear();
        match qos {
            1 => codec::ack(&mut out, kind::PUBACK, pid),
            2 => {
                if !self.conns[i].awaiting_release.contains(&pid) {
                    self.conns[i].awaiting_release.push(pid);
                }
                codec::ack(&mut out, kind::PUBREC, pid)
            }
            _ => {}
        }
        if !out.is_empty() {
            self.send(i, &out, Outgoing::Control);
        }
        self.packet_buf = out;
    }

    /// Starts the keepalive clock of connection `i` (a ping after `--keepalive` s idle).
    pub(super) fn arm_keepalive(&mut self, i: usize, now: u64) {
        self.conns[i].last_sent_ns = now;
        if self.opts.keepalive > 0 {
            let at = now + self.opts.keepalive as u64 * 1_000_000_000;
            self.timer(at, i as u32);
        }
    }

    /// PUBACK, PUBREC, PUBREL or PUBCOMP on connection `i`: a subscriber releases a
    /// QoS 2 message; a publisher's message is acknowledged (its window opens) or goes on
    /// to PUBREL.
    pub(super) fn on_ack(&mut self, i: usize, k: u8, pid: u16, code: u8, now: u64) {
        if k == kind::PUBREL {
            // Subscriber side of QoS 2: release and complete.
            self.conns[i].awaiting_release.retain(|&p| p != pid);
            let mut out = std::mem::take(&mut self.packet_buf);
            out.clear();
            codec::ack(&mut out, kind::PUBCOMP, pid);
            self.send(i, &out, Outgoing::Control);
            self.packet_buf = out;
            return;
        }
        if code >= 0x80 {
            let why = self.refused(
                if k == kind::PUBACK {
                    "PUBACK"
                } else {
                    "PUBREC"
                },
                code,
            );
            self.ctx.event("refused", format!("client {i}: {why}"));
        }
        let qos2 = self.opts.qos == 2;
        let Some(ps) = self.conns[i].publisher.as_mut() else {
            return;
        };
        let Some(pos) = ps.unacked.iter().position(|e| e.pid == pid) else {
            return;
        };
        if k == kind::PUBREC && qos2 && code < 0x80 {
            ps.unacked[pos].pubrec_received = true;
            ps.unacked[pos].resend = Vec::new();
            let mut out = std::mem::take(&mut self.packet_buf);
            out.clear();
            codec::ack(&mut out, kind::PUBREL, pid);
            self.send(i, &out, Outgoing::Control);
            self.packet_buf = out;
            return;
        }
        let Some(Unacked { sent_ns: sent, .. }) = ps.unacked.remove(pos) else {
            return;
        };
        if (k == kind::PUBACK && !qos2) || k == kind::PUBCOMP || code >= 0x80 {
            if code < 0x80 {
                self.ctx.add(0, M.acked, 1);
                self.ctx
                    .record(0, M.ack_latency, now.saturating_sub(sent) / 1000);
            }
            self.ready.push_back(i as u32);
        }
    }
}
