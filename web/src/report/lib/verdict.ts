// The judgement of a window of the comparison page (DOM-free): each run's figures over the
// same seconds of its measurement, and every figure's verdict, by the rules `kiln compare
// NAME@START-END` decides them with. A port of crates/compare: stats.rs (medians, the exact
// Mann-Whitney U test, the Wilcoxon signed-rank test and the Hodges–Lehmann interval),
// verdict.rs (improved / regressed / no change / cannot tell and their words), figures.rs
// (settings, outcomes, context; a rate held or not), window.rs (a run's headline over a
// span of seconds) and the rows and overall line of lib.rs. The same arithmetic in the
// same order, so that the page and the command agree to the last digit they print
// (crates/cli/tests/report.rs checks them against each other on real runs, and
// tests/verdicts.test.ts holds `judgeFigures` to the words kiln compare says of the inputs
// in tests/fixtures/compare-verdicts.json, written by crates/compare/tests/web_verdicts.rs).
// One difference of input, not of rule: a second's latency histogram is placed by the load
// series' time of that second (the page's copy of the log, kept only when the log's
// seconds are the load's, within 2 ms), where the command reads the log's own timestamps.
// Not ported: the function tables and the profile's movers (they need the profiles: the
// command gives them), `--fail-if` gates, and the noise floor of the baseline's history
// (a window never has one: kiln compare takes history only for whole measurements).
import { BeamSeconds, ColumnNames, Judging, PerSecond, Table } from '../data.js';
import { integral, isTable, maxIn, overlapIn } from './figures.js';
import { percentilesIn } from './window.js';

// ---------------------------------------------------------------- stats.rs

/** One group's values of a figure (`Stat`). */
export interface Stat {
  median: number;
  min: number;
  max: number;
  values: number[];
}

const byValue = (a: number, b: number): number => (a < b ? -1 : a > b ? 1 : 0);

/** The median of the finite values, null when there are none. */
export function median(v: number[]): number | null {
  const s = v.filter((x) => Number.isFinite(x)).sort(byValue);
  const n = s.length;
  if (!n) return null;
  return n % 2 === 1 ? s[n >> 1] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/** The statistics of the finite values, null when none is left. */
export function statOf(values: number[]): Stat | null {
  const v = values.filter((x) => Number.isFinite(x));
  const m = median(v);
  if (m === null) return null;
  return { median: m, min: Math.min(...v), max: Math.max(...v), values: v };
}

/** Half the range as a percentage of the median (0 for a single run). */
export function spreadPct(s: Stat): number {
  if (s.values.length < 2 || s.median === 0) return 0;
  return ((s.max - s.min) / 2 / Math.abs(s.median)) * 100;
}

/** Relative change, percent (infinite from zero to non-zero). */
export function percentChange(before: number, after: number): number {
  if (before !== 0) return ((after - before) / Math.abs(before)) * 100;
  if (after === 0) return 0;
  return after > 0 ? Infinity : -Infinity;
}

const sum = (v: number[], from = 0, to = v.length): number => {
  let s = 0;
  for (let i = from; i < to; i++) s += v[i];
  return s;
};

/** Ranks (1-based, ties their mean rank). */
function ranks(all: number[]): number[] {
  const idx = all.map((_, i) => i).sort((a, b) => byValue(all[a], all[b]));
  const r = new Array<number>(all.length).fill(0);
  let i = 0;
  while (i < idx.length) {
    let j = i;
    while (j + 1 < idx.length && all[idx[j + 1]] === all[idx[i]]) j++;
    const mean = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) r[idx[k]] = mean;
    i = j + 1;
  }
  return r;
}

/** Arrangements of m + n distinct values giving each U. */
function uCounts(m: number, n: number): number[] {
  const max = m * n;
  let prev: number[][] = Array.from({ length: n + 1 }, () => {
    const v = new Array<number>(max + 1).fill(0);
    v[0] = 1;
    return v;
  });
  for (let mi = 1; mi <= m; mi++) {
    const cur: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(max + 1).fill(0));
    cur[0][0] = 1;
    for (let nj = 1; nj <= n; nj++) {
      for (let u = 0; u <= mi * nj; u++) cur[nj][u] = (u >= nj ? prev[nj][u - nj] : 0) + cur[nj - 1][u];
    }
    prev = cur;
  }
  return prev[n];
}

const EXACT_UP_TO = 25;

/** Two-sided Mann-Whitney p: exact up to 25 a side without ties, else normal (tie-corrected). */
export function mannWhitney(a: number[], b: number[]): number {
  const m = a.length;
  const n = b.length;
  if (!m || !n) return 1;
  const all = [...a, ...b];
  const r = ranks(all);
  const u = sum(r, 0, m) - (m * (m + 1)) / 2;
  const sorted = [...all].sort(byValue);
  const ties = sorted.some((x, i) => i > 0 && sorted[i - 1] === x);
  if (!ties && m <= EXACT_UP_TO && n <= EXACT_UP_TO) {
    const c = uCounts(m, n);
    const total = sum(c);
    const k = Math.round(u);
    return Math.min(2 * Math.min(sum(c, 0, k + 1) / total, sum(c, k) / total), 1);
  }
  const nt = m + n;
  let tieSum = 0;
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[i]) j++;
    const t = j - i + 1;
    tieSum += t * t * t - t;
    i = j + 1;
  }
  const v = ((m * n) / 12) * (nt + 1 - tieSum / (nt * (nt - 1)));
  if (v <= 0) return 1;
  const z = Math.max(Math.abs(u - (m * n) / 2) - 0.5, 0) / Math.sqrt(v);
  return Math.min(2 * normalSf(z), 1);
}

