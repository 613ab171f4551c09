//! E-divisive means: where a series' distribution changes (Matteson & James, "A
//! Nonparametric Approach for Multiple Change Point Analysis of Multivariate Data", 2014;
//! the method MongoDB's CI and Hunter/Otava run over performance histories).
//!
//! A segment `x[0..m)` is split where the energy statistic between the two sides is
//! largest:
//!
//! ```text
//! Q(t) = t(m−t)/m · ( 2/(t(m−t)) Σ_{i<t≤j} |xᵢ−xⱼ| − 2/(t(t−1)) Σ_{i<k<t} |xᵢ−xₖ|
//!                                                  − 2/((m−t)(m−t−1)) Σ_{t≤j<k} |xⱼ−xₖ| )
//! ```
//!
//! and the split is kept when a permutation test says so: the segment's values shuffled
//! `permutations` times (a fixed seed: the same series gives the same answer), p = (1 +
//! shuffles whose largest Q reaches the observed one) / (1 + shuffles); kept when p ≤
//! alpha. Each side is then split again in turn, until no split is significant or a side
//! would hold fewer than `min_size` values.
//!
//! The sums over pairs are kept for every prefix and suffix with Fenwick trees over the
//! values' ranks, so one scan of a segment of m values costs O(m log m) rather than the
//! O(m²) of the pairwise distance matrix: a series of 100,000 values is split in seconds.

/// How change points are looked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Largest p of the permutation test for a split to be kept.
    pub alpha: f64,
    /// Shuffles of the permutation test.
    pub permutations: usize,
    /// Fewest values on each side of a change point.
    pub min_size: usize,
    /// The shuffles' seed.
    pub seed: u64,
}

impl Options {
    /// The options for `alpha`: enough shuffles for the smallest p to be a fifth of alpha
    /// (99 at least: 0.01 at alpha 0.05), segments of 3 values or more.
    pub fn for_alpha(alpha: f64) -> Options {
        let shuffles = if alpha > 0.0 {
            (5.0 / alpha).ceil() - 1.0
        } else {
            f64::MAX
        };
        Options {
            alpha,
            permutations: shuffles.clamp(99.0, 99_999.0) as usize,
            min_size: MIN_SEGMENT,
            seed: 0x6b69_6c6e_7472_6e64,
        }
    }
}

/// The fewest values a segment holds by default.
pub const MIN_SEGMENT: usize = 3;

/// A change point found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangePoint {
    /// The index of the first value after the change.
    pub index: usize,
    /// The permutation test's p.
    pub p: f64,
    /// The energy statistic of the split, in the series' unit.
    pub q: f64,
}

/// The change points of `x`, in index order. Values that are not finite are the caller's
/// to leave out: a NaN has no distance.
pub fn change_points(x: &[f64], opts: &Options) -> Vec<ChangePoint> {
    let mut found = Vec::new();
    let min = opts.min_size.max(2);
    let mut todo = vec![(0usize, x.len())];
    while let Some((start, end)) = todo.pop() {
        if end - start < 2 * min {
            continue;
        }
        let seg = Segment::new(&x[start..end]);
        let Some((t, q)) = seg.best_split(&seg.order, min) else {
            continue;
        };
        let p = seg.permutation_p(q, min, opts, start as u64 ^ ((end as u64) << 32));
        if p <= opts.alpha {
            found.push(ChangePoint {
                index: start + t,
                p,
                q,
            });
            todo.push((start + t, end));
            todo.push((start, start + t));
        }
    }
    found.sort_by_key(|c| c.index);
    found
}

/// A segment's values as ranks, for the sums over pairs.
struct Segment {
    /// Each value's rank among the segment's (ties broken by position), in series order.
    order: Vec<usize>,
    /// The values by rank, centred on their mean (distances do not move; sums lose less).
    sorted: Vec<f64>,
}

impl Segment {
    fn new(x: &[f64]) -> Segment {
        let mean = x.iter().sum::<f64>() / x.len() as f64;
        let mut idx: Vec<usize> = (0..x.len()).collect();
        idx.sort_by(|&a, &b| x[a].total_cmp(&x[b]).then(a.cmp(&b)));
        let mut order = vec![0; x.len()];
        for (rank, &i) in idx.iter().enumerate() {
            order[i] = rank;
        }
        let sorted = idx.iter().map(|&i| x[i] - mean).collect();
        Segment { order, sorted }
    }

