// Unit tests of the DOM-free parts added for units, the flame chart, exports, the URL
// shared by several viewers and time windows. Each is checked against a slow, obviously
// correct computation over explicit sample lists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Meta, Model } from '../src/app-state/model.js';
import { defaultState, fromParams, toParams } from '../src/app-state/state.js';
import { HashParams } from '../src/app-state/url.js';
import { foldedOf, svgOf, escapeXml } from '../src/lib/export.js';
import { buildFlameChart } from '../src/lib/flamechart.js';
import { layoutTree } from '../src/lib/layout.js';
import { RawProfile, Tree, TreeBuilder, threadGroupName, threadRoots } from '../src/lib/profile.js';
import { histogram, histograms, timeSpan } from '../src/lib/timeline.js';
import { activity, activityKind, describeBucket, fullHeight, groupOf, isSelected, percent, selectTracks, trackGroups } from '../src/lib/tracks.js';
import { Transform, applyTransforms, applyTransformsMapped } from '../src/lib/transforms.js';
import { Unit, formatBytes, formatInstant, formatNs } from '../src/lib/units.js';
import { hasCapital } from '../src/lib/analysis.js';
import { FrameCategories, categoryShares, isFrameCategories, nodeCategories } from '../src/lib/categories.js';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

interface Sample {
  stack: string[];
  weight: number;
  time: number; // ns, -1 unknown
  thread: number; // -1 unknown
}

/** A RawProfile as the page decodes it, from explicit samples (stacks interned). */
function raw(samples: Sample[], threads: string[] = []): RawProfile {
  const strings: string[] = [];
  const sid = new Map<string, number>();
  const str = (s: string): number => {
    let i = sid.get(s);
    if (i === undefined) sid.set(s, (i = strings.push(s) - 1));
    return i;
  };
  const frameName: number[] = [];
  const fid = new Map<string, number>();
  const frame = (n: string): number => {
    let i = fid.get(n);
    if (i === undefined) fid.set(n, (i = frameName.push(str(n)) - 1));
    return i;
  };
  const parent: number[] = [];
  const sframe: number[] = [];
  const node = new Map<string, number>();
  const stackOf = (names: string[]): number => {
    let p = -1;
    for (const n of names) {
      const f = frame(n);
      const k = `${p}/${f}`;
      let i = node.get(k);
      if (i === undefined) {
        i = parent.push(p) - 1;
        sframe.push(f);
        node.set(k, i);
      }
      p = i;
    }
    return p;
  };
  const st = samples.map((s) => stackOf(s.stack));
  const names = frameName.map((s) => strings[s]);
  const byName = names.map((_, i) => i).sort((a, b) => (names[a] < names[b] ? -1 : names[a] > names[b] ? 1 : a - b));
  const order = new Uint32Array(names.length);
  byName.forEach((f, r) => (order[f] = r));
  const threadName = threads.map((t) => str(t));
  return {
    strings,
    frameName: Uint32Array.from(frameName),
    frameKind: new Uint8Array(frameName.length),
    frameOrder: order,
    stackParent: Int32Array.from(parent),
    stackFrame: Uint32Array.from(sframe),
    sampleStack: Uint32Array.from(st),
    sampleWeight: Float64Array.from(samples.map((s) => s.weight)),
    sampleCount: null,
    sampleTime: samples.some((s) => s.time >= 0) ? Float64Array.from(samples.map((s) => s.time)) : null,
    sampleThread: samples.some((s) => s.thread >= 0) ? Int32Array.from(samples.map((s) => s.thread)) : null,
    threadName: Uint32Array.from(threadName),
    threadTid: Int32Array.from(threads.map((_, i) => 100 + i)),
    timeOrigin: 1e12,
  };
}

const meta = (unit: Record<string, unknown> = {}): Meta => ({
  title: 't',
  subtitle: null,
  palette: 'hot',
  inverted: false,
  leftHeavy: false,
  mode: 'single',
  labels: ['before', 'after'],
  profiles: [{ compressed: false, ...unit }],
});

test('units: readable scales, as kiln_model::Quantity::format_value writes them', () => {
  assert.equal(formatNs(1_199_199_198), '1.20 s');
  assert.equal(formatNs(850_000_000), '850 ms');
  assert.equal(formatNs(12_345), '12.3 µs');
  assert.equal(formatNs(999), '999 ns');
  assert.equal(formatNs(1_234e9), '1,234 s');
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(3.5 * 1024 * 1024), '3.50 MiB');
  const period = Unit.of({ unit: 'period', event: 'cpu-clock', quantity: 'time', nsPerUnit: 1 });
  assert.equal(period.format(1_199_199_198), '1.20 s');
  assert.equal(period.what, 'CPU time');
  const timer = Unit.of({ unit: 'samples', event: 'cpu-clock', quantity: 'samples', samplePeriodNs: 1_001_001 });
  assert.equal(timer.format(1198), '1.20 s');
  assert.ok(timer.isTime && !timer.countsSamples);
  const off = Unit.of({ unit: 'ns', event: 'offcpu', quantity: 'time', nsPerUnit: 1 });
  assert.equal(off.what, 'off-CPU time');
  assert.equal(Unit.of({ unit: 'bytes', quantity: 'bytes' }).format(1536), '1.50 KiB');
  assert.equal(Unit.of({ unit: 'samples', quantity: 'samples' }).format(1234), '1,234 samples');
  assert.equal(Unit.of({ unit: 'events', event: 'page-faults', quantity: 'events' }).format(7), '7 page-faults');
  // --countname: a unit scales, a word names plain counts.
  const us = Unit.of({ unit: 'samples', quantity: 'samples', countName: 'us' });
  assert.equal(us.format(2500), '2.50 ms');
  assert.ok(!us.samplesKnown, 'folded weights in µs say nothing about samples');
  assert.equal(Unit.of({ unit: 'samples', quantity: 'samples', countName: 'calls' }).format(3), '3 calls');
  assert.equal(Unit.of({ unit: 'samples', quantity: 'samples', countName: 'MiB' }).format(2), '2.00 MiB');
  assert.equal(Unit.of({ unit: 'us' }).format(1500), '1.50 ms', 'pages without a quantity');
  assert.equal(period.formatDelta(-3e6), '−3.00 ms');
});

