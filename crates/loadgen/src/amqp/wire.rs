//! AMQP 0.9.1 frame encoding and decoding.
//!
//! Only what a load generator needs is here, written by hand so the publish path is three
//! frames appended to a reused buffer (no allocation per message) and the consume path
//! parses frames in place in the read buffer.

/// Frame types.
pub const FRAME_METHOD: u8 = 1;
pub const FRAME_HEADER: u8 = 2;
pub const FRAME_BODY: u8 = 3;
pub const FRAME_HEARTBEAT: u8 = 8;
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
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
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
    pub fn new(b: &'a [u8]) -> Self {
        Dec { b, pos: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], Short> {
        let s = self.b.get(self.pos..self.pos + n).ok_or(Short)?;
        self.pos += n;
        Ok(s)
    }
    pub fn u8(&mut self) -> Result<u8, Short> {
        Ok(self.take(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, Short> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    pub fn u32(&mut self) -> Result<u32, Short> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
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
    pub kind: u8,
    pub channel: u16,
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