/** The smallest two-sided p the exact test gives for groups of m and n. */
export function smallestP(m: number, n: number): number {
  if (!m || !n) return 1;
  let ways = 1;
  for (let i = 1; i <= Math.min(m, n); i++) ways = (ways * (m + n + 1 - i)) / i;
  return Math.min(2 / ways, 1);
}

/** The smallest equal group size that can show a difference at alpha. */
export function smallestGroup(alpha: number): number {
  for (let k = 2; k <= EXACT_UP_TO; k++) if (smallestP(k, k) <= alpha) return k;
  return EXACT_UP_TO;
}

function signedRankCounts(n: number): number[] {
  const max = (n * (n + 1)) / 2;
  const c = new Array<number>(max + 1).fill(0);
  c[0] = 1;
  for (let k = 1; k <= n; k++) for (let w = max; w >= k; w--) c[w] += c[w - k];
  return c;
}

const SIGNED_EXACT_UP_TO = 50;
const SIGNED_ENUMERATE_UP_TO = 20;

/** Two-sided Wilcoxon signed-rank p of paired differences (zeros dropped). */
export function signedRank(diffs: number[]): number {
  const d = diffs.filter((x) => Number.isFinite(x) && x !== 0);
  const n = d.length;
  if (!n) return 1;
  const mags = d.map((x) => Math.abs(x));
  const r = ranks(mags);
  let w = 0;
  r.forEach((x, i) => {
    if (d[i] > 0) w += x;
  });
  const s = [...mags].sort(byValue);
  const ties = r.some((x) => x % 1 !== 0) || s.some((x, i) => i > 0 && s[i - 1] === x);
  if (!ties && n <= SIGNED_EXACT_UP_TO) {
    const c = signedRankCounts(n);
    const total = sum(c);
    const k = Math.round(w);
    return Math.min(2 * Math.min(sum(c, 0, k + 1) / total, sum(c, k) / total), 1);
  }
  if (n <= SIGNED_ENUMERATE_UP_TO) {
    const twice = r.map((x) => Math.round(x * 2));
    const obs = Math.round(w * 2);
    let le = 0;
    let ge = 0;
    for (let mask = 0; mask < 2 ** n; mask++) {
      let t = 0;
      for (let i = 0; i < n; i++) if (mask & (1 << i)) t += twice[i];
      if (t <= obs) le++;
      if (t >= obs) ge++;
    }
    return Math.min((2 * Math.min(le, ge)) / 2 ** n, 1);
  }
  const mean = (n * (n + 1)) / 4;
  const v = sum(r.map((x) => x * x)) / 4;
  if (v <= 0) return 1;
  const z = Math.max(Math.abs(w - mean) - 0.5, 0) / Math.sqrt(v);
  return Math.min(2 * normalSf(z), 1);
}

/** The smallest two-sided p of n rounds: 2/2^n. */
export const smallestPairedP = (n: number): number => Math.min(2 / 2 ** Math.min(n, 1000), 1);

/** The fewest rounds that can show a change at alpha (6 at 0.05). */
export function smallestRounds(alpha: number): number {
  for (let n = 1; n <= SIGNED_EXACT_UP_TO; n++) if (smallestPairedP(n) <= alpha * (1 + 1e-9)) return n;
  return SIGNED_EXACT_UP_TO;
}

export interface Shift {
  estimate: number;
  low: number;
  high: number;
  coverage: number;
}

/** The Hodges–Lehmann estimate of d with its exact interval at 1 - alpha (stats.rs). */
export function hodgesLehmann(values: number[], alpha: number): Shift | null {
  const d = values.filter((x) => Number.isFinite(x));
  const n = d.length;
  if (!n) return null;
  const walsh: number[] = [];
  for (let i = 0; i < n; i++) for (let j = i; j < n; j++) walsh.push((d[i] + d[j]) / 2);
  walsh.sort(byValue);
  const m = walsh.length;
  const estimate = median(walsh)!;
  const c = signedRankCounts(Math.min(n, SIGNED_EXACT_UP_TO));
  const total = sum(c);
  let below = c[0];
  let cut = 0;
  for (let w = 1; w < c.length; w++) {
    if ((below + c[w]) / total > (alpha / 2) * (1 + 1e-9) || w >= Math.floor(m / 2)) break;
    below += c[w];
    cut = w;
  }
  return { estimate, low: walsh[cut], high: walsh[m - 1 - cut], coverage: 1 - (2 * below) / total };
}

/** Upper tail of the standard normal (Abramowitz and Stegun 7.1.26). */
function normalSf(z: number): number {
  const x = z / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return 0.5 * poly * Math.exp(-x * x);
}

