// An interactive flame graph pane: a canvas, its viewport, the mouse (hover, click to
// zoom, drag to pan, Ctrl+wheel to zoom, wheel to scroll the graph and then the page,
// right-click for actions) and the keyboard (Tab to the canvas; arrows move between
// frames, Enter zooms, the context-menu key or Shift+F10 opens the actions of the
// selected frame).
import { Layout, firstEndingAfter } from '../lib/layout.js';
import { DrawStats, FlameRenderer, FlameScene, ROW_HEIGHT } from '../render/flame-renderer.js';
import { currentTheme } from '../render/theme.js';
import { el } from './dom.js';
import { DragPan } from './drag.js';

export interface FlameViewHandlers {
  hover(v: number, ev: MouseEvent | null): void;
  click(v: number): void;
  /** Actions of a node, at page position (x, y). */
  context(v: number, x: number, y: number): void;
  /** The keyboard selection moved to v (-1: none). */
  select(v: number): void;
}

/** Search dims what does not match; null when there is no search. */
export function searchDimmer(match: Uint8Array | null, l: { frame: Int32Array }): ((v: number) => boolean) | null {
  if (!match) return null;
  return (v) => v > 0 && !match[l.frame[v]];
}

export class FlameView {
  readonly el: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  private renderer_: FlameRenderer | null = null;
  scene: FlameScene | null = null;
  lastStats: DrawStats | null = null;
  drawCount = 0;
  onDrawn: ((s: DrawStats) => void) | null = null;
  private pending = 0;
  private dirty = false;
  private readonly drag: DragPan;
  private hovered = -1;
  private zoomNode = -1;

