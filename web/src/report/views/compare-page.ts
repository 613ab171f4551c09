// The comparison page: the overall result, the groups compared, the figures side by side
// by role (outcomes with their verdict: green improved, red regressed; settings held or
// not; context shown), the latency distributions
// overlaid, the series overlaid with every run aligned at the start of its measurement
// (a window dragged on them judged as kiln compare NAME@START-END judges it: its figures
// here, its function tables and what moved in its profile as kiln computed them for each
// window of whole seconds; the window kept in the URL), the function tables and the
// differential flame graph (a window's samples in it, cut from each measurement's start as
// kiln compare NAME@START-END cuts them).
import { el } from '../../views/dom.js';
import { ComparePage, CompareWindow, FunctionTable } from '../data.js';
import { ChartSpec, GROUP_COLORS, Line, Summary, sumColumns } from '../lib/charts.js';
import { compact, formatWindow, unitText } from '../lib/format.js';
import { analysisNotes, fixed, judgeWindow, runWindow, WindowJudgement } from '../lib/verdict.js';
import { distributionOfRuns } from '../lib/window.js';
import { ChartGroup, TimeChart } from './time-chart.js';
import { statusBadge, tagList } from './header.js';
import { extentOf } from './run-page.js';
import { XYChart, XYSeries } from './xy-chart.js';

export interface CompareView {
  group: ChartGroup;
  charts: Record<string, TimeChart>;
  distribution: XYChart | null;
}

const groupColor = (g: number): string => GROUP_COLORS[g % GROUP_COLORS.length];

/** A wide table kept inside the page's column: it scrolls sideways (and takes focus to). */
const scroll = (table: HTMLElement, label: string): HTMLElement => el('div', { class: 'r-scroll', tabindex: 0, role: 'region', 'aria-label': label }, table);

type Series = ComparePage['series'][0];

/** Figures' and functions' cells by verdict: green improved, red regressed. */
const VERDICT_CLASS: Record<string, string> = { improved: 'r-better', regressed: 'r-worse' };

export function buildComparePage(root: HTMLElement, c: ComparePage, title: string, status: HTMLElement): CompareView {
  const head = el('header', { class: 'r-head' }, el('h1', { 'data-field': 'title', text: title }));
  const groups = groupList(c);
  // The overall result, then the figures by role: outcomes judged, settings held or
  // not, context shown.
  const overall = el('p', { class: `r-overall r-overall-${c.overall}`, 'data-field': 'overall', 'data-verdict': c.overall, text: c.overall_line });
  const table = figuresTable(c);
  const notes = c.notes.length ? el('ul', { class: 'r-warnings', 'aria-label': 'Notes' }, ...c.notes.map((n) => el('li', { 'data-field': 'note', text: n }))) : null;
  const dist = distributionChart(c);
  // The function tables: the whole measurements', or a window's as kiln computed them.
  const functions = el('div', { 'data-field': 'functions' }, ...functionSections(c.functions, c));
  const diff = diffSection(c);
  const diffNote = diff ? el('p', { class: 'r-warnings', 'data-field': 'diff-window', hidden: true }) : null;
  if (diff && diffNote) diff.append(diffNote);
  const onWindow = (w: [number, number] | null): void => {
    dist?.show(w);
    const win = windowOf(c, w);
    functions.replaceChildren(...functionSections(w && win ? win.functions : c.functions, c, w && win ? w : null));
    // A window kiln did not compute when it wrote the page (long measurements, many runs):
    // the tables stay the whole measurements', and say so with the command for the window's.
    if (w && !win) {
      const [a, b] = [secs(w[0]), secs(w[1])];
      functions.prepend(
        el('p', {
          class: 'r-warnings',
          'data-field': 'functions-window',
          text: `These function tables are of the whole measurements (this page holds no tables for a window of runs this long); the window's: kiln compare ${c.groups.map((g) => `${g.label}@${a}-${b}`).join(' ')}`,
        }),
      );
    }
    // The window in the URL: a reload keeps it (the flame graph's viewer keeps its own).
    const h = writeCompareWindow(location.hash, w);
    history.replaceState(history.state, '', h ? `#${h}` : location.pathname + location.search);
    if (diffNote) {
      diffNote.hidden = w === null;
      diffShown = setWindowNote(diffNote, c, w);
      showDiffWindow(c, diffShown);
    }
  };
  // The viewers' script runs after this one: its flame graph takes the window once ready.
  let diffShown: [number, number] | null = null;
  window.addEventListener('kiln-viewers-ready', () => showDiffWindow(c, diffShown));
  const { section: series, group, charts } = seriesSection(c, status, onWindow);
  // A window chosen in the flame graph's own time strip is the page's (its clock is the
  // measurements' when it follows windows), widened to whole seconds as a drag on a chart is.
  window.addEventListener('kiln-window', (e) => {
    const d = (e as CustomEvent<{ source: unknown; window: [number, number] | null }>).detail;
    if (!d || c.diff?.windows_below_ns == null || diffApp(c) !== d.source) return;
    group.commit(d.window);
  });
  const distribution = dist?.chart ?? null;
  root.append(
    head,
    // The groups under a heading of their level (the page's headings go 1, 2, 3).
    el('section', { class: 'r-section', 'aria-labelledby': 'r-h-groups' }, el('h2', { id: 'r-h-groups', text: 'Runs compared' }), groups),
    el('section', { class: 'r-section', 'aria-labelledby': 'r-h-figures' }, el('h2', { id: 'r-h-figures', text: 'Figures' }), overall, scroll(table, 'Figures side by side'), notes),
    ...(distribution ? [el('section', { class: 'r-section', 'aria-labelledby': 'r-h-dist' }, el('h2', { id: 'r-h-dist', text: 'Latency distributions' }), distribution.el)] : []),
    series,
    functions,
    ...(diff ? [diff] : []),
  );
  const fromUrl = parseCompareWindow(location.hash);
  if (fromUrl) {
    const w = group.snap(fromUrl);
    group.setSelection(w);
    showWindowFigures(series.querySelector<HTMLElement>('[data-field="window-figures"]')!, c, w);
    onWindow(w);
  }
  return { group, charts, distribution };
}

