// Derives what the views draw from the raw profiles and the view state, caching each
// stage by the parts of the state it depends on: changing the search does not rebuild
// the layout, changing the order does not rebuild the tree. DOM-free: a page that holds
// several viewers (the run report) or a test can ask it for the tree, table or chart of
// any time window without drawing anything.
import { FunctionStats, calleesTree, callersTree, compileSearch, functionStats, matchFrames, matchNodes, matchedWeight } from '../lib/analysis.js';
import { DiffLayout, UNMARKED_COLOR, diffColor, diffLayout, joinFrames, markedFrames, maxDelta, remapFrames } from '../lib/diff.js';
import { ChartOptions, FlameChart, buildFlameChart } from '../lib/flamechart.js';
import { applyStepLocal, prepareIncremental } from '../lib/incremental.js';
import { Layout, findPath, layoutTree } from '../lib/layout.js';
import { CATEGORY_MUTED, Palette, categoryFrameColor, frameColors } from '../lib/palette.js';
import { FrameCategories, categoryShares, frameCategoryOf, isFrameCategories, nodeCategories, ownCategories, stackCategories } from '../lib/categories.js';
import { CallTree } from '../lib/calltree.js';
import { FrameSet, RawProfile, Tree, WindowCounts, baseTree, firstThreadFrame, frameSetOf, hiddenMask, samplesIn, threadRoots } from '../lib/profile.js';
import { Transform, applyStep, applyTransformsMapped, encodeTransforms } from '../lib/transforms.js';
import { Unit, UnitMeta } from '../lib/units.js';
import { ViewName, ViewState } from './state.js';

export interface ProfileMeta extends UnitMeta {
  compressed: boolean;
  /** Where the profile came from (a file name), if known. */
  source?: string | null;
}

export interface Meta {
  title: string;
  subtitle: string | null;
  palette: Palette;
  inverted: boolean;
  leftHeavy: boolean;
  mode: 'single' | 'diff';
  labels: [string, string];
  /** The view to open on (`--flamechart`: the time-ordered chart). */
  view?: ViewName;
  profiles: ProfileMeta[];
  /** Prefix of this viewer's keys in the URL when a page holds several viewers. */
  key?: string;
  /** Ids of the elements holding each profile's data; default `kiln-data-N`. */
  data?: string[];
  /** The page's time origin (ns on the profiles' clock) for the shared window `t`. */
  origin?: number;
  /**
   * A diff's functions whose change is beyond noise (`kiln compare` with repeats): only
   * their frames are coloured, the others drawn as unchanged. Absent: every frame.
   */
  marked?: string[] | null;
  /** What kind of work each frame is (the run report's categories): "by category" colours. */
  categories?: unknown;
  /** The machine's CPU count (a run's), when known: the tracks' CPU scale stops there. */
  cpus?: number | null;
  /**
   * The samples' times are instants whatever their weights: a window holds the samples
   * stamped in it, wholly (as kiln cuts a profile to a window), not the part of each span
   * inside it.
   */
  instants?: boolean;
}

/** A view's categories: per node, and each category's colour and share of the view. */
export interface CategoryView {
  names: string[];
  colors: string[];
  /** Percent of the view's weight, per category. */
  shares: number[];
  /** Category of each node of the layout. */
  of: Uint16Array;
}

/** What a view of the state shows. */
export interface Derived {
  frames: FrameSet;
  layout: Layout;
  diff: DiffLayout | null;
  zoomNode: number;
  /** Base colour of a node (palette or diff colours), without search. */
  color: (v: number) => string;
  /** Palette colour of a frame. */
  frameColor: (f: number) => string;
  match: Uint8Array | null;
  matchedWeight: number;
  searchError: string | null;
  /** Matching nodes in drawing order (for stepping through matches). */
  matches: () => Uint32Array;
  stats: () => FunctionStats;
  statsBefore: () => FunctionStats | null;
  /** The view by category, when coloured by the page's categories (else null). */
  categories: CategoryView | null;
}

