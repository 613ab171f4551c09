// Unit tests of the report's DOM-free parts (src/report/lib) and of time windows over
// samples that weigh time (src/lib/profile.ts), against slow, obviously-correct models.
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { decimate, columnMeans, lowerBound } from '../src/report/lib/decimate.js';
import { edgesOf, parseWindow, rowAt, rowsIn, snap, writeWindow } from '../src/report/lib/intervals.js';
import { binaryStep, linearScale, logScale, nines, ninesTicks, timeTicks } from '../src/report/lib/scale.js';
import { formatSeconds, formatSpan, formatValue, formatWindow, unitText } from '../src/report/lib/format.js';
import { runCharts, shade } from '../src/report/lib/charts.js';
import { RawProfile, baseTree } from '../src/lib/profile.js';
import { CategorySeries, ColumnNames, PerSecond, RunPage, Table } from '../src/report/data.js';
import { categorySharesIn, distributionIn, distributionOfRuns, percentilesIn } from '../src/report/lib/window.js';
import { meanIn, secondsOn, windowFigures } from '../src/report/lib/figures.js';
import { plainColumn, plainGroup } from '../src/report/lib/names.js';
import { beamText, recordedPart } from '../src/report/lib/grid.js';
import * as markersLib from '../src/report/lib/markers.js';
import { Marker, rowsOf, searchMarkers } from '../src/report/lib/markers.js';

