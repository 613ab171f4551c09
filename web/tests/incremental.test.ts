// Transforms applied only to the subtrees they touch give the whole tree's transform,
// node for node, on random trees in name order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyStepLocal, subtreeEnds } from '../src/lib/incremental.js';
import { Layout, Order, layoutTree, rowEnds } from '../src/lib/layout.js';
import { FrameSet, Tree, TreeBuilder } from '../src/lib/profile.js';
import { RootSelf, Transform, applyStep } from '../src/lib/transforms.js';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Ranks 0..n-1 in a random order (the frames' alphabetical ranks of a random tree). */
function shuffledRanks(r: () => number, n: number): Uint32Array {
  const order = Uint32Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const k = Math.floor(r() * (i + 1));
    [order[i], order[k]] = [order[k], order[i]];
  }
  return order;
}

/**
 * A random profile's frames: `min` to `min + spread` functions, then `libs` libraries (ids
 * nFrames..), ranks a permutation of all, each function in a library with odds `share`.
 */
function randomFrames(r: () => number, min: number, spread: number, libs: number, share: number) {
  const nFrames = min + Math.floor(r() * spread);
  const n = nFrames + libs;
  const order = shuffledRanks(r, n);
  const library = Int32Array.from({ length: n }, (_, i) => (i < nFrames && r() < share ? nFrames + Math.floor(r() * libs) : -1));
  return { nFrames, n, order, library };
}

/** A random tree in name order (ids depth first, children by rank) over nFrames frames. */
function randomTree(r: () => number, nFrames: number, order: Uint32Array): Tree {
  const stacks: number[][] = [];
  for (let k = 0, n = 20 + Math.floor(r() * 300); k < n; k++) {
    const base = stacks.length && r() < 0.7 ? stacks[Math.floor(r() * stacks.length)] : [];
    const keep = base.slice(0, Math.floor(r() * (base.length + 1)));
    const more = 1 + Math.floor(r() * 6);
    for (let d = 0; d < more; d++) keep.push(Math.floor(r() * nFrames));
    stacks.push(keep);
  }
  const cmp = (a: number[], b: number[]): number => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return order[a[i]] - order[b[i]];
    return a.length - b.length;
  };
  stacks.sort(cmp);
  const b = new TreeBuilder(nFrames);
  for (const s of stacks) {
    let p = -1;
    for (const f of s) p = b.intern(p, f);
    b.self[p] += 1 + Math.floor(r() * 9);
    b.count[p] += 1;
  }
  return { ...b.finish(), nameOrder: true };
}

function randomTransform(r: () => number, t: Tree, nFrames: number, libs: number[]): Transform {
  const kinds = ['merge', 'drop', 'collapse-recursion', 'collapse-direct-recursion', 'collapse-library', 'merge-call-node', 'focus-function', 'focus-subtree'] as const;
  const kind = kinds[Math.floor(r() * kinds.length)];
  // Frames that occur in the tree, mostly deep ones (whose subtrees are small).
  const v = Math.floor(t.length * (0.3 + 0.7 * r()));
  if (kind === 'merge-call-node' || kind === 'focus-subtree') {
    const path: number[] = [];
    for (let u = v; u >= 0; u = t.parent[u]) path.unshift(t.frame[u]);
    return { kind, path };
  }
  if (kind === 'collapse-library') return { kind, f: libs[Math.floor(r() * libs.length)] };
  return { kind, f: r() < 0.9 ? t.frame[v] : Math.floor(r() * nFrames) };
}

const plain = (t: Tree): object => {
  const x = t as Tree & RootSelf;
  return { parent: [...t.parent], frame: [...t.frame], self: [...t.self], count: [...t.count], length: t.length, rootSelf: x.rootSelf ?? 0, rootCount: x.rootCount ?? 0 };
};

test('subtree ends: each node is followed by its descendants, and only them', () => {
  const r = rng(7);
  const order = Uint32Array.from({ length: 30 }, (_, i) => (i * 7) % 30);
  for (let round = 0; round < 50; round++) {
    const t = randomTree(r, 30, order);
    const end = subtreeEnds(t);
    for (let i = 0; i < t.length; i++) {
      for (let k = i + 1; k < end[i]; k++) {
        let u = k;
        while (u > i) u = t.parent[u];
        assert.equal(u, i, `round ${round}: ${k} under ${i}`);
      }
      if (end[i] < t.length) assert.ok(t.parent[end[i]] < i, `round ${round}: ${end[i]} is outside ${i}`);
    }
  }
});

