// Questions asked of a layout: search matches, per-function totals, sandwich trees.
import { Layout } from './layout.js';
import { FrameSet, KIND_ROOT, Tree, TreeBuilder } from './profile.js';

/**
 * Whether a search pattern asks for its case (ripgrep's smart case): it has an upper-case
 * letter outside an escape (`\S`, `\W`, `\D`, `\B`, `\p{Lu}` name character classes, not
 * letters to match).
 */
export function hasCapital(query: string): boolean {
  const literal = query.replace(/\\[pPkux]\{[^}]*\}|\\c[A-Za-z]|\\./g, '');
  return /\p{Lu}/u.test(literal);
}

/**
 * Compiles a search; null for an empty query, an Error for an invalid regex. Case matters
 * when asked (`matchCase`) or when the pattern has a capital letter (smart case).
 */
export function compileSearch(query: string, matchCase: boolean): RegExp | null | Error {
  if (!query) return null;
  try {
    return new RegExp(query, matchCase || hasCapital(query) ? '' : 'i');
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}

/**
 * Which frames match: one regex test per distinct frame, never per node. Functions only,
 * unless `names` asks for the process and thread names at the stacks' roots too.
 */
export function matchFrames(frames: FrameSet, re: RegExp, names = false): Uint8Array {
  const m = new Uint8Array(frames.names.length);
  for (let f = 0; f < m.length; f++) m[f] = (names || frames.kinds[f] !== KIND_ROOT) && re.test(frames.names[f]) ? 1 : 0;
  return m;
}

/**
 * Weight under matching frames, each sample counted once even when several of its frames
 * match (nested matches are not added again), as flamegraph.pl's "Matched:" does.
 */
export function matchedWeight(l: Layout, match: Uint8Array): number {
  const inside = new Uint8Array(l.n);
  let sum = 0;
  for (let v = 1; v < l.n; v++) {
    const p = l.parent[v];
    const hit = match[l.frame[v]] === 1;
    if (hit && !inside[p]) sum += l.total[v];
    inside[v] = hit || inside[p] ? 1 : 0;
  }
  return sum;
}

/** Per-function self and total; a recursive function's total counts each sample once. */
export interface FunctionStats {
  self: Float64Array;
  total: Float64Array;
  /** Functions with any weight. */
  present: Uint32Array;
}

export function functionStats(l: Layout, nFrames: number, weight?: { self: Float64Array; total: Float64Array }): FunctionStats {
  const selfW = weight?.self ?? l.self;
  const totalW = weight?.total ?? l.total;
  const self = new Float64Array(nFrames);
  const total = new Float64Array(nFrames);
  // onStack[f]: how many nodes of frame f are on the current root path.
  const onStack = new Int32Array(nFrames);
  const seen = new Uint8Array(nFrames);
  const stack: number[] = [0];
  while (stack.length) {
    const v = stack.pop() as number;
    if (v < 0) {
      onStack[l.frame[~v]]--;
      continue;
    }
    const f = l.frame[v];
    if (f >= 0) {
      self[f] += selfW[v];
      if (onStack[f] === 0) total[f] += totalW[v];
      onStack[f]++;
      if (totalW[v] > 0) seen[f] = 1;
      stack.push(~v);
    }
    for (let k = l.childStart[v + 1]; k-- > l.childStart[v]; ) stack.push(l.childList[k]);
  }
  const present: number[] = [];
  for (let f = 0; f < nFrames; f++) if (seen[f]) present.push(f);
  return { self, total, present: Uint32Array.from(present) };
}

/**
 * Callers of f: a tree rooted at f whose children are its callers, theirs their callers,
 * and so on; each outermost occurrence of f contributes its total once.
 */
export function callersTree(l: Layout, f: number, nFrames: number, total: Float64Array = l.total, count: Float64Array = l.count): Tree {
  const b = new TreeBuilder(nFrames);
  const inside = new Uint8Array(l.n);
  for (let v = 1; v < l.n; v++) {
    const p = l.parent[v];
    const hit = l.frame[v] === f;
    inside[v] = hit || inside[p] ? 1 : 0;
    if (!hit || inside[p] || total[v] === 0) continue;
    let node = b.intern(-1, f);
    for (let u = p; u > 0; u = l.parent[u]) node = b.intern(node, l.frame[u]);
    b.self[node] += total[v];
    b.count[node] += count[v];
  }
  return b.finish();
}

/** Callees of f: every outermost occurrence of f merged into one tree rooted at f. */
export function calleesTree(l: Layout, f: number, nFrames: number, self: Float64Array = l.self, selfCount: Float64Array = l.selfCount): Tree {
  const b = new TreeBuilder(nFrames);
  const map = new Int32Array(l.n).fill(-1);
  for (let v = 1; v < l.n; v++) {
    const pm = map[l.parent[v]];
    if (pm >= 0) map[v] = b.intern(pm, l.frame[v]);
    else if (l.frame[v] === f) map[v] = b.intern(-1, f);
    if (map[v] >= 0) {
      b.self[map[v]] += self[v];
      b.count[map[v]] += selfCount[v];
    }
  }
  return b.finish();
}

/**
 * Matching nodes in drawing order (depth first, left to right), for stepping through
 * search results; nodes without weight are not drawn and not listed.
 */
export function matchNodes(l: Layout, match: Uint8Array): Uint32Array {
  const out: number[] = [];
  const stack: number[] = [0];
  while (stack.length) {
    const v = stack.pop() as number;
    if (v > 0 && match[l.frame[v]] && l.total[v] > 0) out.push(v);
    for (let k = l.childStart[v + 1]; k-- > l.childStart[v]; ) stack.push(l.childList[k]);
  }
  return Uint32Array.from(out);
}
