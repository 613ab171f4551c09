// The header: title, what the profile is (input, event, total, samples, duration), the
// view tabs, the controls and, for a diff, the legend naming both inputs. Builds the
// elements; the app wires them to the state.
import { Model } from '../app-state/model.js';
import { ViewName, ViewState } from '../app-state/state.js';
import { GONE_COLOR, NEW_COLOR } from '../lib/diff.js';
import { PALETTES } from '../lib/palette.js';
import { formatNs, thousands } from '../lib/units.js';
import { el, setText } from './dom.js';

export interface TabSpec {
  view: ViewName;
  label: string;
  key: string;
}

export interface HeaderParts {
  el: HTMLElement;
  ctrl: Record<string, HTMLElement>;
  tabs: Map<ViewName, HTMLButtonElement>;
}

export interface HeaderActions {
  tab(v: ViewName): void;
  icicle(): void;
  order(v: string): void;
  threads(v: string): void;
  tracks(): void;
  invert(): void;
  searchNames(): void;
  palette(v: string): void;
  /** Switches between palette and category colours. */
  colors(): void;
  normalise(): void;
  reset(): void;
  search(q: string): void;
  step(dir: 1 | -1): void;
  matchCase(): void;
  exportMenu(anchor: HTMLElement): void;
  help(): void;
  /** Fills the browser's window with the viewer, or back. */
  full(): void;
}

/** One line saying what a profile is: where from, which event, how much, over how long. */
export function facts(model: Model, i: number, ctrl: Record<string, HTMLElement> = {}): HTMLElement[] {
  const unit = model.units[i];
  const t = model.totals(i);
  const meta = model.meta.profiles[i] ?? {};
  const out: HTMLElement[] = [];
  const fact = (key: string, label: string, value: string): void => {
    const v = el('span', { class: 'fact-value', text: value });
    ctrl[`fact-${key}-${i}`] = v;
    out.push(el('span', { class: 'fact', 'data-fact': key, title: key === 'input' ? value : undefined }, el('span', { class: 'fact-label', text: `${label} ` }), v));
  };
  if (meta.source) fact('input', 'Input', meta.source);
  if (unit.event) fact('event', 'Event', unit.event);
  const total = unit.countsSamples ? unit.formatSamples(t.weight) : unit.format(t.weight) + (unit.isTime ? ` of ${unit.what}` : '');
  fact('total', 'Total', total);
  if (!unit.countsSamples && unit.samplesKnown) {
    let s = unit.formatSamples(t.samples);
    if (unit.periodNs) s += ` (one per ${formatNs(unit.periodNs)} of CPU, ${thousands(1e9 / unit.periodNs)} Hz)`;
    fact('samples', 'Samples', s);
  }
  if (t.durationNs !== null) fact('duration', 'Duration', formatNs(t.durationNs));
  return out;
}

/**
 * `embedded`: the key of a viewer that is part of a page (null: a page of its own): its
 * header is then no banner landmark, and its search landmark is named after it.
 */
/** The views' tabs and their keys (the flame chart's only with a chart). */
export function viewTabs(chart: boolean): TabSpec[] {
  return [
    { view: 'flame', label: 'Flame graph', key: '1' },
    ...(chart ? [{ view: 'chart' as ViewName, label: 'Flame chart', key: '4' }] : []),
    { view: 'tree', label: 'Call tree', key: '5' },
    { view: 'table', label: 'Functions', key: '2' },
    { view: 'sandwich', label: 'Sandwich', key: '3' },
  ];
}

