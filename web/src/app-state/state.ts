// The view state: everything a shared link must reproduce. It lives in the URL hash so a
// view can be bookmarked or sent; the rest of the app derives from it.
import { Order } from '../lib/layout.js';
import { PALETTES, Palette } from '../lib/palette.js';
import { ThreadMode } from '../lib/profile.js';
import { Transform, decodeTransforms, encodeTransforms } from '../lib/transforms.js';

export type ViewName = 'flame' | 'table' | 'sandwich';

export interface ViewState {
  view: ViewName;
  icicle: boolean;
  order: Order;
  palette: Palette;
  query: string;
  matchCase: boolean;
  /** Frame path of the zoomed node (empty: the whole graph). */
  zoom: number[];
  transforms: Transform[];
  threadMode: ThreadMode;
  /** Selected time range, ns since the profile's first sample. */
  range: [number, number] | null;
  /** Function shown in the sandwich view, -1 for none. */
  fn: number;
  normalise: boolean;
  sort: 'self' | 'total' | 'name' | 'delta';
  filter: string;
}

export function defaultState(palette: Palette, icicle: boolean, leftHeavy: boolean): ViewState {
  return {
    view: 'flame', icicle, order: leftHeavy ? 'left-heavy' : 'alphabetical', palette,
    query: '', matchCase: false, zoom: [], transforms: [], threadMode: 'merged', range: null,
    fn: -1, normalise: true, sort: 'total', filter: '',
  };
}

/** Serialises the differences from `defaults` as `a=1&b=2`. */
export function toHash(s: ViewState, defaults: ViewState): string {
  const p = new URLSearchParams();
  if (s.view !== defaults.view) p.set('v', s.view);
  if (s.icicle !== defaults.icicle) p.set('icicle', s.icicle ? '1' : '0');
  if (s.order !== defaults.order) p.set('order', s.order === 'left-heavy' ? 'heavy' : 'alpha');
  if (s.palette !== defaults.palette) p.set('palette', s.palette);
  if (s.query) p.set('q', s.query);
  if (s.matchCase) p.set('case', '1');
  if (s.zoom.length) p.set('z', s.zoom.join('.'));
  if (s.transforms.length) p.set('tf', encodeTransforms(s.transforms));
  if (s.threadMode !== 'merged') p.set('threads', s.threadMode);
  if (s.range) p.set('t', `${Math.round(s.range[0])}-${Math.round(s.range[1])}`);
  if (s.fn >= 0) p.set('fn', String(s.fn));
  if (s.normalise !== defaults.normalise) p.set('norm', s.normalise ? '1' : '0');
  if (s.sort !== defaults.sort) p.set('sort', s.sort);
  if (s.filter) p.set('filter', s.filter);
  return p.toString();
}

/** Reads a hash; anything malformed falls back to the default, never throws. */
export function fromHash(hash: string, defaults: ViewState, nFrames: number): ViewState {
  const p = new URLSearchParams(hash.replace(/^#/, ''));
  const s: ViewState = { ...defaults, zoom: [], transforms: [] };
  const v = p.get('v');
  if (v === 'flame' || v === 'table' || v === 'sandwich') s.view = v;
  const icicle = p.get('icicle');
  if (icicle !== null) s.icicle = icicle === '1';
  const order = p.get('order');
  if (order === 'heavy') s.order = 'left-heavy';
  else if (order === 'alpha') s.order = 'alphabetical';
  const pal = p.get('palette');
  if (pal && (PALETTES as readonly string[]).includes(pal)) s.palette = pal as Palette;
  s.query = p.get('q') ?? '';
  s.matchCase = p.get('case') === '1';
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
  const t = p.get('t');
  const m = t ? /^(\d+)-(\d+)$/.exec(t) : null;
  if (m && Number(m[1]) <= Number(m[2])) s.range = [Number(m[1]), Number(m[2])];
  const fn = Number(p.get('fn') ?? -1);
  if (Number.isInteger(fn) && fn >= 0 && fn < nFrames) s.fn = fn;
  const norm = p.get('norm');
  if (norm !== null) s.normalise = norm === '1';
  const sort = p.get('sort');
  if (sort === 'self' || sort === 'total' || sort === 'name' || sort === 'delta') s.sort = sort;
  s.filter = p.get('filter') ?? '';
  return s;
}
