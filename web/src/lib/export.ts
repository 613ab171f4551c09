// Taking the view away: folded stacks of the transformed tree (what `kiln collapse` with
// the same transforms writes), and an SVG flame graph in the layout of `kiln flamegraph`
// (same geometry, same minimum width, same tooltip form), so the two agree frame by
// frame. DOM-free: the page only turns the text into a download.
import { Layout } from './layout.js';
import { FrameSet } from './profile.js';
import { Unit } from './units.js';

/** Path names from the root to each node (the root itself excluded), built on demand. */
function pathNames(l: Layout, frames: FrameSet): (v: number) => string {
  const memo = new Array<string | undefined>(l.n);
  const of = (v: number): string => {
    const m = memo[v];
    if (m !== undefined) return m;
    const name = frames.names[l.frame[v]] ?? '';
    const p = l.parent[v];
    const s = p > 0 ? `${of(p)};${name}` : name;
    memo[v] = s;
    return s;
  };
  return of;
}

/** Integer weights stay integers; others get up to 6 decimals. */
function num(w: number): string {
  return Number.isInteger(w) ? String(w) : String(Math.round(w * 1e6) / 1e6);
}

/**
 * Folded stacks of a layout: one line per node with self weight, `a;b;c weight`, in the
 * layout's order. With `before`, two counts per line (difffolded.pl's `before after`).
 */
export function foldedOf(l: Layout, frames: FrameSet, before?: { self: Float64Array; after: Float64Array }): string {
  const path = pathNames(l, frames);
  const out: string[] = [];
  const stack: number[] = [0];
  while (stack.length) {
    const v = stack.pop() as number;
    if (v > 0) {
      if (before) {
        const b = before.self[v];
        const a = before.after[v];
        if (b > 0 || a > 0) out.push(`${path(v)} ${num(b)} ${num(a)}`);
      } else if (l.self[v] > 0) out.push(`${path(v)} ${num(l.self[v])}`);
    }
    for (let k = l.childStart[v + 1]; k-- > l.childStart[v]; ) stack.push(l.childList[k]);
  }
  return out.length ? out.join('\n') + '\n' : '';
}

/**
 * The flame graph as it stands as one speedscope file (its documented JSON format,
 * https://www.speedscope.app/file-format-schema.json): an evented profile that opens each
 * node where the layout starts it and closes it at its end, in the layout's order, so
 * speedscope's left-heavy view, sandwich and self times are this graph's. Weights become
 * nanoseconds when they are time (timer samples too), bytes when bytes, else unitless.
 */
export function speedscopeOf(l: Layout, frames: FrameSet, unit: Unit, name: string): string {
  const [ssUnit, scale] = unit.isTime ? ['nanoseconds', unit.ns(1)] : unit.kind === 'bytes' ? ['bytes', unit.scale] : ['none', 1];
  const index = new Map<number, number>();
  const names: string[] = [];
  const events: string[] = [];
  const at = (w: number): string => num(w * scale);
  // Depth first in drawing order: a node opens at its start, its children follow, it closes
  // at its end (the stack holds ~v for a close).
  const stack: number[] = [];
  for (let k = l.childStart[1]; k-- > l.childStart[0]; ) stack.push(l.childList[k]);
  while (stack.length) {
    const x = stack.pop() as number;
    if (x < 0) {
      const v = ~x;
      events.push(`{"type":"C","frame":${index.get(l.frame[v])},"at":${at(l.start[v] + l.total[v])}}`);
      continue;
    }
    const f = l.frame[x];
    let i = index.get(f);
    if (i === undefined) {
      i = names.length;
      index.set(f, i);
      names.push(frames.names[f] ?? '');
    }
    events.push(`{"type":"O","frame":${i},"at":${at(l.start[x])}}`);
    stack.push(~x);
    for (let k = l.childStart[x + 1]; k-- > l.childStart[x]; ) stack.push(l.childList[k]);
  }
  const end = at(l.total[0]);
  return (
    `{"$schema":"https://www.speedscope.app/file-format-schema.json","exporter":"kiln","name":${JSON.stringify(name)},"activeProfileIndex":0,` +
    `"shared":{"frames":[${names.map((n) => `{"name":${JSON.stringify(n)}}`).join(',')}]},` +
    `"profiles":[{"type":"evented","name":${JSON.stringify(name)},"unit":"${ssUnit}","startValue":0,"endValue":${end},"events":[${events.join(',')}]}]}\n`
  );
}

/**
 * The flame graph as it stands as a Firefox Profiler file (its processed format, version
 * 55, which the profiler upgrades on load): one thread whose stack table is the layout's
 * nodes and whose samples are each node's self weight, as time (ms, `tracing-ms`) when
 * the weights are time, bytes when bytes, else sample counts; the call tree and flame
 * graph there are this graph's. The samples are one per node, 1 ms apart, not in time:
 * they carry no CPU deltas (the profiler then draws each as busy).
 */
