// Transforms in the spirit of the Firefox Profiler's: each maps a tree to a new tree in
// one pass over its nodes, parents first, so the cost is one step per distinct stack and
// never one per sample.
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
  return applyMapped(t, tr, nFrames, library).tree;
}

/**
 * One transform, and where each input node went: an output node, -1 (its samples lost
 * every frame: their weight stays in the root), or below -1 (dropped).
 */
function applyMapped(t: Tree, tr: Transform, nFrames: number, library: Libraries): { tree: Tree; map: Int32Array } {
  const b = new TreeBuilder(nFrames, Math.max(16, t.length));
  const map = new Int32Array(t.length);
  const at = (p: number): number => (p < 0 ? -1 : map[p]);
  switch (tr.kind) {
    case 'merge':
      for (let i = 0; i < t.length; i++) {
        const p = at(t.parent[i]);
        map[i] = p === DROPPED ? DROPPED : t.frame[i] === tr.f ? p : b.intern(p, t.frame[i]);
      }
      break;
    case 'drop':
      for (let i = 0; i < t.length; i++) {
        const p = at(t.parent[i]);
        map[i] = p === DROPPED || t.frame[i] === tr.f ? DROPPED : b.intern(p, t.frame[i]);
      }
      break;
    case 'focus-function': {
      // map: DROPPED while outside f; once inside, nodes of the focused tree.
      for (let i = 0; i < t.length; i++) {
        const p = t.parent[i] < 0 ? DROPPED : map[t.parent[i]];
        if (p === DROPPED) map[i] = t.frame[i] === tr.f ? b.intern(-1, tr.f) : DROPPED;
        else map[i] = b.intern(p, t.frame[i]);
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
            map[i] = m + 1 === n ? b.intern(-1, t.frame[i]) : -3;
          } else {
            state[i] = -1;
            map[i] = DROPPED;
          }
        } else {
          state[i] = n;
          map[i] = b.intern(pp < 0 ? -1 : map[pp], t.frame[i]);
        }
      }
      break;
    }
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
          map[i] = b.intern(p, t.frame[i]);
          outer[i] = t.frame[i] === tr.f ? map[i] : o;
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
          map[i] = m + 1 === n ? p : b.intern(p, t.frame[i]);
        } else {
          state[i] = -1;
          map[i] = b.intern(p, t.frame[i]);
        }
      }
      break;
    }
    case 'collapse-direct-recursion':
      for (let i = 0; i < t.length; i++) {
        const pp = t.parent[i];
        const p = at(pp);
        if (p === DROPPED) map[i] = DROPPED;
        else map[i] = t.frame[i] === tr.f && pp >= 0 && t.frame[pp] === tr.f ? p : b.intern(p, t.frame[i]);
      }
      break;
    case 'collapse-library':
      for (let i = 0; i < t.length; i++) {
        const pp = t.parent[i];
        const p = at(pp);
        const lib = library && t.frame[i] < library.length ? library[t.frame[i]] : -1;
        if (p === DROPPED) map[i] = DROPPED;
        else if (lib !== tr.f) map[i] = b.intern(p, t.frame[i]);
        else map[i] = pp >= 0 && t.frame[pp] < library!.length && library![t.frame[pp]] === tr.f ? p : b.intern(p, tr.f);
      }
      break;
  }
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
  const out = b.finish() as Tree & RootSelf;
  if (rootSelf > 0 || rootCount > 0) {
    out.rootSelf = rootSelf;
    out.rootCount = rootCount;
  }
  return { tree: out, map };
}

/** Weight that lost every frame (a merged single-frame stack) stays in the root total. */
export interface RootSelf {
  rootSelf?: number;
  rootCount?: number;
}

export function applyTransforms(t: Tree, trs: Transform[], nFrames: number, library: Libraries = null): Tree {
  return trs.length === 0 ? t : applyTransformsMapped(t, trs, nFrames, library).tree;
}

/**
 * Transforms in order, and where each node of the input tree ended up (see applyMapped):
 * the flame chart follows each sample's stack through it.
 */
export function applyTransformsMapped(t: Tree, trs: Transform[], nFrames: number, library: Libraries = null): { tree: Tree; map: Int32Array } {
  const map = new Int32Array(t.length);
  for (let i = 0; i < map.length; i++) map[i] = i;
  let rootSelf = (t as Tree & RootSelf).rootSelf ?? 0;
  let rootCount = (t as Tree & RootSelf).rootCount ?? 0;
  for (const tr of trs) {
    const step = applyMapped(t, tr, nFrames, library);
    t = step.tree;
    for (let i = 0; i < map.length; i++) if (map[i] >= 0) map[i] = step.map[map[i]];
    // Samples left without frames have no f to focus on; other transforms keep them.
    const keeps = tr.kind !== 'focus-function' && tr.kind !== 'focus-subtree';
    rootSelf = (keeps ? rootSelf : 0) + ((t as Tree & RootSelf).rootSelf ?? 0);
    rootCount = (keeps ? rootCount : 0) + ((t as Tree & RootSelf).rootCount ?? 0);
    if (!keeps) for (let i = 0; i < map.length; i++) if (map[i] === -1) map[i] = DROPPED;
  }
  if (rootSelf > 0 || rootCount > 0) Object.assign(t, { rootSelf, rootCount });
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
