// Canvas drawing of the flame chart: a time axis, then one lane per thread (its name,
// then its stacks, root at the top). As the flame graph renderer: per visible row a
// binary search finds the first box in view, boxes narrower than a pixel merge into one
// pixel column, rectangles are batched by colour. Cost per frame depends on the pixels,
// not on the number of samples, which keeps panning and zooming smooth.
import { ChartRow, FlameChart, boxAt, firstBoxEndingAfter } from '../lib/flamechart.js';
import { formatInstant, thousands } from '../lib/units.js';
import { ROW_HEIGHT } from './flame-renderer.js';
import { TextFitter } from './text.js';
import { Theme, currentTheme } from './theme.js';

export interface ChartScene {
  chart: FlameChart;
  /** Colour of a tree node. */
  color: (node: number) => string;
  dim: ((node: number) => boolean) | null;
  label: (node: number) => string;
  /** Visible time range, ns since the profile's origin. */
  t0: number;
  t1: number;
  scrollY: number;
  selected: ChartBox | null;
  /** Added to a time to read it on the page's clock (axis labels). */
  shift?: number;
  /** The selected window (ns since the profile's origin): the time outside it is shaded. */
  window?: [number, number] | null;
  /** A lane's header text (default: its name and samples). */
  laneLabel?: (lane: number) => string;
}

/** A box of the chart: lane, depth and index in its row. */
export interface ChartBox {
  lane: number;
  depth: number;
  index: number;
}

export const AXIS_HEIGHT = 20;
export const LANE_HEADER = 18;
const LANE_GAP = 6;

/** Top of each lane (content coordinates, below the axis) and the total height. */
export function laneTops(chart: FlameChart): { tops: number[]; height: number } {
  const tops: number[] = [];
  let y = 0;
  for (const lane of chart.lanes) {
    tops.push(y);
    y += LANE_HEADER + Math.max(1, lane.rows.length) * ROW_HEIGHT + LANE_GAP;
  }
  return { tops, height: y };
}

/** Tick spacing in ns for about `px` pixels between ticks. */
export function tickStep(spanNs: number, widthPx: number, px = 110): number {
  const raw = (spanNs * px) / Math.max(1, widthPx);
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-3))));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

export class ChartRenderer {
  readonly ctx: CanvasRenderingContext2D;
  width = 0;
  height = 0;
  private text: TextFitter;
  private tops: { chart: FlameChart; tops: number[]; height: number } | null = null;

  constructor(readonly canvas: HTMLCanvasElement) {
    const ctx = canvas.getContext('2d', { alpha: false });
    if (!ctx) throw new Error('this browser cannot draw on a canvas');
    this.ctx = ctx;
    this.text = new TextFitter(ctx, '11px Verdana, "DejaVu Sans", sans-serif');
  }