// ---------------------------------------------------------------- verdict.rs

export interface Rules {
  alpha: number;
  threshold_pct: number;
}

const significant = (r: Rules, p: number): boolean => p <= r.alpha * (1 + 1e-9);

export type Unsure =
  | { why: 'one_run'; need: number }
  | { why: 'too_few_repeats'; smallest_p: number; need: number; measured: [number, number] }
  | { why: 'noise'; spread_pct: number }
  | { why: 'not_comparable'; reason: string };

export type Verdict =
  | { verdict: 'improved' }
  | { verdict: 'regressed' }
  | { verdict: 'no_change'; quiet: 'within_noise' | 'below_threshold' | 'below_resolution' }
  | { verdict: 'cannot_tell'; unsure: Unsure };

export interface Change {
  percent: number;
  p: number | null;
  paired: { rounds: number; ci_pct: [number, number]; coverage: number } | null;
  verdict: Verdict;
}

/**
 * `x` to `d` decimals as Rust's `{:.d}` writes it: the exact value rounded, a tie to the
 * even digit (where JavaScript's toFixed rounds it up); `{:+.d}` with `plus`.
 */
export function fixed(x: number, d: number, plus = false): string {
  if (!Number.isFinite(x)) return `${x < 0 ? '-' : plus ? '+' : ''}${Number.isNaN(x) ? 'NaN' : 'inf'}`;
  const neg = x < 0 || Object.is(x, -0);
  const a = Math.abs(x);
  let s = a.toFixed(d);
  // An exact tie is a/2^(d+1) odd (a power of two scales exactly; a*10^d would round).
  const t = a * 2 ** (d + 1);
  if (Number.isInteger(t) && t % 2 === 1 && Math.floor(a * 10 ** d) % 2 === 0) s = (Math.floor(a * 10 ** d) / 10 ** d).toFixed(d);
  return `${neg ? '-' : plus ? '+' : ''}${s}`;
}

export function unsureText(u: Unsure): string {
  switch (u.why) {
    case 'one_run':
      return `one run: noise unknown (kiln run --repeat ${u.need})`;
    case 'too_few_repeats':
      // Groups of one size: more repeats are the remedy. Of two sizes, some runs did not
      // measure the figure: saying "--repeat N" to groups that had N would be wrong.
      if (u.measured[0] !== u.measured[1])
        return `too few repeats: ${u.measured[0]} and ${u.measured[1]} runs measured this figure, which can never reach the alpha (smallest p ${fixed(u.smallest_p, 3)}): each group needs ${u.need} runs that measure it`;
      return `too few repeats: these groups can never reach the alpha (smallest p ${fixed(u.smallest_p, 3)}; --repeat ${u.need} can)`;
    case 'noise':
      return `noise (±${fixed(u.spread_pct, 1)}% run to run) wider than the change`;
    case 'not_comparable':
      return `not comparable: ${u.reason}`;
  }
}

function unsureShort(u: Unsure): string {
  switch (u.why) {
    case 'one_run':
      return 'one run';
    case 'too_few_repeats':
      return 'too few repeats';
    case 'noise':
      return `noise ±${fixed(u.spread_pct, 0)}%`;
    case 'not_comparable':
      return 'not comparable';
  }
}

const WORDS = { improved: 'improved', regressed: 'regressed', no_change: 'no change', cannot_tell: 'cannot tell' } as const;
const QUIET = { within_noise: 'within noise', below_threshold: 'below the threshold', below_resolution: "under the figure's resolution" } as const;

/** The verdict in words: `regressed (p=0.008)`, `no change (within noise, p=0.686)`. */
export function verdictText(c: Change): string {
  const p = c.p === null ? null : `p=${fixed(c.p, 3)}`;
  const v = c.verdict;
  const detail = v.verdict === 'cannot_tell' ? unsureShort(v.unsure) : v.verdict === 'no_change' ? [QUIET[v.quiet], p].filter((x) => x !== null).join(', ') : p;
  return detail === null ? WORDS[v.verdict] : `${WORDS[v.verdict]} (${detail})`;
}

/** The change in words: `+14.0% regressed (p=0.008)`; paired, `+14.0% [+11.2, +16.9] regressed (p=0.031)`. */
export function changeText(c: Change): string {
  const pct = Number.isFinite(c.percent) ? `${fixed(c.percent, 1, true)}%` : 'new';
  const ci = c.paired?.ci_pct;
  if (ci && ci.every((v) => Number.isFinite(v))) return `${pct} [${fixed(ci[0], 1, true)}, ${fixed(ci[1], 1, true)}] ${verdictText(c)}`;
  return `${pct} ${verdictText(c)}`;
}

/** The last rows of verdict.rs's table: p against alpha, the change against the threshold. */
function judge(percent: number, p: number, spread: number, better: Better, rules: Rules): Verdict {
  const big = Math.abs(percent) >= rules.threshold_pct;
  const sig = significant(rules, p);
  if (sig && big) return { verdict: percent > 0 === (better === 'higher') ? 'improved' : 'regressed' };
  if (sig) return { verdict: 'no_change', quiet: 'below_threshold' };
  if (!big) return { verdict: 'no_change', quiet: 'within_noise' };
  return { verdict: 'cannot_tell', unsure: { why: 'noise', spread_pct: spread } };
}

