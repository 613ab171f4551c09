//! The statistics of a comparison: a group's median and spread, and the two-sided
//! Mann-Whitney U test, exact for small groups.
//!
//! Why Mann-Whitney: a rank test assumes no distribution shape, which fits latencies and
//! rates measured a handful of times (hyperfine reports Welch's t-test for the same
//! purpose; critcmp a confidence band). Its exact distribution also says what a group
//! size can ever show: 3 runs against 3 can never give p < 0.05 (the smallest two-sided
//! p is 0.10), 4 against 4 can (0.029) — [`smallest_p`] and [`smallest_group`].
use serde::Serialize;

/// One group's values of a figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stat {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Every value, one per run.
    pub values: Vec<f64>,
}

impl Stat {
    /// The statistics of `values` (non-finite values left out); `None` when none is left.
    pub fn of(mut values: Vec<f64>) -> Option<Stat> {
        values.retain(|v| v.is_finite());
        let median = median(&values)?;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Stat {
            median,
            min,
            max,
            values,
        })
    }

    /// Number of runs.
    pub fn n(&self) -> usize {
        self.values.len()
    }

    /// Half the range as a percentage of the median: how far one run of this group
    /// strays from another (0 for a single run, whose noise is unknown).
    pub(crate) fn spread_pct(&self) -> f64 {
        if self.values.len() < 2 || self.median == 0.0 {
            return 0.0;
        }
        (self.max - self.min) / 2.0 / self.median.abs() * 100.0
    }
}

/// The median of the finite values of `v`, `None` when there are none.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// Relative change from `before` to `after`, percent (infinite from zero to non-zero).
pub(crate) fn percent_change(before: f64, after: f64) -> f64 {
    if before != 0.0 {
        (after - before) / before.abs() * 100.0
    } else if after == 0.0 {
        0.0
    } else {
        f64::INFINITY.copysign(after)
    }
}

/// Ranks of `all` (1-based, ties get their mean rank).
fn ranks(all: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..all.len()).collect();
    idx.sort_by(|&a, &b| all[a].total_cmp(&all[b]));
    let mut r = vec![0.0; all.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && all[idx[j + 1]] == all[idx[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for k in &idx[i..=j] {
            r[*k] = mean;
        }
        i = j + 1;
    }
    r
}

/// Number of arrangements of `m` + `n` distinct values giving each U statistic
/// (`counts[u]`), by the recurrence N(u; m, n) = N(u - n; m - 1, n) + N(u; m, n - 1).
fn u_counts(m: usize, n: usize) -> Vec<f64> {
    let max = m * n;
    let mut prev: Vec<Vec<f64>> = (0..=n)
        .map(|_| {
            let mut v = vec![0.0; max + 1];
            v[0] = 1.0;
            v
        })
        .collect();
    for mi in 1..=m {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max + 1]; n + 1];
        cur[0][0] = 1.0;
        for nj in 1..=n {
            for u in 0..=mi * nj {
                let a = if u >= nj { prev[nj][u - nj] } else { 0.0 };
                let b = cur[nj - 1][u];
                cur[nj][u] = a + b;
            }
        }
        prev = cur;
    }
    prev[n].clone()
}

/// Groups up to this size (both) get the exact distribution.
const EXACT_UP_TO: usize = 25;

/// One-sided probability P(U ≤ u) for groups of `m` and `n` distinct values under the
/// null hypothesis (the exact distribution; the tables of Mann and Whitney, 1947).
pub fn exact_cdf(m: usize, n: usize, u: usize) -> f64 {
    let counts = u_counts(m, n);
    let total: f64 = counts.iter().sum();
    counts[..=u.min(m * n)].iter().sum::<f64>() / total
}

