//! AMQP 0.9.1 frame encoding and decoding.
//!
//! Only what a load generator needs is here, written by hand so the publish path is three
//! frames appended to a reused buffer (no allocation per message) and the consume path
//! parses frames in place in the read buffer.

/// A method frame's type.
pub const FRAME_METHOD: u8 = 1;
/// A content header frame's type.
pub const FRAME_HEADER: u8 = 2;
/// A body frame's type.
pub const FRAME_BODY: u8 = 3;
/// A heartbeat frame's type.
pub const FRAME_HEARTBEAT: u8 = 8;
/// The byte that ends every frame.
pub const FRAME_END: u8 = 0xCE;

/// (class, method) ids used here.
pub mod m {
    pub const CONN_START: (u16, u16) = (10, 10);
    pub const CONN_START_OK: (u16, u16) = (10, 11);
    pub const CONN_TUNE: (u16, u16) = (10, 30);
    pub const CONN_TUNE_OK: (u16, u16) = (10, 31);
    pub const CONN_OPEN: (u16, u16) = (10, 40);
    pub const CONN_OPEN_OK: (u16, u16) = (10, 41);
    pub const CONN_CLOSE: (u16, u16) = (10, 50);
    pub const CONN_CLOSE_OK: (u16, u16) = (10, 51);
    pub const CONN_BLOCKED: (u16, u16) = (10, 60);
    pub const CONN_UNBLOCKED: (u16, u16) = (10, 61);
    pub const CHAN_OPEN: (u16, u16) = (20, 10);
    pub const CHAN_OPEN_OK: (u16, u16) = (20, 11);
    pub const CHAN_CLOSE: (u16, u16) = (20, 40);
    pub const CHAN_CLOSE_OK: (u16, u16) = (20, 41);
    pub const EXCHANGE_DECLARE: (u16, u16) = (40, 10);
    pub const EXCHANGE_DECLARE_OK: (u16, u16) = (40, 11);
    pub const QUEUE_DECLARE: (u16, u16) = (50, 10);
    pub const QUEUE_DECLARE_OK: (u16, u16) = (50, 11);
    pub const QUEUE_BIND: (u16, u16) = (50, 20);
    pub const QUEUE_BIND_OK: (u16, u16) = (50, 21);
    pub const BASIC_QOS: (u16, u16) = (60, 10);
    pub const BASIC_QOS_OK: (u16, u16) = (60, 11);
    pub const BASIC_CONSUME: (u16, u16) = (60, 20);
    pub const BASIC_CONSUME_OK: (u16, u16) = (60, 21);
    pub const BASIC_CANCEL: (u16, u16) = (60, 30);
    pub const BASIC_PUBLISH: (u16, u16) = (60, 40);
    pub const BASIC_RETURN: (u16, u16) = (60, 50);
    pub const BASIC_DELIVER: (u16, u16) = (60, 60);
    pub const BASIC_ACK: (u16, u16) = (60, 80);
    pub const BASIC_NACK: (u16, u16) = (60, 120);
    pub const CONFIRM_SELECT: (u16, u16) = (85, 10);
    pub const CONFIRM_SELECT_OK: (u16, u16) = (85, 11);
}

/// A value in an AMQP field table (the subset PerfTest's `key=value` arguments produce).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum FieldValue {
    /// `t`
    Bool(bool),
    /// `l` (signed 64-bit)
    Long(i64),
    /// `S` (long string)
    Str(String),
}

impl FieldValue {
    /// Types a `key=value` argument like PerfTest does: integers become longs,
    /// `true`/`false` booleans, anything else a string.
    pub fn infer(s: &str) -> Self {
        if let Ok(n) = s.parse::<i64>() {
            FieldValue::Long(n)
        } else if s == "true" || s == "false" {
            FieldValue::Bool(s == "true")
        } else {
            FieldValue::Str(s.to_string())
        }
    }
}

/// Appends AMQP types to a buffer.
#[derive(Debug, Default)]
pub struct Enc {
    /// The bytes.
    pub buf: Vec<u8>,
}

