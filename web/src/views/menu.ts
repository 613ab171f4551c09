// A context menu that works from the keyboard as from the mouse: hidden until opened (so
// it is neither seen nor announced), focus on its first item, arrows to move, Enter to
// run, Escape or Tab to close, focus back where it was.
import { el } from './dom.js';

export interface MenuItem {
  key: string;
  label: string;
  run: () => void;
}

export class Menu {
  readonly el: HTMLDivElement;
  private returnTo: HTMLElement | null = null;
  private items: HTMLButtonElement[] = [];

  constructor() {
    this.el = el('div', { class: 'menu', role: 'menu', hidden: true });
    this.el.addEventListener('keydown', (e) => this.onKey(e));
  }

  get isOpen(): boolean {
    return !this.el.hidden;
  }

  /** Opens at page position (x, y) with a heading (e.g. the frame's name). */
  open(title: string, items: MenuItem[], x: number, y: number, returnTo: HTMLElement | null): void {
    this.returnTo = returnTo;
    this.items = items.map((it) => {
      const b = el('button', { type: 'button', role: 'menuitem', tabindex: -1, 'data-action': it.key, text: it.label });
      b.addEventListener('click', () => {
        this.close();
        it.run();
      });
      return b;
    });
    this.el.setAttribute('aria-label', title || 'Actions');
    this.el.replaceChildren(el('div', { class: 'menu-title', 'aria-hidden': 'true', text: title }), ...this.items);
    this.el.hidden = false;
    const w = this.el.offsetWidth;
    const h = this.el.offsetHeight;
    this.el.style.left = `${Math.max(0, Math.min(x, window.innerWidth - w - 4))}px`;
    this.el.style.top = `${Math.max(0, Math.min(y, window.innerHeight - h - 4))}px`;
    this.items[0]?.focus();
  }

  close(restoreFocus = true): void {
    if (this.el.hidden) return;
    this.el.hidden = true;
    this.el.replaceChildren();
    this.items = [];
    if (restoreFocus) this.returnTo?.focus();
    this.returnTo = null;
  }

  private onKey(e: KeyboardEvent): void {
    const i = this.items.indexOf(document.activeElement as HTMLButtonElement);
    const n = this.items.length;
    const go = (k: number): void => {
      e.preventDefault();
      this.items[(k + n) % n]?.focus();
    };
    switch (e.key) {
      case 'ArrowDown':
        return go(i + 1);
      case 'ArrowUp':
        return go(i - 1);
      case 'Home':
        return go(0);
      case 'End':
        return go(n - 1);
      case 'Escape':
        e.preventDefault();
        e.stopPropagation();
        return this.close();
      case 'Tab':
        e.preventDefault();
        return this.close();
    }
    // Typing an item's key runs it.
    const hit = this.items.find((b) => b.dataset.action === e.key);
    if (hit && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      e.stopPropagation();
      hit.click();
    }
  }
}
