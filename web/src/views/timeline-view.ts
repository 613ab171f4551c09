// The time strip: sample density over time; drag to select a window and the flame graph,
// table and sandwich show that window only (the flame chart shows it); double-click clears
// it. Its caption sits on its own line above the bars, so nothing covers them. Times read
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
  private pending = 0;

  constructor(
    readonly span: [number, number],
    private readonly histogramFor: (buckets: number) => Histogram,
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
    this.canvas.addEventListener('mousedown', (e) => {
      this.drag = this.timeAt(e.offsetX);
      this.dragTo = this.drag;
    });
    this.canvas.addEventListener('mousemove', (e) => {
      if (this.drag === null) return;
      this.dragTo = this.timeAt(e.offsetX);
      this.draw();
    });
    window.addEventListener('mouseup', () => {
      if (this.drag === null) return;
      const a = Math.min(this.drag, this.dragTo);
      const b = Math.max(this.drag, this.dragTo);
      this.drag = null;
      const minSpan = (this.span[1] - this.span[0]) / 1000;
      if (b - a > minSpan) this.onRange([Math.floor(a), Math.ceil(b)]);
      else this.draw();
    });
    this.canvas.addEventListener('dblclick', () => this.onRange(null));
  }

  private timeAt(x: number): number {
    const w = this.canvas.clientWidth || 1;
    const [a, b] = this.span;
    return a + Math.min(1, Math.max(0, x / w)) * (b - a);
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
    const n = Math.max(1, Math.floor(w / 3));
    if (!this.hist || this.hist.buckets.length !== n) this.hist = this.histogramFor(n);
    const hist = this.hist;
    ctx.fillStyle = theme.dark ? '#202228' : '#f4f4f4';
    ctx.fillRect(0, 0, w, h);
    ctx.fillStyle = theme.bar;
    const bw = w / n;
    for (let i = 0; i < n; i++) {
      // Any bucket with samples shows at least 2 px, so sparse profiles do not look empty.
      const v = hist.buckets[i];
      const bh = hist.max > 0 && v > 0 ? Math.max(2, (v / hist.max) * (h - 2)) : 0;
      if (bh > 0) ctx.fillRect(i * bw, h - bh, Math.max(1, bw - 0.5), bh);
    }
    const [a, b] = this.span;
    const x = (t: number): number => ((t - a) / Math.max(1, b - a)) * w;
    const sel = this.drag !== null ? [Math.min(this.drag, this.dragTo), Math.max(this.drag, this.dragTo)] : this.range;
    // As many decimals as a bar of the strip needs.
    const at = (t: number): string => formatInstant(t + this.shift, (b - a) / 200);
    const all = `${at(a)} – ${at(b)}`;
    if (sel) {
      ctx.fillStyle = theme.selection;
      ctx.fillRect(x(sel[0]), 0, Math.max(1, x(sel[1]) - x(sel[0])), h);
      setText(this.label, `Window ${at(sel[0])} – ${at(sel[1])} (${formatNs(sel[1] - sel[0])}) of ${all}; double-click the strip to clear`);
    } else {
      setText(this.label, `${this.what} from ${all} (${formatNs(b - a)}): drag on the strip to select a window`);
    }
  }
}