    /// Σ |xᵢ−xₖ| over the pairs of each prefix of `ranks` (`out[t]`: of the first t).
    fn prefix_sums(&self, ranks: impl Iterator<Item = usize>, out: &mut [f64]) {
        let n = self.sorted.len();
        let (mut count, mut sum) = (Fenwick::new(n), Fenwick::new(n));
        let (mut total, mut acc) = (0.0, 0.0);
        out[0] = 0.0;
        for (k, r) in ranks.enumerate() {
            let v = self.sorted[r];
            let (below, below_sum) = (count.sum(r), sum.sum(r));
            let above = k as f64 - below;
            let above_sum = total - below_sum;
            acc += v * below - below_sum + above_sum - v * above;
            count.add(r, 1.0);
            sum.add(r, v);
            total += v;
            out[k + 1] = acc;
        }
    }

    /// The split of the values in `ranks` order with the largest Q, each side holding
    /// `min` or more: (index of the first value after it, Q).
    fn best_split(&self, ranks: &[usize], min: usize) -> Option<(usize, f64)> {
        let m = ranks.len();
        let mut pre = vec![0.0; m + 1];
        let mut suf = vec![0.0; m + 1];
        self.prefix_sums(ranks.iter().copied(), &mut pre);
        // Suffix sums: the prefix sums of the reversed order, read back to front.
        self.prefix_sums(ranks.iter().rev().copied(), &mut suf);
        let all = pre[m];
        let mf = m as f64;
        let mut best: Option<(usize, f64)> = None;
        for t in min..=m - min {
            let (a, b) = (t as f64, (m - t) as f64);
            let (wa, wb) = (pre[t], suf[m - t]);
            let between = all - wa - wb;
            let e =
                2.0 * between / (a * b) - 2.0 * wa / (a * (a - 1.0)) - 2.0 * wb / (b * (b - 1.0));
            let q = a * b / mf * e;
            if best.is_none_or(|(_, bq)| q > bq) {
                best = Some((t, q));
            }
        }
        best
    }

    /// The permutation test of a split with statistic `q`: the share of shuffles (and the
    /// observed order) whose best split reaches it. Stops once the split cannot be kept.
    fn permutation_p(&self, q: f64, min: usize, opts: &Options, salt: u64) -> f64 {
        let mut rng = SplitMix(opts.seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut ranks = self.order.clone();
        let mut reached = 1usize;
        let give_up = (opts.alpha * (opts.permutations + 1) as f64).floor() as usize + 1;
        for done in 1..=opts.permutations {
            for i in (1..ranks.len()).rev() {
                let j = (rng.next() % (i as u64 + 1)) as usize;
                ranks.swap(i, j);
            }
            // A relative tolerance: a shuffle equal to the observed order counts.
            if self
                .best_split(&ranks, min)
                .is_some_and(|(_, s)| s >= q - q.abs() * 1e-12)
            {
                reached += 1;
                if reached > give_up {
                    return reached as f64 / (done + 1) as f64;
                }
            }
        }
        reached as f64 / (opts.permutations + 1) as f64
    }
}

/// Sums over ranks below a given one, in O(log n).
struct Fenwick(Vec<f64>);

impl Fenwick {
    fn new(n: usize) -> Fenwick {
        Fenwick(vec![0.0; n + 1])
    }

    fn add(&mut self, i: usize, v: f64) {
        let mut i = i + 1;
        while i < self.0.len() {
            self.0[i] += v;
            i += i & i.wrapping_neg();
        }
    }