impl Enc {
    /// An octet.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    /// A short (big-endian).
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// A long (big-endian).
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// A long long (big-endian).
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// Short string; longer than 255 bytes is truncated (names are checked before).
    pub(crate) fn shortstr(&mut self, s: &str) -> &mut Self {
        let b = &s.as_bytes()[..s.len().min(255)];
        self.buf.push(b.len() as u8);
        self.buf.extend_from_slice(b);
        self
    }
    pub(crate) fn longstr(&mut self, b: &[u8]) -> &mut Self {
        self.u32(b.len() as u32);
        self.buf.extend_from_slice(b);
        self
    }
    /// A field table: its byte length, then each name and its typed value.
    pub fn table(&mut self, t: &[(String, FieldValue)]) -> &mut Self {
        let at = self.buf.len();
        self.u32(0);
        for (k, v) in t {
            self.shortstr(k);
            match v {
                FieldValue::Bool(b) => {
                    self.u8(b't').u8(*b as u8);
                }
                FieldValue::Long(n) => {
                    self.u8(b'l').u64(*n as u64);
                }
                FieldValue::Str(s) => {
                    self.u8(b'S').longstr(s.as_bytes());
                }
            }
        }
        let len = (self.buf.len() - at - 4) as u32;
        self.buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
        self
    }
    /// A nested table value written raw (for client capabilities).
    pub(crate) fn raw_table(&mut self, entries: &[(&str, bool)]) -> &mut Self {
        let at = self.buf.len();
        self.u32(0);
        for (k, v) in entries {
            self.shortstr(k).u8(b't').u8(*v as u8);
        }
        let len = (self.buf.len() - at - 4) as u32;
        self.buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
        self
    }
}

/// Appends a whole method frame: `f` writes the arguments after class/method ids.
pub fn method_frame(out: &mut Vec<u8>, channel: u16, id: (u16, u16), f: impl FnOnce(&mut Enc)) {
    let mut e = Enc {
        buf: std::mem::take(out),
    };
    let start = e.buf.len();
    e.u8(FRAME_METHOD).u16(channel).u32(0).u16(id.0).u16(id.1);
    f(&mut e);
    let size = (e.buf.len() - start - 7) as u32;
    e.buf[start + 3..start + 7].copy_from_slice(&size.to_be_bytes());
    e.u8(FRAME_END);
    *out = e.buf;
}

/// Reads AMQP types from a slice; every read is bounds-checked.
#[derive(Debug)]
pub struct Dec<'a> {
    b: &'a [u8],
    pos: usize,
}

/// The frame was shorter than its method requires.
#[derive(Debug, Clone, Copy)]
pub struct Short;

impl<'a> Dec<'a> {
    /// Reads `b` from its start.
    pub fn new(b: &'a [u8]) -> Self {
        Dec { b, pos: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], Short> {
        let s = self.b.get(self.pos..self.pos + n).ok_or(Short)?;
        self.pos += n;
        Ok(s)
    }
    /// An octet.
    pub fn u8(&mut self) -> Result<u8, Short> {
        Ok(self.take(1)?[0])
    }
    /// A short (big-endian).
    pub fn u16(&mut self) -> Result<u16, Short> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    /// A long (big-endian).
    pub fn u32(&mut self) -> Result<u32, Short> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    /// A long long (big-endian).
    pub fn u64(&mut self) -> Result<u64, Short> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_be_bytes(a))
    }
    pub(crate) fn shortstr(&mut self) -> Result<&'a str, Short> {
        let n = self.u8()? as usize;
        let s = self.take(n)?;
        Ok(std::str::from_utf8(s).unwrap_or("<non-UTF-8>"))
    }
    pub(crate) fn longstr(&mut self) -> Result<&'a [u8], Short> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub(crate) fn skip_table(&mut self) -> Result<(), Short> {
        self.longstr().map(|_| ())
    }
}

/// One frame, borrowed from the read buffer.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// Its type ([`FRAME_METHOD`]...).
    pub kind: u8,
    /// Its channel.
    pub channel: u16,
    /// Its payload, between the size and the end byte.
    pub payload: &'a [u8],
}

/// Splits the first complete frame off `buf`: `Ok(Some((frame, len)))`, `Ok(None)` when more
/// bytes are needed, `Err` when the bytes are not AMQP framing.
pub fn parse_frame(buf: &[u8], frame_max: usize) -> Result<Option<(Frame<'_>, usize)>, String> {
    if buf.len() < 7 {
        return Ok(None);
    }
    let size = u32::from_be_bytes([buf[3], buf[4], buf[5], buf[6]]) as usize;
    if size > frame_max.max(4096) + 16 {
        return Err(format!(
            "frame of {size} bytes exceeds the negotiated frame-max {frame_max}"
        ));
    }
    if buf.len() < size + 8 {
        return Ok(None);
    }
    if buf[7 + size] != FRAME_END {
        return Err(format!(
            "frame end marker is {:#04x}, expected 0xce",
            buf[7 + size]
        ));
    }
    Ok(Some((
        Frame {
            kind: buf[0],
            channel: u16::from_be_bytes([buf[1], buf[2]]),
            payload: &buf[7..7 + size],
        },
        size + 8,
    )))
}

