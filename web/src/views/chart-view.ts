// The flame chart pane: time on the x axis, one lane per thread. Drag pans, Ctrl+wheel
// (or +/-) zooms around the pointer, wheel scrolls the lanes. It opens on the page's time
// window (shading the time outside it once zoomed out); zooming and panning move only its
// own view, never the window the other views and the URL show. Keyboard:
// arrows move between boxes, Enter zooms to the selected box, Shift+arrows pan.
import { FlameChart, boxAt } from '../lib/flamechart.js';
import { ChartBox, ChartRenderer, ChartScene } from '../render/chart-renderer.js';
import { currentTheme } from '../render/theme.js';
import { el } from './dom.js';
import { DragPan } from './drag.js';

export interface ChartViewHandlers {
  hover(b: ChartBox | null, ev: MouseEvent | null): void;
  /** The user moved the visible range (pan, zoom). */
  range(t0: number, t1: number): void;
  /** Actions of a box's frame, at page position (x, y). */
  context(b: ChartBox, x: number, y: number): void;
  select(b: ChartBox | null): void;
}

export class ChartView {
  readonly el: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  readonly renderer: ChartRenderer;
  scene: ChartScene | null = null;
  drawCount = 0;
  lastMs = 0;
  private pending = 0;
  private readonly drag: DragPan;
  /** The whole time span (zoom limits). */
  private full: [number, number] = [0, 1];

  constructor(private readonly h: ChartViewHandlers) {
    this.canvas = el('canvas', {
      class: 'flame-canvas chart-canvas',
      tabindex: 0,
      role: 'application',
      'aria-roledescription': 'flame chart',
      'aria-label': 'Flame chart: each thread\'s stacks in time order. Arrow keys move between boxes, Enter zooms to a box, Shift+arrows pan, plus and minus zoom, Escape shows the whole time.',
    });
    this.el = el('div', { class: 'flame chart' }, this.canvas);
    this.renderer = new ChartRenderer(this.canvas);
    new ResizeObserver(() => this.requestDraw()).observe(this.el);
    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.drag = new DragPan(this.canvas, {
      start: () => this.scene && { a0: this.scene.t0, a1: this.scene.t1, scrollY: this.scene.scrollY },
      pan: (t0, t1, scrollY, dy) => {
        if (!this.scene) return;
        this.scene.scrollY = scrollY - dy;
        this.setRange(t0, t1);
      },
      click: (e) => {
        if (this.scene) this.setSelected(this.renderer.hit(this.scene, e.offsetX, e.offsetY), false);
      },
      width: () => this.renderer.width,
    });
    this.canvas.addEventListener('dblclick', (e) => {
      const b = this.scene && this.renderer.hit(this.scene, e.offsetX, e.offsetY);
      if (b) this.zoomToBox(b);
    });
    this.canvas.addEventListener('mouseleave', () => this.h.hover(null, null));
    this.canvas.addEventListener('contextmenu', (e) => {
      const b = this.scene && this.renderer.hit(this.scene, e.offsetX, e.offsetY);
      if (!b) return;
      e.preventDefault();
      this.h.context(b, e.clientX, e.clientY);
    });
    this.canvas.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    this.canvas.addEventListener('keydown', (e) => this.onKey(e));
    this.canvas.addEventListener('focus', () => {
      if (this.scene && !this.scene.selected) this.setSelected(this.firstBox(), true);
    });
  }

  /** Shows `chart` over [t0, t1] (ns since the profile's origin). */
  show(
    chart: FlameChart,
    color: (n: number) => string,
    dim: ((n: number) => boolean) | null,
    label: (n: number) => string,
    t0: number,
    t1: number,
    extra: Pick<ChartScene, 'shift' | 'window' | 'laneLabel'> = {},
  ): void {
    const prev = this.scene;
    this.full = chart.span[1] > chart.span[0] ? chart.span : [chart.span[0], chart.span[0] + 1];
    if (!(t1 > t0)) [t0, t1] = this.full;
    this.scene = {
      chart,
      color,
      dim,
      label,
      t0,
      t1,
      scrollY: prev?.chart === chart ? prev.scrollY : 0,
      selected: prev?.chart === chart ? prev.selected : null,
      ...extra,
    };
    this.requestDraw();
  }

