// Seconds of a series table (DOM-free): a row holds the interval that ends at its time,
// so "the values of that second" is the row whose interval contains the cursor, and a
// window dragged on a chart is widened to whole intervals (what the per-second values and
// the flame graph then both describe).
import { Table } from '../data.js';
import { lowerBound } from './decimate.js';

const steps = new WeakMap<object, number>();

/**
 * The usual step of a table's time column: its median difference between rows other than
 * the last (the sample taken when the run stopped, mostly part of a period), 1 s when
 * there is none (crates/store/src/window.rs, `intervals`).
 */
export function typicalStep(time: ArrayLike<number>): number {
  // Asked for on every window and legend: computed once per column.
  const known = steps.get(time as object);
  if (known !== undefined) return known;
  const step = medianStep(time);
  steps.set(time as object, step);
  return step;
}

function medianStep(time: ArrayLike<number>): number {
  const d: number[] = [];
  for (let i = 1; i < time.length - 1; i++) d.push(time[i] - time[i - 1]);
  if (!d.length) return 1e9;
  d.sort((a, b) => a - b);
  return Math.max(1, d[d.length >> 1]);
}

/** Start of row i's interval: the previous row's end, unless there is a gap. */
export function rowStart(time: ArrayLike<number>, i: number, step: number): number {
  if (i > 0 && time[i] - time[i - 1] <= 2 * step) return time[i - 1];
  return time[i] - step;
}

/** The row whose interval [start, end) holds t, or -1. */
export function rowAt(time: ArrayLike<number>, t: number, step = typicalStep(time)): number {
  const i = lowerBound(time, t);
  // Interval ends are exclusive: a time equal to an end belongs to the next row.
  const k = i < time.length && time[i] === t ? i + 1 : i;
  if (k >= time.length) return -1;
  return t >= rowStart(time, k, step) ? k : -1;
}

/** Interval edges of a table: each row's start, then the last end. */
export function edgesOf(t: Table): number[] {
  const step = typicalStep(t.time);
  const e: number[] = [];
  for (let i = 0; i < t.time.length; i++) {
    const s = rowStart(t.time, i, step);
    if (!e.length || s > e[e.length - 1]) e.push(s);
    if (i === t.time.length - 1 || rowStart(t.time, i + 1, step) !== t.time[i]) e.push(t.time[i]);
  }
  return e;
}

/** [a, b] widened to the edges around it (whole intervals); unchanged outside them. */
export function snap(edges: number[], a: number, b: number): [number, number] {
  if (edges.length < 2) return [Math.floor(a), Math.ceil(b)];
  const lo = Math.min(a, b);
  const hi = Math.max(a, b);
  // The last edge at or before lo, the first at or after hi.
  let i = lowerBound(edges, lo);
  if (i >= edges.length || edges[i] > lo) i--;
  let j = lowerBound(edges, hi);
  const start = i >= 0 ? edges[i] : Math.floor(lo);
  const end = j < edges.length ? edges[j] : Math.ceil(hi);
  if (end <= start) {
    j = Math.min(edges.length - 1, i + 1);
    return [start, edges[j] > start ? edges[j] : start + 1e9];
  }
  return [start, end];
}

/**
 * The rows of a table inside window w, with each row's interval length (ns): a row
 * belongs to the window its interval's middle lies in, as kiln counts seconds everywhere
 * (crates/run/src/window.rs, crates/run/src/headline.rs), so a second straddling an edge
 * is the window's when most of it is inside, and each second is in exactly one of two
 * windows that meet.
 */
export function rowsIn(time: ArrayLike<number>, w: [number, number]): [number, number][] {
  const step = typicalStep(time);
  const out: [number, number][] = [];
  // Rows end at most one gap (two steps) after their middle: start the scan there.
  for (let i = lowerBound(time, w[0]); i < time.length; i++) {
    const s = rowStart(time, i, step);
    const mid = s + (time[i] - s) / 2;
    if (mid >= w[1]) break;
    if (mid >= w[0]) out.push([i, time[i] - s]);
  }
  return out;
}

/** `t=A-B` of the URL hash (ns since the page's origin), or null. */
export function parseWindow(hash: string): [number, number] | null {
  const t = new URLSearchParams(hash.replace(/^#/, '')).get('t');
  const m = t ? /^(-?\d+)-(-?\d+)$/.exec(t) : null;
  if (!m) return null;
  const a = Number(m[1]);
  const b = Number(m[2]);
  return Number.isSafeInteger(a) && Number.isSafeInteger(b) && a < b ? [a, b] : null;
}

/** The hash with `t` set to the window (or removed); other keys kept. */
export function writeWindow(hash: string, w: [number, number] | null): string {
  const p = new URLSearchParams(hash.replace(/^#/, ''));
  if (w) p.set('t', `${Math.round(w[0])}-${Math.round(w[1])}`);
  else p.delete('t');
  return p.toString();
}
