// The time strip: sample density over time; drag to select a window and the flame graph,
// table and sandwich show that window only (the flame chart shows it); double-click clears
// it. The tracks drawn on its axis drag windows through it (`dragFrom`): one drag, one
// window. Its caption sits on its own line above the bars, so nothing covers them. Times read
// on the page's clock (0: the start of the measurement in a run's report; a warm-up is
// negative), as every chart of the page reads them.
import { Histogram } from '../lib/timeline.js';
import { formatInstant, formatNs } from '../lib/units.js';
import { currentTheme } from '../render/theme.js';
import { el, setText } from './dom.js';

export class TimelineView {
  readonly el: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  private readonly label: HTMLDivElement;
  private hist: Histogram | null = null;
  private range: [number, number] | null = null;
  private drag: number | null = null;
  private dragTo = 0;
  /** The pointer's page x when the press began, and whether it has moved since (> 3 px). */
  private dragX = 0;
  private moved = false;
  /** Called while a window is dragged (the tracks draw it too). */
  onDrag: (() => void) | null = null;
  private pending = 0;
  /** A page's time axis (the run report's charts'): its span and plot margins, px. */
  private axis: { span: [number, number]; left: number; right: number } | null = null;
  private histFor: [number, number] | null = null;

  constructor(
    readonly span: [number, number],
    private readonly histogramFor: (buckets: number, span: [number, number]) => Histogram,
    private readonly onRange: (r: [number, number] | null) => void,
    /** What the bars sum ("CPU time", "samples"). */
    private readonly what: string,
    /** Added to a time (ns since the profile's origin) to read it on the page's clock. */
    private readonly shift = 0,
  ) {
    this.canvas = el('canvas', { class: 'timeline-canvas', role: 'img', 'aria-label': `${what} over time; drag to select a time window, double-click to clear it` });
    this.label = el('div', { class: 'timeline-label', 'data-ctrl': 'timeline-label' });
    this.el = el('div', { class: 'timeline' }, this.label, el('div', { class: 'timeline-bars' }, this.canvas));
    new ResizeObserver(() => this.draw()).observe(this.el);
    this.dragFrom(this.canvas);
    window.addEventListener('mousemove', (e) => {
      if (this.drag === null) return;
      if (Math.abs(e.clientX - this.dragX) > 3) this.moved = true;
      this.dragTo = this.timeAt(e.clientX - this.canvas.getBoundingClientRect().left);
      this.draw();
      this.onDrag?.();
    });
    window.addEventListener('mouseup', () => {
      if (this.drag === null) return;
      const a = Math.min(this.drag, this.dragTo);
      const b = Math.max(this.drag, this.dragTo);
      this.drag = null;
      const minSpan = (this.span[1] - this.span[0]) / 1000;
      if (this.moved && b - a > minSpan) this.onRange([Math.floor(a), Math.ceil(b)]);
      else this.draw();
      this.onDrag?.();
    });
    this.canvas.addEventListener('dblclick', () => this.onRange(null));
  }

  /**
   * Lets a press on `target` (the strip, or the tracks drawn on its axis) drag a window:
   * times are read at the strip's x for the pointer's page x, and the window is chosen
   * as a drag on the strip chooses it.
   */
  dragFrom(target: HTMLElement): void {
    target.addEventListener('mousedown', (e) => {
      if (e.button !== 0) return;
      // No text selected on the tracks' labels while dragging.
      e.preventDefault();
      this.drag = this.timeAt(e.clientX - this.canvas.getBoundingClientRect().left);
      this.dragTo = this.drag;
      this.dragX = e.clientX;
      this.moved = false;
    });
  }

  /** Whether the last press dragged (more than 3 px): its click is not a click. */
  dragged(): boolean {
    return this.moved;
  }

  /** The window drawn: the one being dragged, else the selected one. */
  selection(): [number, number] | null {
    return this.drag !== null && this.moved ? [Math.min(this.drag, this.dragTo), Math.max(this.drag, this.dragTo)] : this.range;
  }