/** Callers and callees of one function, laid out; diff weights when comparing. */
export interface Sandwich {
  f: number;
  callers: Layout;
  callees: Layout;
  /** Per side in a diff: weights of each node before and after. */
  callersDiff: DiffLayout | null;
  calleesDiff: DiffLayout | null;
}

/** Totals of one profile, for the header. */
export interface Totals {
  weight: number;
  samples: number;
  /** Time covered by timestamped samples, ns; null without timestamps. */
  durationNs: number | null;
}

function once<T>(f: () => T): () => T {
  let done = false;
  let v: T;
  return () => {
    if (!done) {
      v = f();
      done = true;
    }
    return v;
  };
}

export const ROOT_COLOR = 'rgb(220,120,60)';

/** The largest change of each diff layout, computed once. */
const maxDeltas = new WeakMap<DiffLayout, number>();
export const DIFF_ROOT_COLOR = 'rgb(220,220,220)';

export class Model {
  private cache = new Map<string, unknown>();
  /** The base tree of each profile's whole time (no window), for the last thread mode. */
  private readonly whole = new Map<string, Tree>();
  /** What each profile's weights are. */
  readonly units: Unit[];

  /** The page's categories of frames, when it supplies well-formed ones (not in a diff). */
  readonly categories: FrameCategories | null;

  constructor(readonly raws: RawProfile[], readonly meta: Meta) {
    this.units = raws.map((_, i) => Unit.of(meta.profiles[i] ?? {}));
    this.categories = raws.length === 1 && isFrameCategories(meta.categories) ? meta.categories : null;
  }

  get isDiff(): boolean {
    return this.raws.length === 2;
  }

  /** The profile drawn (after, in a diff). */
  get raw(): RawProfile {
    return this.raws[this.raws.length - 1];
  }

  get unit(): Unit {
    return this.units[this.units.length - 1];
  }

  /** Whether the time-ordered flame chart can be drawn (one profile with timestamps). */
  get hasChart(): boolean {
    return !this.isDiff && this.raw.sampleTime !== null;
  }

  /** Upper bound of frame ids any state may name (frames plus thread roots). */
  get maxFrames(): number {
    let n = 0;
    // Each frame may name a library: at most as many library frames as frames.
    for (const r of this.raws) n += 2 * r.frameName.length + r.threadName.length;
    return n;
  }

  /** ns per unit of weight when weights are time (samples then cover [t, t + w]). */
  get nsPerWeight(): number | null {
    return this.unit.kind === 'time' ? this.unit.scale : null;
  }

  /**
   * Trees after each prefix of the transform stack, per base tree: a transform is one
   * step from the tree before it, and undo (or removing the last transforms) is a look-up.
   */
  private readonly stepped = new Map<string, { base: string; trees: Map<string, Tree> }>();
  /** The last two layouts, so that undo does not lay out again. */
  private readonly layouts = new Map<string, { layout: Layout; diff: DiffLayout | null }>();

  /** The base tree `key` (of one side of a diff) after `trs`, from the longest prefix already computed. */
  private transformed(side: string, key: string, base: Tree, trs: Transform[], frames: FrameSet): Tree {
    let c = this.stepped.get(side);
    if (!c || c.base !== key) this.stepped.set(side, (c = { base: key, trees: new Map() }));
    if (!trs.length) return base;
    const cache = c.trees;
    const keys = trs.map((_, i) => encodeTransforms(trs.slice(0, i + 1)));
    // Keep the prefixes of this stack and the stacks that extend it (undo, then redo).
    for (const k of [...cache.keys()]) if (!keys.includes(k) && !k.startsWith(keys[keys.length - 1] + '~')) cache.delete(k);
    let k = trs.length;
    while (k > 0 && !cache.has(keys[k - 1])) k--;
    let t = k > 0 ? cache.get(keys[k - 1])! : base;
    for (; k < trs.length; k++) {
      t = applyStepLocal(t, trs[k], frames.names.length, frames.library, frames.order) ?? applyStep(t, trs[k], frames.names.length, frames.library, frames.order).tree;
      cache.set(keys[k], t);
    }
    return t;
  }