/// Two-sided Mann-Whitney U test p-value for samples `a` and `b`: exact for groups of up to
/// 25 without ties, the normal approximation (with tie correction) otherwise.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> f64 {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return 1.0;
    }
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let r = ranks(&all);
    let ra: f64 = r[..m].iter().sum();
    let u = ra - (m * (m + 1)) as f64 / 2.0;
    let mut sorted = all.clone();
    sorted.sort_by(f64::total_cmp);
    let ties = sorted.windows(2).any(|w| w[0] == w[1]);
    if !ties && m <= EXACT_UP_TO && n <= EXACT_UP_TO {
        let counts = u_counts(m, n);
        let total: f64 = counts.iter().sum();
        let u = u.round() as usize;
        let lo: f64 = counts[..=u].iter().sum::<f64>() / total;
        let hi: f64 = counts[u..].iter().sum::<f64>() / total;
        return (2.0 * lo.min(hi)).min(1.0);
    }
    let (mf, nf) = (m as f64, n as f64);
    let nt = mf + nf;
    let mean = mf * nf / 2.0;
    let mut tie_sum = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        tie_sum += t * t * t - t;
        i = j + 1;
    }
    let var = mf * nf / 12.0 * ((nt + 1.0) - tie_sum / (nt * (nt - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// The smallest two-sided p-value the exact test can give for group sizes `m` and `n`:
/// two over the number of ways to split `m + n` runs into the groups.
pub fn smallest_p(m: usize, n: usize) -> f64 {
    if m == 0 || n == 0 {
        return 1.0;
    }
    // C(m + n, m), in floating point (exact well past any group kiln sees).
    let mut ways = 1.0f64;
    for i in 1..=m.min(n) {
        ways = ways * (m + n + 1 - i) as f64 / i as f64;
    }
    (2.0 / ways).min(1.0)
}

/// The smallest equal group size whose runs can show a difference at `alpha` (4 at
/// 0.05, 5 at 0.01): what `--repeat` should be.
pub fn smallest_group(alpha: f64) -> usize {
    (2..=EXACT_UP_TO)
        .find(|&k| smallest_p(k, k) <= alpha)
        .unwrap_or(EXACT_UP_TO)
}

/// Upper tail of the standard normal distribution (Abramowitz and Stegun 7.1.26 erfc).
fn normal_sf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    0.5 * poly * (-x * x).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slow, obviously correct model: enumerate every way to pick which of the
    /// `m + n` distinct ranks belong to the first group.
    fn brute_p(a: &[f64], b: &[f64]) -> f64 {
        let (m, n) = (a.len(), b.len());
        let all: Vec<f64> = a.iter().chain(b).copied().collect();
        let r = ranks(&all);
        let u_obs = r[..m].iter().sum::<f64>() - (m * (m + 1)) as f64 / 2.0;
        let total = m + n;
        let (mut le, mut ge, mut count) = (0u64, 0u64, 0u64);
        for mask in 0u32..(1 << total) {
            if mask.count_ones() as usize != m {
                continue;
            }
            let ra: usize = (0..total)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| i + 1)
                .sum();
            let u = ra as f64 - (m * (m + 1)) as f64 / 2.0;
            count += 1;
            if u <= u_obs {
                le += 1;
            }
            if u >= u_obs {
                ge += 1;
            }
        }
        (2.0 * (le.min(ge) as f64) / count as f64).min(1.0)
    }

    #[test]
    fn exact_test_matches_enumeration() {
        let mut rng = 12345u64;
        let mut next = || {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        for m in 1..=6 {
            for n in 1..=6 {
                for shift in [0.0, 0.3, 1.0] {
                    let a: Vec<f64> = (0..m).map(|_| next()).collect();
                    let b: Vec<f64> = (0..n).map(|_| next() + shift).collect();
                    let (p, q) = (mann_whitney(&a, &b), brute_p(&a, &b));
                    assert!((p - q).abs() < 1e-12, "m={m} n={n}: {p} vs {q}");
                }
            }
        }
    }

    /// Mann and Whitney (1947), "On a test of whether one of two random variables is
    /// stochastically larger than the other", Table I: P(U ≤ u) for small groups, to the
    /// three decimals printed there.
    #[test]
    fn exact_probabilities_match_the_published_table() {
        let table: &[(usize, usize, &[f64])] = &[
            (3, 3, &[0.050, 0.100, 0.200, 0.350, 0.500]),
            (
                4,
                4,
                &[
                    0.014, 0.029, 0.057, 0.100, 0.171, 0.243, 0.343, 0.443, 0.557,
                ],
            ),
            (
                5,
                5,
                &[
                    0.004, 0.008, 0.016, 0.028, 0.048, 0.075, 0.111, 0.155, 0.210, 0.274, 0.345,
                    0.421, 0.500,
                ],
            ),
            (3, 5, &[0.018, 0.036, 0.071, 0.125, 0.196, 0.286, 0.393]),
        ];
        for (m, n, ps) in table {
            for (u, want) in ps.iter().enumerate() {
                let got = exact_cdf(*m, *n, u);
                assert!(
                    (got - want).abs() < 0.0005 + 1e-12,
                    "m={m} n={n} U={u}: {got:.4}, the table says {want}"
                );
            }
        }
    }

    /// The usual table of critical values of U (two-tailed, α = 0.05): the largest U
    /// still significant for equal groups of n: none for 3, 0 for 4, 2 for 5, 5 for 6,
    /// 13 for 8, 23 for 10.
    #[test]
    fn critical_values_match_the_published_table() {
        for (n, crit) in [(4, 0usize), (5, 2), (6, 5), (8, 13), (10, 23)] {
            assert!(2.0 * exact_cdf(n, n, crit) <= 0.05, "n={n} U={crit}");
            assert!(
                2.0 * exact_cdf(n, n, crit + 1) > 0.05,
                "n={n} U={}",
                crit + 1
            );
        }
        assert!(
            2.0 * exact_cdf(3, 3, 0) > 0.05,
            "3 vs 3 has no critical value"
        );
    }

    #[test]
    fn what_group_sizes_can_show() {
        assert!((smallest_p(3, 3) - 0.1).abs() < 1e-12);
        assert!((smallest_p(4, 4) - 2.0 / 70.0).abs() < 1e-12);
        assert_eq!(smallest_group(0.05), 4);
        assert_eq!(smallest_group(0.01), 5);
        assert_eq!(smallest_group(0.1), 3);
        // Fully separated groups reach the smallest p; interleaved ones do not.
        let a = [100.0, 101.0, 102.0, 99.0, 100.5];
        let b = [150.0, 151.0, 149.0, 152.0, 150.5];
        assert!((mann_whitney(&a, &b) - smallest_p(5, 5)).abs() < 1e-12);
        let other = [100.2, 100.8, 99.2, 100.1, 99.9];
        assert!(mann_whitney(&a, &other) > 0.2);
    }

    #[test]
    fn medians_and_spreads() {
        let s = Stat::of(vec![3.0, 1.0, f64::NAN, 2.0, 10.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n()), (2.5, 1.0, 10.0, 4));
        assert!((s.spread_pct() - 180.0).abs() < 1e-9);
        assert!(Stat::of(vec![f64::NAN]).is_none());
        assert_eq!(Stat::of(vec![5.0]).unwrap().spread_pct(), 0.0);
        assert_eq!(percent_change(0.0, 0.0), 0.0);
        assert_eq!(percent_change(200.0, 150.0), -25.0);
    }
}
