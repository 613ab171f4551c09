// The trend page (`kiln runs trend NAME -o trend.html`): for each configuration of the
// name, each judged figure's value in every run (oldest left), its segments' medians as
// steps and its change points as marked lines, each with its run, change, p and the
// functions that moved; then the table of change points and the command that compares
// the runs on either side, and the differential flame graph of the runs either side of
// the change point selected (a click on its mark or its row's button). Drawn as SVG (a
// few hundred points per figure at most); the flame graphs are the viewer's, embedded.
import { el } from '../../views/dom.js';
import { TrendConfiguration, TrendDiff, TrendPage, TrendSeries, TrendShift } from '../data.js';
import { formatValue } from '../lib/format.js';
import { Scale, linearScale, logScale } from '../lib/scale.js';

export interface TrendView {
  /** Each figure's chart: configuration index, figure key, the change points drawn. */
  charts: { config: number; key: string; marks: number }[];
  /** Shows the differential flame graph of a change point (configuration, figure key, run); false when it has none. */
  select(config: number, figure: string, run: number): boolean;
}

/** Selects a change point's differential flame graph. */
type Select = (figure: string, run: number, scroll: boolean) => void;

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
  const machine = s.machine ? `; the machine's other work changed with it: ${s.machine.before_cpus.toFixed(2)} → ${s.machine.after_cpus.toFixed(2)} CPUs busy (the change may be the machine's, not this configuration's)` : '';
  return `run #${s.run} (${day(s.started_unix_ms)}): ${f.label} ${pct(s.percent)} (${pText(s.p)}), ${formatValue(s.before, f.unit)} → ${formatValue(s.after, f.unit)}, ${s.verdict}${moved ? `; functions that moved: ${moved}` : ''}${machine}`;
}

/** Latency and other times are read on a log scale (a few slow runs leave the rest readable). */
const isTime = (unit: string): boolean => /^(ns|us|µs|ms|s)$/.test(unit);

/** The y scale of a figure: log for times whose values are all positive, else linear. */
export function trendScale(f: TrendSeries): Scale {
  const vals = [...f.values.filter((v): v is number => v !== null && Number.isFinite(v)), ...f.segments.map((s) => s.median)];
  const lo = Math.min(...vals);
  const hi = Math.max(...vals);
  if (isTime(f.unit) && lo > 0) return logScale(lo, hi);
  const pad = hi > lo ? 0 : Math.abs(lo) || 1;
  return linearScale(lo - pad, hi + pad, 4, null);
}

/** Up to `most` run indices spread over n runs, the first and last among them. */
function runTicks(n: number, most: number): number[] {
  if (n <= most) return Array.from({ length: n }, (_, i) => i);
  const step = Math.ceil((n - 1) / (most - 1));
  const out: number[] = [];
  for (let i = 0; i < n - 1; i += step) out.push(i);
  out.push(n - 1);
  return out;
}