type Stacks = [number[], number][];

function treeOf(stacks: Stacks, nFrames: number): Tree {
  const b = new TreeBuilder(nFrames);
  for (const [path, w] of stacks) {
    let n = -1;
    for (const f of path) n = b.intern(n, f);
    if (n >= 0) {
      b.self[n] += w;
      b.count[n] += 1;
    }
  }
  return b.finish();
}

function pathTo(t: { parent: Int32Array; frame: Int32Array }, v: number): number[] {
  const p: number[] = [];
  for (; v >= 0; v = t.parent[v]) p.unshift(t.frame[v]);
  return p;
}

function refPath(p: number[], trs: Transform[], lib: Int32Array): number[] | null {
  for (const tr of trs) {
    switch (tr.kind) {
      case 'merge-call-node':
        if (tr.path.every((f, i) => p[i] === f)) p = p.filter((_, i) => i !== tr.path.length - 1);
        break;
      case 'collapse-direct-recursion':
        p = p.filter((x, i) => !(x === tr.f && i > 0 && p[i - 1] === tr.f));
        break;
      case 'collapse-library':
        p = p.filter((x, i) => lib[x] !== tr.f || i === 0 || lib[p[i - 1]] !== tr.f).map((x) => (lib[x] === tr.f ? tr.f : x));
        break;
      case 'merge':
        p = p.filter((x) => x !== tr.f);
        break;
      case 'drop':
        if (p.includes(tr.f)) return null;
        break;
      case 'focus-function': {
        const i = p.indexOf(tr.f);
        if (i < 0) return null;
        p = p.slice(i);
        break;
      }
      case 'focus-subtree':
        if (!tr.path.every((f, i) => p[i] === f)) return null;
        p = p.slice(tr.path.length - 1);
        break;
      case 'collapse-recursion': {
        let r: number[] = [];
        for (const x of p) {
          if (x === tr.f && r.includes(tr.f)) r = r.slice(0, r.indexOf(tr.f) + 1);
          else r.push(x);
        }
        p = r;
        break;
      }
    }
  }
  return p;
}

test('transforms map every stack to where its samples went', () => {
  const r = rng(7);
  for (let round = 0; round < 300; round++) {
    const nFrames = 2 + Math.floor(r() * 5);
    const stacks: Stacks = Array.from({ length: 1 + Math.floor(r() * 30) }, () => [
      Array.from({ length: 1 + Math.floor(r() * 6) }, () => Math.floor(r() * nFrames)),
      1,
    ]);
    const kinds = ['merge', 'drop', 'focus-function', 'collapse-recursion', 'collapse-direct-recursion', 'collapse-library', 'merge-call-node'] as const;
    // Frames 0 .. nFrames - 1; nFrames and nFrames + 1 are libraries of some of them.
    const lib = new Int32Array(nFrames + 2).fill(-1);
    for (let x = 0; x < nFrames; x++) if (x % 3 > 0) lib[x] = nFrames + (x % 2);
    const trs: Transform[] = Array.from({ length: 1 + Math.floor(r() * 3) }, (): Transform => {
      const kind = kinds[Math.floor(r() * kinds.length)];
      if (kind === 'merge-call-node') {
        const p = stacks[Math.floor(r() * stacks.length)][0];
        return { kind, path: p.slice(0, 1 + Math.floor(r() * p.length)) };
      }
      return { kind, f: kind === 'collapse-library' ? nFrames + Math.floor(r() * 2) : Math.floor(r() * nFrames) };
    });
    const t = treeOf(stacks, nFrames + 2);
    const { tree, map } = applyTransformsMapped(t, trs, nFrames + 2, lib);
    for (let i = 0; i < t.length; i++) {
      const want = refPath(pathTo(t, i), trs, lib);
      if (want === null) assert.ok(map[i] < -1, `round ${round}: node ${i} dropped`);
      else if (want.length === 0) assert.ok(map[i] < 0, `round ${round}: node ${i} lost its frames`);
      else assert.deepEqual(pathTo(tree, map[i]), want, `round ${round}: node ${i} ${JSON.stringify(trs)}`);
    }
  }
});

test('flame chart: per thread, boxes are the runs of frames in time order', () => {
  const r = rng(3);
  const names = ['main', 'a', 'b', 'c'];
  for (let round = 0; round < 100; round++) {
    const samples: Sample[] = [];
    const clock = [0, 500];
    for (let i = 0; i < 60; i++) {
      const thread = Math.floor(r() * 2);
      clock[thread] += 1000;
      const depth = Math.floor(r() * 4);
      samples.push({ stack: ['main', ...Array.from({ length: depth }, () => names[1 + Math.floor(r() * 3)])], weight: 1, time: clock[thread], thread });
    }
    // Shuffled: the chart must order by time itself.
    const shuffled = [...samples].sort(() => r() - 0.5);
    const model = new Model([raw(shuffled, ['t0', 't1'])], meta({ unit: 'samples', quantity: 'samples' }));
    const s = defaultState('hot', false, false);
    const c = model.chart(s);
    const frameNames = model.frames(s).names;
    // One lane per thread that has samples, each named after its thread.
    const threads = [...new Set(samples.map((x) => `t${x.thread} [${100 + x.thread}]`))].sort();
    assert.deepEqual(c.lanes.map((l) => l.name).sort(), threads, `round ${round}: lanes`);
    for (const lane of c.lanes) {
      const mine = samples.filter((x) => `t${x.thread} [${100 + x.thread}]` === lane.name).sort((a, b) => a.time - b.time);
      for (let d = 0; d < 4; d++) {
        // A run continues while the path from the root to depth d is the same.
        const want: [string, number][] = [];
        let prev: string | null = null;
        for (const x of mine) {
          if (x.stack.length > d) {
            const key = x.stack.slice(0, d + 1).join(';');
            if (key === prev) want[want.length - 1][1]++;
            else want.push([x.stack[d], 1]);
            prev = key;
          } else prev = null;
        }
        const row = lane.rows[d];
        const got = row ? Array.from({ length: row.length }, (_, k) => [frameNames[c.frame[row.node[k]]], row.count[k]]) : [];
        assert.deepEqual(got, want, `round ${round} ${lane.name} depth ${d}`);
      }
      assert.equal(lane.samples, mine.length);
    }
  }
});

