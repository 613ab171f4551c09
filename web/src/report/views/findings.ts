// The findings panel at the top of the run report: what the run's data says limited it,
// most important first, as Rust ranked them for the page (crates/findings; nothing is
// recomputed here). Each finding: its class in words, its claim, how much it explains,
// each piece of evidence with where to look (the window it covers, the chart of its
// series, the flame graph of its profile with its function searched), and the command
// that checks it independently. Text only: every string reaches the page as text.
import { el, setText } from '../../views/dom.js';
import { Finding, FindingEvidence } from '../data.js';

/** What the panel's links do on the page. */
export interface FindingActions {
  /** Selects a window (ns on the page's clock). */
  window(w: [number, number]): void;
  /** Shows the chart holding a series ("table/column"); false when none does. */
  series(series: string): boolean;
  /** Shows a profile's flame graph, its function searched when given; false when the page has none. */
  profile(event: string, focus: string | null): boolean;
}

const pctText = (p: number): string => `${p >= 9.95 ? p.toFixed(0) : p.toFixed(1)}%`;

/** A finding's claim with what it explains, as the text summary writes it. */
export function findingText(f: Finding): string {
  return `${f.title}: ${f.claim}${f.explains ? ` [${pctText(f.explains.pct)} of ${f.explains.of}]` : ''}`;
}

function link(text: string, label: string, act: () => boolean | void, data: Record<string, string>): HTMLButtonElement {
  // The name starts with the visible text (WCAG's label in name).
  const b = el('button', { type: 'button', class: 'r-link', 'aria-label': `${text}: ${label}`, text, ...data });
  b.addEventListener('click', () => {
    if (act() === false) b.setAttribute('aria-disabled', 'true');
  });
  return b;
}

function evidenceItem(e: FindingEvidence, a: FindingActions): HTMLElement {
  const links: HTMLElement[] = [];
  if (e.from_s !== null && e.from_s !== undefined && e.to_s !== null && e.to_s !== undefined && e.to_s > e.from_s) {
    const w: [number, number] = [Math.round(e.from_s * 1e9), Math.round(e.to_s * 1e9)];
    links.push(link(`${e.from_s.toFixed(1)}–${e.to_s.toFixed(1)} s`, `Select ${e.from_s} s to ${e.to_s} s as the window`, () => a.window(w), { 'data-finding-window': `${w[0]}-${w[1]}` }));
  }
  if (e.series) {
    const s = e.series;
    links.push(link('chart', `Show the chart of ${s}`, () => a.series(s), { 'data-finding-series': s }));
  }
  if (e.profile) {
    const p = e.profile;
    const focus = e.focus ?? null;
    links.push(link(focus ? `flame graph: ${focus}` : 'flame graph', `Show the ${p} flame graph${focus ? ` with ${focus} searched` : ''}`, () => a.profile(p, focus), { 'data-finding-profile': p }));
  }
  const item = el('li', { class: 'r-evidence' });
  setText(item, `${e.what}: ${e.value} (${e.source})`);
  if (links.length) item.append(' — ', ...links.flatMap((l, i) => (i ? [', ', l] : [l])));
  return item;
}

/** The panel, or null when the page has no findings to show. */
export function findingsPanel(findings: Finding[] | undefined, a: FindingActions): HTMLElement | null {
  if (!findings) return null;
  const body = findings.length
    ? el(
        'ol',
        { class: 'r-findings-list' },
        ...findings.map((f) =>
          el(
            'li',
            { class: 'r-finding', 'data-finding': f.rule, 'data-class': f.class },
            el('p', { class: 'r-finding-claim' }, el('strong', { text: `${f.title}: ` }), f.claim, f.explains ? el('span', { class: 'r-finding-explains', text: ` [${pctText(f.explains.pct)} of ${f.explains.of}]` }) : ''),
            f.evidence.length ? el('ul', { class: 'r-evidence-list', 'aria-label': 'Evidence' }, ...f.evidence.map((e) => evidenceItem(e, a))) : null,
            f.check ? el('p', { class: 'r-finding-check' }, 'check: ', el('code', { text: f.check })) : null,
          ),
        ),
      )
    : el('p', { text: 'Nothing in this run\u2019s data points to a limit.' });
  return el('section', { class: 'r-section r-findings', id: 'r-findings', 'aria-labelledby': 'r-h-findings' }, el('h2', { id: 'r-h-findings', text: `Findings${findings.length ? ` (${findings.length})` : ''}` }), body);
}
