// Time-series charts on one shared time axis (uPlot's model: one canvas per chart drawn
// from columnar arrays with min/max decimation per pixel column, and a cursor shared by
// every chart). The cursor, a window being dragged and the selected window are drawn on
// an overlay canvas, so moving the mouse never redraws the series.
//
// Mouse: hover shows the values of that second in each chart's legend; drag selects a
// window (widened to whole seconds), a click selects the second under it, a double-click
// clears; Ctrl+wheel zooms the time axis of every chart around the pointer and Shift+wheel
// pans it (Grafana's and uPlot's habits), which never changes the selected window.
// Keyboard (each chart is focusable): ←/→ move the cursor a second, Shift+←/→ extend a
// window from where it started, Enter selects it (or the cursor's second), Esc clears,
// Home/End jump to the ends, + and − zoom around the cursor, 0 shows the whole time.
import { el, setText } from '../../views/dom.js';
import { currentTheme, onThemeChange } from '../../render/theme.js';
import { ChartSpec, Line } from '../lib/charts.js';
import { columnMeans, decimate, lowerBound } from '../lib/decimate.js';
import { formatInstant, formatSeconds, formatSpan, formatTick, formatValue, formatWindow } from '../lib/format.js';
import { rowAt, rowStart, snap, typicalStep } from '../lib/intervals.js';
import { meanIn, overlapMean, secondsOn } from '../lib/figures.js';
import { Scale, linearScale, logScale, timeTicks } from '../lib/scale.js';
import { drawStepBoundaries } from './sweep.js';

export interface GroupOptions {
  /** Whether windows can be selected (the run report; not the comparison). */
  selectable: boolean;
  /** Interval edges windows snap to (the load's seconds). */
  edges: number[];
  /** The measurement window: shown as the plain background, the rest shaded. */
  measure: [number, number] | null;
  /** Called with a window chosen on a chart (already snapped), or null to clear. */
  onSelect?: (w: [number, number] | null) => void;
  /** A live region for announcements. */
  status: HTMLElement;
  /** What the time axis measures from. */
  axisLabel: string;
  /** Boundaries of a sweep's steps (the knee's end drawn stronger); see sweep.ts. */
  steps?: { at: number; knee: boolean }[];
  /** Called when the visible time range changes (zoom, pan, reset). */
  onView?: (zoomed: boolean) => void;
}

export const MARGIN_LEFT = 72;
export const MARGIN_RIGHT = 14;
const AXIS_H = 18;

/** Charts sharing a time axis, a cursor and a window. */
export class ChartGroup {
  readonly charts: TimeChart[] = [];
  /** Rows drawn against the same axis that are not charts (the marker row). */
  readonly rows: { draw(): void }[] = [];
  /** The visible time range (zoomed into `full`), ns since the origin. */
  range: [number, number];
  cursor: number | null = null;
  selection: [number, number] | null = null;
  /** A window being dragged or extended with the keyboard. */
  pending: [number, number] | null = null;
  private frame = 0;

  constructor(
    /** The time axis' whole extent, ns since the origin. */
    readonly full: [number, number],
    readonly opts: GroupOptions,
  ) {
    this.range = [full[0], full[1]];
    onThemeChange(() => this.redraw());
  }

  get zoomed(): boolean {
    return this.range[0] > this.full[0] || this.range[1] < this.full[1];
  }

  /** Shows [a, b] on every chart (clamped to the whole extent; at least 2 s). */
  setView(a: number, b: number): void {
    const [lo, hi] = this.full;
    const span = Math.min(hi - lo, Math.max(b - a, 2e9));
    const start = Math.min(Math.max(lo, a), hi - span);
    if (start === this.range[0] && start + span === this.range[1]) return;
    this.range = [start, start + span];
    this.redraw();
    this.overlays();
    this.opts.onView?.(this.zoomed);
  }

  /** Zooms by factor f (< 1: in) around time t. */
  zoomBy(f: number, t: number): void {
    const [a, b] = this.range;
    this.setView(t - (t - a) * f, t + (b - t) * f);
  }

