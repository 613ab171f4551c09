//! Where a sweep's outcome broke: the one rule for `kiln load http --concurrency-sweep`,
//! the knee `kiln run` marks in a sweep's table, and the findings that explain it.
//!
//! * A **rate** sweep breaks at the first step that did not hold its rate (achieved under
//!   [`HELD`] of the rate asked) or whose median latency left its floor (over [`FLOOR_X`]
//!   times the lowest median before it, and [`FLOOR_SLACK_US`] above it).
//! * A **concurrency** sweep breaks where throughput stopped following the clients: by
//!   Little's law the latency is the clients over the throughput, so when throughput grows
//!   as clientsᵉ with e under [`QUEUED`], the clients added only queued and the latency
//!   grew nearly in proportion. A per-step growth threshold (10%) misses a server that
//!   gains ×1.37 over ×64 the clients in small steps; the exponent does not.

/// One step: the swept value (a rate, a number of clients), the throughput achieved and
/// the median latency (µs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SweepPoint {
    /// The rate asked for, or the clients.
    pub value: f64,
    /// Operations completed per second.
    pub throughput: f64,
    /// Median latency, µs.
    pub p50_us: Option<f64>,
}

/// A rate step holds its rate from this share of it.
pub const HELD: f64 = 0.95;
/// A rate step's median has left its floor past this many times the floor ...
pub const FLOOR_X: f64 = 3.0;
/// ... and this far above it, µs (floors of a few hundred µs vary by more than 3× on a
/// busy machine without anything falling over).
pub const FLOOR_SLACK_US: f64 = 1000.0;
/// Throughput growing as clientsᵉ with e under this: the clients added only queued.
pub const QUEUED: f64 = 0.25;

/// How a step broke.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Broke {
    /// A rate step did not hold its rate.
    NotHeld,
    /// A rate step's median latency left its floor (the floor, µs).
    LeftFloor(f64),
    /// A concurrency step's throughput grew as clientsᵉ (e) from the step before.
    Queued(f64),
}

/// The first step of a rate sweep that broke, and how.
pub fn rate_break(steps: &[SweepPoint]) -> Option<(usize, Broke)> {
    let mut floor = f64::INFINITY;
    for (i, s) in steps.iter().enumerate() {
        if s.throughput < HELD * s.value {
            return Some((i, Broke::NotHeld));
        }
        let p50 = s.p50_us.unwrap_or(0.0);
        if floor.is_finite() && p50 > (FLOOR_X * floor).max(floor + FLOOR_SLACK_US) {
            return Some((i, Broke::LeftFloor(floor)));
        }
        if p50 > 0.0 {
            floor = floor.min(p50);
        }
    }
    None
}

/// The first step of a concurrency sweep whose throughput did not follow its clients.
pub fn concurrency_break(steps: &[SweepPoint]) -> Option<(usize, Broke)> {
    (1..steps.len()).find_map(|i| {
        let e = exponent(&steps[i - 1], &steps[i])?;
        (e < QUEUED).then_some((i, Broke::Queued(e)))
    })
}

/// How throughput grew from `a` to `b` against the clients: e in throughput ∝ clientsᵉ.
pub fn exponent(a: &SweepPoint, b: &SweepPoint) -> Option<f64> {
    let n = (b.value / a.value).ln();
    if n.is_nan() || n <= 0.0 || a.throughput <= 0.0 {
        return None;
    }
    Some((b.throughput.max(1e-9) / a.throughput).ln() / n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(value: f64, throughput: f64, p50_ms: f64) -> SweepPoint {
        SweepPoint {
            value,
            throughput,
            p50_us: Some(p50_ms * 1000.0),
        }
    }

    #[test]
    fn a_rate_sweep_breaks_where_the_rate_is_not_held_or_latency_leaves_its_floor() {
        let held = [s(5e3, 5e3, 0.4), s(7e3, 6990.0, 0.6), s(9e3, 8990.0, 0.9)];
        assert_eq!(rate_break(&held), None);
        let wall = [held[0], held[1], held[2], s(11e3, 7260.0, 2770.0)];
        assert_eq!(rate_break(&wall), Some((3, Broke::NotHeld)));
        let slow = [held[0], s(7e3, 7e3, 9.0)];
        assert_eq!(rate_break(&slow).map(|b| b.0), Some(1));
    }

    /// ×1.37 over ×64 the clients in steps that each grew under 10% is saturation.
    #[test]
    fn a_concurrency_sweep_breaks_where_throughput_stops_following() {
        let steps = [
            s(1.0, 2092.0, 0.43),
            s(2.0, 2500.0, 0.8),
            s(4.0, 2700.0, 1.5),
            s(8.0, 2780.0, 2.9),
            s(64.0, 2864.0, 22.0),
        ];
        let (i, how) = concurrency_break(&steps).unwrap();
        assert_eq!(i, 2);
        assert!(matches!(how, Broke::Queued(e) if e < 0.25));
        let growing = [
            s(1.0, 1000.0, 1.0),
            s(2.0, 1900.0, 1.0),
            s(4.0, 3700.0, 1.1),
        ];
        assert_eq!(concurrency_break(&growing), None);
    }
}
