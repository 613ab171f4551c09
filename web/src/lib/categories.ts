// Flame graphs coloured by category (DOM-free): what kind of work each frame is, as the
// run report's category charts count it (crates/report/src/categories.rs). The report
// sends each rule's decision per frame name; a node's category is decided along its
// stack as the report decides a sample's: the node's own frame's category, else its
// caller's; a frame without a name of its own (`beam.smp+0x73ee0`) decides only when no
// frame above does, `sched_yield` only when no user frame above does; a thread a rule
// names decides for everything under it, except garbage collection, which is garbage
// collection on any thread; undecided stacks are `other` (`other (kernel)` under a kernel
// leaf). A node's self weight is then counted in its category exactly as
// the report counts the samples ending there.
import { Layout } from './layout.js';
import { FrameSet, KIND_KERNEL, KIND_ROOT, threadGroupName } from './profile.js';

/** What the report sends (kiln_report::categories::FrameCategories). */
export interface FrameCategories {
  names: string[];
  /** (frame name, 1 for a kernel frame else 0, category) of every frame a rule names. */
  frames: [string, number, number][];
  /** (thread name, category) of every thread a `thread:` rule names. */
  threads: [string, number][];
  other: number;
  other_kernel: number;
  yield_category: number | null;
  /** The category of garbage collection, which decides on any thread. */
  gc_category?: number | null;
}

/** Whether a value is a well-formed FrameCategories (the page's JSON is not trusted). */
export function isFrameCategories(c: unknown): c is FrameCategories {
  if (!c || typeof c !== 'object') return false;
  const x = c as Record<string, unknown>;
  const n = Array.isArray(x.names) ? x.names.length : -1;
  const idx = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 0 && (v as number) < n;
  return (
    n > 0 &&
    (x.names as unknown[]).every((s) => typeof s === 'string') &&
    Array.isArray(x.frames) &&
    x.frames.every((f) => Array.isArray(f) && typeof f[0] === 'string' && idx(f[2])) &&
    Array.isArray(x.threads) &&
    x.threads.every((t) => Array.isArray(t) && typeof t[0] === 'string' && idx(t[1])) &&
    idx(x.other) &&
    idx(x.other_kernel) &&
    (x.yield_category === null || x.yield_category === undefined || idx(x.yield_category)) &&
    (x.gc_category === null || x.gc_category === undefined || idx(x.gc_category))
  );
}

const UNDECIDED = -1;

/** A frame the report would let its callers decide for: no name of its own. */
const unnamed = (name: string): boolean => name.includes('+0x') || name === '[unknown]';

/** Each frame's own category (or UNDECIDED) in a frame set, thread roots included. */
export function frameCategoryOf(frames: FrameSet, c: FrameCategories): Int16Array {
  const byName = new Map<string, number>();
  for (const [name, kernel, k] of c.frames) byName.set(`${kernel ? 1 : 0}:${name}`, k);
  const byThread = new Map<string, number>();
  for (const [name, k] of c.threads) {
    byThread.set(name, k);
    const g = threadGroupName(name);
    if (!byThread.has(g)) byThread.set(g, k);
  }
  const out = new Int16Array(frames.names.length).fill(UNDECIDED);
  for (let f = 0; f < out.length; f++) {
    const name = frames.names[f];
    if (frames.kinds[f] === KIND_ROOT) {
      // A thread root: `name [tid]` (threads) or the group's name.
      out[f] = byThread.get(name) ?? byThread.get(name.replace(/ \[-?\d+\]$/, '')) ?? UNDECIDED;
    } else out[f] = byName.get(`${frames.kinds[f] === KIND_KERNEL ? 1 : 0}:${name}`) ?? UNDECIDED;
  }
  return out;
}

/**
 * The category of every node of a layout (node 0, "all", gets `other`). Parents are
 * decided before their children: a layout's parents have smaller ids (its tree's order),
 * so one pass in id order, front to back through memory.
 */
