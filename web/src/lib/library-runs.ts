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
  const n = t.length;
  const { parent, frame, self, count } = t;
  const end = subtreeEnds(t);
  // inLib[i]: node i's frame is in the library; before[i]: such nodes among ids < i, so
  // a subtree [i, end[i]) holds one iff before[end[i]] > before[i].
  const inLib = new Uint8Array(n);
  const before = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) {
    const f = frame[i];
    const mine = f < library.length && library[f] === lib ? 1 : 0;
    inLib[i] = mine;
    before[i + 1] = before[i] + mine;
  }
  const out = { parent: new Int32Array(n), frame: new Int32Array(n), self: new Float64Array(n), count: new Float64Array(n) };
  const map = new Int32Array(n);
  // Pending output nodes, depth first: each a group of input nodes (its members, in
  // `pool`) and its output parent. A group's members are on top of the pool when it is
  // taken, so the pool is a stack too.
  const groupAt = new Int32Array(n + 1);
  const groupLen = new Int32Array(n + 1);
  const groupParent = new Int32Array(n + 1);
  const pool = new Int32Array(n);
  let groups = 0;
  let top = 0;
  const scratch = new Int32Array(n);
  const walk = new Int32Array(n);

  /** Output frame of input node c as a child (a run's first node takes the library's). */
  const outFrame = (c: number): number => (inLib[c] === 1 ? lib : frame[c]);
  const key = (c: number): number => {
    const f = outFrame(c);
    return f < rank.length ? rank[f] : rank.length + f;
  };
  const inOrder = (x: number, y: number): number => key(x) - key(y) || outFrame(x) - outFrame(y);

  /**
   * Pushes scratch[0 .. m), the children of output node o, as groups: last first, so they
   * are taken in name order. Children of one input node that keep their frames are in
   * name order already, with no two alike (`merged` false); others are sorted, and the
   * children of one frame become one group.
   */
  const pushChildren = (o: number, m: number, merged: boolean): void => {
    for (let k = 0; k < m && !merged; k++) merged = inLib[scratch[k]] === 1;
    if (merged) {
      if (m <= 16) {
        for (let k = 1; k < m; k++) {
          const x = scratch[k];
          let j = k - 1;
          for (; j >= 0 && inOrder(scratch[j], x) > 0; j--) scratch[j + 1] = scratch[j];
          scratch[j + 1] = x;
        }
      } else scratch.set(Array.from(scratch.subarray(0, m)).sort(inOrder));
    }
    for (let e = m; e > 0; ) {
      let a = e - 1;
      if (merged) {
        const f = outFrame(scratch[a]);
        while (a > 0 && outFrame(scratch[a - 1]) === f) a--;
      }
      groupAt[groups] = top;
      groupLen[groups] = e - a;
      groupParent[groups++] = o;
      for (let k = a; k < e; k++) pool[top++] = scratch[k];
      e = a;
    }
  };

  // The roots are the children of a virtual node.
  let m = 0;
  for (let r = 0; r < n; r = end[r]) scratch[m++] = r;
  pushChildren(-1, m, false);
  let next = 0;
  while (groups > 0) {
    const g = --groups;
    const at = groupAt[g];
    const len = groupLen[g];
    const p = groupParent[g];
    top = at;
    const first = pool[at];
    const o = next++;
    if (len === 1 && before[end[first]] === before[first]) {
      // No library frame below: the subtree as it is, shifted to o.
      const e = end[first];
      const shift = o - first;
      if (e - first > 32) {
        out.frame.set(frame.subarray(first, e), o);
        out.self.set(self.subarray(first, e), o);
        out.count.set(count.subarray(first, e), o);
      } else {
        // Most blocks are a leaf or two: views of them would cost more than the copy.
        for (let i = first; i < e; i++) {
          out.frame[i + shift] = frame[i];
          out.self[i + shift] = self[i];
          out.count[i + shift] = count[i];
        }
      }
      out.parent[o] = p;
      map[first] = o;
      for (let i = first + 1; i < e; i++) {
        out.parent[i + shift] = parent[i] + shift;
        map[i] = i + shift;
      }
      next = o + (e - first);
      continue;
    }
    out.parent[o] = p;
    out.frame[o] = outFrame(first);
    let s = 0;
    let c = 0;
    let merged = len > 1;
    m = 0;
    // Members, and (below a library node) the run's later library nodes, merge into o;
    // every other child of theirs is a child of o.
    let w = 0;
    for (let k = 0; k < len; k++) walk[w++] = pool[at + k];
    while (w > 0) {
      const x = walk[--w];
      map[x] = o;
      s += self[x];
      c += count[x];
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
    pushChildren(o, m, merged);
  }
  const tree: Tree = {
    parent: out.parent.subarray(0, next),
    frame: out.frame.subarray(0, next),
    self: out.self.subarray(0, next),
    count: out.count.subarray(0, next),
    length: next,
    nameOrder: true,
  };
  return { tree, map };
}
