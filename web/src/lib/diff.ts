// A differential profile: two trees merged by call path over one set of frames (joined by
// name, since the two profiles intern names separately).
import { Layout, Order, layoutTree } from './layout.js';
import { FrameSet, Tree, TreeBuilder } from './profile.js';

/** Frames of both profiles joined by name; `mapA`/`mapB` translate each side's frame ids. */
export function joinFrames(a: FrameSet, b: FrameSet): { frames: FrameSet; mapA: Int32Array; mapB: Int32Array } {
  const index = new Map<string, number>();
  const names: string[] = [];
  const kinds: number[] = [];
  const add = (fs: FrameSet): Int32Array => {
    const m = new Int32Array(fs.names.length);
    for (let f = 0; f < fs.names.length; f++) {
      const name = fs.names[f];
      let id = index.get(name);
      if (id === undefined) {
        id = names.length;
        names.push(name);
        kinds.push(fs.kinds[f]);
        index.set(name, id);
      }
      m[f] = id;
    }
    return m;
  };
  const mapA = add(a);
  const mapB = add(b);
  // Libraries keep their frames' names: a frame's library in either profile.
  let library: Int32Array | undefined;
  for (const [fs, m] of [[a, mapA], [b, mapB]] as const) {
    if (!fs.library) continue;
    library ??= new Int32Array(names.length).fill(-1);
    for (let f = 0; f < fs.library.length; f++) if (fs.library[f] >= 0) library[m[f]] = m[fs.library[f]];
  }
  const byName = names.map((_, i) => i).sort((x, y) => (names[x] < names[y] ? -1 : names[x] > names[y] ? 1 : 0));
  const order = new Uint32Array(names.length);
  byName.forEach((f, r) => (order[f] = r));
  const frames: FrameSet = { names, kinds: Uint8Array.from(kinds), order };
  if (library) frames.library = library;
  return { frames, mapA, mapB };
}

/** Re-expresses a tree's frames through `map`. */
export function remapFrames(t: Tree, map: Int32Array): Tree {
  const frame = new Int32Array(t.length);
  for (let i = 0; i < t.length; i++) frame[i] = map[t.frame[i]];
  return { parent: t.parent, frame, self: t.self, count: t.count, length: t.length };
}

export interface DiffLayout {
  layout: Layout;
  /** Total weight per node in each profile (after normalisation of `before`, if asked). */
  before: Float64Array;
  after: Float64Array;
  selfBefore: Float64Array;
  selfAfter: Float64Array;
  sumBefore: number;
  sumAfter: number;
  /** Scale applied to before's weights (sumAfter / sumBefore when normalising, else 1). */
  scale: number;
}

/**
 * Merges two trees (same frame set) and lays out the result with after's widths; stacks
 * gone in after keep their before widths so they stay visible in their own colour.
 */
export function diffLayout(a: Tree, b: Tree, frames: FrameSet, order: Order, normalise: boolean): DiffLayout {
  const builder = new TreeBuilder(frames.names.length, a.length + b.length + 16);
  const ma = new Int32Array(a.length);
  for (let i = 0; i < a.length; i++) ma[i] = builder.intern(a.parent[i] < 0 ? -1 : ma[a.parent[i]], a.frame[i]);
  const mb = new Int32Array(b.length);
  for (let i = 0; i < b.length; i++) mb[i] = builder.intern(b.parent[i] < 0 ? -1 : mb[b.parent[i]], b.frame[i]);
  const t = builder.finish();
  let sumA = 0;
  let sumB = 0;
  for (let i = 0; i < a.length; i++) sumA += a.self[i];
  for (let i = 0; i < b.length; i++) sumB += b.self[i];
  const scale = normalise && sumA > 0 ? sumB / sumA : 1;
  const selfA = new Float64Array(t.length);
  const selfB = new Float64Array(t.length);
  for (let i = 0; i < a.length; i++) selfA[ma[i]] += a.self[i] * scale;
  for (let i = 0; i < b.length; i++) selfB[mb[i]] += b.self[i];
  const totA = total(t, selfA);
  const totB = total(t, selfB);
  const width = new Float64Array(t.length);
  for (let i = 0; i < t.length; i++) width[i] = totB[i] > 0 ? selfB[i] : selfA[i];
  const layout = layoutTree(t, frames, order, width);
  const before = new Float64Array(layout.n);
  const after = new Float64Array(layout.n);
  const sb = new Float64Array(layout.n);
  const sa = new Float64Array(layout.n);
  for (let i = 0; i < t.length; i++) {
    before[i + 1] = totA[i];
    after[i + 1] = totB[i];
    sb[i + 1] = selfA[i];
    sa[i + 1] = selfB[i];
  }
  before[0] = sumA * scale;
  after[0] = sumB;
  return { layout, before, after, selfBefore: sb, selfAfter: sa, sumBefore: sumA * scale, sumAfter: sumB, scale };
}

function total(t: Tree, self: Float64Array): Float64Array {
  const out = Float64Array.from(self);
  for (let i = t.length - 1; i >= 0; i--) if (t.parent[i] >= 0) out[t.parent[i]] += out[i];
  return out;
}

/** A frame whose change is not beyond noise (`kiln compare`'s marks): drawn as unchanged. */
export const UNMARKED_COLOR = 'rgb(245,245,245)';

/** Which frames name a function of `marked` (the functions beyond noise). */
export function markedFrames(names: string[], marked: string[]): boolean[] {
  const m = new Set(marked);
  return names.map((n) => m.has(n));
}

export const NEW_COLOR = 'rgb(40,170,90)';
export const GONE_COLOR = 'rgb(150,150,160)';

/**
 * Colour of a node by its change: red grew, blue shrank, white-ish unchanged; the
 * intensity is the change relative to the largest change on screen (`maxDelta`).
 */
export function diffColor(before: number, after: number, maxDelta: number): string {
  if (before <= 0 && after > 0) return NEW_COLOR;
  if (after <= 0 && before > 0) return GONE_COLOR;
  const d = after - before;
  const a = maxDelta > 0 ? Math.min(1, Math.abs(d) / maxDelta) : 0;
  const c = Math.round(245 - 200 * a);
  return d > 0 ? GREW[c - 45] : d < 0 ? SHRANK[c - 45] : 'rgb(245,245,245)';
}

// The 201 shades of each direction, made once (the renderer asks for a colour per node).
const GREW = Array.from({ length: 201 }, (_, i) => `rgb(255,${i + 45},${i + 45})`);
const SHRANK = Array.from({ length: 201 }, (_, i) => `rgb(${i + 45},${i + 45},255)`);

/**
 * Largest |after - before| among nodes that exist on both sides (root excluded), of the
 * nodes `keep` accepts when given.
 */
export function maxDelta(d: DiffLayout, keep?: (v: number) => boolean): number {
  let m = 0;
  for (let v = 1; v < d.layout.n; v++) {
    if (keep && !keep(v)) continue;
    if (d.before[v] > 0 && d.after[v] > 0) m = Math.max(m, Math.abs(d.after[v] - d.before[v]));
  }
  return m;
}