export function nodeCategories(l: Pick<Layout, 'n' | 'parent' | 'frame'>, frames: FrameSet, c: FrameCategories, own = frameCategoryOf(frames, c)): Uint16Array {
  const decided = new Int16Array(l.n).fill(UNDECIDED);
  // The deepest user frame's decision above a node (what a yield defers to).
  const user = new Int16Array(l.n).fill(UNDECIDED);
  // A thread a rule names decides for its whole subtree.
  const thread = new Int16Array(l.n).fill(UNDECIDED);
  // Per frame, found once: 0 not yet, 1 named, 2 unnamed.
  const named = new Uint8Array(frames.names.length);
  const yieldCat = c.yield_category ?? -2;
  const gc = c.gc_category ?? -2;
  const out = new Uint16Array(l.n);
  out[0] = c.other;
  for (let v = 1; v < l.n; v++) {
    const p = l.parent[v];
    const f = l.frame[v];
    const kind = f >= 0 ? frames.kinds[f] : KIND_ROOT;
    const mine = f >= 0 ? own[f] : UNDECIDED;
    const top = p <= 0;
    const inherited = top ? UNDECIDED : decided[p];
    const inheritedUser = top ? UNDECIDED : user[p];
    const th = top ? UNDECIDED : thread[p];
    if (kind === KIND_ROOT) {
      thread[v] = mine !== UNDECIDED ? mine : th;
      decided[v] = inherited;
      user[v] = inheritedUser;
    } else {
      thread[v] = th;
      if (named[f] === 0) named[f] = unnamed(frames.names[f]) ? 2 : 1;
      let k: number;
      if (named[f] === 2) k = inherited !== UNDECIDED ? inherited : mine;
      else if (mine !== UNDECIDED && mine === yieldCat) k = inheritedUser !== UNDECIDED ? inheritedUser : mine;
      else k = mine !== UNDECIDED ? mine : inherited;
      decided[v] = k;
      user[v] = kind !== KIND_KERNEL ? k : inheritedUser;
    }
    const collected = gc >= 0 && decided[v] === gc;
    out[v] = thread[v] !== UNDECIDED && !collected ? thread[v] : decided[v] !== UNDECIDED ? decided[v] : kind === KIND_KERNEL ? c.other_kernel : c.other;
  }
  return out;
}

/** Each category's share of the layout's weight, percent (self weights summed by category). */
export function categoryShares(l: Layout, cats: Uint16Array, n: number): number[] {
  const sums = new Array<number>(n).fill(0);
  let all = 0;
  for (let v = 1; v < l.n; v++) {
    const s = l.self[v];
    if (!s) continue;
    sums[cats[v]] += s;
    all += s;
  }
  return sums.map((x) => (all > 0 ? (x / all) * 100 : 0));
}

/**
 * The category of every node of a stack table whose roots have parent -1 (the flame
 * chart's tree), decided as nodeCategories decides a layout's; null when a parent does not
 * come before its children (the one pass needs them first).
 */
export function stackCategories(parent: Int32Array, frame: Int32Array, frames: FrameSet, c: FrameCategories, own: Int16Array): Uint16Array | null {
  const n = parent.length;
  // Shifted by one under a synthetic root 0, as a layout has it.
  const p = new Int32Array(n + 1);
  const f = new Int32Array(n + 1);
  p[0] = -1;
  f[0] = -1;
  for (let v = 0; v < n; v++) {
    if (parent[v] >= v) return null;
    p[v + 1] = parent[v] < 0 ? 0 : parent[v] + 1;
    f[v + 1] = frame[v];
  }
  return nodeCategories({ n: n + 1, parent: p, frame: f }, frames, c, own).subarray(1);
}

/**
 * Each frame's own category, a frame no rule names counted as `other` (`other (kernel)`
 * for a kernel frame): the sandwich's callers, whose stacks run the other way, are
 * coloured by it.
 */
export function ownCategories(frames: FrameSet, c: FrameCategories, own: Int16Array): Uint16Array {
  const out = new Uint16Array(own.length);
  for (let f = 0; f < own.length; f++) out[f] = own[f] !== UNDECIDED ? own[f] : frames.kinds[f] === KIND_KERNEL ? c.other_kernel : c.other;
  return out;
}
