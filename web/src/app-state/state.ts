// The view state: everything a shared link must reproduce. It lives in the URL hash so a
// view can be bookmarked or sent; the rest of the app derives from it. The state is read
// from and written to URLSearchParams (DOM-free); app-state/url.ts maps them onto the
// page's hash, with a prefix per viewer when a page holds several.
import { Order } from '../lib/layout.js';
import { PALETTES, Palette } from '../lib/palette.js';
import { ThreadMode } from '../lib/profile.js';
import { Transform, decodeTransforms, encodeTransforms } from '../lib/transforms.js';

export type ViewName = 'flame' | 'chart' | 'tree' | 'table' | 'sandwich';
export const VIEWS: readonly ViewName[] = ['flame', 'chart', 'tree', 'table', 'sandwich'];

/** The least height an embedded viewer can be given (CSS px). */
export const MIN_HEIGHT = 240;

export type SortKey = 'self' | 'total' | 'name' | 'delta' | 'dself';

export interface ViewState {
  view: ViewName;
  icicle: boolean;
  order: Order;
  palette: Palette;
  /** Frames coloured by the palette, or by category (when the page supplies categories). */
  colors: 'palette' | 'category';
  /** The category highlighted in the legend (its index), -1 for none. */
  category: number;
  query: string;
  /** Case always matters (else only when the pattern has a capital letter). */
  matchCase: boolean;
  /** The search also matches process and thread names (else functions only). */
  searchNames: boolean;
  /** Frame path of the zoomed node (empty: the whole graph). */
  zoom: number[];
  transforms: Transform[];
  threadMode: ThreadMode;
  /**
   * Threads (indices in the profile) left out of every view, ascending: those of the
   * tracks not selected. The URL holds the selected ones (`sel`), the shorter list for a
   * profile of many threads where one track is picked.
   */
  hidden: number[];
  /** The call tree is inverted (bottom-up: functions that ran, then their callers). */
  invert: boolean;
  /**
   * Selected time window, ns since the profile's first sample: the flame graph, table and
   * sandwich show only its samples; the flame chart shows this window.
   */
  range: [number, number] | null;
  /** Function shown in the sandwich view, -1 for none. */
  fn: number;
  normalise: boolean;
  sort: SortKey;
  filter: string;
  /** The tracks are shown (the toolbar's Tracks). */
  tracks: boolean;
  /** The category legend is open (closed: one line naming how many categories). */
  legend: boolean;
  /** An embedded viewer's height in CSS px (its resize handle); 0: the page's default. */
  height: number;
  /** The viewer fills the browser's window (full screen). */
  full: boolean;
}

export function defaultState(palette: Palette, icicle: boolean, leftHeavy: boolean, view: ViewName = 'flame', colors: ViewState['colors'] = 'palette'): ViewState {
  return {
    view, icicle, order: leftHeavy ? 'left-heavy' : 'alphabetical', palette, colors, category: -1,
    query: '', matchCase: false, searchNames: false, zoom: [], transforms: [], threadMode: 'merged', hidden: [], invert: false, range: null,
    fn: -1, normalise: true, sort: 'total', filter: '', tracks: true, legend: true, height: 0, full: false,
  };
}

/**
 * The differences from `defaults` as parameters. `shift` is added to the time window:
 * `t` is written on the page's clock (ns since the page's origin), which a page holding
 * several profiles shares between them.
 */
export function toParams(s: ViewState, defaults: ViewState, shift = 0, nThreads = 0): URLSearchParams {
  const p = new URLSearchParams();
  if (s.view !== defaults.view) p.set('v', s.view);
  if (s.icicle !== defaults.icicle) p.set('icicle', s.icicle ? '1' : '0');
  if (s.order !== defaults.order) p.set('order', s.order === 'left-heavy' ? 'heavy' : 'alpha');
  if (s.palette !== defaults.palette) p.set('palette', s.palette);
  if (s.colors !== defaults.colors) p.set('colors', s.colors);
  if (s.category >= 0) p.set('cat', String(s.category));
  if (s.query) p.set('q', s.query);
  if (s.matchCase) p.set('case', '1');
  if (s.searchNames) p.set('qn', '1');
  if (s.zoom.length) p.set('z', s.zoom.join('.'));
  if (s.transforms.length) p.set('tf', encodeTransforms(s.transforms));
  if (s.threadMode !== 'merged') p.set('threads', s.threadMode);
  if (s.hidden.length) {
    const hidden = new Set(s.hidden);
    const sel: number[] = [];
    for (let t = 0; t < nThreads; t++) if (!hidden.has(t)) sel.push(t);
    // Nothing selected cannot be chosen from the tracks; kept as the hidden list.
    if (sel.length) p.set('sel', sel.join('.'));
    else p.set('hide', s.hidden.join('.'));
  }
  if (s.invert) p.set('inv', '1');
  if (s.range) p.set('t', `${Math.round(s.range[0] + shift)}-${Math.round(s.range[1] + shift)}`);
  if (s.fn >= 0) p.set('fn', String(s.fn));
  if (s.normalise !== defaults.normalise) p.set('norm', s.normalise ? '1' : '0');
  if (s.sort !== defaults.sort) p.set('sort', s.sort);
  if (s.filter) p.set('filter', s.filter);
  if (!s.tracks) p.set('tracks', '0');
  if (!s.legend) p.set('legend', '0');
  if (s.height > 0) p.set('h', String(Math.round(s.height)));
  if (s.full) p.set('full', '1');
  return p;
}

