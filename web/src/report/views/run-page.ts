// The run report: header (with jump links to every section), a window bar, the timeline
// (every series on one time axis), the sweep curves, the latency distribution, then the
// flame graphs of every event. A window chosen anywhere — dragged on a chart, a sweep step
// clicked, a button, the URL, or a viewer's own time strip — is shown everywhere: every
// chart shades it, every figure, legend, heading and distribution is the window's (the
// whole measurement's beside it), every flame graph, call tree and function table shows
// exactly its samples.
import { el, setText } from '../../views/dom.js';
import { thousands } from '../../lib/units.js';
import { RunPage, Table } from '../data.js';
import { COLORS, runCharts } from '../lib/charts.js';
import { WindowFigure, windowFigures } from '../lib/figures.js';
import { compact, formatValue, formatWindow } from '../lib/format.js';
import { edgesOf, parseWindow, typicalStep, writeWindow } from '../lib/intervals.js';
import { beamText, recordedPart } from '../lib/grid.js';
import { buildKnee, stepBoundaries } from './sweep.js';
import { plainLatency } from '../lib/names.js';
import { distributionIn } from '../lib/window.js';
import { ChartGroup, MARGIN_LEFT, MARGIN_RIGHT, TimeChart } from './time-chart.js';
import { FigureCards, SectionLink, runHeader } from './header.js';
import { XYChart, XYSeries } from './xy-chart.js';
import { MarkerRow } from './marker-row.js';
import { findingsPanel } from './findings.js';

/** What the page exposes for tests and benchmarks (window.__kilnReport). */
export interface RunView {
  /** The page's data as the report carries it. */
  data: RunPage;
  group: ChartGroup;
  charts: Record<string, TimeChart>;
  sweep: XYChart[];
  distribution: XYChart | null;
  /** The marker row (phases and the load's events). */
  markers: MarkerRow;
  /** The selected window, ns since the origin, or null. */
  window: [number, number] | null;
  /** Selects a window (ns since the origin) as a drag on a chart would. */
  setWindow(w: [number, number] | null): void;
}

/** The `kiln-window` event of the viewers (web/src/views/app.ts). */
const WINDOW_EVENT = 'kiln-window';
/** Sent by the viewers' script once every viewer has drawn (web/src/main.ts). */
const READY_EVENT = 'kiln-viewers-ready';

interface ViewerApp {
  root: HTMLElement;
  timeline: { canvas: HTMLCanvasElement } | null;
  setAxis(span: [number, number] | null, left: number, right: number): void;
  window: [number, number] | null;
  windowSamples(): number;
  /** The page's rule for a window dragged in the viewer (absolute ns in, absolute ns out). */
  snapWindow: ((w: [number, number]) => [number, number]) | null;
  model: { raw: { timeOrigin: number; sampleTime: unknown }; samplesIn(r: [number, number] | null): { total: number } };
}

interface KilnViewers {
  apps: ViewerApp[];
  setWindow(w: [number, number] | null): void;
}

function viewers(): KilnViewers | null {
  return (window as unknown as { __kiln?: KilnViewers }).__kiln ?? null;
}

/** The time axis' extent: every table's first interval start to its last end. */
export function extentOf(tables: Table[], extra: [number, number][] = []): [number, number] {
  let a = Infinity;
  let b = -Infinity;
  for (const t of tables) {
    if (!t.time.length) continue;
    a = Math.min(a, t.time[0] - typicalStep(t.time));
    b = Math.max(b, t.time[t.time.length - 1]);
  }
  for (const [x, y] of extra) {
    a = Math.min(a, x);
    b = Math.max(b, y);
  }
  if (!(a < b)) return [0, 1e9];
  return [a, b];
}

type Window = [number, number];

/** The page's state shared by its parts: the selected window and what shows it. */
interface RunState {
  r: RunPage;
  origin: number;
  measure: Window;
  current: Window | null;
}

