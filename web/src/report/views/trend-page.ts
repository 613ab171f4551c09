// The trend page (`kiln runs trend NAME -o trend.html`): for each configuration of the
// name, each judged figure's value in every run (oldest left), its segments' medians as
// steps and its change points as marked lines, each with its run, change, p and the
// functions that moved; then the table of change points and the command that compares
// the runs on either side. Drawn as SVG (a few hundred points per figure at most).
import { el } from '../../views/dom.js';
import { TrendConfiguration, TrendPage, TrendSeries, TrendShift } from '../data.js';
import { formatValue } from '../lib/format.js';

export interface TrendView {
  /** Each figure's chart: configuration index, figure key, the change points drawn. */
  charts: { config: number; key: string; marks: number }[];
}

const SVG = 'http://www.w3.org/2000/svg';
const W = 720;
const H = 150;
const PAD = { left: 64, right: 12, top: 10, bottom: 22 };

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, ...children: (Node | null)[]): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) if (c) e.append(c);
  return e;
}

/** A tooltip: an SVG <title>, text only. */
const title = (text: string): SVGTitleElement => {
  const t = svg('title', {});
  t.textContent = text;
  return t;
};

const day = (ms: number): string => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
const pText = (p: number): string => (p <= 0.01 ? 'p ≤ 0.01' : `p = ${p.toFixed(3)}`);
const pct = (v: number): string => `${v >= 0 ? '+' : ''}${v.toFixed(1)}%`;

/** What a change point says, as the text output says it. */
export function shiftText(s: TrendShift, f: TrendSeries): string {
  const moved = s.functions.map((m) => `${m.name} ${m.points >= 0 ? '+' : ''}${m.points.toFixed(1)} pts`).join(', ');
  return `run #${s.run} (${day(s.started_unix_ms)}): ${f.label} ${pct(s.percent)} (${pText(s.p)}), ${formatValue(s.before, f.unit)} → ${formatValue(s.after, f.unit)}, ${s.verdict}${moved ? `; functions that moved: ${moved}` : ''}`;
}

function chart(c: TrendConfiguration, f: TrendSeries, ci: number): SVGSVGElement {
  const n = c.runs.length;
  const vals = f.values.filter((v): v is number => v !== null && Number.isFinite(v));
  let lo = Math.min(...vals, ...f.segments.map((s) => s.median));
  let hi = Math.max(...vals, ...f.segments.map((s) => s.median));
  if (!(hi > lo)) {
    hi = lo + 1;
    lo -= 1;
  }
  const x = (i: number): number => PAD.left + (n <= 1 ? 0.5 : i / (n - 1)) * (W - PAD.left - PAD.right);
  const y = (v: number): number => PAD.top + (1 - (v - lo) / (hi - lo)) * (H - PAD.top - PAD.bottom);
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-label': `${f.label} over ${n} runs`, 'data-trend-chart': f.key, 'data-config': ci });
  // Axis labels: the range and the runs at both ends.
  const label = (tx: number, ty: number, text: string, anchor = 'start'): SVGTextElement => {
    const t = svg('text', { x: tx, y: ty, 'font-size': 10, fill: 'currentColor', 'text-anchor': anchor });
    t.textContent = text;
    return t;
  };
  root.append(
    svg('line', { x1: PAD.left, x2: W - PAD.right, y1: H - PAD.bottom, y2: H - PAD.bottom, stroke: 'currentColor', 'stroke-opacity': 0.3 }),
    label(PAD.left - 4, y(hi) + 4, formatValue(hi, f.unit), 'end'),
    label(PAD.left - 4, y(lo) + 4, formatValue(lo, f.unit), 'end'),
    label(x(0), H - 6, `#${c.runs[0]?.id ?? '?'}`, 'start'),
    label(x(n - 1), H - 6, `#${c.runs[n - 1]?.id ?? '?'}`, 'end'),
  );
  // Segment medians, as steps.
  f.segments.forEach((s, k) => {
    const end = k + 1 < f.segments.length ? f.segments[k + 1].first : n;
    root.append(svg('line', { x1: x(s.first), x2: x(Math.max(s.first, end - 1)), y1: y(s.median), y2: y(s.median), stroke: '#4e79a7', 'stroke-width': 2, 'stroke-opacity': 0.6, 'data-segment': k }, title(`runs #${c.runs[s.first]?.id} … #${c.runs[end - 1]?.id}: median ${formatValue(s.median, f.unit)} (${s.runs} runs)`)));
  });
  // Change points: a line between the last run before and the first after.
  for (const s of f.change_points) {
    const at = (x(s.index - 1) + x(s.index)) / 2;
    const colour = s.verdict === 'regressed' ? '#e15759' : '#59a14f';
    root.append(svg('line', { x1: at, x2: at, y1: PAD.top, y2: H - PAD.bottom, stroke: colour, 'stroke-width': 2, 'stroke-dasharray': '4 3', 'data-change-point': s.run }, title(shiftText(s, f))));
  }
  // The runs' values.
  f.values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v)) return;
    const r = c.runs[i];
    root.append(svg('circle', { cx: x(i), cy: y(v), r: 2.5, fill: 'currentColor', 'data-run': r.id }, title(`run #${r.id} (${day(r.started_unix_ms)}): ${formatValue(v, f.unit)}`)));
  });
  return root;
}

