//! MQTT 3.1, 3.1.1 and 5 packets: what a load generator sends and receives.
//!
//! Hand-written for the hot path: a PUBLISH is appended to a reused buffer with its stamp
//! and zero padding written in place (no allocation per message), and incoming packets are
//! decoded in place in the read buffer ([`Packet`] borrows it). The standalone codec crate
//! (`mqttbytes`) has had no release since 2021 (its code lives on inside `rumqttc`, with
//! tokio), has no MQTT 3.1, and allocates a topic `String` and a payload `Bytes` per
//! PUBLISH. Decoding never panics on any input (fuzzed: `fuzz/fuzz_targets/mqtt_packet.rs`).

/// Protocol versions (the CONNECT protocol level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Version {
    /// MQTT 3.1 (`MQIsdp`, level 3).
    V3,
    /// MQTT 3.1.1 (level 4).
    V4,
    /// MQTT 5 (level 5).
    V5,
}

impl Version {
    /// From `-V 3|4|5`.
    pub fn from_level(l: u8) -> Option<Self> {
        match l {
            3 => Some(Version::V3),
            4 => Some(Version::V4),
            5 => Some(Version::V5),
            _ => None,
        }
    }
    /// What a person reads: `MQTT 5`, `MQTT 3.1.1`, `MQTT 3.1`, with its `-V`.
    pub fn shown(self) -> &'static str {
        match self {
            Version::V3 => "MQTT 3.1 (-V 3)",
            Version::V4 => "MQTT 3.1.1 (-V 4)",
            Version::V5 => "MQTT 5 (-V 5, the default)",
        }
    }

    /// What to try when a broker will not speak this version: said with the version kiln
    /// sent, where a CONNECT was refused or closed without an answer.
    pub fn hint(self) -> String {
        let other = match self {
            Version::V5 => {
                "give -V 4 (MQTT 3.1.1: RabbitMQ before 3.13 and many brokers speak only that)"
            }
            Version::V4 => "give -V 3 for a broker of MQTT 3.1 only, or -V 5",
            Version::V3 => "give -V 4 (MQTT 3.1.1)",
        };
        format!("kiln sent {}; {other}", self.shown())
    }

    fn v5(self) -> bool {
        self == Version::V5
    }
}

/// Packet types.
pub mod kind {
    /// CONNECT
    pub const CONNECT: u8 = 1;
    /// CONNACK
    pub const CONNACK: u8 = 2;
    /// PUBLISH
    pub const PUBLISH: u8 = 3;
    /// PUBACK
    pub const PUBACK: u8 = 4;
    /// PUBREC
    pub const PUBREC: u8 = 5;
    /// PUBREL
    pub const PUBREL: u8 = 6;
    /// PUBCOMP
    pub const PUBCOMP: u8 = 7;
    /// SUBSCRIBE
    pub const SUBSCRIBE: u8 = 8;
    /// SUBACK
    pub const SUBACK: u8 = 9;
    /// UNSUBSCRIBE
    pub const UNSUBSCRIBE: u8 = 10;
    /// UNSUBACK
    pub const UNSUBACK: u8 = 11;
    /// PINGREQ
    pub const PINGREQ: u8 = 12;
    /// PINGRESP
    pub const PINGRESP: u8 = 13;
    /// DISCONNECT
    pub const DISCONNECT: u8 = 14;
    /// AUTH (MQTT 5)
    pub const AUTH: u8 = 15;
}

/// What is wrong with bytes from the server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The remaining length uses more than 4 bytes.
    #[error("malformed remaining length")]
    Length,
    /// The packet is larger than we accept.
    #[error("packet of {0} bytes is larger than the limit")]
    TooLarge(usize),
    /// A field runs past the end of the packet.
    #[error("truncated {0}")]
    Short(&'static str),
    /// A packet type or flags that a server never sends.
    #[error("unexpected packet type {0} (flags {1:#x})")]
    Unexpected(u8, u8),
    /// An invalid value.
    #[error("invalid {0}")]
    Invalid(&'static str),
}

/// Properties of a CONNACK (MQTT 5) that change what the client may do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnAckProps<'a> {
    /// Topic aliases the server accepts (0: none).
    pub topic_alias_max: u16,
    /// In-flight QoS 1/2 messages the server accepts (65535 when absent).
    pub receive_max: u16,
    /// The largest packet the server accepts.
    pub max_packet_size: Option<u32>,
    /// A client id the server chose.
    pub assigned_client_id: Option<&'a str>,
    /// The server's reason, for people.
    pub reason: Option<&'a str>,
}

