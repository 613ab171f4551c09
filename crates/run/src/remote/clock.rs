//! One clock across hosts: each host's CLOCK_MONOTONIC against the controlling host's.
//!
//! CLOCK_MONOTONIC counts from each machine's boot, so the same instant reads differently
//! on every host. An exchange over the SSH channel, as NTP does it, measures the
//! difference: the controller notes when it sends a ping (`t0`), the agent when it reads
//! it (`t1`) and answers (`t2`), the controller when the answer arrives (`t3`). The offset
//! (agent minus controller) is `((t1 − t0) + (t2 − t3)) / 2`, exact when the two
//! directions take equal time and wrong by at most half the round trip
//! (`(t3 − t0) − (t2 − t1)`) however unequal they are: that bound is the uncertainty.
//! Of several exchanges the one with the shortest round trip is kept. Measured at the
//! start and at the end of a run, the two offsets give the drift, and times in between
//! are mapped with the offset interpolated between them.
use kiln_store::ClockOffset;

/// One exchange, ns: `t0`, `t3` on the controller's clock, `t1`, `t2` on the agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    /// Ping sent (controller).
    pub t0: u64,
    /// Ping read (agent).
    pub t1: u64,
    /// Answer sent (agent).
    pub t2: u64,
    /// Answer read (controller).
    pub t3: u64,
}

impl Exchange {
    /// Agent minus controller, ns.
    pub fn offset(&self) -> i64 {
        let (t0, t1, t2, t3) = (
            self.t0 as i128,
            self.t1 as i128,
            self.t2 as i128,
            self.t3 as i128,
        );
        (((t1 - t0) + (t2 - t3)) / 2) as i64
    }

    /// The round trip less the agent's own time, ns.
    pub fn delay(&self) -> u64 {
        let total = self.t3.saturating_sub(self.t0);
        total.saturating_sub(self.t2.saturating_sub(self.t1))
    }
}

/// An offset measured at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockSample {
    /// When, on the controller's clock (the middle of the best exchange), ns.
    pub local_ns: u64,
    /// Agent minus controller, ns.
    pub offset_ns: i64,
    /// Half the best exchange's round trip, ns (at least 1).
    pub uncertainty_ns: u64,
    /// Exchanges made.
    pub exchanges: u32,
}

impl ClockSample {
    /// The sample of the exchange with the shortest round trip; `None` without any.
    pub fn best(exchanges: &[Exchange]) -> Option<ClockSample> {
        let b = exchanges.iter().min_by_key(|e| e.delay())?;
        Some(ClockSample {
            local_ns: b.t0 + (b.t3.saturating_sub(b.t0)) / 2,
            offset_ns: b.offset(),
            uncertainty_ns: (b.delay() / 2).max(1),
            exchanges: exchanges.len() as u32,
        })
    }
}

/// How to place an agent's times on the controller's clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockMap {
    /// Measured at the start.
    pub start: ClockSample,
    /// Measured at the end, when the host was still there.
    pub end: Option<ClockSample>,
}

impl ClockMap {
    /// A map from the start's measurement only (no drift known yet).
    pub fn new(start: ClockSample) -> Self {
        ClockMap { start, end: None }
    }

    /// The offset's change per ns of the controller's clock.
    fn drift(&self) -> f64 {
        match self.end {
            Some(e) if e.local_ns > self.start.local_ns => {
                (e.offset_ns - self.start.offset_ns) as f64
                    / (e.local_ns - self.start.local_ns) as f64
            }
            _ => 0.0,
        }
    }

    /// The agent's clock at controller time `local_ns`.
    pub fn to_remote(&self, local_ns: u64) -> u64 {
        let off = self.start.offset_ns as f64
            + self.drift() * (local_ns as f64 - self.start.local_ns as f64);
        (local_ns as f64 + off).round().max(0.0) as u64
    }

    /// The controller's clock at agent time `remote_ns`: solves
    /// `remote = local + o1 + d·(local − l1)` for `local`.
    pub fn to_local(&self, remote_ns: u64) -> u64 {
        let d = self.drift();
        let l1 = self.start.local_ns as f64;
        let local = (remote_ns as f64 - self.start.offset_ns as f64 + d * l1) / (1.0 + d);
        local.round().max(0.0) as u64
    }

    /// How far a mapped time may be wrong, ns: the larger of the two measurements'
    /// uncertainties (between them the interpolation is within both).
    pub fn uncertainty_ns(&self) -> u64 {
        self.end
            .map_or(self.start.uncertainty_ns, |e| e.uncertainty_ns)
            .max(self.start.uncertainty_ns)
    }

    /// What the run keeps.
    pub fn info(&self) -> ClockOffset {
        ClockOffset {
            offset_ns: self.start.offset_ns,
            end_offset_ns: self.end.map(|e| e.offset_ns),
            uncertainty_ns: self.uncertainty_ns(),
            drift_ppm: self.end.map(|_| self.drift() * 1e6),
            exchanges: self.start.exchanges + self.end.map_or(0, |e| e.exchanges),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_uncertainty_of_asymmetric_exchanges() {
        // The agent's clock is 1,000 s ahead; the ping takes 300 µs, the answer 100 µs,
        // the agent 50 µs in between.
        let off = 1_000_000_000_000i64;
        let t0 = 5_000_000_000u64;
        let t1 = (t0 as i64 + off + 300_000) as u64;
        let t2 = t1 + 50_000;
        let t3 = ((t2 as i64 - off) + 100_000) as u64;
        let e = Exchange { t0, t1, t2, t3 };
        assert_eq!(e.delay(), 400_000);
        // Wrong by (300 − 100) / 2 = 100 µs: within the uncertainty of 200 µs.
        assert_eq!(e.offset(), off + 100_000);
        let s = ClockSample::best(&[
            e,
            Exchange {
                t3: t3 + 5_000_000,
                ..e
            },
        ])
        .unwrap();
        assert_eq!(s.uncertainty_ns, 200_000);
        assert!((s.offset_ns - off).unsigned_abs() <= s.uncertainty_ns);
    }

    #[test]
    fn drift_between_start_and_end_is_interpolated() {
        // Offset 10 s at local 100 s, 10 s + 1 ms at local 1,100 s: drift 1 ppm.
        let start = ClockSample {
            local_ns: 100_000_000_000,
            offset_ns: 10_000_000_000,
            uncertainty_ns: 1_000,
            exchanges: 8,
        };
        let end = ClockSample {
            local_ns: 1_100_000_000_000,
            offset_ns: 10_001_000_000,
            uncertainty_ns: 3_000,
            exchanges: 8,
        };
        let m = ClockMap {
            start,
            end: Some(end),
        };
        let local = 600_000_000_000u64;
        let remote = m.to_remote(local);
        assert_eq!(remote, local + 10_000_500_000);
        assert!((m.to_local(remote) as i64 - local as i64).abs() <= 1);
        let i = m.info();
        assert!((i.drift_ppm.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(i.uncertainty_ns, 3_000);
        assert_eq!(i.exchanges, 16);
        // Without the end, the start's offset throughout.
        let m = ClockMap::new(start);
        assert_eq!(m.to_local(local + 10_000_000_000), local);
    }
}
