// Flame graph layout: node 0 is the "all" root, tree node i is layout node i + 1. Each
// node gets a start and a width in weight units; rows[d] lists the nodes of depth d in
// left-to-right order, so drawing a viewport is a binary search per visible row.
import { FrameSet, Tree } from './profile.js';
import { RootSelf } from './transforms.js';

export type Order = 'alphabetical' | 'left-heavy';

export interface Layout {
  n: number;
  /** Frame id per node, -1 for the root. */
  frame: Int32Array;
  parent: Int32Array;
  depth: Int32Array;
  start: Float64Array;
  total: Float64Array;
  self: Float64Array;
  /** Samples ending at / under each node. */
  selfCount: Float64Array;
  count: Float64Array;
  /** Samples in the whole layout (count[0], without the pass over every node count needs). */
  samples: number;
  /** Children of node i: childList[childStart[i] .. childStart[i + 1]], in drawing order. */
  childStart: Uint32Array;
  childList: Uint32Array;
  rows: Uint32Array[];
  maxDepth: number;
}

/** Defines `o[key]` as computed on first use (then a plain value). */
function lazy<T>(o: object, key: string, f: () => T): void {
  Object.defineProperty(o, key, {
    configurable: true,
    enumerable: true,
    get() {
      const v = f();
      Object.defineProperty(o, key, { value: v, writable: true, enumerable: true, configurable: true });
      return v;
    },
  });
}

export function layoutTree(t: Tree, frames: FrameSet, order: Order, widthSelf?: Float64Array): Layout {
  const n = t.length + 1;
  // Layout node i is tree node i - 1; node 0 is the root. Plain copies are the typed
  // arrays' own (memcpy); this runs once per state on a million nodes, mostly before the
  // engine has optimised anything, so every pass counts.
  const parent = new Int32Array(n);
  const frame = new Int32Array(n);
  const self = new Float64Array(n);
  const depth = new Int32Array(n);
  frame.set(t.frame, 1);
  self.set(widthSelf ?? t.self, 1);
  parent[0] = -1;
  frame[0] = -1;
  self[0] = (t as Tree & RootSelf).rootSelf ?? 0;
  const tp = t.parent;
  let deepest = 0;
  for (let i = 1; i < n; i++) {
    const p = tp[i - 1] + 1;
    parent[i] = p;
    const d = depth[p] + 1;
    depth[i] = d;
    if (d > deepest) deepest = d;
  }
  // Totals, children before parents; a node's total is final when the walk reaches it,
  // so the same pass counts the nodes per row that hold weight. (Each pass over a million
  // nodes costs tens of milliseconds before the engine has compiled it: fewer passes.)
  const total = self.slice();
  const perDepth = new Uint32Array(deepest + 1);
  perDepth[0] = 1;
  for (let i = n - 1; i > 0; i--) {
    const w = total[i];
    if (w > 0) perDepth[depth[i]]++;
    total[parent[i]] += w;
  }
  let maxDepth = deepest;
  while (maxDepth > 0 && perDepth[maxDepth] === 0) maxDepth--;
  const start = new Float64Array(n);
  const rows = Array.from(perDepth.subarray(0, maxDepth + 1), (c) => new Uint32Array(c));
  const l = { n, frame, parent, depth, start, total, self, rows, maxDepth } as Layout;
  // Samples per node: only tooltips and the sandwich read them, so they wait until then.
  lazy(l, 'selfCount', () => {
    const c = new Float64Array(n);
    c.set(t.count, 1);
    c[0] = (t as Tree & RootSelf).rootCount ?? 0;
    return c;
  });
  lazy(l, 'samples', () => {
    let sum = (t as Tree & RootSelf).rootCount ?? 0;
    const c = t.count;
    for (let i = 0; i < c.length; i++) sum += c[i];
    return sum;
  });
  lazy(l, 'count', () => {
    const c = l.selfCount.slice();
    for (let i = n - 1; i > 0; i--) c[parent[i]] += c[i];
    return c;
  });
  // Children in CSR form, in drawing order, skipping empty subtrees (all their weight
  // was filtered away).
  const children = (): { childStart: Uint32Array; childList: Uint32Array } => {
    const childStart = new Uint32Array(n + 1);
    for (let i = 1; i < n; i++) if (total[i] > 0) childStart[parent[i] + 1]++;
    for (let i = 0; i < n; i++) childStart[i + 1] += childStart[i];
    const fill = childStart.slice(0, n);
    const childList = new Uint32Array(childStart[n]);
    if (order === 'alphabetical' && t.nameOrder === true) {
      // Ids already give each node's children in name order.
      for (let i = 1; i < n; i++) if (total[i] > 0) childList[fill[parent[i]]++] = i;
    } else {
      // Alphabetical order needs no comparisons: nodes are bucketed by the rank of their
      // frame (a counting sort over ranks), then dealt to their parents in that order,
      // which is O(n) where a sort per parent costs seconds at a million nodes.
      const byRank = nodesByRank(frame, total, frames.order);
      for (let k = 0; k < byRank.length; k++) {
        const i = byRank[k];
        childList[fill[parent[i]]++] = i;
      }
    }
    if (order === 'left-heavy') {
      for (let p = 0; p < n; p++) {
        const a = childStart[p];
        const e = childStart[p + 1];
        if (e - a < 2) continue;
        // Stable: equal totals keep their alphabetical order.
        childList.subarray(a, e).sort((x, y) => total[y] - total[x]);
      }
    }
    return { childStart, childList };
  };
  if (order === 'alphabetical' && t.nameOrder === true) {
    // Depth first in id order: a node starts where its parent's cursor is (the parent's
    // own weight first, then its earlier children), and each row fills left to right.
    // In id order a node's parent is the last node seen one row up, so one cursor per
    // row serves (not one per node: a million-entry array less per layout).
    // The children lists are not needed to draw, so they wait until asked for.
    const cursor = new Float64Array(deepest + 2);
    const rowFill = new Uint32Array(maxDepth + 1);
    const ends = rows.map((r) => new Float64Array(r.length));
    rowFill[0] = 1;
    ends[0][0] = total[0];
    cursor[0] = self[0];
    for (let i = 1; i < n; i++) {
      const w = total[i];
      if (!(w > 0)) continue;
      const d = depth[i];
      const x = cursor[d - 1];
      start[i] = x;
      cursor[d - 1] = x + w;
      cursor[d] = x + self[i];
      const k = rowFill[d]++;
      rows[d][k] = i;
      ends[d][k] = x + w;
    }
    rowEndsOf.set(l, ends);
    let csr: { childStart: Uint32Array; childList: Uint32Array } | null = null;
    lazy(l, 'childStart', () => (csr ??= children()).childStart);
    lazy(l, 'childList', () => (csr ??= children()).childList);
    return l;
  }
  const { childStart, childList } = children();
  l.childStart = childStart;
  l.childList = childList;
  // Level by level: the children of row d's nodes, parent by parent in x order, are row
  // d + 1 in x order; a node's own weight comes first, then its children (flamegraph.pl's
  // placement).
  for (let d = 0; d < maxDepth; d++) {
    const row = rows[d];
    const next = rows[d + 1];
    let w = 0;
    for (let r = 0; r < row.length; r++) {
      const v = row[r];
      let x = start[v] + self[v];
      const e = childStart[v + 1];
      for (let k = childStart[v]; k < e; k++) {
        const c = childList[k];
        start[c] = x;
        x += total[c];
        next[w++] = c;
      }
    }
  }
  return l;
}

