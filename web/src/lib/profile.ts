// The DOM-free profile model of the viewer: what import/decode.ts produces and every
// other module reads. Frames and stacks are typed arrays (a million frames must not cost
// a million objects); names are strings sliced from one decoded text.
import { timeIndex, windowSums } from './timeindex.js';

/** One decoded profile, as the HTML embeds it (see crates/viewer/src/encode.rs). */
export interface RawProfile {
  strings: string[];
  frameName: Uint32Array;
  frameKind: Uint8Array;
  /** Rank of each frame in byte order of names (alphabetical sort without comparing strings). */
  frameOrder: Uint32Array;
  stackParent: Int32Array;
  stackFrame: Uint32Array;
  sampleStack: Uint32Array;
  sampleWeight: Float64Array;
  /** How many samples each row stands for (rows may aggregate many); null: one each. */
  sampleCount: Float64Array | null;
  /** ns since timeOrigin, -1 when unknown; null when the profile has no timestamps. */
  sampleTime: Float64Array | null;
  /** Thread index per sample, -1 when unknown; null when no sample has a thread. */
  sampleThread: Int32Array | null;
  threadName: Uint32Array;
  threadTid: Int32Array;
  timeOrigin: number;
  /** Stacks are numbered depth first, each node's children in name order. */
  stacksInNameOrder?: boolean;
  /** Depth of each stack (0 for a root), when the page carries it. */
  stackDepth?: Uint8Array | null;
}

/** Frame kinds as encoded. */
export const KIND_KERNEL = 2;
export const KIND_JIT = 3;
export const KIND_INLINE = 4;
/** A process or thread name at the root of stacks (folded stacks' first frame, thread roots). */
export const KIND_ROOT = 5;

/**
 * The functions a tree can name: every frame of the profile, then one synthetic frame per
 * library the frames name (what "collapse library" collapses a run of its frames into),
 * then synthetic root frames for threads. Transforms, search and the tables speak of
 * functions by these ids; library ids do not depend on the thread mode.
 */
export interface FrameSet {
  names: string[];
  kinds: Uint8Array;
  /** Alphabetical rank. */
  order: Uint32Array;
  /** Per frame, the id of its library's synthetic frame, or -1 (absent: none has one). */
  library?: Int32Array;
}

/** A weighted prefix tree of stacks: parents always have smaller ids than children. */
export interface Tree {
  parent: Int32Array;
  frame: Int32Array;
  self: Float64Array;
  /** Samples ending at each node (weights may be periods or bytes; this counts samples). */
  count: Float64Array;
  length: number;
  /**
   * Ids are a depth-first order with each node's children in name order (the profile's
   * own stack table as kiln writes it): the alphabetical layout then needs no sorting.
   */
  nameOrder?: boolean;
}

/**
 * End of each node's subtree (exclusive), per tree in name order (whose subtrees are id
 * ranges: node i's is [i, end[i]), and its next sibling end[i]): made once per tree.
 */
const ends = new WeakMap<Tree, Int32Array>();
export function subtreeEnds(t: Tree): Int32Array {
  let end = ends.get(t);
  if (end) return end;
  const n = t.length;
  const size = new Int32Array(n).fill(1);
  const parent = t.parent;
  for (let i = n - 1; i > 0; i--) if (parent[i] >= 0) size[parent[i]] += size[i];
  end = size;
  for (let i = 0; i < n; i++) end[i] += i;
  ends.set(t, end);
  return end;
}

/**
 * The library (module, executable, shared object) a frame's name says its code is in,
 * or null: `libc.so.6\`malloc` (DTrace, bpftrace), `[libc.so.6]` and `[libc.so.6 <0x1f>]`
 * (perf's frames without a symbol), `malloc [libc.so.6]`, `libc.so.6+0x9a2f0` (pprof's
 * addresses without a function); kernel frames (kind or `_[k]`) are `kernel`.
 */
