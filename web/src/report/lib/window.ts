// The figures of a window (DOM-free): what the run's headline says of the measurement,
// computed the same way for any window from the stored per-second series and latency
// histograms. A row belongs to a window when the middle of its interval lies in it, as
// the headline figures count seconds (crates/run/src/headline.rs); rates are operations
// over seconds, CPU is time over seconds, latency percentiles are those of the window's
// seconds' histograms merged (HdrHistogram's value at the quantile), never a mean of
// per-second percentiles.
import { CategorySeries, LatencySeconds, PerSecond, Table } from '../data.js';
import { rowStart, typicalStep } from './intervals.js';

/** Rows of a table inside window w: [row index, interval length ns]. */
export function rowsIn(time: ArrayLike<number>, w: [number, number]): [number, number][] {
  const step = typicalStep(time);
  const out: [number, number][] = [];
  for (let i = 0; i < time.length; i++) {
    const s = rowStart(time, i, step);
    const mid = s + (time[i] - s) / 2;
    if (mid >= w[0] && mid < w[1]) out.push([i, time[i] - s]);
  }
  return out;
}

const num = (v: number | null | undefined): v is number => v !== null && v !== undefined && Number.isFinite(v);

/** Σ(value × seconds) over the rows of w with a value, and the seconds of every row of w. */
export function integral(t: Table | undefined, column: string, w: [number, number]): { sum: number; seconds: number; any: boolean } {
  const out = { sum: 0, seconds: 0, any: false };
  const c = t?.columns.find((x) => x.name === column);
  if (!t || !c) return out;
  for (const [i, dt] of rowsIn(t.time, w)) {
    out.seconds += dt / 1e9;
    const v = c.values[i];
    if (num(v)) {
      out.sum += (v * dt) / 1e9;
      out.any = true;
    }
  }
  return out;
}

/** The mean rate of a column over w (per second), as the headline's rate; null without values. */
export function rateIn(t: Table | undefined, column: string, w: [number, number]): number | null {
  const x = integral(t, column, w);
  return x.any && x.seconds > 0 ? x.sum / x.seconds : null;
}

/** The largest value of a column over w. */
export function maxIn(t: Table | undefined, column: string, w: [number, number]): number | null {
  const c = t?.columns.find((x) => x.name === column);
  if (!t || !c) return null;
  let m: number | null = null;
  for (const [i] of rowsIn(t.time, w)) {
    const v = c.values[i];
    if (num(v) && (m === null || v > m)) m = v;
  }
  return m;
}

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
  const counts = mergedCounts(ps, l, w);
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
      if (!points.length || points[points.length - 1][0] < next * 100) points.push([next * 100, ps.values[k]]);
      const halvings = Math.floor(Math.log2(1 / (1 - next)));
      const sum = next + 1 / (ticks * 2 ** (halvings + 1));
      next = sum === next ? 1 : sum;
      if (k === top) break;
    }
  }
  return { points, count: total, max: ps.values[top] };
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
