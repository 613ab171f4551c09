// The call tree (as the Firefox Profiler's Call Tree): the flame graph's tree as rows a
// reader expands, each with its total and self weight; inverted (bottom-up), the
// functions that ran at the top, their callers below. DOM-free, built from the derived
// layout, so it shows exactly what the flame graph shows: the same window, threads,
// transforms. Children are computed when a row is expanded, never for the whole tree: an
// inverted tree of a million stacks costs what its open rows cost.
//
// A search keeps the samples whose stack has a matching function (as the Firefox
// Profiler's search does): weights become the matching samples' weights, and rows whose
// samples all lack a match disappear.
import { Layout } from './layout.js';

export interface CallNode {
  /** The row's identity across windows and transforms: frame ids from its tree's root. */
  key: string;
  frame: number;
  /** 0 for the tree's first level. */
  depth: number;
  total: number;
  /** Weight of samples whose stack ends here (inverted: the function's own time at the
   *  first level, 0 below it). */
  self: number;
  /** Layout node (the flame graph's node) of a row of the tree as it stands; -1 inverted. */
  node: number;
  /**
   * Inverted rows: the layout nodes their samples pass through, and the weight of each:
   * `nodes[from..to)` and `weights[from..to)` (the first level's rows share two arrays).
   */
  nodes?: Int32Array;
  weights?: Float64Array;
  from?: number;
  to?: number;
}

export class CallTree {
  /** Weight per layout node counted by this tree (search: matching samples only). */
  private readonly selfW: Float64Array;
  private readonly totalW: Float64Array;
  private readonly kids = new Map<string, CallNode[]>();
  private top: CallNode[] | null = null;

  constructor(
    readonly layout: Layout,
    readonly inverted: boolean,
    /** Alphabetical rank of each frame (ties in weight keep name order). */
    private readonly rank: Uint32Array,
    /** Frames the search matches; null without a search. */
    match: Uint8Array | null = null,
  ) {
    const l = layout;
    if (!match) {
      this.selfW = l.self;
      this.totalW = l.total;
    } else {
      // A node's samples match when its stack (root to node) has a matching frame.
      const inside = new Uint8Array(l.n);
      const self = new Float64Array(l.n);
      for (let v = 1; v < l.n; v++) {
        inside[v] = match[l.frame[v]] === 1 || inside[l.parent[v]] === 1 ? 1 : 0;
        if (inside[v]) self[v] = l.self[v];
      }
      const total = self.slice();
      for (let v = l.n - 1; v > 0; v--) total[l.parent[v]] += total[v];
      this.selfW = self;
      this.totalW = total;
    }
  }

  /** Weight of the whole tree (the flame graph's root, search applied). */
  get total(): number {
    return this.totalW[0];
  }

  private sort(list: CallNode[]): CallNode[] {
    return list.sort((a, b) => b.total - a.total || this.rank[a.frame] - this.rank[b.frame]);
  }

  /** The first level: the root's callees, or (inverted) every function that ran. */
  roots(): CallNode[] {
    if (this.top) return this.top;
    const l = this.layout;
    if (!this.inverted) {
      this.top = this.sort(this.childrenOfNode(0, '', 0));
      return this.top;
    }
    // Functions that ran: every node with self weight, grouped by frame in one counting
    // pass over typed arrays (a million nodes: no per-function arrays to grow); each
    // row's nodes and weights are views of the shared arrays.
    const self = this.selfW;
    let frames = 0;
    for (let v = 1; v < l.n; v++) if (l.frame[v] >= frames) frames = l.frame[v] + 1;
    const start = new Int32Array(frames + 1);
    for (let v = 1; v < l.n; v++) if (self[v] > 0) start[l.frame[v] + 1]++;
    for (let f = 0; f < frames; f++) start[f + 1] += start[f];
    const at = start.slice(0, frames);
    const nodes = new Int32Array(start[frames]);
    const weights = new Float64Array(start[frames]);
    for (let v = 1; v < l.n; v++) {
      if (!(self[v] > 0)) continue;
      const i = at[l.frame[v]]++;
      nodes[i] = v;
      weights[i] = self[v];
    }
    // The functions' totals, sorted as typed arrays (heaviest first, ties in name
    // order), then one row each in that order.
    const fs: number[] = [];
    const sums = new Float64Array(frames);
    for (let f = 0; f < frames; f++) {
      if (start[f] === start[f + 1]) continue;
      let sum = 0;
      for (let i = start[f]; i < start[f + 1]; i++) sum += weights[i];
      sums[f] = sum;
      fs.push(f);
    }
    const order = heaviestFirst(fs, sums, this.rank);
    const out: CallNode[] = new Array(order.length);
    for (let k = 0; k < order.length; k++) {
      const f = order[k];
      out[k] = { key: String(f), frame: f, depth: 0, total: sums[f], self: sums[f], node: -1, nodes, weights, from: start[f], to: start[f + 1] };
    }
    this.top = out;
    return this.top;
  }

  private childrenOfNode(v: number, key: string, depth: number): CallNode[] {
    const l = this.layout;
    const out: CallNode[] = [];
    for (let k = l.childStart[v]; k < l.childStart[v + 1]; k++) {
      const c = l.childList[k];
      const t = this.totalW[c];
      if (!(t > 0)) continue;
      const f = l.frame[c];
      out.push({ key: key ? `${key}.${f}` : String(f), frame: f, depth, total: t, self: this.selfW[c], node: c });
    }
    return out;
  }