/** The node of `row` that covers x, or -1. */
export function nodeAt(l: Layout, depthIndex: number, x: number): number {
  const row = l.rows[depthIndex];
  if (!row) return -1;
  let lo = 0;
  let hi = row.length;
  // first node whose end is beyond x
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const v = row[mid];
    if (l.start[v] + l.total[v] <= x) lo = mid + 1;
    else hi = mid;
  }
  if (lo >= row.length) return -1;
  const v = row[lo];
  return l.start[v] <= x ? v : -1;
}

/**
 * End (start + total) of each node of each row, contiguous: searching a row then reads
 * one array instead of two spread over the whole layout, which at a million nodes is
 * most of a redraw's time. Made on first use, kept per layout.
 */
const rowEndsOf = new WeakMap<Layout, Float64Array[]>();
export function rowEnds(l: Layout): Float64Array[] {
  let ends = rowEndsOf.get(l);
  if (!ends) {
    ends = l.rows.map((row) => {
      const e = new Float64Array(row.length);
      for (let k = 0; k < row.length; k++) e[k] = l.start[row[k]] + l.total[row[k]];
      return e;
    });
    rowEndsOf.set(l, ends);
  }
  return ends;
}

/** Index of the first end beyond x in `ends` (a row's ends), from `from` on, galloping. */
export function nextEnd(ends: Float64Array, x: number, from: number): number {
  const n = ends.length;
  let lo = from;
  let step = 1;
  let hi = from;
  while (hi < n && ends[hi] <= x) {
    lo = hi + 1;
    hi += step;
    step *= 2;
  }
  if (hi > n) hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ends[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index in `row` of the first node whose end lies beyond x. */
export function firstEndingAfter(l: Layout, row: Uint32Array, x: number, from = 0): number {
  let lo = from;
  let hi = row.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const v = row[mid];
    if (l.start[v] + l.total[v] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Frames from the root to node v (the root itself excluded). */
export function pathOf(l: Layout, v: number): number[] {
  const out: number[] = [];
  while (v > 0) {
    out.push(l.frame[v]);
    v = l.parent[v];
  }
  return out.reverse();
}

/** The node at the end of a frame path, or the deepest node found on the way. */
export function findPath(l: Layout, path: number[]): number {
  let v = 0;
  for (const f of path) {
    let next = -1;
    for (let k = l.childStart[v]; k < l.childStart[v + 1]; k++) {
      if (l.frame[l.childList[k]] === f) {
        next = l.childList[k];
        break;
      }
    }
    if (next < 0) break;
    v = next;
  }
  return v;
}

/** Nodes with weight (root excluded), ordered by the rank of their frame. */
function nodesByRank(frame: Int32Array, total: Float64Array, rank: Uint32Array): Uint32Array {
  const n = frame.length;
  const start = new Uint32Array(rank.length + 1);
  let count = 0;
  for (let i = 1; i < n; i++) {
    if (total[i] > 0) {
      start[rank[frame[i]] + 1]++;
      count++;
    }
  }
  for (let r = 0; r < rank.length; r++) start[r + 1] += start[r];
  const out = new Uint32Array(count);
  for (let i = 1; i < n; i++) if (total[i] > 0) out[start[rank[frame[i]]]++] = i;
  return out;
}