export function buildRunPage(root: HTMLElement, r: RunPage, origin: number, status: HTMLElement): RunView {
  const measure: Window = [r.measure.start, r.measure.end];
  const st: RunState = { r, origin, measure, current: parseWindow(location.hash) };
  const windowBar = buildWindowBar(r, measure, (w) => apply(w), () => group.resetView());
  const group = chartGroup(r, measure, status, (w) => apply(w), (zoomed) => {
    windowBar.zoomReset.hidden = !zoomed;
    alignStrips(group, origin);
  });
  const tl = buildTimeline(r, group, (w) => apply(w));
  const sweep = buildSweep(r, (w) => apply(w));
  const dist = buildDistribution(r, measure);
  const profiles = buildProfiles(r);
  const cards = new FigureCards(r.figures, r.latency);
  const head = runHeader(r, sectionLinks(r, sweep !== null, dist !== null), cards);
  head.id = 'r-head-figures';
  // The window bar stays in view over the charts only: it never covers a flame graph
  // (each has its own time strip and says its window).
  const charts = el('div', { class: 'r-charts' }, windowBar.bar, tl.section, ...(sweep ? [sweep.section] : []), ...(dist ? [dist.section] : []));
  const findings = findingsPanel(r.findings, {
    window: (w) => apply(w),
    series: (s) => showSeries(s),
    profile: (event, focus) => showProfile(r, event, focus),
  });
  const beam = r.beam ? el('p', { class: 'r-beam', 'data-field': 'beam' }) : null;
  if (beam) cards.el.after(beam);
  root.append(head, ...(findings ? [findings] : []), charts, profiles.section);
  // The measurement's figures are the run's headline, as kiln computed them (r.figures);
  // a window's are computed here by the same rule (lib/figures.ts).
  const measurementFigures = new Map(r.figures.map((f): [string, WindowFigure] => [f.key, { value: f.value, text: f.text, detail: f.detail ?? undefined }]));

  const show = (): void => {
    const w = st.current;
    const note = w ? recordedPart(r, w) : null;
    setText(windowBar.text, w ? `Window: ${formatWindow(w)}${note ? ` \u2014 ${note}` : ''}` : `No window: figures and legends are the measurement's (${formatWindow(measure)}), flame graphs every sample of the run`);
    for (const e of profiles.windows) setText(e, w ? `Samples in ${formatWindow(w)} only${note ? `: ${note}` : ''}` : 'Every sample of the run');
    if (beam && r.beam) setText(beam, beamText(r.beam, w));
    cards.show(w, w ? windowFigures(r, w) : measurementFigures, measurementFigures);
    tl.markers.select(w);
    showHeadings(profiles.headings, origin, w);
    dist?.show(w);
    if (sweep) selectSweepStep(r, sweep.charts, w);
  };
  function apply(w: Window | null, fromViewer = false): void {
    st.current = w;
    group.setSelection(w);
    const h = writeWindow(location.hash, w);
    history.replaceState(history.state, '', h ? `#${h}` : location.pathname + location.search);
    if (!fromViewer) viewers()?.setWindow(w ? [origin + w[0], origin + w[1]] : null);
    show();
  }
  listen(st, group, profiles.headings, show);
  group.setSelection(st.current);
  show();
  return {
    data: r,
    group,
    charts: tl.charts,
    sweep: sweep?.charts ?? [],
    distribution: dist?.chart ?? null,
    markers: tl.markers,
    get window() {
      return st.current;
    },
    setWindow: (w) => apply(w),
  };
}

