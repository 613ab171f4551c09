// The call tree pane: a virtualised tree grid (only the rows in view exist in the DOM)
// that the keyboard and screen readers use as the ARIA treegrid pattern: Tab to it, ↑ ↓
// (Page Up/Down, Home/End) move the active row, → opens a row or moves to its first
// child, ← closes it or moves to its parent, Enter or Space opens and closes, * opens
// every row below. Names are cut to the column with the full name on hover.
import { CallNode } from '../lib/calltree.js';
import { el } from './dom.js';

export interface TreeColumn {
  title: string;
  text: (n: CallNode) => string;
  /** Longer text for the cell's tooltip. */
  hint?: (n: CallNode) => string;
}

export interface TreeHandlers {
  toggle(n: CallNode, open: boolean): void;
  /** Opens every row below n. */
  expandAll(n: CallNode): void;
  select(n: CallNode): void;
  /** The row's actions at page position (x, y). */
  context(n: CallNode, x: number, y: number): void;
}

const ROW = 20;
const INDENT = 14;

export class TreeView {
  readonly el: HTMLDivElement;
  readonly grid: HTMLDivElement;
  readonly caption: HTMLDivElement;
  private readonly head: HTMLDivElement;
  private readonly body: HTMLDivElement;
  private readonly spacer: HTMLDivElement;
  private readonly rowsEl: HTMLDivElement;
  private rows: CallNode[] = [];
  private columns: TreeColumn[] = [];
  private expanded: ReadonlySet<string> = new Set();
  private hasKids: (n: CallNode) => boolean = () => false;
  private name: (n: CallNode) => string = () => '';
  private isMatch: (n: CallNode) => boolean = () => false;
  private active = 0;
  private template = '';
  /** The rows in the DOM: indices [first, first + shown.length). */
  private first = 0;
  private shown: HTMLElement[] = [];
  /** The body's height and scroll position, kept so a key press forces no layout. */
  private height = 400;
  private top = 0;

  constructor(
    private readonly idPrefix: string,
    private readonly h: TreeHandlers,
  ) {
    this.caption = el('div', { class: 'tree-caption', 'data-ctrl': 'tree-caption' });
    this.head = el('div', { class: 'table-head', role: 'row', 'aria-rowindex': 1 });
    this.spacer = el('div', { class: 'table-spacer', role: 'presentation', 'aria-hidden': 'true' });
    this.rowsEl = el('div', { class: 'table-rows', role: 'presentation' });
    this.body = el('div', { class: 'table-body', role: 'rowgroup' }, this.spacer, this.rowsEl);
    this.body.addEventListener('scroll', () => {
      this.top = this.body.scrollTop;
      this.renderRows();
    });
    new ResizeObserver(() => {
      this.height = this.body.clientHeight || 400;
      this.renderRows();
    }).observe(this.body);
    this.grid = el(
      'div',
      {
        class: 'table-grid tree-grid',
        role: 'treegrid',
        tabindex: 0,
        'aria-label': 'Call tree: arrow keys move, right and left open and close a row, asterisk opens every row below',
      },
      el('div', { class: 'table-headgroup', role: 'rowgroup' }, this.head),
      this.body,
    );
    this.grid.addEventListener('keydown', (e) => this.onKey(e));
    this.grid.addEventListener('focus', () => this.renderRows());
    this.el = el('div', { class: 'table tree' }, this.caption, this.grid);
  }

  show(
    columns: TreeColumn[],
    rows: CallNode[],
    expanded: ReadonlySet<string>,
    hasKids: (n: CallNode) => boolean,
    name: (n: CallNode) => string,
    isMatch: (n: CallNode) => boolean,
    activeKey: string | null,
  ): void {
    this.columns = columns;
    this.rows = rows;
    this.expanded = expanded;
    this.hasKids = hasKids;
    this.name = name;
    this.isMatch = isMatch;
    if (activeKey !== null) {
      const i = rows.findIndex((r) => r.key === activeKey);
      if (i >= 0) this.active = i;
    }
    this.active = Math.min(this.active, Math.max(0, rows.length - 1));
    this.template = `${columns.map((c) => `${Math.max(9, c.title.length + 3)}ch`).join(' ')} minmax(24ch, 1fr)`;
    this.head.style.gridTemplateColumns = this.template;
    this.head.replaceChildren(
      ...columns.map((c, i) => el('div', { class: 'cell num head-text', role: 'columnheader', 'aria-colindex': i + 1, text: c.title })),
      el('div', { class: 'cell head-text', role: 'columnheader', 'aria-colindex': columns.length + 1, text: 'Function' }),
    );
    this.grid.setAttribute('aria-colcount', String(columns.length + 1));
    this.spacer.style.height = `${rows.length * ROW}px`;
    this.renderRows();
  }

  /** The active row, or null. */
  get activeRow(): CallNode | null {
    return this.rows[this.active] ?? null;
  }

  get length(): number {
    return this.rows.length;
  }

  private rowId(i: number): string {
    return `${this.idPrefix}-row-${i}`;
  }