/** The groups compared, each with its runs. */
function groupList(c: ComparePage): HTMLElement {
  return el(
    'div',
    { class: 'r-groups' },
    ...c.groups.map((g, gi) =>
      el(
        'section',
        { class: 'r-group', 'data-group': String(gi), style: `--c:${groupColor(gi)}`, 'aria-label': `Group ${g.label}` },
        el('h3', { text: `${gi === 0 ? 'Baseline' : 'Compared'}: ${g.label} (${g.runs.length} run${g.runs.length === 1 ? '' : 's'})` }),
        ...g.runs.map((r) =>
          el(
            'div',
            { class: 'r-run', 'data-run': String(r.id ?? '') },
            el('span', { text: `#${r.id ?? '?'} '${r.name}', ${r.started} — ${r.load}` }),
            r.complete ? null : statusBadge(false, r.reason),
            r.note ? el('div', { 'data-field': 'note', text: `note: ${r.note}` }) : null,
            tagList(r.tags),
          ),
        ),
      ),
    ),
  );
}

/** The figures side by side, a body per role; each compared group's change and verdict. */
function figuresTable(c: ComparePage): HTMLElement {
  const labels = c.groups.map((g) => g.label);
  const table = el('table', { class: 'r-table', 'data-table': 'figures' });
  const hr = el('tr', {}, el('th', { scope: 'col', text: 'figure' }));
  labels.forEach((l, i) => {
    hr.append(el('th', { scope: 'col', text: c.groups[i].runs.length > 1 ? `${l} (median, range)` : l }));
    if (i > 0) hr.append(el('th', { scope: 'col', text: `change vs ${labels[0]}` }), el('th', { scope: 'col', text: 'verdict' }));
  });
  hr.append(el('th', { scope: 'col', text: 'noise' }));
  table.append(el('thead', {}, hr));
  const headings: Record<string, string> = { outcome: 'Outcomes (judged)', setting: 'Settings (held or not, never judged)', context: 'Context (shown, never judged)' };
  const width = 2 + (labels.length - 1) * 3 + 1;
  for (const role of ['outcome', 'setting', 'context'] as const) {
    const rows = c.metrics.filter((m) => m.role === role);
    if (!rows.length) continue;
    const body = el('tbody', { 'data-role': role }, el('tr', { class: 'r-role' }, el('th', { scope: 'rowgroup', colspan: String(width), text: headings[role] })));
    for (const m of rows) body.append(figureRow(m, role));
    table.append(body);
  }
  return table;
}

