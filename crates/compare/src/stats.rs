//! The statistics of a comparison: a group's median and spread, and the two-sided
//! Mann-Whitney U test, exact for small groups.
//!
//! Why Mann-Whitney: a rank test assumes no distribution shape, which fits latencies and
//! rates measured a handful of times (hyperfine reports Welch's t-test for the same
//! purpose; critcmp a confidence band). Its exact distribution also says what a group
//! size can ever show: 3 runs against 3 can never give p < 0.05 (the smallest two-sided
//! p is 0.10), 4 against 4 can (0.029) — [`smallest_p`] and [`smallest_group`].
//!
//! Runs of interleaved variants (`kiln run --variant`) are compared round by round
//! instead: [`signed_rank`], the Wilcoxon signed-rank test of the rounds' differences
//! (exact for small n), and [`hodges_lehmann`], the median of the differences' Walsh
//! averages with its exact distribution-free confidence interval. A round's runs ran back
//! to back, so a machine that drifts between rounds moves both of them: the differences
//! cancel it, where Mann-Whitney would see it as a change. 6 rounds are the fewest that
//! can reach p < 0.05 (the smallest two-sided p of n rounds is 2/2^n).
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

/// Number of subsets of the ranks 1..=n giving each signed-rank statistic W+
/// (`counts[w]`, the sum of the ranks of positive differences).
fn signed_rank_counts(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut c = vec![0.0; max + 1];
    c[0] = 1.0;
    for k in 1..=n {
        for w in (k..=max).rev() {
            c[w] += c[w - k];
        }
    }
    c
}

/// One-sided probability P(W+ ≤ w) for `n` non-zero differences without ties under the
/// null hypothesis (each difference's sign a fair coin).
pub fn signed_rank_cdf(n: usize, w: usize) -> f64 {
    let c = signed_rank_counts(n);
    let total: f64 = c.iter().sum();
    c[..=w.min(c.len() - 1)].iter().sum::<f64>() / total
}

/// Rounds up to this many get the exact distribution (by counts without ties, by
/// enumerating the signs with them).
const SIGNED_EXACT_UP_TO: usize = 50;
const SIGNED_ENUMERATE_UP_TO: usize = 20;

/// Two-sided Wilcoxon signed-rank p-value for paired differences `d` (zeros dropped, as
/// Wilcoxon did; tied magnitudes get their mean rank): exact for up to 50 differences
/// without ties and 20 with, the normal approximation (tie-corrected) beyond.
pub fn signed_rank(d: &[f64]) -> f64 {
    let d: Vec<f64> = d
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x != 0.0)
        .collect();
    let n = d.len();
    if n == 0 {
        return 1.0;
    }
    let mags: Vec<f64> = d.iter().map(|x| x.abs()).collect();
    let r = ranks(&mags);
    let w: f64 = r
        .iter()
        .zip(&d)
        .filter(|(_, x)| **x > 0.0)
        .map(|(r, _)| r)
        .sum();
    let ties = r.iter().any(|x| x.fract() != 0.0) || {
        let mut s = mags.clone();
        s.sort_by(f64::total_cmp);
        s.windows(2).any(|p| p[0] == p[1])
    };
    if !ties && n <= SIGNED_EXACT_UP_TO {
        let c = signed_rank_counts(n);
        let total: f64 = c.iter().sum();
        let w = w.round() as usize;
        let lo = c[..=w].iter().sum::<f64>() / total;
        let hi = c[w..].iter().sum::<f64>() / total;
        return (2.0 * lo.min(hi)).min(1.0);
    }
    if n <= SIGNED_ENUMERATE_UP_TO {
        // Every assignment of signs to the (mid)ranks, in half-ranks to stay integral.
        let twice: Vec<u64> = r.iter().map(|x| (x * 2.0).round() as u64).collect();
        let obs = (w * 2.0).round() as u64;
        let (mut le, mut ge) = (0u64, 0u64);
        for mask in 0u64..(1 << n) {
            let s: u64 = (0..n)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| twice[i])
                .sum();
            le += u64::from(s <= obs);
            ge += u64::from(s >= obs);
        }
        let total = (1u64 << n) as f64;
        return (2.0 * le.min(ge) as f64 / total).min(1.0);
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let var: f64 = r.iter().map(|x| x * x).sum::<f64>() / 4.0;
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((w - mean).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// The smallest two-sided p-value the signed-rank test can give for `n` rounds: 2/2^n.
pub fn smallest_paired_p(n: usize) -> f64 {
    (2.0 / 2f64.powi(n.min(1000) as i32)).min(1.0)
}

/// The fewest rounds whose differences can show a change at `alpha` (6 at 0.05, 8 at
/// 0.01).
pub fn smallest_rounds(alpha: f64) -> usize {
    (1..=SIGNED_EXACT_UP_TO)
        .find(|&n| smallest_paired_p(n) <= alpha * (1.0 + 1e-9))
        .unwrap_or(SIGNED_EXACT_UP_TO)
}

/// The Hodges–Lehmann estimate of the differences' centre and its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Shift {
    /// The median of the Walsh averages (each pair's mean, each difference with itself
    /// included).
    pub estimate: f64,
    /// The interval's lower end.
    pub low: f64,
    /// Its upper end.
    pub high: f64,
    /// Its exact coverage: at least the level asked for when the rounds allow it (0.969
    /// for 6 rounds at 0.95), less when they cannot (0.75 for 3 rounds).
    pub coverage: f64,
}