  panBy(fraction: number): void {
    const [a, b] = this.range;
    const d = (b - a) * fraction;
    this.setView(a + d, b + d);
  }

  resetView(): void {
    this.setView(this.full[0], this.full[1]);
  }

  add(spec: ChartSpec): TimeChart {
    const c = new TimeChart(spec, this);
    this.charts.push(c);
    return c;
  }

  /** Pixel x of time t in a chart `width` px wide. */
  x(t: number, width: number): number {
    const [a, b] = this.range;
    return MARGIN_LEFT + ((t - a) / Math.max(1, b - a)) * Math.max(1, width - MARGIN_LEFT - MARGIN_RIGHT);
  }

  /** Time at pixel x, clamped to the axis. */
  t(x: number, width: number): number {
    const [a, b] = this.range;
    const f = (x - MARGIN_LEFT) / Math.max(1, width - MARGIN_LEFT - MARGIN_RIGHT);
    return a + Math.min(1, Math.max(0, f)) * (b - a);
  }

  setCursor(t: number | null): void {
    this.cursor = t;
    this.overlays();
  }

  setPending(w: [number, number] | null): void {
    this.pending = w;
    this.overlays();
  }

  /** Shows a window (from the page, the URL or a viewer); does not call onSelect. */
  setSelection(w: [number, number] | null): void {
    this.selection = w;
    this.pending = null;
    this.overlays();
  }

  /** `w` widened to whole intervals of the series (ns since the origin). */
  snap(w: [number, number]): [number, number] {
    return snap(this.opts.edges, w[0], w[1]);
  }

  /** A window chosen on a chart. */
  commit(w: [number, number] | null): void {
    const s = w ? this.snap(w) : null;
    this.setSelection(s);
    setText(this.opts.status, s ? `Window ${formatWindow(s)} selected` : 'Window cleared: the whole run');
    this.opts.onSelect?.(s);
  }

  /** Redraws overlays and legends on the next frame (at most once per frame). */
  overlays(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      for (const c of this.charts) c.drawOverlay();
    });
  }

  redraw(): void {
    for (const c of this.charts) c.draw();
    for (const r of this.rows) r.draw();
  }

  /** Draws everything now (first paint, benchmarks). */
  drawNow(): void {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    for (const c of this.charts) {
      c.draw();
      c.drawOverlay();
    }
    for (const r of this.rows) r.draw();
  }
}

/** One chart: title, legend with the values at the cursor, base and overlay canvases. */
export class TimeChart {
  readonly el: HTMLElement;
  readonly base: HTMLCanvasElement;
  readonly overlay: HTMLCanvasElement;
  private readonly legend: HTMLElement;
  private readonly caption: HTMLElement;
  private readonly values: HTMLElement[] = [];
  private readonly items: HTMLElement[] = [];
  /** The series the legend hid (indices into the spec's lines). */
  readonly hidden = new Set<number>();
  private readonly steps: number[];
  private scale: Scale;
  /** Cumulative sums of a stacked chart's layers. */
  private stack: number[][] | null = null;
  private width = 0;
  private drag: { x: number; t: number } | null = null;
  private anchor: number | null = null;
  drawCount = 0;
  lastDrawMs = 0;

