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
import { windowFigures } from '../lib/figures.js';
import { compact, formatValue, formatWindow } from '../lib/format.js';
import { edgesOf, parseWindow, typicalStep, writeWindow } from '../lib/intervals.js';
import { buildKnee, stepBoundaries } from './sweep.js';
import { plainLatency } from '../lib/names.js';
import { distributionIn } from '../lib/window.js';
import { ChartGroup, MARGIN_LEFT, MARGIN_RIGHT, TimeChart } from './time-chart.js';
import { FigureCards, SectionLink, runHeader } from './header.js';
import { XYChart, XYSeries } from './xy-chart.js';
import { MarkerRow } from './marker-row.js';

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

export function buildRunPage(root: HTMLElement, r: RunPage, origin: number, status: HTMLElement): RunView {
  const measure: [number, number] = [r.measure.start, r.measure.end];
  const primary = r.tables.find((t) => t.name === 'load' && t.time.length > 1) ?? r.tables.find((t) => t.name === 'target' && t.time.length > 1) ?? r.tables.find((t) => t.time.length > 1);
  const edges = primary ? edgesOf(primary) : [];
  const range = extentOf(r.tables, [measure, ...r.markers.map((p): [number, number] => [p.start, p.end])]);
  let current: [number, number] | null = parseWindow(location.hash);

  const windowText = el('span', { class: 'r-window-text', 'data-ctrl': 'window', 'aria-live': 'polite' });
  const button = (label: string, title: string, f: () => void, extra: Record<string, string | boolean> = {}): HTMLButtonElement => {
    const b = el('button', { type: 'button', title, text: label, ...extra });
    b.addEventListener('click', f);
    return b;
  };
  const zoomReset = button('Whole time axis', 'Zoom the charts\u2019 time axis out to the whole run (0); the window stays', () => group.resetView(), { 'data-ctrl': 'zoom-reset', hidden: true });
  const bar = el(
    'div',
    { class: 'r-windowbar', role: 'region', 'aria-label': 'Time window' },
    windowText,
    button('Measurement', 'Select the measurement window', () => apply(measure), { 'data-ctrl': 'measure' }),
    ...r.windows.map((w) => button(w.name, `Select the sweep step ${w.name}`, () => apply([w.start, w.end]), { 'data-step': w.name })),
    button('Whole run', 'Clear the window: every sample', () => apply(null), { 'data-ctrl': 'clear' }),
    zoomReset,
    el('span', { class: 'r-window-help', text: 'Drag on any chart to choose a window (a click: that second); every figure and flame graph shows it. Ctrl+wheel zooms a chart\u2019s time axis.' }),
  );

  const group = new ChartGroup(range, {
    selectable: true,
    edges,
    measure,
    status,
    axisLabel: 'seconds from the start of the measurement',
    onSelect: (w) => apply(w),
    steps: stepBoundaries(r.knee),
    onView: (zoomed) => {
      zoomReset.hidden = !zoomed;
      alignStrips();
    },
  });
  const charts: Record<string, TimeChart> = {};
  const timeline = el('section', { class: 'r-section', id: 'r-timeline', 'aria-labelledby': 'r-h-timeline' }, el('h2', { id: 'r-h-timeline', text: 'Timeline (seconds from the start of the measurement; shaded: outside it)' }));
  for (const spec of runCharts({ tables: r.tables, unit: r.unit, latency: r.latency, cpus: r.cpus, categories: r.categories, latencySeconds: r.latency_seconds })) {
    const c = group.add(spec);
    charts[spec.id] = c;
    timeline.append(c.el);
  }
  if (!group.charts.length) timeline.append(el('p', { text: 'This run stored no series.' }));
  const markers = new MarkerRow(r.markers, group, (w) => apply(w));
  if (markers.markers.length) {
    group.rows.push(markers);
    timeline.append(markers.el);
  }

  const sweepCharts: XYChart[] = [];
  let sweepSection: HTMLElement | null = null;
  if (r.sweep && r.sweep.points.length) {
    const sw = r.sweep;
    const pts = sw.points;
    const xs = pts.map((p, i) => p.value ?? i + 1);
    const positive = xs.every((x) => x > 0);
    const kind = positive && Math.max(...xs) / Math.min(...xs) >= 8 ? 'log' : 'linear';
    const names = pts.map((p) => p.name);
    const pick = (i: number): void => apply([pts[i].start, pts[i].end]);
    const qs: [keyof NonNullable<(typeof pts)[0]['latency']>, string, string][] = [
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
    const xLabel = `${sw.param} (sweep step; click one to select its window)`;
    const fmt = (v: number): string => compact(v);
    if (lat.length) {
      sweepCharts.push(
        new XYChart({ id: 'sweep-latency', title: `Latency vs ${sw.param} (log scale)`, x: { kind, label: xLabel, format: fmt }, left: { unit: 'us', scale: 'log', label: 'latency' }, series: lat, height: 240, onPick: pick, names }),
      );
    }
    const tp: XYSeries[] = [];
    if (pts.some((p) => p.throughput !== null)) tp.push({ label: `throughput (${r.unit}/s)`, color: COLORS[0], points: pts.map((p, i) => [xs[i], p.throughput]) });
    if (pts.some((p) => p.target_cpu !== null)) tp.push({ label: 'target CPU (% of one CPU)', color: COLORS[2], axis: 'right', points: pts.map((p, i) => [xs[i], p.target_cpu]) });
    if (tp.length) {
      sweepCharts.push(
        new XYChart({
          id: 'sweep-throughput',
          title: `Throughput and target CPU vs ${sw.param}`,
          x: { kind, label: xLabel, format: fmt },
          left: { unit: `${r.unit}/s`, scale: 'linear', label: 'throughput' },
          right: tp.some((s) => s.axis === 'right') ? { unit: '%', scale: 'linear', label: 'CPU' } : undefined,
          series: tp,
          height: 240,
          onPick: pick,
          names,
        }),
      );
    }
    const knee = r.knee ? buildKnee(r.knee, r.unit, (w) => apply(w)) : null;
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
    sweepSection = el(
      'section',
      { class: 'r-section', id: 'r-sweep', 'aria-labelledby': 'r-h-sweep' },
      el('h2', { id: 'r-h-sweep', text: `Sweep: ${pts.length} steps of ${sw.param}` }),
      ...(knee ? [knee] : []),
      el('div', { class: 'r-row' }, ...sweepCharts.map((c) => c.el)),
      el('div', { class: 'r-scroll', tabindex: 0, role: 'region', 'aria-label': 'Sweep steps' }, table),
    );
  }

  // The latency distribution: the window's when the run kept per-second histograms
  // (merged exactly), else the measurement's as stored.
  let distribution: XYChart | null = null;
  let distSection: HTMLElement | null = null;
  const ps = r.latency_seconds;
  const distNames = r.distributions.map((d) => d.name);
  const perSecond = distNames.length > 0 && distNames.every((n) => ps?.series.some((x) => x.name === n));
  const distLabel = (name: string, count: number): string => `${plainLatency(name)} (${count >= 1e4 ? compact(count) : thousands(count)} values)`;
  const distSeries = (w: [number, number]): XYSeries[] =>
    r.distributions.flatMap((d, i) => {
      const x = perSecond ? distributionIn(ps, d.name, w) : { points: d.points, count: d.count };
      if (!x) return [];
      return [{ label: distLabel(d.name, x.count), color: d.intended ? COLORS[(i + 1) % COLORS.length] : COLORS[i % COLORS.length], dash: d.intended, points: x.points.map(([p, v]) => [p, v] as [number, number]) }];
    });
  const distTitle = (w: [number, number] | null): string =>
    `Latency by percentile over ${w && perSecond ? `the window (${formatWindow(w)})` : 'the measurement'} (log scale; dashed: from the intended send time)`;
  if (r.distributions.length) {
    distribution = new XYChart({
      id: 'distribution',
      title: distTitle(null),
      x: { kind: 'nines', label: 'percentile', format: (v) => `${v.toFixed(3).replace(/\.?0+$/, '')}%` },
      left: { unit: 'us', scale: 'log', label: 'latency' },
      series: distSeries(measure),
      height: 260,
    });
    distSection = el('section', { class: 'r-section', id: 'r-dist', 'aria-labelledby': 'r-h-dist' }, el('h2', { id: 'r-h-dist', text: 'Latency distribution' }), distribution.el);
  }

  // The flame graphs, each under a heading that counts the window's samples.
  const profileWindows: HTMLElement[] = [];
  const headings: { mount: HTMLElement | null; el: HTMLElement; event: string; samples: number; timed: boolean }[] = [];
  const profiles = el('section', { class: 'r-section', id: 'r-profiles', 'aria-labelledby': 'r-h-profiles' }, el('h2', { id: 'r-h-profiles', text: 'Flame graphs (they show the selected window)' }));
  // kiln's own profiles; beside them, those of the target's own pprof endpoint (kiln run
  // --pprof), which cover the same seconds but carry no time.
  const own = el('div', { class: 'r-profile-col' });
  const theirs = el('div', { class: 'r-profile-col', 'data-origin': 'pprof' });
  const links: SectionLink[] = [{ id: 'r-head-figures', label: 'Figures' }];
  for (const p of r.profiles) {
    const mount = document.querySelector<HTMLElement>(`[data-kiln-mount="${CSS.escape(p.key)}"]`);
    // The viewer's title sits under this section's heading.
    mount?.setAttribute('data-heading-level', '4');
    const w = el('div', { class: 'r-profile-window', 'data-ctrl': p.origin ? 'profile-origin' : 'profile-window' });
    if (p.origin) setText(w, p.origin);
    else profileWindows.push(w);
    const hid = `r-h-profile-${p.key}`;
    const h = el('h3', { id: hid, 'data-ctrl': 'profile-heading', title: p.title });
    headings.push({ mount, el: h, event: p.event, samples: p.samples, timed: !p.origin });
    (p.origin ? theirs : own).append(el('section', { class: 'r-profile', id: `r-profile-${p.key}`, 'data-profile': p.key, 'aria-labelledby': hid }, h, w, mount));
  }
  if (theirs.childElementCount) {
    own.prepend(el('h3', { class: 'r-profile-col-head', text: 'Recorded by kiln' }));
    theirs.prepend(el('h3', { class: 'r-profile-col-head', text: 'The target\u2019s own pprof, same seconds' }));
    profiles.append(el('div', { class: 'r-pair' }, own, theirs));
  } else {
    profiles.append(...own.childNodes);
  }
  if (!r.profiles.length) profiles.append(el('p', { text: 'This run recorded no profile.' }));

  links.push({ id: 'r-timeline', label: 'Timeline' });
  if (sweepSection) links.push({ id: 'r-sweep', label: 'Sweep' });
  if (distSection) links.push({ id: 'r-dist', label: 'Latency distribution' });
  links.push({ id: 'r-profiles', label: 'Flame graphs' });
  for (const p of r.profiles) links.push({ id: `r-profile-${p.key}`, label: p.event });
  const cards = new FigureCards(r.figures, r.latency);
  // The measurement's figures by the rule of every window's (the legends' too).
  const measurementFigures = windowFigures(r, measure);
  const head = runHeader(r, links, cards);
  head.id = 'r-head-figures';
  root.append(head, bar, timeline, ...(sweepSection ? [sweepSection] : []), ...(distSection ? [distSection] : []), profiles);

  /** The headings of the flame graphs: samples in the window beside the run's. */
  const showHeadings = (w: [number, number] | null): void => {
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
  };

  /**
   * One time axis for the page: every viewer's time strip spans the charts' visible range
   * with its plot between the same page x as theirs, so a time has one x on the page.
   */
  function alignStrips(): void {
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

  const show = (): void => {
    const w = current;
    setText(windowText, w ? `Window: ${formatWindow(w)}` : `No window: figures and legends are the measurement's (${formatWindow(measure)}), flame graphs every sample of the run`);
    for (const e of profileWindows) setText(e, w ? `Samples in ${formatWindow(w)} only` : 'Every sample of the run');
    cards.show(w, w ? windowFigures(r, w) : measurementFigures, measurementFigures);
    markers.select(w);
    showHeadings(w);
    if (distribution && perSecond) distribution.setSeries(distSeries(w ?? measure), distTitle(w));
    for (const c of sweepCharts) {
      const i = r.sweep ? r.sweep.points.findIndex((p) => w && p.start === w[0] && p.end === w[1]) : -1;
      if (c.selected !== i) {
        c.selected = i;
        c.draw();
      }
    }
  };
  function apply(w: [number, number] | null, fromViewer = false): void {
    current = w;
    group.setSelection(w);
    const h = writeWindow(location.hash, w);
    history.replaceState(history.state, '', h ? `#${h}` : location.pathname + location.search);
    if (!fromViewer) viewers()?.setWindow(w ? [origin + w[0], origin + w[1]] : null);
    show();
  }
  // A window chosen in a viewer's own time strip (or flame chart) reaches the charts.
  window.addEventListener(WINDOW_EVENT, (e) => {
    const d = (e as CustomEvent<{ source: unknown; window: [number, number] | null }>).detail;
    if (!d) return;
    const w: [number, number] | null = d.window ? [d.window[0] - origin, d.window[1] - origin] : null;
    if (w === current || (w && current && w[0] === current[0] && w[1] === current[1])) return;
    current = w;
    group.setSelection(w);
    show();
  });
  window.addEventListener('hashchange', () => {
    current = parseWindow(location.hash);
    group.setSelection(current);
    show();
  });
  // The viewers' script runs after this one: the headings count their samples once it has,
  // and the viewers' time strips take the charts' axis.
  window.addEventListener(READY_EVENT, () => {
    showHeadings(current);
    alignStrips();
  });
  window.addEventListener('resize', () => requestAnimationFrame(alignStrips));
  if (viewers()?.apps.length) requestAnimationFrame(alignStrips);
  group.setSelection(current);
  show();
  return {
    data: r,
    group,
    charts,
    sweep: sweepCharts,
    distribution,
    markers,
    get window() {
      return current;
    },
    setWindow: (w) => apply(w),
  };
}
