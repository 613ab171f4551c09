// Transforms in the spirit of the Firefox Profiler's: each maps a tree to a new tree in
// one pass over its nodes, parents first, so the cost is one step per distinct stack and
// never one per sample.
import { collapseLibraryInOrder } from './library-runs.js';
import { Tree, TreeBuilder } from './profile.js';

/** A transform of the call tree; `f` is a frame id of the FrameSet. */
export type Transform =
  | { kind: 'merge'; f: number } // remove the function; its callees attach to its caller
  | { kind: 'focus-function'; f: number } // only samples through f, each starting at its outermost f
  | { kind: 'focus-subtree'; path: number[] } // only samples under this path, which becomes the root
  | { kind: 'drop'; f: number } // drop samples whose stack has f
  | { kind: 'collapse-recursion'; f: number } // f ... f collapses into the outer f
  | { kind: 'merge-call-node'; path: number[] } // remove this one node; its callees attach to its parent
  | { kind: 'collapse-direct-recursion'; f: number } // f calling f directly collapses into the outer f
  | { kind: 'collapse-library'; f: number }; // each run of the library's frames becomes its frame f (a library id of the FrameSet)

const DROPPED = -2;

/** Per frame, its library's frame id or -1 (FrameSet.library); null: no frame has one. */
export type Libraries = Int32Array | null | undefined;

export function applyTransform(t: Tree, tr: Transform, nFrames: number, library: Libraries = null): Tree {
  return applyMapped(t, tr, nFrames, library, null).tree;
}

/**
 * The input nodes whose output node other input nodes are merged into (their children
 * may then meet other children of the same frame), and whether roots are; null: every
 * output node has one input node, or (`all`) any may have several.
 */
function receivers(t: Tree, tr: Transform, library: Libraries): { into: Uint8Array; root: boolean } | 'all' | null {
  const n = t.length;
  if (tr.kind === 'drop' || tr.kind === 'focus-subtree') return null;
  if (tr.kind === 'focus-function') return 'all';
  const into = new Uint8Array(n);
  let root = false;
  const mark = (target: number): void => {
    if (target < 0) root = true;
    else into[target] = 1;
  };
  const libOf = (i: number): number => (library && t.frame[i] < library.length ? library[t.frame[i]] : -1);
  if (tr.kind === 'collapse-recursion') {
    // outer[i]: the outermost f at or above i, or -1; an inner f merges into it.
    const outer = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const o = t.parent[i] < 0 ? -1 : outer[t.parent[i]];
      if (t.frame[i] === tr.f && o >= 0) mark(o);
      outer[i] = o >= 0 || t.frame[i] !== tr.f ? o : i;
    }
    return { into, root };
  }
  // up[i]: the nearest node at or above i that is not merged into its parent.
  const up = new Int32Array(n);
  const { parent, frame } = t;
  const f = 'f' in tr ? tr.f : -1;
  if (tr.kind === 'merge' || tr.kind === 'collapse-direct-recursion') {
    const direct = tr.kind === 'collapse-direct-recursion';
    for (let i = 0; i < n; i++) {
      const pp = parent[i];
      const above = pp < 0 ? -1 : up[pp];
      if (frame[i] === f && (!direct || (pp >= 0 && frame[pp] === f))) {
        mark(above);
        up[i] = above;
      } else up[i] = i;
    }
  } else if (tr.kind === 'collapse-library') {
    // A run's first frame becomes the library's frame, which a second run under the same
    // parent shares (one run alone merges with nothing: no other child has the library's
    // frame); the run's other frames merge into its first. Runs landing under one output
    // node of several input nodes meet there under a node that is looked up already.
    const runs = new Uint8Array(n + 1);
    for (let i = 0; i < n; i++) {
      const pp = parent[i];
      const above = pp < 0 ? -1 : up[pp];
      const mine = libOf(i) === f;
      const continues = mine && pp >= 0 && libOf(pp) === f;
      if (continues || (mine && runs[above + 1]++ === 1)) mark(above);
      up[i] = continues ? above : i;
    }
  } else if (tr.kind === 'merge-call-node') {
    const state = new Int32Array(n);
    const len = tr.path.length;
    for (let i = 0; i < n; i++) {
      const pp = parent[i];
      const m = pp < 0 ? 0 : state[pp];
      const on = m >= 0 && frame[i] === tr.path[m];
      state[i] = on && m + 1 < len ? m + 1 : -1;
      if (on && m + 1 === len) mark(pp < 0 ? -1 : pp);
    }
  }
  return { into, root };
}