test('flame chart: time weights cover [t, t + w], samples without time are counted', () => {
  const p = raw(
    [
      { stack: ['main', 'wait'], weight: 5_000, time: 10_000, thread: 0 },
      { stack: ['main', 'wait'], weight: 2_000, time: 20_000, thread: 0 },
      { stack: ['main', 'poll'], weight: 1_000, time: -1, thread: 0 },
    ],
    ['io'],
  );
  const m = new Model([p], meta({ unit: 'us', quantity: 'time', nsPerUnit: 1000, event: 'offcpu' }));
  const c = m.chart(defaultState('hot', false, false));
  assert.equal(c.untimed, 1);
  const row = c.lanes[0].rows[1];
  // 5,000 µs from 10 µs would reach past the next sample: a box ends where the next begins.
  assert.deepEqual([...row.start], [10_000]);
  assert.deepEqual([...row.end], [20_000 + 2_000_000]);
  assert.deepEqual([...row.count], [2]);
  // The strip spreads each block over the time it covers.
  const span = timeSpan(p, 1000) as [number, number];
  assert.deepEqual(span, [10_000, 5_010_000]);
  const h = histogram(p, 10, span, 1000);
  const sum = h.buckets.reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(sum - 7_000) < 1e-6, `weight kept: ${sum}`);
  assert.ok(h.buckets.filter((b) => b > 0).length >= 9, 'spread over the buckets it covers');
  // On a page's axis: a wider span keeps every weight; a narrower one (zoomed) draws only
  // the part of each block inside it.
  const wide = histogram(p, 20, [-5_000_000, 15_000_000], 1000);
  assert.ok(Math.abs(wide.buckets.reduce((a, b) => a + b, 0) - 7_000) < 1e-6);
  assert.equal(wide.buckets.slice(0, 5).reduce((a, b) => a + b, 0), 0, 'nothing before the profile');
  const narrow = histogram(p, 10, [1_010_000, 2_010_000], 1000);
  // Both blocks cover that millisecond whole, 1,000 µs each: 200 µs per bucket, none piled at an edge.
  assert.ok(narrow.buckets.every((b) => Math.abs(b - 200) < 1e-6), `only the part inside: ${[...narrow.buckets]}`);
});

test('a time window is a state: the model gives exactly the samples inside it', () => {
  const samples: Sample[] = [];
  for (let i = 0; i < 100; i++) samples.push({ stack: ['main', i < 50 ? 'early' : 'late'], weight: 1 + (i % 3), time: i * 1e6, thread: -1 });
  const m = new Model([raw(samples)], meta({ unit: 'samples', quantity: 'samples' }));
  const s = defaultState('hot', false, false);
  for (const [a, b] of [[0, 49e6], [30e6, 70e6], [50e6, 99e6], [10.5e6, 10.6e6]]) {
    const d = m.derive({ ...s, range: [a, b] });
    const want = samples.filter((x) => x.time >= a && x.time <= b).reduce((n, x) => n + x.weight, 0);
    assert.equal(d.layout.total[0], want, `window ${a}-${b}`);
  }
});

test('sandwich: callers and callees rooted at the function, percentages of it', () => {
  const p = raw([
    { stack: ['main', 'a', 'f', 'g'], weight: 3, time: -1, thread: -1 },
    { stack: ['main', 'b', 'f'], weight: 1, time: -1, thread: -1 },
    { stack: ['main', 'f', 'f', 'g'], weight: 2, time: -1, thread: -1 },
  ]);
  const m = new Model([p], meta());
  const s = defaultState('hot', false, false);
  const f = m.frames(s).names.indexOf('f');
  const sw = m.sandwich(s, f);
  const names = m.frames(s).names;
  // Node 1 is f itself: the synthetic root has f as its only child.
  assert.equal(names[sw.callers.frame[1]], 'f');
  assert.equal(sw.callers.total[1], 6);
  const callers = new Map<string, number>();
  for (let v = 2; v < sw.callers.n; v++) if (sw.callers.depth[v] === 2) callers.set(names[sw.callers.frame[v]], sw.callers.total[v] / sw.callers.total[1]);
  assert.deepEqual(Object.fromEntries(callers), { a: 0.5, b: 1 / 6, main: 1 / 3 });
});

test('folded export equals the tree; SVG export escapes and prunes like kiln flamegraph', () => {
  const p = raw([
    { stack: ['main', 'a<b>&"c\'', 'x'], weight: 40, time: -1, thread: -1 },
    { stack: ['main', 'a<b>&"c\''], weight: 9, time: -1, thread: -1 },
    { stack: ['main', 'ctl\u0007\ud800'], weight: 50, time: -1, thread: -1 },
    { stack: ['main', 'tiny'], weight: 0.01, time: -1, thread: -1 },
  ]);
  const m = new Model([p], meta());
  const d = m.derive(defaultState('hot', false, false));
  const lines = foldedOf(d.layout, d.frames).trim().split('\n').sort();
  assert.deepEqual(lines, ['main;a<b>&"c\' 9', 'main;a<b>&"c\';x 40', 'main;ctl\u0007\ud800 50', 'main;tiny 0.01'].sort());
  const svg = svgOf(d.layout, { title: 'T <&>', color: () => 'rgb(1,2,3)', label: (v) => (v ? d.frames.names[d.layout.frame[v]] : 'all'), unit: m.unit });
  assert.ok(!/[\u0000-\u0008\ud800]/.test(svg), 'no character XML forbids');
  assert.ok(svg.includes('a&lt;b&gt;&amp;&quot;c&#39;'));
  assert.ok(svg.includes('<text id="title" x="600" y="24">T &lt;&amp;&gt;</text>'));
  // 0.01 of 99.01 is 0.12 px of 1180: drawn; at 1 px minimum width it is not.
  assert.equal((svg.match(/<g>/g) ?? []).length, 6);
  const pruned = svgOf(d.layout, { title: '', color: () => '#000', label: () => 'x', unit: m.unit, minWidthPx: 1 });
  assert.equal((pruned.match(/<g>/g) ?? []).length, 5);
  assert.equal(escapeXml('\ud83d\ude00'), '\ud83d\ude00', 'pairs survive');
});