/// The class/method id at the start of a method frame's payload.
pub fn method_id(payload: &[u8]) -> Option<(u16, u16)> {
    if payload.len() < 4 {
        return None;
    }
    Some((
        u16::from_be_bytes([payload[0], payload[1]]),
        u16::from_be_bytes([payload[2], payload[3]]),
    ))
}

/// The frames of the messages one producer publishes: `basic.publish` (its exchange and
/// routing key encoded once), the content header and the body frames, appended to a
/// reused buffer with no allocation per message.
#[derive(Debug, Clone)]
pub struct Publish {
    method: Vec<u8>,
    frame_max: usize,
    persistent: bool,
}

impl Publish {
    /// Publishes to `exchange` with `routing_key` on channel 1, in body frames of at most
    /// `frame_max` bytes (the negotiated frame-max, at least 4096); `persistent` sets
    /// delivery-mode 2.
    pub fn new(
        exchange: &str,
        routing_key: &str,
        mandatory: bool,
        frame_max: usize,
        persistent: bool,
    ) -> Self {
        let mut method = Vec::new();
        method_frame(&mut method, 1, m::BASIC_PUBLISH, |e| {
            e.u16(0)
                .shortstr(exchange)
                .shortstr(routing_key)
                .u8(mandatory as u8);
        });
        Publish {
            method,
            frame_max: frame_max.max(4096),
            persistent,
        }
    }

    /// Appends publish + content header + body frames; `prefix` is written at the start of
    /// a zero-filled body of `size` bytes (or `json` is the body).
    pub fn message(&self, buf: &mut Vec<u8>, size: usize, prefix: &[u8], json: Option<&[u8]>) {
        buf.extend_from_slice(&self.method);
        let body_len = json.map_or(size.max(prefix.len()), |j| j.len());
        let props = if self.persistent { 1 } else { 0 };
        buf.extend_from_slice(&[FRAME_HEADER, 0, 1]);
        buf.extend_from_slice(&(14u32 + props).to_be_bytes());
        buf.extend_from_slice(&[0, 60, 0, 0]);
        buf.extend_from_slice(&(body_len as u64).to_be_bytes());
        if self.persistent {
            buf.extend_from_slice(&[0x10, 0x00, 2]);
        } else {
            buf.extend_from_slice(&[0, 0]);
        }
        buf.push(FRAME_END);
        let chunk = self.frame_max - 8;
        let mut written = 0;
        while written < body_len {
            let n = chunk.min(body_len - written);
            buf.extend_from_slice(&[FRAME_BODY, 0, 1]);
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
            buf.push(FRAME_END);
            written += n;
        }
    }

    /// Bytes [`Publish::message`] appends for a body of `body_len`.
    pub fn encoded_len(&self, body_len: usize) -> usize {
        let frames = body_len.div_ceil(self.frame_max - 8);
        self.method.len() + 8 + 14 + self.persistent as usize + frames * 8 + body_len
    }
}

/// Appends `basic.ack` of delivery `tag` on channel 1 (`multiple`: every delivery up to
/// it).
pub fn ack(out: &mut Vec<u8>, tag: u64, multiple: bool) {
    method_frame(out, 1, m::BASIC_ACK, |e| {
        e.u64(tag).u8(multiple as u8);
    });
}

/// A method frame's class/method id and its arguments; a payload too short to hold an id
/// has none (and no arguments).
pub fn method(payload: &[u8]) -> (Option<(u16, u16)>, Dec<'_>) {
    (
        method_id(payload),
        Dec::new(payload.get(4..).unwrap_or(&[])),
    )
}

/// The delivery tag and `multiple` bit of a `basic.ack` or `basic.nack` (a broker's
/// publisher confirm), from the method's arguments.
pub fn read_ack(args: &mut Dec<'_>) -> Result<(u64, bool), Short> {
    Ok((args.u64()?, args.u8()? & 1 == 1))
}

/// A message delivered whole: its delivery tag, its body's length and its first bytes
/// (where the load stamps its send time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// The broker's delivery tag.
    pub tag: u64,
    /// The body's length, as its content header gave it.
    pub size: u64,
    /// The body's first bytes.
    pub prefix: [u8; 20],
    /// How many of `prefix` the body filled.
    pub got: usize,
}