/**
 * The children of a builder's nodes, for lookups under a few of them: a list per node
 * (slot 0: the roots), walked while short; a node with more children than that has them
 * in the builder's index. Every node made goes through here, so that a node found a
 * second time (two input nodes merged) has its first input's children to be found.
 */
class Children {
  /** Per node + 1, its first child + 1 (0: none); per node, its next sibling + 1. */
  private readonly first: Int32Array;
  private readonly next: Int32Array;
  private readonly size: Int32Array;
  private readonly hashed: Uint8Array;
  /** Whether the last lookup found its node (made before). */
  found = false;
  constructor(
    private readonly b: TreeBuilder,
    capacity: number,
  ) {
    this.first = new Int32Array(capacity + 1);
    this.next = new Int32Array(capacity);
    this.size = new Int32Array(capacity + 1);
    this.hashed = new Uint8Array(capacity + 1);
  }

  /** A new node for `frame` under `p`. */
  append(p: number, frame: number): number {
    const s = p + 1;
    const o = this.hashed[s] === 1 ? this.b.intern(p, frame) : this.b.append(p, frame);
    this.next[o] = this.first[s];
    this.first[s] = o + 1;
    this.size[s]++;
    return o;
  }

  /** The node for `frame` under `p`, made if new (`found` says which). */
  lookup(p: number, frame: number): number {
    const s = p + 1;
    if (this.hashed[s] === 0 && this.size[s] > 12) {
      // Too many to walk: from now on the builder's index answers for p.
      for (let k = this.first[s]; k > 0; k = this.next[k - 1]) this.b.index(k - 1);
      this.hashed[s] = 1;
    }
    if (this.hashed[s] === 1) {
      const before = this.b.length;
      const o = this.b.intern(p, frame);
      this.found = this.b.length === before;
      if (!this.found) {
        this.next[o] = this.first[s];
        this.first[s] = o + 1;
        this.size[s]++;
      }
      return o;
    }
    const fr = this.b.frame;
    for (let k = this.first[s]; k > 0; k = this.next[k - 1]) {
      if (fr[k - 1] === frame) {
        this.found = true;
        return k - 1;
      }
    }
    this.found = false;
    return this.append(p, frame);
  }
}

/** Makes the output node of `frame` under output node p for input node i. */
type NodeMaker = (p: number, frame: number, i: number) => number;

/**
 * Where each input node goes under a transform of one frame (merge, drop, collapse
 * recursion, collapse direct recursion, collapse library), given `node` to make an output
 * node and `at` for an input parent's output node.
 */
function mapByFrame(t: Tree, tr: Transform, library: Libraries, map: Int32Array, node: NodeMaker): void {
  const at = (p: number): number => (p < 0 ? -1 : map[p]);
  switch (tr.kind) {
    case 'merge':
      for (let i = 0; i < t.length; i++) {
        const p = at(t.parent[i]);
        map[i] = p === DROPPED ? DROPPED : t.frame[i] === tr.f ? p : node(p, t.frame[i], i);
      }
      break;
    case 'drop':
      for (let i = 0; i < t.length; i++) {
        const p = at(t.parent[i]);
        map[i] = p === DROPPED || t.frame[i] === tr.f ? DROPPED : node(p, t.frame[i], i);
      }
      break;
    case 'collapse-recursion': {
      // outer[i]: the output node of the nearest enclosing f, or -1.
      const outer = new Int32Array(t.length);
      for (let i = 0; i < t.length; i++) {
        const pp = t.parent[i];
        const p = at(pp);
        const o = pp < 0 ? -1 : outer[pp];
        if (p === DROPPED) {
          map[i] = DROPPED;
          outer[i] = -1;
        } else if (t.frame[i] === tr.f && o >= 0) {
          map[i] = o;
          outer[i] = o;
        } else {
          map[i] = node(p, t.frame[i], i);
          outer[i] = t.frame[i] === tr.f ? map[i] : o;
        }
      }
      break;
    }
    case 'collapse-direct-recursion':
      for (let i = 0; i < t.length; i++) {
        const pp = t.parent[i];
        const p = at(pp);
        if (p === DROPPED) map[i] = DROPPED;
        else map[i] = t.frame[i] === tr.f && pp >= 0 && t.frame[pp] === tr.f ? p : node(p, t.frame[i], i);
      }
      break;
    case 'collapse-library':
      for (let i = 0; i < t.length; i++) {
        const pp = t.parent[i];
        const p = at(pp);
        const lib = library && t.frame[i] < library.length ? library[t.frame[i]] : -1;
        if (p === DROPPED) map[i] = DROPPED;
        else if (lib !== tr.f) map[i] = node(p, t.frame[i], i);
        else if (pp >= 0 && t.frame[pp] < library!.length && library![t.frame[pp]] === tr.f) map[i] = p;
        else map[i] = node(p, tr.f, i);
      }
      break;
  }
}