test('the URL: each viewer owns its prefixed keys; the time window is the page\'s', () => {
  const cpu = new HashParams('cpu');
  const off = new HashParams('offcpu');
  let h = '';
  h = cpu.write(h, new URLSearchParams('q=lock&v=table&t=5-9'));
  h = off.write(h, new URLSearchParams('v=chart&t=5-9'));
  assert.equal(h, 'cpu.q=lock&cpu.v=table&offcpu.v=chart&t=5-9');
  assert.equal(cpu.read(h).toString(), 'q=lock&v=table&t=5-9');
  assert.equal(off.read(h).toString(), 'v=chart&t=5-9');
  // Clearing the window in one viewer clears it for the page.
  h = off.write(h, new URLSearchParams('v=chart'));
  assert.equal(cpu.read(h).get('t'), null);
  assert.equal(new HashParams('').read('#q=x&cpu.q=y').toString(), 'q=x', 'a lone viewer ignores prefixed keys');
  // Windows are written on the page's clock: shift = profile origin - page origin.
  const d = defaultState('hot', false, false);
  const s = { ...d, range: [100, 200] as [number, number], view: 'chart' as const };
  const params = toParams(s, d, 1000);
  assert.equal(params.get('t'), '1100-1200');
  assert.deepEqual(fromParams(params, d, 10, 1000).range, [100, 200]);
  assert.equal(fromParams(new URLSearchParams('v=bogus&t=9-3'), d, 10).view, 'flame');
});

test('the left-heavy layout of a layout tree keeps total weights', () => {
  const fs = { names: ['m', 'a', 'b'], kinds: new Uint8Array(3), order: Uint32Array.from([2, 0, 1]) };
  const l = layoutTree(treeOf([[[0, 1], 2], [[0, 2], 5]], 3), fs, 'left-heavy');
  assert.equal(l.total[0], 7);
});

test('the alphabetical layout of a tree in name order takes the fast path to the same result', async () => {
  const r = rng(11);
  const nFrames = 6;
  const names = ['f', 'e', 'd', 'c', 'b', 'a'];
  const order = Uint32Array.from([5, 4, 3, 2, 1, 0]);
  const fs = { names, kinds: new Uint8Array(nFrames), order };
  for (let round = 0; round < 200; round++) {
    const stacks: Stacks = Array.from({ length: 1 + Math.floor(r() * 25) }, () => [
      Array.from({ length: 1 + Math.floor(r() * 5) }, () => Math.floor(r() * nFrames)),
      Math.floor(r() * 4),
    ]);
    const t = treeOf(stacks, nFrames);
    // Renumber depth first with children by name, as kiln's encoder does.
    const kids: number[][] = Array.from({ length: t.length + 1 }, () => []);
    for (let i = 0; i < t.length; i++) kids[t.parent[i] + 1].push(i);
    for (const k of kids) k.sort((a, b) => order[t.frame[a]] - order[t.frame[b]]);
    const pre: number[] = [];
    const walk = (v: number): void => {
      for (const c of kids[v + 1]) {
        pre.push(c);
        walk(c);
      }
    };
    walk(-1);
    const newId = new Int32Array(t.length);
    pre.forEach((o, i) => (newId[o] = i));
    const s: Tree = {
      parent: Int32Array.from(pre, (o) => (t.parent[o] < 0 ? -1 : newId[t.parent[o]])),
      frame: Int32Array.from(pre, (o) => t.frame[o]),
      self: Float64Array.from(pre, (o) => t.self[o]),
      count: Float64Array.from(pre, (o) => t.count[o]),
      length: t.length,
      nameOrder: true,
    };
    const fast = layoutTree(s, fs, 'alphabetical');
    const slow = layoutTree({ ...s, nameOrder: false }, fs, 'alphabetical');
    assert.deepEqual([...fast.start], [...slow.start], `round ${round}`);
    assert.deepEqual(fast.rows.map((x) => [...x]), slow.rows.map((x) => [...x]), `round ${round}`);
    assert.deepEqual([...fast.childList], [...slow.childList], `round ${round}`);
    assert.equal(fast.maxDepth, slow.maxDepth);
    const { rowEnds } = await import('../src/lib/layout.js');
    assert.deepEqual(rowEnds(fast).map((x) => [...x]), rowEnds(slow).map((x) => [...x]), `round ${round}: row ends`);
    // Transforms of a tree in name order give one in name order (the fast path again),
    // holding the same stacks as without the ranks.
    const lib = Int32Array.from([-1, 6, 7, 6, -1, 7, -1, -1]);
    const fs8 = { names: [...names, 'lib1', 'lib0'], kinds: new Uint8Array(8), order: Uint32Array.from([...order, 7, 6]) };
    const kinds = ['merge', 'drop', 'focus-function', 'collapse-recursion', 'collapse-direct-recursion', 'collapse-library', 'merge-call-node', 'focus-subtree'] as const;
    const trs: Transform[] = Array.from({ length: 1 + Math.floor(r() * 3) }, (): Transform => {
      const kind = kinds[Math.floor(r() * kinds.length)];
      if (kind === 'merge-call-node' || kind === 'focus-subtree') {
        const p = stacks[Math.floor(r() * stacks.length)][0];
        return { kind, path: p.slice(0, 1 + Math.floor(r() * p.length)) };
      }
      return { kind, f: kind === 'collapse-library' ? 6 + Math.floor(r() * 2) : Math.floor(r() * nFrames) };
    });
    const u = applyTransforms(s, trs, 8, lib, fs8.order);
    assert.equal(u.nameOrder, true);
    const uFast = layoutTree(u, fs8, 'alphabetical');
    const uSlow = layoutTree({ ...u, nameOrder: false }, fs8, 'alphabetical');
    assert.deepEqual([...uFast.start], [...uSlow.start], `round ${round}: ${JSON.stringify(trs)}`);
    assert.deepEqual(uFast.rows.map((x) => [...x]), uSlow.rows.map((x) => [...x]), `round ${round}: rows after ${JSON.stringify(trs)}`);
    const plain = applyTransforms(s, trs, 8, lib);
    const stacksOf = (x: Tree): string[] => {
      const out: string[] = [];
      const path: string[] = [];
      for (let i = 0; i < x.length; i++) {
        path[i] = (x.parent[i] >= 0 ? path[x.parent[i]] + ';' : '') + x.frame[i];
        if (x.self[i] || x.count[i]) out.push(`${path[i]} ${x.self[i]} ${x.count[i]}`);
      }
      return out.sort();
    };
    assert.deepEqual(stacksOf(u), stacksOf(plain), `round ${round}: the same stacks`);
  }
});

