// A transform applied only where it changes the tree. On a tree in name order (ids depth
// first, each node's children in name order) a node's subtree is the id range
// [i, end[i]), so the subtrees a transform touches are transformed alone, as small trees
// of their own, and every other node is copied as it is (typed-array copies and one pass
// for the parents). The result is the full transform's, node for node: a tree in name
// order is the one depth-first numbering of its nodes.
import { Tree, subtreeEnds } from './profile.js';
import { Libraries, RootSelf, Transform, applyStep } from './transforms.js';

export { subtreeEnds };

/**
 * Input nodes whose children's subtrees the transform changes (each the parent of the
 * first node the transform acts on in its subtree), in id order, none inside another's
 * subtree; null when the whole tree is better transformed at once (a root is touched,
 * the transform reshapes the tree everywhere, or the touched subtrees hold over half of
 * the nodes).
 */
function touched(t: Tree, tr: Transform, library: Libraries, end: Int32Array): Int32Array | null {
  if (tr.kind === 'focus-function' || tr.kind === 'focus-subtree') return null;
  const n = t.length;
  const parent = t.parent;
  const out: number[] = [];
  let inside = 0;
  let past = 0;
  /** Node i, the first the transform acts on in its subtree: false when not worth it. */
  const found = (i: number): boolean => {
    const a = parent[i];
    if (a < 0) return false;
    // Parts already found below a (a later child of one of their ancestors) join a's.
    while (out.length && out[out.length - 1] > a) {
      const b = out.pop()!;
      inside -= end[b] - b - 1;
    }
    out.push(a);
    inside += end[a] - a - 1;
    past = end[a];
    return inside * 2 <= n;
  };
  if ('f' in tr && tr.kind !== 'collapse-library') {
    // The nodes of f, from the tree's index of nodes by frame.
    const { start, nodes } = nodesByFrame(t);
    const f = tr.f;
    if (f >= start.length - 1) return new Int32Array(0);
    for (let k = start[f]; k < start[f + 1]; k++) if (nodes[k] >= past && !found(nodes[k])) return null;
  } else {
    const acts = actsOn(t, tr, library);
    for (let i = 0; i < n; i++) {
      if (!acts(i)) continue;
      if (!found(i)) return null;
      i = past - 1;
    }
  }
  return Int32Array.from(out);
}

/**
 * Builds a tree's indexes the transforms read (its subtrees' ends, its nodes by frame)
 * ahead of the first transform, at idle: the first merge then costs what later ones do.
 */
export function prepareIncremental(t: Tree): void {
  subtreeEnds(t);
  nodesByFrame(t);
}

/** Nodes of each frame f, in id order: nodes[start[f] .. start[f + 1]]; made once per tree. */
const byFrame = new WeakMap<Tree, { start: Int32Array; nodes: Int32Array }>();
function nodesByFrame(t: Tree): { start: Int32Array; nodes: Int32Array } {
  let x = byFrame.get(t);
  if (x) return x;
  const { frame, length: n } = t;
  let max = -1;
  for (let i = 0; i < n; i++) if (frame[i] > max) max = frame[i];
  const start = new Int32Array(max + 2);
  for (let i = 0; i < n; i++) start[frame[i] + 1]++;
  for (let f = 0; f <= max; f++) start[f + 1] += start[f];
  const fill = start.slice(0, max + 1);
  const nodes = new Int32Array(n);
  for (let i = 0; i < n; i++) nodes[fill[frame[i]]++] = i;
  byFrame.set(t, (x = { start, nodes }));
  return x;
}

/**
 * Whether the transform acts on input node i, called in id order: the first node it is
 * true for in a subtree has no ancestor the transform acts on.
 */
function actsOn(t: Tree, tr: Transform, library: Libraries): (i: number) => boolean {
  const { frame, parent } = t;
  switch (tr.kind) {
    case 'collapse-library': {
      const lib = library;
      if (!lib) return () => false;
      return (i) => frame[i] < lib.length && lib[frame[i]] === tr.f;
    }
    case 'merge-call-node': {
      // state[i]: frames of the path matched down to i, -1 once off it.
      const state = new Int32Array(t.length);
      const len = tr.path.length;
      return (i) => {
        const pp = parent[i];
        const m = pp < 0 ? 0 : state[pp];
        const on = m >= 0 && frame[i] === tr.path[m];
        state[i] = on && m + 1 < len ? m + 1 : -1;
        return on && m + 1 === len;
      };
    }
    case 'focus-function':
    case 'focus-subtree':
      return () => false;
    default: {
      const f = tr.f;
      return (i) => frame[i] === f;
    }
  }
}

/**
 * The transform as it reads on the cut forest (cut), whose roots are the parts' stand-ins:
 * a node path starts at the stand-in of its one part.
 */
function local(tr: Transform, nFrames: number): Transform {
  return tr.kind === 'merge-call-node' ? { kind: 'merge-call-node', path: [nFrames, tr.path[tr.path.length - 1]] } : tr;
}