/// A packet from the server, borrowing the read buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet<'a> {
    /// CONNACK: return code (3.1.1) or reason code (5).
    ConnAck {
        /// The server kept a session.
        session_present: bool,
        /// 0 is success.
        code: u8,
        /// MQTT 5 properties.
        props: ConnAckProps<'a>,
    },
    /// PUBLISH.
    Publish {
        /// Redelivery flag.
        dup: bool,
        /// QoS 0, 1 or 2.
        qos: u8,
        /// Retained message.
        retain: bool,
        /// Topic (empty with a topic alias).
        topic: &'a [u8],
        /// Packet id (QoS 1 and 2).
        pid: u16,
        /// MQTT 5 topic alias.
        topic_alias: Option<u16>,
        /// The payload.
        payload: &'a [u8],
    },
    /// PUBACK, PUBREC, PUBREL or PUBCOMP (`kind`), with its packet id and reason code.
    Ack {
        /// [`kind::PUBACK`]…[`kind::PUBCOMP`].
        kind: u8,
        /// Packet id.
        pid: u16,
        /// Reason code (0 when absent).
        code: u8,
    },
    /// SUBACK: one granted QoS or reason code per topic filter.
    SubAck {
        /// Packet id.
        pid: u16,
        /// Codes.
        codes: &'a [u8],
    },
    /// UNSUBACK.
    UnsubAck {
        /// Packet id.
        pid: u16,
    },
    /// PINGRESP.
    PingResp,
    /// PINGREQ (servers do not send it; decoded for completeness).
    PingReq,
    /// DISCONNECT from the server (MQTT 5), with its reason code.
    Disconnect {
        /// Reason code.
        code: u8,
        /// The server's reason, for people.
        reason: Option<&'a str>,
    },
    /// AUTH (MQTT 5).
    Auth {
        /// Reason code.
        code: u8,
    },
}

/// Appends a variable byte integer.
fn varint(out: &mut Vec<u8>, mut v: usize) {
    loop {
        let mut b = (v % 128) as u8;
        v /= 128;
        if v > 0 {
            b |= 0x80;
        }
        out.push(b);
        if v == 0 {
            return;
        }
    }
}

fn varint_len(v: usize) -> usize {
    match v {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        _ => 4,
    }
}

/// Reads a variable byte integer at the start of `b`: `(value, bytes)`; `None` when more
/// bytes are needed.
fn read_varint(b: &[u8]) -> Result<Option<(usize, usize)>, DecodeError> {
    let mut v = 0usize;
    for i in 0..4 {
        let Some(&byte) = b.get(i) else {
            return Ok(None);
        };
        v |= ((byte & 0x7f) as usize) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(Some((v, i + 1)));
        }
    }
    Err(DecodeError::Length)
}

fn str16(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u16).to_be_bytes());
    out.extend_from_slice(s);
}

/// What a CONNECT says.
#[derive(Debug, Clone, Copy)]
pub struct Connect<'a> {
    /// Protocol version.
    pub version: Version,
    /// Client id.
    pub client_id: &'a str,
    /// Keepalive in seconds (0: none).
    pub keepalive: u16,
    /// Clean session (3.1.1) / clean start (5).
    pub clean: bool,
    /// User name.
    pub username: Option<&'a str>,
    /// Password.
    pub password: Option<&'a str>,
    /// MQTT 5: session expiry interval in seconds (with `clean` false, a persistent
    /// session).
    pub session_expiry: Option<u32>,
    /// MQTT 5: topic aliases we accept from the server.
    pub topic_alias_max: u16,
}

/// Appends a CONNECT.
pub fn connect(out: &mut Vec<u8>, c: &Connect) {
    let mut vh = Vec::with_capacity(64);
    match c.version {
        Version::V3 => {
            str16(&mut vh, b"MQIsdp");
            vh.push(3);
        }
        Version::V4 => {
            str16(&mut vh, b"MQTT");
            vh.push(4);
        }
        Version::V5 => {
            str16(&mut vh, b"MQTT");
            vh.push(5);
        }
    }
    let mut flags = 0u8;
    if c.clean {
        flags |= 0x02;
    }
    if c.username.is_some() {
        flags |= 0x80;
    }
    if c.password.is_some() {
        flags |= 0x40;
    }
    vh.push(flags);
    vh.extend_from_slice(&c.keepalive.to_be_bytes());
    if c.version.v5() {
        let mut props = Vec::new();
        if let Some(e) = c.session_expiry {
            props.push(0x11);
            props.extend_from_slice(&e.to_be_bytes());
        }
        if c.topic_alias_max > 0 {
            props.push(0x22);
            props.extend_from_slice(&c.topic_alias_max.to_be_bytes());
        }
        varint(&mut vh, props.len());
        vh.extend_from_slice(&props);
    }
    str16(&mut vh, c.client_id.as_bytes());
    if let Some(u) = c.username {
        str16(&mut vh, u.as_bytes());
    }
    if let Some(p) = c.password {
        str16(&mut vh, p.as_bytes());
    }
    out.push(kind::CONNECT << 4);
    varint(out, vh.len());
    out.extend_from_slice(&vh);
}

