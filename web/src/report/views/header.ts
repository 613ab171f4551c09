// The run's header: what was run, the headline figures with their units, warnings (an
// incomplete run first), the note and tags. Everything is text: names, notes and tags
// never become markup.
import { el } from '../../views/dom.js';
import { Fact, Figure, RunPage } from '../data.js';

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
  return el('div', { class: 'r-tags', 'aria-label': 'Tags' }, ...tags.map(([k, v]) => el('span', { class: 'r-tag', 'data-field': 'tag', text: `${k}=${v}` })));
}

export function factList(facts: Fact[]): HTMLElement {
  const dl = el('dl', { class: 'r-facts' });
  for (const f of facts) dl.append(el('dt', { text: f.label }), el('dd', { 'data-fact': f.key, dir: 'auto', text: f.value }));
  return dl;
}

export function figureCards(figures: Figure[]): HTMLElement {
  return el(
    'div',
    { class: 'r-figures', role: 'list', 'aria-label': 'Headline figures over the measurement' },
    ...figures.map((f) =>
      el(
        'div',
        { class: 'r-figure', role: 'listitem', 'data-figure': f.key, 'data-value': String(f.value) },
        el('div', { class: 'r-figure-label', text: f.label }),
        el('div', { class: 'r-figure-value', text: f.text }),
        f.detail ? el('div', { class: 'r-figure-detail', text: f.detail }) : null,
      ),
    ),
  );
}

export function warningList(warnings: string[]): HTMLElement | null {
  if (!warnings.length) return null;
  return el('ul', { class: 'r-warnings', 'aria-label': 'Warnings' }, ...warnings.map((w) => el('li', { 'data-field': 'warning', text: w })));
}

export function runHeader(r: RunPage): HTMLElement {
  // The run's name isolated (bdi): right-to-left text or a U+202E in it cannot reorder the
  // title around it; the note likewise (dir=auto).
  const title = el('span', { 'data-field': 'title' }, 'Run \'', el('bdi', { text: r.name }), r.id !== null ? `' #${r.id}` : `'`);
  return el(
    'header',
    { class: 'r-head' },
    el('h1', {}, title, statusBadge(r.complete, r.reason)),
    r.note ? el('p', { class: 'r-note-text', 'data-field': 'note', dir: 'auto', text: r.note }) : null,
    tagList(r.tags),
    figureCards(r.figures),
    warningList(r.warnings),
    factList(r.facts),
  );
}
