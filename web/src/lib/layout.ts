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
  /** Children of node i: childList[childStart[i] .. childStart[i + 1]], in drawing order. */
  childStart: Uint32Array;
  childList: Uint32Array;
  rows: Uint32Array[];
  maxDepth: number;
}

export function layoutTree(t: Tree, frames: FrameSet, order: Order, widthSelf?: Float64Array): Layout {
  const n = t.length + 1;
  const parent = new Int32Array(n);
  const frame = new Int32Array(n);
  const self = new Float64Array(n);
  const total = new Float64Array(n);
  const depth = new Int32Array(n);
  parent[0] = -1;
  frame[0] = -1;
  self[0] = (t as Tree & RootSelf).rootSelf ?? 0;
  const selfCount = new Float64Array(n);
  selfCount[0] = (t as Tree & RootSelf).rootCount ?? 0;
  const ws = widthSelf ?? t.self;
  for (let i = 0; i < t.length; i++) {
    parent[i + 1] = t.parent[i] + 1;
    frame[i + 1] = t.frame[i];
    self[i + 1] = ws[i];
    selfCount[i + 1] = t.count[i];
  }
  total.set(self);
  const count = Float64Array.from(selfCount);
  for (let i = n - 1; i > 0; i--) {
    total[parent[i]] += total[i];
    count[parent[i]] += count[i];
  }
  let maxDepth = 0;
  for (let i = 1; i < n; i++) {
    const d = depth[parent[i]] + 1;
    depth[i] = d;
    if (d > maxDepth && total[i] > 0) maxDepth = d;
  }
  // Children in CSR form, skipping empty subtrees (all their weight was filtered away),
  // in drawing order. Alphabetical order needs no comparisons: nodes are bucketed by the
  // rank of their frame (a counting sort over ranks), then dealt to their parents in that
  // order, which is O(n) where a sort per parent costs seconds at a million nodes.
  const rank = frames.order;
  const childCount = new Uint32Array(n + 1);
  for (let i = 1; i < n; i++) if (total[i] > 0) childCount[parent[i] + 1]++;
  const childStart = new Uint32Array(n + 1);
  for (let i = 0; i < n; i++) childStart[i + 1] = childStart[i] + childCount[i + 1];
  const fill = childStart.slice(0, n);
  const childList = new Uint32Array(childStart[n]);
  const byRank = nodesByRank(frame, total, rank);
  for (let k = 0; k < byRank.length; k++) {
    const i = byRank[k];
    childList[fill[parent[i]]++] = i;
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
  // Pre-order walk: starts, and rows in left-to-right order.
  const start = new Float64Array(n);
  const rowCount = new Uint32Array(maxDepth + 1);
  for (let i = 0; i < n; i++) if (i === 0 || total[i] > 0) rowCount[depth[i]]++;
  const rows = Array.from(rowCount, (c) => new Uint32Array(c));
  const rowFill = new Uint32Array(maxDepth + 1);
  const stack: number[] = [0];
  while (stack.length) {
    const v = stack.pop() as number;
    rows[depth[v]][rowFill[depth[v]]++] = v;
    // Self weight first, then the children, as flamegraph.pl and kiln flamegraph draw.
    let x = start[v] + self[v];
    const a = childStart[v];
    const e = childStart[v + 1];
    for (let k = a; k < e; k++) {
      const c = childList[k];
      start[c] = x;
      x += total[c];
    }
    for (let k = e; k-- > a; ) stack.push(childList[k]);
  }
  return { n, frame, parent, depth, start, total, self, selfCount, count, childStart, childList, rows, maxDepth };
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
