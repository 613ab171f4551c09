// The legend of a flame graph coloured by category: each category of the view with its
// frame colour and its share of what is shown (the window's, after transforms), largest
// first; a click highlights one category (the others' frames greyed), a second click
// clears it; its head opens and closes it (the URL keeps which). Names are text only (a
// user's rules name categories).
import { CategoryView } from '../app-state/model.js';
import { el, setText } from './dom.js';

export class CategoryLegend {
  readonly el: HTMLElement;
  private readonly list: HTMLElement;
  private key = '';

  private readonly toggle: HTMLButtonElement;

  constructor(
    private readonly pick: (category: number) => void,
    /** Opens or closes the legend. */
    flip: () => void,
  ) {
    this.list = el('span', { class: 'category-items' });
    this.toggle = el('button', { type: 'button', class: 'legend-note legend-toggle', 'data-ctrl': 'legend-toggle', 'aria-expanded': 'true', title: 'Close or open the legend', text: 'By category:' });
    this.toggle.addEventListener('click', flip);
    this.el = el('div', { class: 'legend category-legend', 'data-ctrl': 'category-legend', role: 'group', 'aria-label': 'Categories: share of what is shown' }, this.toggle, this.list);
  }

  /** Shows the categories of `c` (hidden when null: palette colours or no categories), open or closed. */
  show(c: CategoryView | null, highlighted: number, open = true): void {
    this.el.hidden = !c;
    if (!c) return;
    const order = c.names.map((_, i) => i).filter((i) => c.shares[i] > 0);
    order.sort((a, b) => c.shares[b] - c.shares[a] || a - b);
    this.list.hidden = !open;
    this.toggle.setAttribute('aria-expanded', String(open));
    setText(this.toggle, open ? '\u25be By category:' : `\u25b8 By category (${order.length} categor${order.length === 1 ? 'y' : 'ies'})`);
    const key = `${order.join(',')}|${highlighted}|${order.map((i) => c.shares[i].toFixed(1)).join(',')}`;
    if (key === this.key) return;
    this.key = key;
    this.list.replaceChildren(
      ...order.map((i) => {
        const sw = el('span', { class: 'swatch', 'aria-hidden': 'true' });
        sw.style.background = c.colors[i];
        const share = el('span', { class: 'category-share', 'data-value': String(c.shares[i]) });
        setText(share, `${c.shares[i] < 0.1 ? c.shares[i].toFixed(2) : c.shares[i].toFixed(1)}%`);
        const b = el(
          'button',
          {
            type: 'button',
            class: 'legend-item category-item',
            'data-category': c.names[i],
            'aria-pressed': String(highlighted === i),
            title: highlighted === i ? 'Show every category again' : `Highlight ${c.names[i]}`,
          },
          sw,
          el('span', { class: 'category-name', text: c.names[i] }),
          share,
        );
        b.addEventListener('click', () => this.pick(highlighted === i ? -1 : i));
        return b;
      }),
    );
  }
}