export function firefoxOf(l: Layout, frames: FrameSet, unit: Unit, name: string): string {
  const [weightType, scale] = unit.kind === 'time' ? ['tracing-ms', unit.ns(1) / 1e6] : unit.kind === 'bytes' ? ['bytes', unit.scale] : ['samples', 1];
  const funcOf = new Map<number, number>();
  const strings: string[] = [];
  const stackOf = new Int32Array(l.n).fill(-1);
  const prefix: (number | null)[] = [];
  const frameCol: number[] = [];
  const sampleStack: number[] = [];
  const weight: number[] = [];
  // Parents before children (the layout's drawing order, depth first).
  const todo: number[] = [];
  for (let k = l.childStart[1]; k-- > l.childStart[0]; ) todo.push(l.childList[k]);
  while (todo.length) {
    const v = todo.pop() as number;
    const f = l.frame[v];
    let fn = funcOf.get(f);
    if (fn === undefined) {
      fn = strings.length;
      funcOf.set(f, fn);
      strings.push(frames.names[f] ?? '');
    }
    stackOf[v] = prefix.length;
    const p = l.parent[v];
    prefix.push(p > 0 ? stackOf[p] : null);
    frameCol.push(fn);
    if (l.self[v] > 0) {
      sampleStack.push(stackOf[v]);
      weight.push(l.self[v] * scale);
    }
    for (let k = l.childStart[v + 1]; k-- > l.childStart[v]; ) todo.push(l.childList[k]);
  }
  const nf = strings.length;
  const nulls = (n: number): null[] => new Array<null>(n).fill(null);
  const fill = <T>(n: number, x: T): T[] => new Array<T>(n).fill(x);
  const seq = Array.from({ length: nf }, (_, i) => i);
  const category = (c: string, color: string) => ({ name: c, color, subcategories: ['Other'] });
  const thread = {
    frameTable: { length: nf, address: fill(nf, -1), inlineDepth: fill(nf, 0), category: fill(nf, 1), subcategory: fill(nf, 0), func: seq, nativeSymbol: nulls(nf), innerWindowID: fill(nf, 0), line: nulls(nf), column: nulls(nf) },
    funcTable: { length: nf, name: seq, isJS: fill(nf, false), relevantForJS: fill(nf, false), resource: fill(nf, -1), fileName: nulls(nf), lineNumber: nulls(nf), columnNumber: nulls(nf) },
    markers: { length: 0, category: [], data: [], endTime: [], name: [], phase: [], startTime: [] },
    name,
    isMainThread: true,
    nativeSymbols: { length: 0, address: [], functionSize: [], libIndex: [], name: [] },
    pausedRanges: [],
    pid: '0',
    processName: name,
    processShutdownTime: null,
    processStartupTime: 0,
    processType: 'default',
    registerTime: 0,
    resourceTable: { length: 0, lib: [], name: [], host: [], type: [] },
    samples: { length: sampleStack.length, weightType, stack: sampleStack, timeDeltas: sampleStack.map((_, i) => (i ? 1 : 0)), weight },
    // The frame table's rows are the functions' (one each): a stack's frame is its function.
    stackTable: { length: prefix.length, prefix, frame: frameCol },
    stringArray: strings,
    tid: '0',
    unregisterTime: null,
    showMarkersInTimeline: false,
  };
  const profile = {
    meta: {
      categories: [category('Other', 'grey'), category('User', 'yellow')],
      debug: false,
      extensions: { baseURL: [], id: [], length: 0, name: [] },
      interval: 1,
      preprocessedProfileVersion: 55,
      processType: 0,
      product: name,
      sampleUnits: { eventDelay: 'ms', threadCPUDelta: 'µs', time: 'ms' },
      startTime: 0,
      symbolicated: true,
      pausedRanges: [],
      version: 24,
      usesOnlyOneStackType: true,
      sourceCodeIsNotOnSearchfox: true,
      markerSchema: [],
    },
    libs: [],
    threads: [thread],
    pages: [],
    profilerOverhead: [],
    counters: [],
  };
  return JSON.stringify(profile) + '\n';
}