/// Appends a SUBSCRIBE of `filters` at `qos` (MQTT 5: no-local off, retain as published).
pub(crate) fn subscribe(out: &mut Vec<u8>, version: Version, pid: u16, filters: &[&str], qos: u8) {
    let props = if version.v5() { 1 } else { 0 };
    let len = 2 + props + filters.iter().map(|f| 2 + f.len() + 1).sum::<usize>();
    out.push(kind::SUBSCRIBE << 4 | 0x02);
    varint(out, len);
    out.extend_from_slice(&pid.to_be_bytes());
    if version.v5() {
        out.push(0);
    }
    for f in filters {
        str16(out, f.as_bytes());
        out.push(qos & 3);
    }
}

/// What a PUBLISH carries, besides its payload.
#[derive(Debug, Clone, Copy)]
pub struct Publish<'a> {
    /// Protocol version.
    pub version: Version,
    /// QoS 0, 1 or 2.
    pub qos: u8,
    /// Retained.
    pub retain: bool,
    /// Redelivery.
    pub dup: bool,
    /// Topic; empty when an established topic alias stands for it.
    pub topic: &'a [u8],
    /// Packet id (QoS 1 and 2).
    pub pid: u16,
    /// MQTT 5 topic alias.
    pub topic_alias: Option<u16>,
    /// MQTT 5 message expiry interval, seconds.
    pub message_expiry: Option<u32>,
}

/// Appends a PUBLISH whose payload is `head` followed by zeros up to `size` bytes.
pub fn publish(out: &mut Vec<u8>, p: &Publish, head: &[u8], size: usize) {
    let size = size.max(head.len());
    let mut plen = 0;
    if p.version.v5() {
        if p.topic_alias.is_some() {
            plen += 3;
        }
        if p.message_expiry.is_some() {
            plen += 5;
        }
    }
    let props = if p.version.v5() {
        varint_len(plen) + plen
    } else {
        0
    };
    let len = 2 + p.topic.len() + if p.qos > 0 { 2 } else { 0 } + props + size;
    out.push(kind::PUBLISH << 4 | (p.dup as u8) << 3 | (p.qos & 3) << 1 | p.retain as u8);
    varint(out, len);
    str16(out, p.topic);
    if p.qos > 0 {
        out.extend_from_slice(&p.pid.to_be_bytes());
    }
    if p.version.v5() {
        varint(out, plen);
        if let Some(a) = p.topic_alias {
            out.push(0x23);
            out.extend_from_slice(&a.to_be_bytes());
        }
        if let Some(e) = p.message_expiry {
            out.push(0x02);
            out.extend_from_slice(&e.to_be_bytes());
        }
    }
    out.extend_from_slice(head);
    out.resize(out.len() + size - head.len(), 0);
}

/// Appends a PUBACK, PUBREC, PUBREL or PUBCOMP (success).
pub(crate) fn ack(out: &mut Vec<u8>, kind: u8, pid: u16) {
    let flags = if kind == kind::PUBREL { 0x02 } else { 0 };
    out.extend_from_slice(&[kind << 4 | flags, 2]);
    out.extend_from_slice(&pid.to_be_bytes());
}

/// Appends a PINGREQ.
pub(crate) fn pingreq(out: &mut Vec<u8>) {
    out.extend_from_slice(&[kind::PINGREQ << 4, 0]);
}

/// Appends a DISCONNECT (normal disconnection).
pub(crate) fn disconnect(out: &mut Vec<u8>) {
    out.extend_from_slice(&[kind::DISCONNECT << 4, 0]);
}

