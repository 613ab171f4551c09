// Unit tests of the DOM-free model (src/lib, src/app-state/state.ts, src/import/decode.ts),
// run with `npm test` (node's built-in test runner). Transforms and layouts are checked
// against a slow, obviously-correct model over explicit stack lists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Tree, TreeBuilder, FrameSet, threadGroupName, libraryOf } from '../src/lib/profile.js';
import { Transform, applyTransforms, decodeTransforms, encodeTransforms } from '../src/lib/transforms.js';
import { layoutTree, nodeAt, pathOf, findPath } from '../src/lib/layout.js';
import { calleesTree, callersTree, compileSearch, functionStats, matchFrames, matchedWeight } from '../src/lib/analysis.js';
import { diffLayout, diffColor, joinFrames, markedFrames, maxDelta, remapFrames, NEW_COLOR, GONE_COLOR } from '../src/lib/diff.js';
import { defaultState, fromHash, toHash } from '../src/app-state/state.js';
import { colorOf, nameHash } from '../src/lib/palette.js';
import { decodeProfile, DecodeError } from '../src/import/decode.js';
import { percent } from '../src/lib/format.js';
import { CallTree, heaviestFirst } from '../src/lib/calltree.js';

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

/** Leaf paths with self weight, as "a;b;c" -> weight (the root's own weight under ""). */
function folded(t: Tree): Map<string, number> {
  const out = new Map<string, number>();
  const paths: string[] = [];
  for (let i = 0; i < t.length; i++) {
    paths[i] = (t.parent[i] >= 0 ? paths[t.parent[i]] + ';' : '') + t.frame[i];
    if (t.self[i] > 0) out.set(paths[i], (out.get(paths[i]) ?? 0) + t.self[i]);
  }
  const rootSelf = (t as Tree & { rootSelf?: number }).rootSelf ?? 0;
  if (rootSelf > 0) out.set('', rootSelf);
  return out;
}

/** Sample counts per leaf path, like folded(). */
function counts(t: Tree): Map<string, number> {
  const out = new Map<string, number>();
  const paths: string[] = [];
  for (let i = 0; i < t.length; i++) {
    paths[i] = (t.parent[i] >= 0 ? paths[t.parent[i]] + ';' : '') + t.frame[i];
    if (t.count[i] > 0) out.set(paths[i], (out.get(paths[i]) ?? 0) + t.count[i]);
  }
  const rootCount = (t as Tree & { rootCount?: number }).rootCount ?? 0;
  if (rootCount > 0) out.set('', rootCount);
  return out;
}

function foldedRef(stacks: Stacks): Map<string, number> {
  const out = new Map<string, number>();
  for (const [p, w] of stacks) {
    const k = p.join(';');
    out.set(k, (out.get(k) ?? 0) + w);
  }
  return out;
}

/** Libraries of the random profiles: frame x of nFrames is in library nFrames + x % 2 when x % 3 > 0. */
function randomLibraries(nFrames: number): Int32Array {
  const lib = new Int32Array(nFrames + 2).fill(-1);
  for (let x = 0; x < nFrames; x++) if (x % 3 > 0) lib[x] = nFrames + (x % 2);
  return lib;
}

function refTransform(stacks: Stacks, tr: Transform, lib: Int32Array = new Int32Array(0)): Stacks {
  const out: Stacks = [];
  for (const [p, w] of stacks) {
    switch (tr.kind) {
      case 'merge-call-node':
        out.push([tr.path.every((f, i) => p[i] === f) ? p.filter((_, i) => i !== tr.path.length - 1) : p, w]);
        break;
      case 'collapse-direct-recursion':
        out.push([p.filter((x, i) => !(x === tr.f && i > 0 && p[i - 1] === tr.f)), w]);
        break;
      case 'collapse-library': {
        const r: number[] = [];
        p.forEach((x, i) => {
          if (lib[x] !== tr.f) r.push(x);
          else if (i === 0 || lib[p[i - 1]] !== tr.f) r.push(tr.f);
        });
        out.push([r, w]);
        break;
      }
      case 'merge':
        out.push([p.filter((x) => x !== tr.f), w]);
        break;
      case 'drop':
        if (!p.includes(tr.f)) out.push([p, w]);
        break;
      case 'focus-function': {
        const i = p.indexOf(tr.f);
        if (i >= 0) out.push([p.slice(i), w]);
        break;
      }
      case 'focus-subtree':
        if (tr.path.every((f, i) => p[i] === f)) out.push([p.slice(tr.path.length - 1), w]);
        break;
      case 'collapse-recursion': {
        let r: number[] = [];
        for (const x of p) {
          if (x === tr.f && r.includes(tr.f)) r = r.slice(0, r.indexOf(tr.f) + 1);
          else r.push(x);
        }
        out.push([r, w]);
        break;
      }
    }
  }
  return out;
}