/** The charts' group: one time axis, one selection, the measurement and the sweep's steps marked. */
function chartGroup(r: RunPage, measure: Window, status: HTMLElement, apply: (w: Window | null) => void, onView: (zoomed: boolean) => void): ChartGroup {
  const primary = r.tables.find((t) => t.name === r.columns.load && t.time.length > 1) ?? r.tables.find((t) => t.name === r.columns.target && t.time.length > 1) ?? r.tables.find((t) => t.time.length > 1);
  const range = extentOf(r.tables, [measure, ...r.markers.map((p): Window => [p.start, p.end])]);
  return new ChartGroup(range, {
    selectable: true,
    edges: primary ? edgesOf(primary) : [],
    measure,
    status,
    axisLabel: 'seconds from the start of the measurement',
    onSelect: (w) => apply(w),
    steps: stepBoundaries(r.knee),
    onView,
  });
}

/** A button that calls f when clicked. */
function button(label: string, title: string, f: () => void, extra: Record<string, string | boolean> = {}): HTMLButtonElement {
  const b = el('button', { type: 'button', title, text: label, ...extra });
  b.addEventListener('click', f);
  return b;
}

/** The window bar: the window's text, a button per window worth choosing, the zoom's reset. */
function buildWindowBar(r: RunPage, measure: Window, apply: (w: Window | null) => void, resetView: () => void): { bar: HTMLElement; text: HTMLElement; zoomReset: HTMLButtonElement } {
  const text = el('span', { class: 'r-window-text', 'data-ctrl': 'window', 'aria-live': 'polite' });
  const zoomReset = button('Whole time axis', 'Zoom the charts\u2019 time axis out to the whole run (0); the window stays', resetView, { 'data-ctrl': 'zoom-reset', hidden: true });
  const bar = el(
    'div',
    { class: 'r-windowbar', role: 'region', 'aria-label': 'Time window' },
    text,
    button('Measurement', 'Select the measurement window', () => apply(measure), { 'data-ctrl': 'measure' }),
    ...r.windows.map((w) => button(w.name, `Select the sweep step ${w.name}`, () => apply([w.start, w.end]), { 'data-step': w.name })),
    button('Whole run', 'Clear the window: every sample', () => apply(null), { 'data-ctrl': 'clear' }),
    zoomReset,
    el('span', { class: 'r-window-help', text: 'Drag on any chart to choose a window (a click: that second); every figure and flame graph shows it. Ctrl+wheel zooms a chart\u2019s time axis.' }),
  );
  return { bar, text, zoomReset };
}

/** The timeline: every series' chart on the group's time axis, then the marker row. */
function buildTimeline(r: RunPage, group: ChartGroup, apply: (w: Window | null) => void): { section: HTMLElement; charts: Record<string, TimeChart>; markers: MarkerRow } {
  const charts: Record<string, TimeChart> = {};
  const section = el('section', { class: 'r-section', id: 'r-timeline', 'aria-labelledby': 'r-h-timeline' }, el('h2', { id: 'r-h-timeline', text: 'Timeline (seconds from the start of the measurement; shaded: outside it)' }));
  for (const spec of runCharts({ tables: r.tables, columns: r.columns, unit: r.unit, latency: r.latency, cpus: r.cpus, categories: r.categories, latencySeconds: r.latency_seconds })) {
    const c = group.add(spec);
    charts[spec.id] = c;
    section.append(c.el);
  }
  if (!group.charts.length) section.append(el('p', { text: 'This run stored no series.' }));
  const markers = new MarkerRow(r.markers, group, (w) => apply(w));
  if (markers.markers.length) {
    group.rows.push(markers);
    section.append(markers.el);
  }
  return { section, charts, markers };
}

type SweepPoint = NonNullable<RunPage['sweep']>['points'][0];

