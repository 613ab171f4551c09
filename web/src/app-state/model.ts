// Derives what the views draw from the raw profiles and the view state, caching each
// stage by the parts of the state it depends on: changing the search does not rebuild
// the layout, changing the order does not rebuild the tree.
import { FunctionStats, compileSearch, functionStats, matchFrames, matchedWeight } from '../lib/analysis.js';
import { DiffLayout, diffColor, diffLayout, joinFrames, maxDelta, remapFrames } from '../lib/diff.js';
import { Layout, findPath, layoutTree } from '../lib/layout.js';
import { MATCH_COLOR, Palette, frameColors } from '../lib/palette.js';
import { FrameSet, RawProfile, Tree, baseTree, frameSetOf, threadRoots } from '../lib/profile.js';
import { applyTransforms } from '../lib/transforms.js';
import { ViewState } from './state.js';

export interface Meta {
  title: string;
  subtitle: string | null;
  palette: Palette;
  inverted: boolean;
  leftHeavy: boolean;
  mode: 'single' | 'diff';
  labels: [string, string];
  profiles: { unit: string; event: string; compressed: boolean }[];
}

export interface Derived {
  frames: FrameSet;
  layout: Layout;
  diff: DiffLayout | null;
  zoomNode: number;
  color: (v: number) => string;
  match: Uint8Array | null;
  matchedWeight: number;
  searchError: string | null;
  stats: () => FunctionStats;
  statsBefore: () => FunctionStats | null;
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

export class Model {
  private cache = new Map<string, unknown>();

  constructor(readonly raws: RawProfile[], readonly meta: Meta) {}

  get isDiff(): boolean {
    return this.raws.length === 2;
  }

  get unit(): string {
    return this.meta.profiles[this.raws.length - 1]?.unit ?? 'samples';
  }

  /** Upper bound of frame ids any state may name (frames plus thread roots). */
  get maxFrames(): number {
    let n = 0;
    for (const r of this.raws) n += r.frameName.length + r.threadName.length;
    return n;
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

  private framesAndTrees(s: ViewState): { frames: FrameSet; trees: Tree[] } {
    const key = `trees|${s.threadMode}|${s.range ?? ''}|${JSON.stringify(s.transforms)}`;
    return this.memo(key, () => {
      const sides = this.raws.map((raw) => {
        const roots = threadRoots(raw, s.threadMode);
        const frames = frameSetOf(raw, roots.names);
        const tree = baseTree(raw, {
          range: s.range,
          threadMode: s.threadMode,
          firstThreadFrame: raw.frameName.length,
          rootOf: roots.rootOf,
        });
        return { frames, tree };
      });
      if (sides.length === 1) {
        const { frames, tree } = sides[0];
        return { frames, trees: [applyTransforms(tree, s.transforms, frames.names.length)] };
      }
      const j = joinFrames(sides[0].frames, sides[1].frames);
      const n = j.frames.names.length;
      return {
        frames: j.frames,
        trees: [
          applyTransforms(remapFrames(sides[0].tree, j.mapA), s.transforms, n),
          applyTransforms(remapFrames(sides[1].tree, j.mapB), s.transforms, n),
        ],
      };
    });
  }

  derive(s: ViewState): Derived {
    const { frames, trees } = this.framesAndTrees(s);
    const lkey = `layout|${s.threadMode}|${s.range ?? ''}|${JSON.stringify(s.transforms)}|${s.order}|${s.normalise}`;
    const { layout, diff } = this.memo(lkey, () => {
      if (trees.length === 1) return { layout: layoutTree(trees[0], frames, s.order), diff: null };
      const d = diffLayout(trees[0], trees[1], frames, s.order, s.normalise);
      return { layout: d.layout, diff: d };
    });
    const colors = this.memo(`colors|${s.palette}|${s.threadMode}|${frames.names.length}`, () =>
      frameColors(frames, s.palette),
    );
    const search = compileSearch(s.query, s.matchCase);
    const searchError = search instanceof Error ? search.message : null;
    const re = search instanceof RegExp ? search : null;
    const match = re
      ? this.memo(`match|${s.query}|${s.matchCase}|${s.threadMode}|${frames.names.length}`, () => matchFrames(frames, re))
      : null;
    const matched = match ? matchedWeight(layout, match) : 0;
    let color: (v: number) => string;
    if (diff) {
      const md = maxDelta(diff);
      color = (v) => (match && v > 0 && match[layout.frame[v]] ? MATCH_COLOR : v === 0 ? 'rgb(220,220,220)' : diffColor(diff.before[v], diff.after[v], md));
    } else {
      color = (v) => (v === 0 ? 'rgb(220,120,60)' : match && match[layout.frame[v]] ? MATCH_COLOR : colors(layout.frame[v]));
    }
    const nFrames = frames.names.length;
    return {
      frames,
      layout,
      diff,
      zoomNode: findPath(layout, s.zoom),
      color,
      match,
      matchedWeight: matched,
      searchError,
      stats: once(() => functionStats(layout, nFrames, diff ? { self: diff.selfAfter, total: diff.after } : undefined)),
      statsBefore: once(() => (diff ? functionStats(layout, nFrames, { self: diff.selfBefore, total: diff.before }) : null)),
    };
  }

  /** Root label: the profile's event, or "all". */
  rootLabel(): string {
    const ev = this.meta.profiles[this.raws.length - 1]?.event;
    return ev ? `all (${ev})` : 'all';
  }
}