// A small deterministic PRNG so failures reproduce.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomStacks(r: () => number, nFrames: number): Stacks {
  const out: Stacks = [];
  const n = 1 + Math.floor(r() * 40);
  for (let i = 0; i < n; i++) {
    const len = 1 + Math.floor(r() * 7);
    out.push([Array.from({ length: len }, () => Math.floor(r() * nFrames)), 1 + Math.floor(r() * 9)]);
  }
  return out;
}

function randomTransform(r: () => number, nFrames: number, stacks: Stacks): Transform {
  const f = Math.floor(r() * nFrames);
  const p = stacks[Math.floor(r() * stacks.length)][0];
  switch (Math.floor(r() * 8)) {
    case 5:
      return { kind: 'merge-call-node', path: p.slice(0, 1 + Math.floor(r() * p.length)) };
    case 6:
      return { kind: 'collapse-direct-recursion', f };
    case 7:
      return { kind: 'collapse-library', f: nFrames + Math.floor(r() * 2) };
    case 0:
      return { kind: 'merge', f };
    case 1:
      return { kind: 'drop', f };
    case 2:
      return { kind: 'focus-function', f };
    case 3:
      return { kind: 'focus-subtree', path: p.slice(0, 1 + Math.floor(r() * p.length)) };
    default:
      return { kind: 'collapse-recursion', f };
  }
}

test('transforms agree with the reference model on random profiles', () => {
  const r = rng(42);
  for (let round = 0; round < 2000; round++) {
    const nFrames = 2 + Math.floor(r() * 5);
    let stacks = randomStacks(r, nFrames);
    const trs: Transform[] = [];
    for (let k = 0, n = 1 + Math.floor(r() * 3); k < n; k++) {
      const tr = randomTransform(r, nFrames, stacks.length ? stacks : [[[0], 1]]);
      trs.push(tr);
    }
    const lib = randomLibraries(nFrames);
    const t = applyTransforms(treeOf(stacks, nFrames + 2), trs, nFrames + 2, lib);
    for (const tr of trs) stacks = refTransform(stacks, tr, lib);
    assert.deepEqual(folded(t), foldedRef(stacks), `round ${round}: ${JSON.stringify(trs)}`);
    // A tree: no two children of one node share a frame (transforms look children up
    // only where merging can make them meet).
    const pairs = new Set<string>();
    for (let i = 0; i < t.length; i++) pairs.add(`${t.parent[i]}/${t.frame[i]}`);
    assert.equal(pairs.size, t.length, `round ${round}: siblings share a frame after ${JSON.stringify(trs)}`);
    const ones: Stacks = stacks.map(([p]) => [p, 1]);
    assert.deepEqual(counts(t), foldedRef(ones), `counts, round ${round}`);
  }
});

const frames = (names: string[]): FrameSet => {
  const order = new Uint32Array(names.length);
  names.map((_, i) => i).sort((a, b) => (names[a] < names[b] ? -1 : 1)).forEach((f, r) => (order[f] = r));
  return { names, kinds: new Uint8Array(names.length), order };
};

