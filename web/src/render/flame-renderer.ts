// Canvas 2D drawing of a flame graph layout. Only what is on screen is visited: per
// visible row, a binary search finds the first node in view, and runs of nodes narrower
// than a pixel are skipped with another binary search and drawn as one pixel column, so a
// redraw costs O(rows x pixels x log n) whatever the profile's size. Rectangles are drawn
// first and labels after, so the fill style changes only when the colour does.
import { Layout, firstEndingAfter } from '../lib/layout.js';
import { TextFitter } from './text.js';

export interface FlameScene {
  layout: Layout;
  /** Colour of a node. */
  color: (v: number) => string;
  /** Visible range in weight units. */
  x0: number;
  x1: number;
  /** Roots at the top (icicle) or at the bottom (flame). */
  icicle: boolean;
  /** Vertical scroll in pixels, away from the root. */
  scrollY: number;
  /** Nodes shallower than this are the zoomed frame's ancestors and are drawn faded. */
  fadeAbove: number;
  label: (v: number) => string;
}

export interface DrawStats {
  rects: number;
  labels: number;
  ms: number;
}

export const ROW_HEIGHT = 17;

export class FlameRenderer {
  readonly ctx: CanvasRenderingContext2D;
  width = 0;
  height = 0;
  private text: TextFitter;

  constructor(readonly canvas: HTMLCanvasElement) {
    const ctx = canvas.getContext('2d', { alpha: false });
    if (!ctx) throw new Error('this browser cannot draw on a canvas');
    this.ctx = ctx;
    this.text = new TextFitter(ctx, '11px Verdana, "DejaVu Sans", sans-serif');
  }

  /** Sizes the backing store for the device pixel ratio; returns whether it changed. */
  resize(cssWidth: number, cssHeight: number): boolean {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.floor(cssWidth));
    const h = Math.max(1, Math.floor(cssHeight));
    if (w === this.width && h === this.height) return false;
    this.width = w;
    this.height = h;
    this.canvas.width = Math.floor(w * dpr);
    this.canvas.height = Math.floor(h * dpr);
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${h}px`;
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return true;
  }

  /** Top y of row `d` in CSS pixels. */
  rowY(s: FlameScene, d: number): number {
    return s.icicle ? d * ROW_HEIGHT - s.scrollY : this.height - (d + 1) * ROW_HEIGHT + s.scrollY;
  }

  rowAt(s: FlameScene, y: number): number {
    return s.icicle ? Math.floor((y + s.scrollY) / ROW_HEIGHT) : Math.floor((this.height + s.scrollY - y) / ROW_HEIGHT) - 0;
  }

  draw(s: FlameScene): DrawStats {
    const t0 = performance.now();
    const { ctx, width: W, height: H } = this;
    const l = s.layout;
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, W, H);
    const span = s.x1 - s.x0;
    if (!(span > 0)) return { rects: 0, labels: 0, ms: performance.now() - t0 };
    const scale = W / span;
    const labelV: number[] = [];
    const labelX: number[] = [];
    const labelY: number[] = [];
    const labelW: number[] = [];
    let rects = 0;
    // Rectangles are batched by colour (x, y, width triples) and filled after the walk,
    // so the fill style, which the canvas parses as CSS, changes once per colour.
    const batches = new Map<string, number[]>();
    const fadedBatches = new Map<string, number[]>();
    const batch = (style: string, fade: boolean): number[] => {
      const m = fade ? fadedBatches : batches;
      let b = m.get(style);
      if (!b) m.set(style, (b = []));
      return b;
    };
    for (let d = 0; d <= l.maxDepth; d++) {
      const y = this.rowY(s, d);
      if (y <= -ROW_HEIGHT || y >= H) continue;
      const row = l.rows[d];
      const fade = d < s.fadeAbove;
      let k = firstEndingAfter(l, row, s.x0);
      // A run of adjacent pixel columns holding only sub-pixel nodes, drawn as one bar.
      let runFrom = -1;
      let runTo = -1;
      let runStyle = '';
      const flushRun = (): void => {
        if (runFrom < 0) return;
        batch(runStyle, fade).push(runFrom, y, runTo - runFrom);
        rects++;
        runFrom = -1;
      };
      while (k < row.length) {
        const v = row[k];
        const st = l.start[v];
        if (st >= s.x1) break;
        const px = (st - s.x0) * scale;
        const w = l.total[v] * scale;
        if (w < 1) {
          // Everything ending inside this pixel column joins the current run.
          const col = Math.floor(px);
          if (col !== runTo) {
            flushRun();
            runFrom = col;
            runStyle = s.color(v);
          }
          runTo = col + 1;
          k = firstEndingAfter(l, row, s.x0 + (col + 1) / scale, k + 1);
          continue;
        }
        flushRun();
        rects++;
        const left = Math.max(px, -1);
        const right = Math.min(px + w, W + 1);
        batch(s.color(v), fade).push(left, y, Math.max(1, right - left - (w > 3 ? 0.5 : 0)));
        if (right - left > 22) {
          labelV.push(v);
          labelX.push(left);
          labelY.push(y);
          labelW.push(right - left);
        }
        k++;
      }
      flushRun();
    }
    for (const [m, alpha] of [[batches, 1], [fadedBatches, 0.55]] as const) {
      ctx.globalAlpha = alpha;
      for (const [style, b] of m) {
        ctx.fillStyle = style;
        for (let i = 0; i < b.length; i += 3) ctx.fillRect(b[i], b[i + 1], b[i + 2], ROW_HEIGHT - 1);
      }
    }
    ctx.globalAlpha = 1;
    ctx.fillStyle = '#000000';
    ctx.textBaseline = 'middle';
    ctx.font = this.text.font;
    for (let i = 0; i < labelV.length; i++) {
      const t = this.text.fit(s.label(labelV[i]), labelW[i] - 6);
      if (t) ctx.fillText(t, labelX[i] + 3, labelY[i] + ROW_HEIGHT / 2);
    }
    return { rects, labels: labelV.length, ms: performance.now() - t0 };
  }

  /** Node under a point, or -1. */
  hit(s: FlameScene, x: number, y: number): number {
    const d = this.rowAt(s, y);
    const l = s.layout;
    if (d < 0 || d > l.maxDepth) return -1;
    const wx = s.x0 + (x / this.width) * (s.x1 - s.x0);
    const row = l.rows[d];
    const k = firstEndingAfter(l, row, wx);
    if (k >= row.length) return -1;
    const v = row[k];
    return l.start[v] <= wx ? v : -1;
  }

  /** On-screen rectangle of a node (CSS pixels), for tooltips and tests. */
  rectOf(s: FlameScene, v: number): { x: number; y: number; w: number; h: number } {
    const scale = this.width / (s.x1 - s.x0);
    const l = s.layout;
    return { x: (l.start[v] - s.x0) * scale, y: this.rowY(s, l.depth[v]), w: l.total[v] * scale, h: ROW_HEIGHT - 1 };
  }
}