export function buildHeader(model: Model, views: TabSpec[], idPrefix: string, embedded: string | null, headingLevel: number, a: HeaderActions): HeaderParts {
  const m = model.meta;
  const ctrl: Record<string, HTMLElement> = {};
  const button = (key: string, text: string, title: string, onClick: (b: HTMLButtonElement) => void, extra: Record<string, string> = {}): HTMLButtonElement => {
    // The accessible name starts with the visible text (WCAG 2.5.3); symbols get words.
    const words = title.replace(/ \(.*\)$/, '');
    const name = /^[▲▼?]$/.test(text) ? words : text === 'Aa' || text === 'Names' ? `${text}, ${words.replace(/;.*$/, '').toLowerCase()}` : undefined;
    const b = el('button', { type: 'button', 'data-ctrl': key, title, 'aria-label': name, text, ...extra });
    b.addEventListener('click', () => onClick(b));
    ctrl[key] = b;
    return b;
  };
  const select = (key: string, title: string, options: [string, string][], onChange: (v: string) => void): HTMLSelectElement => {
    const s = el('select', { 'data-ctrl': key, title, 'aria-label': title.replace(/ \(.*\)$/, '') }, ...options.map(([v, t]) => el('option', { value: v, text: t })));
    s.addEventListener('change', () => onChange(s.value));
    ctrl[key] = s;
    return s;
  };
  const tabs = new Map<ViewName, HTMLButtonElement>();
  const tablist = tabList(views, idPrefix, a, ctrl, tabs);
  const search = el('input', { type: 'search', class: 'search', placeholder: 'Search functions (regex)', 'aria-label': 'Search functions (regular expression)', 'data-ctrl': 'search' });
  search.addEventListener('input', () => a.search(search.value));
  search.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      a.step(e.shiftKey ? -1 : 1);
    }
  });
  ctrl.search = search;
  const raw = model.raw;
  const searchGroup = el(
    'span',
    { class: 'search-group', role: 'search', 'aria-label': embedded !== null ? `Search the ${embedded} flame graph` : undefined },
    search,
    button('case', 'Aa', 'Match case always (c); without it, a pattern with a capital letter matches case', () => a.matchCase()),
    button('names', 'Names', 'Also match process and thread names (t); without it, functions only', () => a.searchNames()),
    button('prev-match', '▲', 'Previous match (Shift+Enter)', () => a.step(-1)),
    button('next-match', '▼', 'Next match (Enter)', () => a.step(1)),
    el('span', { class: 'match-count', 'data-ctrl': 'match-count', 'aria-live': 'polite' }),
    el('span', { class: 'matched', 'data-ctrl': 'matched' }),
  );
  ctrl.matched = searchGroup.querySelector('.matched') as HTMLElement;
  ctrl['match-count'] = searchGroup.querySelector('.match-count') as HTMLElement;
  const tools = el(
    'div',
    { class: 'toolbar' },
    tablist,
    button('icicle', 'Icicle', 'Roots at the top (i)', () => a.icicle()),
    select('order', 'Order of frames (l)', [['alphabetical', 'Alphabetical'], ['left-heavy', 'Left-heavy']], a.order),
    button('invert', 'Inverted', 'Invert the call tree: the functions that ran, their callers below (b)', () => a.invert()),
    raw.sampleThread
      ? select('threads', 'Threads', [['merged', 'All threads merged'], ['groups', 'One root per thread group'], ['threads', 'One root per thread']], a.threads)
      : null,
    raw.sampleThread && !model.isDiff ? button('tracks', 'Tracks', 'Show or hide the tracks, one per thread group (h: to the tracks)', () => a.tracks()) : null,
    model.isDiff ? null : select('palette', 'Palette', PALETTES.map((p) => [p, p] as [string, string]), a.palette),
    model.categories ? button('colors', 'By category', 'Colour frames by category (what kind of work), with a legend; off: the palette', () => a.colors()) : null,
    model.isDiff ? button('normalise', 'Normalise', 'Scale before to after\'s total (n)', () => a.normalise()) : null,
    button('reset', 'Reset zoom', 'Reset zoom (0)', () => a.reset()),
    searchGroup,
    button('export', 'Export', 'Export this view: SVG, PNG or folded stacks (e)', (b) => a.exportMenu(b), { 'aria-haspopup': 'menu' }),
    button('help', '?', 'Keyboard shortcuts (?)', () => a.help()),
    button('full', 'Full screen', 'Fill the window with this viewer; Esc or this button goes back', () => a.full()),
  );
  const info = model.isDiff
    ? el(
        'div',
        { class: 'facts' },
        ...[0, 1].flatMap((i) => [el('span', { class: 'fact-side', text: `${m.labels[i]}:` }), ...facts(model, i, ctrl)]),
      )
    : el('div', { class: 'facts' }, ...facts(model, 0, ctrl));
  const legend = model.isDiff ? diffLegend(model) : null;
  if (legend) ctrl['legend-note'] = legend.querySelector('.legend-note') as HTMLElement;
  const header = el(
    embedded !== null ? 'div' : 'header',
    { class: 'kiln-header' },
    el(`h${Math.min(6, Math.max(1, headingLevel))}` as 'h1', { class: 'title', title: m.title, text: m.title }),
    m.subtitle ? el('div', { class: 'subtitle', title: m.subtitle, text: m.subtitle }) : null,
    info,
    tools,
    legend,
  );
  return { el: header, ctrl, tabs };
}