/** The sweep: its knee, latency and throughput against the swept parameter, a row per step. */
function buildSweep(r: RunPage, apply: (w: Window | null) => void): { section: HTMLElement; charts: XYChart[] } | null {
  if (!r.sweep || !r.sweep.points.length) return null;
  const sw = r.sweep;
  const pts = sw.points;
  const charts = sweepCharts(r, sw.param, pts, (i) => apply([pts[i].start, pts[i].end]));
  const knee = r.knee ? buildKnee(r.knee, r.unit, (w) => apply(w)) : null;
  const section = el(
    'section',
    { class: 'r-section', id: 'r-sweep', 'aria-labelledby': 'r-h-sweep' },
    el('h2', { id: 'r-h-sweep', text: `Sweep: ${pts.length} steps of ${sw.param}` }),
    ...(knee ? [knee] : []),
    el('div', { class: 'r-row' }, ...charts.map((c) => c.el)),
    el('div', { class: 'r-scroll', tabindex: 0, role: 'region', 'aria-label': 'Sweep steps' }, sweepTable(r, pts)),
  );
  return { section, charts };
}

/** The sweep's charts: latency (measured and intended) and throughput with target CPU. */
function sweepCharts(r: RunPage, param: string, pts: SweepPoint[], pick: (i: number) => void): XYChart[] {
  const charts: XYChart[] = [];
  const xs = pts.map((p, i) => p.value ?? i + 1);
  const positive = xs.every((x) => x > 0);
  const kind = positive && Math.max(...xs) / Math.min(...xs) >= 8 ? 'log' : 'linear';
  const names = pts.map((p) => p.name);
  const qs: [keyof NonNullable<SweepPoint['latency']>, string, string][] = [
    ['p50', 'p50', '#4e79a7'],
    ['p99', 'p99', '#f28e2b'],
    ['p999', 'p99.9', '#e15759'],
    ['max', 'max', '#9c755f'],
  ];
  const lat: XYSeries[] = [];
  for (const [k, label, color] of qs) {
    if (pts.some((p) => p.latency)) lat.push({ label, color, points: pts.map((p, i) => [xs[i], p.latency ? p.latency[k] : null]) });
  }
  for (const [k, label, color] of qs) {
    if (pts.some((p) => p.intended)) lat.push({ label: `${label} intended`, color, dash: true, points: pts.map((p, i) => [xs[i], p.intended ? p.intended[k] : null]) });
  }
  const x = { kind, label: `${param} (sweep step; click one to select its window)`, format: (v: number): string => compact(v) } as const;
  if (lat.length) {
    charts.push(new XYChart({ id: 'sweep-latency', title: `Latency vs ${param} (log scale)`, x: { ...x }, left: { unit: 'us', scale: 'log', label: 'latency' }, series: lat, height: 240, onPick: pick, names }));
  }
  const tp: XYSeries[] = [];
  if (pts.some((p) => p.throughput !== null)) tp.push({ label: `throughput (${r.unit}/s)`, color: COLORS[0], points: pts.map((p, i) => [xs[i], p.throughput]) });
  if (pts.some((p) => p.target_cpu !== null)) tp.push({ label: 'target CPU (% of one CPU)', color: COLORS[2], axis: 'right', points: pts.map((p, i) => [xs[i], p.target_cpu]) });
  if (tp.length) {
    charts.push(
      new XYChart({
        id: 'sweep-throughput',
        title: `Throughput and target CPU vs ${param}`,
        x: { ...x },
        left: { unit: `${r.unit}/s`, scale: 'linear', label: 'throughput' },
        right: tp.some((s) => s.axis === 'right') ? { unit: '%', scale: 'linear', label: 'CPU' } : undefined,
        series: tp,
        height: 240,
        onPick: pick,
        names,
      }),
    );
  }
  return charts;
}

/** The sweep's steps as a table: a row per step. */
function sweepTable(r: RunPage, pts: SweepPoint[]): HTMLElement {
  const table = el('table', { class: 'r-table', 'data-table': 'sweep' });
  table.append(el('thead', {}, el('tr', {}, ...['step', 'throughput', 'p50', 'p99', 'p99.9', 'max', 'target CPU'].map((h) => el('th', { scope: 'col', text: h })))));
  const body = el('tbody');
  for (const p of pts) {
    body.append(
      el(
        'tr',
        { 'data-step': p.name },
        el('td', { text: p.name }),
        el('td', { text: formatValue(p.throughput, `${r.unit}/s`) }),
        el('td', { text: formatValue(p.latency?.p50, 'us') }),
        el('td', { text: formatValue(p.latency?.p99, 'us') }),
        el('td', { text: formatValue(p.latency?.p999, 'us') }),
        el('td', { text: formatValue(p.latency?.max, 'us') }),
        el('td', { text: formatValue(p.target_cpu, '%') }),
      ),
    );
  }
  table.append(body);
  return table;
}

