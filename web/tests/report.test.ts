// Unit tests of the report's DOM-free parts (src/report/lib) and of time windows over
// samples that weigh time (src/lib/profile.ts), against slow, obviously-correct models.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decimate, columnMeans, lowerBound } from '../src/report/lib/decimate.js';
import { edgesOf, meanIn, parseWindow, rowAt, snap, writeWindow } from '../src/report/lib/intervals.js';
import { binaryStep, linearScale, logScale, nines, ninesTicks, timeTicks } from '../src/report/lib/scale.js';
import { formatSeconds, formatValue } from '../src/report/lib/format.js';
import { runCharts, shade } from '../src/report/lib/charts.js';
import { RawProfile, baseTree } from '../src/lib/profile.js';
import { Table } from '../src/report/data.js';

/** A deterministic pseudo-random sequence. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

test('decimation keeps every column’s first, lowest, highest and last value', () => {
  const r = rng(7);
  for (const n of [0, 1, 5, 300, 3600]) {
    const times = Array.from({ length: n }, (_, i) => (i + 1) * 1e9);
    const values: (number | null)[] = times.map(() => (r() < 0.05 ? null : Math.round(r() * 1000)));
    const width = 400;
    const x = (t: number): number => (t / ((n + 1) * 1e9)) * width;
    const y = (v: number): number => 1000 - v;
    const pts = decimate(times, values, 0, (n + 1) * 1e9, x, y);
    // The slow model: per column (between gaps) the set of extremes and ends.
    const model = new Map<string, { first: number; last: number; lo: number; hi: number }>();
    let seg = 0;
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (v === null) {
        seg++;
        continue;
      }
      const key = `${seg}:${Math.round(x(times[i]))}`;
      const py = y(v);
      const m = model.get(key);
      if (!m) model.set(key, { first: py, last: py, lo: py, hi: py });
      else {
        m.last = py;
        m.lo = Math.min(m.lo, py);
        m.hi = Math.max(m.hi, py);
      }
    }
    // Every model column's extremes appear among the output points of that column.
    const byCol = new Map<number, number[]>();
    for (let i = 0; i < pts.length; i += 2) {
      if (Number.isNaN(pts[i])) continue;
      if (!byCol.has(pts[i])) byCol.set(pts[i], []);
      byCol.get(pts[i])!.push(pts[i + 1]);
    }
    for (const [key, m] of model) {
      const col = Number(key.split(':')[1]);
      const ys = byCol.get(col) ?? [];
      for (const want of [m.first, m.last, m.lo, m.hi]) assert.ok(ys.includes(want), `n=${n} column ${col}: ${want} in ${ys}`);
    }
    // At most four points per column and segment, so a long series stays cheap.
    assert.ok(pts.length / 2 <= 4 * model.size + n / 10 + 2, `n=${n}: ${pts.length / 2} points for ${model.size} columns`);
  }
  // A null breaks the line.
  const pts = decimate([1, 2, 3], [1, null, 3], 0, 4, (t) => t * 100, (v) => v);
  assert.ok(pts.some((v) => Number.isNaN(v)));
  assert.equal(lowerBound([1, 2, 2, 3], 2), 1);
  const means = columnMeans([1, 2, 3, 4], [2, 4, 6, 8], 0, 5, (t) => Math.floor(t / 2), (v) => v);
  assert.deepEqual(means, [0, 2, 1, 5, 2, 8]);
});

test('seconds: the row under a time, snapping a drag to whole intervals, means of a window', () => {
  const t: Table = { name: 'load', time: [1e9, 2e9, 3e9, 4e9, 7e9], columns: [] };
  assert.deepEqual(edgesOf(t), [0, 1e9, 2e9, 3e9, 4e9, 6e9, 7e9]);
  assert.equal(rowAt(t.time, 0.5e9), 0);
  assert.equal(rowAt(t.time, 1e9), 1, 'an end belongs to the next interval');
  assert.equal(rowAt(t.time, 5e9), -1, 'a gap has no row');
  assert.equal(rowAt(t.time, 6.5e9), 4);
  assert.equal(rowAt(t.time, 8e9), -1);
  const e = edgesOf(t);
  assert.deepEqual(snap(e, 1.2e9, 2.7e9), [1e9, 3e9]);
  assert.deepEqual(snap(e, 2.7e9, 1.2e9), [1e9, 3e9]);
  assert.deepEqual(snap(e, 1.5e9, 1.5e9), [1e9, 2e9], 'a click: its interval');
  assert.deepEqual(snap(e, 2e9, 3e9), [2e9, 3e9], 'edges stay');
  assert.deepEqual(snap(e, -5e9, 0.5e9), [-5e9, 1e9]);
  assert.equal(meanIn(t.time, [10, 20, null, 40, 70], 0, 2e9), 15);
  assert.equal(meanIn(t.time, [10, 20, null, 40, 70], 2e9, 3e9), null);
  assert.deepEqual(parseWindow('#cpu.q=x&t=-5-20'), [-5, 20]);
  assert.equal(parseWindow('#t=9-1'), null);
  assert.equal(parseWindow('#t=1e3-2'), null);
  assert.equal(writeWindow('#cpu.q=x&t=1-2', [3, 4]), 'cpu.q=x&t=3-4');
  assert.equal(writeWindow('t=1-2', null), '');
});

test('scales: nice linear and binary steps, decades, time ticks, nines', () => {
  const s = linearScale(0, 937, 4);
  assert.deepEqual(s.ticks, [0, 200, 400, 600, 800, 1000]);
  assert.equal(s.frac(500), 0.5);
  assert.equal(binaryStep(130 * 2 ** 20, 4), 20 * 2 ** 20);
  const l = logScale(150, 23000);
  assert.equal(l.min, 100);
  assert.equal(l.max, 100000);
  assert.deepEqual(l.ticks, [100, 1000, 10000, 100000]);
  assert.ok(Math.abs(l.frac(1000) - 1 / 3) < 1e-12);
  assert.deepEqual(timeTicks(-4e9, 9e9, 7).ticks, [-4e9, -2e9, 0, 2e9, 4e9, 6e9, 8e9]);
  assert.equal(timeTicks(0, 3600e9, 8).step, 600e9);
  assert.ok(Math.abs(nines(99) - 2) < 1e-12);
  assert.deepEqual(ninesTicks(3).map((t) => t.label), ['0%', '50%', '90%', '99%', '99.9%']);
  assert.equal(formatSeconds(-5e9), '-5 s');
  assert.equal(formatSeconds(150e9), '2:30');
  assert.equal(formatSeconds(3725e9), '1:02:05');
  assert.equal(formatValue(1500, 'us'), '1.50 ms');
  assert.equal(formatValue(12345, 'msg/s'), '12.3k msg/s');
  assert.equal(formatValue(3 * 2 ** 20, 'bytes'), '3.00 MiB');
  assert.equal(formatValue(null, '%'), '–');
  assert.equal(shade('#000000'), '#808080');
});

test('a run’s charts: only series that hold something, latency on a log scale with the intended one dashed', () => {
  const time = [1e9, 2e9, 3e9];
  const load: Table = {
    name: 'load',
    time,
    columns: [
      { name: 'sent', unit: 'msg/s', values: [10, 10, 10] },
      { name: 'nacked', unit: 'msg/s', values: [0, 0, 0] },
      { name: 'reconnects', unit: 'conn/s', values: [0, 1, 0] },
      { name: 'consumer_latency p99', unit: 'us', values: [5, null, 7] },
      { name: 'consumer_latency_intended p99', unit: 'us', values: [6, null, 9] },
      { name: 'confirm_latency p99', unit: 'us', values: [null, null, null] },
      { name: 'blocked', unit: 'bool', values: [0, 1, 0] },
    ],
  };
  const target: Table = {
    name: 'target',
    time,
    columns: [
      { name: 'cpu user', unit: '%', values: [1, 2, 3] },
      { name: 'cpu system', unit: '%', values: [1, 1, 1] },
      { name: 'cpu user:scheduler', unit: '%', values: [1, 2, 3] },
      { name: 'cpu system:scheduler', unit: '%', values: [1, 1, 1] },
      { name: 'cpu user:aux', unit: '%', values: [0, 0, 0] },
      { name: 'cpu system:aux', unit: '%', values: [0, 0, 0] },
      { name: 'rss', unit: 'bytes', values: [1, 2, 3] },
    ],
  };
  const machine: Table = { name: 'machine', time, columns: [{ name: 'busy', unit: '%', values: [50, 60, 70] }] };
  const charts = runCharts({ tables: [load, target, machine], unit: 'msg', latency: 'consumer_latency', cpus: 2, categories: [] });
  const ids = charts.map((c) => c.id);
  assert.deepEqual(ids, ['rates', 'events:conn/s', 'latency:consumer_latency', 'spans', 'cpu', 'rss', 'machine']);
  assert.deepEqual(charts[0].lines.map((l) => l.column), ['sent'], 'all-zero rates are left out');
  const lat = charts[2];
  assert.equal(lat.scale, 'log');
  assert.deepEqual(lat.lines.map((l) => [l.label, !!l.dash]), [['p99', false], ['p99 intended', true]]);
  assert.deepEqual(charts[4].lines.map((l) => l.label), ['scheduler user', 'scheduler system'], 'idle thread groups are left out');
  assert.equal(charts[6].yMax, 200);
  assert.deepEqual(charts[6].lines[0].values, [100, 120, 140], 'machine busy in % of one CPU');
});

test('a window over samples that weigh time counts the part of each block inside it', () => {
  // Two stacks; block A from 0 for 10 ns, block B from 20 for 10 ns; a point sample at 5.
  const raw: RawProfile = {
    strings: ['a', 'b'],
    frameName: new Uint32Array([0, 1]),
    frameKind: new Uint8Array(2),
    frameOrder: new Uint32Array([0, 1]),
    stackParent: new Int32Array([-1, -1]),
    stackFrame: new Uint32Array([0, 1]),
    sampleStack: new Uint32Array([0, 1]),
    sampleWeight: new Float64Array([10, 10]),
    sampleCount: null,
    sampleTime: new Float64Array([0, 20]),
    sampleThread: null,
    threadName: new Uint32Array(0),
    threadTid: new Int32Array(0),
    timeOrigin: 0,
  };
  const opts = { threadMode: 'merged' as const, firstThreadFrame: 2, rootOf: new Int32Array(0) };
  const spans = baseTree(raw, { ...opts, range: [5, 25], nsPerWeight: 1 });
  assert.deepEqual([...spans.self], [5, 5], 'half of each block');
  assert.deepEqual([...spans.count], [1, 1]);
  const points = baseTree(raw, { ...opts, range: [5, 25] });
  assert.deepEqual([...points.self], [0, 10], 'points: only the one stamped inside');
  const none = baseTree(raw, { ...opts, range: [11, 19], nsPerWeight: 1 });
  assert.deepEqual([...none.self], [0, 0]);
  const all = baseTree(raw, { ...opts, range: null, nsPerWeight: 1 });
  assert.deepEqual([...all.self], [10, 10]);
});