  constructor(
    readonly spec: ChartSpec,
    readonly group: ChartGroup,
  ) {
    this.steps = spec.lines.map((l) => typicalStep(l.time));
    if (spec.kind === 'stacked') this.stack = cumulative(spec.lines);
    this.scale = this.yScale();
    const toggles = spec.kind !== 'spans' && spec.lines.length > 1;
    const titleId = `r-chart-${spec.id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    this.caption = el('span', { class: 'r-caption', 'data-ctrl': 'caption' });
    this.legend = el('div', { class: 'r-legend' });
    if (spec.kind !== 'spans' && spec.lines.length > 1) {
      this.legend.setAttribute('role', 'group');
      this.legend.setAttribute('aria-label', 'Series: a click shows one alone (again: every series), Ctrl+click hides or shows one');
    }
    spec.lines.forEach((l, i) => {
      const v = el('span', { class: 'r-value', 'data-value': '' });
      this.values.push(v);
      // Grafana's legend: a click shows this series alone (again: all of them), Ctrl or
      // Shift with it hides or shows this one.
      const item = el(
        toggles ? 'button' : 'span',
        { class: 'r-item', 'data-column': l.column, 'data-table': l.table, title: l.hint ?? undefined, ...(toggles ? { type: 'button', 'aria-pressed': 'true' } : {}) },
        el('span', { class: `r-swatch${l.dash ? ' dashed' : ''}`, style: `--c:${l.color}` }),
        el('span', { class: 'r-label', text: l.label }),
        v,
      );
      if (toggles) item.addEventListener('click', (e) => this.pick(i, (e as MouseEvent).ctrlKey || (e as MouseEvent).metaKey || (e as MouseEvent).shiftKey));
      this.items.push(item);
      this.legend.append(item);
    });
    this.base = el('canvas', { class: 'r-base', 'aria-hidden': 'true' });
    const how = group.opts.selectable
      ? '; arrow keys move the cursor a second, Shift with arrows extends a window, Enter selects it, Escape clears, plus and minus zoom the time axis, 0 shows the whole time'
      : '; arrow keys move the cursor, plus and minus zoom the time axis, 0 shows the whole time';
    this.overlay = el('canvas', {
      class: 'r-overlay',
      tabindex: 0,
      role: 'application',
      'aria-roledescription': 'chart',
      'aria-label': `${spec.title}${how}`,
    });
    const plot = el('div', { class: 'r-plot', style: `height:${spec.height + AXIS_H}px` }, this.base, this.overlay);
    this.el = el(
      'section',
      { class: 'r-chart', 'data-chart': spec.id, 'aria-labelledby': titleId },
      el('div', { class: 'r-chart-head' }, el('h3', { class: 'r-chart-title', id: titleId, title: spec.hint ?? undefined, text: spec.title }), this.caption),
      this.legend,
      plot,
      spec.note ? el('div', { class: 'r-note', text: spec.note }) : null,
    );
    new ResizeObserver(() => {
      const w = Math.floor(plot.clientWidth);
      if (w !== this.width) {
        this.width = w;
        this.draw();
        this.drawOverlay();
      }
    }).observe(plot);
    this.listen();
  }

  /**
   * The legend's pick: series `i` alone (or every series again, when it was alone), or,
   * toggling, `i` hidden or shown; the axis follows what is shown.
   */
  pick(i: number, toggle: boolean): void {
    const n = this.spec.lines.length;
    if (toggle) {
      if (this.hidden.has(i)) this.hidden.delete(i);
      else if (this.hidden.size < n - 1) this.hidden.add(i);
    } else {
      const alone = this.hidden.size === n - 1 && !this.hidden.has(i);
      this.hidden.clear();
      if (!alone) for (let k = 0; k < n; k++) if (k !== i) this.hidden.add(k);
    }
    this.items.forEach((it, k) => {
      it.setAttribute('aria-pressed', String(!this.hidden.has(k)));
      it.classList.toggle('r-off', this.hidden.has(k));
    });
    if (this.spec.kind === 'stacked') this.stack = cumulative(this.shown());
    this.scale = this.yScale();
    this.draw();
    this.drawOverlay();
  }

  /** The series drawn: those the legend did not hide. */
  shown(): Line[] {
    return this.spec.lines.filter((_, k) => !this.hidden.has(k));
  }

  private yScale(): Scale {
    const s = this.spec;
    if (s.kind === 'spans') return linearScale(0, 1);
    let lo = Infinity;
    let hi = -Infinity;
    const rows = this.stack ? [this.stack[this.stack.length - 1] ?? []] : this.shown().map((l) => l.values);
    for (const vs of rows) {
      for (const v of vs) {
        if (v === null || v === undefined || !Number.isFinite(v)) continue;
        if (s.scale === 'log' && v <= 0) continue;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    }
    if (s.scale === 'log') return logScale(lo === Infinity ? 1 : lo, hi === -Infinity ? 10 : hi);
    // About one tick per 30 px of height.
    const ticks = Math.max(2, Math.floor(s.height / 30));
    const bytes = s.unit === 'bytes';
    if (s.yMax !== undefined && (hi <= s.yMax || hi === -Infinity)) return linearScale(0, s.yMax, ticks, 0, bytes);
    return linearScale(0, hi === -Infinity ? 1 : hi * 1.04, ticks, 0, bytes);
  }

  private listen(): void {
    const o = this.overlay;
    const g = this.group;
    const timeAt = (e: MouseEvent): number => g.t(e.offsetX, this.width);
    o.addEventListener('mousemove', (e) => {
      const t = timeAt(e);
      if (this.drag) {
        g.pending = [Math.min(this.drag.t, t), Math.max(this.drag.t, t)];
      }
      g.setCursor(t);
    });
    o.addEventListener('mouseleave', () => {
      if (!this.drag) g.setCursor(null);
    });
    o.addEventListener('mousedown', (e) => {
      if (e.button !== 0 || !g.opts.selectable) return;
      e.preventDefault();
      o.focus({ preventScroll: true });
      this.drag = { x: e.clientX, t: timeAt(e) };
    });
    window.addEventListener('mouseup', (e) => {
      const d = this.drag;
      if (!d) return;
      this.drag = null;
      const rect = o.getBoundingClientRect();
      const t = g.t(e.clientX - rect.left, this.width);
      if (Math.abs(e.clientX - d.x) < 3) g.commit([t, t]);
      else g.commit([Math.min(d.t, t), Math.max(d.t, t)]);
    });
    o.addEventListener('dblclick', () => {
      if (g.opts.selectable) g.commit(null);
    });
    // Ctrl+wheel (a pinch) zooms the time axis around the pointer, Shift+wheel pans it; a
    // plain wheel scrolls the page.
    o.addEventListener(
      'wheel',
      (e) => {
        if (e.ctrlKey || e.metaKey) {
          e.preventDefault();
          g.zoomBy(Math.exp(e.deltaY * 0.002), timeAt(e));
        } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
          e.preventDefault();
          const w = Math.max(1, this.width - MARGIN_LEFT - MARGIN_RIGHT);
          g.panBy((e.shiftKey ? e.deltaY : e.deltaX) / w);
        }
      },
      { passive: false },
    );
    o.addEventListener('focus', () => {
      if (g.cursor === null) g.setCursor(this.center(g.opts.measure ? g.opts.measure[0] + 1 : g.range[0] + 1));
    });
    o.addEventListener('blur', () => {
      this.anchor = null;
    });
    o.addEventListener('keydown', (e) => this.onKey(e));
  }

  /** The middle of the interval holding t (on this chart's first series). */
  private center(t: number): number {
    const l = this.spec.lines[0];
    if (!l) return t;
    const i = rowAt(l.time, t, this.steps[0]);
    if (i < 0) return t;
    return (rowStart(l.time, i, this.steps[0]) + l.time[i]) / 2;
  }

  private onKey(e: KeyboardEvent): void {
    const g = this.group;
    const step = this.steps[0] ?? 1e9;
    const at = g.cursor ?? g.range[0] + step / 2;
    const clamp = (t: number): number => Math.min(g.range[1] - 1, Math.max(g.range[0] + 1, t));
    let next: number | null = null;
    switch (e.key) {
      case 'ArrowLeft':
        next = clamp(at - step);
        break;
      case 'ArrowRight':
        next = clamp(at + step);
        break;
      case 'Home':
        next = clamp(g.range[0] + step / 2);
        break;
      case 'End':
        next = clamp(g.range[1] - step / 2);
        break;
      case 'Enter':
        if (!g.opts.selectable) return;
        e.preventDefault();
        g.commit(g.pending ?? [at, at]);
        this.anchor = null;
        return;
      case 'Escape':
        if (!g.opts.selectable) return;
        e.preventDefault();
        this.anchor = null;
        g.commit(null);
        return;
      case '+':
      case '=':
        e.preventDefault();
        g.zoomBy(0.5, at);
        return;
      case '-':
      case '_':
        e.preventDefault();
        g.zoomBy(2, at);
        return;
      case '0':
        e.preventDefault();
        g.resetView();
        return;
      default:
        return;
    }
    e.preventDefault();
    next = this.center(next);
    if (e.shiftKey && g.opts.selectable) {
      this.anchor ??= at;
      g.pending = [Math.min(this.anchor, next), Math.max(this.anchor, next)];
    } else {
      this.anchor = null;
      g.pending = null;
    }
    g.setCursor(next);
    setText(g.opts.status, `${this.caption.textContent ?? ''}: ${this.legendText()}`);
  }

  /** The legend as one line (announcements). */
  private legendText(): string {
    return this.spec.lines.map((l, i) => `${l.label} ${this.values[i].textContent ?? ''}`).join(', ');
  }

  /** The window the legend summarises when the cursor is away. */
  private summaryWindow(): [number, number] | null {
    return this.group.selection ?? this.group.opts.measure;
  }

  draw(): void {
    const t0 = performance.now();
    const w = this.width;
    const h = this.spec.height + AXIS_H;
    if (w <= 0) return;
    const ctx = prepare(this.base, w, h);
    if (!ctx) return;
    const theme = currentTheme();
    const g = this.group;
    const s = this.spec;
    const plotH = s.height;
    const left = MARGIN_LEFT;
    const right = w - MARGIN_RIGHT;
    ctx.fillStyle = theme.background;
    ctx.fillRect(0, 0, w, h);
    // Outside the measurement (warm-up, the load's last seconds): shaded.
    const m = g.opts.measure;
    if (m) {
      ctx.fillStyle = theme.dark ? 'rgba(255,255,255,0.05)' : 'rgba(0,0,0,0.045)';
      const a = Math.max(left, g.x(m[0], w));
      const b = Math.min(right, g.x(m[1], w));
      if (a > left) ctx.fillRect(left, 0, a - left, plotH);
      if (b < right) ctx.fillRect(b, 0, right - b, plotH);
    }
    drawStepBoundaries(ctx, g.opts.steps, (t) => g.x(t, w), left, right, plotH, theme.dark);
    const y = (v: number): number => {
      const f = this.scale.frac(v);
      return Number.isFinite(f) ? 1 + (1 - f) * (plotH - 2) : plotH + 10;
    };
    // Grid and the value axis.
    ctx.font = '11px Verdana, "DejaVu Sans", sans-serif';
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'right';
    ctx.lineWidth = 1;
    if (s.kind !== 'spans') {
      for (const v of this.scale.ticks) {
        const py = Math.round(y(v)) + 0.5;
        if (py < 0 || py > plotH + 1) continue;
        ctx.strokeStyle = theme.grid;
        ctx.beginPath();
        ctx.moveTo(left, py);
        ctx.lineTo(right, py);
        ctx.stroke();
        ctx.fillStyle = theme.muted;
        ctx.fillText(formatTick(v, s.unit), left - 6, Math.min(plotH - 5, Math.max(6, py)));
      }
    }
    // The time axis.
    const { step, ticks } = timeTicks(g.range[0], g.range[1], Math.max(2, Math.floor((right - left) / 90)));
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    for (const t of ticks) {
      const px = Math.round(g.x(t, w)) + 0.5;
      ctx.strokeStyle = theme.grid;
      ctx.beginPath();
      ctx.moveTo(px, 0);
      ctx.lineTo(px, plotH);
      ctx.stroke();
      ctx.fillStyle = theme.muted;
      ctx.fillText(formatSeconds(t, step), px, plotH + 3);
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, 0, right - left, plotH);
    ctx.clip();
    const x = (t: number): number => g.x(t, w);
    const [a, b] = g.range;
    if (s.kind === 'spans') this.drawSpans(ctx, x, plotH, theme.text);
    else if (this.stack) this.drawStacked(ctx, x, y, a, b);
    else {
      for (const l of this.shown()) drawLine(ctx, l, decimate(l.time, l.values, a, b, x, y));
    }
    ctx.restore();
    ctx.strokeStyle = theme.grid;
    ctx.strokeRect(left + 0.5, 0.5, right - left - 1, plotH);
    this.drawCount++;
    this.lastDrawMs = performance.now() - t0;
  }

  private drawStacked(ctx: CanvasRenderingContext2D, x: (t: number) => number, y: (v: number) => number, a: number, b: number): void {
    const st = this.stack!;
    const lines = this.shown();
    const time = lines[0]?.time ?? [];
    const i0 = Math.max(0, lowerBound(time, a) - 1);
    const i1 = Math.min(time.length, lowerBound(time, b) + 1);
    if ((i1 - i0) * 3 < this.width) {
      // Few intervals: each value drawn as the step it stands for, [start, end).
      const step = this.steps[0];
      let prev: number[] | null = null;
      for (let k = 0; k < st.length; k++) {
        ctx.beginPath();
        for (let i = i0; i < i1; i++) {
          const xs = x(rowStart(time, i, step));
          const xe = x(time[i]);
          if (i === i0) ctx.moveTo(xs, y(st[k][i]));
          else ctx.lineTo(xs, y(st[k][i]));
          ctx.lineTo(xe, y(st[k][i]));
        }
        for (let i = i1 - 1; i >= i0; i--) {
          const base = prev ? prev[i] : 0;
          ctx.lineTo(x(time[i]), y(base));
          ctx.lineTo(x(rowStart(time, i, step)), y(base));
        }
        ctx.closePath();
        ctx.fillStyle = lines[k].color;
        ctx.fill();
        prev = st[k];
      }
      return;
    }
    let below: number[] | null = null;
    for (let k = 0; k < st.length; k++) {
      const top = columnMeans(lines[k].time, st[k], a, b, x, y);
      const bottom = below ?? top.map((v, i) => (i % 2 === 1 ? y(0) : v));
      ctx.beginPath();
      for (let i = 0; i < top.length; i += 2) {
        if (i === 0) ctx.moveTo(top[i], top[i + 1]);
        else ctx.lineTo(top[i], top[i + 1]);
      }
      for (let i = bottom.length - 2; i >= 0; i -= 2) ctx.lineTo(bottom[i], bottom[i + 1]);
      ctx.closePath();
      ctx.fillStyle = lines[k].color;
      ctx.fill();
      below = top;
    }
  }

  private drawSpans(ctx: CanvasRenderingContext2D, x: (t: number) => number, plotH: number, text: string): void {
    const n = this.spec.lines.length;
    const rowH = (plotH - 2) / Math.max(1, n);
    this.spec.lines.forEach((l, k) => {
      const top = 1 + k * rowH;
      ctx.fillStyle = l.color;
      const step = this.steps[k];
      for (let i = 0; i < l.time.length; i++) {
        const v = l.values[i];
        if (!v) continue;
        const a = x(rowStart(l.time, i, step));
        const b = x(l.time[i]);
        ctx.fillRect(a, top + 1, Math.max(1, b - a), rowH - 2);
      }
      ctx.fillStyle = text;
      ctx.textAlign = 'left';
      ctx.textBaseline = 'middle';
      ctx.fillText(l.label, MARGIN_LEFT + 4, top + rowH / 2);
    });
  }

  drawOverlay(): void {
    const w = this.width;
    const h = this.spec.height + AXIS_H;
    if (w <= 0) return;
    const ctx = prepare(this.overlay, w, h);
    if (!ctx) return;
    const theme = currentTheme();
    const g = this.group;
    ctx.clearRect(0, 0, w, h);
    const plotH = this.spec.height;
    const band = (win: [number, number], fill: string): void => {
      const a = Math.max(MARGIN_LEFT, g.x(win[0], w));
      const b = Math.min(w - MARGIN_RIGHT, g.x(win[1], w));
      if (b > a - 1) {
        ctx.fillStyle = fill;
        ctx.fillRect(a, 0, Math.max(1, b - a), plotH);
      }
    };
    if (g.selection) band(g.selection, theme.selection);
    if (g.pending) band(g.pending, theme.dark ? 'rgba(127,176,255,0.25)' : 'rgba(26,79,208,0.18)');
    if (g.cursor !== null) {
      const px = Math.round(g.x(g.cursor, w)) + 0.5;
      ctx.strokeStyle = theme.text;
      ctx.setLineDash([3, 3]);
      ctx.beginPath();
      ctx.moveTo(px, 0);
      ctx.lineTo(px, plotH);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    this.updateLegend();
  }

  /** The legend: values of the cursor's second, or means over the window. */
  private updateLegend(): void {
    const g = this.group;
    const s = this.spec;
    const c = g.cursor;
    if (c !== null) {
      let caption = '';
      s.lines.forEach((l, k) => {
        const i = rowAt(l.time, c, this.steps[k]);
        const v = i >= 0 ? l.values[i] : null;
        if (!caption && i >= 0) caption = formatSpan(rowStart(l.time, i, this.steps[k]), l.time[i]);
        this.setValue(k, v ?? null, s.kind === 'spans' ? (v ? 'yes' : 'no') : formatValue(v, s.unit));
      });
      setText(this.caption, caption ? `at ${caption}` : `at ${formatInstant(c)}: no values`);
      return;
    }
    const w = this.summaryWindow();
    if (!w) {
      setText(this.caption, '');
      s.lines.forEach((_, k) => this.setValue(k, null, ''));
      return;
    }
    const where = `${g.selection ? 'the window' : 'the measurement'} (${formatWindow(w)})`;
    if (s.summary) {
      const sum = s.summary;
      s.lines.forEach((_, k) => {
        const r = sum.value(k, w);
        this.setValue(k, r ? r.value : null, r ? r.text || formatValue(r.value, s.unit) : '–');
      });
      setText(this.caption, `${sum.caption}: ${where}`);
      return;
    }
    s.lines.forEach((l, k) => {
      if (s.kind === 'spans') {
        const n = secondsOn(l.time, l.values, w);
        this.setValue(k, n, `${n} s`);
      } else {
        const m = l.exact ? overlapMean(l.time, l.values, w) : meanIn(l.time, l.values, w);
        this.setValue(k, m, formatValue(m, s.unit));
      }
    });
    setText(this.caption, `${s.kind === 'spans' ? 'seconds in' : s.unit === 'us' ? 'mean of the per-second values (this run kept no per-second histograms) over' : 'mean of'} ${where}`);
  }

  private setValue(k: number, v: number | null, text: string): void {
    const e = this.values[k];
    setText(e, text);
    const raw = v === null || v === undefined ? '' : String(v);
    if (e.dataset.value !== raw) e.dataset.value = raw;
  }
}

function prepare(c: HTMLCanvasElement, w: number, h: number): CanvasRenderingContext2D | null {
  const dpr = window.devicePixelRatio || 1;
  if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
    c.style.width = `${w}px`;
    c.style.height = `${h}px`;
  }
  const ctx = c.getContext('2d');
  ctx?.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

function drawLine(ctx: CanvasRenderingContext2D, l: Line, pts: number[]): void {
  ctx.strokeStyle = l.color;
  ctx.lineWidth = l.width ?? 1.5;
  ctx.lineJoin = 'round';
  ctx.setLineDash(l.dash ? [5, 3] : []);
  ctx.beginPath();
  let pen = false;
  for (let i = 0; i < pts.length; i += 2) {
    const px = pts[i];
    const py = pts[i + 1];
    if (Number.isNaN(px)) {
      pen = false;
      continue;
    }
    if (pen) ctx.lineTo(px, py);
    else {
      ctx.moveTo(px, py);
      // A lone point still shows.
      ctx.lineTo(px + 0.01, py);
      pen = true;
    }
  }
  ctx.stroke();
  ctx.setLineDash([]);
}

/** Running sums of stacked layers (missing values count as 0). */
export function cumulative(lines: Line[]): number[][] {
  const out: number[][] = [];
  let prev: number[] | null = null;
  for (const l of lines) {
    const n = l.values.length;
    const cur = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      const v = l.values[i];
      cur[i] = (prev ? prev[i] ?? 0 : 0) + (v !== null && v !== undefined && Number.isFinite(v) ? v : 0);
    }
    out.push(cur);
    prev = cur;
  }
  return out;
}