test('galloping search agrees with the binary search', async () => {
  const { firstEndingAfter, nextEnd, rowEnds } = await import('../src/lib/layout.js');
  const r = rng(5);
  const fs = { names: ['m', 'a', 'b', 'c'], kinds: new Uint8Array(4), order: Uint32Array.from([3, 0, 1, 2]) };
  const stacks: Stacks = Array.from({ length: 300 }, () => [[0, ...Array.from({ length: 1 + Math.floor(r() * 4) }, () => 1 + Math.floor(r() * 3))], 1 + Math.floor(r() * 5)]);
  const l = layoutTree(treeOf(stacks, 4), fs, 'alphabetical');
  for (let d = 0; d <= l.maxDepth; d++) {
    const row = l.rows[d];
    for (let q = 0; q < 200; q++) {
      const x = r() * l.total[0];
      const from = Math.floor(r() * (firstEndingAfter(l, row, x) + 1));
      assert.equal(nextEnd(rowEnds(l)[d], x, from), firstEndingAfter(l, row, x, from));
    }
  }
});

test('call tree: every row is the weight of the stacks through it, top-down and inverted, with and without a search', () => {
  const r = rng(7);
  const names = ['main', 'a', 'b', 'c', 'lock'];
  for (let round = 0; round < 60; round++) {
    const samples: Sample[] = [];
    for (let i = 0, n = 1 + Math.floor(r() * 30); i < n; i++) {
      const len = 1 + Math.floor(r() * 5);
      samples.push({ stack: ['main', ...Array.from({ length: len - 1 }, () => names[1 + Math.floor(r() * 4)])], weight: 1 + Math.floor(r() * 5), time: i, thread: -1 });
    }
    const m = new Model([raw(samples)], meta({ unit: 'samples', quantity: 'samples' }));
    for (const invert of [false, true]) {
      for (const query of ['', 'lock']) {
        const s = { ...defaultState('hot', false, false), invert, query };
        const tree = m.callTree(s);
        const fnames = m.frames(s).names;
        // Reference: every prefix of every stack (reversed when inverted) gets its weight.
        const want = new Map<string, number>();
        for (const x of samples) {
          if (query && !x.stack.includes(query)) continue;
          const path = invert ? [...x.stack].reverse() : x.stack;
          for (let k = 1; k <= path.length; k++) {
            const key = path.slice(0, k).join(';');
            want.set(key, (want.get(key) ?? 0) + x.weight);
          }
        }
        const got = new Map<string, number>();
        const walk = (list: ReturnType<typeof tree.roots>, prefix: string): void => {
          for (const n of list) {
            const key = prefix ? `${prefix};${fnames[n.frame]}` : fnames[n.frame];
            got.set(key, n.total);
            walk(tree.children(n), key);
          }
        };
        walk(tree.roots(), '');
        assert.deepEqual(got, want, `round ${round}, ${invert ? 'inverted' : 'top-down'}, search '${query}'`);
        // Rows come heaviest first; every row's children sum to at most its total.
        const rows = tree.rows(new Set(got.keys() as Iterable<string>));
        for (let i = 1; i < rows.length; i++) if (rows[i].depth === rows[i - 1].depth && rows[i].key.split('.').length === 1) assert.ok(rows[i].total <= rows[i - 1].total);
      }
    }
  }
});

test('hidden threads leave the trees; a window counts its samples per thread', () => {
  const samples: Sample[] = [];
  for (let i = 0; i < 60; i++) samples.push({ stack: ['main', i % 3 === 0 ? 'x' : 'y'], weight: 2, time: i * 1e6, thread: i % 3 });
  const m = new Model([raw(samples, ['t0', 't1', 't2'])], meta({ unit: 'samples', quantity: 'samples' }));
  const s = defaultState('hot', false, false);
  const d = m.derive({ ...s, hidden: [0] });
  assert.equal(d.layout.total[0], 80, 'threads 1 and 2: 40 samples of weight 2');
  assert.equal(d.frames.names.indexOf('x') >= 0 && d.stats().total[d.frames.names.indexOf('x')], 0, 'x ran on thread 0 only');
  const c = m.samplesIn([10e6, 19e6]);
  assert.deepEqual(Array.from(c.perThread), [3, 4, 3]);
  assert.equal(c.total, 10);
  // In the URL, and only threads that exist.
  // In the URL as the selected tracks' threads, and only threads that exist.
  const p = toParams({ ...s, hidden: [0, 2], invert: true, searchNames: true }, s, 0, 3);
  assert.equal(p.toString(), 'qn=1&sel=1&inv=1');
  const back = fromParams(new URLSearchParams('sel=1.9.x&inv=1&qn=1'), s, 10, 0, 3);
  assert.deepEqual([back.hidden, back.invert, back.searchNames], [[0, 2], true, true]);
  // Links written before tracks: the hidden threads.
  assert.deepEqual(fromParams(new URLSearchParams('hide=2.0.9.x'), s, 10, 0, 3).hidden, [0, 2]);
  // A selection naming no thread that exists selects every thread.
  assert.deepEqual(fromParams(new URLSearchParams('sel=7.x'), s, 10, 0, 3).hidden, []);
});

