// The function table: sortable, filterable, virtualised (only the rows in view exist in
// the DOM, so a million functions cost a few dozen elements), and a grid a keyboard and a
// screen reader can use: Tab to it, arrows (Page Up/Down, Home/End) move the active row,
// Enter opens its sandwich; column headers are buttons that sort, with aria-sort.
// Numeric columns are as wide as their widest text, so nothing is cut; the function's
// name takes the rest.
import { el } from './dom.js';

export interface Column {
  title: string;
  /** Sort key this column's header sets, or null when it does not sort. */
  key: string | null;
  /** Cell text of a row. */
  text: (f: number) => string;
  /** Longer description for the cell's tooltip. */
  hint?: (f: number) => string;
  numeric: boolean;
}

const ROW = 20;
const FONT = '12px Verdana, "DejaVu Sans", sans-serif';

export class TableView {
  readonly el: HTMLDivElement;
  readonly filterInput: HTMLInputElement;
  readonly grid: HTMLDivElement;
  private readonly head: HTMLDivElement;
  private readonly body: HTMLDivElement;
  private readonly spacer: HTMLDivElement;
  private readonly rowsEl: HTMLDivElement;
  private rows: Uint32Array = new Uint32Array(0);
  private columns: Column[] = [];
  private template = '';
  private active = 0;
  private measure: CanvasRenderingContext2D | null = null;

  constructor(
    private readonly idPrefix: string,
    private readonly onSort: (key: string) => void,
    private readonly onFilter: (text: string) => void,
    private readonly onPick: (f: number) => void,
  ) {
    this.filterInput = el('input', { class: 'table-filter', type: 'search', placeholder: 'Filter functions', 'aria-label': 'Filter functions' });
    this.filterInput.addEventListener('input', () => this.onFilter(this.filterInput.value));
    this.head = el('div', { class: 'table-head', role: 'row', 'aria-rowindex': 1 });
    this.spacer = el('div', { class: 'table-spacer', role: 'presentation', 'aria-hidden': 'true' });
    this.rowsEl = el('div', { class: 'table-rows', role: 'presentation' });
    this.body = el('div', { class: 'table-body', role: 'rowgroup' }, this.spacer, this.rowsEl);
    this.body.addEventListener('scroll', () => this.renderRows());
    new ResizeObserver(() => this.renderRows()).observe(this.body);
    this.grid = el(
      'div',
      { class: 'table-grid', role: 'grid', tabindex: 0, 'aria-label': 'Functions: arrow keys move, Enter shows callers and callees' },
      el('div', { class: 'table-headgroup', role: 'rowgroup' }, this.head),
      this.body,
    );
    this.grid.addEventListener('keydown', (e) => this.onKey(e));
    this.grid.addEventListener('focus', () => this.renderRows());
    this.el = el('div', { class: 'table' }, this.filterInput, this.grid);
  }

  /** Shows `rows` (function ids, already sorted and filtered). */
  show(columns: Column[], rows: Uint32Array, sortKey: string, filter: string): void {
    const sameRows = this.rows === rows;
    this.columns = columns;
    this.rows = rows;
    if (!sameRows) this.active = Math.min(this.active, Math.max(0, rows.length - 1));
    if (this.filterInput.value !== filter && document.activeElement !== this.filterInput) this.filterInput.value = filter;
    this.template = this.columnTemplate(columns, rows);
    this.head.style.gridTemplateColumns = this.template;
    this.head.replaceChildren(
      ...columns.map((c, i) => {
        const sorted = c.key !== null && c.key === sortKey;
        const cell = el('div', {
          class: `cell${c.numeric ? ' num' : ''}${sorted ? ' sorted' : ''}`,
          role: 'columnheader',
          'aria-colindex': i + 1,
          'aria-sort': c.key === null ? undefined : sorted ? (c.key === 'name' ? 'ascending' : 'descending') : 'none',
        });
        if (c.key === null) cell.textContent = c.title;
        else {
          const b = el('button', { type: 'button', class: 'sort', 'data-key': c.key, text: c.title + (sorted ? (c.key === 'name' ? ' ▲' : ' ▼') : '') });
          const key = c.key;
          b.addEventListener('click', () => this.onSort(key));
          cell.append(b);
        }
        return cell;
      }),
    );
    this.grid.setAttribute('aria-rowcount', String(rows.length + 1));
    this.grid.setAttribute('aria-colcount', String(columns.length));
    this.spacer.style.height = `${rows.length * ROW}px`;
    this.renderRows();
  }