export function libraryOf(name: string, kind: number): string | null {
  if (kind === KIND_KERNEL || name.endsWith('_[k]')) return 'kernel';
  if (kind === KIND_ROOT) return null;
  const tick = name.indexOf('`');
  if (tick > 0) return name.slice(0, tick);
  const last = name.charCodeAt(name.length - 1);
  if (last === 93 /* ] */) {
    const open = name.charCodeAt(0) === 91 /* [ */ ? 0 : name.lastIndexOf(' [') + 1;
    if (open === 0 && name.charCodeAt(0) !== 91) return null;
    let lib = name.slice(open + 1, -1);
    const sp = lib.indexOf(' <');
    if (sp > 0) lib = lib.slice(0, sp);
    return lib === '' || lib === 'unknown' || lib.startsWith('unknown ') || /^[0-9]+$/.test(lib) ? null : lib;
  }
  if ((last >= 48 && last <= 57) || (last >= 97 && last <= 102)) {
    const plus = name.lastIndexOf('+0x');
    if (plus > 0 && /^[0-9a-f]+$/.test(name.slice(plus + 3)) && name.indexOf(' ') < 0) return name.slice(0, plus);
  }
  return null;
}

export function frameSetOf(raw: RawProfile, extra: string[] = []): FrameSet {
  const n = raw.frameName.length;
  const library = new Int32Array(n).fill(-1);
  const libs = new Map<string, number>();
  const libNames: string[] = [];
  for (let i = 0; i < n; i++) {
    const lib = libraryOf(raw.strings[raw.frameName[i]] ?? '', raw.frameKind[i]);
    if (lib === null) continue;
    let id = libs.get(lib);
    if (id === undefined) libs.set(lib, (id = n + libNames.push(lib) - 1));
    library[i] = id;
  }
  const synthetic = [...libNames, ...extra];
  const names = new Array<string>(n + synthetic.length);
  for (let i = 0; i < n; i++) names[i] = raw.strings[raw.frameName[i]] ?? '';
  for (let i = 0; i < synthetic.length; i++) names[n + i] = synthetic[i];
  const kinds = new Uint8Array(n + synthetic.length);
  kinds.set(raw.frameKind);
  kinds.fill(KIND_ROOT, n + libNames.length);
  const order = new Uint32Array(n + synthetic.length);
  order.set(raw.frameOrder);
  // Libraries and thread roots sort after every real frame, among themselves by name.
  const idx = synthetic.map((_, i) => i).sort((a, b) => (synthetic[a] < synthetic[b] ? -1 : synthetic[a] > synthetic[b] ? 1 : a - b));
  idx.forEach((e, r) => (order[n + e] = n + r));
  return libNames.length ? { names, kinds, order, library } : { names, kinds, order };
}

/** Id of a frame set's first thread root (its frames and libraries come before). */
export function firstThreadFrame(frames: FrameSet, roots: number): number {
  return frames.names.length - roots;
}

/**
 * Builds a tree by interning (parent, frame) pairs; ids come out parent-first. The index
 * is an open-addressing table of node ids over typed arrays (a Map of a million numeric
 * keys costs most of a transform's time); a slot's key is read from the node itself.
 */
export class TreeBuilder {
  parent: Int32Array;
  frame: Int32Array;
  self: Float64Array;
  count: Float64Array;
  length = 0;
  /**
   * Node id + 1 per slot, 0 for an empty one; size a power of two, at most half full.
   * Made on the first lookup (a builder that only appends never needs it).
   */
  private slots: Int32Array | null = null;
  private mask = 0;
  private readonly initialSlots: number;
  private indexed = 0;

  /** `indexed`: how many nodes the index is first made for (it grows beyond). */
  constructor(_nFrames: number, capacity = 1024, indexed = capacity) {
    this.parent = new Int32Array(capacity);
    this.frame = new Int32Array(capacity);
    this.self = new Float64Array(capacity);
    this.count = new Float64Array(capacity);
    let size = 1024;
    while (size < indexed * 2) size *= 2;
    this.initialSlots = size;
  }