test('tracks: threads grouped as kiln groups them, selections by click and ctrl-click', () => {
  // The names of crates/model/src/transform.rs's merges_beam_schedulers_and_pools test.
  const cases: [string, string][] = [
    ['1_scheduler', 'scheduler'],
    ['10_dirty_io_sch', 'dirty_io_sch'],
    ['pool-1-thread-3', 'pool-N-thread'],
    ['pool-1-thread-12', 'pool-N-thread'],
    ['erts_sched_2', 'erts_sched'],
    ['GC Thread#0', 'GC Thread'],
    ['tokio-runtime-w 3', 'tokio-runtime-w'],
    ['worker-12', 'worker'],
    ['logger', 'logger'],
  ];
  for (const [name, group] of cases) assert.equal(threadGroupName(name), group, name);
  const samples: Sample[] = [];
  const names = ['1_scheduler', 'logger', '2_scheduler', 'worker-1'];
  const per = [5, 1, 3, 2];
  let k = 0;
  per.forEach((n, t) => {
    for (let i = 0; i < n; i++) samples.push({ stack: ['main'], weight: 1, time: (k++) * 1e6, thread: t });
  });
  const r = raw(samples, names);
  const groups = trackGroups(r);
  assert.deepEqual(groups.map((g) => [g.name, g.threads, g.samples]), [['scheduler', [0, 2], 8], ['worker', [3], 2], ['logger', [1], 1]]);
  // "One root per thread group" names and groups threads as the tracks do.
  const roots = threadRoots(r, 'groups');
  assert.deepEqual([...roots.names].sort(), groups.map((g) => g.name).sort());
  for (const g of groups) for (const t of g.threads) assert.equal(roots.names[roots.rootOf[t]], g.name, names[t]);
  // One pass, one histogram per group: together the strip's.
  const rows = histograms(r, 4, [0, 11e6], null, groupOf(groups, names.length), groups.length);
  const whole = histogram(r, 4, [0, 11e6]);
  for (let b = 0; b < 4; b++) assert.equal(rows.reduce((s, h) => s + h.buckets[b], 0), whole.buckets[b]);
  assert.equal(rows[0].buckets.reduce((s, x) => s + x, 0), 8);
  // Click: the track alone; ctrl-click: added, or taken out when wholly selected.
  assert.deepEqual(selectTracks([], [2, 0], false), [0, 2]);
  assert.deepEqual(selectTracks([0, 2], [1], true), [0, 1, 2]);
  assert.deepEqual(selectTracks([0, 1, 2], [0, 2], true), [1]);
  assert.deepEqual(selectTracks([1], [1], true), [1], 'never nothing');
  assert.deepEqual(selectTracks([1], [3], false), [3]);
  assert.equal(isSelected([0, 2], [0, 2]), true);
  assert.equal(isSelected([0], [0, 2]), false);
  assert.equal(isSelected([], [0]), false, 'no selection: the "all threads" track');
});