  resize(cssWidth: number, cssHeight: number): void {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.floor(cssWidth));
    const h = Math.max(1, Math.floor(cssHeight));
    if (w === this.width && h === this.height) return;
    this.width = w;
    this.height = h;
    this.canvas.width = Math.floor(w * dpr);
    this.canvas.height = Math.floor(h * dpr);
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${h}px`;
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  layoutOf(chart: FlameChart): { tops: number[]; height: number } {
    if (this.tops?.chart !== chart) this.tops = { chart, ...laneTops(chart) };
    return this.tops;
  }

  /** Top y on the canvas of a lane's row `depth`. */
  rowY(s: ChartScene, lane: number, depth: number): number {
    return AXIS_HEIGHT + this.layoutOf(s.chart).tops[lane] + LANE_HEADER + depth * ROW_HEIGHT - s.scrollY;
  }

  draw(s: ChartScene, theme: Theme = currentTheme()): { rects: number; labels: number; ms: number } {
    const t0 = performance.now();
    const { ctx, width: W, height: H } = this;
    ctx.fillStyle = theme.background;
    ctx.fillRect(0, 0, W, H);
    const span = s.t1 - s.t0;
    if (!(span > 0)) return { rects: 0, labels: 0, ms: 0 };
    const scale = W / span;
    const { tops } = this.layoutOf(s.chart);
    const batches = [new Map<string, number[]>(), new Map<string, number[]>()];
    const labels: [number, number, number, number][] = [];
    let rects = 0;
    ctx.font = this.text.font;
    ctx.textBaseline = 'middle';
    const headers: [string, number][] = [];
    for (let li = 0; li < s.chart.lanes.length; li++) {
      const lane = s.chart.lanes[li];
      const top = AXIS_HEIGHT + tops[li] - s.scrollY;
      const bottom = top + LANE_HEADER + lane.rows.length * ROW_HEIGHT;
      if (bottom < AXIS_HEIGHT || top > H) continue;
      headers.push([s.laneLabel ? s.laneLabel(li) : `${lane.name} — ${thousands(lane.samples)} samples`, top]);
      for (let d = 0; d < lane.rows.length; d++) {
        const y = top + LANE_HEADER + d * ROW_HEIGHT;
        if (y + ROW_HEIGHT < AXIS_HEIGHT || y > H) continue;
        rects += this.drawRow(s, lane.rows[d], y, scale, batches, labels);
      }
    }
    ctx.fillStyle = theme.laneHeader;
    for (const [, top] of headers) ctx.fillRect(0, top, W, LANE_HEADER - 2);
    ctx.fillStyle = theme.text;
    for (const [name, top] of headers) {
      const t = this.text.fit(name, W - 12);
      if (t) ctx.fillText(t, 6, top + LANE_HEADER / 2 - 1);
    }
    const alphas = [1, theme.dimAlpha];
    for (let kind = 0; kind < 2; kind++) {
      ctx.globalAlpha = alphas[kind];
      for (const [style, b] of batches[kind]) {
        ctx.fillStyle = style;
        for (let i = 0; i < b.length; i += 3) ctx.fillRect(b[i], b[i + 1], b[i + 2], ROW_HEIGHT - 1);
      }
    }
    ctx.globalAlpha = 1;
    ctx.fillStyle = theme.frameText;
    for (const [node, x, y, w] of labels) {
      ctx.globalAlpha = s.dim && s.dim(node) ? 0.55 : 1;
      const t = this.text.fit(s.label(node), w - 6);
      if (t) ctx.fillText(t, x + 3, y + ROW_HEIGHT / 2);
    }
    ctx.globalAlpha = 1;
    if (s.selected) {
      const r = this.rectOf(s, s.selected);
      if (r) {
        ctx.strokeStyle = theme.focus;
        ctx.lineWidth = 2;
        const x = Math.max(-2, r.x);
        ctx.strokeRect(x + 1, r.y + 1, Math.max(1, Math.min(W + 4, r.x + Math.max(2, r.w)) - x - 2), ROW_HEIGHT - 3);
      }
    }
    if (s.window) {
      // Outside the selected window: shaded (the window's samples are the other views').
      ctx.fillStyle = theme.dark ? 'rgba(0,0,0,0.45)' : 'rgba(255,255,255,0.6)';
      const a = (s.window[0] - s.t0) * scale;
      const b = (s.window[1] - s.t0) * scale;
      if (a > 0) ctx.fillRect(0, AXIS_HEIGHT, Math.min(W, a), H - AXIS_HEIGHT);
      if (b < W) ctx.fillRect(Math.max(0, b), AXIS_HEIGHT, W - Math.max(0, b), H - AXIS_HEIGHT);
    }
    this.drawAxis(s, theme, scale);
    return { rects, labels: labels.length, ms: performance.now() - t0 };
  }

  private drawRow(
    s: ChartScene,
    row: ChartRow,
    y: number,
    scale: number,
    batches: Map<string, number[]>[],
    labels: [number, number, number, number][],
  ): number {
    const W = this.width;
    let rects = 0;
    let runFrom = -1;
    let runTo = -1;
    let runStyle = '';
    let runKind = 0;
    const flush = (): void => {
      if (runFrom < 0) return;
      push(runStyle, runKind, runFrom, runTo - runFrom);
      runFrom = -1;
    };
    const push = (style: string, kind: number, x: number, w: number): void => {
      let b = batches[kind].get(style);
      if (!b) batches[kind].set(style, (b = []));
      b.push(x, y, w);
      rects++;
    };
    let k = firstBoxEndingAfter(row, s.t0);
    while (k < row.length) {
      const st = row.start[k];
      if (st >= s.t1) break;
      const node = row.node[k];
      const px = (st - s.t0) * scale;
      const w = (row.end[k] - st) * scale;
      const kind = s.dim && s.dim(node) ? 1 : 0;
      if (w < 1) {
        const col = Math.floor(px);
        if (col !== runTo || kind !== runKind) {
          flush();
          runFrom = col;
          runStyle = s.color(node);
          runKind = kind;
        }
        runTo = col + 1;
        k = firstBoxEndingAfter(row, s.t0 + (col + 1) / scale, k + 1);
        continue;
      }
      flush();
      const left = Math.max(px, -1);
      const right = Math.min(px + w, W + 1);
      push(s.color(node), kind, left, Math.max(1, right - left - (w > 3 ? 0.5 : 0)));
      if (right - left > 22) labels.push([node, left, y, right - left]);
      k++;
    }
    flush();
    return rects;
  }

  private drawAxis(s: ChartScene, theme: Theme, scale: number): void {
    const { ctx, width: W } = this;
    ctx.fillStyle = theme.background;
    ctx.fillRect(0, 0, W, AXIS_HEIGHT);
    ctx.fillStyle = theme.grid;
    ctx.fillRect(0, AXIS_HEIGHT - 1, W, 1);
    ctx.fillStyle = theme.muted;
    ctx.textBaseline = 'middle';
    for (const { x, text } of this.axisTicks(s, scale)) {
      ctx.fillRect(x, AXIS_HEIGHT - 6, 1, 6);
      ctx.fillText(text, x + 3, AXIS_HEIGHT / 2 - 1);
    }
  }

  /** The time axis' ticks: at round times of the page's clock, with the digits the step needs. */
  axisTicks(s: ChartScene, scale = this.width / Math.max(1e-9, s.t1 - s.t0)): { x: number; text: string }[] {
    const step = tickStep(s.t1 - s.t0, this.width);
    const shift = s.shift ?? 0;
    const out: { x: number; text: string }[] = [];
    for (let k = Math.ceil((s.t0 + shift) / step); k * step - shift <= s.t1; k++) {
      out.push({ x: (k * step - shift - s.t0) * scale, text: formatInstant(k * step, step) });
    }
    return out;
  }

  /** Box under a canvas point, or null. */
  hit(s: ChartScene, x: number, y: number): ChartBox | null {
    if (y < AXIS_HEIGHT) return null;
    const cy = y - AXIS_HEIGHT + s.scrollY;
    const { tops } = this.layoutOf(s.chart);
    // Last lane starting above the point.
    let lo = 0;
    let hi = tops.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (tops[mid] <= cy) lo = mid + 1;
      else hi = mid;
    }
    const li = lo - 1;
    if (li < 0) return null;
    const depth = Math.floor((cy - tops[li] - LANE_HEADER) / ROW_HEIGHT);
    const lane = s.chart.lanes[li];
    if (depth < 0 || depth >= lane.rows.length) return null;
    const t = s.t0 + (x / this.width) * (s.t1 - s.t0);
    const index = boxAt(lane.rows[depth], t);
    // Sub-pixel boxes: the nearest one within a pixel.
    if (index < 0) {
      const row = lane.rows[depth];
      const px = (s.t1 - s.t0) / this.width;
      const k = firstBoxEndingAfter(row, t - px);
      if (k < row.length && row.start[k] <= t + px) return { lane: li, depth, index: k };
      return null;
    }
    return { lane: li, depth, index };
  }

  /** Canvas rectangle of a box, or null when its lane is gone. */
  rectOf(s: ChartScene, b: ChartBox): { x: number; y: number; w: number; h: number } | null {
    const lane = s.chart.lanes[b.lane];
    const row = lane?.rows[b.depth];
    if (!row || b.index >= row.length) return null;
    const scale = this.width / (s.t1 - s.t0);
    return { x: (row.start[b.index] - s.t0) * scale, y: this.rowY(s, b.lane, b.depth), w: (row.end[b.index] - row.start[b.index]) * scale, h: ROW_HEIGHT - 1 };
  }

  /** Height of the whole chart in pixels (axis included). */
  contentHeight(chart: FlameChart): number {
    return AXIS_HEIGHT + this.layoutOf(chart).height;
  }
}
