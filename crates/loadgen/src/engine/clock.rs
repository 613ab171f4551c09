//! The clocks of a run.
//!
//! Everything a run measures is on `CLOCK_MONOTONIC`, the clock `kiln record` stamps its
//! samples with (and the one Rust's [`Instant`] reads on Linux), so `kiln run` can line the
//! load's seconds up with the profile's samples. Message timestamps are on the wall clock
//! instead (`CLOCK_REALTIME`), because a consumer in another process reads them.
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// `CLOCK_MONOTONIC` now, in nanoseconds (kiln's one reading of it).
pub use kiln_os::clock::monotonic_ns as mono_ns;

/// Wall-clock nanoseconds since the Unix epoch.
pub(crate) fn real_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// The origin of a run's timestamps on both clocks, taken at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    base: Instant,
    base_mono_ns: u64,
    base_real_ns: u64,
}

impl Clock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        let base = Instant::now();
        Clock {
            base,
            base_mono_ns: mono_ns(),
            base_real_ns: real_ns(),
        }
    }

    /// Nanoseconds since the origin.
    #[inline]
    pub fn ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// The `CLOCK_MONOTONIC` time of `ns` after the origin.
    pub(crate) fn mono_at(&self, ns: u64) -> u64 {
        self.base_mono_ns + ns
    }

    /// The wall-clock time (ns since the epoch) of `ns` after the origin.
    pub(crate) fn real_at(&self, ns: u64) -> u64 {
        self.base_real_ns + ns
    }

    /// The [`Instant`] of `ns` after the origin.
    pub(crate) fn instant_at(&self, ns: u64) -> Instant {
        self.base + std::time::Duration::from_nanos(ns)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_ns_is_the_clock_instant_reads() {
        let c = Clock::new();
        let a = mono_ns();
        let at = c.mono_at(c.ns());
        let b = mono_ns();
        assert!(a <= at + 1_000_000 && at <= b + 1_000_000, "{a} {at} {b}");
    }
}
