// The run's header: what was run, jump links to every section, the headline figures with
// their units (the selected window's, with the whole measurement's beside them), warnings
// (an incomplete run first), the note and tags. Everything is text: names, notes and tags
// never become markup.
import { el, setText } from '../../views/dom.js';
import { Fact, Figure, RunPage } from '../data.js';
import { WindowFigure } from '../lib/figures.js';
import { plainLatency, plainQuantile } from '../lib/names.js';

export function statusBadge(complete: boolean, reason: string | null): HTMLElement {
  return el('span', {
    class: `r-status ${complete ? 'complete' : 'incomplete'}`,
    'data-field': 'status',
    title: reason ?? undefined,
    text: complete ? 'complete' : 'incomplete',
  });
}

export function tagList(tags: [string, string][]): HTMLElement | null {
  if (!tags.length) return null;
  return el('div', { class: 'r-tags', 'aria-label': 'Tags' }, ...tags.map(([k, v]) => el('span', { class: 'r-tag', 'data-field': 'tag', title: `${k}=${v}`, text: `${k}=${v}` })));
}

export function factList(facts: Fact[]): HTMLElement {
  const dl = el('dl', { class: 'r-facts' });
  for (const f of facts) dl.append(el('dt', { text: f.label }), el('dd', { 'data-fact': f.key, dir: 'auto', text: f.value }));
  return dl;
}

/** A section of the page the header links to. */
export interface SectionLink {
  id: string;
  label: string;
}

/**
 * Jump links to the page's sections. They scroll and move focus without touching the URL
 * (whose hash holds the window and every viewer's state).
 */
export function sectionNav(links: SectionLink[]): HTMLElement {
  const list = el('ul', { class: 'r-toc-list' });
  for (const l of links) {
    const a = el('a', { href: `#${l.id}`, 'data-jump': l.id, text: l.label });
    a.addEventListener('click', (e) => {
      e.preventDefault();
      const target = document.getElementById(l.id);
      if (!target) return;
      target.scrollIntoView({ block: 'start' });
      const heading = target.querySelector<HTMLElement>('h2, h3') ?? target;
      if (!heading.hasAttribute('tabindex')) heading.setAttribute('tabindex', '-1');
      heading.focus({ preventScroll: true });
    });
    list.append(el('li', {}, a));
  }
  return el('nav', { class: 'r-toc', 'aria-label': 'Sections of this report' }, el('span', { class: 'r-toc-head', text: 'On this page:' }), list);
}

/** A figure's label in plain words, the store's name in the tooltip. */
function figureLabel(f: Figure, latency: string | null): { text: string; hint: string | null } {
  if (latency && ['p50', 'p99', 'p999', 'max'].includes(f.key)) {
    const q = f.key === 'p999' ? 'p99.9' : f.key;
    return { text: `${plainLatency(latency)}: ${plainQuantile(q)}`, hint: f.label };
  }
  return { text: f.label, hint: null };
}

/** The headline figures: each card shows the window's value, the measurement's beside it. */
export class FigureCards {
  readonly el: HTMLElement;
  private readonly cards = new Map<string, { value: HTMLElement; detail: HTMLElement; whole: HTMLElement; card: HTMLElement }>();

  constructor(private readonly figures: Figure[], latency: string | null) {
    this.el = el('div', { class: 'r-figures', role: 'list', 'aria-label': 'Headline figures', id: 'r-figures' });
    for (const f of figures) {
      const { text, hint } = figureLabel(f, latency);
      const value = el('div', { class: 'r-figure-value', 'data-ctrl': 'figure-value', text: f.text });
      const detail = el('div', { class: 'r-figure-detail', text: f.detail ?? '' });
      const whole = el('div', { class: 'r-figure-whole', 'data-ctrl': 'figure-whole' });
      const card = el(
        'div',
        { class: 'r-figure', role: 'listitem', 'data-figure': f.key, 'data-value': String(f.value), 'data-scope': 'measurement', title: hint ?? undefined },
        el('div', { class: 'r-figure-label', text }),
        value,
        detail,
        whole,
      );
      this.cards.set(f.key, { value, detail, whole, card });
      this.el.append(card);
    }
  }

  /**
   * The window's figures (w null: the measurement's), each with the measurement's beside
   * it; both from lib/figures.ts, as the legends. A figure the page cannot compute from the
   * stored seconds (a load command's own report) is the run's headline's.
   */
  show(w: [number, number] | null, figures: Map<string, WindowFigure>, measurement: Map<string, WindowFigure>): void {
    for (const f of this.figures) {
      const c = this.cards.get(f.key)!;
      const whole = measurement.get(f.key) ?? { value: f.value, text: f.text, detail: f.detail ?? undefined };
      if (!w) {
        setText(c.value, whole.text);
        setText(c.detail, whole.detail ?? '');
        setText(c.whole, '');
        c.card.dataset.value = String(whole.value);
        c.card.dataset.scope = 'measurement';
        continue;
      }
      const x = figures.get(f.key);
      setText(c.value, x ? x.text : '–');
      setText(c.detail, x ? x.detail ?? '' : 'no value in the window');
      setText(c.whole, `whole measurement: ${whole.text}`);
      c.card.dataset.value = x ? String(x.value) : '';
      c.card.dataset.scope = 'window';
    }
  }
}

export function warningList(warnings: string[]): HTMLElement | null {
  if (!warnings.length) return null;
  return el('ul', { class: 'r-warnings', 'aria-label': 'Warnings' }, ...warnings.map((w) => el('li', { 'data-field': 'warning', text: w })));
}

export function runHeader(r: RunPage, links: SectionLink[], cards: FigureCards): HTMLElement {
  // The run's name isolated (bdi): right-to-left text or a U+202E in it cannot reorder the
  // title around it; the note likewise (dir=auto).
  const plain = r.id !== null ? `Run '${r.name}' #${r.id}` : `Run '${r.name}'`;
  const title = el('span', { 'data-field': 'title', title: plain }, 'Run \'', el('bdi', { text: r.name }), r.id !== null ? `' #${r.id}` : `'`);
  return el(
    'header',
    { class: 'r-head' },
    el('h1', {}, title, statusBadge(r.complete, r.reason)),
    r.note ? el('p', { class: 'r-note-text', 'data-field': 'note', dir: 'auto', text: r.note }) : null,
    tagList(r.tags),
    sectionNav(links),
    el('h2', { class: 'r-figures-head', id: 'r-h-figures', text: 'Headline figures' }),
    cards.el,
    warningList(r.warnings),
    factList(r.facts),
  );
}
