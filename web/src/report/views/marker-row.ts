// The marker row under the charts (Firefox Profiler's marker chart): a lane per kind of
// marker (the run's phases, sweep steps, flow control, connections, errors, agents), each
// marker a button drawn against the charts' time axis (the same x for the same time,
// zoomed and panned with them). Hover or focus shows its tooltip (name, start – end, how
// many); a click selects its span as the page's window. Names are text only.
import { el, setText } from '../../views/dom.js';
import { formatNs, thousands } from '../../lib/units.js';
import { formatSpan } from '../lib/format.js';
import { Marker, lanesOf } from '../lib/markers.js';
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
    const lanes = lanesOf(markers);
    this.tip = el('div', { class: 'r-marker-tip', role: 'tooltip', id: 'r-marker-tip', hidden: true });
    this.plot = el('div', { class: 'r-plot r-marker-plot', style: `height:${lanes.length * LANE_H + 2}px`, role: 'group', 'aria-label': 'Markers' });
    lanes.forEach((lane, k) => {
      this.plot.append(el('span', { class: 'r-marker-lane', style: `top:${k * LANE_H}px;width:${MARGIN_LEFT - 6}px`, title: lane, text: lane }));
    });
    for (const m of markers) {
      const b = el('button', {
        type: 'button',
        class: 'r-marker',
        'data-marker': m.kind,
        'data-name': m.name,
        'data-count': m.count === null ? undefined : String(m.count),
        'aria-label': `${markerText(m)}; select this window`,
        'aria-describedby': 'r-marker-tip',
        style: `top:${lanes.indexOf(m.lane) * LANE_H + 1}px;--c:${COLORS[m.kind] ?? '#888'}`,
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
    }
    this.plot.append(this.tip);
    this.el = el(
      'section',
      { class: 'r-chart r-markers', 'data-chart': 'markers', 'aria-labelledby': 'r-markers-title' },
      el('div', { class: 'r-chart-head' }, el('h3', { class: 'r-chart-title', id: 'r-markers-title', text: 'Markers: what the load did (a click selects its time as the window)' })),
      this.plot,
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