test('layout: totals, starts, alphabetical and left-heavy order, hit testing', () => {
  // frames: 0 main, 1 b, 2 a
  const fs = frames(['main', 'b', 'a']);
  const t = treeOf([[[0, 1], 5], [[0, 2], 2], [[0], 1]], 3);
  const l = layoutTree(t, fs, 'alphabetical');
  assert.equal(l.total[0], 8);
  const main = findPath(l, [0]);
  const a = findPath(l, [0, 2]);
  const b = findPath(l, [0, 1]);
  assert.equal(l.total[main], 8);
  // A frame's own weight comes first, then its callees (flamegraph.pl's placement).
  assert.equal(l.start[a], 1, 'a before b alphabetically, after main\'s self weight');
  assert.equal(l.start[b], 3);
  assert.deepEqual(pathOf(l, b), [0, 1]);
  assert.equal(l.maxDepth, 2);
  assert.deepEqual(Array.from(l.rows[2]), [a, b]);
  assert.equal(nodeAt(l, 2, 1.5), a);
  assert.equal(nodeAt(l, 2, 0.5), -1, 'self weight of main is empty space');
  const h = layoutTree(t, fs, 'left-heavy');
  assert.equal(h.start[findPath(h, [0, 1])], 1, 'heaviest first');
});

test('search counts nested matches once, and regex errors are reported', () => {
  const fs = frames(['main', 'Lock', 'lock_inner', 'work']);
  const t = treeOf([[[0, 1, 2], 4], [[0, 3], 6], [[0, 1], 2]], 4);
  const l = layoutTree(t, fs, 'alphabetical');
  const re = compileSearch('lock', false) as RegExp;
  const m = matchFrames(fs, re);
  assert.deepEqual(Array.from(m), [0, 1, 1, 0]);
  assert.equal(matchedWeight(l, m), 6);
  assert.equal(percent(matchedWeight(l, m), l.total[0]), '50.0%');
  const cs = compileSearch('lock', true) as RegExp;
  assert.equal(matchedWeight(l, matchFrames(fs, cs)), 4, 'case-sensitive: only lock_inner');
  assert.ok(compileSearch('(', false) instanceof Error);
  assert.equal(compileSearch('', false), null);
});

test('function table counts recursive totals once', () => {
  const fs = frames(['main', 'fib']);
  const t = treeOf([[[0, 1, 1, 1], 3], [[0, 1], 1], [[0], 2]], 2);
  const l = layoutTree(t, fs, 'alphabetical');
  const s = functionStats(l, 2);
  assert.equal(s.total[1], 4);
  assert.equal(s.self[1], 4);
  assert.equal(s.total[0], 6);
  assert.equal(s.self[0], 2);
  assert.deepEqual(Array.from(s.present), [0, 1]);
});

test('sandwich: callers and callees of a function', () => {
  // 0 main, 1 a, 2 b, 3 f, 4 g
  const fs = frames(['main', 'a', 'b', 'f', 'g']);
  const t = treeOf([[[0, 1, 3, 4], 3], [[0, 2, 3], 2], [[0, 1, 3, 3], 1], [[0, 4], 7]], 5);
  const l = layoutTree(t, fs, 'alphabetical');
  const callers = folded(callersTree(l, 3, 5));
  assert.deepEqual(callers, new Map([['3;1;0', 4], ['3;2;0', 2]]));
  const callees = folded(calleesTree(l, 3, 5));
  assert.deepEqual(callees, new Map([['3;4', 3], ['3', 2], ['3;3', 1]]));
});

test('diff: normalisation, new and gone stacks keep their colours', () => {
  const fa = frames(['main', 'old', 'same']);
  const fb = frames(['same', 'main', 'new']);
  const j = joinFrames(fa, fb);
  assert.equal(j.frames.names.length, 4);
  const a = remapFrames(treeOf([[[0, 1], 10], [[0, 2], 10]], 3), j.mapA);
  const b = remapFrames(treeOf([[[1, 0], 40], [[1, 2], 40]], 3), j.mapB);
  const d = diffLayout(a, b, j.frames, 'alphabetical', true);
  const id = (n: string) => j.frames.names.indexOf(n);
  const main = findPath(d.layout, [id('main')]);
  const same = findPath(d.layout, [id('main'), id('same')]);
  const old = findPath(d.layout, [id('main'), id('old')]);
  const nw = findPath(d.layout, [id('main'), id('new')]);
  assert.equal(d.scale, 4);
  assert.equal(d.before[same], 40);
  assert.equal(d.after[same], 40);
  assert.equal(d.after[old], 0);
  assert.equal(d.layout.total[old], 40, 'gone stacks keep their (normalised) before width');
  assert.equal(d.before[nw], 0);
  assert.equal(diffColor(d.before[nw], d.after[nw], 1), NEW_COLOR);
  assert.equal(diffColor(d.before[old], d.after[old], 1), GONE_COLOR);
  assert.equal(diffColor(10, 20, 10), 'rgb(255,45,45)');
  assert.equal(diffColor(20, 10, 10), 'rgb(45,45,255)');
  assert.ok(main > 0);
  const raw = diffLayout(a, b, j.frames, 'alphabetical', false);
  assert.equal(raw.before[findPath(raw.layout, [id('main'), id('same')])], 10);
});

