// "Collapse library" on a tree in name order, written in name order as it goes. Each run
// of the library's frames becomes one node of the library's frame; the renamed node then
// sits elsewhere among its siblings, and may meet another run there. The general pass
// (applyMapped) builds the output in the input's order and renumbers it afterwards; here
// the output is made depth first with each node's children sorted as they are made, and
// every subtree holding none of the library's frames is copied as a block. Where the
// library is rare that is most of the tree.
import { Tree, subtreeEnds } from './profile.js';

/**
 * The tree with library `lib`'s runs collapsed, in name order, and where each input node
 * went (every node has an output node). `t` is in name order; `rank` gives each frame's
 * place in name order (ties broken by frame id).
 */
export function collapseLibraryInOrder(t: Tree, lib: number, library: Int32Array, rank: Uint32Array): { tree: Tree; map: Int32Array } {
  return new LibraryRuns(t, lib, library, rank).run();
}

/**
 * The pass's state. Pending output nodes are taken depth first: each a group of input
 * nodes (its members, in `pool`) and its output parent. A group's members are on top of
 * the pool when it is taken, so the pool is a stack too.
 */
class LibraryRuns {
  private readonly end: Int32Array;
  /** inLib[i]: node i's frame is in the library. */
  private readonly inLib: Uint8Array;
  /** Library nodes among ids < i: subtree [i, end[i]) holds one iff before[end[i]] > before[i]. */
  private readonly before: Int32Array;
  private readonly out: { parent: Int32Array; frame: Int32Array; self: Float64Array; count: Float64Array };
  private readonly map: Int32Array;
  private readonly groupAt: Int32Array;
  private readonly groupLen: Int32Array;
  private readonly groupParent: Int32Array;
  private readonly pool: Int32Array;
  /** Children of the output node being made, then sorted; input nodes of one run. */
  private readonly scratch: Int32Array;
  private readonly walk: Int32Array;
  private groups = 0;
  private top = 0;
  private next = 0;

