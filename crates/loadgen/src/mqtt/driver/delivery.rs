//! Delivery accounting: each subscriber's view of each publisher's sequence (gaps,
//! duplicates, reordering), the messages that are not this load's, and what is still
//! undelivered.
use super::schema::M;
use super::{Loop, Role};
use crate::engine::body::{self, Origin, Stamp};

/// Per-publisher delivery accounting, as seen by the subscribers.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Delivery {
    /// Publisher index.
    pub publisher: u32,
    /// Messages it wrote.
    pub sent: u64,
    /// Messages subscribers received from it (each subscriber counts; duplicates too).
    pub received: u64,
    /// Never received.
    pub lost: u64,
    /// Received again.
    pub duplicated: u64,
    /// Received after a later message.
    pub out_of_order: u64,
    /// Not received by this load's subscribers, and not judged lost: a shared subscription
    /// whose group other loads' subscribers share (they may have received them).
    #[serde(default)]
    pub not_received_here: u64,
    /// Of `lost`, those after the last message each subscriber received from it: still on
    /// their way when the load stopped (its drain over) — queued in the broker or unread
    /// in its sockets — rather than gaps the broker left in the sequence (drops).
    #[serde(default)]
    pub lost_at_end: u64,
}

/// One subscriber's (or a shared group's) view of one publisher's sequence.
#[derive(Debug, Clone, Default)]
pub(super) struct Track {
    /// Highest sequence seen + 1 (0: none yet).
    next_seq: u64,
    /// Bit i set: sequence `next - 1 - i` was seen (the last 1024).
    seen: [u64; 16],
    missing: u64,
    /// Of `missing`, those after the highest sequence seen (set at the end).
    tail: u64,
    received: u64,
    duplicated: u64,
    out_of_order: u64,
}

/// What a received sequence number was to its track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// The next one, or later (the ones between are missing until they come).
    InOrder,
    /// One missing until now, or one too old to tell: first seen, out of order.
    Late,
    /// Seen before.
    Duplicate,
}

impl Track {
    fn see(&mut self, seq: u64) -> Seen {
        self.received += 1;
        if seq >= self.next_seq {
            let gap = seq - self.next_seq;
            self.missing += gap;
            self.shift(gap + 1);
            self.seen[0] |= 1;
            self.next_seq = seq + 1;
            return Seen::InOrder;
        }
        let back = self.next_seq - 1 - seq;
        if back >= 1024 {
            // Too old to tell: counted as out of order.
            self.out_of_order += 1;
            self.missing = self.missing.saturating_sub(1);
            return Seen::Late;
        }
        let (w, b) = ((back / 64) as usize, back % 64);
        if self.seen[w] >> b & 1 == 1 {
            self.duplicated += 1;
            Seen::Duplicate
        } else {
            self.seen[w] |= 1 << b;
            self.out_of_order += 1;
            self.missing = self.missing.saturating_sub(1);
            Seen::Late
        }
    }

    fn shift(&mut self, by: u64) {
        if by >= 1024 {
            self.seen = [0; 16];
            return;
        }
        let (words, bits) = ((by / 64) as usize, (by % 64) as u32);
        for i in (0..16).rev() {
            let hi = if i >= words { self.seen[i - words] } else { 0 };
            let lo = if i > words {
                self.seen[i - words - 1]
            } else {
                0
            };
            self.seen[i] = if bits == 0 {
                hi
            } else {
                hi << bits | lo >> (64 - bits)
            };
        }
    }
}