function chart(c: TrendConfiguration, f: TrendSeries, ci: number, select: Select | null): SVGSVGElement {
  const n = c.runs.length;
  const scale = trendScale(f);
  const x = (i: number): number => PAD.left + (n <= 1 ? 0.5 : i / (n - 1)) * (W - PAD.left - PAD.right);
  const y = (v: number): number => PAD.top + (1 - scale.frac(v)) * (H - PAD.top - PAD.bottom);
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'group', 'aria-label': `${f.label} over ${n} runs (${scale.kind === 'log' ? 'log scale' : 'linear scale'}); Tab reaches each run and change point`, 'data-trend-chart': f.key, 'data-config': ci, 'data-scale': scale.kind });
  const label = (tx: number, ty: number, text: string, anchor = 'start'): SVGTextElement => {
    const t = svg('text', { x: tx, y: ty, 'font-size': 10, fill: 'currentColor', 'text-anchor': anchor, 'aria-hidden': 'true' });
    t.textContent = text;
    return t;
  };
  // Axes: the value's ticks with grid lines, the runs' ids along the bottom.
  root.append(svg('line', { x1: PAD.left, x2: W - PAD.right, y1: H - PAD.bottom, y2: H - PAD.bottom, stroke: 'currentColor', 'stroke-opacity': 0.3 }));
  for (const v of scale.ticks) {
    const ty = y(v);
    if (!(ty >= PAD.top - 0.5 && ty <= H - PAD.bottom + 0.5)) continue;
    root.append(
      svg('line', { x1: PAD.left, x2: W - PAD.right, y1: ty, y2: ty, stroke: 'currentColor', 'stroke-opacity': 0.12, 'data-tick': v }),
      label(PAD.left - 4, ty + 3, formatValue(v, f.unit), 'end'),
    );
  }
  const xt = runTicks(n, 8);
  xt.forEach((i, k) => {
    root.append(
      svg('line', { x1: x(i), x2: x(i), y1: H - PAD.bottom, y2: H - PAD.bottom + 3, stroke: 'currentColor', 'stroke-opacity': 0.5 }),
      label(x(i), H - 6, `#${c.runs[i]?.id ?? '?'}`, k === 0 && n > 1 ? 'start' : k === xt.length - 1 && n > 1 ? 'end' : 'middle'),
    );
  });
  // Segment medians, as steps.
  f.segments.forEach((s, k) => {
    const end = k + 1 < f.segments.length ? f.segments[k + 1].first : n;
    root.append(svg('line', { x1: x(s.first), x2: x(Math.max(s.first, end - 1)), y1: y(s.median), y2: y(s.median), stroke: '#4e79a7', 'stroke-width': 2, 'stroke-opacity': 0.6, 'data-segment': k }, title(`runs #${c.runs[s.first]?.id} … #${c.runs[end - 1]?.id}: median ${formatValue(s.median, f.unit)} (${s.runs} runs)`)));
  });
  // Change points: a line between the last run before and the first after; focusable,
  // Enter or a click shows its differential flame graph.
  for (const s of f.change_points) {
    const at = (x(s.index - 1) + x(s.index)) / 2;
    const colour = s.verdict === 'regressed' ? '#e15759' : '#59a14f';
    root.append(svg('line', { x1: at, x2: at, y1: PAD.top, y2: H - PAD.bottom, stroke: colour, 'stroke-width': 2, 'stroke-dasharray': '4 3', 'data-change-point': s.run }, title(shiftText(s, f))));
    if (select) {
      // A wider, invisible band to click or focus: the mark's differential flame graph.
      const hit = svg('rect', { x: at - 6, y: PAD.top, width: 12, height: H - PAD.top - PAD.bottom, fill: 'transparent', 'pointer-events': 'all', style: 'cursor:pointer', class: 'r-trend-focus', tabindex: 0, role: 'button', 'aria-label': `Change point: ${shiftText(s, f)}; Enter shows its differential flame graph`, 'data-change-point-hit': s.run }, title(`${shiftText(s, f)} — click: its differential flame graph`));
      hit.addEventListener('click', () => select(f.key, s.run, true));
      hit.addEventListener('keydown', (e) => {
        if (e.key !== 'Enter' && e.key !== ' ') return;
        e.preventDefault();
        select(f.key, s.run, true);
      });
      root.append(hit);
    }
  }
  // The runs' values: each focusable, its value, run and date said.
  f.values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v)) return;
    const r = c.runs[i];
    const text = `run #${r.id} (${day(r.started_unix_ms)}): ${formatValue(v, f.unit)}`;
    root.append(svg('circle', { cx: x(i), cy: y(v), r: 3, fill: 'currentColor', class: 'r-trend-focus', tabindex: 0, role: 'img', 'aria-label': `${f.label}, ${text}; its report: kiln runs report '#${r.id}'`, 'data-run': r.id }, title(`${text} (kiln runs report '#${r.id}')`)));
  });
  return root;
}

/**
 * The differential flame graphs of configuration `ci`'s change points, in a section of
 * their own around the viewers' mounts, one shown at a time; null when it has none.
 */
function diffSection(diffs: TrendDiff[], c: TrendConfiguration, ci: number): { section: HTMLElement; select: Select } | null {
  const mine = diffs.filter((d) => d.config === ci);
  const mounts = new Map<string, HTMLElement>();
  for (const d of mine) {
    const m = document.querySelector<HTMLElement>(`[data-kiln-mount="${CSS.escape(d.key)}"]`);
    if (!m) continue;
    // Under the section's heading (h3) and the change point's line.
    m.setAttribute('data-heading-level', '4');
    mounts.set(d.key, m);
  }
  if (mounts.size === 0) return null;
  const id = `r-h-diff-${ci}`;
  const caption = el('p', { 'data-field': 'diff-caption', 'aria-live': 'polite' });
  const section = el('section', { class: 'r-subsection', 'aria-labelledby': id, 'data-diffs': String(ci) }, el('h3', { id, text: 'Differential flame graph of a change point' }), caption, ...mounts.values());
  const label = (f: string): string => c.figures.find((x) => x.key === f)?.label ?? f;
  const select: Select = (figure, run, scroll) => {
    const d = mine.find((x) => x.points.some(([k, r]) => k === figure && r === run));
    if (!d || !mounts.has(d.key)) return;
    for (const [k, m] of mounts) m.hidden = k !== d.key;
    section.dataset.selected = d.key;
    section.dataset.figure = figure;
    section.dataset.run = String(run);
    const points = d.points.map(([k, r]) => `${label(k)} at run #${r}`).join(', ');
    caption.textContent = `${points}: ${d.title}, each side's runs merged, normalised; red grew, blue shrank${d.marked ? '; only functions whose change is beyond noise are coloured' : '; one run on a side: every change is coloured, noise included'}.`;
    for (const b of document.querySelectorAll<HTMLElement>(`[data-config="${ci}"] [data-show-diff]`)) b.setAttribute('aria-pressed', String(b.dataset.showDiff === `${figure}:${run}`));
    if (scroll) section.scrollIntoView({ block: 'start' });
  };
  const first = mine.find((d) => mounts.has(d.key))?.points[0];
  if (first) select(first[0], first[1], false);
  return { section, select };
}