  /**
   * Forgets the oldest kept layout and what was derived from it that holds it (the call
   * tree), so that nothing reads it again; it is returned when its arrays may be reused
   * (not a diff's, whose arrays its DiffLayout shares).
   */
  private dropOldestLayout(): Layout | undefined {
    const key = this.layouts.keys().next().value!;
    const old = this.layouts.get(key)!;
    this.layouts.delete(key);
    for (const [k, v] of [...this.cache]) if ((v as { layout?: unknown } | null)?.layout === old.layout) this.cache.delete(k);
    return old.diff ? undefined : old.layout;
  }

  private memo<T>(key: string, f: () => T): T {
    if (this.cache.has(key)) return this.cache.get(key) as T;
    // Keep one entry per stage: the previous state's results are dropped, not hoarded.
    const stage = key.slice(0, key.indexOf('|'));
    for (const k of [...this.cache.keys()]) if (k.startsWith(stage + '|')) this.cache.delete(k);
    const v = f();
    this.cache.set(key, v);
    return v;
  }

  /** Totals of profile i (sum of weights and samples, span of timestamps). */
  totals(i = this.raws.length - 1): Totals {
    return this.memo(`totals${i}|`, () => {
      const r = this.raws[i];
      let weight = 0;
      let samples = 0;
      for (let k = 0; k < r.sampleWeight.length; k++) {
        weight += r.sampleWeight[k];
        samples += r.sampleCount ? r.sampleCount[k] : 1;
      }
      let durationNs: number | null = null;
      if (r.sampleTime) {
        let lo = Infinity;
        let hi = -Infinity;
        const nsw = this.units[i].kind === 'time' ? this.units[i].scale : 0;
        for (let k = 0; k < r.sampleTime.length; k++) {
          const t = r.sampleTime[k];
          if (t < 0) continue;
          lo = Math.min(lo, t);
          hi = Math.max(hi, t + r.sampleWeight[k] * nsw);
        }
        if (lo <= hi) durationNs = hi - lo;
      }
      return { weight, samples, durationNs };
    });
  }

  private framesAndTrees(s: ViewState): { frames: FrameSet; trees: Tree[] } {
    const key = `trees|${this.treeKey(s)}`;
    return this.memo(key, () => {
      const sides = this.raws.map((raw, i) => {
        const roots = threadRoots(raw, s.threadMode);
        const frames = this.isDiff ? frameSetOf(raw, roots.names) : this.frames(s);
        const unit = this.units[i];
        // The window on each side's own time origin (the state's is the drawn profile's).
        const range: [number, number] | null = s.range && [s.range[0] + this.raw.timeOrigin - raw.timeOrigin, s.range[1] + this.raw.timeOrigin - raw.timeOrigin];
        const build = (): Tree =>
          baseTree(raw, {
            range,
            nsPerWeight: unit.kind === 'time' && !this.meta.instants ? unit.scale : null,
            threadMode: s.threadMode,
            firstThreadFrame: firstThreadFrame(frames, roots.names.length),
            rootOf: roots.rootOf,
            hidden: this.isDiff ? null : hiddenMask(raw, s.hidden),
          });
        // The whole profile's tree is kept across windows: clearing a window is then
        // free, not a pass over every sample.
        let tree: Tree;
        if (s.range === null) {
          const k = `${i}|${s.threadMode}|${s.hidden.join('.')}`;
          tree = this.whole.get(k) ?? build();
          for (const old of [...this.whole.keys()]) if (old.startsWith(`${i}|`)) this.whole.delete(old);
          this.whole.set(k, tree);
        } else tree = build();
        return { frames, tree };
      });
      if (sides.length === 1) {
        const { frames, tree } = sides[0];
        const base = this.treeKey({ ...s, transforms: [] });
        return { frames, trees: [this.transformed('', base, tree, s.transforms, frames)] };
      }
      const j = joinFrames(sides[0].frames, sides[1].frames);
      return {
        frames: j.frames,
        trees: [
          this.transformed('a', this.treeKey({ ...s, transforms: [] }), remapFrames(sides[0].tree, j.mapA), s.transforms, j.frames),
          this.transformed('b', this.treeKey({ ...s, transforms: [] }), remapFrames(sides[1].tree, j.mapB), s.transforms, j.frames),
        ],
      };
    });
  }

