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
//! | 20..24 | publisher index + 1 | 0: no origin carried (and nothing after it) |
//! | 24..26 | layout version | [`VERSION`] (2); 0: layout 1, which ended at byte 24 |
//! | 26..28 | agent index | the load's index among the agents of a run; 0 alone |
//! | 28..36 | load nonce | random per load, or the run's, shared by its agents; never 0 |
//!
//! The first 12 bytes are PerfTest's layout, so AMQP messages stay 12 bytes by default.
//! Rate-limited runs need the intended time (20 bytes); delivery accounting (lost,
//! duplicated, out of order per publisher) needs the message's origin (36 bytes): the
//! publisher's index alone is not enough, since every load numbers its publishers from 0
//! and two loads on the same topics would take each other's messages for duplicates. The
//! origin is the load (nonce and agent index) and the publisher within it. The times are on
//! the wall clock because the consumer may be another process on the same host.
//!
//! Layout 1 (kiln before the load nonce) wrote the publisher index and zeros after it: its
//! messages read as [`Origin::Layout1`], from a load that cannot be told apart from
//! another. A layout version this kiln does not know reads as [`Origin::Unknown`]; neither
//! is ever taken for one of a load's own messages.

/// Bytes of the sequence number and send time (PerfTest's minimum).
pub const MIN: usize = 12;
/// Bytes up to and including the intended send time.
pub const WITH_INTENDED: usize = 20;
/// Bytes of the whole stamp (with the origin).
pub const FULL: usize = 36;
/// The layout this kiln writes (bytes 24..26).
pub const VERSION: u16 = 2;

/// A load's identity in its messages: unique across processes and hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LoadId {
    /// Random per load, or the run's (shared by its agents); never 0.
    pub nonce: u64,
    /// The load's index among the run's agents (0 for a load of its own).
    pub agent: u16,
}

impl LoadId {
    /// A new load's identity: a random nonce, agent 0.
    pub fn random() -> LoadId {
        LoadId {
            nonce: fastrand::u64(1..),
            agent: 0,
        }
    }

    /// Whether `other` is a load of the same run (the same nonce, any agent).
    pub fn same_run(&self, other: &LoadId) -> bool {
        self.nonce == other.nonce
    }
}

impl std::fmt::Display for LoadId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}/{}", self.nonce, self.agent)
    }
}

/// Who published a message, as its stamp says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// Not carried (a stamp of 12 or 20 bytes).
    #[default]
    Unmarked,
    /// Publisher `publisher` of load `load`.
    Load {
        /// The load.
        load: LoadId,
        /// The publisher's index in its load.
        publisher: u32,
    },
    /// Layout 1 (an older kiln): a publisher index without its load.
    Layout1 {
        /// The publisher's index in its (unknown) load.
        publisher: u32,
    },
    /// A layout version this kiln does not read (a newer kiln's), or a nonce of 0.
    Unknown {
        /// The version in bytes 24..26.
        version: u16,
    },
}

/// What a message carries about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    /// Sequence number of the message for its publisher.
    pub seq: u32,
    /// When it was sent, ns since the Unix epoch.
    pub sent_ns: u64,
    /// When it was meant to be sent (rate-limited runs), ns since the Unix epoch.
    pub intended_ns: Option<u64>,
    /// Who published it.
    pub origin: Origin,
}

impl Stamp {
    /// Bytes this stamp needs: 12, 20 or 36.
    pub fn len(&self) -> usize {
        if matches!(self.origin, Origin::Load { .. }) {
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
    /// returns the number of bytes written. Only [`Origin::Load`] is written as an origin:
    /// this kiln writes its own layout.
    #[inline]
    pub fn write(&self, out: &mut [u8]) -> usize {
        let n = self.len();
        out[0..4].copy_from_slice(&self.seq.to_be_bytes());
        out[4..12].copy_from_slice(&self.sent_ns.to_be_bytes());
        if n >= WITH_INTENDED {
            out[12..20].copy_from_slice(&self.intended_ns.unwrap_or(0).to_be_bytes());
        }
        if let Origin::Load { load, publisher } = self.origin {
            out[20..24].copy_from_slice(&publisher.wrapping_add(1).to_be_bytes());
            out[24..26].copy_from_slice(&VERSION.to_be_bytes());
            out[26..28].copy_from_slice(&load.agent.to_be_bytes());
            out[28..36].copy_from_slice(&load.nonce.to_be_bytes());
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
        let u16_at = |i: usize| {
            b.get(i..i + 2)
                .and_then(|s| s.try_into().ok())
                .map(u16::from_be_bytes)
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
        let origin = match (publisher, u16_at(24).unwrap_or(0)) {
            (None, _) => Origin::Unmarked,
            (Some(publisher), 0) => Origin::Layout1 { publisher },
            (Some(publisher), VERSION) => match (u16_at(26), u64_at(28).filter(|&n| n != 0)) {
                (Some(agent), Some(nonce)) => Origin::Load {
                    load: LoadId { nonce, agent },
                    publisher,
                },
                _ => Origin::Unknown { version: VERSION },
            },
            (Some(_), version) => Origin::Unknown { version },
        };
        Some(Stamp {
            seq,
            sent_ns,
            intended_ns,
            origin,
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
        let load = LoadId {
            nonce: 0x0123_4567_89ab_cdef,
            agent: 3,
        };
        for st in [
            Stamp {
                seq: 7,
                sent_ns: 1,
                intended_ns: None,
                origin: Origin::Unmarked,
            },
            Stamp {
                seq: u32::MAX,
                sent_ns: 2,
                intended_ns: Some(3),
                origin: Origin::Unmarked,
            },
            Stamp {
                seq: 0,
                sent_ns: 4,
                intended_ns: None,
                origin: Origin::Load { load, publisher: 0 },
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
        assert_eq!(Stamp::read(&[0; 36]), None, "no send time: not ours");
    }

    /// Layout 1 (publisher index, then zeros) is read as such, a later layout as unknown,
    /// and a load of another nonce or agent is another load.
    #[test]
    fn older_and_newer_layouts_are_told_apart() {
        let mut v1 = [0u8; 64];
        v1[0..4].copy_from_slice(&9u32.to_be_bytes());
        v1[4..12].copy_from_slice(&5u64.to_be_bytes());
        v1[20..24].copy_from_slice(&3u32.to_be_bytes());
        let st = Stamp::read(&v1).unwrap();
        assert_eq!((st.seq, st.origin), (9, Origin::Layout1 { publisher: 2 }));
        let mut v3 = v1;
        v3[24..26].copy_from_slice(&3u16.to_be_bytes());
        assert_eq!(
            Stamp::read(&v3).unwrap().origin,
            Origin::Unknown { version: 3 }
        );
        let mut no_nonce = v1;
        no_nonce[24..26].copy_from_slice(&VERSION.to_be_bytes());
        assert_eq!(
            Stamp::read(&no_nonce).unwrap().origin,
            Origin::Unknown { version: VERSION }
        );
        let a = LoadId::random();
        let b = LoadId { agent: 1, ..a };
        assert_ne!(a, b);
        assert!(a.same_run(&b));
        assert_ne!(a.nonce, 0);
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