/** Marks in each sweep chart the step whose window is w (none when w is no step's). */
function selectSweepStep(r: RunPage, charts: XYChart[], w: Window | null): void {
  for (const c of charts) {
    const i = r.sweep ? r.sweep.points.findIndex((p) => w && p.start === w[0] && p.end === w[1]) : -1;
    if (c.selected !== i) {
      c.selected = i;
      c.draw();
    }
  }
}

/**
 * The latency distribution: the window's when the run kept per-second histograms (merged
 * exactly), else the measurement's as stored. Null when the run has none.
 */
function buildDistribution(r: RunPage, measure: Window): { section: HTMLElement; chart: XYChart; show(w: Window | null): void } | null {
  if (!r.distributions.length) return null;
  const ps = r.latency_seconds;
  const distNames = r.distributions.map((d) => d.name);
  const perSecond = distNames.length > 0 && distNames.every((n) => ps?.series.some((x) => x.name === n));
  const label = (name: string, count: number): string => `${plainLatency(name)} (${count >= 1e4 ? compact(count) : thousands(count)} values)`;
  const series = (w: Window): XYSeries[] =>
    r.distributions.flatMap((d, i) => {
      const x = perSecond ? distributionIn(ps, d.name, w) : { points: d.points, count: d.count };
      if (!x) return [];
      return [{ label: label(d.name, x.count), color: d.intended ? COLORS[(i + 1) % COLORS.length] : COLORS[i % COLORS.length], dash: d.intended, points: x.points.map(([p, v]) => [p, v] as [number, number]) }];
    });
  const title = (w: Window | null): string => `Latency by percentile over ${w && perSecond ? `the window (${formatWindow(w)})` : 'the measurement'} (log scale; dashed: from the intended send time)`;
  const chart = new XYChart({
    id: 'distribution',
    title: title(null),
    x: { kind: 'nines', label: 'percentile', format: (v) => `${v.toFixed(3).replace(/\.?0+$/, '')}%` },
    left: { unit: 'us', scale: 'log', label: 'latency' },
    series: series(measure),
    height: 260,
  });
  const section = el('section', { class: 'r-section', id: 'r-dist', 'aria-labelledby': 'r-h-dist' }, el('h2', { id: 'r-h-dist', text: 'Latency distribution' }), chart.el);
  const show = (w: Window | null): void => {
    if (perSecond) chart.setSeries(series(w ?? measure), title(w));
  };
  return { section, chart, show };
}

/** A flame graph's heading, which counts the window's samples. */
interface ProfileHeading {
  mount: HTMLElement | null;
  el: HTMLElement;
  event: string;
  samples: number;
  timed: boolean;
}

