// Latency and categories of a window (DOM-free), for lib/figures.ts: the latency
// percentiles are those of the window's seconds' histograms merged (HdrHistogram's value
// at the quantile), never a mean of per-second percentiles; a second is the window's when
// its middle lies in it (`rowsIn`), as for every other figure.
import { CategorySeries, LatencySeconds, PerSecond } from '../data.js';
import { rowsIn } from './intervals.js';

/** Latency percentiles of a window, µs, and how many values they are of. */
export interface WindowPercentiles {
  p50: number;
  p99: number;
  p999: number;
  max: number;
  count: number;
}

/** The last merge of each latency's seconds (the legends and the distribution ask for the same window). */
const lastMerge = new WeakMap<LatencySeconds, { w0: number; w1: number; merged: Float64Array }>();

/** The counts per bucket of a latency's seconds in w, merged (indices into `values`). */
export function mergedCounts(ps: PerSecond, l: LatencySeconds, w: [number, number]): Float64Array {
  const last = lastMerge.get(l);
  if (last && last.w0 === w[0] && last.w1 === w[1] && last.merged.length === ps.values.length) return last.merged;
  const merged = new Float64Array(ps.values.length);
  for (const [i] of rowsIn(l.time, w)) {
    const c = l.counts[i];
    let k = 0;
    for (let j = 0; j + 1 < c.length; j += 2) {
      k += c[j];
      merged[k] += c[j + 1];
    }
  }
  lastMerge.set(l, { w0: w[0], w1: w[1], merged });
  return merged;
}

/** The value at quantile q of merged counts: HdrHistogram's `value_at_quantile`. */
export function valueAt(values: ArrayLike<number>, counts: Float64Array, total: number, q: number): number {
  let want = Math.ceil(q * total);
  if (want < 1) want = 1;
  let run = 0;
  for (let k = 0; k < counts.length; k++) {
    run += counts[k];
    if (run >= want) return values[k];
  }
  return 0;
}

/** Exact percentiles of latency `name` over w; null when the run kept no such seconds or none has a value. */
export function percentilesIn(ps: PerSecond | undefined, name: string, w: [number, number]): WindowPercentiles | null {
  const l = ps?.series.find((x) => x.name === name);
  if (!ps || !l) return null;
  const counts = mergedCounts(ps, l, w);
  let total = 0;
  let top = -1;
  for (let k = 0; k < counts.length; k++) {
    if (counts[k] > 0) {
      total += counts[k];
      top = k;
    }
  }
  if (!total) return null;
  const at = (q: number): number => valueAt(ps.values, counts, total, q);
  return { p50: at(0.5), p99: at(0.99), p999: at(0.999), max: ps.values[top], count: total };
}

/**
 * The percentile curve of latency `name` over w, at the levels HdrHistogram's quantile
 * iteration visits (5 per half of the distance to 100%, as the stored measurement's curve
 * in crates/report/src/latency.rs): about a hundred points whatever the histogram.
 */
export function distributionIn(ps: PerSecond | undefined, name: string, w: [number, number]): { points: [number, number][]; count: number; max: number } | null {
  const l = ps?.series.find((x) => x.name === name);
  if (!ps || !l) return null;
  return curveOf(ps.values, mergedCounts(ps, l, w));
}

/**
 * The percentile curve of latency `name` over several runs' windows merged (a group of
 * repeats, each run over its own window): their buckets added by value, then walked as
 * `distributionIn` walks one run's. Null when no run has a value there.
 */
export function distributionOfRuns(runs: { ps: PerSecond; w: [number, number] }[], name: string): { points: [number, number][]; count: number; max: number } | null {
  const byValue = new Map<number, number>();
  for (const { ps, w } of runs) {
    const l = ps.series.find((x) => x.name === name);
    if (!l) continue;
    mergedCounts(ps, l, w).forEach((c, k) => {
      if (c > 0) byValue.set(ps.values[k], (byValue.get(ps.values[k]) ?? 0) + c);
    });
  }
  const values = [...byValue.keys()].sort((a, b) => a - b);
  return curveOf(values, Float64Array.from(values, (v) => byValue.get(v)!));
}

/** The percentile curve of merged counts over bucket `values` (HdrHistogram's percentile iteration). */
function curveOf(values: ArrayLike<number>, counts: Float64Array): { points: [number, number][]; count: number; max: number } | null {
  let total = 0;
  for (let k = 0; k < counts.length; k++) total += counts[k];
  if (!total) return null;
  const ticks = 5;
  let top = counts.length - 1;
  while (top > 0 && !counts[top]) top--;
  const points: [number, number][] = [];
  let run = 0;
  let next = 0;
  for (let k = 0; k <= top; k++) {
    if (!counts[k]) continue;
    run += counts[k];
    const at = run / total;
    // A bucket gives a point per level it reaches; the last gives one, then 100% (left out).
    while (next < 1 && at >= next) {
      if (!points.length || points[points.length - 1][0] < next * 100) points.push([next * 100, values[k]]);
      const halvings = Math.floor(Math.log2(1 / (1 - next)));
      const sum = next + 1 / (ticks * 2 ** (halvings + 1));
      next = sum === next ? 1 : sum;
      if (k === top) break;
    }
  }
  return { points, count: total, max: values[top] };
}

/**
 * Each category's share of a profile's weight in w, percent (intervals partly inside
 * count by the part inside); null when the window holds none.
 */
export function categorySharesIn(c: CategorySeries, w: [number, number]): number[] | null {
  const sums = c.names.map(() => 0);
  let all = 0;
  for (let k = 0; k + 1 < c.edges.length; k++) {
    const a = c.edges[k];
    const b = c.edges[k + 1];
    const part = (Math.min(b, w[1]) - Math.max(a, w[0])) / (b - a);
    if (!(part > 0)) continue;
    c.values.forEach((vs, i) => {
      const x = vs[k] * (b - a) * part;
      sums[i] += x;
      all += x;
    });
  }
  return all > 0 ? sums.map((x) => (x / all) * 100) : null;
}