test('diff: only the functions marked beyond noise set the colour scale', () => {
  const f = frames(['main', 'noisy', 'real']);
  const a = treeOf([[[0, 1], 10], [[0, 2], 10]], 3);
  const b = treeOf([[[0, 1], 100], [[0, 2], 14]], 3);
  const d = diffLayout(a, b, f, 'alphabetical', false);
  const marked = markedFrames(f.names, ['real']);
  assert.deepEqual(marked, [false, false, true]);
  assert.equal(maxDelta(d), 94, 'every frame: main (and its noisy callee) set the scale');
  assert.equal(maxDelta(d, (v) => marked[d.layout.frame[v]]), 4, 'marked frames only');
});

/** The tree's nodes as "path: self/total", root to leaf, depth first. */
function shape(t: Tree, names: string[]): string[] {
  const l = layoutTree(t, frames(names), 'alphabetical');
  const out: string[] = [];
  const walk = (v: number, path: string): void => {
    for (let k = l.childStart[v]; k < l.childStart[v + 1]; k++) {
      const c = l.childList[k];
      const p = path ? `${path};${names[l.frame[c]]}` : names[l.frame[c]];
      out.push(`${p}: ${l.self[c]}/${l.total[c]}`);
      walk(c, p);
    }
  };
  walk(0, '');
  return out;
}

test('tree builder: one node per (parent, frame) through the index\'s growth; appended nodes stay out of it', () => {
  const b = new TreeBuilder(1000, 16);
  const r = rng(5);
  const seen = new Map<string, number>();
  for (let k = 0; k < 20000; k++) {
    const p = b.length && r() < 0.9 ? Math.floor(r() * b.length) : -1;
    const f = Math.floor(r() * 50);
    const id = b.intern(p, f);
    const key = `${p}/${f}`;
    if (seen.has(key)) assert.equal(id, seen.get(key), key);
    else {
      assert.equal(id, b.length - 1, `${key} is new`);
      seen.set(key, id);
    }
    if (k % 7 === 0) {
      const a = b.append(id, 999);
      assert.equal(a, b.length - 1);
      assert.notEqual(b.intern(id, 999), a, 'an appended node is not found by a lookup');
    }
  }
  assert.equal(b.finish().length, b.length);
});

test('merge node only removes that one call node; other calls of the function stay', () => {
  const names = ['a', 'b', 'c', 'd'];
  const [a, b, c, d] = [0, 1, 2, 3];
  const t = treeOf([[[a, b, c], 3], [[a, b], 4], [[a, c, b], 2], [[b, c], 1], [[a, b, d], 5]], 4);
  const out = applyTransforms(t, [{ kind: 'merge-call-node', path: [a, b] }], 4);
  // a;b's callees join a's own (c: 3 + a;c's 2 under it), its self weight goes to a.
  assert.deepEqual(shape(out, names), ['a: 4/14', 'a;c: 3/5', 'a;c;b: 2/2', 'a;d: 5/5', 'b: 0/1', 'b;c: 1/1']);
  assert.equal(layoutTree(out, frames(names), 'alphabetical').total[0], 15, 'weights preserved');
  // A root node merged: its callees become roots, its own weight stays in the total.
  const root = applyTransforms(t, [{ kind: 'merge-call-node', path: [b] }], 4);
  assert.deepEqual(shape(root, names), ['a: 0/14', 'a;b: 4/12', 'a;b;c: 3/3', 'a;b;d: 5/5', 'a;c: 0/2', 'a;c;b: 2/2', 'c: 1/1']);
});

