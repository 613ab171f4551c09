// The marker row under the charts (Firefox Profiler's marker chart): a lane per kind of
// marker (the run's phases, sweep steps, flow control, connections, errors, agents), as
// many rows as its markers need not to overlap, each marker a button drawn against the
// charts' time axis (the same x for the same time, zoomed and panned with them). Hover or
// focus shows its tooltip (name, start – end, how many); a click selects its span as the
// page's window. Under it, the marker table (the Firefox Profiler's): every marker in time
// order with a search over names, lanes and details, a row's button selecting its span.
// Names are text only.
import { el, setText } from '../../views/dom.js';
import { formatNs, thousands } from '../../lib/units.js';
import { formatSpan } from '../lib/format.js';
import { Marker, rowsOf, searchMarkers } from '../lib/markers.js';
import { ChartGroup, MARGIN_LEFT, MARGIN_RIGHT } from './time-chart.js';

const LANE_H = 18;

/** What a marker's tooltip says: name, span and how many. */
export function markerText(m: Marker): string {
  const count = m.count === null ? '' : m.unit === 's' ? `, ${thousands(m.count)} s` : `, ${thousands(m.count)} ${m.unit || 'events'}`;
  return `${m.name}: ${formatSpan(m.start, m.end)} (${formatNs(m.end - m.start)}${count})${m.detail ? ` — ${m.detail}` : ''}`;
}

const COLORS: Record<string, string> = {
  'warm-up': '#bab0ac',
  measurement: '#4e79a7',
  after: '#bab0ac',
  'sweep step': '#76b7b2',
  flag: '#f28e2b',
  counter: '#e15759',
  agent: '#7a2a8a',
};

export class MarkerRow {
  readonly el: HTMLElement;
  readonly buttons: HTMLButtonElement[] = [];
  private readonly plot: HTMLElement;
  private readonly tip: HTMLElement;
  private width = 0;

  constructor(
    readonly markers: Marker[],
    private readonly group: ChartGroup,
    select: (w: [number, number]) => void,
  ) {
    const { rows, rowOf } = rowsOf(markers);
    this.tip = el('div', { class: 'r-marker-tip', role: 'tooltip', id: 'r-marker-tip', hidden: true });
    this.plot = el('div', { class: 'r-plot r-marker-plot', style: `height:${rows.length * LANE_H + 2}px`, role: 'group', 'aria-label': 'Markers' });
    rows.forEach((row, k) => {
      if (row.first) this.plot.append(el('span', { class: 'r-marker-lane', style: `top:${k * LANE_H}px;width:${MARGIN_LEFT - 6}px`, title: row.lane, text: row.lane }));
    });
    markers.forEach((m, i) => {
      const b = el('button', {
        type: 'button',
        class: 'r-marker',
        'data-marker': m.kind,
        'data-name': m.name,
        'data-count': m.count === null ? undefined : String(m.count),
        'aria-label': `${markerText(m)}; select this window`,
        'aria-describedby': 'r-marker-tip',
        'data-row': String(rowOf[i]),
        style: `top:${rowOf[i] * LANE_H + 1}px;--c:${COLORS[m.kind] ?? '#888'}`,
      });
      setText(b, m.name);
      b.addEventListener('click', () => select([m.start, m.end]));
      const show = (): void => this.showTip(m, b);
      b.addEventListener('mouseenter', show);
      b.addEventListener('focus', show);
      b.addEventListener('mouseleave', () => (this.tip.hidden = true));
      b.addEventListener('blur', () => (this.tip.hidden = true));
      this.buttons.push(b);
      this.plot.append(b);
    });
    this.plot.append(this.tip);
    this.el = el(
      'section',
      { class: 'r-chart r-markers', 'data-chart': 'markers', 'aria-labelledby': 'r-markers-title' },
      el('div', { class: 'r-chart-head' }, el('h3', { class: 'r-chart-title', id: 'r-markers-title', text: 'Markers: what the load did (a click selects its time as the window)' })),
      this.plot,
      markerTable(markers, select),
    );
    new ResizeObserver(() => {
      const w = Math.floor(this.plot.clientWidth);
      if (w !== this.width) {
        this.width = w;
        this.draw();
      }
    }).observe(this.plot);
  }

