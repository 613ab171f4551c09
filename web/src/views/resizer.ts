// An embedded viewer's resize handle: a bar under it to drag, or, focused, the arrow keys
// (40 px a press; Home: the page's default height), as a window splitter is (the ARIA
// separator). The height reaches the state, and so the URL, when the drag ends.
import { MIN_HEIGHT } from '../app-state/state.js';
import { el } from './dom.js';

const STEP = 40;

const clamp = (h: number): number => Math.round(Math.min(20000, Math.max(MIN_HEIGHT, h)));

export class Resizer {
  readonly el: HTMLElement;

  constructor(
    key: string,
    private readonly root: () => HTMLElement,
    /** Sets the viewer's height (0: the page's default). */
    set: (height: number) => void,
  ) {
    this.el = el('div', {
      class: 'kiln-resize',
      role: 'separator',
      'aria-orientation': 'horizontal',
      tabindex: 0,
      'aria-label': key ? `Height of the ${key} viewer` : 'Height of the viewer',
      'aria-valuemin': String(MIN_HEIGHT),
      'aria-valuemax': '20000',
      title: 'Drag to make the viewer taller or shorter (keys: \u2191 \u2193; Home: as the page sets it)',
    });
    let start: { y: number; h: number } | null = null;
    this.el.addEventListener('pointerdown', (e) => {
      start = { y: e.clientY, h: this.root().getBoundingClientRect().height };
      this.el.setPointerCapture(e.pointerId);
      e.preventDefault();
    });
    this.el.addEventListener('pointermove', (e) => {
      if (start) this.root().style.height = `${clamp(start.h + e.clientY - start.y)}px`;
    });
    const end = (): void => {
      if (!start) return;
      start = null;
      set(clamp(this.root().getBoundingClientRect().height));
    };
    this.el.addEventListener('pointerup', end);
    this.el.addEventListener('pointercancel', end);
    this.el.addEventListener('keydown', (e) => {
      const h = this.root().getBoundingClientRect().height;
      const to = e.key === 'ArrowUp' ? clamp(h - STEP) : e.key === 'ArrowDown' ? clamp(h + STEP) : e.key === 'Home' ? 0 : null;
      if (to === null) return;
      e.preventDefault();
      e.stopPropagation();
      set(to);
    });
  }

  /** Says the viewer's height (as drawn) to assistive technology. */
  show(height: number): void {
    const h = height > 0 ? height : Math.round(this.root().getBoundingClientRect().height);
    this.el.setAttribute('aria-valuenow', String(Math.max(MIN_HEIGHT, h)));
  }
}