  requestDraw(): void {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = 0;
      this.drawNow();
    });
  }

  drawNow(): void {
    const s = this.scene;
    if (!s) return;
    const r = this.el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return;
    this.renderer.resize(r.width, r.height);
    this.clampScroll();
    this.lastMs = this.renderer.draw(s, currentTheme()).ms;
    this.drawCount++;
  }

  get selected(): ChartBox | null {
    return this.scene?.selected ?? null;
  }

  setSelected(b: ChartBox | null, reveal: boolean): void {
    const s = this.scene;
    if (!s) return;
    s.selected = b;
    if (b && reveal) this.reveal(b);
    this.requestDraw();
    this.h.select(b);
  }

  /** Pans so box b is in view (and zooms when it is too narrow to see). */
  reveal(b: ChartBox): void {
    const s = this.scene;
    if (!s) return;
    const row = s.chart.lanes[b.lane]?.rows[b.depth];
    if (!row) return;
    const a = row.start[b.index];
    const e = row.end[b.index];
    const span = s.t1 - s.t0;
    const px = ((e - a) / span) * this.renderer.width;
    if (px < 2) {
      const want = Math.max((e - a) * 20, span / 50);
      this.setRange((a + e) / 2 - want / 2, (a + e) / 2 + want / 2);
    } else if (a < s.t0 || e > s.t1) {
      if (e - a > span) this.setRange(a, e);
      else if (a < s.t0) this.setRange(a, a + span);
      else this.setRange(e - span, e);
    }
    const y = this.renderer.rowY(s, b.lane, b.depth);
    const H = this.renderer.height;
    if (y < 24) s.scrollY -= 24 - y;
    else if (y + 20 > H) s.scrollY += y + 20 - H;
    this.clampScroll();
  }

  zoomToBox(b: ChartBox): void {
    const row = this.scene?.chart.lanes[b.lane]?.rows[b.depth];
    if (!row) return;
    const a = row.start[b.index];
    const e = row.end[b.index];
    const pad = (e - a) * 0.05;
    this.setRange(a - pad, e + pad);
  }

  /** Zooms by factor f (<1 in) around time `at`. */
  zoomBy(f: number, at?: number): void {
    const s = this.scene;
    if (!s) return;
    const c = at ?? (s.t0 + s.t1) / 2;
    this.setRange(c - (c - s.t0) * f, c + (s.t1 - c) * f);
  }

  panBy(fraction: number): void {
    const s = this.scene;
    if (!s) return;
    const d = (s.t1 - s.t0) * fraction;
    this.setRange(s.t0 + d, s.t1 + d);
  }

  /** Sets the visible range (clamped to the chart's span) and reports it. */
  setRange(t0: number, t1: number): void {
    const s = this.scene;
    if (!s) return;
    const [lo, hi] = this.full;
    const full = hi - lo;
    const span = Math.min(full, Math.max(t1 - t0, 1000));
    t0 = Math.min(Math.max(lo, t0), hi - span);
    s.t0 = t0;
    s.t1 = t0 + span;
    this.requestDraw();
    this.h.range(s.t0, s.t1);
  }

  private firstBox(): ChartBox | null {
    const s = this.scene;
    if (!s) return null;
    for (let li = 0; li < s.chart.lanes.length; li++) {
      const row = s.chart.lanes[li].rows[0];
      if (!row) continue;
      const mid = (s.t0 + s.t1) / 2;
      let k = boxAt(row, mid);
      if (k < 0) k = Math.min(row.length - 1, Math.max(0, firstIndexAfter(row.end, s.t0)));
      if (k >= 0 && row.length) return { lane: li, depth: 0, index: k };
    }
    return null;
  }

  private onKey(e: KeyboardEvent): void {
    const s = this.scene;
    if (!s || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === '+' || e.key === '=') {
      e.preventDefault();
      return this.zoomBy(0.5);
    }
    if (e.key === '-' || e.key === '_') {
      e.preventDefault();
      return this.zoomBy(2);
    }
    if (e.shiftKey && (e.key === 'ArrowLeft' || e.key === 'ArrowRight')) {
      e.preventDefault();
      return this.panBy(e.key === 'ArrowLeft' ? -0.2 : 0.2);
    }
    let b = s.selected ?? this.firstBox();
    if (!b) return;
    const lanes = s.chart.lanes;
    const rowOf = (x: ChartBox) => lanes[x.lane].rows[x.depth];
    const row = rowOf(b);
    const mid = (row.start[b.index] + row.end[b.index]) / 2;
    switch (e.key) {
      case 'ArrowLeft':
        if (b.index > 0) b = { ...b, index: b.index - 1 };
        break;
      case 'ArrowRight':
        if (b.index + 1 < row.length) b = { ...b, index: b.index + 1 };
        break;
      case 'ArrowUp': {
        // Toward the root; from a lane's root, to the previous lane.
        if (b.depth > 0) b = { ...b, depth: b.depth - 1, index: boxAt(lanes[b.lane].rows[b.depth - 1], mid) };
        else if (b.lane > 0) b = laneBox(s.chart, b.lane - 1, mid) ?? b;
        break;
      }
      case 'ArrowDown': {
        const next = lanes[b.lane].rows[b.depth + 1];
        const k = next ? boxAt(next, row.start[b.index]) : -1;
        if (k >= 0) b = { ...b, depth: b.depth + 1, index: k };
        else if (b.lane + 1 < lanes.length) b = laneBox(s.chart, b.lane + 1, mid) ?? b;
        break;
      }
      case 'Enter':
      case ' ':
        e.preventDefault();
        this.zoomToBox(b);
        return;
      case 'ContextMenu':
      case 'F10': {
        if (e.key === 'F10' && !e.shiftKey) return;
        e.preventDefault();
        e.stopPropagation();
        const r = this.renderer.rectOf(s, b);
        const c = this.canvas.getBoundingClientRect();
        if (r) this.h.context(b, c.left + Math.max(0, r.x) + 8, c.top + r.y + r.h);
        return;
      }
      default:
        return;
    }
    e.preventDefault();
    if (b.index >= 0) this.setSelected(b, true);
  }

  private clampScroll(): void {
    const s = this.scene;
    if (!s) return;
    const max = Math.max(0, this.renderer.contentHeight(s.chart) - this.renderer.height);
    s.scrollY = Math.min(Math.max(0, s.scrollY), max);
  }

  private onMove(e: MouseEvent): void {
    const s = this.scene;
    if (!s) return;
    if (this.drag.move(e)) return;
    const b = this.renderer.hit(s, e.offsetX, e.offsetY);
    this.canvas.style.cursor = b ? 'pointer' : 'default';
    this.h.hover(b, b ? e : null);
  }

  private onWheel(e: WheelEvent): void {
    const s = this.scene;
    if (!s) return;
    if (!e.ctrlKey && !e.metaKey && !e.shiftKey && Math.abs(e.deltaX) <= Math.abs(e.deltaY)) {
      // Scrolls the lanes while they can, then the page.
      const before = s.scrollY;
      s.scrollY += e.deltaY;
      this.clampScroll();
      if (s.scrollY === before) return;
      e.preventDefault();
      this.requestDraw();
      return;
    }
    e.preventDefault();
    if (e.ctrlKey || e.metaKey) {
      const at = s.t0 + (e.offsetX / this.renderer.width) * (s.t1 - s.t0);
      this.zoomBy(Math.exp(e.deltaY * 0.002), at);
    } else {
      this.panBy((e.shiftKey ? e.deltaY : e.deltaX) / this.renderer.width);
    }
  }
}

function firstIndexAfter(end: Float64Array, t: number): number {
  let lo = 0;
  let hi = end.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (end[mid] <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The root box of a lane nearest to time t. */
function laneBox(chart: FlameChart, lane: number, t: number): ChartBox | null {
  const row = chart.lanes[lane]?.rows[0];
  if (!row || row.length === 0) return null;
  let k = boxAt(row, t);
  if (k < 0) k = Math.min(row.length - 1, firstIndexAfter(row.end, t));
  return { lane, depth: 0, index: k };
}