struct Rd<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Rd<'a> {
    fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        let v = *self.b.get(self.at).ok_or(DecodeError::Short(what))?;
        self.at += 1;
        Ok(v)
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        let s = self
            .b
            .get(self.at..self.at + 2)
            .ok_or(DecodeError::Short(what))?;
        self.at += 2;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let s = self
            .b
            .get(self.at..self.at + 4)
            .ok_or(DecodeError::Short(what))?;
        self.at += 4;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self.at.checked_add(n).ok_or(DecodeError::Short(what))?;
        let s = self.b.get(self.at..end).ok_or(DecodeError::Short(what))?;
        self.at = end;
        Ok(s)
    }
    fn bin16(&mut self, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let n = self.u16(what)? as usize;
        self.bytes(n, what)
    }
    fn str16(&mut self, what: &'static str) -> Result<&'a str, DecodeError> {
        std::str::from_utf8(self.bin16(what)?).map_err(|_| DecodeError::Invalid(what))
    }
    fn varint(&mut self, what: &'static str) -> Result<usize, DecodeError> {
        match read_varint(&self.b[self.at.min(self.b.len())..])? {
            Some((v, n)) => {
                self.at += n;
                Ok(v)
            }
            None => Err(DecodeError::Short(what)),
        }
    }
    fn rest(&self) -> &'a [u8] {
        &self.b[self.at.min(self.b.len())..]
    }
    fn done(&self) -> bool {
        self.at >= self.b.len()
    }
}

/// Properties we act on, from any packet.
#[derive(Default)]
struct Props<'a> {
    topic_alias: Option<u16>,
    topic_alias_max: Option<u16>,
    receive_max: Option<u16>,
    max_packet_size: Option<u32>,
    assigned_client_id: Option<&'a str>,
    reason: Option<&'a str>,
}

fn props<'a>(r: &mut Rd<'a>) -> Result<Props<'a>, DecodeError> {
    let len = r.varint("properties length")?;
    let mut p = Rd {
        b: r.bytes(len, "properties")?,
        at: 0,
    };
    let mut out = Props::default();
    while !p.done() {
        let id = p.varint("property id")?;
        match id {
            0x01 | 0x17 | 0x19 | 0x24 | 0x25 | 0x28 | 0x29 | 0x2A => {
                p.u8("property")?;
            }
            0x13 => {
                p.u16("property")?;
            }
            0x21 => out.receive_max = Some(p.u16("receive maximum")?),
            0x22 => out.topic_alias_max = Some(p.u16("topic alias maximum")?),
            0x23 => out.topic_alias = Some(p.u16("topic alias")?),
            0x02 | 0x11 | 0x18 => {
                p.u32("property")?;
            }
            0x27 => out.max_packet_size = Some(p.u32("maximum packet size")?),
            0x0B => {
                p.varint("subscription identifier")?;
            }
            0x03 | 0x08 | 0x15 | 0x1A | 0x1C => {
                p.str16("property")?;
            }
            0x12 => out.assigned_client_id = Some(p.str16("assigned client id")?),
            0x1F => out.reason = Some(p.str16("reason string")?),
            0x09 | 0x16 => {
                p.bin16("property")?;
            }
            0x26 => {
                p.str16("user property")?;
                p.str16("user property")?;
            }
            _ => return Err(DecodeError::Invalid("property identifier")),
        }
    }
    Ok(out)
}

/// A CONNACK's body.
fn decode_connack<'a>(r: &mut Rd<'a>, v5: bool) -> Result<Packet<'a>, DecodeError> {
    let ack = r.u8("connack flags")?;
    let code = r.u8("connack code")?;
    let mut props = ConnAckProps {
        receive_max: 65535,
        ..Default::default()
    };
    if v5 && !r.done() {
        let p = self::props(r)?;
        props.topic_alias_max = p.topic_alias_max.unwrap_or(0);
        props.receive_max = p.receive_max.unwrap_or(65535);
        props.max_packet_size = p.max_packet_size;
        props.assigned_client_id = p.assigned_client_id;
        props.reason = p.reason;
    }
    Ok(Packet::ConnAck {
        session_present: ack & 1 == 1,
        code,
        props,
    })
}

/// A PUBLISH's body (its fixed header's `flags`: dup, QoS, retain).
#[inline]
fn decode_publish<'a>(r: &mut Rd<'a>, flags: u8, v5: bool) -> Result<Packet<'a>, DecodeError> {
    let qos = (flags >> 1) & 3;
    if qos == 3 {
        return Err(DecodeError::Invalid("QoS 3"));
    }
    let topic = r.bin16("topic")?;
    let pid = if qos > 0 { r.u16("packet id")? } else { 0 };
    let mut topic_alias = None;
    if v5 {
        topic_alias = self::props(r)?.topic_alias;
    }
    Ok(Packet::Publish {
        dup: flags & 0x08 != 0,
        qos,
        retain: flags & 1 == 1,
        topic,
        pid,
        topic_alias,
        payload: r.rest(),
    })
}