  /** A row's children, heaviest first. */
  children(n: CallNode): CallNode[] {
    const cached = this.kids.get(n.key);
    if (cached) return cached;
    let out: CallNode[];
    if (!this.inverted) out = this.childrenOfNode(n.node, n.key, n.depth + 1);
    else {
      // The callers of the samples' current frames: one step up each stack.
      const l = this.layout;
      const groups = new Map<number, { nodes: number[]; weights: number[]; sum: number }>();
      const nodes = n.nodes!;
      const weights = n.weights!;
      for (let i = n.from ?? 0, end = n.to ?? nodes.length; i < end; i++) {
        const p = l.parent[nodes[i]];
        if (p <= 0) continue;
        const f = l.frame[p];
        let g = groups.get(f);
        if (!g) groups.set(f, (g = { nodes: [], weights: [], sum: 0 }));
        g.nodes.push(p);
        g.weights.push(weights[i]);
        g.sum += weights[i];
      }
      out = [];
      for (const [f, g] of groups) {
        out.push({ key: `${n.key}.${f}`, frame: f, depth: n.depth + 1, total: g.sum, self: 0, node: -1, nodes: Int32Array.from(g.nodes), weights: Float64Array.from(g.weights) });
      }
    }
    this.sort(out);
    this.kids.set(n.key, out);
    return out;
  }

  hasChildren(n: CallNode): boolean {
    if (!this.inverted) {
      const l = this.layout;
      for (let k = l.childStart[n.node]; k < l.childStart[n.node + 1]; k++) if (this.totalW[l.childList[k]] > 0) return true;
      return false;
    }
    const l = this.layout;
    const nodes = n.nodes!;
    for (let i = n.from ?? 0, end = n.to ?? nodes.length; i < end; i++) if (l.parent[nodes[i]] > 0) return true;
    return false;
  }

  /** The rows shown: every first-level row, and the children of expanded rows, depth first. */
  rows(expanded: ReadonlySet<string>): CallNode[] {
    const roots = this.roots();
    // Nothing open: the first level as it is (a million-node inverted tree has hundreds
    // of thousands of rows there).
    if (expanded.size === 0) return roots.slice();
    const out: CallNode[] = [];
    const walk = (list: CallNode[]): void => {
      for (let i = 0; i < list.length; i++) {
        const n = list[i];
        out.push(n);
        if (expanded.has(n.key)) walk(this.children(n));
      }
    };
    walk(roots);
    return out;
  }

  /** The row of `key`, walking from the first level (null when it is not in this tree). */
  find(key: string): CallNode | null {
    const parts = key.split('.');
    let list = this.roots();
    let found: CallNode | null = null;
    for (let i = 0; i < parts.length; i++) {
      const k = parts.slice(0, i + 1).join('.');
      found = list.find((n) => n.key === k) ?? null;
      if (!found) return null;
      if (i + 1 < parts.length) list = this.children(found);
    }
    return found;
  }

  /**
   * Keys to expand to show the heaviest path from the first level down (what the Firefox
   * Profiler opens on), at most `depth` levels, stopping where the heaviest child holds
   * less than `share` of its parent.
   */
  heaviestPath(depth = 16, share = 0.5): string[] {
    const out: string[] = [];
    let list = this.roots();
    let parent = this.total;
    for (let d = 0; d < depth && list.length; d++) {
      const n = list[0];
      if (n.total < share * parent) break;
      if (!this.hasChildren(n)) break;
      out.push(n.key);
      parent = n.total;
      list = this.children(n);
    }
    return out;
  }
}

const RANK_BITS = 2 ** 21;

/**
 * `frames` ordered by `sums` (heaviest first), ties by `rank` (name order). Whole totals
 * under 2^31 with distinct ranks under 2^21 (sample counts: the common case) are sorted as
 * one number each, -total × 2^21 + rank, by the engine's numeric sort (no comparator to
 * call 200,000 times × log); other weights by a comparator.
 */
export function heaviestFirst(frames: number[], sums: Float64Array, rank: Uint32Array): Uint32Array {
  const n = frames.length;
  let packed = true;
  let maxRank = 0;
  for (let k = 0; k < n && packed; k++) {
    const t = sums[frames[k]];
    const r = rank[frames[k]];
    if (!Number.isInteger(t) || t < 0 || t >= 2 ** 31 || r >= RANK_BITS) packed = false;
    else if (r > maxRank) maxRank = r;
  }
  const byRank = packed ? new Int32Array(maxRank + 1).fill(-1) : null;
  if (byRank) {
    for (let k = 0; k < n; k++) {
      const r = rank[frames[k]];
      if (byRank[r] >= 0) {
        packed = false;
        break;
      }
      byRank[r] = frames[k];
    }
  }
  if (!packed || !byRank) {
    const order = Uint32Array.from(frames);
    return order.sort((a, b) => sums[b] - sums[a] || rank[a] - rank[b]);
  }
  const keys = new Float64Array(n);
  for (let k = 0; k < n; k++) keys[k] = -sums[frames[k]] * RANK_BITS + rank[frames[k]];
  keys.sort();
  const order = new Uint32Array(n);
  for (let k = 0; k < n; k++) {
    const r = ((keys[k] % RANK_BITS) + RANK_BITS) % RANK_BITS;
    order[k] = byRank[r];
  }
  return order;
}

/** The frame ids of a key (a row's path). */
export function keyFrames(key: string): number[] {
  return key.split('.').map(Number);
}