/** The change from `before` to `after` of unpaired groups (`decide`, without a noise floor). */
export function decide(before: Stat, after: Stat, better: Better, rules: Rules, notComparable: string | null): Change {
  const percent = percentChange(before.median, after.median);
  const need = smallestGroup(rules.alpha);
  const cannot = (unsure: Unsure): Change => ({ percent, p: null, paired: null, verdict: { verdict: 'cannot_tell', unsure } });
  if (notComparable !== null) return cannot({ why: 'not_comparable', reason: notComparable });
  const [m, n] = [before.values.length, after.values.length];
  if (m < 2 || n < 2) return cannot({ why: 'one_run', need });
  const smallest = smallestP(m, n);
  if (!significant(rules, smallest)) return cannot({ why: 'too_few_repeats', smallest_p: smallest, need, measured: [m, n] });
  const p = mannWhitney(before.values, after.values);
  const spread = Math.max(spreadPct(before), spreadPct(after));
  return { percent, p, paired: null, verdict: judge(percent, p, spread, better, rules) };
}

/** The change from rounds' pairs (baseline, candidate): Hodges–Lehmann of their log ratios, signed-rank p (`decide_paired`). */
export function decidePaired(all: [number, number][], better: Better, rules: Rules, notComparable: string | null): Change {
  const pairs = all.filter(([b, a]) => Number.isFinite(b) && Number.isFinite(a));
  const ratio = pairs.every(([b, a]) => b > 0 && a > 0);
  const d = pairs.map(([b, a]) => (ratio ? Math.log(a / b) : a - b));
  const base = median(pairs.map((p) => p[0])) ?? 0;
  const asPct = (x: number): number => (ratio ? (Math.exp(x) - 1) * 100 : percentChange(base, base + x));
  const shift = hodgesLehmann(d, rules.alpha);
  const percent = shift ? asPct(shift.estimate) : 0;
  const paired = { rounds: pairs.length, ci_pct: (shift ? [asPct(shift.low), asPct(shift.high)] : [NaN, NaN]) as [number, number], coverage: shift?.coverage ?? 0 };
  const cannot = (unsure: Unsure): Change => ({ percent, p: null, paired, verdict: { verdict: 'cannot_tell', unsure } });
  const need = smallestRounds(rules.alpha);
  if (notComparable !== null) return cannot({ why: 'not_comparable', reason: notComparable });
  const n = pairs.length;
  if (n < 2) return cannot({ why: 'one_run', need });
  if (!significant(rules, smallestPairedP(n))) return cannot({ why: 'too_few_repeats', smallest_p: smallestPairedP(n), need, measured: [n, n] });
  const p = signedRank(d);
  const each = d.map(asPct);
  const spread = (Math.max(...each) - Math.min(...each)) / 2;
  return { percent, p, paired, verdict: judge(percent, p, spread, better, rules) };
}

// ---------------------------------------------------------------- figures.rs

export type Better = 'higher' | 'lower';
export type Role = 'setting' | 'outcome' | 'context';
type Kind = 'set_rate' | 'concurrency' | 'rate' | 'outcome' | 'load_driven' | 'context';

interface FigureDef {
  key: string;
  label: string;
  unit: string;
  better: Better;
  kind: Kind;
  resolution: number;
}

const fig = (key: string, label: string, unit: string, better: Better, kind: Kind, resolution = 0): FigureDef => ({ key, label, unit, better, kind, resolution });

/** The figures a window has, in table order (figures.rs `FIGURES`). */
export const FIGURES: FigureDef[] = [
  fig('set_rate', 'rate set', '/s', 'higher', 'set_rate'),
  fig('concurrency', 'concurrency', '', 'higher', 'concurrency'),
  fig('throughput', 'throughput', '/s', 'higher', 'rate'),
  fig('send_rate', 'send rate', '/s', 'higher', 'rate'),
  fig('p50', 'latency p50', 'us', 'lower', 'outcome'),
  fig('p99', 'latency p99', 'us', 'lower', 'outcome'),
  fig('p999', 'latency p99.9', 'us', 'lower', 'outcome'),
  fig('max', 'latency max', 'us', 'lower', 'outcome'),
  fig('cpu_per_op', 'target CPU per {op}', 'us', 'lower', 'outcome'),
  fig('switches_per_op', 'context switches per {op}', '', 'lower', 'outcome'),
  fig('rss', 'target RSS max', 'bytes', 'lower', 'outcome', 1024 * 1024),
  fig('queue_depth', 'queue depth max', 'msg', 'lower', 'outcome', 1000),
  fig('beam_busy_wait', 'BEAM schedulers busy-waiting (msacc other)', '%', 'lower', 'context', 1),
  fig('beam_check_io', 'BEAM schedulers polling (msacc check_io)', '%', 'lower', 'context', 1),
  fig('target_cpu', 'target CPU', '%', 'lower', 'load_driven'),
  fig('kiln_cpu', 'kiln CPU', '%', 'lower', 'context'),
  fig('kiln_bpf_cpu', 'kiln eBPF CPU', '%', 'lower', 'context'),
  fig('machine_busy', 'machine busy', '%', 'lower', 'context'),
];