  /** The node for `frame` under `parent` (-1 for a root), created if new. */
  intern(parent: number, frame: number): number {
    if (this.slots === null) this.rehash(this.initialSlots);
    const mask = this.mask;
    let h = (Math.imul(parent + 1, 0x9e3779b1) ^ Math.imul(frame, 0x85ebca77)) >>> 0;
    h = (h ^ (h >>> 15)) & mask;
    const slots = this.slots!;
    for (;;) {
      const s = slots[h];
      if (s === 0) break;
      if (this.parent[s - 1] === parent && this.frame[s - 1] === frame) return s - 1;
      h = (h + 1) & mask;
    }
    if (this.length === this.parent.length) this.grow();
    const id = this.length++;
    this.parent[id] = parent;
    this.frame[id] = frame;
    slots[h] = id + 1;
    if (++this.indexed * 2 > slots.length) this.rehash(slots.length * 2);
    return id;
  }

  /** Puts node `id`, appended before, in the index: lookups under its parent find it. */
  index(id: number): void {
    if (this.slots === null) this.rehash(this.initialSlots);
    const mask = this.mask;
    let h = (Math.imul(this.parent[id] + 1, 0x9e3779b1) ^ Math.imul(this.frame[id], 0x85ebca77)) >>> 0;
    h = (h ^ (h >>> 15)) & mask;
    const slots = this.slots!;
    while (slots[h] !== 0) h = (h + 1) & mask;
    slots[h] = id + 1;
    if (++this.indexed * 2 > slots.length) this.rehash(slots.length * 2);
  }

  /**
   * A new node for `frame` under `parent`, not indexed: for a parent that no other
   * (parent, frame) pair can reach, whose children are then never looked up.
   */
  append(parent: number, frame: number): number {
    if (this.length === this.parent.length) this.grow();
    const id = this.length++;
    this.parent[id] = parent;
    this.frame[id] = frame;
    return id;
  }

  /** An index of at least `size` slots holding the indexed nodes (appended ones stay out). */
  private rehash(size: number): void {
    while (size < this.indexed * 2) size *= 2;
    const slots = new Int32Array(size);
    const mask = size - 1;
    const old = this.slots;
    if (old !== null) {
      for (let k = 0; k < old.length; k++) {
        const id = old[k] - 1;
        if (id < 0) continue;
        let h = (Math.imul(this.parent[id] + 1, 0x9e3779b1) ^ Math.imul(this.frame[id], 0x85ebca77)) >>> 0;
        h = (h ^ (h >>> 15)) & mask;
        while (slots[h] !== 0) h = (h + 1) & mask;
        slots[h] = id + 1;
      }
    }
    this.slots = slots;
    this.mask = mask;
  }

  private grow(): void {
    const cap = this.parent.length * 2;
    const p = new Int32Array(cap);
    p.set(this.parent);
    const f = new Int32Array(cap);
    f.set(this.frame);
    const s = new Float64Array(cap);
    s.set(this.self);
    const c = new Float64Array(cap);
    c.set(this.count);
    this.count = c;
    this.parent = p;
    this.frame = f;
    this.self = s;
  }

  finish(): Tree {
    return {
      parent: this.parent.subarray(0, this.length),
      frame: this.frame.subarray(0, this.length),
      self: this.self.subarray(0, this.length),
      count: this.count.subarray(0, this.length),
      length: this.length,
    };
  }
}

/** How threads appear in the tree. */
export type ThreadMode = 'merged' | 'threads' | 'groups';

