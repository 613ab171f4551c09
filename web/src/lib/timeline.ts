// Sample density over time for the FlameScope-style strip.
import { RawProfile } from './profile.js';

export interface Histogram {
  /** Summed weight per bucket. */
  buckets: Float64Array;
  /** Time span covered, ns since the origin. */
  from: number;
  to: number;
  max: number;
}

export function timeSpan(raw: RawProfile): [number, number] | null {
  const t = raw.sampleTime;
  if (!t) return null;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < t.length; i++) {
    const x = t[i];
    if (x < 0) continue;
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  return lo <= hi ? [lo, hi] : null;
}

export function histogram(raw: RawProfile, n: number, span: [number, number]): Histogram {
  const buckets = new Float64Array(Math.max(1, n));
  const t = raw.sampleTime;
  const [from, to] = span;
  const width = Math.max(1, to - from);
  if (t) {
    for (let i = 0; i < t.length; i++) {
      const x = t[i];
      if (x < 0) continue;
      const k = Math.min(buckets.length - 1, Math.floor(((x - from) / width) * buckets.length));
      buckets[k] += raw.sampleWeight[i];
    }
  }
  let max = 0;
  for (const b of buckets) if (b > max) max = b;
  return { buckets, from, to, max };
}