/** Text for XML content and attributes; characters XML 1.0 forbids become U+FFFD. */
export function escapeXml(s: string): string {
  return s
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')
    .replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

export interface SvgOptions {
  title: string;
  subtitle?: string | null;
  /** Fill of a node. */
  color: (v: number) => string;
  label: (v: number) => string;
  unit: Unit;
  /** The node drawn full width (its ancestors above it full width too). Default: 0. */
  zoom?: number;
  icicle?: boolean;
  /** kiln flamegraph's defaults: 1200 px wide, frames narrower than 0.1 px left out. */
  width?: number;
  minWidthPx?: number;
  background?: string;
  textColor?: string;
}

// kiln flamegraph's geometry (crates/flamegraph/src/svg.rs).
const XPAD = 10;
const FONT_SIZE = 12;
const FONT_WIDTH = 0.59;
const FRAME_HEIGHT = 16;
const FRAMEPAD = 1;

/** An SVG flame graph of a layout; frames follow `kiln flamegraph`'s rules. */
export function svgOf(l: Layout, o: SvgOptions): string {
  const width = o.width ?? 1200;
  const zoom = o.zoom ?? 0;
  const framesPx = width - 2 * XPAD;
  const x0 = l.start[zoom];
  const span = l.total[zoom];
  const minW = ((o.minWidthPx ?? 0.1) * span) / framesPx;
  // Nodes drawn: the zoomed node's ancestors and its subtree, pruned below the minimum
  // width (with its subtree, as kiln flamegraph prunes).
  const drawn: number[] = [];
  let depthMax = 0;
  for (let u = l.parent[zoom]; u >= 0; u = l.parent[u]) drawn.push(u);
  const stack = [zoom];
  while (stack.length) {
    const v = stack.pop() as number;
    if (v !== zoom && !(l.total[v] >= minW && l.total[v] > 0)) continue;
    drawn.push(v);
    if (l.depth[v] > depthMax) depthMax = l.depth[v];
    for (let k = l.childStart[v + 1]; k-- > l.childStart[v]; ) stack.push(l.childList[k]);
  }
  const ypad1 = FONT_SIZE * 3;
  const ypad2 = FONT_SIZE * 2 + 10;
  const ypad3 = o.subtitle ? FONT_SIZE * 2 : 0;
  const height = (depthMax + 1) * FRAME_HEIGHT + ypad1 + ypad2 + ypad3;
  const c = (x: number): string => String(Math.round(x * 100) / 100);
  const pct = (x: number): string => (Math.round(x * 1e4) / 1e4).toFixed(4);
  const text = o.textColor ?? 'rgb(0,0,0)';
  const out: string[] = [];
  out.push('<?xml version="1.0" standalone="no"?>\n');
  out.push(`<svg version="1.1" width="${width}" height="${c(height)}" viewBox="0 0 ${width} ${c(height)}" xmlns="http://www.w3.org/2000/svg" xmlns:fg="http://github.com/jonhoo/inferno">\n`);
  out.push(`<!-- Exported from the kiln viewer. -->\n`);
  out.push(`<style type="text/css">text { font-family: Verdana, "DejaVu Sans", sans-serif; font-size: ${FONT_SIZE}px; fill: ${text}; } #title { text-anchor: middle; font-size: 17px; }</style>\n`);
  out.push(`<rect x="0" y="0" width="100%" height="100%" fill="${escapeXml(o.background ?? '#ffffff')}"/>\n`);
  out.push(`<text id="title" x="${c(width / 2)}" y="${c(FONT_SIZE * 2)}">${escapeXml(o.title)}</text>\n`);
  if (o.subtitle) out.push(`<text id="subtitle" x="${c(width / 2)}" y="${c(FONT_SIZE * 4)}" text-anchor="middle">${escapeXml(o.subtitle)}</text>\n`);
  out.push(`<svg id="frames" x="${XPAD}" width="${framesPx}" fg:total="${num(span)}">\n`);
  const all = l.total[0];
  for (const v of drawn) {
    const inView = v === zoom || l.depth[v] > l.depth[zoom];
    const x = inView ? l.start[v] - x0 : 0;
    const w = inView ? l.total[v] : span;
    const level = l.depth[v];
    let y1: number;
    if (o.icicle) y1 = ypad1 + ypad3 + level * FRAME_HEIGHT;
    else y1 = height - ypad2 - level * FRAME_HEIGHT - FRAME_HEIGHT + FRAMEPAD;
    const h = FRAME_HEIGHT - FRAMEPAD;
    const xPct = (100 * x) / span;
    const wPct = (100 * w) / span;
    const name = o.label(v);
    const share = v === 0 ? '100%' : `${(Math.round((10000 * l.total[v]) / all) / 100).toFixed(2)}%`;
    out.push(`<g><title>${escapeXml(`${name} (${o.unit.format(l.total[v])}, ${share})`)}</title>`);
    out.push(`<rect x="${pct(xPct)}%" y="${c(y1)}" width="${pct(wPct)}%" height="${c(h)}" fill="${escapeXml(o.color(v))}" fg:x="${num(x)}" fg:w="${num(l.total[v])}"/>`);
    const fit = Math.floor((w / span) * framesPx / (FONT_SIZE * FONT_WIDTH));
    if (fit >= 3) {
      const label = [...name].length <= fit ? name : [...name].slice(0, fit - 2).join('') + '..';
      out.push(`<text x="${pct(xPct + 300 / framesPx)}%" y="${c(y1 + h / 2 + 4)}">${escapeXml(label)}</text>`);
    }
    out.push('</g>\n');
  }
  out.push('</svg>\n</svg>\n');
  return out.join('');
}
