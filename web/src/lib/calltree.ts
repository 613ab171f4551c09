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
  /** Inverted rows: the layout nodes their samples pass through, and the weight of each. */
  nodes?: Int32Array;
  weights?: Float64Array;
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
    // Functions that ran: every node with self weight, grouped by frame.
    const byFrame = new Map<number, number[]>();
    for (let v = 1; v < l.n; v++) {
      if (!(this.selfW[v] > 0)) continue;
      const f = l.frame[v];
      let list = byFrame.get(f);
      if (!list) byFrame.set(f, (list = []));
      list.push(v);
    }
    const out: CallNode[] = [];
    for (const [f, vs] of byFrame) {
      const nodes = Int32Array.from(vs);
      const weights = new Float64Array(vs.length);
      let sum = 0;
      vs.forEach((v, i) => {
        weights[i] = this.selfW[v];
        sum += weights[i];
      });
      out.push({ key: String(f), frame: f, depth: 0, total: sum, self: sum, node: -1, nodes, weights });
    }
    this.top = this.sort(out);
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
      for (let i = 0; i < nodes.length; i++) {
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
    for (let i = 0; i < nodes.length; i++) if (l.parent[nodes[i]] > 0) return true;
    return false;
  }

  /** The rows shown: every first-level row, and the children of expanded rows, depth first. */
  rows(expanded: ReadonlySet<string>): CallNode[] {
    const out: CallNode[] = [];
    const walk = (list: CallNode[]): void => {
      for (const n of list) {
        out.push(n);
        if (expanded.has(n.key)) walk(this.children(n));
      }
    };
    walk(this.roots());
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

/** The frame ids of a key (a row's path). */
export function keyFrames(key: string): number[] {
  return key.split('.').map(Number);
}