/** Where each input node goes under focus on a function, focus on a subtree or merge node only. */
function mapByPath(t: Tree, tr: Transform, map: Int32Array, node: NodeMaker): void {
  const at = (p: number): number => (p < 0 ? -1 : map[p]);
  switch (tr.kind) {
    case 'focus-function': {
      // map: DROPPED while outside f; once inside, nodes of the focused tree.
      for (let i = 0; i < t.length; i++) {
        const p = t.parent[i] < 0 ? DROPPED : map[t.parent[i]];
        if (p === DROPPED) map[i] = t.frame[i] === tr.f ? node(-1, tr.f, i) : DROPPED;
        else map[i] = node(p, t.frame[i], i);
      }
      break;
    }
    case 'focus-subtree': {
      // state[i]: frames of the path matched (n: inside the focused subtree), -1: dropped.
      const state = new Int32Array(t.length);
      const n = tr.path.length;
      for (let i = 0; i < t.length; i++) {
        const pp = t.parent[i];
        const m = pp < 0 ? 0 : state[pp];
        if (m < 0) {
          state[i] = -1;
          map[i] = DROPPED;
        } else if (m < n) {
          if (t.frame[i] === tr.path[m]) {
            state[i] = m + 1;
            // Nodes on the path above its end carry weight outside the subtree: -3 drops it.
            map[i] = m + 1 === n ? node(-1, t.frame[i], i) : -3;
          } else {
            state[i] = -1;
            map[i] = DROPPED;
          }
        } else {
          state[i] = n;
          map[i] = node(pp < 0 ? -1 : map[pp], t.frame[i], i);
        }
      }
      break;
    }
    case 'merge-call-node': {
      // state[i]: frames of the path matched, -1 once off the path (or past its end).
      const state = new Int32Array(t.length);
      const n = tr.path.length;
      for (let i = 0; i < t.length; i++) {
        const pp = t.parent[i];
        const m = pp < 0 ? 0 : state[pp];
        const p = at(pp);
        if (m >= 0 && t.frame[i] === tr.path[m]) {
          state[i] = m + 1 === n ? -1 : m + 1;
          map[i] = m + 1 === n ? p : node(p, t.frame[i], i);
        } else {
          state[i] = -1;
          map[i] = node(p, t.frame[i], i);
        }
      }
      break;
    }
  }
}

/**
 * One transform, and where each input node went: an output node, -1 (its samples lost
 * every frame: their weight stays in the root), or below -1 (dropped).
 */
