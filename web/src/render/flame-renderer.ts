// Canvas 2D drawing of a flame graph layout. Only what is on screen is visited: per
// visible row, a binary search finds the first node in view, and runs of nodes narrower
// than a pixel are skipped with another binary search and drawn as one pixel column, so a
// redraw costs O(rows x pixels x log n) whatever the profile's size. Rectangles are drawn
// first and labels after, so the fill style changes only when the colour does.
import { Layout, nextEnd, rowEnds } from '../lib/layout.js';
import { TextFitter } from './text.js';
import { Theme, currentTheme } from './theme.js';

export interface FlameScene {
  layout: Layout;
  /** Colour of a node. */
  color: (v: number) => string;
  /** Nodes the search does not match are drawn faint; null: no search. */
  dim: ((v: number) => boolean) | null;
  /** Visible range in weight units. */
  x0: number;
  x1: number;
  /** Roots at the top (icicle) or at the bottom (flame). */
  icicle: boolean;
  /** Vertical scroll in pixels, away from the root. */
  scrollY: number;
  /** Nodes shallower than this are the zoomed frame's ancestors and are drawn faded. */
  fadeAbove: number;
  /** First depth drawn (1 hides the layout's root, as the sandwich does). */
  base: number;
  /** Node outlined as selected (keyboard), or -1. */
  selected: number;
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

  /** Top y of depth `d` in CSS pixels. */
  rowY(s: FlameScene, d: number): number {
    const r = d - s.base;
    return s.icicle ? r * ROW_HEIGHT - s.scrollY : this.height - (r + 1) * ROW_HEIGHT + s.scrollY;
  }

  /** Depth at y. */
  rowAt(s: FlameScene, y: number): number {
    const r = s.icicle ? Math.floor((y + s.scrollY) / ROW_HEIGHT) : Math.floor((this.height + s.scrollY - y) / ROW_HEIGHT);
    return r + s.base;
  }

  draw(s: FlameScene, theme: Theme = currentTheme()): DrawStats {
    const t0 = performance.now();
    const { ctx, width: W, height: H } = this;
    const l = s.layout;
    ctx.fillStyle = theme.background;
    ctx.fillRect(0, 0, W, H);
    const span = s.x1 - s.x0;
    if (!(span > 0)) return { rects: 0, labels: 0, ms: performance.now() - t0 };
    const scale = W / span;
    const labelV: number[] = [];
    const labelX: number[] = [];
    const labelY: number[] = [];
    const labelW: number[] = [];
    let rects = 0;
    // Rectangles are batched by colour and opacity (x, y, width triples) and filled after
    // the walk, so the fill style, which the canvas parses as CSS, changes once per colour.
    const NORMAL = 0;
    const FADED = 1;
    const DIMMED = 2;
    const batches = [new Map<string, number[]>(), new Map<string, number[]>(), new Map<string, number[]>()];
    const batch = (style: string, kind: number): number[] => {
      const m = batches[kind];
      let b = m.get(style);
      if (!b) m.set(style, (b = []));
      return b;
    };
    const dim = s.dim;
    const allEnds = rowEnds(l);
    for (let d = s.base; d <= l.maxDepth; d++) {
      const y = this.rowY(s, d);
      if (y <= -ROW_HEIGHT || y >= H) continue;
      const row = l.rows[d];
      const ends = allEnds[d];
      const fade = d < s.fadeAbove;
      let k = nextEnd(ends, s.x0, 0);
      // A run of adjacent pixel columns holding only sub-pixel nodes, drawn as one bar.
      let runFrom = -1;
      let runTo = -1;
      let runStyle = '';
      let runKind = NORMAL;
      const flushRun = (): void => {
        if (runFrom < 0) return;
        batch(runStyle, runKind).push(runFrom, y, runTo - runFrom);
        rects++;
        runFrom = -1;
      };
      while (k < row.length) {
        const v = row[k];
        const st = l.start[v];
        if (st >= s.x1) break;
        const px = (st - s.x0) * scale;
        const w = l.total[v] * scale;
        const kind = dim && dim(v) ? DIMMED : fade ? FADED : NORMAL;
        if (w < 1) {
          // Everything ending inside this pixel column joins the current run.
          const col = Math.floor(px);
          if (col !== runTo || kind !== runKind) {
            flushRun();
            runFrom = col;
            // In the caller's colour: stable while panning (the first node of a pixel
            // column changes at every step), and the caller was drawn already.
            const p = l.parent[v];
            runStyle = s.color(p > 0 && d > s.base ? p : v);
            runKind = kind;
          }
          runTo = col + 1;
          k = nextEnd(ends, s.x0 + (col + 1) / scale, k + 1);
          continue;
        }
        flushRun();
        rects++;
        const left = Math.max(px, -1);
        const right = Math.min(px + w, W + 1);
        batch(s.color(v), kind).push(left, y, Math.max(1, right - left - (w > 3 ? 0.5 : 0)));
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
    const alphas = [1, theme.fadeAlpha, theme.dimAlpha];
    for (let kind = 0; kind < 3; kind++) {
      ctx.globalAlpha = alphas[kind];
      for (const [style, b] of batches[kind]) {
        ctx.fillStyle = style;
        for (let i = 0; i < b.length; i += 3) ctx.fillRect(b[i], b[i + 1], b[i + 2], ROW_HEIGHT - 1);
      }
    }
    ctx.textBaseline = 'middle';
    ctx.font = this.text.font;
    ctx.fillStyle = theme.frameText;
    for (let i = 0; i < labelV.length; i++) {
      const v = labelV[i];
      ctx.globalAlpha = dim && dim(v) ? 0.55 : 1;
      const t = this.text.fit(s.label(v), labelW[i] - 6);
      if (t) ctx.fillText(t, labelX[i] + 3, labelY[i] + ROW_HEIGHT / 2);
    }
    ctx.globalAlpha = 1;
    if (s.selected >= 0 && s.selected < l.n && l.depth[s.selected] >= s.base) {
      const r = this.rectOf(s, s.selected);
      const x = Math.max(-2, r.x);
      const w = Math.min(W + 4, r.x + Math.max(r.w, 2)) - x;
      ctx.strokeStyle = theme.focus;
      ctx.lineWidth = 2;
      ctx.strokeRect(x + 1, r.y + 1, Math.max(1, w - 2), ROW_HEIGHT - 3);
    }
    return { rects, labels: labelV.length, ms: performance.now() - t0 };
  }

  /** Node under a point, or -1. */
  hit(s: FlameScene, x: number, y: number): number {
    const d = this.rowAt(s, y);
    const l = s.layout;
    if (d < s.base || d > l.maxDepth) return -1;
    const wx = s.x0 + (x / this.width) * (s.x1 - s.x0);
    const row = l.rows[d];
    const k = nextEnd(rowEnds(l)[d], wx, 0);
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
