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
    const nFrames = 20 + Math.floor(r() * 60);
    // Frames, then 3 libraries (ids nFrames..nFrames+2); ranks a permutation of all.
    const n = nFrames + 3;
    const order = Uint32Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const k = Math.floor(r() * (i + 1));
      [order[i], order[k]] = [order[k], order[i]];
    }
    const library = Int32Array.from({ length: n }, (_, i) => (i < nFrames && r() < 0.3 ? nFrames + Math.floor(r() * 3) : -1));
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
    const order = Uint32Array.from({ length: nFrames }, (_, i) => i);
    for (let i = nFrames - 1; i > 0; i--) {
      const k = Math.floor(r() * (i + 1));
      [order[i], order[k]] = [order[k], order[i]];
    }
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
