// flamegraph.pl's palettes. A hash of the name picks the shade, so a function keeps its
// colour across graphs and redraws; colours are computed once per frame and cached.
import { FrameSet, KIND_INLINE, KIND_JIT, KIND_KERNEL } from './profile.js';

export const PALETTES = [
  'hot', 'mem', 'io', 'wakeup', 'chain', 'java', 'js', 'perl',
  'red', 'green', 'blue', 'aqua', 'yellow', 'purple', 'orange',
] as const;
export type Palette = (typeof PALETTES)[number];

/** Three stable values in [0, 1) from a name (FNV-1a, split into three byte lanes). */
export function nameHash(name: string): [number, number, number] {
  // Module prefixes (`lib.so\`func`) do not change a function's colour.
  const tick = name.indexOf('`');
  if (tick >= 0) name = name.slice(tick + 1);
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  // Eight shades per channel: indistinguishable from a continuum in a flame graph, and it
  // keeps the number of distinct fill styles (each one a CSS parse in the canvas) small.
  return [(h & 7) / 8, ((h >>> 8) & 7) / 8, ((h >>> 16) & 7) / 8];
}

const rgb = (r: number, g: number, b: number): string => `rgb(${r | 0},${g | 0},${b | 0})`;

type Base = 'red' | 'green' | 'blue' | 'aqua' | 'yellow' | 'purple' | 'orange';

function base(b: Base, v1: number): string {
  switch (b) {
    case 'red':
      return rgb(200 + 55 * v1, 50 + 80 * v1, 50 + 80 * v1);
    case 'green':
      return rgb(50 + 60 * v1, 200 + 55 * v1, 50 + 60 * v1);
    case 'blue':
      return rgb(80 + 60 * v1, 80 + 60 * v1, 205 + 50 * v1);
    case 'aqua':
      return rgb(50 + 60 * v1, 165 + 55 * v1, 165 + 55 * v1);
    case 'yellow':
      return rgb(175 + 55 * v1, 175 + 55 * v1, 50 + 20 * v1);
    case 'purple':
      return rgb(190 + 65 * v1, 80 + 60 * v1, 190 + 65 * v1);
    case 'orange':
      return rgb(190 + 65 * v1, 90 + 65 * v1, 0);
  }
}

/** Which base colour a language palette gives a frame. */
function languageBase(p: Palette, name: string, kind: number): Base {
  if (name.endsWith('_[k]') || kind === KIND_KERNEL) return 'orange';
  if (name.endsWith('_[i]') || kind === KIND_INLINE) return 'aqua';
  if (name.endsWith('_[j]') || kind === KIND_JIT) return 'green';
  if (p === 'java') return name.includes('::') ? 'yellow' : name.includes('/') || name.includes('.') ? 'green' : 'red';
  if (p === 'js') return name.includes('::') ? 'yellow' : name.includes('/') || name.includes('.js') ? 'green' : 'red';
  /* perl */ return name.includes('::') ? 'yellow' : name.includes('Perl') || name.includes('.pl') ? 'green' : 'red';
}

export function colorOf(p: Palette, name: string, kind: number): string {
  const [v1, v2, v3] = nameHash(name);
  switch (p) {
    case 'hot':
      return rgb(205 + 50 * v3, 230 * v1, 55 * v2);
    case 'mem':
      return rgb(0, 190 + 50 * v2, 210 * v1);
    case 'io':
      return rgb(80 + 60 * v1, 80 + 60 * v1, 190 + 55 * v2);
    case 'wakeup':
      return base('aqua', v1);
    case 'chain':
      return name.endsWith('_[w]') ? base('aqua', v1) : base('blue', v1);
    case 'java':
    case 'js':
    case 'perl':
      return base(languageBase(p, name, kind), v1);
    default:
      return base(p, v1);
  }
}

/**
 * Colour of each frame for a palette, computed when a frame is first drawn and cached:
 * a million frames are never all on screen, so they are never all hashed.
 */
export function frameColors(frames: FrameSet, p: Palette): (f: number) => string {
  // An index per frame into a short list of colour strings (a palette has a few hundred):
  // a typed array, not a million-slot JavaScript array, and each string made once.
  const index = new Uint16Array(frames.names.length);
  const styles: string[] = [''];
  const seen = new Map<string, number>();
  return (f) => {
    const i = index[f];
    if (i !== 0) return styles[i];
    const c = colorOf(p, frames.names[f], frames.kinds[f]);
    let k = seen.get(c);
    if (k === undefined) {
      k = styles.push(c) - 1;
      if (k < 65536) seen.set(c, k);
    }
    if (k < 65536) index[f] = k;
    return c;
  };
}


/** Tableau 10: distinct series colours on light and dark pages (the report's charts). */
export const TABLEAU10 = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

/**
 * Colour of a category (`i`: its place in the report's order): stable for well-known
 * ones, else from Tableau 10. The category charts draw with it; flame graphs with its
 * frame shade.
 */
export function categoryColor(name: string, i: number): string {
  if (name.startsWith('other')) return name.includes('kernel') ? '#c7c7c7' : '#a0a0a0';
  const known: Record<string, string> = {
    'I/O polling (poll/epoll)': '#e15759',
    'garbage collection': '#b07aa1',
    'Erlang code': '#59a14f',
    'BEAM scheduler (busy-wait, spin)': '#f28e2b',
    'port and socket I/O': '#4e79a7',
    'BIFs and NIFs': '#76b7b2',
    'BEAM runtime (other)': '#9c755f',
    'syscall: futex (locks, sleeping)': '#edc948',
  };
  return known[name] ?? TABLEAU10[(i + 3) % TABLEAU10.length];
}

/** `#rrggbb` mixed with white by `f` (0: itself, 1: white). */
export function lighten(hex: string, f: number): string {
  const n = parseInt(hex.slice(1), 16);
  const mix = (c: number): number => Math.round(c + (255 - c) * f);
  return rgb(mix((n >> 16) & 255), mix((n >> 8) & 255), mix(n & 255));
}

/**
 * A category's frame colour: its chart colour lightened so black labels stay readable
 * (frames are light on light and dark pages alike, as every palette's).
 */
export function categoryFrameColor(name: string, i: number): string {
  return lighten(categoryColor(name, i), 0.4);
}

/** Frames of categories other than the highlighted one. */
export const CATEGORY_MUTED = 'rgb(222,222,226)';
