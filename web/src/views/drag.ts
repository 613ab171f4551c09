// Press, drag to pan, click: the pointer handling the flame graph and the flame chart
// share. A press becomes a drag once the pointer has moved more than 3 px from where it
// went down; a press released over the canvas without moving is a click.

/** What a view gives the pointer handling. */
export interface Pannable {
  /** The visible range [a0, a1] and the vertical scroll when a press begins; null when nothing is shown. */
  start(): { a0: number; a1: number; scrollY: number } | null;
  /** Shows the range [a0, a1]; `dy` pixels dragged down since the press, whose scroll was `scrollY`. */
  pan(a0: number, a1: number, scrollY: number, dy: number): void;
  /** A press released without moving. */
  click(e: MouseEvent): void;
  /** The canvas's width in CSS pixels. */
  width(): number;
}

export class DragPan {
  private d: { x: number; y: number; a0: number; a1: number; scrollY: number; moved: boolean } | null = null;

  constructor(canvas: HTMLCanvasElement, private readonly view: Pannable) {
    canvas.addEventListener('mousedown', (e) => {
      if (e.button !== 0) return;
      const s = view.start();
      if (s) this.d = { x: e.offsetX, y: e.offsetY, ...s, moved: false };
    });
    window.addEventListener('mouseup', (e) => {
      const d = this.d;
      this.d = null;
      if (d && !d.moved && e.target === canvas) view.click(e);
    });
  }

  /** Handles a mouse move: true when it was a drag (the view has panned), false when it is a hover. */
  move(e: MouseEvent): boolean {
    const d = this.d;
    if (!d) return false;
    const dx = e.offsetX - d.x;
    const dy = e.offsetY - d.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) d.moved = true;
    if (!d.moved) return false;
    const shift = (-dx / this.view.width()) * (d.a1 - d.a0);
    this.view.pan(d.a0 + shift, d.a1 + shift, d.scrollY, dy);
    return true;
  }
}