impl Loop<'_> {
    /// The levels of the second so far: messages awaiting the broker's acknowledgement,
    /// and this load's messages its subscribers have not received yet (left unobserved
    /// with a shared subscription, whose subscribers each get only part, or too many pairs
    /// of publishers and subscribers to count four times a second).
    pub(super) fn observe_levels(&self) {
        let in_flight: usize = self
            .conns
            .iter()
            .filter_map(|c| c.publisher.as_ref())
            .map(|ps| ps.unacked.len())
            .sum();
        self.ctx.set_level(
            M.in_flight,
            (self.publishers > 0).then_some(in_flight as f64),
        );
        let pairs = self.publishers as u64 * self.tracks.len() as u64;
        let undelivered = (self.publishers > 0
            && self.subscribers > 0
            && !self.opts.unmarked()
            && !self.shared_subscription
            && pairs <= 100_000)
            .then(|| {
                let (want, got) = self.delivery_counts();
                want.saturating_sub(got) as f64
            });
        self.ctx.set_level(M.undelivered, undelivered);
    }

    /// `(deliveries due, deliveries made)`: each message the publishers encoded, once per
    /// subscriber, and those the subscribers received (in sequence, less the missing).
    fn delivery_counts(&self) -> (u64, u64) {
        let mut want = 0u64;
        let mut got = 0u64;
        for (p, sent) in self.pub_sent().iter().enumerate() {
            for t in &self.tracks {
                want += sent;
                got += t[p].next_seq.min(*sent).saturating_sub(t[p].missing);
            }
        }
        (want, got)
    }

    /// Every message this load's publishers encoded was received by every subscriber.
    pub(super) fn all_delivered(&self) -> bool {
        let (want, got) = self.delivery_counts();
        got >= want
    }

    /// Per publisher: messages encoded (sequence numbers used), and of those never written.
    pub(super) fn pub_counts(&self) -> Vec<(u64, u64)> {
        let mut v = vec![(0u64, 0u64); self.publishers as usize];
        for c in &self.conns {
            if let (Role::Publisher(p), Some(ps)) = (c.role, &c.publisher) {
                v[p as usize] = (ps.encoded, ps.never_written);
            }
        }
        v
    }

    /// Per publisher: messages encoded.
    pub(super) fn pub_sent(&self) -> Vec<u64> {
        self.pub_counts().iter().map(|c| c.0).collect()
    }

    /// Messages never received by the end: each subscriber's gaps and tail of each
    /// publisher's sequence, less the messages that were never written. With a shared
    /// subscription whose group other loads' subscribers share (their messages came here),
    /// this load's subscribers get only part of its messages: the rest is not judged lost
    /// but kept as not received here (the run as a whole judges delivery).
    pub(super) fn account_tail(&mut self) {
        if self.opts.unmarked() {
            // Messages without an origin: nothing to account per publisher.
            return;
        }
        let counts = self.pub_counts();
        let mut lost = 0;
        for t in &mut self.tracks {
            for (p, &(encoded, unsent)) in counts.iter().enumerate() {
                let tail = encoded.saturating_sub(t[p].next_seq);
                t[p].missing = (t[p].missing + tail).saturating_sub(unsent);
                // (Messages never written are the sequence's last.)
                t[p].tail = tail.saturating_sub(unsent);
                lost += t[p].missing;
            }
        }
        if self.shared_subscription && self.other_loads > 0 {
            self.unjudged = Some(lost);
        } else {
            self.ctx.add(0, M.lost, lost);
        }
    }

    /// Per publisher, what its subscribers received, lost, got twice or out of order.
    pub(super) fn deliveries(&self) -> Vec<Delivery> {
        if self.opts.unmarked() {
            return Vec::new();
        }
        let counts = self.pub_counts();
        (0..self.publishers as usize)
            .map(|p| {
                let mut d = Delivery {
                    publisher: p as u32,
                    sent: counts[p].0 - counts[p].1,
                    ..Default::default()
                };
                for t in &self.tracks {
                    d.received += t[p].received;
                    match self.unjudged {
                        Some(_) => d.not_received_here += t[p].missing,
                        None => {
                            d.lost += t[p].missing;
                            d.lost_at_end += t[p].tail;
                        }
                    }
                    d.duplicated += t[p].duplicated;
                    d.out_of_order += t[p].out_of_order;
                }
                d
            })
            .collect()
    }

    /// A PUBLISH delivered to subscriber connection `i`: counted, its latency recorded
    /// from its stamp, its sequence tracked (this load's messages only).
    pub(super) fn delivered(&mut self, i: usize, payload: &[u8]) {
        let Role::Subscriber(s) = self.conns[i].role else {
            return;
        };
        let st = Stamp::read(payload);
        if self.opts.unmarked() {
            // Payloads too small for an origin: every message counts, its latency from
            // its send time when it carries one.
            self.ctx.add(0, M.received, 1);
            self.record_latency(st);
            return;
        }
        // In pubsub only this load's messages count: stamped by one of its publishers
        // (its load id) after the load began.
        let ours = st.and_then(|st| match st.origin {
            Origin::Load { load, publisher }
                if load == self.load_id
                    && publisher < self.publishers
                    && st.sent_ns >= self.ctx.clock().real_at(0) =>
            {
                Some(publisher)
            }
            _ => None,
        });
        if self.publishers > 0 && ours.is_none() {
            self.foreign(st.map(|s| s.origin));
            return;
        }
        self.ctx.add(0, M.received, 1);
        let Some(st) = st else {
            return;
        };
        self.record_latency(Some(st));
        let Some(p) = ours else {
            return;
        };
        let t = if self.shared_subscription {
            0
        } else {
            s as usize
        };
        if let Some(track) = self.tracks.get_mut(t).and_then(|v| v.get_mut(p as usize)) {
            // Sequence numbers wrap at 2^32; ours never get near it per run.
            match track.see(st.seq as u64) {
                Seen::InOrder => {}
                Seen::Late => self.ctx.add(0, M.out_of_order, 1),
                Seen::Duplicate => self.ctx.add(0, M.duplicated, 1),
            }
        }
    }

    /// A received message's latency from its stamp's send time (and intended time), when
    /// it carries one within an hour of now.
    fn record_latency(&self, st: Option<Stamp>) {
        let Some(st) = st else {
            return;
        };
        let now = crate::engine::clock::real_ns();
        let mut h = self.ctx.hists(0);
        if now.abs_diff(st.sent_ns) < 3_600_000_000_000 {
            h.record(M.latency, now.saturating_sub(st.sent_ns) / 1000);
            if let Some(it) = st
                .intended_ns
                .filter(|&t| now.abs_diff(t) < 3_600_000_000_000)
            {
                h.record(M.latency_intended, now.saturating_sub(it) / 1000);
            }
        }
    }

    /// A message this load did not publish: counted, and a layout it cannot place told
    /// once.
    pub(super) fn foreign(&mut self, origin: Option<Origin>) {
        self.ctx.add(0, M.foreign, 1);
        match origin {
            Some(Origin::Load { load, .. }) if load != self.load_id => {
                self.other_loads += 1;
                if load.same_run(&self.load_id) {
                    self.from_run += 1;
                }
            }
            Some(Origin::Layout1 { .. }) if !self.layouts_told[0] => {
                self.layouts_told[0] = true;
                self.ctx.event(
                    "foreign-layout",
                    "messages of layout 1 (an older kiln: a publisher index without its load) are counted as foreign".into(),
                );
            }
            Some(Origin::Unknown { version }) if !self.layouts_told[1] => {
                self.layouts_told[1] = true;
                self.ctx.event(
                    "foreign-layout",
                    format!("messages of layout version {version} (this kiln writes and reads version {}) are counted as foreign", body::VERSION),
                );
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_gaps_duplicates_and_reordering() {
        let mut t = Track::default();
        for s in [0, 1, 2, 5, 3, 3, 6] {
            t.see(s);
        }
        // 4 never came; 3 came late (out of order) and again (duplicate).
        assert_eq!(
            (
                t.next_seq,
                t.missing,
                t.duplicated,
                t.out_of_order,
                t.received
            ),
            (7, 1, 1, 1, 7)
        );
        let mut t = Track::default();
        t.see(0);
        t.see(5000);
        assert_eq!(t.missing, 4999);
        t.see(10);
        assert_eq!(
            (t.missing, t.out_of_order),
            (4998, 1),
            "too old to tell: out of order"
        );
        assert_eq!(t.see(4999), Seen::Late);
        assert_eq!((t.missing, t.out_of_order, t.duplicated), (4997, 2, 0));
        assert_eq!(t.see(4999), Seen::Duplicate);
        assert_eq!(t.duplicated, 1);
        assert_eq!(t.see(5001), Seen::InOrder);
    }
}
