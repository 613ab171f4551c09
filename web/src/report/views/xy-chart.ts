// Charts of one quantity against another: the latency-vs-rate and throughput-vs-
// concurrency curves of a sweep (a click on a step selects its window), and latency
// percentile distributions (latency on a log scale against the "nines" of percentile,
// as HdrHistogram's plots and the RabbitMQ performance article draw them).
import { el, setText } from '../../views/dom.js';
import { currentTheme, onThemeChange } from '../../render/theme.js';
import { formatTick, formatValue } from '../lib/format.js';
import { Scale, linearScale, logScale, nines, ninesTicks } from '../lib/scale.js';

export interface XYSeries {
  label: string;
  color: string;
  dash?: boolean;
  /** (x, y) in data units; y may be null (not measured at that x). */
  points: [number, number | null][];
  /** Which value axis (default left). */
  axis?: 'left' | 'right';
}

export interface Axis {
  unit: string;
  scale: 'linear' | 'log';
  label: string;
}

export interface XYSpec {
  id: string;
  title: string;
  /** `nines`: x is a percentile (0–100) drawn at -log10(1 - p). */
  x: { kind: 'linear' | 'log' | 'nines'; label: string; format: (v: number) => string };
  left: Axis;
  right?: Axis;
  series: XYSeries[];
  height: number;
  /** Called with the index of the picked x value (sweeps: the step). */
  onPick?: (index: number) => void;
  /** Names of the x values (steps), for the legend and announcements. */
  names?: string[];
}

const M = { left: 72, right: 72, top: 8, bottom: 32 };

export class XYChart {
  readonly el: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  private readonly caption: HTMLElement;
  private readonly title: HTMLElement;
  private readonly legend: HTMLElement;
  private values: HTMLElement[] = [];
  private xs: number[] = [];
  private width = 0;
  private hover = -1;
  selected = -1;
  private ly: Scale;
  private ry: Scale | null;