  constructor(
    private readonly t: Tree,
    private readonly lib: number,
    library: Int32Array,
    private readonly rank: Uint32Array,
  ) {
    const n = t.length;
    this.end = subtreeEnds(t);
    this.inLib = new Uint8Array(n);
    this.before = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) {
      const f = t.frame[i];
      const mine = f < library.length && library[f] === lib ? 1 : 0;
      this.inLib[i] = mine;
      this.before[i + 1] = this.before[i] + mine;
    }
    this.out = { parent: new Int32Array(n), frame: new Int32Array(n), self: new Float64Array(n), count: new Float64Array(n) };
    this.map = new Int32Array(n);
    this.groupAt = new Int32Array(n + 1);
    this.groupLen = new Int32Array(n + 1);
    this.groupParent = new Int32Array(n + 1);
    this.pool = new Int32Array(n);
    this.scratch = new Int32Array(n);
    this.walk = new Int32Array(n);
  }

  run(): { tree: Tree; map: Int32Array } {
    // The roots are the children of a virtual node.
    let m = 0;
    for (let r = 0; r < this.t.length; r = this.end[r]) this.scratch[m++] = r;
    this.pushChildren(-1, m, false);
    while (this.groups > 0) {
      const g = --this.groups;
      const at = this.groupAt[g];
      this.top = at;
      const first = this.pool[at];
      if (this.groupLen[g] === 1 && this.before[this.end[first]] === this.before[first]) this.copy(first, this.groupParent[g]);
      else this.make(at, this.groupLen[g], this.groupParent[g]);
    }
    const { out, next } = this;
    const tree: Tree = {
      parent: out.parent.subarray(0, next),
      frame: out.frame.subarray(0, next),
      self: out.self.subarray(0, next),
      count: out.count.subarray(0, next),
      length: next,
      nameOrder: true,
    };
    return { tree, map: this.map };
  }

  /** Output frame of input node c as a child (a run's first node takes the library's). */
  private outFrame(c: number): number {
    return this.inLib[c] === 1 ? this.lib : this.t.frame[c];
  }

  /** Name order of two input nodes as children: their output frames' ranks, then ids. */
  private readonly inOrder = (x: number, y: number): number => {
    const fx = this.outFrame(x);
    const fy = this.outFrame(y);
    const rx = fx < this.rank.length ? this.rank[fx] : this.rank.length + fx;
    const ry = fy < this.rank.length ? this.rank[fy] : this.rank.length + fy;
    return rx - ry || fx - fy;
  };

  /** Input node `first`'s subtree, which holds no library frame, as it is, under p. */
  private copy(first: number, p: number): void {
    const { t, out, map } = this;
    const o = this.next;
    const e = this.end[first];
    const shift = o - first;
    if (e - first > 32) {
      out.frame.set(t.frame.subarray(first, e), o);
      out.self.set(t.self.subarray(first, e), o);
      out.count.set(t.count.subarray(first, e), o);
    } else {
      // Most blocks are a leaf or two: views of them would cost more than the copy.
      for (let i = first; i < e; i++) {
        out.frame[i + shift] = t.frame[i];
        out.self[i + shift] = t.self[i];
        out.count[i + shift] = t.count[i];
      }
    }
    out.parent[o] = p;
    map[first] = o;
    for (let i = first + 1; i < e; i++) {
      out.parent[i + shift] = t.parent[i] + shift;
      map[i] = i + shift;
    }
    this.next = o + (e - first);
  }

  /**
   * The output node of the group pool[at .. at + len) under p: its members and (below a
   * library node) the run's later library nodes merge into it; every other child of
   * theirs is one of its children, pushed for later.
   */
  private make(at: number, len: number, p: number): void {
    const { t, out, inLib, end, walk, scratch } = this;
    const o = this.next++;
    out.parent[o] = p;
    out.frame[o] = this.outFrame(this.pool[at]);
    let s = 0;
    let c = 0;
    let merged = len > 1;
    let m = 0;
    let w = 0;
    for (let k = 0; k < len; k++) walk[w++] = this.pool[at + k];
    while (w > 0) {
      const x = walk[--w];
      this.map[x] = o;
      s += t.self[x];
      c += t.count[x];
      const run = inLib[x] === 1;
      for (let y = x + 1, e = end[x]; y < e; y = end[y]) {
        if (run && inLib[y] === 1) {
          walk[w++] = y;
          merged = true;
        } else scratch[m++] = y;
      }
    }
    out.self[o] = s;
    out.count[o] = c;
    this.pushChildren(o, m, merged);
  }

  /**
   * Pushes scratch[0 .. m), the children of output node o, as groups: last first, so they
   * are taken in name order. Children of one input node that keep their frames are in
   * name order already, with no two alike (`merged` false); others are sorted, and the
   * children of one frame become one group.
   */
  private pushChildren(o: number, m: number, merged: boolean): void {
    const { scratch, inLib } = this;
    for (let k = 0; k < m && !merged; k++) merged = inLib[scratch[k]] === 1;
    if (merged) this.sort(m);
    for (let e = m; e > 0; ) {
      let a = e - 1;
      if (merged) {
        const f = this.outFrame(scratch[a]);
        while (a > 0 && this.outFrame(scratch[a - 1]) === f) a--;
      }
      this.groupAt[this.groups] = this.top;
      this.groupLen[this.groups] = e - a;
      this.groupParent[this.groups++] = o;
      for (let k = a; k < e; k++) this.pool[this.top++] = scratch[k];
      e = a;
    }
  }

  /** Sorts scratch[0 .. m) into name order. */
  private sort(m: number): void {
    const { scratch, inOrder } = this;
    if (m > 16) {
      scratch.set(Array.from(scratch.subarray(0, m)).sort(inOrder));
      return;
    }
    for (let k = 1; k < m; k++) {
      const x = scratch[k];
      let j = k - 1;
      for (; j >= 0 && inOrder(scratch[j], x) > 0; j--) scratch[j + 1] = scratch[j];
      scratch[j + 1] = x;
    }
  }
}