/// The Hodges–Lehmann estimate of `d` (non-finite values left out) with the exact
/// distribution-free interval of level `1 - alpha` that inverts the signed-rank test
/// (Hollander and Wolfe, "Nonparametric Statistical Methods", 3.2): the Walsh averages
/// from the (C+1)-th to the (M-C)-th, C the largest w with P(W+ ≤ w) ≤ alpha/2. With
/// too few values for that level (5 or fewer at 0.95) the interval is the Walsh
/// averages' whole range, and `coverage` says how little that is. `None` without values.
pub fn hodges_lehmann(d: &[f64], alpha: f64) -> Option<Shift> {
    let d: Vec<f64> = d.iter().copied().filter(|x| x.is_finite()).collect();
    let n = d.len();
    if n == 0 {
        return None;
    }
    let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            walsh.push((d[i] + d[j]) / 2.0);
        }
    }
    walsh.sort_by(f64::total_cmp);
    let m = walsh.len();
    let estimate = median(&walsh)?;
    let c = signed_rank_counts(n.min(SIGNED_EXACT_UP_TO));
    let total: f64 = c.iter().sum();
    // C: the largest w with P(W+ ≤ w) ≤ alpha/2 (0 when even that is more: the whole
    // range, whose coverage 1 - 2/2^n is then below the level).
    let (mut below, mut cut) = (c[0], 0usize);
    for (w, k) in c.iter().enumerate().skip(1) {
        if (below + k) / total > alpha / 2.0 * (1.0 + 1e-9) || w >= m / 2 {
            break;
        }
        below += k;
        cut = w;
    }
    Some(Shift {
        estimate,
        low: walsh[cut],
        high: walsh[m - 1 - cut],
        coverage: 1.0 - 2.0 * below / total,
    })
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

    /// The slow model of the signed-rank test: every assignment of signs to the
    /// differences' magnitudes, the statistic recomputed from scratch each time.
    fn brute_signed(d: &[f64]) -> f64 {
        let d: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
        let n = d.len();
        let stat = |signs: &[f64]| -> f64 {
            // W+: the sum over positive values of 1 + the number of smaller magnitudes
            // (+ half the equal ones besides itself).
            (0..n)
                .filter(|&i| signs[i] > 0.0)
                .map(|i| {
                    let a = d[i].abs();
                    let smaller = d.iter().filter(|x| x.abs() < a).count() as f64;
                    let equal = d.iter().filter(|x| x.abs() == a).count() as f64;
                    smaller + (equal + 1.0) / 2.0
                })
                .sum()
        };
        let obs = stat(&d.iter().map(|x| x.signum()).collect::<Vec<_>>());
        let (mut le, mut ge) = (0u32, 0u32);
        for mask in 0u32..(1 << n) {
            let signs: Vec<f64> = (0..n)
                .map(|i| if mask & (1 << i) != 0 { 1.0 } else { -1.0 })
                .collect();
            let w = stat(&signs);
            le += u32::from(w <= obs + 1e-9);
            ge += u32::from(w >= obs - 1e-9);
        }
        (2.0 * le.min(ge) as f64 / (1u64 << n) as f64).min(1.0)
    }

    fn lcg(seed: u64) -> impl FnMut() -> f64 {
        let mut rng = seed;
        move || {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    #[test]
    fn signed_rank_matches_enumeration() {
        let mut next = lcg(777);
        for n in 1..=8 {
            for shift in [0.0, 0.2, 0.6] {
                for rounded in [false, true] {
                    let d: Vec<f64> = (0..n)
                        .map(|_| {
                            let v = next() - 0.5 + shift;
                            // Rounded to one decimal: ties and zeros.
                            if rounded {
                                (v * 10.0).round() / 10.0
                            } else {
                                v
                            }
                        })
                        .collect();
                    let (p, q) = (signed_rank(&d), brute_signed(&d));
                    assert!((p - q).abs() < 1e-12, "{d:?}: {p} vs {q}");
                }
            }
        }
    }

    /// The usual table of critical values of the signed-rank statistic (two-tailed,
    /// α = 0.05; e.g. Wilcoxon, Katti and Wilcox, 1970): the largest min(W+, W-) still
    /// significant — none for 5 rounds, 0 for 6, 2 for 7, 3 for 8, 5 for 9, 8 for 10,
    /// 13 for 12, 25 for 15, 52 for 20.
    #[test]
    fn signed_rank_critical_values_match_the_published_table() {
        for (n, crit) in [
            (6usize, 0usize),
            (7, 2),
            (8, 3),
            (9, 5),
            (10, 8),
            (12, 13),
            (15, 25),
            (20, 52),
        ] {
            assert!(2.0 * signed_rank_cdf(n, crit) <= 0.05, "n={n} W={crit}");
            assert!(
                2.0 * signed_rank_cdf(n, crit + 1) > 0.05,
                "n={n} W={}",
                crit + 1
            );
        }
        assert!(2.0 * signed_rank_cdf(5, 0) > 0.05);
        assert_eq!(smallest_rounds(0.05), 6);
        assert_eq!(smallest_rounds(0.01), 8);
        assert!((smallest_paired_p(6) - 1.0 / 32.0).abs() < 1e-15);
        // Six rounds all one way reach it; a drift common to both sides of a round does
        // not matter, only the differences do.
        assert!((signed_rank(&[0.1, 0.2, 0.15, 0.12, 0.3, 0.11]) - 1.0 / 32.0).abs() < 1e-15);
        assert!(signed_rank(&[0.1, -0.2, 0.15, -0.12, 0.3, -0.11]) > 0.5);
        // Past the exact range (a tie among 30 differences), the normal approximation
        // stays close to the exact p of nearly the same differences.
        let d: Vec<f64> = (1..=30)
            .map(|i| i as f64 * if i % 4 == 0 { -1.0 } else { 1.0 })
            .collect();
        let exact = signed_rank(&d);
        let mut tied = d.clone();
        tied[29] = 29.0;
        let approx = signed_rank(&tied);
        assert!(
            exact < 0.05 && (exact - approx).abs() < 0.01 * 2.0,
            "{exact} {approx}"
        );
    }

    /// The interval inverts the test: a shift just inside it is not rejected at alpha, one
    /// just outside is (the definition, checked by the slow model).
    #[test]
    fn hodges_lehmann_interval_inverts_the_test() {
        let d = [1.0, 2.0, 3.0];
        let s = hodges_lehmann(&d, 0.05).unwrap();
        assert_eq!((s.estimate, s.low, s.high), (2.0, 1.0, 3.0));
        assert!(
            (s.coverage - 0.75).abs() < 1e-12,
            "too few values: the whole range, 1 - 2/8"
        );
        let mut next = lcg(99);
        for n in 6..=10 {
            for alpha in [0.05, 0.1] {
                let d: Vec<f64> = (0..n).map(|_| next() * 2.0 - 0.7).collect();
                let s = hodges_lehmann(&d, alpha).unwrap();
                assert!(s.low <= s.estimate && s.estimate <= s.high);
                assert!(s.coverage >= 1.0 - alpha - 1e-12, "n={n}: {}", s.coverage);
                let moved = |t: f64| d.iter().map(|x| x - t).collect::<Vec<_>>();
                let eps = 1e-9;
                let reject = |t: f64| brute_signed(&moved(t)) <= alpha;
                assert!(!reject(s.low + eps) && !reject(s.high - eps), "n={n} {s:?}");
                assert!(
                    reject(s.low - eps) && reject(s.high + eps),
                    "n={n} {s:?} {d:?} {} {}",
                    brute_signed(&moved(s.low - eps)),
                    brute_signed(&moved(s.high + eps))
                );
            }
        }
        // n = 6 at 0.95: the widest the rounds allow, 1 - 2/64.
        let s = hodges_lehmann(&[5.0, 1.0, 3.0, 2.0, 4.0, 6.0], 0.05).unwrap();
        assert_eq!((s.estimate, s.low, s.high), (3.5, 1.0, 6.0));
        assert!((s.coverage - (1.0 - 2.0 / 64.0)).abs() < 1e-12);
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