    /// The sum over ranks below `i`.
    fn sum(&self, i: usize) -> f64 {
        let (mut i, mut s) = (i, 0.0);
        while i > 0 {
            s += self.0[i];
            i -= i & i.wrapping_neg();
        }
        s
    }
}

/// SplitMix64: a small seeded generator (the shuffles only need to be fixed and even).
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A normally distributed value (Box–Muller), mean 0, deviation 1.
    pub fn normal(&mut self) -> f64 {
        let u = ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let v = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noisy(levels: &[(usize, f64)], sd: f64, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix(seed);
        levels
            .iter()
            .flat_map(|&(n, level)| (0..n).map(|_| level).collect::<Vec<_>>())
            .map(|l| l + sd * rng.normal())
            .collect()
    }

    fn indices(x: &[f64]) -> Vec<usize> {
        change_points(x, &Options::for_alpha(0.05))
            .iter()
            .map(|c| c.index)
            .collect()
    }

    /// Q by its definition, over every pair: what the Fenwick sums must give.
    fn q_direct(x: &[f64], t: usize) -> f64 {
        let (a, b) = (&x[..t], &x[t..]);
        let pairs = |s: &[f64]| -> f64 {
            let mut acc = 0.0;
            for i in 0..s.len() {
                for k in i + 1..s.len() {
                    acc += (s[i] - s[k]).abs();
                }
            }
            acc
        };
        let between: f64 = a
            .iter()
            .flat_map(|u| b.iter().map(move |v| (u - v).abs()))
            .sum();
        let (na, nb, m) = (a.len() as f64, b.len() as f64, x.len() as f64);
        na * nb / m
            * (2.0 * between / (na * nb)
                - 2.0 * pairs(a) / (na * (na - 1.0))
                - 2.0 * pairs(b) / (nb * (nb - 1.0)))
    }

    #[test]
    fn the_sums_are_the_statistic() {
        let x = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0];
        let seg = Segment::new(&x);
        let (t, q) = seg.best_split(&seg.order, 2).unwrap();
        let best = (2..=x.len() - 2)
            .map(|t| (t, q_direct(&x, t)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert_eq!(t, best.0);
        assert!((q - best.1).abs() < 1e-9, "{q} against {}", best.1);
    }

    /// Change points found near each of `steps` in every series, and how many others
    /// (false alarms of the tests of the segments between them, each at alpha 0.05).
    fn found_near(series: &[Vec<f64>], steps: &[usize]) -> usize {
        let mut others = 0;
        for (seed, x) in series.iter().enumerate() {
            let found = indices(x);
            for &s in steps {
                assert!(
                    found.iter().any(|f| f.abs_diff(s) <= 1),
                    "series {seed}: {found:?}, not at {s} ± 1, in {x:?}"
                );
            }
            others += found
                .iter()
                .filter(|f| steps.iter().all(|s| f.abs_diff(*s) > 1))
                .count();
        }
        others
    }

    #[test]
    fn a_step_is_found_at_the_step() {
        let series: Vec<Vec<f64>> = (0..20)
            .map(|seed| noisy(&[(20, 100.0), (10, 130.0)], 5.0, seed))
            .collect();
        // After the split, the two sides are tested again: 40 tests at alpha 0.05.
        let others = found_near(&series, &[20]);
        assert!(others <= 5, "{others} change points elsewhere in 20 series");
        assert_eq!(indices(&series[0]), vec![20]);
    }

    #[test]
    fn a_flat_series_has_none() {
        let mut false_alarms = 0;
        for seed in 0..40 {
            let x = noisy(&[(30, 100.0)], 5.0, 1000 + seed);
            false_alarms += usize::from(!indices(&x).is_empty());
        }
        // At alpha 0.05, about 2 in 40 by chance; never most of them.
        assert!(false_alarms <= 6, "{false_alarms} of 40 flat series split");
        let x = noisy(&[(30, 100.0)], 5.0, 7);
        assert_eq!(indices(&x), Vec::<usize>::new());
        assert_eq!(indices(&[5.0; 30]), Vec::<usize>::new(), "constant");
    }

    #[test]
    fn two_steps_are_found() {
        let series: Vec<Vec<f64>> = (0..10)
            .map(|seed| noisy(&[(15, 100.0), (15, 140.0), (15, 90.0)], 5.0, 50 + seed))
            .collect();
        let others = found_near(&series, &[15, 30]);
        assert!(others <= 4, "{others} change points elsewhere in 10 series");
    }

    #[test]
    fn segments_hold_three_values_or_more() {
        // A single outlier at the end, and a step two values before the end: no segment of
        // fewer than 3 values, so neither is a change point.
        let mut x = vec![10.0; 20];
        x.push(50.0);
        assert_eq!(indices(&x), Vec::<usize>::new());
        let mut x = noisy(&[(20, 100.0)], 1.0, 3);
        x.extend([200.0, 200.0]);
        assert!(
            indices(&x).iter().all(|&i| i <= x.len() - 3),
            "{:?}",
            indices(&x)
        );
        assert_eq!(indices(&[1.0, 2.0, 3.0, 4.0, 5.0]), Vec::<usize>::new());
    }

    #[test]
    fn the_same_series_gives_the_same_answer() {
        let x = noisy(&[(20, 100.0), (20, 108.0)], 6.0, 11);
        let o = Options::for_alpha(0.05);
        assert_eq!(change_points(&x, &o), change_points(&x, &o));
    }
}
