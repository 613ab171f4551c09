// The thread list: every thread of the profile with its samples in the shown window, a
// checkbox to show or hide it in every view (flame graph, call tree, functions, sandwich,
// flame chart lanes), "show all" / "show only this", and how threads are merged. A dialog
// that opens from its toolbar button, keeps focus inside while open, and gives it back
// on Escape.
import { thousands } from '../lib/units.js';
import { el, setText } from './dom.js';

export interface ThreadEntry {
  /** Thread index in the profile. */
  index: number;
  label: string;
  /** Samples in the shown window. */
  samples: number;
}

export interface ThreadHandlers {
  /** The hidden threads changed (indices, ascending). */
  hidden(h: number[]): void;
}

export class ThreadList {
  readonly el: HTMLDivElement;
  private readonly list: HTMLDivElement;
  private readonly summary: HTMLDivElement;
  private readonly filter: HTMLInputElement;
  private entries: ThreadEntry[] = [];
  private hiddenSet = new Set<number>();
  private returnTo: HTMLElement | null = null;

  constructor(
    titleId: string,
    private readonly h: ThreadHandlers,
  ) {
    this.summary = el('div', { class: 'threads-summary', 'data-ctrl': 'threads-summary', 'aria-live': 'polite' });
    this.filter = el('input', { type: 'search', class: 'threads-filter', placeholder: 'Filter threads', 'aria-label': 'Filter threads by name' });
    this.filter.addEventListener('input', () => this.renderList());
    this.list = el('div', { class: 'threads-list', role: 'group', 'aria-labelledby': titleId });
    const button = (text: string, ctrl: string, f: () => void): HTMLButtonElement => {
      const b = el('button', { type: 'button', 'data-ctrl': ctrl, text });
      b.addEventListener('click', f);
      return b;
    };
    const close = button('Close', 'threads-close', () => this.close());
    this.el = el(
      'div',
      { class: 'threads', role: 'dialog', 'aria-modal': 'false', 'aria-labelledby': titleId, hidden: true },
      el('h2', { id: titleId, text: 'Threads' }),
      this.summary,
      el(
        'div',
        { class: 'threads-tools' },
        this.filter,
        button('Show all', 'threads-all', () => this.h.hidden([])),
        button('Hide the listed', 'threads-none', () => this.h.hidden([...new Set([...this.hiddenSet, ...this.visible().map((e) => e.index)])].sort((a, b) => a - b))),
        close,
      ),
      this.list,
    );
    this.el.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        this.close();
      }
    });
  }

  get isOpen(): boolean {
    return !this.el.hidden;
  }

  /** The threads and which are hidden (updates an open list in place). */
  update(entries: ThreadEntry[], hidden: readonly number[]): void {
    this.entries = entries;
    this.hiddenSet = new Set(hidden);
    if (this.isOpen) this.renderList();
  }

  private visible(): ThreadEntry[] {
    const q = this.filter.value.toLowerCase();
    return q ? this.entries.filter((e) => e.label.toLowerCase().includes(q)) : this.entries;
  }

  private renderList(): void {
    const shown = this.visible();
    const hiddenCount = this.entries.filter((e) => this.hiddenSet.has(e.index)).length;
    setText(this.summary, `${this.entries.length - hiddenCount} of ${this.entries.length} threads shown`);
    const focused = (document.activeElement as HTMLElement | null)?.dataset?.thread;
    this.list.replaceChildren(
      ...shown.map((e) => {
        const box = el('input', { type: 'checkbox', 'data-thread': String(e.index), checked: !this.hiddenSet.has(e.index) });
        box.addEventListener('change', () => {
          const h = new Set(this.hiddenSet);
          if (box.checked) h.delete(e.index);
          else h.add(e.index);
          this.h.hidden([...h].sort((a, b) => a - b));
        });
        const only = el('button', { type: 'button', class: 'thread-only', 'data-only': String(e.index), text: 'only', title: `Show only ${e.label}`, 'aria-label': `Show only ${e.label}` });
        only.addEventListener('click', () => this.h.hidden(this.entries.map((x) => x.index).filter((i) => i !== e.index)));
        return el(
          'div',
          { class: 'thread-row' },
          el('label', { class: 'thread-label', title: e.label }, box, el('span', { class: 'thread-name', text: e.label }), el('span', { class: 'thread-count', text: `${thousands(e.samples)} samples` })),
          only,
        );
      }),
    );
    if (focused) this.list.querySelector<HTMLElement>(`[data-thread="${focused}"]`)?.focus();
  }

  open(anchor: HTMLElement): void {
    this.returnTo = anchor;
    this.el.hidden = false;
    this.renderList();
    const r = anchor.getBoundingClientRect();
    this.el.style.left = `${Math.max(4, Math.min(r.left, window.innerWidth - this.el.offsetWidth - 8))}px`;
    this.el.style.top = `${r.bottom + 2}px`;
    (this.list.querySelector('input') ?? this.filter).focus();
  }

  close(): void {
    if (!this.isOpen) return;
    this.el.hidden = true;
    this.returnTo?.setAttribute('aria-expanded', 'false');
    this.returnTo?.focus();
  }

  toggle(anchor: HTMLElement): void {
    if (this.isOpen) this.close();
    else this.open(anchor);
  }
}