/**
 * The touched nodes' descendants as one tree: per touched node a, a root of frame
 * nFrames + k (a stand-in for a, ranked after every frame, in the parts' order) above a
 * copy of a's descendants.
 */
function cut(t: Tree, at: Int32Array, end: Int32Array, nFrames: number): Tree {
  let len = 0;
  for (const a of at) len += end[a] - a;
  const out = { parent: new Int32Array(len), frame: new Int32Array(len), self: new Float64Array(len), count: new Float64Array(len), length: len, nameOrder: true };
  let j = 0;
  at.forEach((a, k) => {
    const e = end[a];
    out.parent[j] = -1;
    out.frame[j] = nFrames + k;
    out.frame.set(t.frame.subarray(a + 1, e), j + 1);
    out.self.set(t.self.subarray(a + 1, e), j + 1);
    out.count.set(t.count.subarray(a + 1, e), j + 1);
    // Input node i is j + (i - a) here.
    const shift = j - a;
    for (let i = a + 1; i < e; i++) out.parent[i + shift] = t.parent[i] + shift;
    j += e - a;
  });
  return out;
}

/**
 * One transform on a tree in name order, transforming only the subtrees it touches;
 * null when it does not pay (then applyStep transforms the whole tree). The same tree as
 * applyStep(t, tr, nFrames, library, rank).tree, in name order.
 */
export function applyStepLocal(t: Tree, tr: Transform, nFrames: number, library: Libraries, rank: Uint32Array): Tree | null {
  if (t.nameOrder !== true) return null;
  const end = subtreeEnds(t);
  const at = touched(t, tr, library, end);
  if (at === null) return null;
  const ranks = new Uint32Array(nFrames + at.length);
  ranks.set(rank.subarray(0, nFrames));
  for (let k = 0; k < at.length; k++) ranks[nFrames + k] = nFrames + k;
  const sub = applyStep(cut(t, at, end, nFrames), local(tr, nFrames), nFrames + at.length, library, ranks).tree;
  return splice(t, at, sub, end);
}

/**
 * The tree with each touched node's descendants replaced by what the transformed cut
 * forest holds under its stand-in (whose own weight, of samples left with no frame below
 * the touched node, is the touched node's).
 */
function splice(t: Tree, at: Int32Array, sub: Tree, end: Int32Array): Tree {
  const n = t.length;
  let len = n - at.length;
  for (const a of at) len -= end[a] - a - 1;
  len += sub.length;
  const out = { parent: new Int32Array(len), frame: new Int32Array(len), self: new Float64Array(len), count: new Float64Array(len), length: len, nameOrder: true } as Tree & RootSelf;
  // Kept runs of input nodes: from runFrom[r] on, at new ids shifted by runShift[r].
  const runFrom: number[] = [];
  const runShift: number[] = [];
  /** New id of kept input node q before the run being copied (a run's start <= q). */
  const idOf = (q: number): number => {
    let lo = 0;
    let hi = runFrom.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (runFrom[mid] <= q) lo = mid;
      else hi = mid - 1;
    }
    return q + runShift[lo];
  };
  let j = 0;
  let i = 0;
  const keep = (to: number): void => {
    out.frame.set(t.frame.subarray(i, to), j);
    out.self.set(t.self.subarray(i, to), j);
    out.count.set(t.count.subarray(i, to), j);
    const d = j - i;
    const lo = i;
    runFrom.push(i);
    runShift.push(d);
    // A parent is in the run, or an ancestor of the run's first node before it.
    for (let k = i; k < to; k++) {
      const p = t.parent[k];
      out.parent[k + d] = p >= lo ? p + d : p < 0 ? -1 : idOf(p);
    }
    j += to - i;
    i = to;
  };
  // The stand-ins are the cut forest's roots, in the parts' order, each before its nodes.
  let m = 0;
  for (const a of at) {
    keep(a + 1);
    const pa = a + runShift[runShift.length - 1];
    let e = m + 1;
    while (e < sub.length && sub.parent[e] >= 0) e++;
    out.self[pa] += sub.self[m];
    out.count[pa] += sub.count[m];
    out.frame.set(sub.frame.subarray(m + 1, e), j);
    out.self.set(sub.self.subarray(m + 1, e), j);
    out.count.set(sub.count.subarray(m + 1, e), j);
    const shift = j - (m + 1);
    for (let k = m + 1; k < e; k++) out.parent[k + shift] = sub.parent[k] === m ? pa : sub.parent[k] + shift;
    j += e - m - 1;
    i = end[a];
    m = e;
  }
  keep(n);
  const r = t as Tree & RootSelf;
  if (r.rootSelf !== undefined || r.rootCount !== undefined) Object.assign(out, { rootSelf: r.rootSelf, rootCount: r.rootCount });
  return out;
}
