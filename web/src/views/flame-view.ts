// An interactive flame graph pane: a canvas, its viewport, and the mouse (hover, click to
// zoom, drag to pan, Ctrl+wheel to zoom, wheel to scroll, right-click for actions).
import { Layout } from '../lib/layout.js';
import { DrawStats, FlameRenderer, FlameScene, ROW_HEIGHT } from '../render/flame-renderer.js';
import { el } from './dom.js';

export interface FlameViewHandlers {
  hover(v: number, ev: MouseEvent | null): void;
  click(v: number): void;
  context(v: number, ev: MouseEvent): void;
}

export class FlameView {
  readonly el: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  readonly renderer: FlameRenderer;
  scene: FlameScene | null = null;
  lastStats: DrawStats | null = null;
  drawCount = 0;
  onDrawn: ((s: DrawStats) => void) | null = null;
  private pending = 0;
  private dirty = false;
  private drag: { x: number; y: number; x0: number; x1: number; scrollY: number; moved: boolean } | null = null;
  private hovered = -1;
  private zoomNode = -1;

  constructor(private readonly h: FlameViewHandlers, cls = 'flame') {
    this.canvas = el('canvas', { class: 'flame-canvas', tabindex: 0 });
    this.el = el('div', { class: cls }, this.canvas);
    this.renderer = new FlameRenderer(this.canvas);
    new ResizeObserver(() => {
      const r = this.el.getBoundingClientRect();
      if (Math.floor(r.width) !== this.renderer.width || Math.floor(r.height) !== this.renderer.height) this.requestDraw();
    }).observe(this.el);
    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.canvas.addEventListener('mousedown', (e) => {
      if (e.button !== 0 || !this.scene) return;
      this.drag = { x: e.offsetX, y: e.offsetY, x0: this.scene.x0, x1: this.scene.x1, scrollY: this.scene.scrollY, moved: false };
    });
    window.addEventListener('mouseup', (e) => {
      const d = this.drag;
      this.drag = null;
      if (d && !d.moved && e.target === this.canvas && this.scene) {
        const v = this.renderer.hit(this.scene, e.offsetX, e.offsetY);
        if (v >= 0) this.h.click(v);
      }
    });
    this.canvas.addEventListener('mouseleave', () => {
      this.hovered = -1;
      this.h.hover(-1, null);
    });
    this.canvas.addEventListener('contextmenu', (e) => {
      if (!this.scene) return;
      const v = this.renderer.hit(this.scene, e.offsetX, e.offsetY);
      if (v < 0) return;
      e.preventDefault();
      this.h.context(v, e);
    });
    this.canvas.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
  }

  /** Shows a layout zoomed on node `zoom`; keeps the vertical scroll where sensible. */
  show(layout: Layout, color: (v: number) => string, label: (v: number) => string, icicle: boolean, zoom: number): void {
    // The same layout zoomed on the same node keeps the user's panning and scrolling.
    const same = this.scene?.layout === layout && this.zoomNode === zoom;
    this.zoomNode = zoom;
    this.scene = {
      layout,
      color,
      label,
      icicle,
      x0: same && this.scene ? this.scene.x0 : layout.start[zoom],
      x1: same && this.scene ? this.scene.x1 : layout.start[zoom] + layout.total[zoom],
      scrollY: same && this.scene ? this.scene.scrollY : 0,
      fadeAbove: layout.depth[zoom],
    };
    if (!same) this.clampScroll();
    this.requestDraw();
  }

  /** Moves the viewport to a node's range (zoom without changing the layout). */
  zoomTo(v: number): void {
    if (!this.scene) return;
    const l = this.scene.layout;
    this.scene.x0 = l.start[v];
    this.scene.x1 = l.start[v] + l.total[v];
    this.scene.fadeAbove = l.depth[v];
    this.requestDraw();
  }

  requestDraw(): void {
    this.dirty = true;
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = 0;
      if (this.dirty) this.drawNow();
    });
  }

  drawNow(): DrawStats | null {
    if (!this.scene) return null;
    const r = this.el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return null;
    this.renderer.resize(r.width, r.height);
    this.clampScroll();
    this.dirty = false;
    const s = this.renderer.draw(this.scene);
    this.lastStats = s;
    this.drawCount++;
    this.onDrawn?.(s);
    return s;
  }

  private clampScroll(): void {
    const s = this.scene;
    if (!s) return;
    const content = (s.layout.maxDepth + 1) * ROW_HEIGHT;
    const max = Math.max(0, content - this.renderer.height);
    s.scrollY = Math.min(Math.max(0, s.scrollY), max);
  }

  private onMove(e: MouseEvent): void {
    const s = this.scene;
    if (!s) return;
    const d = this.drag;
    if (d) {
      const dx = e.offsetX - d.x;
      const dy = e.offsetY - d.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) d.moved = true;
      if (d.moved) {
        const span = d.x1 - d.x0;
        const shift = (-dx / this.renderer.width) * span;
        this.setRange(d.x0 + shift, d.x1 + shift);
        s.scrollY = d.scrollY + (s.icicle ? -dy : dy);
        this.requestDraw();
        return;
      }
    }
    const v = this.renderer.hit(s, e.offsetX, e.offsetY);
    if (v !== this.hovered) {
      this.hovered = v;
      this.canvas.style.cursor = v >= 0 ? 'pointer' : 'default';
    }
    this.h.hover(v, v >= 0 ? e : null);
  }

  private setRange(x0: number, x1: number): void {
    const s = this.scene;
    if (!s) return;
    const full = s.layout.total[0];
    const span = Math.min(full, Math.max(x1 - x0, full * 1e-12));
    x0 = Math.min(Math.max(0, x0), full - span);
    s.x0 = x0;
    s.x1 = x0 + span;
  }

  private onWheel(e: WheelEvent): void {
    const s = this.scene;
    if (!s) return;
    e.preventDefault();
    if (e.ctrlKey || e.metaKey) {
      const f = Math.exp(e.deltaY * 0.002);
      const at = s.x0 + (e.offsetX / this.renderer.width) * (s.x1 - s.x0);
      this.setRange(at - (at - s.x0) * f, at + (s.x1 - at) * f);
    } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      const d = (e.shiftKey ? e.deltaY : e.deltaX) / this.renderer.width;
      const span = s.x1 - s.x0;
      this.setRange(s.x0 + d * span, s.x1 + d * span);
    } else {
      s.scrollY += s.icicle ? e.deltaY : -e.deltaY;
    }
    this.requestDraw();
  }
}