function applyMapped(t: Tree, tr: Transform, nFrames: number, library: Libraries, rank: Uint32Array | null): { tree: Tree; map: Int32Array } {
  // A library's runs move among their siblings when renamed: made in name order directly.
  if (tr.kind === 'collapse-library' && t.nameOrder === true && rank && library) return collapseLibraryInOrder(t, tr.f, library, rank);
  const all = tr.kind === 'focus-function';
  const b = new TreeBuilder(nFrames, Math.max(16, t.length), all ? t.length : 1024);
  const kids = new Children(b, t.length);
  const map = new Int32Array(t.length);
  // Children are looked up only under output nodes that several input nodes reach: those
  // other input nodes are merged into (receivers) and those a lookup found again; under
  // any other node each (parent, frame) is new and is appended without a lookup.
  const recv = receivers(t, tr, library);
  const region = new Uint8Array(t.length + 1);
  const rootIndexed = recv === 'all' || (recv !== null && recv.root);
  const into = recv === null || recv === 'all' ? null : recv.into;
  /** The output node of `frame` under output node p, made for input node i. */
  const node = (p: number, frame: number, i: number): number => {
    let o: number;
    if (all) {
      o = b.intern(p, frame);
      region[o] = 1;
    } else if (p < 0 ? rootIndexed : region[p] === 1) {
      o = kids.lookup(p, frame);
      if (kids.found) region[o] = 1;
    } else o = kids.append(p, frame);
    if (into !== null && into[i] === 1) region[o] = 1;
    return o;
  };
  if (tr.kind === 'focus-function' || tr.kind === 'focus-subtree' || tr.kind === 'merge-call-node') mapByPath(t, tr, map, node);
  else mapByFrame(t, tr, library, map, node);
  let rootSelf = 0;
  let rootCount = 0;
  for (let i = 0; i < t.length; i++) {
    const m = map[i];
    if (m >= 0) {
      b.self[m] += t.self[i];
      b.count[m] += t.count[i];
    } else if (m === -1) {
      rootSelf += t.self[i];
      rootCount += t.count[i];
    }
  }
  let out = b.finish() as Tree & RootSelf;
  if (t.nameOrder === true && rank) {
    // Output made in the input's order keeps it where one input node made each node's
    // children (drop, focus on subtree: everywhere); elsewhere it is put back in order.
    if (recv !== null) out = inNameOrder(out, rank, all ? null : region, rootIndexed, map);
    out.nameOrder = true;
  }
  if (rootSelf > 0 || rootCount > 0) {
    out.rootSelf = rootSelf;
    out.rootCount = rootCount;
  }
  return { tree: out, map };
}

/**
 * The tree renumbered depth first with each node's children in name order (what the
 * layout's fast path draws from), and `map` to the new ids. Only the children of the
 * nodes in `mixed` (null: all) and, with `mixedRoots`, the roots can be out of order.
 */
function inNameOrder(t: Tree, rank: Uint32Array, mixed: Uint8Array | null, mixedRoots: boolean, map: Int32Array): Tree {
  const n = t.length;
  const { parent, frame } = t;
  // Children of node p (roots: slot 0) in kids[off[p + 1] .. off[p + 2]], in id order.
  const off = new Int32Array(n + 2);
  for (let i = 0; i < n; i++) off[parent[i] + 2]++;
  for (let k = 2; k < n + 2; k++) off[k] += off[k - 1];
  const kids = new Int32Array(n);
  const fill = off.slice(0, n + 1);
  for (let i = 0; i < n; i++) kids[fill[parent[i] + 1]++] = i;
  for (let p = -1; p < n; p++) {
    if (p < 0 ? !mixedRoots : mixed !== null && mixed[p] !== 1) continue;
    const a = off[p + 1];
    const e = off[p + 2];
    let sorted = true;
    for (let k = a + 1; k < e && sorted; k++) sorted = rank[frame[kids[k - 1]]] <= rank[frame[kids[k]]];
    if (sorted) continue;
    if (e - a > 16) {
      kids.subarray(a, e).sort((x, y) => rank[frame[x]] - rank[frame[y]]);
      continue;
    }
    for (let k = a + 1; k < e; k++) {
      const x = kids[k];
      const r = rank[frame[x]];
      let j = k - 1;
      for (; j >= a && rank[frame[kids[j]]] > r; j--) kids[j + 1] = kids[j];
      kids[j + 1] = x;
    }
  }
  // Depth first: a node's id, then its children's subtrees in order.
  const id = new Int32Array(n);
  const stack = new Int32Array(n);
  let sp = 0;
  for (let k = off[1] - 1; k >= 0; k--) stack[sp++] = kids[k];
  let next = 0;
  while (sp > 0) {
    const x = stack[--sp];
    id[x] = next++;
    for (let k = off[x + 2] - 1; k >= off[x + 1]; k--) stack[sp++] = kids[k];
  }
  const out = { parent: new Int32Array(n), frame: new Int32Array(n), self: new Float64Array(n), count: new Float64Array(n), length: n };
  for (let i = 0; i < n; i++) {
    const j = id[i];
    out.parent[j] = parent[i] < 0 ? -1 : id[parent[i]];
    out.frame[j] = frame[i];
    out.self[j] = t.self[i];
    out.count[j] = t.count[i];
  }
  for (let i = 0; i < map.length; i++) if (map[i] >= 0) map[i] = id[map[i]];
  return out;
}

/** Weight that lost every frame (a merged single-frame stack) stays in the root total. */
export interface RootSelf {
  rootSelf?: number;
  rootCount?: number;
}

