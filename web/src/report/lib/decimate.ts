// Min/max decimation per pixel column (uPlot's approach, DOM-free): a series of n points
// drawn w pixels wide becomes at most four points per column — the first, the lowest,
// the highest and the last value falling into it — so what is drawn looks exactly like
// the whole series (every spike shows) while a one-hour run at one-second resolution
// costs a few thousand line segments per series, whatever its length.

/**
 * The polyline of `values` at `times` between `from` and `to` (a point before and after
 * the range are included so lines run to the edges), as pairs of (x, y) pixel
 * coordinates; a NaN pair breaks the line (no value measured). `x` and `y` map a time and
 * a value to pixels.
 */
export function decimate(
  times: ArrayLike<number>,
  values: ArrayLike<number | null>,
  from: number,
  to: number,
  x: (t: number) => number,
  y: (v: number) => number,
): number[] {
  const out: number[] = [];
  const n = Math.min(times.length, values.length);
  if (n === 0) return out;
  let i0 = lowerBound(times, from);
  if (i0 > 0) i0--;
  let i1 = lowerBound(times, to);
  if (i1 < n) i1++;
  let col = NaN;
  let first = 0;
  let last = 0;
  let lo = 0;
  let hi = 0;
  let loAt = 0;
  let hiAt = 0;
  let open = false;
  const flush = (): void => {
    if (!open) return;
    // First, the extremes in the order they occurred, last: every spike shows.
    out.push(col, first);
    if (loAt < hiAt) out.push(col, lo, col, hi);
    else if (hiAt < loAt) out.push(col, hi, col, lo);
    out.push(col, last);
    open = false;
  };
  for (let i = i0; i < i1; i++) {
    const v = values[i];
    if (v === null || v === undefined || !Number.isFinite(v)) {
      flush();
      if (out.length && !Number.isNaN(out[out.length - 1])) out.push(NaN, NaN);
      continue;
    }
    const px = Math.round(x(times[i]));
    const py = y(v);
    if (!open || px !== col) {
      flush();
      col = px;
      first = last = lo = hi = py;
      loAt = hiAt = i;
      open = true;
      continue;
    }
    last = py;
    if (py < lo) {
      lo = py;
      loAt = i;
    }
    if (py > hi) {
      hi = py;
      hiAt = i;
    }
  }
  flush();
  return out;
}

/** First index whose time is ≥ t. */
export function lowerBound(times: ArrayLike<number>, t: number): number {
  let a = 0;
  let b = times.length;
  while (a < b) {
    const m = (a + b) >> 1;
    if (times[m] < t) a = m + 1;
    else b = m;
  }
  return a;
}

/**
 * Column means of a (stacked) layer: areas keep their size when several points share a
 * pixel column. Returns (x, y) pairs as `decimate` does.
 */
export function columnMeans(
  times: ArrayLike<number>,
  values: ArrayLike<number>,
  from: number,
  to: number,
  x: (t: number) => number,
  y: (v: number) => number,
): number[] {
  const out: number[] = [];
  const n = Math.min(times.length, values.length);
  let i0 = lowerBound(times, from);
  if (i0 > 0) i0--;
  let i1 = lowerBound(times, to);
  if (i1 < n) i1++;
  let col = NaN;
  let sum = 0;
  let k = 0;
  for (let i = i0; i < i1; i++) {
    const px = Math.round(x(times[i]));
    if (px !== col && k > 0) {
      out.push(col, y(sum / k));
      sum = 0;
      k = 0;
    }
    col = px;
    sum += Number.isFinite(values[i]) ? values[i] : 0;
    k++;
  }
  if (k > 0) out.push(col, y(sum / k));
  return out;
}