/** The views' tabs: one tab stop, arrow keys, Home and End between them (the ARIA tabs pattern). */
function tabList(views: TabSpec[], idPrefix: string, a: HeaderActions, ctrl: Record<string, HTMLElement>, tabs: Map<ViewName, HTMLButtonElement>): HTMLElement {
  const tablist = el('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Views' });
  for (const t of views) {
    const b = el('button', {
      type: 'button',
      role: 'tab',
      id: `${idPrefix}-tab-${t.view}`,
      'aria-controls': `${idPrefix}-pane-${t.view}`,
      'data-ctrl': `tab-${t.view}`,
      title: `${t.label} (${t.key})`,
      text: t.label,
    });
    b.addEventListener('click', () => a.tab(t.view));
    tabs.set(t.view, b);
    ctrl[`tab-${t.view}`] = b;
    tablist.append(b);
  }
  tablist.addEventListener('keydown', (e) => {
    const list = [...tabs.values()];
    const i = list.indexOf(document.activeElement as HTMLButtonElement);
    if (i < 0) return;
    let k = -1;
    if (e.key === 'ArrowRight') k = (i + 1) % list.length;
    else if (e.key === 'ArrowLeft') k = (i - 1 + list.length) % list.length;
    else if (e.key === 'Home') k = 0;
    else if (e.key === 'End') k = list.length - 1;
    if (k < 0) return;
    e.preventDefault();
    e.stopPropagation();
    list[k].focus();
    list[k].click();
  });
  return tablist;
}

/** What a differential flame graph's colours mean. */
function diffLegend(model: Model): HTMLElement {
  const m = model.meta;
  const name = (i: number): string => {
    const src = m.profiles[i]?.source;
    return src ? `${m.labels[i]} (${src})` : m.labels[i];
  };
  return el(
    'div',
    { class: 'legend' },
    swatch('rgb(255,60,60)', `grew in ${name(1)}`),
    swatch('rgb(60,60,255)', `shrank in ${name(1)}`),
    swatch(NEW_COLOR, `new in ${m.labels[1]}`),
    swatch(GONE_COLOR, `gone in ${m.labels[1]} (width from ${m.labels[0]})`),
    el('span', { class: 'legend-note', 'data-ctrl': 'legend-note' }),
  );
}

/**
 * The header as the state has it: the current tab, pressed buttons, chosen options, the
 * controls that apply to the view, the search and whether it parses (`searchError`).
 */
export function showState(h: HeaderParts, s: ViewState, tracksShown: boolean, searchError: string | null): void {
  for (const [v, tab] of h.tabs) {
    tab.setAttribute('aria-selected', String(s.view === v));
    tab.tabIndex = s.view === v ? 0 : -1;
  }
  const ctrl = h.ctrl;
  // Controls of the merged graph mean nothing on the time-ordered chart.
  for (const k of ['icicle', 'order', 'threads', 'reset']) if (ctrl[k]) ctrl[k].hidden = s.view === 'chart';
  for (const k of ['icicle', 'reset']) if (ctrl[k] && s.view === 'tree') ctrl[k].hidden = true;
  ctrl.invert.hidden = s.view !== 'tree';
  ctrl.invert.setAttribute('aria-pressed', String(s.invert));
  ctrl.icicle.setAttribute('aria-pressed', String(s.icicle));
  (ctrl.order as HTMLSelectElement).value = s.order;
  if (ctrl.threads) (ctrl.threads as HTMLSelectElement).value = s.threadMode;
  if (ctrl.palette) (ctrl.palette as HTMLSelectElement).value = s.palette;
  ctrl.colors?.setAttribute('aria-pressed', String(s.colors === 'category'));
  if (ctrl.normalise) ctrl.normalise.setAttribute('aria-pressed', String(s.normalise));
  ctrl.case.setAttribute('aria-pressed', String(s.matchCase));
  ctrl.names.setAttribute('aria-pressed', String(s.searchNames));
  ctrl.tracks?.setAttribute('aria-pressed', String(tracksShown));
  ctrl.full.setAttribute('aria-pressed', String(s.full));
  const search = ctrl.search as HTMLInputElement;
  if (search.value !== s.query) search.value = s.query;
  search.classList.toggle('invalid', searchError !== null);
  search.setAttribute('aria-invalid', String(searchError !== null));
  search.title =
    searchError ??
    `Regular expression over ${s.searchNames ? 'functions and process and thread names' : 'function names'}; ${s.matchCase ? 'case always matters (Aa)' : 'case matters when the pattern has a capital letter'}. Enter: next match.`;
}

/** A diff's legend note: both inputs' totals (and whether before is scaled to after's). */
export function showDiffTotals(ctrl: Record<string, HTMLElement>, model: Model, diff: { sumBefore: number; sumAfter: number; scale: number }, normalise: boolean): void {
  const note = ctrl['legend-note'];
  if (!note) return;
  const u = model.unit;
  const labels = model.meta.labels;
  setText(
    note,
    `${labels[0]}: ${u.format(diff.sumBefore / diff.scale)}, ${labels[1]}: ${u.format(diff.sumAfter)}` +
      (normalise ? ` (${labels[0]} normalised to ${labels[1]}'s total)` : ''),
  );
}

function swatch(color: string, text: string): HTMLElement {
  const s = el('span', { class: 'swatch', 'aria-hidden': 'true' });
  s.style.background = color;
  return el('span', { class: 'legend-item' }, s, text);
}
