// The FlameScope-style strip: sample density over time; drag to select a range and the
// flame graph shows that range only; double-click clears it.
import { formatSeconds } from '../lib/format.js';
import { Histogram } from '../lib/timeline.js';
import { el, setText } from './dom.js';

export class TimelineView {
  readonly el: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  private readonly label: HTMLSpanElement;
  private hist: Histogram | null = null;
  private range: [number, number] | null = null;
  private drag: number | null = null;
  private dragTo = 0;

  constructor(
    private readonly span: [number, number],
    private readonly histogramFor: (buckets: number) => Histogram,
    private readonly onRange: (r: [number, number] | null) => void,
  ) {
    this.canvas = el('canvas', { class: 'timeline-canvas' });
    this.label = el('span', { class: 'timeline-label' });
    this.el = el('div', { class: 'timeline' }, this.canvas, this.label);
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
    this.range = r;
    this.draw();
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
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const n = Math.max(1, Math.floor(w / 3));
    if (!this.hist || this.hist.buckets.length !== n) this.hist = this.histogramFor(n);
    const hist = this.hist;
    ctx.fillStyle = '#f4f4f4';
    ctx.fillRect(0, 0, w, h);
    ctx.fillStyle = 'rgb(90,110,170)';
    const bw = w / n;
    for (let i = 0; i < n; i++) {
      const bh = hist.max > 0 ? (hist.buckets[i] / hist.max) * (h - 2) : 0;
      if (bh > 0) ctx.fillRect(i * bw, h - bh, Math.max(1, bw - 0.5), bh);
    }
    const [a, b] = this.span;
    const x = (t: number): number => ((t - a) / Math.max(1, b - a)) * w;
    const sel = this.drag !== null ? [Math.min(this.drag, this.dragTo), Math.max(this.drag, this.dragTo)] : this.range;
    if (sel) {
      ctx.fillStyle = 'rgba(255,170,0,0.35)';
      ctx.fillRect(x(sel[0]), 0, Math.max(1, x(sel[1]) - x(sel[0])), h);
      setText(this.label, `Selected ${formatSeconds(sel[0])} – ${formatSeconds(sel[1])} of ${formatSeconds(b)} (double-click to clear)`);
    } else {
      setText(this.label, `Samples over ${formatSeconds(b - a)}: drag to select a range`);
    }
  }
}