  /** The indexes a first transform of state `s`'s trees would build, built now (at idle). */
  prepareTransforms(s: ViewState): void {
    for (const t of this.framesAndTrees(s).trees) prepareIncremental(t);
  }

  /** What the trees of a state depend on. */
  private treeKey(s: ViewState): string {
    return `${s.threadMode}|${s.range ?? ''}|${s.hidden.join('.')}|${JSON.stringify(s.transforms)}`;
  }

  /** The frames a state names (cheap: no tree is built). */
  frames(s: ViewState): FrameSet {
    if (this.isDiff) return this.framesAndTrees(s).frames;
    return this.memo(`frames|${s.threadMode}`, () => frameSetOf(this.raw, threadRoots(this.raw, s.threadMode).names));
  }

  /** Colour of each frame in a palette (cached per palette and frame set). */
  private paletteColors(s: ViewState, frames: FrameSet): (f: number) => string {
    return this.memo(`colors|${s.palette}|${s.threadMode}|${frames.names.length}`, () => frameColors(frames, s.palette));
  }

  /** Which frames the search matches, or why it cannot. */
  search(s: ViewState, frames: FrameSet): { match: Uint8Array | null; error: string | null } {
    const search = compileSearch(s.query, s.matchCase);
    if (search instanceof Error) return { match: null, error: search.message };
    if (!search) return { match: null, error: null };
    return {
      match: this.memo(`match|${s.query}|${s.matchCase}|${s.searchNames}|${s.threadMode}|${frames.names.length}`, () => matchFrames(frames, search, s.searchNames)),
      error: null,
    };
  }

  /** Everything the flame graph, the table and the sandwich draw for a state. */
  derive(s: ViewState): Derived {
    const { frames, trees } = this.framesAndTrees(s);
    const lkey = `layout|${this.treeKey(s)}|${s.order}|${s.normalise}`;
    let laid = this.layouts.get(lkey);
    if (!laid) {
      // Two kept: the state's and the one before it (undo is a look-up; a layout of a
      // million nodes is tens of MB). The one dropped lends its arrays to the new one.
      const spare = this.layouts.size >= 2 ? this.dropOldestLayout() : undefined;
      if (trees.length === 1) laid = { layout: layoutTree(trees[0], frames, s.order, undefined, spare), diff: null };
      else {
        const d = diffLayout(trees[0], trees[1], frames, s.order, s.normalise);
        laid = { layout: d.layout, diff: d };
      }
    } else this.layouts.delete(lkey);
    this.layouts.set(lkey, laid);
    const { layout, diff } = laid;
    const colors = this.paletteColors(s, frames);
    const { match, error } = this.search(s, frames);
    const matched = match ? matchedWeight(layout, match) : 0;
    let color: (v: number) => string;
    if (diff) {
      const marked = this.meta.marked ? markedFrames(frames.names, this.meta.marked) : null;
      let md = maxDeltas.get(diff);
      if (md === undefined) maxDeltas.set(diff, (md = maxDelta(diff, marked ? (v) => marked[layout.frame[v]] : undefined)));
      const mdv = md;
      color = (v) => (v === 0 ? DIFF_ROOT_COLOR : marked && !marked[layout.frame[v]] ? UNMARKED_COLOR : diffColorOf(diff, v, mdv));
    } else {
      color = (v) => (v === 0 ? ROOT_COLOR : colors(layout.frame[v]));
    }
    const categories = this.categories && s.colors === 'category' ? this.memo(`cats|${lkey}`, () => this.categoryView(layout, frames, s.threadMode)) : null;
    if (categories) {
      const { of, colors: cc } = categories;
      const hi = s.category;
      color = (v) => (v === 0 ? ROOT_COLOR : hi >= 0 && of[v] !== hi ? CATEGORY_MUTED : cc[of[v]]);
    }
    const nFrames = frames.names.length;
    return {
      frames,
      layout,
      diff,
      zoomNode: findPath(layout, s.zoom),
      color,
      frameColor: colors,
      match,
      matchedWeight: matched,
      searchError: error,
      matches: once(() => (match ? matchNodes(layout, match) : new Uint32Array(0))),
      stats: once(() => functionStats(layout, nFrames, diff ? { self: diff.selfAfter, total: diff.after } : undefined)),
      statsBefore: once(() => (diff ? functionStats(layout, nFrames, { self: diff.selfBefore, total: diff.before }) : null)),
      categories,
    };
  }

