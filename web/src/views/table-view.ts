// The function table: sortable, filterable, and virtualised: only the rows in view exist
// in the DOM, so a million functions cost a few dozen elements.
import { el } from './dom.js';

export interface Column {
  title: string;
  key: string;
  /** Cell text of a row. */
  text: (f: number) => string;
  numeric: boolean;
}

const ROW = 20;

export class TableView {
  readonly el: HTMLDivElement;
  readonly filterInput: HTMLInputElement;
  private readonly head: HTMLDivElement;
  private readonly body: HTMLDivElement;
  private readonly spacer: HTMLDivElement;
  private readonly rowsEl: HTMLDivElement;
  private rows: Uint32Array = new Uint32Array(0);
  private columns: Column[] = [];

  constructor(
    private readonly onSort: (key: string) => void,
    private readonly onFilter: (text: string) => void,
    private readonly onPick: (f: number) => void,
  ) {
    this.filterInput = el('input', { class: 'table-filter', type: 'search', placeholder: 'Filter functions', 'aria-label': 'Filter functions' });
    this.filterInput.addEventListener('input', () => this.onFilter(this.filterInput.value));
    this.head = el('div', { class: 'table-head' });
    this.spacer = el('div', { class: 'table-spacer' });
    this.rowsEl = el('div', { class: 'table-rows' });
    this.body = el('div', { class: 'table-body' }, this.spacer, this.rowsEl);
    this.body.addEventListener('scroll', () => this.renderRows());
    new ResizeObserver(() => this.renderRows()).observe(this.body);
    this.el = el('div', { class: 'table' }, this.filterInput, this.head, this.body);
  }

  /** Shows `rows` (function ids, already sorted and filtered). */
  show(columns: Column[], rows: Uint32Array, sortKey: string, filter: string): void {
    this.columns = columns;
    this.rows = rows;
    if (this.filterInput.value !== filter && document.activeElement !== this.filterInput) this.filterInput.value = filter;
    this.head.replaceChildren(
      ...columns.map((c) => {
        const h = el('div', { class: `cell${c.numeric ? ' num' : ''}${c.key === sortKey ? ' sorted' : ''}`, 'data-key': c.key, role: 'columnheader', text: c.title + (c.key === sortKey ? ' ▼' : '') });
        h.addEventListener('click', () => this.onSort(c.key));
        return h;
      }),
    );
    this.spacer.style.height = `${rows.length * ROW}px`;
    this.renderRows();
  }

  private renderRows(): void {
    const top = this.body.scrollTop;
    const h = this.body.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / ROW) - 5);
    const last = Math.min(this.rows.length, Math.ceil((top + h) / ROW) + 5);
    const els: HTMLElement[] = [];
    for (let i = first; i < last; i++) {
      const f = this.rows[i];
      const r = el('div', { class: 'row', role: 'row', 'data-fn': f });
      r.style.top = `${i * ROW}px`;
      for (const c of this.columns) r.append(el('div', { class: `cell${c.numeric ? ' num' : ''}`, text: c.text(f) }));
      r.addEventListener('click', () => this.onPick(f));
      els.push(r);
    }
    this.rowsEl.replaceChildren(...els);
  }

  /** Row count, for the status line. */
  get length(): number {
    return this.rows.length;
  }
}