// A run page's data and the figures the Rust side computes for windows of it, written by
// crates/report (run.rs, the_windows_figures_for_the_pages_own_test).
const FIXTURE = JSON.parse(readFileSync(new URL('../tests/fixtures/window-figures.json', import.meta.url), 'utf8'));
/** The names of the series, as kiln writes them (sent with every page's data). */
const NAMES: ColumnNames = FIXTURE.page.columns;

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
  assert.equal(meanIn(t.time, [10, 20, null, 40, 70], [0, 2e9]), 15);
  assert.equal(meanIn(t.time, [10, 20, null, 40, 70], [2e9, 3e9]), null);
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
  assert.equal(formatSeconds(-3e6), '0 s', 'no negative zero');
  assert.equal(formatWindow([-3e6, 3.997e9]), '0.0 s – 4.0 s (4.00 s)');
  // A second's hover names its own span, whatever its edges' milliseconds.
  assert.equal(formatSpan(-0.997e9, 3e6), '-1.0 s – 0.0 s');
  assert.equal(formatSpan(4.997e9, 5.997e9), '5.0 s – 6.0 s');
  assert.equal(unitText('us/msg'), 'µs/msg');
  assert.equal(unitText('us'), 'µs');
  assert.equal(unitText('users/s'), 'users/s');
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
  const charts = runCharts({ tables: [load, target, machine], columns: NAMES, unit: 'msg', latency: 'consumer_latency', cpus: 2, categories: [] });
  const ids = charts.map((c) => c.id);
  assert.deepEqual(ids, ['rates', 'events:conn/s', 'latency:consumer_latency', 'spans', 'cpu', 'rss', 'machine']);
  assert.deepEqual(charts[0].lines.map((l) => l.column), ['sent'], 'all-zero rates are left out');
  const lat = charts[2];
  assert.equal(lat.scale, 'log');
  assert.deepEqual(lat.lines.map((l) => [l.label, !!l.dash]), [['p99', false], ['p99 intended', true]]);
  assert.deepEqual(charts[4].lines.map((l) => l.label), ['schedulers user', 'schedulers system'], 'idle thread groups are left out; plain words');
  assert.deepEqual(charts[4].lines.map((l) => l.hint), ['cpu user:scheduler', 'cpu system:scheduler'], 'the store\'s names in the tooltip');
  assert.equal(lat.title, 'Latency per second: latency, publish to consume (dashed: from the intended send time)');
  assert.equal(charts[6].yMax, 200);
  assert.deepEqual(charts[6].lines[0].values, [100, 120, 140], 'machine busy in % of one CPU');
  // A JVM's own account of its heap joins its resident memory's chart.
  target.columns.push({ name: NAMES.jvm_old_used!, unit: 'bytes', values: [1, 2, 3] }, { name: NAMES.jvm_heap_used!, unit: 'bytes', values: [null, null, null] });
  const mem = runCharts({ tables: [load, target, machine], columns: NAMES, unit: 'msg', latency: 'consumer_latency', cpus: 2, categories: [] }).find((c) => c.id === 'rss')!;
  assert.deepEqual(mem.lines.map((l) => l.label), ['resident (RSS)', 'JVM old generation in use'], 'a series with no value is left out');
  assert.match(mem.title, /JVM's heap/);
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

/** HdrHistogram-like buckets for the tests: values are their own buckets. */
function perSecond(seconds: number[][], time: number[], name = 'lat'): PerSecond {
  const values = [...new Set(seconds.flat())].sort((a, b) => a - b);
  const counts = seconds.map((vs) => {
    const c = new Map<number, number>();
    for (const v of vs) c.set(values.indexOf(v), (c.get(values.indexOf(v)) ?? 0) + 1);
    const out: number[] = [];
    let prev = 0;
    for (const [k, n] of [...c].sort((a, b) => a[0] - b[0])) {
      out.push(k - prev, n);
      prev = k;
    }
    return out;
  });
  return { values, series: [{ name, time, counts }] };
}

test('a window\'s percentiles are those of its seconds\' values merged, not means of per-second percentiles', () => {
  const r = rng(3);
  const time = Array.from({ length: 10 }, (_, i) => (i + 1) * 1e9);
  const seconds = time.map(() => Array.from({ length: Math.floor(r() * 50) }, () => 1 + Math.floor(r() * 1000) * (r() < 0.05 ? 100 : 1)));
  const ps = perSecond(seconds, time);
  for (const [a, b] of [[0, 10e9], [2e9, 5e9], [5e9, 6e9], [9e9, 10e9]]) {
    const rows = rowsIn(time, [a, b]).map(([i]) => i);
    const all = rows.flatMap((i) => seconds[i]).sort((x, y) => x - y);
    const p = percentilesIn(ps, 'lat', [a, b]);
    if (!all.length) {
      assert.equal(p, null);
      continue;
    }
    const at = (q: number): number => all[Math.max(1, Math.ceil(q * all.length)) - 1];
    assert.deepEqual(p, { p50: at(0.5), p99: at(0.99), p999: at(0.999), max: all[all.length - 1], count: all.length }, `window ${a}-${b}`);
    const d = distributionIn(ps, 'lat', [a, b])!;
    assert.equal(d.count, all.length);
    assert.ok(d.points.every((x, i) => i === 0 || (x[0] >= d.points[i - 1][0] && x[1] >= d.points[i - 1][1])), 'the curve rises');
  }
  assert.equal(percentilesIn(ps, 'other', [0, 10e9]), null);
});

test('window figures: rates and CPU from the seconds inside, the largest RSS, shares of categories', () => {
  const time = [1e9, 2e9, 3e9, 4e9];
  const t = (name: string, columns: [string, string, (number | null)[]][]): Table => ({ name, time, columns: columns.map(([n, u, v]) => ({ name: n, unit: u, values: v })) });
  const r = {
    columns: NAMES,
    unit: 'msg',
    latency: 'lat',
    cpus: 2,
    completed: 'received',
    tables: [
      t('load', [['sent', 'msg/s', [100, 200, 300, 400]], ['received', 'msg/s', [100, 200, null, 400]]]),
      t('target', [['cpu user', '%', [10, 20, 30, 40]], ['cpu system', '%', [5, 5, 5, 5]], ['rss', 'bytes', [1, 9, 3, 4]], ['voluntary switches', '1/s', [10, 10, 10, 10]], ['involuntary switches', '1/s', [0, 2, 0, 0]]]),
      t('machine', [['busy', '%', [50, 50, 100, 100]]]),
    ],
    latency_seconds: perSecond([[1, 2], [3], [4, 5, 6], [7]], time),
  } as unknown as RunPage;
  const f = windowFigures(r, [1e9, 3e9]);
  // Rows 1 and 2 (the seconds ending at 2 s and 3 s): received 200 and nothing.
  assert.equal(f.get('throughput')!.value, 200, '200 messages over the one second that counted them');
  assert.equal(f.get('throughput')!.detail, '250 msg/s sent');
  assert.equal(f.get('target_cpu')!.value, 30, '(20 + 5 + 30 + 5) / 2');
  assert.equal(f.get('cpu_per_op')!.value, 0.6 * 1e6 / 200, 'CPU seconds per message, µs');
  assert.equal(f.get('rss')!.value, 9);
  assert.equal(f.get('switches')!.value, 11);
  assert.equal(f.get('machine_busy')!.value, 75);
  assert.deepEqual([f.get('p50')!.value, f.get('max')!.value], [4, 6]);
  const c: CategorySeries = { event: 'cpu-clock', unit: '% of one CPU', names: ['a', 'b'], edges: [0, 1e9, 2e9], values: [[10, 30], [10, 10]], shares: [], outside: 0, untimed: 0 };
  assert.deepEqual(categorySharesIn(c, [0, 2e9]), [(40 / 60) * 100, (20 / 60) * 100]);
  assert.deepEqual(categorySharesIn(c, [1.5e9, 2e9]), [75, 25], 'half of the second interval');
  assert.equal(categorySharesIn(c, [5e9, 6e9]), null);
  assert.equal(plainGroup('dirty_io_sche'), 'dirty I/O schedulers');
  assert.equal(plainColumn('consumer_latency_intended p50'), 'latency, publish to consume, from the intended send time: median (p50)');
});

test('a fleet: the connections held at the window\'s end, CPU per 1,000 of them, no throughput', () => {
  const time = [1e9, 2e9, 3e9, 4e9];
  const r = {
    columns: NAMES,
    unit: 'conn',
    latency: null,
    cpus: 2,
    completed: 'connected',
    tables: [
      { name: 'load', time, columns: [{ name: 'connected', unit: 'conn/s', values: [1000, 500, 0, 0] }, { name: 'dropped', unit: 'conn/s', values: [0, 0, 100, 0] }] },
      { name: 'target', time, columns: [{ name: 'cpu user', unit: '%', values: [1, 1, 2.8, 2.8] }, { name: 'cpu system', unit: '%', values: [0, 0, 0, 0] }] },
    ],
    latency_seconds: { values: [], series: [] },
  } as unknown as RunPage;
  const f = windowFigures(r, [2e9, 4e9]);
  assert.equal(f.get('connections')!.value, 1400);
  assert.equal(f.get('cpu_per_1000_conn')!.value, 2.8 / 1.4);
  assert.equal(f.has('throughput'), false);
  assert.equal(windowFigures(r, [0, 2e9]).get('connections')!.value, 1500);
});

// The per-second rates of a real run's load (msg/s), its seconds ending 3 ms after each
// whole second, as a load's ticks do.
const RATES = [74.0e3, 70.6e3, 86.6e3, 82.0e3, 81.6e3];
const TICKS = RATES.map((_, i) => (i + 1) * 1e9 + 3e6);

test('one rule for a window\'s seconds: a second is the window\'s when its middle lies in it', () => {
  const rows = (w: [number, number]) => rowsIn(TICKS, w).map(([i]) => i);
  assert.deepEqual(rows([1e9, 2e9]), [1], 'one second: the second from 1.003 s to 2.003 s');
  assert.deepEqual(rows([1e9, 3e9]), [1, 2], 'two seconds, the first one included');
  assert.deepEqual(rows([0, 5.003e9]), [0, 1, 2, 3, 4], 'the whole measurement');
  // A second straddling an edge belongs to the side holding its middle, never to both.
  assert.deepEqual(rows([0, 2.4e9]), [0, 1]);
  assert.deepEqual(rows([2.4e9, 6e9]), [2, 3, 4]);
  assert.deepEqual(rows([0, 2.6e9]), [0, 1, 2]);
  assert.deepEqual(rows([2.6e9, 6e9]), [3, 4]);
  assert.deepEqual(rows([1.6e9, 2.4e9]), [], 'a window narrower than a second may hold none');
  // The middle itself is inside (windows are [start, end)).
  assert.deepEqual(rows([2.503e9, 3.503e9]), [2]);
});

test('window figures: the card, the legend and the Rust summary agree for windows of 1, 2 and every second', () => {
  const load: Table = { name: 'load', time: TICKS, columns: [{ name: 'received', unit: 'msg/s', values: RATES }] };
  const r = { columns: NAMES, unit: 'msg', latency: null, cpus: 1, completed: 'received', tables: [load] } as unknown as RunPage;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  for (const [w, want] of [
    [[1e9, 2e9], RATES[1]],
    [[1e9, 3e9], mean([RATES[1], RATES[2]])],
    [[0, 6e9], mean(RATES)],
    [[2.4e9, 6e9], mean(RATES.slice(2))],
  ] as [[number, number], number][]) {
    const card = windowFigures(r, w).get('throughput')!;
    const legend = meanIn(load.time, load.columns[0].values, w)!;
    assert.ok(Math.abs(card.value - want) < 1e-6, `card ${card.value} for ${w}, want ${want}`);
    assert.equal(legend, card.value, `legend and card over ${w}`);
  }
  assert.equal(windowFigures(r, [1e9, 3e9]).get('throughput')!.text, '78.6k msg/s');
  // Seconds of unequal length weigh by their length, as counts over seconds.
  assert.equal(meanIn([1e9, 2e9, 3e9, 5e9], [10, 10, 10, 40], [0, 5e9]), (10 + 10 + 10 + 40 * 2) / 5);
  // A flow-control series: the seconds of the window in which it held.
  assert.equal(secondsOn(TICKS, [1, 0, 1, 1, 0], [1e9, 4e9]), 2);
});

test('markers: lanes in the order the run’s markers meet them', () => {
  const m = (lane: string) => ({ lane, name: lane, kind: 'flag', start: 0, end: 1, count: 1, unit: 's' });
  assert.deepEqual(markersLib.lanesOf([m('phases'), m('sweep steps'), m('flow control'), m('phases'), m('connections')]), ['phases', 'sweep steps', 'flow control', 'connections']);
});

// ---------------------------------------------------------------- lib/verdict.ts: kiln compare's rules on the page
import * as V from '../src/report/lib/verdict.js';

/** The slow model of the exact Mann-Whitney p: every way to split the ranks. */
function bruteMannWhitney(a: number[], b: number[]): number {
  const all = [...a, ...b].sort((x, y) => x - y);
  const rank = (v: number): number => all.indexOf(v) + 1;
  const m = a.length;
  const uObs = a.reduce((s, v) => s + rank(v), 0) - (m * (m + 1)) / 2;
  let [le, ge, count] = [0, 0, 0];
  for (let mask = 0; mask < 1 << all.length; mask++) {
    let bits = 0;
    let ra = 0;
    for (let i = 0; i < all.length; i++) if (mask & (1 << i)) { bits++; ra += i + 1; }
    if (bits !== m) continue;
    const u = ra - (m * (m + 1)) / 2;
    count++;
    if (u <= uObs) le++;
    if (u >= uObs) ge++;
  }
  return Math.min((2 * Math.min(le, ge)) / count, 1);
}

/** The slow model of the signed-rank p: every assignment of signs, the statistic from scratch. */
function bruteSigned(d0: number[]): number {
  const d = d0.filter((x) => x !== 0);
  const n = d.length;
  const stat = (signs: number[]): number =>
    d.reduce((s, x, i) => {
      if (signs[i] <= 0) return s;
      const a = Math.abs(x);
      return s + d.filter((y) => Math.abs(y) < a).length + (d.filter((y) => Math.abs(y) === a).length + 1) / 2;
    }, 0);
  const obs = stat(d.map(Math.sign));
  let [le, ge] = [0, 0];
  for (let mask = 0; mask < 1 << n; mask++) {
    const w = stat(d.map((_, i) => (mask & (1 << i) ? 1 : -1)));
    if (w <= obs + 1e-9) le++;
    if (w >= obs - 1e-9) ge++;
  }
  return Math.min((2 * Math.min(le, ge)) / 2 ** n, 1);
}

test('verdict: the exact tests equal their slow models and the published tables', () => {
  const r = rng(12345);
  for (let m = 1; m <= 6; m++)
    for (let n = 1; n <= 6; n++)
      for (const shift of [0, 0.3, 1]) {
        const a = Array.from({ length: m }, () => r());
        const b = Array.from({ length: n }, () => r() + shift);
        assert.ok(Math.abs(V.mannWhitney(a, b) - bruteMannWhitney(a, b)) < 1e-12, `m=${m} n=${n}`);
      }
  assert.ok(Math.abs(V.smallestP(3, 3) - 0.1) < 1e-12);
  assert.ok(Math.abs(V.smallestP(4, 4) - 2 / 70) < 1e-12);
  assert.deepEqual([V.smallestGroup(0.05), V.smallestGroup(0.01), V.smallestGroup(0.1)], [4, 5, 3]);
  for (let n = 1; n <= 8; n++)
    for (const shift of [0, 0.2, 0.6])
      for (const rounded of [false, true]) {
        const d = Array.from({ length: n }, () => {
          const v = r() - 0.5 + shift;
          return rounded ? Math.round(v * 10) / 10 : v;
        });
        assert.ok(Math.abs(V.signedRank(d) - bruteSigned(d)) < 1e-12, `${d}`);
      }
  assert.deepEqual([V.smallestRounds(0.05), V.smallestRounds(0.01)], [6, 8]);
  assert.ok(Math.abs(V.signedRank([0.1, 0.2, 0.15, 0.12, 0.3, 0.11]) - 1 / 32) < 1e-15);
  const s = V.hodgesLehmann([1, 2, 3], 0.05)!;
  assert.deepEqual([s.estimate, s.low, s.high], [2, 1, 3]);
  assert.ok(Math.abs(s.coverage - 0.75) < 1e-12);
  const six = V.hodgesLehmann([5, 1, 3, 2, 4, 6], 0.05)!;
  assert.deepEqual([six.estimate, six.low, six.high], [3.5, 1, 6]);
  assert.ok(Math.abs(six.coverage - (1 - 2 / 64)) < 1e-12);
});

test('verdict: the rules and their words are verdict.rs\'s', () => {
  const rules = { alpha: 0.05, threshold_pct: 5 };
  const st = (v: number[]) => V.statOf(v)!;
  const low = [100, 101, 99, 100.5];
  const high = [120, 121, 119, 122];
  const c = V.decide(st(low), st(high), 'lower', rules, null);
  assert.equal(c.verdict.verdict, 'regressed');
  assert.equal(V.changeText(c), '+20.2% regressed (p=0.029)');
  assert.equal(V.decide(st(low), st(high), 'higher', rules, null).verdict.verdict, 'improved');
  assert.equal(V.changeText(V.decide(st(low.slice(0, 3)), st(high.slice(0, 3)), 'lower', rules, null)), '+20.0% cannot tell (too few repeats)');
  assert.equal(V.decide(st(low.slice(0, 3)), st(high.slice(0, 3)), 'lower', { ...rules, alpha: 0.1 }, null).verdict.verdict, 'regressed');
  const one = V.decide(st([100]), st([140]), 'lower', rules, null);
  assert.equal(V.changeText(one), '+40.0% cannot tell (one run)');
  assert.equal(one.verdict.verdict === 'cannot_tell' && V.unsureText(one.verdict.unsure), 'one run: noise unknown (kiln run --repeat 4)');
  assert.equal(V.changeText(V.decide(st(low), st([102, 103, 102.5, 103.5]), 'lower', rules, null)), '+2.5% no change (below the threshold, p=0.029)');
  assert.equal(V.changeText(V.decide(st(low), st([100.2, 100.8, 99.2, 100.1]), 'lower', rules, null)), '-0.1% no change (within noise, p=1.000)');
  assert.equal(V.changeText(V.decide(st([80, 95, 105, 140]), st([85, 110, 112, 150]), 'lower', rules, null)), '+11.0% cannot tell (noise ±30%)');
  assert.equal(V.changeText(V.decide(st(low), st(high), 'lower', rules, 'other hosts')), '+20.2% cannot tell (not comparable)');
  // Rounds on a machine slowing down by 10% a round: the A/A is no change, +20% is found with its interval.
  const aa: [number, number][] = Array.from({ length: 6 }, (_, i) => {
    const level = 100 * 1.1 ** i;
    return [level, level * (i % 2 === 0 ? 1.01 : 0.99)];
  });
  const same = V.decidePaired(aa, 'lower', rules, null);
  assert.equal(same.verdict.verdict, 'no_change');
  assert.ok(same.paired!.ci_pct[0] < 0 && same.paired!.ci_pct[1] > 0);
  const ab = V.decidePaired(aa.map(([b, a]) => [b, a * 1.2]), 'lower', rules, null);
  assert.equal(ab.verdict.verdict, 'regressed');
  assert.match(V.changeText(ab), /^\+20\.\d% \[\+\d+\.\d, \+\d+\.\d\] regressed \(p=0\.031\)$/);
  assert.equal(V.changeText(V.decidePaired(aa.slice(0, 5).map(([b, a]) => [b, a * 1.2]), 'lower', rules, null)).endsWith('cannot tell (too few repeats)'), true);
  const zeros = V.decidePaired([[0, 1], [0, 1], [0, 1], [1, 2], [1, 2], [1, 2]], 'lower', rules, null);
  assert.equal(zeros.verdict.verdict, 'regressed');
  assert.ok(Math.abs(zeros.percent - 200) < 1e-9);
  // Rust's {:.N}: exact ties to the even digit.
  assert.deepEqual([V.fixed(0.25, 1), V.fixed(2.5, 0), V.fixed(3.5, 0), V.fixed(0.0625, 3), V.fixed(-0.04, 1, true), V.fixed(Infinity, 1, true), V.fixed(3.325, 2), V.fixed(0.75, 1)], ['0.2', '2', '4', '0.062', '-0.0', '+inf', '3.33', '0.8']);
  assert.equal(V.heldOf(20000, 15000).text, 'not held (\u221225%)');
  assert.equal(V.formatFigure(1_150_976, 'bytes'), '1.1 MiB');
});

test('verdict: a run over a window counts the seconds whose middle lies in it (window.rs)', () => {
  // The per-second data of window.rs's own test: seconds ending 3 ms after each whole second.
  const rates = [74.0e3, 70.6e3, 86.6e3, 82.0e3, 81.6e3];
  const time = rates.map((_, i) => (i + 1) * 1e9 + 3e6);
  const run: V.WindowRun = {
    group: 0, id: 1, index: 0, measure_end: 6e9, unit: 'msg', rate: 80000, concurrency: null, counted: 'received', latency: null,
    latency_seconds: { values: [], series: [] },
    tables: [
      { name: 'load', time, columns: [{ name: 'received', unit: '', values: rates }] },
      { name: 'target', time, columns: [{ name: 'cpu user', unit: '', values: [50, 50, 50, 50, 50] }, { name: 'cpu system', unit: '', values: [10, 10, 10, 10, 10] }] },
    ],
  } as unknown as V.WindowRun;
  const at = (a: number, b: number) => V.windowHeadline(run, [a, b], NAMES);
  assert.ok(Math.abs(at(1e9, 2e9).get('throughput')! - 70.6e3) < 1e-6);
  assert.ok(Math.abs(at(1e9, 3e9).get('throughput')! - 78.6e3) < 1e-6);
  assert.ok(Math.abs(at(0, 2.4e9).get('throughput')! - (74.0e3 + 70.6e3) / 2) < 1e-6);
  assert.ok(Math.abs(at(2.4e9, 6e9).get('throughput')! - (86.6e3 + 82.0e3 + 81.6e3) / 3) < 1e-6);
  // CPU: over the window's length; per message: over the messages counted.
  const w = at(1e9, 3e9);
  assert.ok(Math.abs(w.get('target_cpu')! - 60) < 1e-9);
  assert.ok(Math.abs(w.get('cpu_per_op')! - (1.2 * 1e6) / Math.round(70.6e3 + 86.6e3)) < 1e-9);
  assert.equal(V.runWindow(run, [7e9, 9e9]), null);
  assert.deepEqual(V.runWindow(run, [1e9, 9e9]), [1e9, 6e9]);
});

test('verdict: a window\'s rows: a set rate held is a setting, the target\'s CPU an outcome, rounds paired', () => {
  const mk = (group: number, index: number, perMsg: number): V.WindowRun => {
    const time = [1e9, 2e9, 3e9];
    return {
      group, id: group * 10 + index, index, measure_end: 3e9, unit: 'msg', rate: 1000, concurrency: null, counted: 'received', latency: null,
      latency_seconds: { values: [], series: [] },
      tables: [
        { name: 'load', time, columns: [{ name: 'received', unit: '', values: [1000, 1000, 1000] }] },
        { name: 'target', time, columns: [{ name: 'cpu user', unit: '', values: [perMsg / 10, perMsg / 10, perMsg / 10] }, { name: 'cpu system', unit: '', values: [0, 0, 0] }] },
      ],
    } as unknown as V.WindowRun;
  };
  // Six rounds drifting together; the candidate 25% dearer in each.
  const runs = [0, 1, 2, 3, 4, 5].flatMap((i) => [mk(0, i, 10 * 1.15 ** i), mk(1, i, 12.5 * 1.15 ** i)]);
  const paired = { alpha: 0.05, threshold_pct: 5, not_comparable: null, paired: [null, { experiment: 'a/b@1', pairs: [0, 1, 2, 3, 4, 5].map((i) => [i, i] as [number, number]) }], unmatched: [null, null] };
  const j = V.judgeWindow(['a', 'b'], runs, paired, [0, 3e9], NAMES);
  const row = (k: string) => j.rows.find((r) => r.key === k)!;
  assert.equal(row('throughput').role, 'setting');
  assert.equal(row('throughput').cells[0], '1000/s, held');
  assert.equal(row('target_cpu').role, 'outcome');
  assert.equal(row('cpu_per_op').label, 'target CPU per msg');
  const ch = row('cpu_per_op').changes[1]!;
  assert.equal(ch.verdict.verdict, 'regressed');
  assert.ok(ch.paired && Math.abs(ch.percent - 25) < 1e-6 && Math.abs(ch.p! - 1 / 32) < 1e-12);
  assert.match(j.overall.line, /^b against a: regressed\. worse: target CPU per msg \+25\.0% \(p=0\.031\), target CPU \+25\.0% \(p=0\.031\); rate 1000\/s held in both$/);
  assert.deepEqual(V.analysisNotes(['a@0-3', 'b@0-3'], paired), [
    "paired by round (interleaved experiment a/b@1, 6 rounds): Wilcoxon signed-rank test of each round's ratio, the change the Hodges–Lehmann estimate with its exact interval [low, high] (coverage 96.9%); drift of the machine between rounds cancels",
  ]);
  const five = { ...paired, paired: [null, { experiment: 'x', pairs: paired.paired[1]!.pairs.slice(0, 5) }] };
  assert.ok(V.analysisNotes(['a', 'b'], five)[0].endsWith('(coverage 93.8%); drift of the machine between rounds cancels; 5 rounds can never show a change at alpha 0.05 (smallest p 0.062): --repeat 6'));
  // Unpaired, the drift (+15% a round, 100% over the six) hides the change.
  const unpaired = V.judgeWindow(['a', 'b'], runs, { ...paired, paired: [null, null] }, [0, 3e9], NAMES);
  assert.equal(unpaired.rows.find((r) => r.key === 'cpu_per_op')!.changes[1]!.verdict.verdict, 'cannot_tell');
});

test('a group\'s latency distribution over a window: its runs\' buckets added by value, as one run holding all their seconds', () => {
  const r = rng(5);
  // Two runs, each with its own bucket values and three seconds.
  const run = (values: number[], t0: number) => {
    const counts = [0, 1, 2].map(() => {
      const out: number[] = [];
      let prev = 0;
      values.forEach((_, k) => {
        if (r() < 0.6) {
          out.push(k - prev, 1 + Math.floor(r() * 50));
          prev = k;
        }
      });
      return out;
    });
    return { values, series: [{ name: 'lat', time: [t0 + 1e9, t0 + 2e9, t0 + 3e9], counts }] };
  };
  const a = run([10, 20, 30, 45, 1000], 0);
  const b = run([15, 20, 31, 45, 2000, 9000], 0);
  // The model: one run holding both runs' seconds (b's moved to after a's), on the union of the values.
  const values = [...new Set([...a.values, ...b.values])].sort((x, y) => x - y);
  const reindex = (src: typeof a) =>
    src.series[0].counts.map((c) => {
      const out: number[] = [];
      let [k, prev] = [0, 0];
      for (let j = 0; j + 1 < c.length; j += 2) {
        k += c[j];
        const u = values.indexOf(src.values[k]);
        out.push(u - prev, c[j + 1]);
        prev = u;
      }
      return out;
    });
  const both = { values, series: [{ name: 'lat', time: [1e9, 2e9, 3e9, 4e9, 5e9, 6e9], counts: [...reindex(a), ...reindex(b)] }] };
  const want = distributionIn(both, 'lat', [0, 6e9]);
  const got = distributionOfRuns([{ ps: a, w: [0, 3e9] }, { ps: b, w: [0, 3e9] }], 'lat');
  assert.deepEqual(got, want);
  // A window of each: the seconds whose middle lies in it.
  assert.deepEqual(distributionOfRuns([{ ps: a, w: [1e9, 3e9] }], 'lat'), distributionIn(a, 'lat', [1e9, 3e9]));
  assert.equal(distributionOfRuns([{ ps: a, w: [7e9, 9e9] }], 'lat'), null);
});

test('markers: a lane has as many rows as its markers need not to overlap; the table searches names, lanes and details', () => {
  const m = (lane: string, name: string, start: number, end: number, detail = ''): Marker => ({ lane, name, kind: 'flag', start, end, count: null, unit: '', detail });
  const markers = [
    m('phases', 'warm-up', 0, 5),
    m('phases', 'measurement', 5, 20),
    m('flow control', 'blocked', 6, 12),
    m('flow control', 'stalled', 8, 10),
    m('flow control', 'blocked', 12, 14),
    m('flow control', 'stalled', 9, 13),
    m('errors', 'requests failed', 3, 4, 'connection reset'),
  ];
  const { rows, rowOf } = rowsOf(markers);
  // Phases touch end to start: one row. Flow control: "stalled" inside "blocked" takes a
  // second row, the next "stalled" (9, still under both) a third, the second "blocked"
  // (from 12, when the first ended) the first again.
  assert.deepEqual(rows, [
    { lane: 'phases', first: true },
    { lane: 'flow control', first: true },
    { lane: 'flow control', first: false },
    { lane: 'flow control', first: false },
    { lane: 'errors', first: true },
  ]);
  assert.deepEqual(rowOf, [0, 0, 1, 2, 1, 3, 4]);
  for (let i = 0; i < markers.length; i++)
    for (let j = 0; j < i; j++)
      if (rowOf[i] === rowOf[j]) assert.ok(markers[i].end <= markers[j].start || markers[j].end <= markers[i].start, `${i} and ${j} overlap in row ${rowOf[i]}`);
  assert.deepEqual(searchMarkers(markers, ''), [0, 6, 1, 2, 3, 5, 4], 'every marker in time order');
  assert.deepEqual(searchMarkers(markers, 'STALL'), [3, 5]);
  assert.deepEqual(searchMarkers(markers, 'flow'), [2, 3, 5, 4]);
  assert.deepEqual(searchMarkers(markers, 'reset'), [6]);
});

test('a window dragged on a page has the figures the Rust side computes for it (fixtures/window-figures.json)', () => {
  const r = FIXTURE.page as RunPage;
  const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  const same = (got: Map<string, number>, want: Record<string, number | null | undefined>, what: string) => {
    const known = Object.entries(want).filter((x): x is [string, number] => x[1] !== null && x[1] !== undefined);
    assert.deepEqual([...got.keys()].sort(), known.map(([k]) => k).sort(), `${what}: the same figures`);
    for (const [k, v] of known) assert.ok(close(got.get(k)!, v), `${what}: ${k} is ${got.get(k)} on the page, ${v} in Rust`);
  };
  assert.ok(FIXTURE.cases.length >= 5);
  for (const c of FIXTURE.cases as { window: [number, number]; figures: Record<string, number>; headline: Record<string, number> }[]) {
    const w = c.window;
    // The run page's cards.
    const cards = new Map([...windowFigures(r, w)].map(([k, f]) => [k, f.value]));
    same(cards, c.figures, `run page over ${w}`);
    // The compare page's judging of a window (kiln compare RUN@START-END).
    const run = { group: 0, id: null, index: 0, tables: r.tables, measure_end: w[1], unit: r.unit, rate: null, concurrency: null, counted: r.completed, latency: r.latency, latency_seconds: r.latency_seconds } as V.WindowRun;
    const h = c.headline;
    const secs = (w[1] - w[0]) / 1e9;
    const per = (x: number | undefined) => (x === undefined ? undefined : (x / secs) * 100);
    same(V.windowHeadline(run, w, r.columns), {
      throughput: h.throughput,
      send_rate: h.send_rate,
      p50: h.p50_us,
      p99: h.p99_us,
      p999: h.p999_us,
      max: h.max_us,
      target_cpu: per(h.target_cpu_s),
      rss: h.rss_max_bytes,
      kiln_cpu: per(h.kiln_cpu_s),
      machine_busy: h.machine_busy_pct,
      queue_depth: h.queue_depth_max,
      cpu_per_op: h.cpu_per_op_us,
      switches_per_op: h.switches_per_op,
    }, `compare page over ${w}`);
  }
  // The measurement's cards are the run's headline, as kiln computed it.
  const measure = FIXTURE.cases[0];
  assert.deepEqual(Object.fromEntries((r.figures as { key: string; value: number }[]).map((f) => [f.key, f.value])), measure.figures);
});

test('one grid: a window\'s BEAM states are those Rust gave its seconds; a window reaching outside the recording says what it holds', () => {
  // The load's seconds end 3 ms after whole seconds; Rust kept the states of seconds 0..2
  // and 1..3 (first second, end second).
  const beam = {
    time: [1.003e9, 2.003e9, 3.003e9],
    step: 1,
    whole: '  BEAM schedulers by state (whole): Erlang code (emulator) 50.0%\n    waiting for a CPU: 1.0% of their awake time\n',
    windows: [
      [0, 2, '  BEAM schedulers by state: first two\n'],
      [1, 3, '  BEAM schedulers by state: last two\n'],
    ] as [number, number, string][],
  };
  assert.equal(beamText(beam, null), 'BEAM schedulers by state (whole): Erlang code (emulator) 50.0%\nwaiting for a CPU: 1.0% of their awake time');
  // Seconds whose middle lies in the window: 0.503 and 1.503 s; then 1.503 and 2.503 s.
  assert.equal(beamText(beam, [0, 2e9]), 'BEAM schedulers by state: first two');
  assert.equal(beamText(beam, [1e9, 3.1e9]), 'BEAM schedulers by state: last two');
  assert.match(beamText(beam, [0, 3.1e9]), /whole 1-second steps/);
  const r = { measure: { name: 'measure', start: 0, end: 3e9 }, windows: [{ name: 'rate=10', start: -4e9, end: 2e9, note: 'as Rust wrote it' }] } as unknown as RunPage;
  assert.equal(recordedPart(r, [-4e9, 2e9]), 'as Rust wrote it');
  assert.equal(recordedPart(r, [1e9, 2e9]), null);
  assert.match(recordedPart(r, [2e9, 5e9]) ?? '', /^the recording covers 1\.0 s of this window's 3\.0 s \(the window runs from 2\.0 s to 5\.0 s/);
});
