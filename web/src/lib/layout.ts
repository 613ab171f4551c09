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

/**
 * The arrays of a layout no longer shown, for the next one to write into: a million-node
 * layout is about 50 MB of arrays, and on a fresh array every page is faulted in and
 * zeroed on first touch (4–8 ms per 8 MB here, against under 1 ms to rewrite one), which
 * was most of a layout's time. The spare must not be read again by anyone.
 */
class Spare {
  private readonly buffers: ArrayBuffer[];
  constructor(l: Layout | undefined) {
    const ends = l ? rowEndsOf.get(l) : undefined;
    const arrays = l ? [l.parent, l.frame, l.depth, l.self, l.total, l.start, l.rows[0], ends?.[0]] : [];
    this.buffers = arrays.filter((a) => a !== undefined).map((a) => a!.buffer as ArrayBuffer);
  }
  /** A buffer of at least `bytes` from the spare (the smallest that fits), or a new one. */
  private take(bytes: number): ArrayBuffer {
    let best = -1;
    for (let k = 0; k < this.buffers.length; k++) {
      const b = this.buffers[k].byteLength;
      if (b >= bytes && (best < 0 || b < this.buffers[best].byteLength)) best = k;
    }
    return best < 0 ? new ArrayBuffer(bytes) : this.buffers.splice(best, 1)[0];
  }
  /** Arrays whose every element is written before it is read: stale content is fine. */
  i32(n: number): Int32Array {
    return new Int32Array(this.take(4 * n), 0, n);
  }
  u32(n: number): Uint32Array {
    return new Uint32Array(this.take(4 * n), 0, n);
  }
  f64(n: number): Float64Array {
    return new Float64Array(this.take(8 * n), 0, n);
  }
}

/**
 * Lays out a tree. `spare`: a layout no longer used (nor any view of its arrays) whose
 * arrays this one may take over.
 */
export function layoutTree(t: Tree, frames: FrameSet, order: Order, widthSelf?: Float64Array, spare?: Layout): Layout {
  const n = t.length + 1;
  // Layout node i is tree node i - 1; node 0 is the root. Plain copies are the typed
  // arrays' own (memcpy); this runs once per state on a million nodes, mostly before the
  // engine has optimised anything, so every pass counts.
  const mem = new Spare(spare);
  const parent = mem.i32(n);
  const frame = mem.i32(n);
  const self = mem.f64(n);
  const depth = mem.i32(n);
  depth[0] = 0;
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
  const total = mem.f64(n);
  total.set(self);
  const perDepth = new Uint32Array(deepest + 1);
  perDepth[0] = 1;
  for (let i = n - 1; i > 0; i--) {
    const w = total[i];
    if (w > 0) perDepth[depth[i]]++;
    total[parent[i]] += w;
  }
  let maxDepth = deepest;
  while (maxDepth > 0 && perDepth[maxDepth] === 0) maxDepth--;
  const start = mem.f64(n);
  // Rows are views of one array, row d from rowAt[d] on.
  const rowAt = new Uint32Array(maxDepth + 2);
  for (let d = 0; d <= maxDepth; d++) rowAt[d + 1] = rowAt[d] + perDepth[d];
  const rowNodes = mem.u32(rowAt[maxDepth + 1]);
  rowNodes[0] = 0;
  const rows = Array.from({ length: maxDepth + 1 }, (_, d) => rowNodes.subarray(rowAt[d], rowAt[d + 1]));
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
    const rowFill = rowAt.slice(0, maxDepth + 1);
    const rowEnds = mem.f64(rowNodes.length);
    const ends = rows.map((_, d) => rowEnds.subarray(rowAt[d], rowAt[d + 1]));
    rowEnds[0] = total[0];
    rowFill[0] = 1;
    start[0] = 0;
    cursor[0] = self[0];
    for (let i = 1; i < n; i++) {
      const w = total[i];
      if (!(w > 0)) {
        start[i] = 0;
        continue;
      }
      const d = depth[i];
      const x = cursor[d - 1];
      start[i] = x;
      cursor[d - 1] = x + w;
      cursor[d] = x + self[i];
      const k = rowFill[d]++;
      rowNodes[k] = i;
      rowEnds[k] = x + w;
    }
    rowEndsOf.set(l, ends);
    let csr: { childStart: Uint32Array; childList: Uint32Array } | null = null;
    lazy(l, 'childStart', () => (csr ??= children()).childStart);
    lazy(l, 'childList', () => (csr ??= children()).childList);
    return l;
  }
  start.fill(0);
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
