//! The message layout, in one place (PerfTest's `MessageBodySource`).
//!
//! Every protocol's messages start with the same stamp, big-endian, then zeros up to the
//! message size:
//!
//! | bytes  | field | |
//! |--------|-------|---|
//! | 0..4   | sequence number | per publisher, wrapping (PerfTest's) |
//! | 4..12  | actual send time | ns since the Unix epoch (PerfTest: a timestamp) |
//! | 12..20 | intended send time | ns since the Unix epoch; 0: not rate-limited |
//! | 20..24 | publisher id + 1 | 0: not carried |
//!
//! The first 12 bytes are PerfTest's layout, so AMQP messages stay 12 bytes by default.
//! Rate-limited runs need the intended time (20 bytes); delivery accounting (lost,
//! duplicated, out of order per publisher) needs the publisher id (24 bytes). The times are
//! on the wall clock because the consumer may be another process on the same host.

/// Bytes of the sequence number and send time (PerfTest's minimum).
pub const MIN: usize = 12;
/// Bytes up to and including the intended send time.
pub(crate) const WITH_INTENDED: usize = 20;
/// Bytes of the whole stamp.
pub(crate) const FULL: usize = 24;

/// What a message carries about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    /// Sequence number of the message for its publisher.
    pub seq: u32,
    /// When it was sent, ns since the Unix epoch.
    pub sent_ns: u64,
    /// When it was meant to be sent (rate-limited runs), ns since the Unix epoch.
    pub intended_ns: Option<u64>,
    /// The publisher's index in the run.
    pub publisher: Option<u32>,
}

impl Stamp {
    /// Bytes this stamp needs: 12, 20 or 24.
    pub fn len(&self) -> usize {
        if self.publisher.is_some() {
            FULL
        } else if self.intended_ns.is_some() {
            WITH_INTENDED
        } else {
            MIN
        }
    }

    /// Never empty: at least the sequence number and send time.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the stamp at the start of `out` (which must hold [`Stamp::len`] bytes) and
    /// returns the number of bytes written.
    #[inline]
    pub fn write(&self, out: &mut [u8]) -> usize {
        let n = self.len();
        out[0..4].copy_from_slice(&self.seq.to_be_bytes());
        out[4..12].copy_from_slice(&self.sent_ns.to_be_bytes());
        if n >= WITH_INTENDED {
            out[12..20].copy_from_slice(&self.intended_ns.unwrap_or(0).to_be_bytes());
        }
        if n >= FULL {
            let p = self.publisher.map_or(0, |p| p.wrapping_add(1));
            out[20..24].copy_from_slice(&p.to_be_bytes());
        }
        n
    }

    /// Reads the stamp at the start of a message body (`None` if shorter than 12 bytes or the
    /// send time is 0). Fields beyond the body's length, or zero, are absent.
    #[inline]
    pub fn read(b: &[u8]) -> Option<Stamp> {
        let u64_at = |i: usize| {
            b.get(i..i + 8)
                .and_then(|s| s.try_into().ok())
                .map(u64::from_be_bytes)
        };
        let seq = u32::from_be_bytes(b.get(0..4)?.try_into().ok()?);
        let sent_ns = u64_at(4).filter(|&t| t != 0)?;
        let intended_ns = u64_at(12).filter(|&t| t != 0);
        let publisher = b
            .get(20..24)
            .and_then(|s| s.try_into().ok())
            .map(u32::from_be_bytes)
            .filter(|&p| p != 0)
            .map(|p| p - 1);
        Some(Stamp {
            seq,
            sent_ns,
            intended_ns,
            publisher,
        })
    }
}

/// A JSON document of exactly `size` bytes with random keys and values (PerfTest's
/// `--json-body`); it carries no stamp.
pub(crate) fn random_json(size: usize) -> Vec<u8> {
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
    fn stamps_round_trip_at_each_length() {
        for st in [
            Stamp {
                seq: 7,
                sent_ns: 1,
                intended_ns: None,
                publisher: None,
            },
            Stamp {
                seq: u32::MAX,
                sent_ns: 2,
                intended_ns: Some(3),
                publisher: None,
            },
            Stamp {
                seq: 0,
                sent_ns: 4,
                intended_ns: None,
                publisher: Some(0),
            },
        ] {
            let mut b = [0u8; 64];
            let n = st.write(&mut b);
            assert_eq!(n, st.len());
            assert_eq!(Stamp::read(&b[..n]), Some(st));
            // Zero padding after the stamp reads the same.
            assert_eq!(Stamp::read(&b), Some(st));
        }
        assert_eq!(Stamp::read(&[0; 11]), None);
        assert_eq!(Stamp::read(&[0; 24]), None, "no send time: not ours");
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