/** One figure's row: each group's cell, then per compared group its change and verdict. */
function figureRow(m: ComparePage['metrics'][0], role: string): HTMLElement {
  const tr = el('tr', { 'data-metric': m.key, 'data-role': m.role }, el('th', { scope: 'row', title: m.why ?? '', text: `${m.label}${role === 'outcome' ? (m.better === 'higher' ? ' (higher is better)' : ' (lower is better)') : ''}` }));
  m.cells.forEach((cell, i) => {
    tr.append(el('td', { 'data-group': String(i), 'data-held': cell?.held ?? '', text: cell ? cell.text : '–' }));
    if (i === 0) return;
    const ch = m.changes[i];
    const cls = (ch && VERDICT_CLASS[ch.verdict]) ?? 'r-same';
    tr.append(
      el('td', { class: `r-change ${cls}`, 'data-change': String(i), 'data-percent': ch ? String(ch.percent) : '', text: ch ? ch.text : '' }),
      el('td', { class: `r-verdict ${cls}`, 'data-verdict': ch?.verdict ?? '', text: ch?.verdict_text ?? '' }),
    );
  });
  tr.append(el('td', { 'data-field': 'noise', text: m.noise ?? '' }));
  return tr;
}

/**
 * The latency distributions overlaid, or null when no run kept one: each group's runs
 * merged over their whole measurements, and over a window of them once one is chosen
 * (each run over the same seconds of its own measurement), when every run kept
 * per-second histograms of that latency.
 */
function distributionChart(c: ComparePage): { chart: XYChart; show(w: [number, number] | null): void } | null {
  if (!c.distributions.length) return null;
  const title = (w: [number, number] | null): string => `Latency by percentile over ${w ? `the window ${formatWindow(w)} of each measurement` : 'each measurement'} (log scale; dashed: from the intended send time)`;
  const stored = (): XYSeries[] => c.distributions.map((d) => ({ label: `${d.name} (${compact(d.count)})`, color: groupColor(d.group), dash: d.intended, points: d.points.map(([p, v]) => [p, v] as [number, number]) }));
  // The latency each curve is of: its name after the group's label.
  const nameOf = (d: ComparePage['distributions'][0]): string => d.name.slice(c.groups[d.group].label.length + ' — '.length);
  const runsOf = (g: number) => c.series.filter((s) => s.group === g);
  const perSecond = c.distributions.every((d) => runsOf(d.group).every((s) => s.latency_seconds.series.some((x) => x.name === nameOf(d))));
  const windowed = (w: [number, number]): XYSeries[] =>
    c.distributions.flatMap((d) => {
      const runs = runsOf(d.group).flatMap((s) => {
        const rw = runWindow(s, w);
        return rw ? [{ ps: s.latency_seconds, w: rw }] : [];
      });
      const x = distributionOfRuns(runs, nameOf(d));
      return x ? [{ label: `${d.name} (${compact(x.count)})`, color: groupColor(d.group), dash: d.intended, points: x.points }] : [];
    });
  const chart = new XYChart({
    id: 'distribution',
    title: title(null),
    x: { kind: 'nines', label: 'percentile', format: (v) => `${v.toFixed(3).replace(/\.?0+$/, '')}%` },
    left: { unit: 'us', scale: 'log', label: 'latency' },
    series: stored(),
    height: 280,
  });
  const show = (w: [number, number] | null): void => {
    if (perSecond) chart.setSeries(w ? windowed(w) : stored(), title(w));
  };
  return { chart, show };
}

/** The end of the longest measurement, ns from its start. */
const measureEndOf = (c: ComparePage): number => Math.max(0, ...c.series.map((s) => s.measure_end));

/**
 * Series overlaid, aligned at the start of each run's measurement. A window chosen on
 * them is the same seconds of every run's own measurement: its figures per group and
 * their verdicts below, and the command that gives them with the functions.
 */