/** A set rate counts as held when the load achieved this share of it. */
const HELD_SHARE = 0.97;

export interface Held {
  set: number;
  held: boolean;
  text: string;
}

export function heldOf(set: number, achieved: number): Held {
  const held = achieved >= set * HELD_SHARE;
  const shortfall = Math.min(percentChange(set, achieved), 0);
  return { set, held, text: held ? 'held' : `not held (\u2212${fixed(-shortfall, 0)}%)` };
}

/** What a figure of `kind` is between loads set to `base` and `other` (figures.rs `role`). */
export function roleOf(kind: Kind, base: number | null, other: number | null, held: [boolean, boolean], counted: boolean): [Role, string | null] {
  const same = base !== null && other !== null && base === other;
  switch (kind) {
    case 'set_rate':
    case 'concurrency':
      return ['setting', null];
    case 'outcome':
      return ['outcome', null];
    case 'context':
      return ['context', "kiln's own and the machine's"];
    case 'rate':
      if (base === null && other === null) return ['outcome', null];
      if (same && !(held[0] && held[1])) return ['outcome', null];
      if (same) return ['setting', 'the rate was set and held'];
      if (base !== null && other !== null) return ['setting', 'the rates were set'];
      return ['context', 'one load had a set rate, the other none'];
    case 'load_driven':
      if (same && held[0] && held[1]) return ['outcome', null];
      if (base === null && other === null) return counted ? ['context', 'open-ended loads: the target takes what CPU it can'] : ['outcome', null];
      return ['context', 'the loads differ; judge CPU per operation instead'];
  }
}

/** A figure's value as a person reads it (export/mod.rs `format_value`). */
export function formatFigure(v: number, unit: string): string {
  switch (unit) {
    case 'us':
      return v >= 1e6 ? `${fixed(v / 1e6, 2)} s` : v >= 1e3 ? `${fixed(v / 1e3, 2)} ms` : `${fixed(v, 1)} µs`;
    case 'bytes':
      return v >= 2 ** 30 ? `${fixed(v / 2 ** 30, 2)} GiB` : v >= 2 ** 20 ? `${fixed(v / 2 ** 20, 1)} MiB` : `${fixed(v / 1024, 0)} KiB`;
    case '%':
      return `${fixed(v, 1)}%`;
    case '/s':
      return v >= 1e4 ? `${fixed(v / 1e3, 1)}k/s` : `${fixed(v, 0)}/s`;
    case 'msg':
      return v >= 1e6 ? `${fixed(v / 1e6, 2)}M msg` : v >= 1e4 ? `${fixed(v / 1e3, 1)}k msg` : `${fixed(v, 0)} msg`;
    case '':
      if (Number.isInteger(v) && Math.abs(v) < 1e15) return fixed(v, 0);
  }
  return fixed(v, 3);
}

// ---------------------------------------------------------------- window.rs

/** What the page keeps of a run for its windows (crates/report/src/compare.rs `RunSeries`). */
export interface WindowRun {
  group: number;
  id: number | null;
  index: number;
  tables: Table[];
  /** The measurement's end, ns from its start. */
  measure_end: number;
  unit: string;
  rate: number | null;
  concurrency: number | null;
  counted: string | null;
  latency: string | null;
  latency_seconds: PerSecond;
  ebpf?: Table | null;
  beam?: BeamSeconds | null;
}

/**
 * The BEAM's schedulers' busy-wait and polling shares over the seconds of w, % of their
 * awake time: their weights by state summed over those seconds, then the arithmetic of
 * crates/store/src/model.rs `StateSources::states` in its order; null without scheduler
 * time there.
 */
export function beamSharesIn(b: BeamSeconds, w: [number, number]): { other: number; checkIo: number } | null {
  const sum = (per: number[][]): number[] => {
    const out = [0, 0, 0, 0, 0, 0, 0];
    for (let i = 0; i < b.time.length; i++) {
      const len = i > 0 ? (b.time[i] - b.time[i - 1]) / 1e9 : 1;
      const mid = b.time[i] - Math.trunc(len * 0.5e9);
      if (mid >= w[0] && mid < w[1]) per[i].forEach((x, k) => (out[k] += x));
    }
    return out;
  };
  const cpu = sum(b.cpu).map((x) => x * b.cpu_ns);
  const blocked = b.wall_ns ? sum(b.blocked).map((x) => x * b.wall_ns![0]) : null;
  const runnable = b.wall_ns ? sum(b.runnable).map((x) => x * b.wall_ns![1]) : null;
  const all7 = cpu.map((x, k) => x + ((blocked ? blocked[k] : 0) + (runnable ? runnable[k] : 0)));
  const all = all7.reduce((a, x) => a + x, 0);
  // BeamState::ALL: emulator, port, gc, check_io, aux, other, sleep.
  const awake = all - all7[6];
  if (!(all > 0)) return null;
  const pct = (x: number): number => (awake > 0 ? (x * 100) / awake : 0);
  return { other: pct(all7[5]), checkIo: pct(all7[3]) };
}