  private renderRows(): void {
    const top = this.top;
    const h = this.height;
    const first = Math.max(0, Math.floor(top / ROW) - 5);
    const last = Math.min(this.rows.length, Math.ceil((top + h) / ROW) + 5);
    const els: HTMLElement[] = [];
    for (let i = first; i < last; i++) {
      const n = this.rows[i];
      const kids = this.hasKids(n);
      const open = kids && this.expanded.has(n.key);
      const r = el('div', {
        class: `row${i === this.active ? ' active' : ''}${i % 2 ? ' odd' : ''}`,
        role: 'row',
        id: this.rowId(i),
        'aria-level': n.depth + 1,
        'aria-expanded': kids ? String(open) : undefined,
        'aria-selected': i === this.active ? 'true' : 'false',
        'data-key': n.key,
      });
      r.style.top = `${i * ROW}px`;
      r.style.gridTemplateColumns = this.template;
      this.columns.forEach((c, k) => {
        const text = c.text(n);
        r.append(el('div', { class: 'cell num', role: 'gridcell', 'aria-colindex': k + 1, title: c.hint ? c.hint(n) : text, text }));
      });
      const name = this.name(n);
      const twisty = el('span', { class: `twisty${kids ? '' : ' leaf'}`, 'aria-hidden': 'true', text: kids ? (open ? '▾' : '▸') : '' });
      const fn = el(
        'div',
        { class: `cell fn${this.isMatch(n) ? ' match' : ''}`, role: 'gridcell', 'aria-colindex': this.columns.length + 1, title: name },
        twisty,
        el('span', { class: 'fn-name', text: name }),
      );
      fn.style.paddingLeft = `${6 + n.depth * INDENT}px`;
      r.append(fn);
      twisty.addEventListener('click', (e) => {
        e.stopPropagation();
        this.setActive(i);
        if (kids) this.h.toggle(n, !open);
      });
      r.addEventListener('click', () => {
        this.setActive(i);
        this.h.select(n);
      });
      r.addEventListener('dblclick', () => {
        if (kids) this.h.toggle(n, !this.expanded.has(n.key));
      });
      r.addEventListener('contextmenu', (e) => {
        e.preventDefault();
        this.setActive(i);
        this.h.context(n, e.clientX, e.clientY);
      });
      els.push(r);
    }
    this.rowsEl.replaceChildren(...els);
    this.first = first;
    this.shown = els;
    this.grid.setAttribute('aria-rowcount', String(this.rows.length + 1));
    if (this.rows.length && this.active >= first && this.active < last) this.grid.setAttribute('aria-activedescendant', this.rowId(this.active));
    else this.grid.removeAttribute('aria-activedescendant');
  }

  private onKey(e: KeyboardEvent): void {
    if (e.target !== this.grid || !this.rows.length || e.ctrlKey || e.metaKey || e.altKey) return;
    const page = Math.max(1, Math.floor(this.height / ROW) - 1);
    const n = this.rows[this.active];
    const kids = this.hasKids(n);
    const open = kids && this.expanded.has(n.key);
    let a = this.active;
    switch (e.key) {
      case 'ArrowDown':
        a++;
        break;
      case 'ArrowUp':
        a--;
        break;
      case 'PageDown':
        a += page;
        break;
      case 'PageUp':
        a -= page;
        break;
      case 'Home':
        a = 0;
        break;
      case 'End':
        a = this.rows.length - 1;
        break;
      case 'ArrowRight':
        if (kids && !open) {
          e.preventDefault();
          this.h.toggle(n, true);
          return;
        }
        if (open) a++;
        break;
      case 'ArrowLeft':
        if (open) {
          e.preventDefault();
          this.h.toggle(n, false);
          return;
        }
        // To the parent: the nearest row above one level up.
        for (let i = this.active - 1; i >= 0; i--) {
          if (this.rows[i].depth < n.depth) {
            a = i;
            break;
          }
        }
        break;
      case 'Enter':
      case ' ':
        e.preventDefault();
        e.stopPropagation();
        if (kids) this.h.toggle(n, !open);
        return;
      case '*':
        e.preventDefault();
        this.h.expandAll(n);
        return;
      case 'ContextMenu':
      case 'F10': {
        if (e.key === 'F10' && !e.shiftKey) return;
        e.preventDefault();
        e.stopPropagation();
        const r = document.getElementById(this.rowId(this.active))?.getBoundingClientRect();
        if (r) this.h.context(n, r.left + 40, r.bottom);
        return;
      }
      default:
        return;
    }
    e.preventDefault();
    this.setActive(Math.max(0, Math.min(this.rows.length - 1, a)));
    this.h.select(this.rows[this.active]);
  }

  /**
   * Makes row i the active one and scrolls it into view. A move among the rows in the
   * DOM changes two rows' marks; only a scroll builds rows again.
   */
  setActive(i: number): void {
    const before = this.active;
    this.active = i;
    const y = i * ROW;
    const h = this.height;
    let top = this.top;
    if (y < top) top = y;
    else if (y + ROW > top + h) top = y + ROW - h;
    const inDom = (k: number): HTMLElement | null => this.shown[k - this.first] ?? null;
    const was = inDom(before);
    const now = inDom(i);
    if (top === this.top && now) {
      if (was && was !== now) {
        was.classList.remove('active');
        was.setAttribute('aria-selected', 'false');
      }
      now.classList.add('active');
      now.setAttribute('aria-selected', 'true');
      this.grid.setAttribute('aria-activedescendant', this.rowId(i));
      return;
    }
    if (top !== this.top) this.body.scrollTop = this.top = top;
    this.renderRows();
  }
}