test('a transform applied where it changes the tree equals the whole tree transformed', () => {
  const r = rng(1234);
  let local = 0;
  const kinds = new Set<string>();
  for (let round = 0; round < 1500; round++) {
    const { nFrames, n, order, library } = randomFrames(r, 20, 60, 3, 0.3);
    let t = randomTree(r, nFrames, order);
    for (let step = 0, steps = 1 + Math.floor(r() * 3); step < steps; step++) {
      const tr = randomTransform(r, t, nFrames, [nFrames, nFrames + 1, nFrames + 2]);
      const whole = applyStep(t, tr, n, library, order).tree;
      const part = applyStepLocal(t, tr, n, library, order);
      if (part !== null) {
        local++;
        kinds.add(tr.kind);
        assert.equal(part.nameOrder, true);
        assert.deepEqual(plain(part), plain(whole), `round ${round}, step ${step}: ${JSON.stringify(tr)}`);
      }
      t = whole;
    }
  }
  // The subtrees' path is taken, for every kind it serves.
  assert.ok(local > 500, `only ${local} transforms were applied in place`);
  assert.deepEqual([...kinds].sort(), ['collapse-direct-recursion', 'collapse-library', 'collapse-recursion', 'drop', 'merge', 'merge-call-node']);
});

test("a layout written into a spare layout's arrays equals one laid out afresh", () => {
  const r = rng(99);
  const arrays = (l: Layout): object => ({
    n: l.n,
    maxDepth: l.maxDepth,
    parent: [...l.parent],
    frame: [...l.frame],
    depth: [...l.depth],
    self: [...l.self],
    total: [...l.total],
    start: [...l.start],
    rows: l.rows.map((row) => [...row]),
    ends: rowEnds(l).map((e) => [...e]),
    childStart: [...l.childStart],
    childList: [...l.childList],
  });
  let reused = 0;
  for (let round = 0; round < 400; round++) {
    const nFrames = 10 + Math.floor(r() * 40);
    const order = shuffledRanks(r, nFrames);
    const frames = { order } as unknown as FrameSet;
    const how: Order = r() < 0.7 ? 'alphabetical' : 'left-heavy';
    // The spare: another tree's layout (larger or smaller), its arrays then scribbled on,
    // as a layout no longer shown may hold anything.
    const spare = layoutTree(randomTree(r, nFrames, order), frames, how);
    rowEnds(spare);
    for (const a of [spare.parent, spare.frame, spare.depth, spare.rows[0], rowEnds(spare)[0]]) new Int32Array(a.buffer).fill(-7);
    for (const a of [spare.self, spare.total, spare.start]) a.fill(NaN);
    let t = randomTree(r, nFrames, order);
    if (r() < 0.3) t = { ...t, nameOrder: false };
    // Nodes left without weight (a window or hidden threads filter samples away).
    for (let i = 0; i < t.length; i++) if (r() < 0.15) t.self[i] = 0;
    const fresh = layoutTree(t, frames, how);
    const into = layoutTree(t, frames, how, undefined, spare);
    if (into.parent.buffer === spare.parent.buffer || into.start.buffer === spare.start.buffer) reused++;
    assert.deepEqual(arrays(into), arrays(fresh), `round ${round} (${how}, name order ${t.nameOrder === true})`);
  }
  assert.ok(reused > 100, `the spare's arrays were taken ${reused} times`);
});