/** kiln's default thread-merging rules, in the order they apply. */
const GROUP_RULES: [RegExp, string][] = [
  [/^[0-9]+_/, ''],
  [/^erts_([^_]+)_[0-9]+/, 'erts_$1'],
  [/-[0-9]+-/g, '-N-'],
  [/[-_#:. ]?[0-9]+$/, ''],
];

/**
 * The group a thread's name belongs to, as kiln groups threads everywhere (the run
 * summary's and the report's "CPU by thread group", crates/model/src/transform.rs
 * `merge_name` with `default_merge_rules`): `3_scheduler` → `scheduler`, `erts_sched_2` →
 * `erts_sched`, `pool-1-thread-3` → `pool-N-thread`, `worker-12` → `worker`. The tracks
 * and the "Threads by name" roots both name groups with it.
 */
export function threadGroupName(name: string): string {
  let out = name;
  for (const [re, rep] of GROUP_RULES) out = out.replace(re, rep);
  return out;
}

/** Names of the synthetic root frames a thread mode needs, and each thread's root index. */
export function threadRoots(raw: RawProfile, mode: ThreadMode): { names: string[]; rootOf: Int32Array } {
  const nT = raw.threadName.length;
  const rootOf = new Int32Array(nT).fill(-1);
  const names: string[] = [];
  if (mode === 'merged') return { names, rootOf };
  const seen = new Map<string, number>();
  for (let t = 0; t < nT; t++) {
    const base = raw.strings[raw.threadName[t]] ?? '';
    const name = mode === 'groups' ? threadGroupName(base) : raw.threadTid[t] >= 0 ? `${base} [${raw.threadTid[t]}]` : base;
    let r = seen.get(name);
    if (r === undefined) {
      r = names.length;
      names.push(name);
      seen.set(name, r);
    }
    rootOf[t] = r;
  }
  return { names, rootOf };
}

/** Options for building the base tree of a profile. */
export interface BaseOptions {
  /**
   * Keep samples with time in [from, to] (ns since origin) only. Samples that weigh time
   * (`nsPerWeight`: off-CPU blocks stamped when they began) cover [t, t + weight] and
   * count the part of it inside the window.
   */
  range: [number, number] | null;
  /** ns per unit of weight when weights are time; null (default) for point samples. */
  nsPerWeight?: number | null;
  threadMode: ThreadMode;
  /** Frame id of the first synthetic thread root (frames.length before the roots). */
  firstThreadFrame: number;
  rootOf: Int32Array;
  /** Per thread, 1 when its samples are left out; null (default): none are. */
  hidden?: Uint8Array | null;
}

/** Per thread of `raw`, 1 for the threads listed in `hidden`; null when none is. */
export function hiddenMask(raw: RawProfile, hidden: readonly number[]): Uint8Array | null {
  if (!hidden.length || !raw.sampleThread) return null;
  const m = new Uint8Array(raw.threadName.length);
  for (const t of hidden) if (t >= 0 && t < m.length) m[t] = 1;
  return m;
}

/**
 * The tree of a profile's samples. Fast path: without thread roots the profile's own
 * stack table is the tree and only self weights are summed.
 */
export function baseTree(raw: RawProfile, opts: BaseOptions): Tree {
  const nS = raw.stackParent.length;
  const { sampleStack: st, sampleWeight: w, sampleCount: c, sampleTime: tm, sampleThread: th } = raw;
  // The share of sample i's weight inside the window: 1 or 0 for a point in time, the
  // covered part of [t, t + w] for a span.
  const nsw = opts.nsPerWeight ?? null;
  const hide = th ? opts.hidden ?? null : null;
  const share = (i: number): number => {
    if (hide && th![i] >= 0 && hide[th![i]]) return 0;
    if (!opts.range || !tm) return 1;
    const t = tm[i];
    const [r0, r1] = opts.range;
    if (t < 0) return 0;
    const len = nsw === null ? 0 : w[i] * nsw;
    if (len <= 0) return t >= r0 && t <= r1 ? 1 : 0;
    const covered = Math.min(t + len, r1) - Math.max(t, r0);
    return covered <= 0 ? 0 : covered >= len ? 1 : covered / len;
  };
  if (opts.threadMode === 'merged' || !th) {
    const self = new Float64Array(nS);
    const count = new Float64Array(nS);
    const index = opts.range && tm && !hide ? timeIndex(raw, nsw) : null;
    if (index && opts.range) {
      // A window: differences of running sums per stack (lib/timeindex.ts).
      const sums = windowSums(raw, index, opts.range[0], opts.range[1], nsw, share);
      return { parent: raw.stackParent, frame: new Int32Array(raw.stackFrame.buffer, raw.stackFrame.byteOffset, nS), self: sums.self, count: sums.count, length: nS, nameOrder: raw.stacksInNameOrder };
    }
    if (hide) {
      for (let i = 0; i < st.length; i++) {
        const f = share(i);
        if (f === 0) continue;
        self[st[i]] += f === 1 ? w[i] : w[i] * f;
        count[st[i]] += c ? c[i] : 1;
      }
    } else if (opts.range && tm && nsw === null) {
      const [r0, r1] = opts.range;
      for (let i = 0; i < st.length; i++) {
        const t = tm[i];
        if (t < r0 || t > r1) continue;
        self[st[i]] += w[i];
        count[st[i]] += c ? c[i] : 1;
      }
    } else if (opts.range && tm) {
      for (let i = 0; i < st.length; i++) {
        const f = share(i);
        if (f === 0) continue;
        self[st[i]] += f === 1 ? w[i] : w[i] * f;
        count[st[i]] += c ? c[i] : 1;
      }
    } else if (c) {
      for (let i = 0; i < st.length; i++) {
        self[st[i]] += w[i];
        count[st[i]] += c[i];
      }
    } else {
      for (let i = 0; i < st.length; i++) {
        self[st[i]] += w[i];
        count[st[i]] += 1;
      }
    }
    return { parent: raw.stackParent, frame: new Int32Array(raw.stackFrame.buffer, raw.stackFrame.byteOffset, nS), self, count, length: nS, nameOrder: raw.stacksInNameOrder };
  }
  const b = new TreeBuilder(opts.firstThreadFrame + 1 + opts.rootOf.length, nS + 64);
  // Memo of (root, stack) -> node; recursion replaced by walking up to a known prefix.
  const memo = new Map<number, number>();
  const path: number[] = [];
  for (let i = 0; i < st.length; i++) {
    const f = share(i);
    if (f === 0) continue;
    const t = th[i];
    const r = t >= 0 ? opts.rootOf[t] : -1;
    const rootNode = r >= 0 ? b.intern(-1, opts.firstThreadFrame + r) : -1;
    let s = st[i];
    path.length = 0;
    let at = -1;
    while (s >= 0) {
      const m = memo.get((r + 1) * nS + s);
      if (m !== undefined) {
        at = m;
        break;
      }
      path.push(s);
      s = raw.stackParent[s];
    }
    if (s < 0) at = rootNode;
    for (let k = path.length - 1; k >= 0; k--) {
      at = b.intern(at, raw.stackFrame[path[k]]);
      memo.set((r + 1) * nS + path[k], at);
    }
    b.self[at] += f === 1 ? w[i] : w[i] * f;
    b.count[at] += c ? c[i] : 1;
  }
  return b.finish();
}

/** Samples of a profile in a time window (all of them with null), per thread. */
export interface WindowCounts {
  /** Per thread index. */
  perThread: Float64Array;
  /** Samples without a thread. */
  noThread: number;
  total: number;
}

/**
 * How many samples lie in `range` (ns since the origin; null: every sample), per thread.
 * A sample weighing time (`nsPerWeight`) counts when its span overlaps the window, as the
 * flame graph counts it.
 */
export function samplesIn(raw: RawProfile, range: [number, number] | null, nsPerWeight: number | null = null): WindowCounts {
  const perThread = new Float64Array(raw.threadName.length);
  let noThread = 0;
  let total = 0;
  const { sampleTime: tm, sampleThread: th, sampleCount: c, sampleWeight: w } = raw;
  for (let i = 0; i < w.length; i++) {
    if (range) {
      if (!tm) break;
      const t = tm[i];
      if (t < 0) continue;
      const len = nsPerWeight === null ? 0 : w[i] * nsPerWeight;
      if (len > 0 ? t + len <= range[0] || t >= range[1] : t < range[0] || t > range[1]) continue;
    }
    const n = c ? c[i] : 1;
    total += n;
    const t = th ? th[i] : -1;
    if (t >= 0) perThread[t] += n;
    else noThread += n;
  }
  return { perThread, noThread, total };
}