  /** Places every marker on the group's time axis (hidden outside the visible range). */
  draw(): void {
    const w = this.width;
    if (w <= 0) return;
    const g = this.group;
    const lo = MARGIN_LEFT;
    const hi = w - MARGIN_RIGHT;
    this.markers.forEach((m, i) => {
      const b = this.buttons[i];
      const a = Math.max(lo, g.x(m.start, w));
      const e = Math.min(hi, g.x(m.end, w));
      b.hidden = e < lo || a > hi || e < a;
      b.style.left = `${a}px`;
      b.style.width = `${Math.max(2, e - a)}px`;
    });
  }

  /** Marks the markers whose span is the window. */
  select(w: [number, number] | null): void {
    this.markers.forEach((m, i) => this.buttons[i].setAttribute('aria-pressed', String(!!w && w[0] === m.start && w[1] === m.end)));
  }

  private showTip(m: Marker, b: HTMLElement): void {
    setText(this.tip, markerText(m));
    this.tip.hidden = false;
    const left = Math.min(Math.max(0, b.offsetLeft), Math.max(0, this.width - 320));
    this.tip.style.left = `${left}px`;
    this.tip.style.top = `${b.offsetTop + LANE_H}px`;
  }
}

/**
 * The marker table: every marker in time order (name, lane, start, end, length, how many),
 * a search over names, lanes and details, and a button per row selecting its span.
 */
function markerTable(markers: Marker[], select: (w: [number, number]) => void): HTMLElement {
  const search = el('input', { type: 'search', class: 'r-marker-search', 'data-ctrl': 'marker-search', 'aria-label': 'Search the markers (name, lane, detail)', placeholder: 'Search markers' });
  const count = el('span', { class: 'r-caption', 'aria-live': 'polite', 'data-ctrl': 'marker-count' });
  const body = el('tbody');
  const head = el('thead', {}, el('tr', {}, ...['marker', 'lane', 'start', 'end', 'length', 'how many'].map((h) => el('th', { scope: 'col', text: h }))));
  const fill = (): void => {
    const shown = searchMarkers(markers, search.value);
    setText(count, `${shown.length} of ${markers.length} markers`);
    body.replaceChildren(
      ...shown.map((i) => {
        const m = markers[i];
        const pick = el('button', { type: 'button', class: 'r-link', title: 'Select its time as the window', text: m.name });
        pick.addEventListener('click', () => select([m.start, m.end]));
        const many = m.count === null ? (m.detail ?? '') : `${thousands(m.count)} ${m.unit === 's' ? 's' : m.unit || 'events'}${m.detail ? ` — ${m.detail}` : ''}`;
        return el(
          'tr',
          { 'data-marker-row': m.kind },
          el('td', {}, pick),
          el('td', { text: m.lane }),
          el('td', { class: 'r-num', text: `${(m.start / 1e9).toFixed(2)} s` }),
          el('td', { class: 'r-num', text: `${(m.end / 1e9).toFixed(2)} s` }),
          el('td', { class: 'r-num', text: formatNs(m.end - m.start) }),
          el('td', { text: many }),
        );
      }),
    );
  };
  search.addEventListener('input', fill);
  fill();
  return el(
    'details',
    { class: 'r-marker-table', 'data-ctrl': 'marker-table' },
    el('summary', { text: `Marker table (${markers.length})` }),
    el('div', { class: 'r-marker-tools' }, search, count),
    el('div', { class: 'r-scroll', tabindex: 0, role: 'region', 'aria-label': 'Markers as a table' }, el('table', { class: 'r-table' }, head, body)),
  );
}