test('collapse direct recursion only: f calling f collapses, f through g to f stays', () => {
  const names = ['f', 'g', 'h'];
  const [f, g, h] = [0, 1, 2];
  const t = treeOf([[[f, f, g], 1], [[f, g, f, h], 2], [[f, f, f], 4], [[g, f, f, h], 8]], 3);
  const direct = applyTransforms(t, [{ kind: 'collapse-direct-recursion', f }], 3);
  assert.deepEqual(shape(direct, names), ['f: 4/7', 'f;g: 1/3', 'f;g;f: 0/2', 'f;g;f;h: 2/2', 'g: 0/8', 'g;f: 0/8', 'g;f;h: 8/8']);
  // The existing collapse also folds the indirect call f;g;f into the outer f.
  const any = applyTransforms(t, [{ kind: 'collapse-recursion', f }], 3);
  assert.deepEqual(shape(any, names), ['f: 4/7', 'f;g: 1/1', 'f;h: 2/2', 'g: 0/8', 'g;f: 0/8', 'g;f;h: 8/8']);
});

test('collapse library: each run of one library\'s frames becomes one frame named after it', () => {
  // Frames 0-4, then the library frames 5 (libc.so.6) and 6 (kernel), as frameSetOf numbers them.
  const names = ['main', 'libc.so.6`malloc', 'libc.so.6`_int_malloc', 'sys_brk_[k]', 'work', 'libc.so.6', 'kernel'];
  const lib = Int32Array.from([-1, 5, 5, 6, -1, -1, -1]);
  const [main, malloc, intMalloc, brk, work] = [0, 1, 2, 3, 4];
  const t = treeOf([[[main, malloc, intMalloc, brk], 3], [[main, malloc], 1], [[main, work, malloc, work, intMalloc], 2], [[main, intMalloc], 5]], 7);
  const out = applyTransforms(t, [{ kind: 'collapse-library', f: 5 }], 7, lib);
  assert.deepEqual(shape(out, names), [
    'main: 0/11',
    'main;libc.so.6: 6/9',
    'main;libc.so.6;sys_brk_[k]: 3/3',
    'main;work: 0/2',
    'main;work;libc.so.6: 0/2',
    'main;work;libc.so.6;work: 0/2',
    'main;work;libc.so.6;work;libc.so.6: 2/2',
  ]);
  assert.equal(libraryOf('libc.so.6`malloc', 0), 'libc.so.6');
  assert.equal(libraryOf('[libc.so.6]', 0), 'libc.so.6');
  assert.equal(libraryOf('[libz.so.1 <0x7f12>]', 0), 'libz.so.1');
  assert.equal(libraryOf('malloc [libc.so.6]', 0), 'libc.so.6');
  assert.equal(libraryOf('server+0x1a2f', 0), 'server');
  assert.equal(libraryOf('sys_brk_[k]', 0), 'kernel');
  assert.equal(libraryOf('schedule', 2), 'kernel');
  for (const plain of ['main', '[unknown]', 'foo_[j]', 'worker [123]', 'a+b', 'std::vector<int>::push_back']) assert.equal(libraryOf(plain, 0), null, plain);
});

test('URL state round-trips and ignores garbage', () => {
  const def = defaultState('hot', false, false);
  const s = {
    ...def,
    view: 'sandwich' as const,
    icicle: true,
    order: 'left-heavy' as const,
    query: 'a&b=c#d',
    matchCase: true,
    zoom: [1, 2, 3],
    transforms: [
      { kind: 'merge', f: 4 },
      { kind: 'focus-subtree', path: [1, 2] },
      { kind: 'merge-call-node', path: [1, 3] },
      { kind: 'collapse-direct-recursion', f: 5 },
      { kind: 'collapse-library', f: 9 },
    ] as Transform[],
    range: [100, 2000] as [number, number],
    fn: 7,
    palette: 'java' as const,
  };
  assert.deepEqual(fromHash('#' + toHash(s, def), def, 10), s);
  const bad = fromHash('#z=1.x&tf=m99~q1~S&t=9-1&fn=-3&palette=neon&v=evil', def, 10);
  assert.deepEqual(bad, def);
  assert.deepEqual(decodeTransforms(encodeTransforms(s.transforms), 10), s.transforms);
});