/// Decodes the packet at the start of `buf`: `Ok(None)` when more bytes are needed,
/// otherwise the packet and its length in bytes. Packets larger than `max` are an error.
pub fn decode(
    buf: &[u8],
    version: Version,
    max: usize,
) -> Result<Option<(Packet<'_>, usize)>, DecodeError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    let Some((len, n)) = read_varint(&buf[1..])? else {
        return Ok(None);
    };
    let total = 1 + n + len;
    if total > max {
        return Err(DecodeError::TooLarge(total));
    }
    let Some(body) = buf.get(1 + n..total) else {
        return Ok(None);
    };
    let (ty, flags) = (first >> 4, first & 0x0f);
    let mut r = Rd { b: body, at: 0 };
    let v5 = version.v5();
    let p = match ty {
        kind::CONNACK => decode_connack(&mut r, v5)?,
        kind::PUBLISH => decode_publish(&mut r, flags, v5)?,
        kind::PUBACK | kind::PUBREC | kind::PUBREL | kind::PUBCOMP => {
            let pid = r.u16("packet id")?;
            let code = if r.done() { 0 } else { r.u8("reason code")? };
            Packet::Ack {
                kind: ty,
                pid,
                code,
            }
        }
        kind::SUBACK => {
            let pid = r.u16("packet id")?;
            if v5 {
                self::props(&mut r)?;
            }
            Packet::SubAck {
                pid,
                codes: r.rest(),
            }
        }
        kind::UNSUBACK => Packet::UnsubAck {
            pid: r.u16("packet id")?,
        },
        kind::PINGRESP => Packet::PingResp,
        kind::PINGREQ => Packet::PingReq,
        kind::DISCONNECT => {
            let code = if r.done() { 0 } else { r.u8("reason code")? };
            let mut reason = None;
            if v5 && !r.done() {
                reason = self::props(&mut r)?.reason;
            }
            Packet::Disconnect { code, reason }
        }
        kind::AUTH if v5 => Packet::Auth {
            code: if r.done() { 0 } else { r.u8("reason code")? },
        },
        t => return Err(DecodeError::Unexpected(t, flags)),
    };
    Ok(Some((p, total)))
}

/// The name of a CONNACK return code (3.1/3.1.1) or any MQTT 5 reason code.
pub(crate) fn code_name(version: Version, code: u8) -> &'static str {
    if !version.v5() {
        return match code {
            0 => "Connection Accepted",
            1 => "Unacceptable Protocol Version",
            2 => "Identifier Rejected",
            3 => "Server Unavailable",
            4 => "Bad User Name or Password",
            5 => "Not Authorized",
            _ => "Unknown Return Code",
        };
    }
    reason_name(code)
}