function seriesSection(c: ComparePage, status: HTMLElement, onWindow: (w: [number, number] | null) => void): { section: HTMLElement; group: ChartGroup; charts: Record<string, TimeChart> } {
  const measureEnd = measureEndOf(c);
  const windowBox = el('div', { class: 'r-window-figures', 'data-field': 'window-figures', hidden: true });
  const group = new ChartGroup(extentOf(c.series.flatMap((s) => s.tables), [[0, measureEnd]]), {
    selectable: true,
    edges: Array.from({ length: Math.ceil(measureEnd / 1e9) + 1 }, (_, i) => i * 1e9),
    measure: [0, measureEnd],
    status,
    axisLabel: 'seconds from the start of each measurement',
    onSelect: (w) => {
      showWindowFigures(windowBox, c, w);
      onWindow(w);
    },
  });
  const charts: Record<string, TimeChart> = {};
  const section = el('section', { class: 'r-section', 'aria-labelledby': 'r-h-series' }, el('h2', { id: 'r-h-series', text: 'Series overlaid, aligned at the start of each measurement (0 s); drag for a window of every run, judged' }), windowBox);
  for (const spec of overlaySpecs(c)) {
    const ch = group.add(spec);
    charts[spec.id] = ch;
    section.append(ch.el);
  }
  return { section, group, charts };
}

/** A column of one of a run's tables as a line, or null when the run has none. */
function columnLine(s: Series, table: string, name: string | null): Line | null {
  const t = s.tables.find((x) => x.name === table);
  const cl = name ? t?.columns.find((x) => x.name === name) : undefined;
  return t && cl ? { label: name!, column: name!, table, time: t.time, values: cl.values, color: '' } : null;
}

/** The sum of some columns of one of a run's tables as a line named `as`. */
function sumLine(s: Series, table: string, names: string[], as: string): Line | null {
  const t = s.tables.find((x) => x.name === table);
  const cols = t ? t.columns.filter((x) => names.includes(x.name)) : [];
  return t && cols.length ? { label: as, column: as, table, time: t.time, values: sumColumns(cols, t.time.length), color: '' } : null;
}

/** The charts overlaid: each a line per run, coloured by its group. */
function overlaySpecs(c: ComparePage): ChartSpec[] {
  const labels = c.groups.map((g) => g.label);
  const measureEnd = measureEndOf(c);
  const specs: ChartSpec[] = [];
  const runLabel = (s: Series): string => `${labels[s.group]} #${s.id ?? '?'}`;
  const overlay = (id: string, title: string, unit: string, scale: 'linear' | 'log', pickLine: (s: Series) => Line | null, summary?: (lines: Line[], runs: Series[]) => Summary): void => {
    const lines: Line[] = [];
    const runs: Series[] = [];
    for (const s of c.series) {
      const l = pickLine(s);
      if (l && l.values.some((v) => v !== null)) {
        lines.push({ ...l, label: runLabel(s), color: groupColor(s.group), width: s.index === 0 ? 1.75 : 1, group: s.group });
        runs.push(s);
      }
    }
    if (lines.length) specs.push({ id, title, unit, scale, kind: 'lines', lines, height: 120, summary: summary?.(lines, runs) });
  };
  // A percentile over a measurement is its histogram's, never a mean of per-second
  // percentiles: the legend gives each run's own figure as the table above counts it (its
  // group's median beside it when the group has repeats).
  const figureOf = (key: string) => (lines: Line[], runs: Series[]): Summary => ({
    caption: `${key} over each whole measurement, from its histograms (each run's, as the figures table counts it; a window's: kiln compare NAME@START-END)`,
    value: (k, w) => {
      if (w[0] > 0 || w[1] < measureEnd) return null;
      const group = lines[k].group ?? 0;
      const cell = c.metrics.find((m) => m.key === key)?.cells[group];
      if (!cell) return null;
      const size = c.groups[group]?.runs.length ?? 0;
      const own = cell.each && cell.each.length === size ? cell.each[runs[k].index] : undefined;
      if (own === undefined) return { value: cell.median, text: cell.n > 1 ? `${cell.text} (median of ${cell.n})` : cell.text };
      return { value: cell.median, text: cell.n > 1 ? `${own} (its group's median ${cell.text.replace(/ \(.*$/, '')})` : own };
    },
  });
  const unit = c.series[0]?.unit ?? 'op';
  const n = c.columns;
  overlay('throughput', `Throughput: ${unit} completed per second`, `${unit}/s`, 'linear', (s) => columnLine(s, n.load, s.completed));
  overlay('p99', 'Latency p99 per second (log scale)', 'us', 'log', (s) => columnLine(s, n.load, s.latency ? `${s.latency} p99` : null), figureOf('p99'));
  overlay('target_cpu', 'Target CPU, % of one CPU', '%', 'linear', (s) => sumLine(s, n.target, [n.cpu_user, n.cpu_system], `${n.cpu_user}+system`));
  overlay('rss', 'Target resident memory (RSS)', 'bytes', 'linear', (s) => columnLine(s, n.target, n.rss));
  overlay('switches', 'Target context switches per second', '1/s', 'linear', (s) => sumLine(s, n.target, [n.voluntary, n.involuntary], 'switches'));
  overlay('machine', 'Machine busy, % of all CPUs', '%', 'linear', (s) => columnLine(s, n.machine, n.busy));
  return specs;
}