/** Latency percentiles of the run's per-second histograms over w (the headline's latency, else the first kept), as the run page's (lib/window.ts). */
function latencyIn(r: WindowRun, w: [number, number]): { p50: number; p99: number; p999: number; max: number } | null {
  const ps = r.latency_seconds;
  const l = ps.series.find((x) => x.name === r.latency) ?? ps.series[0];
  return l ? percentilesIn(ps, l.name, w) : null;
}

/** The window of a run: w (ns from the start of its measurement) cut at its end; null when nothing is left. */
export function runWindow(r: WindowRun, w: [number, number]): [number, number] | null {
  const end = Math.min(w[1], r.measure_end);
  return end > w[0] ? [w[0], end] : null;
}

/**
 * A run's figures over w, by key: the rule of crates/store/src/window.rs `figures` (as
 * `kiln compare NAME@START-END` computes them), the one of the run page's window figures
 * (lib/figures.ts): the load's whole seconds whose middle lies in w, the sampler's rates
 * over exactly w, every host's target counted. A key is missing where the window has no
 * value.
 */
export function windowHeadline(r: WindowRun, w: [number, number], names: ColumnNames): Map<string, number> {
  const h = new Map<string, number>();
  const table = (n: string) => r.tables.find((t) => t.name === n);
  const [load, target, machine, kiln] = [table(names.load), table(names.target), table(names.machine), table(names.kiln)];
  const targets = r.tables.filter((t) => isTable(t.name, names.target, names));
  const set = (k: string, v: number | null | undefined): void => {
    if (v !== null && v !== undefined) h.set(k, v);
  };
  set('set_rate', r.rate);
  set('concurrency', r.concurrency);
  let ops: number | null = null;
  if (r.counted) {
    const v = integral(load, r.counted, w);
    if (v.any && v.seconds > 0) {
      set('throughput', v.sum / v.seconds);
      ops = Math.max(Math.round(v.sum), 0);
    }
  }
  const sent = integral(load, names.sent, w);
  if (sent.any && sent.seconds > 0) set('send_rate', sent.sum / sent.seconds);
  const lat = latencyIn(r, w);
  if (lat) for (const k of ['p50', 'p99', 'p999', 'max'] as const) set(k, lat[k]);
  const secs = (w[1] - w[0]) / 1e9;
  const cpuOf = (col: string, ts: Table[]): number | null => {
    const x = overlapIn(ts, col, w);
    return x.any ? x.sum / 100 : null;
  };
  const [user, system] = [cpuOf(names.cpu_user, targets), cpuOf(names.cpu_system, targets)];
  const cpu = user !== null && system !== null ? user + system : null;
  if (cpu !== null && secs > 0) set('target_cpu', (cpu / secs) * 100);
  const [vol, inv] = [overlapIn(targets, names.voluntary, w), overlapIn(targets, names.involuntary, w)];
  const switches = vol.any && inv.any ? Math.max(0, Math.round(vol.sum + inv.sum)) : null;
  const rss = maxIn(target, names.rss, w);
  if (rss !== null && Math.trunc(rss) > 0) set('rss', Math.trunc(rss));
  const k = cpuOf(names.kiln_cpu, kiln ? [kiln] : []);
  if (k !== null && secs > 0) set('kiln_cpu', (k / secs) * 100);
  // kiln's eBPF CPU and the BEAM's states: what the store put on the run's seconds.
  // Whole seconds of the grid, as Rust sums them (crates/store/src/seconds.rs).
  const bpfSum = integral(r.ebpf ?? undefined, 'kiln eBPF cpu', w);
  const bpf = bpfSum.any ? bpfSum.sum / 100 : null;
  if (bpf !== null && secs > 0) set('kiln_bpf_cpu', (bpf / secs) * 100);
  const beam = r.beam ? beamSharesIn(r.beam, w) : null;
  if (beam) {
    set('beam_busy_wait', beam.other);
    set('beam_check_io', beam.checkIo);
  }
  const busy = overlapIn(machine ? [machine] : [], names.busy, w);
  if (busy.any && busy.seconds > 0) set('machine_busy', busy.sum / busy.seconds);
  const depth = maxIn(load, names.queue_depth, w);
  if (depth !== null) set('queue_depth', depth);
  if (cpu !== null && ops !== null && ops > 0) {
    set('cpu_per_op', (cpu * 1e6) / ops);
    if (switches !== null) set('switches_per_op', switches / ops);
  }
  return h;
}

// ---------------------------------------------------------------- lib.rs: rows and the overall line

export interface WindowRow {
  key: string;
  label: string;
  unit: string;
  better: Better;
  role: Role;
  why: string | null;
  groups: (Stat | null)[];
  held: (Held | null)[];
  changes: (Change | null)[];
  /** Each group's cell as kiln compare writes it: `1.2 ms (1.1 ms–1.3 ms)`, `5000/s, held`. */
  cells: string[];
  /** Each change as kiln compare writes it: its verdict for outcomes, the bare change otherwise. */
  changeTexts: string[];
  noise_pct: number;
}

export interface WindowJudgement {
  rows: WindowRow[];
  overall: { verdict: 'improved' | 'regressed' | 'mixed' | 'no_change' | 'cannot_tell'; line: string };
  /** Runs whose measurement ends before the window starts (`kiln compare` would say it names no window). */
  outside: WindowRun[];
}