/** Reads parameters; anything malformed falls back to the default, never throws. */
export function fromParams(p: URLSearchParams, defaults: ViewState, nFrames: number, shift = 0, nThreads = 0): ViewState {
  const s: ViewState = { ...defaults, zoom: [], transforms: [], hidden: [] };
  const v = p.get('v');
  if (v && (VIEWS as readonly string[]).includes(v)) s.view = v as ViewName;
  const icicle = p.get('icicle');
  if (icicle !== null) s.icicle = icicle === '1';
  const order = p.get('order');
  if (order === 'heavy') s.order = 'left-heavy';
  else if (order === 'alpha') s.order = 'alphabetical';
  const pal = p.get('palette');
  if (pal && (PALETTES as readonly string[]).includes(pal)) s.palette = pal as Palette;
  const colors = p.get('colors');
  if (colors === 'palette' || colors === 'category') s.colors = colors;
  const cat = Number(p.get('cat') ?? -1);
  if (Number.isInteger(cat) && cat >= 0 && cat < 4096) s.category = cat;
  s.query = p.get('q') ?? '';
  s.matchCase = p.get('case') === '1';
  s.searchNames = p.get('qn') === '1';
  const frameIds = (x: string): number[] | null => {
    const ids = x.split('.').map(Number);
    return ids.every((f) => Number.isInteger(f) && f >= 0 && f < nFrames) ? ids : null;
  };
  const z = p.get('z');
  if (z) s.zoom = frameIds(z) ?? [];
  const tf = p.get('tf');
  if (tf) s.transforms = decodeTransforms(tf, nFrames);
  const th = p.get('threads');
  if (th === 'threads' || th === 'groups') s.threadMode = th;
  const ids = (x: string): Set<number> => new Set(x.split('.').map(Number).filter((t) => Number.isInteger(t) && t >= 0 && t < nThreads));
  const sel = p.get('sel');
  const hide = p.get('hide');
  if (sel) {
    const keep = ids(sel);
    if (keep.size) for (let t = 0; t < nThreads; t++) if (!keep.has(t)) s.hidden.push(t);
  } else if (hide) s.hidden = [...ids(hide)].sort((a, b) => a - b);
  s.invert = p.get('inv') === '1';
  const t = p.get('t');
  const m = t ? /^(-?\d+)-(-?\d+)$/.exec(t) : null;
  if (m && Number(m[1]) <= Number(m[2])) s.range = [Number(m[1]) - shift, Number(m[2]) - shift];
  const fn = Number(p.get('fn') ?? -1);
  if (Number.isInteger(fn) && fn >= 0 && fn < nFrames) s.fn = fn;
  const norm = p.get('norm');
  if (norm !== null) s.normalise = norm === '1';
  const sort = p.get('sort');
  if (sort === 'self' || sort === 'total' || sort === 'name' || sort === 'delta' || sort === 'dself') s.sort = sort;
  s.filter = p.get('filter') ?? '';
  s.tracks = p.get('tracks') !== '0';
  s.legend = p.get('legend') !== '0';
  const h = Number(p.get('h') ?? 0);
  if (Number.isInteger(h) && h >= MIN_HEIGHT && h <= 20000) s.height = h;
  s.full = p.get('full') === '1';
  return s;
}

/** `a=1&b=2` form of toParams (one viewer on the page). */
export function toHash(s: ViewState, defaults: ViewState): string {
  return toParams(s, defaults).toString();
}

/** Reads a `#a=1&b=2` hash (one viewer on the page). */
export function fromHash(hash: string, defaults: ViewState, nFrames: number): ViewState {
  return fromParams(new URLSearchParams(hash.replace(/^#/, '')), defaults, nFrames);
}