/**
 * The URL's key for the window (ns from the start of each measurement, `A-B`). Not the
 * viewers' shared `t`: that is a time on a profile's own clock, and the differential
 * flame graph merges runs of different clocks. The dot keeps every viewer off it.
 */
const WINDOW_KEY = 'cmp.t';

/** The window the URL holds, or null. */
function parseCompareWindow(hash: string): [number, number] | null {
  const m = /^(\d+)-(\d+)$/.exec(new URLSearchParams(hash.replace(/^#/, '')).get(WINDOW_KEY) ?? '');
  const w: [number, number] | null = m ? [Number(m[1]), Number(m[2])] : null;
  return w && Number.isSafeInteger(w[1]) && w[0] < w[1] ? w : null;
}

/** The hash with the window set (or removed); every other key kept. */
function writeCompareWindow(hash: string, w: [number, number] | null): string {
  const p = new URLSearchParams(hash.replace(/^#/, ''));
  if (w) p.set(WINDOW_KEY, `${Math.round(Math.max(0, w[0]))}-${Math.round(w[1])}`);
  else p.delete(WINDOW_KEY);
  return p.toString();
}

/** Whole seconds of a window, as the page's windows are kept (ns from each measurement's start). */
const wholeSeconds = (w: [number, number]): [number, number] | null => {
  const [a, b] = [w[0] / 1e9, w[1] / 1e9];
  return Number.isInteger(a) && Number.isInteger(b) ? [a, b] : null;
};

/** The window's function tables and profile clause as kiln computed them, or null when it did not. */
function windowOf(c: ComparePage, w: [number, number] | null): CompareWindow | null {
  const s = w ? wholeSeconds([Math.max(0, w[0]), w[1]]) : null;
  return (s && c.windows?.find((x) => x.start === s[0] && x.end === s[1])) || null;
}

/**
 * The seconds [A, B) of a window the differential flame graph can show: whole seconds,
 * starting within every run's measurement, its samples timed from each measurement's start.
 */
function diffSeconds(c: ComparePage, w: [number, number] | null): [number, number] | null {
  const below = c.diff?.windows_below_ns;
  const s = w && below != null ? wholeSeconds([Math.max(0, w[0]), w[1]]) : null;
  return s && s[0] * 1e9 < below! ? s : null;
}

/**
 * Under a window: says which seconds the differential flame graph shows (the window's, as
 * the command gives them), or that it is of the whole measurements and the command that
 * gives the window's. Returns the samples' window to show ([A s, B s) as ns on the
 * measurements' clock, both ends included: the samples are instants), or null for all.
 */
function setWindowNote(p: HTMLElement, c: ComparePage, w: [number, number] | null): [number, number] | null {
  p.removeAttribute('data-window');
  if (!w) return null;
  const [a, b] = [secs(Math.max(0, w[0])), secs(w[1])];
  const command = `kiln compare ${c.groups.map((g) => `${g.label}@${a}-${b}`).join(' ')} -o diff.svg`;
  const s = diffSeconds(c, w);
  if (!s) {
    p.textContent = `This flame graph is of the whole measurements (this page holds no samples timed for this window); the window's: ${command}`;
    return null;
  }
  p.setAttribute('data-window', `${s[0]}-${s[1]}`);
  p.textContent = `This flame graph is of the window ${formatWindow(w)} of each measurement: the samples of its seconds ${s[0]}-${s[1]}, as ${command} draws them`;
  return [s[0] * 1e9, s[1] * 1e9 - 1];
}

/** The viewers' apps on the page (web/src/main.ts), once their script has run. */
interface DiffApp {
  root: HTMLElement;
  setWindow(w: [number, number] | null): void;
}

/** The differential flame graph's viewer, once the viewers' script has run. */
function diffApp(c: ComparePage): DiffApp | undefined {
  const mount = c.diff && document.querySelector<HTMLElement>(`[data-kiln-mount="${CSS.escape(c.diff.key)}"]`);
  const apps = (window as unknown as { __kiln?: { apps: DiffApp[] } }).__kiln?.apps ?? [];
  return mount ? apps.find((x) => mount.contains(x.root)) : undefined;
}

/** Shows the samples of `w` (ns from each measurement's start) in the differential flame graph, or all. */
function showDiffWindow(c: ComparePage, w: [number, number] | null): void {
  diffApp(c)?.setWindow(w);
}

/** The function tables: functions judged like figures, ranked by change of cost; a window's when w is given. */
function functionSections(tables: FunctionTable[], c: ComparePage, w: [number, number] | null = null): HTMLElement[] {
  const labels = c.groups.map((g) => g.label);
  const functions: HTMLElement[] = [];
  const [a, b] = [labels[0], labels[labels.length - 1]];
  const over = w ? ` over the window ${formatWindow(w)} of each measurement` : '';
  tables.forEach((t, ti) => {
    if (!t.rows.length) return;
    const ft = el('table', { class: 'r-table', 'data-table': 'functions', 'data-event': t.event, 'data-window': w ? `${secs(w[0])}-${secs(w[1])}` : '' });
    ft.append(el('thead', {}, el('tr', {}, ...['function', `${unitText(t.unit)} ${a}`, `${unitText(t.unit)} ${b}`, 'change', `total % ${a}`, `total % ${b}`].map((h) => el('th', { scope: 'col', text: h })))));
    const tb = el('tbody');
    for (const f of t.rows) {
      // Coloured only when judged beyond noise, as the figures are.
      const cls = VERDICT_CLASS[f.verdict] ?? 'r-same';
      tb.append(
        el(
          'tr',
          { 'data-function': f.name, 'data-verdict': f.verdict },
          el('td', { title: f.name, text: f.name }),
          el('td', { text: f.before }),
          el('td', { text: f.after }),
          el('td', { class: cls, 'data-delta': String(f.delta), text: f.change }),
          el('td', { text: f.total_before.toFixed(2) }),
          el('td', { text: f.total_after.toFixed(2) }),
        ),
      );
    }
    ft.append(tb);
    const id = `r-h-functions-${ti}`;
    functions.push(el('section', { class: 'r-section', 'aria-labelledby': id }, el('h2', { id, text: `Functions (${t.event})${over}: ${t.what}, ranked by change` }), scroll(ft, `Functions (${t.event})`)));
  });
  return functions;
}

/** The differential flame graph's section around its viewer's mount, or null. */
function diffSection(c: ComparePage): HTMLElement | null {
  if (!c.diff) return null;
  const labels = c.groups.map((g) => g.label);
  const mount = document.querySelector<HTMLElement>(`[data-kiln-mount="${CSS.escape(c.diff.key)}"]`);
  mount?.setAttribute('data-heading-level', '3');
  return el(
    'section',
    { class: 'r-section', 'aria-labelledby': 'r-h-diff' },
    el('h2', {
      id: 'r-h-diff',
      text: `Differential flame graph (${c.diff.event}): ${labels[0]} → ${labels[labels.length - 1]}, normalised, red grew, blue shrank${c.diff.marked ? '; only functions whose change is beyond noise are coloured' : '; one run per group: every change is coloured, noise included'}`,
    }),
    mount,
  );
}

/** Seconds as a window reference writes them: `10`, `2.5`. */
const secs = (ns: number): string => String(Math.round((ns / 1e9) * 1000) / 1000);

/** A window's verdict table: the figures by role, each group's cell, each change as kiln compare writes it. */
function windowTable(j: WindowJudgement, labels: string[], runs: number[]): HTMLElement {
  const table = el('table', { class: 'r-table', 'data-table': 'window-figures' });
  const hr = el('tr', {}, el('th', { scope: 'col', text: 'figure' }));
  labels.forEach((l, i) => {
    hr.append(el('th', { scope: 'col', text: runs[i] > 1 ? `${l} (median, range)` : l }));
    if (i > 0) hr.append(el('th', { scope: 'col', text: `change vs ${labels[0]}, verdict` }));
  });
  hr.append(el('th', { scope: 'col', text: 'noise' }));
  table.append(el('thead', {}, hr));
  const headings: Record<string, string> = { outcome: 'Outcomes (judged)', setting: 'Settings (held or not, never judged)', context: 'Context (shown, never judged)' };
  for (const role of ['outcome', 'setting', 'context'] as const) {
    const rows = j.rows.filter((r) => r.role === role);
    if (!rows.length) continue;
    const body = el('tbody', { 'data-role': role }, el('tr', { class: 'r-role' }, el('th', { scope: 'rowgroup', colspan: String(labels.length * 2 + 1), text: headings[role] })));
    for (const r of rows) {
      const tr = el('tr', { 'data-metric': r.key, 'data-role': r.role }, el('th', { scope: 'row', title: r.why ?? '', text: `${r.label}${role === 'outcome' ? (r.better === 'higher' ? ' (higher is better)' : ' (lower is better)') : ''}` }));
      r.cells.forEach((text, i) => {
        tr.append(el('td', { 'data-group': String(i), 'data-value': String(r.groups[i]?.median ?? ''), text }));
        if (i === 0) return;
        const ch = r.changes[i];
        const verdict = ch && role === 'outcome' ? ch.verdict.verdict : 'shown';
        const cls = VERDICT_CLASS[verdict] ?? 'r-same';
        tr.append(el('td', { class: `r-change ${cls}`, 'data-change': String(i), 'data-verdict': verdict, 'data-percent': ch ? String(ch.percent) : '', 'data-p': ch?.p === null || !ch ? '' : String(ch.p), text: r.changeTexts[i] }));
      });
      tr.append(el('td', { 'data-field': 'noise', text: r.noise_pct > 0 ? `±${fixed(r.noise_pct, 1)}%` : '' }));
      body.append(tr);
    }
    table.append(body);
  }
  return table;
}

/**
 * The judgement of window w (ns from the start of each measurement): every run's figures
 * over the same seconds of its own measurement, every figure's verdict by kiln compare's
 * rules (lib/verdict.ts), and the command that gives the same table with its functions.
 */
function showWindowFigures(box: HTMLElement, c: ComparePage, w: [number, number] | null): void {
  box.replaceChildren();
  box.hidden = w === null;
  if (!w) return;
  const labels = c.groups.map((g) => g.label);
  // The window as the command names it (to the millisecond), judged as the command judges it.
  const [a, b] = [secs(Math.max(0, w[0])), secs(w[1])];
  const refs = labels.map((l) => `${l}@${a}-${b}`);
  // Named as the command names them: its overall line says `after@1-3 against before@1-3`.
  const win = windowOf(c, w);
  const j = judgeWindow(refs, c.series, c.judging, [Math.round(Number(a) * 1e9), Math.round(Number(b) * 1e9)], c.columns, win);
  const rules = `alpha ${c.judging.alpha}, threshold ${c.judging.threshold_pct}%`;
  box.append(
    el('h3', { text: `Window ${formatWindow(w)} of each measurement, judged (${rules})` }),
    el('p', { class: `r-overall r-overall-${j.overall.verdict}`, 'data-field': 'window-overall', 'data-verdict': j.overall.verdict, text: j.overall.line }),
    ...j.outside.map((r) => el('p', { class: 'r-warnings', 'data-field': 'window-outside', text: `${labels[r.group]} #${r.id ?? '?'}: its measurement ends before the window starts; kiln compare would refuse this window` })),
    scroll(windowTable(j, labels, c.groups.map((g) => g.runs.length)), 'Window figures side by side'),
    el('ul', { 'aria-label': 'How the window was judged' }, ...analysisNotes(refs, c.judging).map((n) => el('li', { 'data-field': 'window-note', text: n }))),
    el('p', { text: 'Each run over the same seconds of its own measurement, decided by the rules of kiln compare. The same window with its function tables and what moved in the profile: ' }),
    el('pre', { 'data-field': 'window-command', text: `kiln compare ${refs.join(' ')}` }),
  );
}
