// Scales and ticks of the charts (DOM-free): linear with "nice" steps (1, 2, 5 × 10^k),
// logarithmic with decades (and 2, 5 between when the range is short), time in seconds,
// and the "nines" axis of latency percentile plots (50%, 90%, 99%, 99.9%...).

export type ScaleKind = 'linear' | 'log';

export interface Scale {
  kind: ScaleKind;
  min: number;
  max: number;
  /** Value → fraction of the axis (0 at min, 1 at max). */
  frac(v: number): number;
  /** Fraction → value. */
  value(f: number): number;
  ticks: number[];
}

/** A step of 1, 2 or 5 × 10^k close to `span / count`. */
export function niceStep(span: number, count: number): number {
  if (!(span > 0) || !Number.isFinite(span)) return 1;
  const raw = span / Math.max(1, count);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/** A nice step for bytes: 1, 2, 5 × 10^k of KiB, MiB or GiB (ticks read 64 MiB, not 61.0 MiB). */
export function binaryStep(span: number, count: number): number {
  let base = 1;
  while (span / base >= 1024 * 4 && base < 2 ** 50) base *= 1024;
  return niceStep(span / base, count) * base;
}

export function linearScale(lo: number, hi: number, tickCount = 4, fixedMin: number | null = 0, binary = false): Scale {
  let min = fixedMin !== null ? Math.min(fixedMin, lo) : lo;
  let max = hi;
  if (!Number.isFinite(min) || !Number.isFinite(max)) [min, max] = [0, 1];
  if (max <= min) max = min + (Math.abs(min) > 0 ? Math.abs(min) : 1);
  const step = binary ? binaryStep(max - min, tickCount) : niceStep(max - min, tickCount);
  // Round the top up to a tick, so the highest line is not drawn on the frame.
  max = Math.ceil(max / step - 1e-9) * step;
  if (fixedMin === null) min = Math.floor(min / step + 1e-9) * step;
  const ticks: number[] = [];
  for (let v = Math.ceil(min / step - 1e-9) * step; v <= max + step * 1e-9; v += step) ticks.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  const span = max - min;
  return { kind: 'linear', min, max, frac: (v) => (v - min) / span, value: (f) => min + f * span, ticks };
}

export function logScale(lo: number, hi: number): Scale {
  let a = lo > 0 && Number.isFinite(lo) ? lo : 1;
  let b = hi > 0 && Number.isFinite(hi) ? hi : a * 10;
  if (b <= a) b = a * 10;
  const la = Math.floor(Math.log10(a));
  const lb = Math.ceil(Math.log10(b) - 1e-9);
  const min = Math.pow(10, la);
  const max = Math.pow(10, Math.max(lb, la + 1));
  const l0 = Math.log10(min);
  const span = Math.log10(max) - l0;
  const ticks: number[] = [];
  const decades = Math.round(span);
  for (let d = la; d <= la + decades; d++) {
    const base = Math.pow(10, d);
    ticks.push(base);
    if (decades <= 2 && d < la + decades) ticks.push(2 * base, 5 * base);
  }
  ticks.sort((x, y) => x - y);
  return {
    kind: 'log',
    min,
    max,
    frac: (v) => (v > 0 ? (Math.log10(v) - l0) / span : -Infinity),
    value: (f) => Math.pow(10, l0 + f * span),
    ticks,
  };
}

/** Time ticks (ns) over [a, b]: whole seconds at 1, 2, 5, 10, 15, 30, 60... s steps. */
export function timeTicks(a: number, b: number, maxTicks: number): { step: number; ticks: number[] } {
  const steps = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400].map((s) => s * 1e9);
  const span = Math.max(1, b - a);
  let step = steps[steps.length - 1];
  for (const s of steps) {
    if (span / s <= maxTicks) {
      step = s;
      break;
    }
  }
  const ticks: number[] = [];
  for (let t = Math.ceil(a / step) * step; t <= b; t += step) ticks.push(t);
  return { step, ticks };
}

/**
 * The "nines" axis of a percentile plot: percentile p (0–100) at -log10(1 - p/100), so
 * 0% is 0, 90% is 1, 99% is 2, 99.9% is 3.
 */
export function nines(p: number): number {
  const q = Math.min(p / 100, 1 - 1e-9);
  return -Math.log10(1 - q);
}

/** Labels of the nines axis up to `top` (in nines). */
export function ninesTicks(top: number): { at: number; label: string }[] {
  const out = [{ at: 0, label: '0%' }, { at: nines(50), label: '50%' }];
  for (let k = 1; k <= Math.ceil(top); k++) {
    const p = 100 * (1 - Math.pow(10, -k));
    out.push({ at: k, label: `${Number(p.toFixed(k))}%` });
  }
  return out;
}