  /**
   * Draws the strip against a page's time axis: `span` (ns since the profile's origin)
   * between `left` and `right` px from the canvas' edges, so a time has the x it has on
   * the page's charts; null: the profile's own span over the whole strip.
   */
  setAxis(span: [number, number] | null, left = 0, right = 0): void {
    const a = this.axis;
    if (span && a && a.span[0] === span[0] && a.span[1] === span[1] && a.left === left && a.right === right) return;
    if (!span && !a) return;
    this.axis = span ? { span, left, right } : null;
    this.draw();
  }

  /** The drawn span and its plot's left edge and width (px) in a canvas w px wide. */
  plot(w: number): { a: number; b: number; x0: number; pw: number } {
    const [a, b] = this.axis?.span ?? this.span;
    const x0 = this.axis?.left ?? 0;
    return { a, b, x0, pw: Math.max(1, w - x0 - (this.axis?.right ?? 0)) };
  }

  /** Buckets (bars) drawn in a plot pw px wide: one per 3 px. */
  buckets(pw: number): number {
    return Math.max(1, Math.floor(pw / 3));
  }

  private timeAt(x: number): number {
    const { a, b, x0, pw } = this.plot(this.canvas.clientWidth || 1);
    return a + Math.min(1, Math.max(0, (x - x0) / pw)) * (b - a);
  }

  /** The x (px from the canvas' left edge) of time t (ns since the profile's origin). */
  xOf(t: number): number {
    const { a, b, x0, pw } = this.plot(this.canvas.clientWidth || 1);
    return x0 + ((t - a) / Math.max(1, b - a)) * pw;
  }

  setRange(r: [number, number] | null): void {
    if (r === this.range || (r && this.range && r[0] === this.range[0] && r[1] === this.range[1])) return;
    this.range = r;
    // On the next frame: reading the strip's size now would force the page's layout in
    // the middle of a window change that updates many elements.
    if (!this.pending) {
      this.pending = requestAnimationFrame(() => {
        this.pending = 0;
        this.draw();
      });
    }
  }

  draw(): void {
    const w = Math.floor(this.canvas.clientWidth);
    const h = Math.floor(this.canvas.clientHeight);
    if (w <= 0 || h <= 0) return;
    const dpr = window.devicePixelRatio || 1;
    if (this.canvas.width !== w * dpr || this.canvas.height !== h * dpr) {
      this.canvas.width = w * dpr;
      this.canvas.height = h * dpr;
    }
    const ctx = this.canvas.getContext('2d');
    if (!ctx) return;
    const theme = currentTheme();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const { a, b, x0, pw } = this.plot(w);
    const n = this.buckets(pw);
    if (!this.hist || this.hist.buckets.length !== n || this.histFor?.[0] !== a || this.histFor?.[1] !== b) {
      this.hist = this.histogramFor(n, [a, b]);
      this.histFor = [a, b];
    }
    const hist = this.hist;
    ctx.fillStyle = theme.dark ? '#202228' : '#f4f4f4';
    ctx.fillRect(0, 0, w, h);
    ctx.fillStyle = theme.bar;
    const bw = pw / n;
    for (let i = 0; i < n; i++) {
      // Any bucket with samples shows at least 2 px, so sparse profiles do not look empty.
      const v = hist.buckets[i];
      const bh = hist.max > 0 && v > 0 ? Math.max(2, (v / hist.max) * (h - 2)) : 0;
      if (bh > 0) ctx.fillRect(x0 + i * bw, h - bh, Math.max(1, bw - 0.5), bh);
    }
    const x = (t: number): number => Math.min(w, Math.max(0, x0 + ((t - a) / Math.max(1, b - a)) * pw));
    const sel = this.selection();
    // As many decimals as a bar of the strip needs.
    const at = (t: number): string => formatInstant(t + this.shift, (b - a) / 200);
    const all = `${at(this.span[0])} – ${at(this.span[1])}`;
    if (sel) {
      ctx.fillStyle = theme.selection;
      ctx.fillRect(x(sel[0]), 0, Math.max(1, x(sel[1]) - x(sel[0])), h);
      setText(this.label, `Window ${at(sel[0])} – ${at(sel[1])} (${formatNs(sel[1] - sel[0])}) of ${all}; double-click the strip to clear`);
    } else {
      setText(this.label, `${this.what} from ${all} (${formatNs(this.span[1] - this.span[0])}): drag on the strip to select a window`);
    }
  }
}
