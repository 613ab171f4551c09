// Sample density over time for the time strip. Samples whose weight is time (off-CPU
// blocks, perf clock periods) cover [t, t + weight]: their weight is spread over the
// buckets they cover, so the strip shows when threads were blocked, not only when the
// blocks were recorded.
import { RawProfile } from './profile.js';

export interface Histogram {
  /** Summed weight per bucket. */
  buckets: Float64Array;
  /** Time span covered, ns since the origin. */
  from: number;
  to: number;
  max: number;
}

/** First and last instant covered by timestamped samples, ns since the origin. */
export function timeSpan(raw: RawProfile, nsPerWeight: number | null = null): [number, number] | null {
  const t = raw.sampleTime;
  if (!t) return null;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < t.length; i++) {
    const x = t[i];
    if (x < 0) continue;
    if (x < lo) lo = x;
    const e = nsPerWeight === null ? x : x + raw.sampleWeight[i] * nsPerWeight;
    if (e > hi) hi = e;
  }
  return lo <= hi ? [lo, hi] : null;
}

export function histogram(raw: RawProfile, n: number, span: [number, number], nsPerWeight: number | null = null): Histogram {
  return histograms(raw, n, span, nsPerWeight, null, 1)[0];
}

/**
 * One histogram per row over the same buckets, each sample counted in the row of its
 * thread (`rowOf[thread]`; -1, or a sample without a thread: in no row). With `rowOf`
 * null every sample is in row 0. One pass over the samples whatever the number of rows:
 * the tracks' activity graphs are drawn from it, bucket for bucket the time strip's.
 */
export function histograms(raw: RawProfile, n: number, span: [number, number], nsPerWeight: number | null, rowOf: Int32Array | null, rows: number): Histogram[] {
  const nb = Math.max(1, n);
  const buckets = new Float64Array(nb * rows);
  const t = raw.sampleTime;
  const th = raw.sampleThread;
  const [from, to] = span;
  const width = Math.max(1, to - from);
  const perNs = nb / width;
  // Whole buckets covered by spread samples: a difference array keeps each sample O(1).
  const diff = new Float64Array((nb + 1) * rows);
  if (t) {
    for (let i = 0; i < t.length; i++) {
      const x = t[i];
      if (x < 0) continue;
      let row = 0;
      if (rowOf) {
        const k = th ? th[i] : -1;
        row = k >= 0 && k < rowOf.length ? rowOf[k] : -1;
        if (row < 0) continue;
      }
      const w = raw.sampleWeight[i];
      const len = nsPerWeight === null ? 0 : w * nsPerWeight * perNs;
      // Outside a span narrower than the profile (a page's zoomed axis): not drawn.
      if (x > to || x + len / perNs < from) continue;
      const o = row * nb;
      const od = row * (nb + 1);
      const a0 = (x - from) * perNs;
      const a = Math.min(nb, Math.max(0, a0));
      const b = Math.min(nb, a0 + len);
      const ka = Math.min(nb - 1, Math.floor(a));
      // The part of a spread sample inside the span.
      const part = len > 1e-9 && (a0 < 0 || a0 + len > nb) ? (w * Math.max(0, b - a)) / len : w;
      if (b - a < 1e-9 || Math.floor(b) === ka || b <= ka + 1) {
        buckets[o + ka] += part;
        continue;
      }
      const density = part / (b - a);
      buckets[o + ka] += density * (ka + 1 - a);
      const kb = Math.min(nb - 1, Math.floor(b));
      if (kb > ka + 1) {
        diff[od + ka + 1] += density;
        diff[od + kb] -= density;
      }
      if (kb > ka) buckets[o + kb] += density * (b - kb);
    }
  }
  const out: Histogram[] = [];
  for (let r = 0; r < rows; r++) {
    const mine = buckets.subarray(r * nb, (r + 1) * nb);
    const od = r * (nb + 1);
    let run = 0;
    let max = 0;
    for (let k = 0; k < nb; k++) {
      run += diff[od + k];
      mine[k] += run;
      if (mine[k] > max) max = mine[k];
    }
    out.push({ buckets: mine, from, to, max });
  }
  return out;
}