/** A change point's row in the table. */
function shiftRow(c: TrendConfiguration, f: TrendSeries, s: TrendShift, select: Select | null, has: boolean): HTMLElement {
  const before = c.runs[s.index - 1]?.id;
  const button = el('button', { type: 'button', 'data-show-diff': `${f.key}:${s.run}`, 'aria-pressed': 'false', 'aria-label': `Differential flame graph of the change of ${f.label} at run #${s.run}`, text: 'flame graph' });
  button.addEventListener('click', () => select?.(f.key, s.run, true));
  return el(
    'tr',
    { 'data-figure': f.key, 'data-run': String(s.run), 'data-verdict': s.verdict },
    el('td', { text: `#${s.run}` }),
    el('td', { text: day(s.started_unix_ms) }),
    el('td', { text: f.label }),
    el('td', { class: s.verdict === 'regressed' ? 'r-worse' : 'r-better', text: pct(s.percent) }),
    el('td', { text: pText(s.p) }),
    el('td', { text: s.functions.map((x) => `${x.name} ${x.points >= 0 ? '+' : ''}${x.points.toFixed(1)} pts`).join(', ') || '–' }),
    el('td', {}, el('code', { text: `kiln compare #${before} #${s.run}` })),
    el('td', {}, has ? button : '–'),
  );
}

export function buildTrendPage(root: HTMLElement, t: TrendPage, pageTitle: string): TrendView {
  const selects = new Map<number, Select>();
  const view: TrendView = {
    charts: [],
    select: (ci, figure, run) => {
      const s = selects.get(ci);
      s?.(figure, run, true);
      return !!s && root.querySelector(`[data-diffs="${ci}"]`)?.getAttribute('data-run') === String(run);
    },
  };
  const m = t.method;
  root.append(
    el('header', { class: 'r-head' }, el('h1', { 'data-field': 'title', text: pageTitle })),
    el('p', { 'data-field': 'method', text: `Change points by ${m.name}: a permutation test of ${m.permutations} shuffles per split at alpha ${m.alpha}, segments of ${m.min_segment} runs or more, changes under ${m.threshold_pct}% counted but not listed.` }),
  );
  if (t.left_out_text) root.append(el('p', { class: 'r-note-wide', 'data-field': 'left-out', text: `Left out: ${t.left_out_text}.` }));
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
    const diffs = diffSection(t.diffs ?? [], c, ci);
    const select = diffs?.select ?? null;
    if (select) selects.set(ci, select);
    const has = (f: TrendSeries, s: TrendShift): boolean => !!t.diffs?.some((d) => d.config === ci && d.points.some(([k, r]) => k === f.key && r === s.run));
    const rows: HTMLElement[] = [];
    for (const f of c.figures) {
      const marks = f.change_points.length;
      view.charts.push({ config: ci, key: f.key, marks });
      section.append(
        el('h3', { text: `${f.label}: ${marks ? `${marks} change point${marks === 1 ? '' : 's'}` : 'no change point'}${f.below_threshold ? ` (${f.below_threshold} smaller, not listed)` : ''}` }),
        chart(c, f, ci, select),
      );
      for (const s of f.change_points) rows.push(shiftRow(c, f, s, select, has(f, s)));
    }
    if (rows.length) {
      const table = el('table', { class: 'r-table', 'data-table': 'change-points' });
      table.append(el('thead', {}, el('tr', {}, ...['run', 'started', 'figure', 'change', 'p', 'functions that moved', 'the runs either side', 'their profiles'].map((h) => el('th', { scope: 'col', text: h })))), el('tbody', {}, ...rows));
      section.append(el('h3', { text: 'Change points' }), el('div', { class: 'r-scroll', tabindex: 0, role: 'region', 'aria-label': 'Change points' }, table));
    }
    if (diffs) section.append(diffs.section);
    root.append(section);
    // The buttons exist now: mark the one selected.
    if (diffs?.section.dataset.figure) select?.(diffs.section.dataset.figure, Number(diffs.section.dataset.run), false);
  });
  return view;
}