/// Where the frame after a `basic.deliver` stands.
#[derive(Debug, Clone, Copy, Default)]
enum Expect {
    #[default]
    Method,
    Header {
        tag: u64,
    },
    Body {
        remaining: u64,
        d: Delivery,
    },
}

/// What a frame fed to [`Deliveries`] made.
#[derive(Debug)]
pub enum Assembled<'a> {
    /// The last frame of a delivery.
    Delivery(Delivery),
    /// A method other than `basic.deliver`, for the caller: its id and its arguments.
    Method((u16, u16), Dec<'a>),
    /// Nothing yet (a delivery's first frames, a frame out of place).
    Nothing,
}

/// Assembles deliveries from a consumer's frames, as they come: `basic.deliver`, its
/// content header, its body frames.
#[derive(Debug, Default)]
pub struct Deliveries {
    expect: Expect,
}

impl Deliveries {
    /// Feeds the next frame; `Err` names the frame that was too short for its kind.
    pub fn feed<'a>(&mut self, f: Frame<'a>) -> Result<Assembled<'a>, &'static str> {
        Ok(match (f.kind, &mut self.expect) {
            (FRAME_METHOD, _) => match method(f.payload) {
                (Some(m::BASIC_DELIVER), mut d) => {
                    d.shortstr().map_err(|_| "basic.deliver")?;
                    let tag = d.u64().map_err(|_| "basic.deliver")?;
                    self.expect = Expect::Header { tag };
                    Assembled::Nothing
                }
                (Some(id), d) => Assembled::Method(id, d),
                (None, _) => Assembled::Nothing,
            },
            (FRAME_HEADER, Expect::Header { tag }) => {
                let mut d = Dec::new(f.payload);
                let size = (|| {
                    d.u16()?;
                    d.u16()?;
                    d.u64()
                })()
                .map_err(|_| "content header")?;
                let d = Delivery {
                    tag: *tag,
                    size,
                    prefix: [0; 20],
                    got: 0,
                };
                if size == 0 {
                    self.expect = Expect::Method;
                    Assembled::Delivery(d)
                } else {
                    self.expect = Expect::Body { remaining: size, d };
                    Assembled::Nothing
                }
            }
            (FRAME_BODY, Expect::Body { remaining, d }) => {
                let p = f.payload;
                if d.got < d.prefix.len() {
                    let k = (d.prefix.len() - d.got).min(p.len());
                    d.prefix[d.got..d.got + k].copy_from_slice(&p[..k]);
                    d.got += k;
                }
                *remaining = remaining.saturating_sub(p.len() as u64);
                if *remaining == 0 {
                    let d = *d;
                    self.expect = Expect::Method;
                    Assembled::Delivery(d)
                } else {
                    Assembled::Nothing
                }
            }
            _ => Assembled::Nothing,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_frame_round_trips() {
        let mut out = Vec::new();
        method_frame(&mut out, 3, m::BASIC_ACK, |e| {
            e.u64(42).u8(1);
        });
        let (f, n) = parse_frame(&out, 131072).unwrap().unwrap();
        assert_eq!(n, out.len());
        assert_eq!((f.kind, f.channel), (FRAME_METHOD, 3));
        assert_eq!(method_id(f.payload), Some(m::BASIC_ACK));
        let mut d = Dec::new(&f.payload[4..]);
        assert_eq!(d.u64().unwrap(), 42);
        assert_eq!(d.u8().unwrap(), 1);
        assert!(d.u8().is_err());
    }

    #[test]
    fn partial_and_corrupt_frames() {
        let mut out = Vec::new();
        method_frame(&mut out, 1, m::CHAN_OPEN, |e| {
            e.shortstr("");
        });
        for cut in 0..out.len() {
            assert!(parse_frame(&out[..cut], 131072).unwrap().is_none());
        }
        let mut bad = out.clone();
        *bad.last_mut().unwrap() = 0;
        assert!(parse_frame(&bad, 131072).is_err());
    }

    /// A delivery as a broker sends it: `basic.deliver`, the content header, the body in
    /// frames of at most `frame_max`.
    fn delivery(tag: u64, body: &[u8], frame_max: usize) -> Vec<u8> {
        let mut out = Vec::new();
        method_frame(&mut out, 1, m::BASIC_DELIVER, |e| {
            e.shortstr("kiln-0")
                .u64(tag)
                .u8(0)
                .shortstr("")
                .shortstr("q");
        });
        let mut head = vec![FRAME_HEADER, 0, 1, 0, 0, 0, 14, 0, 60, 0, 0];
        head.extend_from_slice(&(body.len() as u64).to_be_bytes());
        head.extend_from_slice(&[0, 0, FRAME_END]);
        out.extend_from_slice(&head);
        for chunk in body.chunks(frame_max - 8) {
            out.extend_from_slice(&[FRAME_BODY, 0, 1]);
            out.extend_from_slice(&(chunk.len() as u32).to_be_bytes());
            out.extend_from_slice(chunk);
            out.push(FRAME_END);
        }
        out
    }

    #[test]
    fn a_published_message_is_its_three_kinds_of_frame() {
        let p = Publish::new("ex", "rk", false, 4096, true);
        let prefix: Vec<u8> = (1..=20).collect();
        let mut buf = Vec::new();
        p.message(&mut buf, 10_000, &prefix, None);
        assert_eq!(buf.len(), p.encoded_len(10_000));
        let mut at = 0;
        let mut kinds = Vec::new();
        let mut body = Vec::new();
        while let Some((f, n)) = parse_frame(&buf[at..], 4096).unwrap() {
            kinds.push(f.kind);
            match f.kind {
                FRAME_METHOD => {
                    let (id, mut d) = method(f.payload);
                    assert_eq!(id, Some(m::BASIC_PUBLISH));
                    d.u16().unwrap();
                    assert_eq!((d.shortstr().unwrap(), d.shortstr().unwrap()), ("ex", "rk"));
                }
                FRAME_HEADER => {
                    let mut d = Dec::new(f.payload);
                    assert_eq!((d.u16().unwrap(), d.u16().unwrap()), (60, 0));
                    assert_eq!(d.u64().unwrap(), 10_000);
                    // Delivery mode 2: persistent.
                    assert_eq!((d.u16().unwrap(), d.u8().unwrap()), (0x1000, 2));
                }
                _ => body.extend_from_slice(f.payload),
            }
            at += n;
        }
        assert_eq!(at, buf.len());
        assert_eq!(kinds, [1, 2, 3, 3, 3]);
        assert_eq!(body.len(), 10_000);
        assert_eq!(&body[..20], &prefix[..]);
        assert!(body[20..].iter().all(|&b| b == 0));
    }

    #[test]
    fn deliveries_are_assembled_from_their_frames() {
        let body: Vec<u8> = (0..9000u32).map(|i| i as u8).collect();
        let mut stream = delivery(7, &body, 4096);
        stream.extend(delivery(8, b"", 4096));
        ack(&mut stream, 8, true);
        let mut at = 0;
        let mut got = Vec::new();
        let mut ds = Deliveries::default();
        while let Some((f, n)) = parse_frame(&stream[at..], 4096).unwrap() {
            match ds.feed(f).unwrap() {
                Assembled::Delivery(d) => got.push(d),
                Assembled::Method(id, mut d) => {
                    assert_eq!(id, m::BASIC_ACK);
                    assert_eq!(read_ack(&mut d).unwrap(), (8, true));
                }
                Assembled::Nothing => {}
            }
            at += n;
        }
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].tag, got[0].size, got[0].got), (7, 9000, 20));
        assert_eq!(&got[0].prefix[..], &body[..20]);
        assert_eq!((got[1].tag, got[1].size, got[1].got), (8, 0, 0));
        // Frames too short for their kind: errors naming them, never a panic.
        let mut short = Deliveries::default();
        let deliver = [0, 60, 0, 60, 3, b'a'];
        let f = |kind, payload| Frame {
            kind,
            channel: 1,
            payload,
        };
        assert_eq!(
            short.feed(f(FRAME_METHOD, &deliver)).unwrap_err(),
            "basic.deliver"
        );
        assert!(matches!(
            short.feed(f(FRAME_METHOD, &[0, 60])).unwrap(),
            Assembled::Nothing
        ));
        let mut d = Deliveries::default();
        let deliver = [0, 60, 0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 9];
        assert!(matches!(
            d.feed(f(FRAME_METHOD, &deliver)).unwrap(),
            Assembled::Nothing
        ));
        assert_eq!(
            d.feed(f(FRAME_HEADER, &[0, 60])).unwrap_err(),
            "content header"
        );
    }

    #[test]
    fn perftest_argument_typing() {
        assert_eq!(FieldValue::infer("10"), FieldValue::Long(10));
        assert_eq!(FieldValue::infer("true"), FieldValue::Bool(true));
        assert_eq!(
            FieldValue::infer("stream"),
            FieldValue::Str("stream".into())
        );
    }
}