  /** Widths: numeric columns fit their widest text (header included), the name takes the rest. */
  private columnTemplate(columns: Column[], rows: Uint32Array): string {
    const ctx = (this.measure ??= document.createElement('canvas').getContext('2d'));
    if (ctx) ctx.font = FONT;
    // Every row for tables of ordinary size; a spread sample of the largest ones.
    const n = rows.length;
    const step = n <= 4000 ? 1 : n / 4000;
    return columns
      .map((c) => {
        if (!c.numeric) return 'minmax(24ch, 1fr)';
        let w = ctx ? ctx.measureText(c.title + ' ▼').width + 18 : c.title.length * 8;
        for (let i = 0; i < n; i += step) {
          const t = c.text(rows[Math.floor(i)]);
          const tw = ctx ? ctx.measureText(t).width : t.length * 7.5;
          if (tw > w) w = tw;
        }
        return `${Math.ceil(w + 16)}px`;
      })
      .join(' ');
  }

  private rowId(i: number): string {
    return `${this.idPrefix}-row-${i}`;
  }

  private renderRows(): void {
    const top = this.body.scrollTop;
    const h = this.body.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / ROW) - 5);
    const last = Math.min(this.rows.length, Math.ceil((top + h) / ROW) + 5);
    const els: HTMLElement[] = [];
    for (let i = first; i < last; i++) {
      const f = this.rows[i];
      const r = el('div', {
        class: `row${i === this.active ? ' active' : ''}${i % 2 ? ' odd' : ''}`,
        role: 'row',
        id: this.rowId(i),
        'aria-rowindex': i + 2,
        'aria-selected': i === this.active ? 'true' : 'false',
        'data-fn': f,
      });
      r.style.top = `${i * ROW}px`;
      r.style.gridTemplateColumns = this.template;
      this.columns.forEach((c, k) => {
        const text = c.text(f);
        r.append(el('div', { class: `cell${c.numeric ? ' num' : ''}`, role: 'gridcell', 'aria-colindex': k + 1, title: c.hint ? c.hint(f) : text, text }));
      });
      r.addEventListener('click', () => {
        this.active = i;
        this.onPick(f);
      });
      els.push(r);
    }
    this.rowsEl.replaceChildren(...els);
    if (this.rows.length && this.active >= first && this.active < last) this.grid.setAttribute('aria-activedescendant', this.rowId(this.active));
    else this.grid.removeAttribute('aria-activedescendant');
  }

  private onKey(e: KeyboardEvent): void {
    if (e.target !== this.grid || !this.rows.length) return;
    const page = Math.max(1, Math.floor((this.body.clientHeight || 400) / ROW) - 1);
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
      case 'Enter':
      case ' ':
        e.preventDefault();
        e.stopPropagation();
        this.onPick(this.rows[this.active]);
        return;
      default:
        return;
    }
    e.preventDefault();
    this.setActive(Math.max(0, Math.min(this.rows.length - 1, a)));
  }

  /** Makes row i the active one and scrolls it into view. */
  setActive(i: number): void {
    this.active = i;
    const top = i * ROW;
    const h = this.body.clientHeight || 400;
    if (top < this.body.scrollTop) this.body.scrollTop = top;
    else if (top + ROW > this.body.scrollTop + h) this.body.scrollTop = top + ROW - h;
    this.renderRows();
  }

  /** Function id of the active row, or -1. */
  get activeFunction(): number {
    return this.rows.length ? this.rows[this.active] : -1;
  }

  /** Row count, for the status line. */
  get length(): number {
    return this.rows.length;
  }
}