  /** Each node's category and each category's share of a layout's weight. */
  private categoryView(layout: Layout, frames: FrameSet, mode: string): CategoryView {
    const c = this.categories!;
    const of = nodeCategories(layout, frames, c, this.ownCategories(frames, mode));
    return { names: c.names, colors: this.categoryColors(), shares: categoryShares(layout, of, c.names.length), of };
  }

  /** Each frame's own category in a frame set (cached per thread mode). */
  private ownCategories(frames: FrameSet, mode: string): Int16Array {
    return this.memo(`frame-cats|${mode}|${frames.names.length}`, () => frameCategoryOf(frames, this.categories!));
  }

  private categoryColors(): string[] {
    return this.categories!.names.map((n, i) => categoryFrameColor(n, i));
  }

  /** A category's colour, muted when another category is highlighted. */
  private categoryPaint(s: ViewState): (k: number) => string {
    const cc = this.categoryColors();
    const hi = s.category;
    return (k) => (hi >= 0 && k !== hi ? CATEGORY_MUTED : cc[k]);
  }

  /**
   * The sandwich's colours by category (null: palette colours). The callees hang under
   * the function as in any flame graph and take their categories along their stacks; the
   * callers run the other way and take each frame's own.
   */
  sandwichColors(s: ViewState, sw: Sandwich): { callers: (v: number) => string; callees: (v: number) => string } | null {
    const c = this.categories;
    if (!c || s.colors !== 'category' || sw.callersDiff) return null;
    const frames = this.frames(s);
    const own = this.ownCategories(frames, s.threadMode);
    const paint = this.categoryPaint(s);
    const callees = this.memo(`sw-cats|${sw.f}|${this.treeKey(s)}|${s.order}`, () => nodeCategories(sw.callees, frames, c, own));
    const byFrame = ownCategories(frames, c, own);
    return {
      callers: (v) => paint(byFrame[sw.callers.frame[v]]),
      callees: (v) => paint(callees[v]),
    };
  }

  /**
   * Callers and callees of function f in a state's tree: each outermost call of f counted
   * once, f itself the root of both (no synthetic "all" above it).
   */
  sandwich(s: ViewState, f: number): Sandwich {
    const d = this.derive(s);
    const lkey = `sandwich|${f}|${this.treeKey(s)}|${s.order}|${s.normalise}`;
    return this.memo(lkey, () => {
      const n = d.frames.names.length;
      const l = d.layout;
      if (!d.diff) {
        return {
          f,
          callers: layoutTree(callersTree(l, f, n), d.frames, s.order),
          callees: layoutTree(calleesTree(l, f, n), d.frames, s.order),
          callersDiff: null,
          calleesDiff: null,
        };
      }
      // Before's and after's weights through the same merged tree, then compared as the
      // main view compares them (before is already normalised).
      const dd = d.diff;
      const zero = new Float64Array(l.n);
      const callersDiff = diffLayout(callersTree(l, f, n, dd.before, zero), callersTree(l, f, n, dd.after, l.count), d.frames, s.order, false);
      const calleesDiff = diffLayout(calleesTree(l, f, n, dd.selfBefore, zero), calleesTree(l, f, n, dd.selfAfter, l.selfCount), d.frames, s.order, false);
      return { f, callers: callersDiff.layout, callees: calleesDiff.layout, callersDiff, calleesDiff };
    });
  }