test('each transform equals its definition on every stack, and stays in name order', () => {
  const r = rng(4242);
  /** Self weight and count per stack of a tree (its frames from the root, joined; '' for the root's own). */
  const stacks = (t: Tree): Map<string, [number, number]> => {
    const path: string[] = [];
    const m = new Map<string, [number, number]>();
    const x = t as Tree & RootSelf;
    if (x.rootSelf || x.rootCount) m.set('', [x.rootSelf ?? 0, x.rootCount ?? 0]);
    for (let i = 0; i < t.length; i++) {
      let d = 0;
      for (let u = t.parent[i]; u >= 0; u = t.parent[u]) d++;
      path.length = d;
      path.push(String(t.frame[i]));
      const k = path.join(';');
      const was = m.get(k) ?? [0, 0];
      m.set(k, [was[0] + t.self[i], was[1] + t.count[i]]);
    }
    for (const [k, v] of m) if (v[0] === 0 && v[1] === 0) m.delete(k);
    return m;
  };
  /** The transform on one stack, by its definition; null: the stack is dropped. */
  const define = (tr: Transform, fs: number[], library: Int32Array): number[] | null => {
    switch (tr.kind) {
      case 'merge':
        return fs.filter((f) => f !== tr.f);
      case 'drop':
        return fs.includes(tr.f) ? null : fs;
      case 'collapse-recursion': {
        // The outermost f keeps what its innermost f called; the frames between go.
        const a = fs.indexOf(tr.f);
        return a < 0 ? fs : fs.slice(0, a + 1).concat(fs.slice(fs.lastIndexOf(tr.f) + 1));
      }
      case 'collapse-direct-recursion':
        return fs.filter((f, k) => f !== tr.f || k === 0 || fs[k - 1] !== tr.f);
      case 'merge-call-node': {
        const n = tr.path.length;
        return fs.length >= n && tr.path.every((f, k) => fs[k] === f) ? fs.filter((_, k) => k !== n - 1) : fs;
      }
      case 'collapse-library':
        // Each run of the library's frames becomes one frame, the library's.
        return fs.map((f) => (library[f] === tr.f ? tr.f : f)).filter((f, k) => !(f === tr.f && k > 0 && library[fs[k - 1]] === tr.f));
      default:
        throw new Error(tr.kind);
    }
  };
  const kindsSeen = new Map<string, number>();
  let merged = 0;
  for (let round = 0; round < 1500; round++) {
    // Many frames in the libraries, so that runs and runs under one parent are common.
    const { nFrames, n, order, library } = randomFrames(r, 8, 30, 2, 0.5);
    const t = randomTree(r, nFrames, order);
    let tr = randomTransform(r, t, nFrames, [nFrames, nFrames + 1]);
    if (tr.kind === 'focus-function' || tr.kind === 'focus-subtree') tr = { kind: 'collapse-library', f: nFrames + (round & 1) };
    const { tree: out, map } = applyStep(t, tr, n, library, order);
    // Where each input node went: the node its stack's transform names (-1: none left).
    const path = (x: Tree, i: number): number[] => {
      const fs: number[] = [];
      for (let k = i; k >= 0; k = x.parent[k]) fs.push(x.frame[k]);
      return fs.reverse();
    };
    for (let i = 0; i < t.length; i++) {
      const fs = define(tr, path(t, i), library);
      if (fs === null) assert.ok(map[i] < -1, `round ${round}: node ${i} kept`);
      else assert.deepEqual(map[i] < 0 ? [] : path(out, map[i]), fs, `round ${round}: node ${i}'s output node`);
    }
    const want = new Map<string, [number, number]>();
    for (const [k, [w, c]] of stacks(t)) {
      const fs = define(tr, k.split(';').map(Number), library);
      if (fs === null) continue;
      const key = fs.join(';');
      const was = want.get(key) ?? [0, 0];
      want.set(key, [was[0] + w, was[1] + c]);
    }
    const got = stacks(out);
    kindsSeen.set(tr.kind, (kindsSeen.get(tr.kind) ?? 0) + 1);
    if (got.size < stacks(t).size) merged++;
    assert.deepEqual([...got].sort(), [...want].sort(), `round ${round}: ${JSON.stringify(tr)}`);
    // Name order: ids depth first (a node's parent is on the path to the node before it),
    // each node's children by rank.
    const last = new Map<number, number>();
    const open: number[] = [];
    for (let i = 0; i < out.length; i++) {
      const p = out.parent[i];
      while (open.length && open[open.length - 1] !== p) open.pop();
      assert.ok(p < 0 || open.length > 0, `round ${round}: node ${i} not depth first`);
      open.push(i);
      const prev = last.get(p);
      if (prev !== undefined) assert.ok(order[out.frame[prev]] < order[out.frame[i]], `round ${round}: children of ${p} out of order`);
      last.set(p, i);
    }
  }
  // Every kind was tried, and stacks were merged in many rounds.
  for (const k of ['merge', 'drop', 'collapse-recursion', 'collapse-direct-recursion', 'collapse-library', 'merge-call-node']) assert.ok((kindsSeen.get(k) ?? 0) >= 50, `${k}: ${kindsSeen.get(k)}`);
  assert.ok(merged >= 300, `stacks merged in ${merged} rounds`);
});