export function buildTrendPage(root: HTMLElement, t: TrendPage, pageTitle: string): TrendView {
  const view: TrendView = { charts: [] };
  const m = t.method;
  root.append(
    el('header', { class: 'r-head' }, el('h1', { 'data-field': 'title', text: pageTitle })),
    el('p', { 'data-field': 'method', text: `Change points by ${m.name}: a permutation test of ${m.permutations} shuffles per split at alpha ${m.alpha}, segments of ${m.min_segment} runs or more, changes under ${m.threshold_pct}% counted but not listed.` }),
  );
  if (t.gates?.length) {
    root.append(el('ul', { class: 'r-warnings', 'aria-label': 'Gates' }, ...t.gates.map((g) => el('li', { 'data-gate': g.status, text: `fail-if ${g.condition}: ${g.status} (${g.message})` }))));
  }
  t.configurations.forEach((c, ci) => {
    const id = `r-h-config-${ci}`;
    const section = el(
      'section',
      { class: 'r-section', 'aria-labelledby': id, 'data-config': String(ci) },
      el('h2', { id, text: `${c.runs.length} runs of one configuration${ci === 0 ? ' (the newest run’s)' : ''}` }),
      el('p', { class: 'r-config', text: c.configuration.split('\0').filter(Boolean).join(' · ') }),
    );
    const rows: HTMLElement[] = [];
    for (const f of c.figures) {
      const marks = f.change_points.length;
      view.charts.push({ config: ci, key: f.key, marks });
      section.append(
        el('h3', { text: `${f.label}: ${marks ? `${marks} change point${marks === 1 ? '' : 's'}` : 'no change point'}${f.below_threshold ? ` (${f.below_threshold} smaller, not listed)` : ''}` }),
        chart(c, f, ci),
      );
      for (const s of f.change_points) {
        const before = c.runs[s.index - 1]?.id;
        rows.push(
          el(
            'tr',
            { 'data-figure': f.key, 'data-run': String(s.run), 'data-verdict': s.verdict },
            el('td', { text: `#${s.run}` }),
            el('td', { text: day(s.started_unix_ms) }),
            el('td', { text: f.label }),
            el('td', { class: s.verdict === 'regressed' ? 'r-worse' : 'r-better', text: pct(s.percent) }),
            el('td', { text: pText(s.p) }),
            el('td', { text: s.functions.map((x) => `${x.name} ${x.points >= 0 ? '+' : ''}${x.points.toFixed(1)} pts`).join(', ') || '–' }),
            el('td', {}, el('code', { text: `kiln compare #${before} #${s.run}` })),
          ),
        );
      }
    }
    if (rows.length) {
      const table = el('table', { class: 'r-table', 'data-table': 'change-points' });
      table.append(el('thead', {}, el('tr', {}, ...['run', 'started', 'figure', 'change', 'p', 'functions that moved', 'the runs either side'].map((h) => el('th', { scope: 'col', text: h })))), el('tbody', {}, ...rows));
      section.append(el('h3', { text: 'Change points' }), el('div', { class: 'r-scroll', tabindex: 0, role: 'region', 'aria-label': 'Change points' }, table));
    }
    root.append(section);
  });
  return view;
}