  /**
   * The time-ordered flame chart: one lane per thread, the state's transforms applied to
   * every sample's stack. Independent of the time window (the chart shows the window).
   */
  chart(s: ViewState): FlameChart {
    const raw = this.raw;
    // Transforms naming thread roots of another thread mode cannot apply to lanes
    // (libraries' frames come before the thread roots, the same in every mode).
    const merged = this.frames({ ...s, threadMode: 'merged' });
    const nF = merged.names.length;
    const trs = s.transforms.filter((t) => ('path' in t ? t.path.every((f) => f < nF) : t.f < nF));
    return this.memo(`chart|${JSON.stringify(trs)}`, () => {
      const base: Tree = {
        parent: raw.stackParent,
        frame: raw.stackFrame as unknown as Int32Array,
        self: new Float64Array(raw.stackParent.length),
        count: new Float64Array(raw.stackParent.length),
        length: raw.stackParent.length,
      };
      const { tree, map } = applyTransformsMapped(base, trs, nF, merged.library);
      const label = (t: number): string => {
        if (t < 0) return 'samples without a thread';
        const name = raw.strings[raw.threadName[t]] ?? '';
        return raw.threadTid[t] >= 0 ? `${name} [${raw.threadTid[t]}]` : name;
      };
      const opts: ChartOptions = { nsPerWeight: this.nsPerWeight, periodNs: this.unit.periodNs };
      return buildFlameChart(raw, map, tree.parent, tree.frame, label, opts);
    });
  }

  /** Colour of a frame in the flame chart (the palette of the merged frame set). */
  chartColors(s: ViewState): (f: number) => string {
    const frames = this.frames({ ...s, threadMode: 'merged' });
    return this.paletteColors({ ...s, threadMode: 'merged' }, frames);
  }

  /**
   * Colour of a node of the flame chart's tree: its category's along its stack when
   * coloured by category (as the flame graph's), else its frame's palette colour.
   */
  chartNodeColors(s: ViewState, chart: FlameChart): (n: number) => string {
    const c = this.categories;
    const fr = chart.frame;
    const byFrame = this.chartColors(s);
    if (!c || s.colors !== 'category') return (n) => byFrame(fr[n]);
    const frames = this.frames({ ...s, threadMode: 'merged' });
    const own = this.ownCategories(frames, 'merged');
    const { perNode, byFrame: own1 } = this.memo(`chart-cats|${chart.parent.length}|${JSON.stringify(s.transforms)}`, () => ({
      perNode: stackCategories(chart.parent, fr, frames, c, own),
      byFrame: ownCategories(frames, c, own),
    }));
    const paint = this.categoryPaint(s);
    return perNode ? (n) => paint(perNode[n]) : (n) => paint(own1[fr[n]]);
  }

  /** Samples of the drawn profile in a window (null: all), per thread (cached). */
  samplesIn(range: [number, number] | null): WindowCounts {
    return this.memo(`counts|${range ?? ''}`, () => samplesIn(this.raw, range, this.meta.instants ? null : this.nsPerWeight));
  }

  /** The call tree of a state (its derived layout, inverted or not, its search). */
  callTree(s: ViewState, d: Derived = this.derive(s)): CallTree {
    return this.memo(`calltree|${this.treeKey(s)}|${s.order}|${s.normalise}|${s.invert}|${s.query}|${s.matchCase}|${s.searchNames}`, () => new CallTree(d.layout, s.invert, d.frames.order, d.match));
  }

  /** Root label: the profile's event, or "all". */
  rootLabel(): string {
    const ev = this.unit.event;
    return ev ? `all (${ev})` : 'all';
  }
}


/** A node's diff colour: red grew, blue shrank, distinct colours for new and gone. */
export function diffColorOf(d: DiffLayout, v: number, md: number): string {
  return diffColor(d.before[v], d.after[v], md);
}