/** The rate every run of a group was set to, when they agree (figures.rs `set_rate`). */
function setRate(runs: { rate: number | null }[]): number | null {
  const first = runs[0]?.rate ?? null;
  return first !== null && runs.every((r) => r.rate === first) ? first : null;
}

/** A group's cell: the median, with the range when there are repeats; and held or not. */
function cellText(s: Stat | null, unit: string, held: Held | null): string {
  const v = s === null ? '-' : s.values.length > 1 && s.min !== s.max ? `${formatFigure(s.median, unit)} (${formatFigure(s.min, unit)}–${formatFigure(s.max, unit)})` : formatFigure(s.median, unit);
  return held ? `${v}, ${held.text}` : v;
}

/** Group i's change against the first (lib.rs `Setting::change`): paired by round when the runs are, judged only for an outcome. */
function changeOf(f: FigureDef, groups: Map<string, number>[][], stats: (Stat | null)[], i: number, role: Role, j: Judging): Change | null {
  const [b, s] = [stats[0], stats[i]];
  if (i === 0 || !b || !s) return null;
  const rules = { alpha: j.alpha, threshold_pct: j.threshold_pct };
  const pairing = j.paired[i];
  let c: Change;
  if (pairing) {
    const values: [number, number][] = [];
    for (const [x, y] of pairing.pairs) {
      const [vb, va] = [groups[0][x]?.get(f.key), groups[i][y]?.get(f.key)];
      if (vb !== undefined && va !== undefined) values.push([vb, va]);
    }
    c = decidePaired(values, f.better, rules, j.not_comparable);
  } else c = decide(b, s, f.better, rules, j.not_comparable);
  if (Math.abs(s.median - b.median) < f.resolution && (c.verdict.verdict === 'improved' || c.verdict.verdict === 'regressed')) c.verdict = { verdict: 'no_change', quiet: 'below_resolution' };
  if (role !== 'outcome') {
    c.p = null;
    c.verdict = { verdict: 'no_change', quiet: 'within_noise' };
  }
  return c;
}

/** One figure across the groups, null when no run has it (lib.rs `Setting::row`). */
function rowOf(f: FigureDef, groups: Map<string, number>[][], rates: (number | null)[], counted: boolean, op: string, j: Judging): WindowRow | null {
  const stats = groups.map((g) => statOf(g.flatMap((h) => (h.has(f.key) ? [h.get(f.key)!] : []))));
  if (stats.every((s) => s === null)) return null;
  const held = stats.map((s, i) => (f.kind === 'rate' && s && rates[i] !== null ? heldOf(rates[i]!, s.median) : null));
  const last = groups.length - 1;
  const [role, why] = roleOf(f.kind, rates[0], rates[last], [held[0]?.held ?? true, held[last]?.held ?? true], counted);
  const changes = stats.map((_, i) => changeOf(f, groups, stats, i, role, j));
  return {
    key: f.key,
    label: f.label.replace('{op}', op),
    unit: f.unit,
    better: f.better,
    role,
    why,
    groups: stats,
    held,
    changes,
    cells: stats.map((s, i) => cellText(s, f.unit, held[i])),
    changeTexts: changes.map((c) => (!c ? '' : role === 'outcome' ? changeText(c) : Number.isFinite(c.percent) ? `${fixed(c.percent, 1, true)}%` : 'new')),
    noise_pct: stats.reduce((m, s) => (s ? Math.max(m, spreadPct(s)) : m), 0),
  };
}

/**
 * The verdicts of window w (ns from the start of each run's measurement) for the groups
 * `labels` of `runs`: what `kiln compare LABEL@START-END ...` prints, but the function
 * tables and the profile's movers.
 */
export function judgeWindow(labels: string[], runs: WindowRun[], j: Judging, w: [number, number], names: ColumnNames, profile: ProfileClause | null = null): WindowJudgement {
  const outside: WindowRun[] = [];
  const groups: FigureRun[][] = labels.map((_, g) =>
    runs
      .filter((r) => r.group === g)
      .sort((a, b) => a.index - b.index)
      .map((r) => {
        const rw = runWindow(r, w);
        if (!rw) outside.push(r);
        return { unit: r.unit, rate: r.rate, figures: rw ? windowHeadline(r, rw, names) : new Map<string, number>() };
      }),
  );
  return { ...judgeFigures(labels, groups, j, profile), outside };
}

/** A run as its figures are judged: its figures by key (`windowHeadline`'s), the rate its load was set to, its operation's unit. */
export interface FigureRun {
  unit: string;
  rate: number | null;
  figures: Map<string, number>;
}

/**
 * The rows and the overall line of groups of runs, the first the baseline (lib.rs
 * `compare` without its function tables and findings): every figure's row (`Setting::row`)
 * and the sentence at the top (`overall`), with the profile's clause when given.
 * web/tests/verdicts.test.ts holds it to what kiln compare says of the same inputs.
 */