/** The flame graphs, each its viewer's mount under a heading that counts the window's samples. */
function buildProfiles(r: RunPage): { section: HTMLElement; windows: HTMLElement[]; headings: ProfileHeading[] } {
  const windows: HTMLElement[] = [];
  const headings: ProfileHeading[] = [];
  const section = el('section', { class: 'r-section', id: 'r-profiles', 'aria-labelledby': 'r-h-profiles' }, el('h2', { id: 'r-h-profiles', text: 'Flame graphs (they show the selected window)' }));
  // kiln's own profiles; beside them, those of the target's own pprof endpoint (kiln run
  // --pprof), which cover the same seconds but carry no time.
  const own = el('div', { class: 'r-profile-col' });
  const theirs = el('div', { class: 'r-profile-col', 'data-origin': 'pprof' });
  for (const p of r.profiles) {
    const mount = document.querySelector<HTMLElement>(`[data-kiln-mount="${CSS.escape(p.key)}"]`);
    // The viewer's title sits under this section's heading.
    mount?.setAttribute('data-heading-level', '4');
    const w = el('div', { class: 'r-profile-window', 'data-ctrl': p.origin ? 'profile-origin' : 'profile-window' });
    if (p.origin) setText(w, p.origin);
    else windows.push(w);
    const hid = `r-h-profile-${p.key}`;
    const h = el('h3', { id: hid, 'data-ctrl': 'profile-heading', title: p.title });
    headings.push({ mount, el: h, event: p.event, samples: p.samples, timed: !p.origin });
    (p.origin ? theirs : own).append(el('section', { class: 'r-profile', id: `r-profile-${p.key}`, 'data-profile': p.key, 'aria-labelledby': hid }, h, w, mount));
  }
  if (theirs.childElementCount) {
    own.prepend(el('h3', { class: 'r-profile-col-head', text: 'Recorded by kiln' }));
    theirs.prepend(el('h3', { class: 'r-profile-col-head', text: 'The target\u2019s own pprof, same seconds' }));
    section.append(el('div', { class: 'r-pair' }, own, theirs));
  } else {
    section.append(...own.childNodes);
  }
  if (!r.profiles.length) section.append(el('p', { text: 'This run recorded no profile.' }));
  return { section, windows, headings };
}

/** The header's jump links: the figures, then every section the page has. */
function sectionLinks(r: RunPage, sweep: boolean, dist: boolean): SectionLink[] {
  const links: SectionLink[] = [{ id: 'r-head-figures', label: 'Figures' }];
  if (r.findings) links.push({ id: 'r-findings', label: 'Findings' });
  links.push({ id: 'r-timeline', label: 'Timeline' });
  if (sweep) links.push({ id: 'r-sweep', label: 'Sweep' });
  if (dist) links.push({ id: 'r-dist', label: 'Latency distribution' });
  links.push({ id: 'r-profiles', label: 'Flame graphs' });
  for (const p of r.profiles) links.push({ id: `r-profile-${p.key}`, label: p.event });
  return links;
}

/** The headings of the flame graphs: samples in the window beside the run's. */
function showHeadings(headings: ProfileHeading[], origin: number, w: Window | null): void {
  const apps = viewers()?.apps ?? [];
  for (const h of headings) {
    // The viewer drawn in this profile's mount (a page of one viewer gives it no key).
    const app = h.mount ? apps.find((a) => h.mount!.contains(a.root)) : undefined;
    let text: string;
    if (!h.samples) text = `${h.event}: no samples in this run`;
    else if (!w || !h.timed || !app || !app.model.raw.sampleTime) text = `${h.event}: ${thousands(h.samples)} samples${w && !h.timed ? ' (no time: every sample, whatever the window)' : ''}`;
    else {
      const o = app.model.raw.timeOrigin - origin;
      // The viewer's own count when it already shows this window (it follows a window
      // chosen in another viewer a moment later); else counted here.
      const aw = app.window;
      const n = aw && aw[0] === w[0] + origin && aw[1] === w[1] + origin ? app.windowSamples() : app.model.samplesIn([w[0] - o, w[1] - o]).total;
      text = n ? `${h.event}: ${thousands(n)} of ${thousands(h.samples)} samples in the window` : `${h.event}: no samples in the window (of ${thousands(h.samples)})`;
    }
    setText(h.el, text);
  }
}

/**
 * One time axis for the page: every viewer's time strip spans the charts' visible range
 * with its plot between the same page x as theirs, so a time has one x on the page.
 */