test('tracks: activity as a share of one CPU, or of the wall time blocked, per bucket', () => {
  // A 999 Hz timer's samples (1 ms of CPU each) over 40 ms in four 10 ms buckets:
  // 1_scheduler every ms of 0–9 ms (10 samples: 100%), 2_scheduler every 2 ms of 0–9 ms
  // (5: 50%) and every ms of 10–19 ms (10: 100%), logger at 20, 22, 24, 26 ms (4: 40%).
  const samples: Sample[] = [];
  const at = (thread: number, ms: number[]): void => ms.forEach((m) => samples.push({ stack: ['main'], weight: 1, time: m * 1e6, thread }));
  at(0, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  at(1, [0, 2, 4, 6, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  at(2, [20, 22, 24, 26]);
  const r = raw(samples, ['1_scheduler', '2_scheduler', 'logger']);
  const unit = Unit.of({ unit: 'samples', event: 'cpu-clock', quantity: 'samples', samplePeriodNs: 1e6 });
  assert.equal(activityKind(unit), 'cpu');
  const groups = trackGroups(r);
  assert.deepEqual(groups.map((g) => g.name), ['scheduler', 'logger']);
  const [sched, logger] = histograms(r, 4, [0, 40e6], null, groupOf(groups, 3), 2);
  const a = activity('cpu', sched, null, unit.ns(1), 2);
  assert.deepEqual([...a.own], [1.5, 1, 0, 0], 'two threads: 15 ms then 10 ms of CPU in 10 ms');
  assert.deepEqual([...a.ownNs], [15e6, 10e6, 0, 0]);
  assert.equal(a.top, 1.5, 'the full height is the group\'s busiest bucket beyond one CPU');
  assert.equal(fullHeight(a), '1.50 CPUs');
  assert.equal(describeBucket(a, 0, 0, (w) => unit.format(w)), '1.50 CPUs, 15.0 ms at 0.00 s');
  // On a one-CPU machine two threads use one CPU at most: the scale stops there.
  assert.equal(activity('cpu', sched, null, unit.ns(1), 2, 1).top, 1);
  assert.equal(activity('cpu', sched, null, unit.ns(1), 2, 4).top, 1.5);
  const l = activity('cpu', logger, null, unit.ns(1), 1);
  assert.deepEqual([...l.own], [0, 0, 0.4, 0]);
  assert.equal(l.top, 1, 'one CPU at full height when the track used less');
  assert.equal(fullHeight(l), '1 CPU');
  // On the page's clock: a run whose measurement began 1 s before the profile's origin.
  assert.equal(describeBucket(l, 2, 1e9, (w) => unit.format(w)), '0.40 CPU, 4.00 ms at 1.02 s');
  // The off-CPU profile's time blocked, on its own scale (a share of the threads' time):
  // 6 ms of the logger's third bucket; it never raises the CPU scale.
  const off = { buckets: Float64Array.from([0, 0, 6e6, 0]), from: 0, to: 40e6, max: 6e6 };
  const s = activity('cpu', logger, off, unit.ns(1), 1);
  assert.deepEqual([...(s.off ?? [])], [0, 0, 0.6, 0]);
  assert.equal(s.top, 1, 'one CPU, whatever the time blocked');
  assert.equal(describeBucket(s, 2, 0, (w) => unit.format(w)), '0.40 CPU, 4.00 ms; blocked 60% of the time, 6.00 ms at 0.02 s');
  // Two threads blocked 30 ms in 10 ms (each blocked, then the other): 150% of one
  // thread's time is 75% of the two threads', and the CPU scale stays the CPU's.
  const offTwo = { buckets: Float64Array.from([15e6, 0, 0, 0]), from: 0, to: 40e6, max: 15e6 };
  const st = activity('cpu', sched, offTwo, unit.ns(1), 2, 2);
  assert.deepEqual([...(st.off ?? [])], [0.75, 0, 0, 0]);
  assert.equal(st.top, 1.5);
  assert.equal(describeBucket(st, 0, 0, (w) => unit.format(w)), "1.50 CPUs, 15.0 ms; blocked 75% of 2 threads' time, 15.0 ms at 0.00 s");
  // An off-CPU profile: a 10 ms block from 5 ms, half in each of the first two buckets.
  const blocks = raw([{ stack: ['main', 'sleep'], weight: 10e6, time: 5e6, thread: 0 }], ['worker-1']);
  const ou = Unit.of({ unit: 'ns', event: 'offcpu', quantity: 'time', nsPerUnit: 1 });
  assert.equal(activityKind(ou), 'blocked');
  const [bh] = histograms(blocks, 4, [0, 40e6], 1, Int32Array.of(0), 1);
  const b = activity('blocked', bh, null, ou.ns(1), 1);
  assert.deepEqual([...b.own], [0.5, 0.5, 0, 0]);
  assert.equal(describeBucket(b, 1, 0, (w) => ou.format(w)), 'blocked 50% of the time, 5.00 ms at 0.01 s');
  assert.equal(fullHeight(b), '100% of the time');
  // Weights that are not time: the busiest bucket at full height, the weight said.
  const bytes = Unit.of({ unit: 'bytes', quantity: 'bytes' });
  assert.equal(activityKind(bytes), 'weight');
  const w = activity(activityKind(bytes), sched, null, 0, 2);
  assert.equal(w.top, 15);
  assert.equal(describeBucket(w, 0, 0, (x) => bytes.format(x)), '15 B at 0.00 s');
  assert.equal(fullHeight(w), '');
  // One thread is on one CPU at most: 15 ms in 10 ms on one thread is jitter, clipped at
  // full height (one CPU), said as measured.
  const one = activity('cpu', sched, null, unit.ns(1), 1);
  assert.equal(one.top, 1);
  assert.equal(describeBucket(one, 0, 0, (x) => unit.format(x)), '1.50 CPUs, 15.0 ms at 0.00 s');
  assert.deepEqual([0, 0.0004, 0.045, 0.3449, 2.3].map(percent), ['0%', '<0.1%', '4.5%', '34%', '230%']);
});

test('search: smart case, and process and thread names only when asked', () => {
  assert.equal(hasCapital('Lock'), true);
  assert.equal(hasCapital('lock'), false);
  assert.equal(hasCapital('\\bl\\S+\\W\\p{Lu}'), false, 'escapes are not letters to match');
  const m = new Model([raw([{ stack: ['main', 'Lock_acquire'], weight: 1, time: 0, thread: 0 }, { stack: ['main', 'lock_wait'], weight: 1, time: 1, thread: 1 }], ['Locker', 'worker'])], meta());
  const s = { ...defaultState('hot', false, false), threadMode: 'threads' as const };
  const frames = m.frames(s);
  const matched = (query: string, extra: Partial<typeof s> = {}): string[] => {
    const { match } = m.search({ ...s, query, ...extra }, frames);
    return frames.names.filter((_, f) => match![f]);
  };
  assert.deepEqual(matched('lock'), ['Lock_acquire', 'lock_wait']);
  assert.deepEqual(matched('Lock'), ['Lock_acquire']);
  assert.deepEqual(matched('lock', { matchCase: true }), ['lock_wait']);
  assert.deepEqual(matched('ker'), [], 'thread names are not functions');
  assert.deepEqual(matched('ker', { searchNames: true }), ['Locker [100]', 'worker [101]']);
});

test('instants on a time axis keep the digits their resolution needs', () => {
  assert.equal(formatInstant(12_503_100_000, 1e6), '12.503 s');
  assert.equal(formatInstant(12_503_100_000, 1e9), '13 s');
  assert.equal(formatInstant(-2_000_000_000, 1e8), '-2.0 s');
  assert.equal(formatInstant(-1, 1e8), '0.0 s');
  const ticks = [0, 1, 2, 3].map((k) => formatInstant(12.5e9 + k * 2e5, 2e5));
  assert.equal(new Set(ticks).size, 4, `${ticks}`);
});

test('a window\'s tree from the time index equals a pass over every sample, points and spans', () => {
  const r = rng(11);
  for (let round = 0; round < 80; round++) {
    const samples: Sample[] = [];
    const n = 1 + Math.floor(r() * 200);
    for (let i = 0; i < n; i++) {
      const stack = ['main', ['a', 'b', 'c', 'd'][Math.floor(r() * 4)]];
      if (r() < 0.5) stack.push('leaf');
      // Out of time order now and then, a few without a time.
      samples.push({ stack, weight: Math.floor(r() * 50), time: r() < 0.05 ? -1 : Math.floor(r() * 1000), thread: -1 });
    }
    const spans = round % 2 === 1;
    const m = new Model([raw(samples)], meta(spans ? { unit: 'ns', quantity: 'time', nsPerUnit: 1 } : { unit: 'samples', quantity: 'samples' }));
    assert.equal(m.nsPerWeight, spans ? 1 : null);
    for (let k = 0; k < 10; k++) {
      const a = Math.floor(r() * 1100) - 50;
      const b = a + Math.floor(r() * 400);
      const d = m.derive({ ...defaultState('hot', false, false), range: [a, b] });
      let total = 0;
      let count = 0;
      for (const x of samples) {
        if (x.time < 0) continue;
        let part: number;
        if (spans && x.weight > 0) {
          const covered = Math.min(x.time + x.weight, b) - Math.max(x.time, a);
          part = covered <= 0 ? 0 : covered >= x.weight ? 1 : covered / x.weight;
        } else part = x.time >= a && x.time <= b ? 1 : 0;
        if (part > 0) {
          total += x.weight * part;
          count++;
        }
      }
      assert.ok(Math.abs(d.layout.total[0] - total) < 1e-9 * Math.max(1, total), `round ${round}, [${a}, ${b}]: ${d.layout.total[0]} vs ${total}`);
      assert.equal(d.layout.count[0], count, `round ${round}, [${a}, ${b}]: samples`);
    }
  }
});

test('categories: a node is its frame’s category, else its caller’s; unnamed frames and yields defer; threads decide, but for garbage collection; shares are self weights', () => {
  // 0 main, 1 gc, 2 memcpy, 3 sys_read [k], 4 beam.smp+0x10, 5 erts_schedule,
  // 6 sched_yield [k], 7 irq [k], 8 the thread root `dirty_cpu_s [12]`.
  const names = ['main', 'gc', 'memcpy', 'sys_read', 'beam.smp+0x10', 'erts_schedule', 'sched_yield', 'irq', 'dirty_cpu_s [12]'];
  const kinds = Uint8Array.from([1, 1, 1, 2, 1, 1, 2, 2, 5]);
  const fs = { names, kinds, order: Uint32Array.from(names.map((_, i) => i)) };
  // Categories: 0 garbage collection, 1 read, 2 runtime, 3 scheduler, 4 yield, 5 dirty, 6 other, 7 other (kernel).
  const c: FrameCategories = {
    names: ['garbage collection', 'read', 'runtime', 'scheduler', 'yield', 'dirty', 'other', 'other (kernel)'],
    frames: [['gc', 0, 0], ['sys_read', 1, 1], ['beam.smp+0x10', 0, 2], ['erts_schedule', 0, 3], ['sched_yield', 1, 4], ['sys_read', 0, 2]],
    threads: [['dirty_cpu_s', 5]],
    other: 6,
    other_kernel: 7,
    yield_category: 4,
    gc_category: 0,
  };
  assert.ok(isFrameCategories(c));
  assert.ok(!isFrameCategories({ ...c, other: 99 }), 'an index out of range');
  assert.ok(!isFrameCategories({ ...c, frames: [['x', 0, 'GC']] }));
  const cases: [number[], string][] = [
    [[0], 'other'],
    [[0, 1], 'garbage collection'],
    [[0, 1, 2], 'garbage collection'],
    [[0, 3], 'read'],
    [[0, 1, 3], 'read'],
    [[0, 4], 'runtime'],
    [[0, 5, 4], 'scheduler'],
    [[0, 5, 6], 'scheduler'],
    [[0, 6], 'yield'],
    [[0, 7], 'other (kernel)'],
    [[0, 1, 7], 'garbage collection'],
    // A dirty scheduler collecting a large heap: garbage collection, as msacc counts it.
    [[8, 0, 1], 'garbage collection'],
    [[8, 0], 'dirty'],
    [[8, 0, 3], 'dirty'],
  ];
  const tree = treeOf(cases.map(([p], i) => [p, i + 1]), names.length);
  const l = layoutTree(tree, fs, 'alphabetical');
  const cats = nodeCategories(l, fs, c);
  const byPath = new Map<string, string>();
  for (let v = 1; v < l.n; v++) byPath.set(pathTo(l, v).filter((f) => f >= 0).join(','), c.names[cats[v]]);
  for (const [p, want] of cases) assert.equal(byPath.get(p.join(',')), want, `stack ${p.map((f) => names[f]).join(';')}`);
  // Shares: each case's weight (its index + 1) in its category.
  const total = cases.reduce((s, _, i) => s + i + 1, 0);
  const want = c.names.map((n) => (cases.reduce((s, [, k], i) => s + (k === n ? i + 1 : 0), 0) / total) * 100);
  const got = categoryShares(l, cats, c.names.length);
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) < 1e-9, `${c.names[i]}: ${g} vs ${want[i]}`));
});

test('categories: the colour mode and the highlighted category round-trip through the URL', () => {
  const d = defaultState('hot', false, false, 'flame', 'category');
  const s = { ...d, colors: 'palette' as const, category: 3 };
  const p = toParams(s, d);
  assert.equal(p.get('colors'), 'palette');
  assert.equal(p.get('cat'), '3');
  const back = fromParams(p, d, 10);
  assert.equal(back.colors, 'palette');
  assert.equal(back.category, 3);
  assert.equal(toParams(d, d).toString(), '', 'the default writes nothing');
  const bad = fromParams(new URLSearchParams('colors=rainbow&cat=-2'), d, 10);
  assert.equal(bad.colors, 'category');
  assert.equal(bad.category, -1);
});
