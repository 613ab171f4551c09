//! When each request or message is meant to be sent.
//!
//! Like vegeta's `lib/pacer.go`, a [`Pacer`] knows nothing of protocols. Where vegeta's says
//! how long to wait for the next hit, ours says *when* hit `n` is due ([`Pacer::due`]),
//! because latency measured from that intended time is free of coordinated omission: a
//! client that stalls does not postpone the schedule, so the queueing it causes shows up in
//! the latency instead of hiding in a lower rate (wrk2's and HdrHistogram's
//! `recordValueWithExpectedInterval` idea).
//!
//! Every driver paces through a [`Schedule`], a pacer walked hit by hit: it takes the hits
//! due by now ([`Schedule::take_due`]), each with its intended time, and waits for
//! [`Schedule::next`] in its own way (the AMQP producer sleeps on the run's stop, the MQTT
//! event loop keeps a timer heap, the HTTP one a `timerfd`).
//!
//! Pacers beside each other: [`Constant`] (with an optional offset, for many mostly idle
//! publishers spread over an interval), [`Steps`] (rates cycled through fixed-length steps:
//! PerfTest's `--variable-rate`), [`Linear`] (a ramp) and [`Sine`] (a periodic load).
use std::fmt::Debug;

/// A schedule of hits.
pub trait Pacer: Send + Sync + Debug {
    /// When hit `n` (0-based) is due, in seconds since the start; `None`: never.
    fn due(&self, n: u64) -> Option<f64>;

    /// Hits per second at `t` seconds since the start.
    fn rate(&self, t: f64) -> f64;
}

/// `rate` hits per second, the first at `offset` seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Constant {
    /// Hits per second (> 0; 0 means no hits at all).
    pub rate: f64,
    /// When the first hit is due, in seconds.
    pub offset: f64,
}

impl Pacer for Constant {
    fn due(&self, n: u64) -> Option<f64> {
        (self.rate > 0.0 && self.rate.is_finite()).then(|| self.offset + n as f64 / self.rate)
    }
    fn rate(&self, t: f64) -> f64 {
        if t >= self.offset {
            self.rate
        } else {
            0.0
        }
    }
}

/// Rates held for whole numbers of seconds in turn, cycled: `[(100, 10), (0, 5)]` sends at
/// 100/s for 10 s, pauses 5 s, and so on. Each step starts its own schedule at its start. A
/// single step of 0 seconds is a constant rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Steps {
    steps: Vec<(f64, u64)>,
    /// Hits in each step of one cycle.
    per_step: Vec<u64>,
    per_cycle: u64,
    cycle_s: f64,
}

impl Steps {
    /// Steps of `(rate, seconds)`.
    pub fn new(steps: &[(f64, u64)]) -> Self {
        let per_step: Vec<u64> = steps
            .iter()
            .map(|&(r, d)| {
                if r > 0.0 && r.is_finite() {
                    // Hits at 0, 1/r, 2/r… strictly before the step ends.
                    (r * d as f64 - 1e-9).ceil().max(0.0) as u64
                } else {
                    0
                }
            })
            .collect();
        Steps {
            steps: steps.to_vec(),
            per_cycle: per_step.iter().sum(),
            per_step,
            cycle_s: steps.iter().map(|s| s.1 as f64).sum(),
        }
    }

    fn constant(&self) -> Option<f64> {
        (self.steps.len() == 1 && self.steps[0].1 == 0).then(|| self.steps[0].0)
    }
}

impl Pacer for Steps {
    fn due(&self, n: u64) -> Option<f64> {
        if let Some(r) = self.constant() {
            return Constant {
                rate: r,
                offset: 0.0,
            }
            .due(n);
        }
        if self.per_cycle == 0 {
            return None;
        }
        let cycle = n / self.per_cycle;
        let mut rem = n % self.per_cycle;
        let mut start = cycle as f64 * self.cycle_s;
        for (i, &(r, d)) in self.steps.iter().enumerate() {
            if rem < self.per_step[i] {
                return Some(start + rem as f64 / r);
            }
            rem -= self.per_step[i];
            start += d as f64;
        }
        None
    }

    fn rate(&self, t: f64) -> f64 {
        step_at(&self.steps, t).0
    }
}

/// The value of cycling `(value, seconds)` steps at time `t`, and when its step ends. A single
/// step of 0 seconds is a constant.
pub(crate) fn step_at<T: Copy>(steps: &[(T, u64)], t: f64) -> (T, f64) {
    if steps.len() == 1 && steps[0].1 == 0 {
        return (steps[0].0, f64::INFINITY);
    }
    let cycle: u64 = steps.iter().map(|s| s.1).sum();
    if cycle == 0 {
        return (steps[0].0, f64::INFINITY);
    }
    let cycles = (t / cycle as f64).floor();
    let mut at = cycles * cycle as f64;
    for &(v, d) in steps {
        at += d as f64;
        if t < at {
            return (v, at);
        }
    }
    (steps[0].0, at + steps[0].1 as f64)
}

/// A ramp: `start + slope × t` hits per second (vegeta's `LinearPacer`), never below 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Linear {
    /// Rate at t = 0.
    pub start: f64,
    /// Change of the rate per second.
    pub slope: f64,
}

impl Pacer for Linear {
    fn due(&self, n: u64) -> Option<f64> {
        let (a, b, n) = (self.start, self.slope, n as f64);
        if b.abs() < 1e-12 {
            return Constant {
                rate: a,
                offset: 0.0,
            }
            .due(n as u64);
        }
        // hits(t) = a t + b t² / 2 = n
        let disc = a * a + 2.0 * b * n;
        if disc < 0.0 || (b < 0.0 && disc <= 0.0) {
            return None; // the rate reaches 0 before hit n
        }
        let t = (-a + disc.sqrt()) / b;
        (t >= 0.0 && t.is_finite()).then_some(t)
    }
    fn rate(&self, t: f64) -> f64 {
        (self.start + self.slope * t).max(0.0)
    }
}