  constructor(private readonly h: FlameViewHandlers, cls: string, name: string) {
    this.canvas = el('canvas', {
      class: 'flame-canvas',
      tabindex: 0,
      role: 'application',
      'aria-roledescription': 'flame graph',
      'aria-label': `${name}. Arrow keys move between frames, Enter zooms, Escape resets, Shift+F10 opens the frame's actions.`,
    });
    this.el = el('div', { class: cls }, this.canvas);
    new ResizeObserver(() => {
      const r = this.el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) return;
      const rr = this.renderer_;
      if (!rr || Math.floor(r.width) !== rr.width || Math.floor(r.height) !== rr.height) this.requestDraw();
    }).observe(this.el);
    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.drag = new DragPan(this.canvas, {
      start: () => this.scene && { a0: this.scene.x0, a1: this.scene.x1, scrollY: this.scene.scrollY },
      pan: (x0, x1, scrollY, dy) => {
        const s = this.scene;
        if (!s) return;
        this.setRange(x0, x1);
        s.scrollY = scrollY + (s.icicle ? -dy : dy);
        this.requestDraw();
      },
      click: (e) => {
        const v = this.scene ? this.renderer.hit(this.scene, e.offsetX, e.offsetY) : -1;
        if (v >= 0) {
          this.setSelected(v, false);
          this.h.click(v);
        }
      },
      width: () => this.renderer.width,
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
      this.h.context(v, e.clientX, e.clientY);
    });
    this.canvas.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    this.canvas.addEventListener('keydown', (e) => this.onKey(e));
    this.canvas.addEventListener('focus', () => {
      if (this.scene && this.scene.selected < 0) this.setSelected(Math.max(this.zoomNode, this.firstNode()), true);
    });
  }

  /** First drawn node whose frame's name (`names()`, by frame) is `name`, as a page rectangle (tests, benches). */
  find(name: string, names: () => string[]): { x: number; y: number; w: number; h: number; node: number } | null {
    const sc = this.scene;
    if (!sc || this.el.hidden || this.renderer.width === 0) return null;
    const l = sc.layout;
    const frameNames = names();
    const r0 = this.canvas.getBoundingClientRect();
    for (let v = 1; v < l.n; v++) {
      if (frameNames[l.frame[v]] !== name || l.total[v] <= 0 || l.depth[v] < sc.base) continue;
      const r = this.renderer.rectOf(sc, v);
      if (r.x + r.w <= 0 || r.x >= this.renderer.width || r.w < 1) continue;
      return { x: r0.left + Math.max(0, r.x), y: r0.top + r.y, w: Math.min(r.w, this.renderer.width), h: r.h, node: v };
    }
    return null;
  }

  /** The canvas's drawing state, made when first needed (a hidden pane costs nothing). */
  get renderer(): FlameRenderer {
    return (this.renderer_ ??= new FlameRenderer(this.canvas));
  }

  /** The node the keyboard selected, or -1. */
  get selected(): number {
    return this.scene?.selected ?? -1;
  }

  /**
   * Shows a layout zoomed on node `zoom`; keeps the vertical scroll where sensible.
   * `base` is the first depth drawn (1 hides the root, as the sandwich does).
   */
  show(
    layout: Layout,
    color: (v: number) => string,
    dim: ((v: number) => boolean) | null,
    label: (v: number) => string,
    icicle: boolean,
    zoom: number,
    base = 0,
  ): void {
    // The same layout zoomed on the same node keeps the user's panning and scrolling.
    const prev = this.scene;
    const same = prev?.layout === layout && this.zoomNode === zoom;
    this.zoomNode = zoom;
    this.scene = {
      layout,
      color,
      dim,
      label,
      icicle,
      base,
      x0: same && prev ? prev.x0 : layout.start[zoom],
      x1: same && prev ? prev.x1 : layout.start[zoom] + layout.total[zoom],
      scrollY: same && prev ? prev.scrollY : 0,
      fadeAbove: layout.depth[zoom],
      selected: prev?.layout === layout ? prev.selected : -1,
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
    const s = this.renderer.draw(this.scene, currentTheme());
    this.lastStats = s;
    this.drawCount++;
    this.onDrawn?.(s);
    return s;
  }

  /** Selects node v with the keyboard's outline; scrolls and pans it into view. */
  setSelected(v: number, reveal = true): void {
    const s = this.scene;
    if (!s) return;
    s.selected = v;
    if (v >= 0 && reveal) this.reveal(v);
    this.requestDraw();
    this.h.select(v);
  }

  /** Pans (and zooms, when it is too narrow to see) so node v is on screen. */
  reveal(v: number): void {
    const s = this.scene;
    if (!s || v < 0 || this.renderer.width === 0) return;
    const l = s.layout;
    const a = l.start[v];
    const b = a + l.total[v];
    const span = s.x1 - s.x0;
    const px = (l.total[v] / span) * this.renderer.width;
    if (px < 3) {
      // Too narrow to see: show it with some context, a tenth of the width at least.
      const want = Math.max(l.total[v] * 10, l.total[v]);
      const mid = (a + b) / 2;
      this.setRange(mid - want / 2, mid + want / 2);
    } else if (a < s.x0 || b > s.x1) {
      if (b - a > span) this.setRange(a, b);
      else if (a < s.x0) this.setRange(a, a + span);
      else this.setRange(b - span, b);
    }
    const y = this.renderer.rowY(s, l.depth[v]);
    const H = this.renderer.height;
    if (y < 0) s.scrollY += s.icicle ? y : -y;
    else if (y + ROW_HEIGHT > H) s.scrollY += s.icicle ? y + ROW_HEIGHT - H : -(y + ROW_HEIGHT - H);
    this.clampScroll();
  }

  private firstNode(): number {
    const s = this.scene;
    if (!s) return -1;
    return s.layout.rows[s.base]?.[0] ?? -1;
  }

  private onKey(e: KeyboardEvent): void {
    const s = this.scene;
    if (!s || e.ctrlKey || e.metaKey || e.altKey) return;
    const l = s.layout;
    let v = s.selected >= 0 ? s.selected : this.firstNode();
    if (v < 0) return;
    const inRow = (delta: number): number => {
      const row = l.rows[l.depth[v]];
      const k = firstEndingAfter(l, row, l.start[v]) + delta;
      return k >= 0 && k < row.length ? row[k] : v;
    };
    const widestChild = (): number => {
      let best = -1;
      for (let k = l.childStart[v]; k < l.childStart[v + 1]; k++) {
        const c = l.childList[k];
        if (best < 0 || l.total[c] > l.total[best]) best = c;
      }
      return best < 0 ? v : best;
    };
    const parent = (): number => (l.parent[v] >= 0 && l.depth[v] > s.base ? l.parent[v] : v);
    const towardLeaves = s.icicle ? 'ArrowDown' : 'ArrowUp';
    const towardRoot = s.icicle ? 'ArrowUp' : 'ArrowDown';
    switch (e.key) {
      case 'ArrowLeft':
        v = inRow(-1);
        break;
      case 'ArrowRight':
        v = inRow(1);
        break;
      case towardLeaves:
        v = widestChild();
        break;
      case towardRoot:
        v = parent();
        break;
      case 'Home':
        v = this.firstNode();
        break;
      case 'Enter':
      case ' ':
        e.preventDefault();
        this.h.click(v);
        return;
      case 'ContextMenu':
      case 'F10':
        if (e.key === 'F10' && !e.shiftKey) return;
        e.preventDefault();
        e.stopPropagation();
        this.openMenuAt(v);
        return;
      default:
        return;
    }
    e.preventDefault();
    this.setSelected(v, true);
  }

  /** Opens the actions of node v beside it. */
  openMenuAt(v: number): void {
    const s = this.scene;
    if (!s) return;
    const r = this.renderer.rectOf(s, v);
    const c = this.canvas.getBoundingClientRect();
    this.h.context(v, c.left + Math.max(0, Math.min(r.x, this.renderer.width - 40)) + 8, c.top + r.y + r.h);
  }

  private clampScroll(): void {
    const s = this.scene;
    if (!s) return;
    const content = (s.layout.maxDepth + 1 - s.base) * ROW_HEIGHT;
    const max = Math.max(0, content - this.renderer.height);
    s.scrollY = Math.min(Math.max(0, s.scrollY), max);
  }

  private onMove(e: MouseEvent): void {
    const s = this.scene;
    if (!s) return;
    if (this.drag.move(e)) return;
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
    if (!e.ctrlKey && !e.metaKey && !e.shiftKey && Math.abs(e.deltaX) <= Math.abs(e.deltaY)) {
      // Scrolls the graph while it can, then the page (no wheel trap in a page of
      // several viewers).
      const before = s.scrollY;
      s.scrollY += s.icicle ? e.deltaY : -e.deltaY;
      this.clampScroll();
      if (s.scrollY === before) return;
      e.preventDefault();
      this.requestDraw();
      return;
    }
    e.preventDefault();
    if (e.ctrlKey || e.metaKey) {
      const f = Math.exp(e.deltaY * 0.002);
      const at = s.x0 + (e.offsetX / this.renderer.width) * (s.x1 - s.x0);
      this.setRange(at - (at - s.x0) * f, at + (s.x1 - at) * f);
    } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      const d = (e.shiftKey ? e.deltaY : e.deltaX) / this.renderer.width;
      const span = s.x1 - s.x0;
      this.setRange(s.x0 + d * span, s.x1 + d * span);
    }
    this.requestDraw();
  }
}