export function judgeFigures(labels: string[], runs: FigureRun[][], j: Judging, profile: ProfileClause | null = null): Omit<WindowJudgement, 'outside'> {
  const groups = runs.map((g) => g.map((r) => r.figures));
  const rates = runs.map(setRate);
  const counted = groups.some((g) => g.some((h) => h.has('throughput')));
  // The first unit any run names (lib.rs `op_unit`; the page's runs say "op" for none).
  const op = runs.flat().find((r) => r.unit && r.unit !== 'op')?.unit ?? 'op';
  const rows = FIGURES.map((f) => rowOf(f, groups, rates, counted, op, j)).filter((r): r is WindowRow => r !== null);
  return { rows, overall: overallOf(labels, rows, profile) };
}

/**
 * What moved in the window's profile, as kiln computed it for the window (lib.rs
 * `profile_clause`): worded for figures that moved, and for figures that did not.
 */
export interface ProfileClause {
  moved: string | null;
  quiet: string | null;
}

/** The sentence at the top (lib.rs `overall`), with what moved in the profile when given. */
export function overallOf(labels: string[], rows: WindowRow[], profile: ProfileClause | null = null): WindowJudgement['overall'] {
  const last = labels.length - 1;
  const [worse, better, same, unsure]: [string[], string[], string[], [string, string][]] = [[], [], [], []];
  for (const r of rows.filter((x) => x.role === 'outcome')) {
    const c = r.changes[last];
    if (!c) continue;
    const p = c.p === null ? '' : ` (p=${fixed(c.p, 3)})`;
    const pct = `${fixed(c.percent, 1, true)}%`;
    const v = c.verdict;
    if (v.verdict === 'regressed') worse.push(`${r.label} ${pct}${p}`);
    else if (v.verdict === 'improved') better.push(`${r.label} ${pct}${p}`);
    else if (v.verdict === 'no_change') same.push(r.label);
    else unsure.push([r.label, unsureText(v.unsure)]);
  }
  const verdict = worse.length && better.length ? 'mixed' : worse.length ? 'regressed' : better.length ? 'improved' : unsure.length ? 'cannot_tell' : 'no_change';
  const word = { improved: 'improved', regressed: 'regressed', mixed: 'mixed', no_change: 'no change beyond noise', cannot_tell: 'cannot tell' }[verdict];
  const parts: string[] = [];
  if (worse.length) parts.push(`worse: ${worse.join(', ')}`);
  if (better.length) parts.push(`better: ${better.join(', ')}`);
  if (same.length) parts.push(`no change: ${same.join(', ')}`);
  if (unsure.length) {
    const reasons = new Set(unsure.map((u) => u[1]));
    parts.push(reasons.size === 1 ? `cannot tell: ${unsure.map((u) => u[0]).join(', ')} (${unsure[0][1]})` : `cannot tell: ${unsure.map(([n, w]) => `${n} (${w})`).join(', ')}`);
  }
  const rate = rows.find((r) => r.key === 'throughput' || r.key === 'send_rate');
  const [hb, ha] = [rate?.held[0], rate?.held[last]];
  if (hb && ha) {
    const [sb, sa] = [formatFigure(hb.set, '/s'), formatFigure(ha.set, '/s')];
    parts.push(hb.set === ha.set && hb.held && ha.held ? `rate ${sb} held in both` : `rate ${sb} ${hb.text} → ${sa} ${ha.text}`);
  }
  const clause = verdict === 'no_change' || verdict === 'cannot_tell' ? profile?.quiet : profile?.moved;
  if (clause) parts.push(clause);
  const [a, b] = [labels[0], labels[last]];
  return { verdict, line: parts.length ? `${b} against ${a}: ${word}. ${parts.join('; ')}` : `${b} against ${a}: ${word}` };
}

/**
 * Which analysis each compared group's changes come from, in the words of kiln compare's
 * note (lib.rs `rounds_note`), `labels` as the command names the groups; for groups
 * compared unpaired (where the command says nothing) the page names the test.
 */
export function analysisNotes(labels: string[], j: Judging): string[] {
  return labels.slice(1).map((l, k) => {
    const i = k + 1;
    const vs = labels.length > 2 ? `${l}: ` : '';
    const p = j.paired[i];
    if (p) {
      const n = p.pairs.length;
      const need = smallestRounds(j.alpha);
      const few = n < need ? `; ${n} rounds can never show a change at alpha ${j.alpha} (smallest p ${fixed(smallestPairedP(n), 3)}): --repeat ${need}` : '';
      // The interval's coverage depends on the number of rounds only.
      const coverage = hodgesLehmann(Array.from({ length: n }, (_, x) => x), j.alpha)?.coverage ?? 0;
      return `${vs}paired by round (interleaved experiment ${p.experiment}, ${n} rounds): Wilcoxon signed-rank test of each round's ratio, the change the Hodges–Lehmann estimate with its exact interval [low, high] (coverage ${fixed(coverage * 100, 1)}%); drift of the machine between rounds cancels${few}`;
    }
    const why = j.unmatched[i];
    if (why) return `${vs}variants of an interleaved experiment, but not paired (${why}): compared as groups (Mann-Whitney)`;
    return `${vs}compared as groups: the exact Mann-Whitney U test of the runs' values`;
  });
}