/// The name of an MQTT 5 reason code (also SUBACK's 0x80 "Failure" in 3.1.1).
pub(crate) fn reason_name(code: u8) -> &'static str {
    match code {
        0x00 => "Success",
        0x01 => "Granted QoS 1",
        0x02 => "Granted QoS 2",
        0x04 => "Disconnect with Will Message",
        0x10 => "No matching subscribers",
        0x11 => "No subscription existed",
        0x18 => "Continue authentication",
        0x19 => "Re-authenticate",
        0x80 => "Unspecified error",
        0x81 => "Malformed Packet",
        0x82 => "Protocol Error",
        0x83 => "Implementation specific error",
        0x84 => "Unsupported Protocol Version",
        0x85 => "Client Identifier not valid",
        0x86 => "Bad User Name or Password",
        0x87 => "Not authorized",
        0x88 => "Server unavailable",
        0x89 => "Server busy",
        0x8A => "Banned",
        0x8B => "Server shutting down",
        0x8C => "Bad authentication method",
        0x8D => "Keep Alive timeout",
        0x8E => "Session taken over",
        0x8F => "Topic Filter invalid",
        0x90 => "Topic Name invalid",
        0x91 => "Packet Identifier in use",
        0x92 => "Packet Identifier not found",
        0x93 => "Receive Maximum exceeded",
        0x94 => "Topic Alias invalid",
        0x95 => "Packet too large",
        0x96 => "Message rate too high",
        0x97 => "Quota exceeded",
        0x98 => "Administrative action",
        0x99 => "Payload format invalid",
        0x9A => "Retain not supported",
        0x9B => "QoS not supported",
        0x9C => "Use another server",
        0x9D => "Server moved",
        0x9E => "Shared Subscriptions not supported",
        0x9F => "Connection rate exceeded",
        0xA0 => "Maximum connect time",
        0xA1 => "Subscription Identifiers not supported",
        0xA2 => "Wildcard Subscriptions not supported",
        _ => "Unknown reason code",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_round_trips_in_every_version() {
        for v in [Version::V3, Version::V4, Version::V5] {
            for qos in 0..3 {
                let mut out = Vec::new();
                let p = Publish {
                    version: v,
                    qos,
                    retain: qos == 1,
                    dup: false,
                    topic: b"a/b",
                    pid: 7,
                    topic_alias: v.v5().then_some(3),
                    message_expiry: v.v5().then_some(60),
                };
                publish(&mut out, &p, b"head", 300);
                let (pk, n) = decode(&out, v, 1 << 20).unwrap().unwrap();
                assert_eq!(n, out.len());
                match pk {
                    Packet::Publish {
                        qos: q,
                        retain,
                        topic,
                        pid,
                        topic_alias,
                        payload,
                        ..
                    } => {
                        assert_eq!((q, retain, topic), (qos, qos == 1, &b"a/b"[..]));
                        assert_eq!(pid, if qos > 0 { 7 } else { 0 });
                        assert_eq!(topic_alias, v.v5().then_some(3));
                        assert_eq!(payload.len(), 300);
                        assert!(payload.starts_with(b"head"));
                    }
                    other => panic!("{other:?}"),
                }
                // Every strict prefix asks for more bytes.
                for k in 0..out.len() {
                    assert_eq!(decode(&out[..k], v, 1 << 20).unwrap(), None, "{k}");
                }
            }
        }
    }

    #[test]
    fn connack_suback_acks_and_limits() {
        let connack5 = [0x20, 9, 0, 0x87, 6, 0x22, 0, 10, 0x21, 0, 20];
        match decode(&connack5, Version::V5, 100).unwrap().unwrap().0 {
            Packet::ConnAck { code, props, .. } => {
                assert_eq!(code, 0x87);
                assert_eq!((props.topic_alias_max, props.receive_max), (10, 20));
                assert_eq!(code_name(Version::V5, code), "Not authorized");
            }
            p => panic!("{p:?}"),
        }
        assert_eq!(code_name(Version::V4, 4), "Bad User Name or Password");
        let suback = [0x90, 4, 0, 1, 1, 0x80];
        assert_eq!(
            decode(&suback, Version::V4, 100).unwrap().unwrap().0,
            Packet::SubAck {
                pid: 1,
                codes: &[1, 0x80]
            }
        );
        let mut out = Vec::new();
        ack(&mut out, kind::PUBREL, 9);
        assert_eq!(out, [0x62, 2, 0, 9]);
        assert_eq!(
            decode(&[0x40, 2, 0, 9], Version::V4, 100)
                .unwrap()
                .unwrap()
                .0,
            Packet::Ack {
                kind: kind::PUBACK,
                pid: 9,
                code: 0
            }
        );
        assert!(matches!(
            decode(&[0x30, 0xff, 0xff, 0xff, 0x7f], Version::V4, 1000),
            Err(DecodeError::TooLarge(_))
        ));
        assert!(matches!(
            decode(&[0x30, 0xff, 0xff, 0xff, 0xff, 1], Version::V4, 1000),
            Err(DecodeError::Length)
        ));
        assert!(
            decode(&[0x10, 0], Version::V4, 100).is_err(),
            "CONNECT from a server"
        );
    }

    #[test]
    fn connect_levels() {
        for (v, name, level) in [
            (Version::V3, &b"MQIsdp"[..], 3u8),
            (Version::V4, b"MQTT", 4),
            (Version::V5, b"MQTT", 5),
        ] {
            let mut out = Vec::new();
            connect(
                &mut out,
                &Connect {
                    version: v,
                    client_id: "c1",
                    keepalive: 30,
                    clean: true,
                    username: Some("u"),
                    password: Some("p"),
                    session_expiry: Some(10),
                    topic_alias_max: 0,
                },
            );
            assert_eq!(out[0], 0x10);
            assert_eq!(&out[4..4 + name.len()], name);
            assert_eq!(out[4 + name.len()], level);
            assert_eq!(out[5 + name.len()], 0xC2);
            assert_eq!(out[1] as usize, out.len() - 2);
        }
    }
}