/// A periodic load: `mean + amplitude × sin(2π t / period + phase)` hits per second
/// (vegeta's `SinePacer`). The amplitude must not exceed the mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sine {
    /// Average rate.
    pub mean: f64,
    /// Peak deviation from the mean (≤ mean).
    pub amplitude: f64,
    /// Seconds per period.
    pub period: f64,
    /// Phase at t = 0, radians (0: start at the mean, rising).
    pub phase: f64,
}

impl Sine {
    fn hits(&self, t: f64) -> f64 {
        let w = std::f64::consts::TAU / self.period;
        self.mean * t + self.amplitude / w * (self.phase.cos() - (w * t + self.phase).cos())
    }
}

impl Pacer for Sine {
    fn due(&self, n: u64) -> Option<f64> {
        if self.mean <= 0.0 || self.period <= 0.0 || self.amplitude > self.mean {
            return None;
        }
        let target = n as f64;
        // hits(t) is non-decreasing: bisect.
        let (mut lo, mut hi) = (0.0, self.period.max(1.0));
        while self.hits(hi) < target {
            lo = hi;
            hi *= 2.0;
            if hi > 1e12 {
                return None;
            }
        }
        for _ in 0..100 {
            let mid = (lo + hi) / 2.0;
            if self.hits(mid) < target {
                lo = mid;
            } else {
                hi = mid;
            }
            if hi - lo < 1e-9 {
                break;
            }
        }
        Some(hi)
    }
    fn rate(&self, t: f64) -> f64 {
        let w = std::f64::consts::TAU / self.period;
        (self.mean + self.amplitude * (w * t + self.phase).sin()).max(0.0)
    }
}

/// A pacer walked hit by hit: the intended time of the next hit and a way to move on.
#[derive(Debug)]
pub struct Schedule {
    pacer: Box<dyn Pacer>,
    hits: u64,
    next: Option<f64>,
}

impl Schedule {
    /// Starts at hit 0.
    pub fn new(pacer: Box<dyn Pacer>) -> Self {
        let next = pacer.due(0);
        Schedule {
            pacer,
            hits: 0,
            next,
        }
    }

    /// When the next hit is due (seconds since the start), `None` when no hit is left.
    #[inline]
    pub fn next(&self) -> Option<f64> {
        self.next
    }

    /// The next hit's intended time if it is due at or before `now` and before `end`; moves
    /// on to the hit after it.
    #[inline]
    pub(crate) fn take_due(&mut self, now: f64, end: f64) -> Option<f64> {
        let t = self.next?;
        if t > now || t >= end {
            return None;
        }
        self.hits += 1;
        self.next = self.pacer.due(self.hits);
        Some(t)
    }

    /// Hits taken so far.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// The rate in force at `t`.
    pub fn rate(&self, t: f64) -> f64 {
        self.pacer.rate(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(p: &dyn Pacer, until: f64) -> Vec<f64> {
        (0..)
            .map(|n| p.due(n))
            .take_while(|t| t.is_some_and(|t| t < until))
            .map(|t| (t.unwrap() * 1e6).round() / 1e6)
            .collect()
    }

    #[test]
    fn steps_skip_zero_rate_steps_and_cycle() {
        let p = Steps::new(&[(2.0, 1), (0.0, 1)]);
        assert_eq!(times(&p, 4.0), vec![0.0, 0.5, 2.0, 2.5]);
        assert_eq!(p.rate(2.5), 2.0);
        assert_eq!(p.rate(1.5), 0.0);
        assert_eq!(Steps::new(&[(0.0, 0)]).due(0), None);
        // A fractional rate: hits strictly inside each step.
        assert_eq!(times(&Steps::new(&[(2.5, 1)]), 1.0), vec![0.0, 0.4, 0.8]);
        assert_eq!(step_at(&[(7usize, 0)], 1e9).0, 7);
        assert_eq!(step_at(&[(10.0, 2), (0.0, 3)], 5.5), (10.0, 7.0));
    }

    #[test]
    fn linear_and_sine_deliver_their_integral() {
        let p = Linear {
            start: 10.0,
            slope: 10.0,
        };
        // hits(2) = 10·2 + 10·4/2 = 40
        assert_eq!(times(&p, 2.0).len(), 40);
        let down = Linear {
            start: 10.0,
            slope: -5.0,
        };
        // The rate reaches 0 at t = 2 after 10 hits; no more after that.
        assert_eq!(times(&down, 100.0).len(), 10);
        let s = Sine {
            mean: 100.0,
            amplitude: 50.0,
            period: 4.0,
            phase: 0.0,
        };
        // A whole period holds mean × period hits; the rising half more than the falling.
        assert_eq!(times(&s, 4.0).len(), 400);
        let first_half = times(&s, 2.0).len();
        assert!(first_half > 230 && first_half < 270, "{first_half}");
        assert!(s.rate(1.0) > 149.0 && s.rate(3.0) < 51.0);
    }

    #[test]
    fn schedule_takes_due_hits_before_the_end() {
        let mut s = Schedule::new(Box::new(Constant {
            rate: 2.0,
            offset: 0.0,
        }));
        assert_eq!(s.take_due(0.0, 10.0), Some(0.0));
        assert_eq!(s.take_due(0.1, 10.0), None);
        assert_eq!(s.take_due(5.0, 0.6), Some(0.5));
        assert_eq!(s.take_due(5.0, 0.6), None, "nothing at or after the end");
        assert_eq!(s.hits(), 2);
    }
}