export function applyTransforms(t: Tree, trs: Transform[], nFrames: number, library: Libraries = null, rank: Uint32Array | null = null): Tree {
  for (const tr of trs) t = applyStep(t, tr, nFrames, library, rank).tree;
  return t;
}

/**
 * One transform on a tree that may already carry weight without frames (rootSelf): the
 * step the model takes from the cached tree of the transforms before it. With the frames'
 * alphabetical ranks, a tree in name order (Tree.nameOrder) gives one in name order.
 */
export function applyStep(t: Tree, tr: Transform, nFrames: number, library: Libraries = null, rank: Uint32Array | null = null): { tree: Tree; map: Int32Array } {
  const step = applyMapped(t, tr, nFrames, library, rank);
  const out = step.tree as Tree & RootSelf;
  // Samples left without frames have no f to focus on; other transforms keep them.
  const keeps = tr.kind !== 'focus-function' && tr.kind !== 'focus-subtree';
  const rootSelf = (keeps ? (t as Tree & RootSelf).rootSelf ?? 0 : 0) + (out.rootSelf ?? 0);
  const rootCount = (keeps ? (t as Tree & RootSelf).rootCount ?? 0 : 0) + (out.rootCount ?? 0);
  if (rootSelf > 0 || rootCount > 0) Object.assign(out, { rootSelf, rootCount });
  return step;
}

/**
 * Transforms in order, and where each node of the input tree ended up (see applyMapped):
 * the flame chart follows each sample's stack through it.
 */
export function applyTransformsMapped(t: Tree, trs: Transform[], nFrames: number, library: Libraries = null): { tree: Tree; map: Int32Array } {
  const map = new Int32Array(t.length);
  for (let i = 0; i < map.length; i++) map[i] = i;
  for (const tr of trs) {
    const step = applyStep(t, tr, nFrames, library);
    t = step.tree;
    for (let i = 0; i < map.length; i++) if (map[i] >= 0) map[i] = step.map[map[i]];
    if (tr.kind === 'focus-function' || tr.kind === 'focus-subtree') for (let i = 0; i < map.length; i++) if (map[i] === -1) map[i] = DROPPED;
  }
  return { tree: t, map };
}

/** Short label of a transform for the transform bar. */
export function describe(tr: Transform, name: (f: number) => string): string {
  switch (tr.kind) {
    case 'merge':
      return `Merge: ${name(tr.f)}`;
    case 'focus-function':
      return `Focus function: ${name(tr.f)}`;
    case 'focus-subtree':
      return `Focus subtree: ${tr.path.map(name).join(' > ')}`;
    case 'drop':
      return `Drop: ${name(tr.f)}`;
    case 'collapse-recursion':
      return `Collapse recursion: ${name(tr.f)}`;
    case 'merge-call-node':
      return `Merge node: ${tr.path.map(name).join(' > ')}`;
    case 'collapse-direct-recursion':
      return `Collapse direct recursion: ${name(tr.f)}`;
    case 'collapse-library':
      return `Collapse library: ${name(tr.f)}`;
  }
}

/** One letter per kind of transform in the URL (a path's frames follow, joined by `.`). */
const CODES = {
  merge: 'm',
  'focus-function': 'F',
  'focus-subtree': 'S',
  drop: 'd',
  'collapse-recursion': 'r',
  'merge-call-node': 'M',
  'collapse-direct-recursion': 'R',
  'collapse-library': 'C',
} as const;
const KINDS = Object.fromEntries(Object.entries(CODES).map(([k, c]) => [c, k])) as Record<string, Transform['kind']>;

/** Compact text form for the URL: `m12`, `F3`, `S1.2.3`, `M1.2`, `d4`, `r5`, `R5`, `C9`, joined by `~`. */
export function encodeTransforms(trs: Transform[]): string {
  return trs.map((t) => CODES[t.kind] + ('path' in t ? t.path.join('.') : String(t.f))).join('~');
}

export function decodeTransforms(s: string, nFrames: number): Transform[] {
  const out: Transform[] = [];
  for (const part of s.split('~')) {
    if (part.length < 2) continue;
    const kind = KINDS[part[0]];
    const nums = part.slice(1).split('.').map(Number);
    if (!kind || nums.some((x) => !Number.isInteger(x) || x < 0 || x >= nFrames)) continue;
    if (kind === 'focus-subtree' || kind === 'merge-call-node') out.push({ kind, path: nums });
    else if (nums.length === 1) out.push({ kind, f: nums[0] });
  }
  return out;
}