test('palettes: stable per name, within flamegraph.pl ranges', () => {
  assert.deepEqual(nameHash('foo'), nameHash('lib.so`foo'));
  assert.equal(colorOf('hot', 'x', 0), colorOf('hot', 'x', 0));
  const m = /^rgb\((\d+),(\d+),(\d+)\)$/.exec(colorOf('hot', 'some_function', 0));
  assert.ok(m);
  assert.ok(Number(m[1]) >= 205 && Number(m[3]) <= 55);
  assert.match(colorOf('java', 'java/lang/String.hashCode', 0), /^rgb\(\d+,2\d\d,/, 'java frames are green');
  assert.equal(threadGroupName('1_scheduler'), threadGroupName('12_scheduler'));
});

test('decoding rejects truncated or foreign data with a message', () => {
  assert.throws(() => decodeProfile(new Uint8Array(10)), DecodeError);
  const junk = new Uint8Array(64);
  assert.throws(() => decodeProfile(junk), /bad magic/);
  const hdr = new Uint8Array(64);
  const v = new DataView(hdr.buffer);
  v.setUint32(0, 0x31564e4b, true);
  v.setUint32(4, 2, true);
  v.setUint32(12, 1000, true); // 1000 strings but no data
  assert.throws(() => decodeProfile(hdr), /truncated/);
  v.setUint32(4, 1, true);
  assert.throws(() => decodeProfile(hdr), /version 1; this viewer reads version 2/);
});

test('call tree inverted: the functions that ran, heaviest first (ties in name order), each with its own weight and nodes; the fast sort is the comparator\'s', () => {
  const r = rng(7);
  for (let round = 0; round < 30; round++) {
    const nFrames = 2 + Math.floor(r() * 12);
    const names = Array.from({ length: nFrames }, (_, i) => `f${(i * 7) % nFrames}_${i}`);
    const fs = frames(names);
    const stacks = randomStacks(r, nFrames);
    const l = layoutTree(treeOf(stacks, nFrames), fs, 'alphabetical');
    const tree = new CallTree(l, true, fs.order);
    const roots = tree.roots();
    // Reference: self weight per frame, summed over nodes.
    const want = new Map<number, number>();
    for (let v = 1; v < l.n; v++) if (l.self[v] > 0) want.set(l.frame[v], (want.get(l.frame[v]) ?? 0) + l.self[v]);
    const order = [...want.keys()].sort((a, b) => want.get(b)! - want.get(a)! || fs.order[a] - fs.order[b]);
    assert.deepEqual(roots.map((n) => n.frame), order);
    for (const n of roots) {
      assert.equal(n.total, want.get(n.frame));
      const ws = [...n.weights!.subarray(n.from, n.to)];
      assert.equal(ws.reduce((a, b) => a + b, 0), n.total);
      assert.ok([...n.nodes!.subarray(n.from, n.to)].every((v) => l.frame[v] === n.frame && l.self[v] > 0));
      // Its callers: the weight of its nodes under a parent, by the parent's frame.
      const callers = new Map<number, number>();
      for (let v = 1; v < l.n; v++) if (l.self[v] > 0 && l.frame[v] === n.frame && l.parent[v] > 0) callers.set(l.frame[l.parent[v]], (callers.get(l.frame[l.parent[v]]) ?? 0) + l.self[v]);
      assert.deepEqual(new Map(tree.children(n).map((c) => [c.frame, c.total])), callers);
    }
  }
  // The packed sort (whole totals) and the comparator (fractional totals) agree.
  const sums = new Float64Array(1000);
  const rank = new Uint32Array(1000);
  const list: number[] = [];
  for (let f = 0; f < 1000; f++) {
    rank[f] = (f * 389) % 1000;
    sums[f] = Math.floor(r() * 20);
    if (sums[f] > 0) list.push(f);
  }
  const ref = (s: Float64Array) => [...list].sort((a, b) => s[b] - s[a] || rank[a] - rank[b]);
  assert.deepEqual([...heaviestFirst(list, sums, rank)], ref(sums));
  const frac = sums.map((x) => x / 3);
  assert.deepEqual([...heaviestFirst(list, frac, rank)], ref(frac));
  const big = sums.map((x) => x * 2 ** 40);
  assert.deepEqual([...heaviestFirst(list, big, rank)], ref(big));
});