  constructor(readonly spec: XYSpec) {
    this.ly = this.ry = null as unknown as Scale;
    const titleId = `r-xy-${spec.id}`;
    this.caption = el('span', { class: 'r-caption' });
    this.legend = el('div', { class: 'r-legend' });
    this.title = el('h3', { class: 'r-chart-title', id: titleId, text: spec.title });
    this.setSeries(spec.series);
    this.canvas = el('canvas', {
      class: 'r-xy-canvas',
      tabindex: 0,
      role: 'application',
      'aria-roledescription': 'chart',
      'aria-label': `${spec.title}; arrow keys move between points${spec.onPick ? ', Enter selects that step’s window' : ''}`,
    });
    const plot = el('div', { class: 'r-plot', style: `height:${spec.height}px` }, this.canvas);
    this.el = el(
      'section',
      { class: 'r-chart r-xy', 'data-chart': spec.id, 'aria-labelledby': titleId },
      el('div', { class: 'r-chart-head' }, this.title, this.caption),
      this.legend,
      plot,
    );
    new ResizeObserver(() => {
      const w = Math.floor(plot.clientWidth);
      if (w !== this.width) {
        this.width = w;
        this.draw();
      }
    }).observe(plot);
    onThemeChange(() => this.draw());
    this.canvas.addEventListener('mousemove', (e) => this.setHover(this.nearest(e.offsetX)));
    this.canvas.addEventListener('mouseleave', () => this.setHover(-1));
    this.canvas.addEventListener('click', (e) => {
      const i = this.nearest(e.offsetX);
      if (i >= 0 && spec.onPick) this.pick(i);
    });
    this.canvas.addEventListener('keydown', (e) => {
      const n = this.xs.length;
      if (!n) return;
      if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
        e.preventDefault();
        const cur = this.hover < 0 ? (e.key === 'ArrowRight' ? -1 : n) : this.hover;
        this.setHover(Math.min(n - 1, Math.max(0, cur + (e.key === 'ArrowRight' ? 1 : -1))));
      } else if (e.key === 'Enter' && spec.onPick && this.hover >= 0) {
        e.preventDefault();
        this.pick(this.hover);
      }
    });
  }

  /** Shows other series (a distribution of another window), and another title. */
  setSeries(series: XYSeries[], title = this.spec.title): void {
    this.spec.series = series;
    this.spec.title = title;
    setText(this.title, title);
    const all = new Set<number>();
    for (const s of series) for (const [x] of s.points) all.add(x);
    this.xs = [...all].sort((a, b) => a - b);
    this.ly = this.yScale('left');
    this.ry = this.spec.right ? this.yScale('right') : null;
    this.values = [];
    this.legend.replaceChildren(
      ...series.map((s) => {
        const v = el('span', { class: 'r-value', 'data-value': '' });
        this.values.push(v);
        return el('span', { class: 'r-item', 'data-series': s.label }, el('span', { class: `r-swatch${s.dash ? ' dashed' : ''}`, style: `--c:${s.color}` }), el('span', { class: 'r-label', text: s.label }), v);
      }),
    );
    this.hover = -1;
    setText(this.caption, '');
    this.draw();
  }

  /** Page x of the i-th x value (tests). */
  xOf(i: number): number {
    return this.px(this.xs[i]);
  }

  get count(): number {
    return this.xs.length;
  }

  private pick(i: number): void {
    this.selected = i;
    this.draw();
    this.spec.onPick?.(i);
  }

  private xFrac(v: number): number {
    const s = this.spec.x;
    const lo = this.xs[0] ?? 0;
    const hi = this.xs[this.xs.length - 1] ?? 1;
    if (s.kind === 'nines') return nines(v) / Math.max(1, Math.ceil(nines(hi)));
    if (s.kind === 'log' && lo > 0) {
      const a = Math.log10(lo);
      const b = Math.log10(hi);
      return b > a ? (Math.log10(v) - a) / (b - a) : 0.5;
    }
    return hi > lo ? (v - lo) / (hi - lo) : 0.5;
  }

  private px(v: number): number {
    const inner = Math.max(1, this.width - M.left - M.right);
    const pad = this.spec.x.kind === 'nines' ? 0 : 0.04;
    return M.left + (pad + this.xFrac(v) * (1 - 2 * pad)) * inner;
  }

  private nearest(x: number): number {
    let best = -1;
    let d = Infinity;
    this.xs.forEach((v, i) => {
      const dd = Math.abs(this.px(v) - x);
      if (dd < d) {
        d = dd;
        best = i;
      }
    });
    return best;
  }

  private yScale(axis: 'left' | 'right'): Scale {
    const a = axis === 'left' ? this.spec.left : this.spec.right!;
    let lo = Infinity;
    let hi = -Infinity;
    for (const s of this.spec.series) {
      if ((s.axis ?? 'left') !== axis) continue;
      for (const [, y] of s.points) {
        if (y === null || !Number.isFinite(y) || (a.scale === 'log' && y <= 0)) continue;
        lo = Math.min(lo, y);
        hi = Math.max(hi, y);
      }
    }
    if (a.scale === 'log') return logScale(lo === Infinity ? 1 : lo, hi === -Infinity ? 10 : hi);
    return linearScale(0, hi === -Infinity ? 1 : hi * 1.05);
  }

  private setHover(i: number): void {
    if (i === this.hover) return;
    this.hover = i;
    this.draw();
    if (i < 0) {
      setText(this.caption, '');
      this.values.forEach((v) => {
        setText(v, '');
        v.dataset.value = '';
      });
      return;
    }
    const x = this.xs[i];
    const name = this.spec.names?.[i];
    setText(this.caption, name ? `${name}` : `at ${this.spec.x.format(x)}`);
    this.spec.series.forEach((s, k) => {
      // The series' point nearest that x (distributions have their own percentiles).
      let p: [number, number | null] | undefined;
      let d = Infinity;
      for (const q of s.points) {
        const dd = Math.abs(this.px(q[0]) - this.px(x));
        if (dd < d) {
          d = dd;
          p = q;
        }
      }
      const unit = (s.axis === 'right' ? this.spec.right! : this.spec.left).unit;
      setText(this.values[k], p && p[1] !== null ? formatValue(p[1], unit) : '–');
      this.values[k].dataset.value = p && p[1] !== null ? String(p[1]) : '';
    });
  }

  draw(): void {
    const w = this.width;
    const h = this.spec.height;
    if (w <= 0) return;
    const dpr = window.devicePixelRatio || 1;
    const c = this.canvas;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
      c.style.width = `${w}px`;
      c.style.height = `${h}px`;
    }
    const ctx = c.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const theme = currentTheme();
    ctx.fillStyle = theme.background;
    ctx.fillRect(0, 0, w, h);
    const top = M.top;
    const bottom = h - M.bottom;
    const left = M.left;
    const right = w - M.right;
    const yOf = (s: Scale) => (v: number): number => {
      const f = s.frac(v);
      return Number.isFinite(f) ? bottom - f * (bottom - top) : bottom + 20;
    };
    ctx.font = '11px Verdana, "DejaVu Sans", sans-serif';
    ctx.lineWidth = 1;
    // Value axes.
    const axis = (s: Scale, a: Axis, side: 'left' | 'right'): void => {
      const y = yOf(s);
      ctx.textAlign = side === 'left' ? 'right' : 'left';
      ctx.textBaseline = 'middle';
      for (const v of s.ticks) {
        const py = Math.round(y(v)) + 0.5;
        if (side === 'left') {
          ctx.strokeStyle = theme.grid;
          ctx.beginPath();
          ctx.moveTo(left, py);
          ctx.lineTo(right, py);
          ctx.stroke();
        }
        ctx.fillStyle = theme.muted;
        ctx.fillText(formatTick(v, a.unit), side === 'left' ? left - 6 : right + 6, py);
      }
    };
    axis(this.ly, this.spec.left, 'left');
    if (this.ry && this.spec.right) axis(this.ry, this.spec.right, 'right');
    // The x axis.
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    const xTicks: { at: number; label: string }[] =
      this.spec.x.kind === 'nines'
        ? ninesTicks(Math.ceil(nines(this.xs[this.xs.length - 1] ?? 99))).map((t) => ({ at: 100 * (1 - Math.pow(10, -t.at)), label: t.label }))
        : this.xs.map((v) => ({ at: v, label: this.spec.x.format(v) }));
    for (const t of xTicks) {
      const px = Math.round(this.px(t.at)) + 0.5;
      ctx.strokeStyle = theme.grid;
      ctx.beginPath();
      ctx.moveTo(px, top);
      ctx.lineTo(px, bottom);
      ctx.stroke();
      ctx.fillStyle = theme.muted;
      ctx.fillText(t.label, px, bottom + 4);
    }
    ctx.fillText(this.spec.x.label, (left + right) / 2, bottom + 17);
    if (this.selected >= 0) {
      const px = this.px(this.xs[this.selected]);
      ctx.fillStyle = theme.selection;
      ctx.fillRect(px - 6, top, 12, bottom - top);
    }
    // Series.
    for (const s of this.spec.series) {
      const y = yOf(s.axis === 'right' && this.ry ? this.ry : this.ly);
      ctx.strokeStyle = s.color;
      ctx.fillStyle = s.color;
      ctx.lineWidth = 1.75;
      ctx.setLineDash(s.dash ? [5, 3] : []);
      ctx.beginPath();
      let pen = false;
      for (const [x, v] of s.points) {
        if (v === null || !Number.isFinite(v)) {
          pen = false;
          continue;
        }
        const px = this.px(x);
        const py = y(v);
        if (pen) ctx.lineTo(px, py);
        else ctx.moveTo(px, py);
        pen = true;
      }
      ctx.stroke();
      ctx.setLineDash([]);
      if (this.spec.x.kind !== 'nines') {
        for (const [x, v] of s.points) {
          if (v === null || !Number.isFinite(v)) continue;
          ctx.beginPath();
          ctx.arc(this.px(x), y(v), 3, 0, 2 * Math.PI);
          ctx.fill();
        }
      }
    }
    if (this.hover >= 0) {
      const px = Math.round(this.px(this.xs[this.hover])) + 0.5;
      ctx.strokeStyle = theme.text;
      ctx.setLineDash([3, 3]);
      ctx.beginPath();
      ctx.moveTo(px, top);
      ctx.lineTo(px, bottom);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    ctx.strokeStyle = theme.grid;
    ctx.strokeRect(left + 0.5, top + 0.5, right - left - 1, bottom - top);
  }
}

/** Distributions as XY series: percentile → latency (µs). */
export function percentileSeries(d: { points: [number, number][] }): [number, number | null][] {
  return d.points.map(([p, v]) => [p, v]);
}