function alignStrips(group: ChartGroup, origin: number): void {
  const chart = group.charts[0];
  if (!chart) return;
  // The plot's box, not its canvas': a canvas is 300 px wide until its chart first draws.
  const c = (chart.overlay.parentElement ?? chart.overlay).getBoundingClientRect();
  if (c.width <= 0) return;
  const [a, b] = group.range;
  for (const app of viewers()?.apps ?? []) {
    const strip = app.timeline?.canvas.getBoundingClientRect();
    if (!strip || strip.width <= 0) continue;
    const left = c.left + MARGIN_LEFT - strip.left;
    const right = strip.right - (c.right - MARGIN_RIGHT);
    app.setAxis([origin + a, origin + b], left, right);
  }
}

/**
 * A window dragged in a viewer (its time strip, its tracks) is widened to whole seconds
 * of the series as a drag on a chart is: the cards, legends and every flame graph then
 * describe the same seconds.
 */
function snapViewers(group: ChartGroup, origin: number): void {
  for (const app of viewers()?.apps ?? []) {
    app.snapWindow = (w) => {
      const [a, b] = group.snap([w[0] - origin, w[1] - origin]);
      return [a + origin, b + origin];
    };
  }
}

/** The page follows a window chosen in a viewer or the URL, and the viewers' readiness. */
function listen(st: RunState, group: ChartGroup, headings: ProfileHeading[], show: () => void): void {
  const { origin } = st;
  // A window chosen in a viewer's own time strip (or flame chart) reaches the charts.
  window.addEventListener(WINDOW_EVENT, (e) => {
    const d = (e as CustomEvent<{ source: unknown; window: Window | null }>).detail;
    if (!d) return;
    const w: Window | null = d.window ? [d.window[0] - origin, d.window[1] - origin] : null;
    const current = st.current;
    if (w === current || (w && current && w[0] === current[0] && w[1] === current[1])) return;
    st.current = w;
    group.setSelection(w);
    show();
  });
  window.addEventListener('hashchange', () => {
    st.current = parseWindow(location.hash);
    group.setSelection(st.current);
    show();
  });
  // The viewers' script runs after this one: the headings count their samples once it has,
  // and the viewers' time strips take the charts' axis.
  window.addEventListener(READY_EVENT, () => {
    showHeadings(headings, origin, st.current);
    alignStrips(group, origin);
    snapViewers(group, origin);
  });
  window.addEventListener('resize', () => requestAnimationFrame(() => alignStrips(group, origin)));
  if (viewers()?.apps.length) {
    snapViewers(group, origin);
    requestAnimationFrame(() => alignStrips(group, origin));
  }
}

/** Scrolls to the chart holding a series ("table/column") and focuses it; false when none does. */
function showSeries(series: string): boolean {
  const cut = series.lastIndexOf('/');
  const [table, column] = cut > 0 ? [series.slice(0, cut), series.slice(cut + 1)] : ['', series];
  for (const item of document.querySelectorAll<HTMLElement>('.r-chart .r-item')) {
    if (item.dataset.column !== column || (table && item.dataset.table !== table)) continue;
    const chart = item.closest<HTMLElement>('.r-chart');
    chart?.scrollIntoView({ block: 'center' });
    chart?.querySelector<HTMLElement>('.r-overlay')?.focus({ preventScroll: true });
    return true;
  }
  return false;
}

/** Scrolls to a profile's flame graph and searches a function in it; false when the page has none. */
function showProfile(r: RunPage, event: string, focus: string | null): boolean {
  const p = r.profiles.find((x) => x.event === event || x.key === event);
  const section = p ? document.getElementById(`r-profile-${p.key}`) : null;
  if (!section) return false;
  section.scrollIntoView({ block: 'start' });
  const search = section.querySelector<HTMLInputElement>('[data-ctrl=search]');
  if (focus && search) {
    // As the viewer's own search escapes nothing: a function's name, literally.
    search.value = focus.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    search.dispatchEvent(new Event('input', { bubbles: true }));
  }
  return true;
}
