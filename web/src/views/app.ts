// The application: header, the five views (flame graph, flame chart, call tree, function
// table, sandwich), the tracks, tooltip, context menu, help, and the keyboard. State changes go through
// setState, which writes the URL and redraws. Nothing here is global: a page may hold
// several apps (the run report's CPU, off-CPU and memory graphs), each owning the URL keys
// under its prefix and sharing the page's time window `t`.
import { Derived, Model, Sandwich, diffColorOf } from '../app-state/model.js';
import { VIEWS, ViewName, ViewState, defaultState, fromParams, toParams } from '../app-state/state.js';
import { HashParams } from '../app-state/url.js';
import { DiffLayout, maxDelta } from '../lib/diff.js';
import { firefoxOf, foldedOf, speedscopeOf, svgOf } from '../lib/export.js';
import { matchingBoxes } from '../lib/flamechart.js';
import { CallNode, CallTree, keyFrames } from '../lib/calltree.js';
import { Layout, pathOf } from '../lib/layout.js';
import { Palette } from '../lib/palette.js';
import { CategoryLegend } from './category-legend.js';
import { histogram, timeSpan } from '../lib/timeline.js';
import { timeIndex } from '../lib/timeindex.js';
import { Transform, describe } from '../lib/transforms.js';
import { thousands } from '../lib/units.js';
import { FlameChart } from '../lib/flamechart.js';
import { percent } from '../lib/format.js';
import { ChartBox } from '../render/chart-renderer.js';
import { DrawStats } from '../render/flame-renderer.js';
import { currentTheme, onThemeChange } from '../render/theme.js';
import { ChartView } from './chart-view.js';
import { el, setText, uniquePrefix } from './dom.js';
import { canvasPng, copyText, download, fileStem } from './download.js';
import { FlameView } from './flame-view.js';
import { Menu, MenuItem } from './menu.js';
import { TableView } from './table-view.js';
import { TimelineView } from './timeline-view.js';
import { TrackList, offCpuSource, tracksFor } from './tracks.js';
import { TreeView } from './tree-view.js';
import { TreePane } from './tree-pane.js';
import { describeBox, describeFrame, functionTable } from './describe.js';
import { HelpDialog } from './help.js';
import { HeaderParts, TabSpec, buildHeader } from './toolbar.js';
import { FRAME_KEYS, STATE_KEYS, frameMenuEntries, transformFor } from './keys.js';
import { buildPanes } from './panes.js';
import { durationText, emptyText, samplesText, totalText } from './facts.js';


type Which = 'main' | 'callers' | 'callees';

/**
 * The page-level time window event: dispatched on `window` when a viewer's window
 * changes (detail: the window on the profiles' clock, ns, or null for all). A page
 * that draws other things over time (the run report's charts) may dispatch it too, with
 * any `source`, and every viewer follows.
 */
export const WINDOW_EVENT = 'kiln-window';

export interface WindowEvent {
  source: unknown;
  window: [number, number] | null;
}

export interface AppOptions {
  /** Prefix of this viewer's keys in the URL ('' when the page holds one viewer). */
  key?: string;
  /** The page's time origin on the profiles' clock (ns); default: the profile's first sample. */
  origin?: number;
  /** Take keys typed while nothing in particular has focus (a page with one viewer). */
  documentKeys?: boolean;
  /** The viewer is part of a page with its own headings and landmarks (the run report). */
  embedded?: boolean;
  /** Level of the viewer's title heading (1 on a page of its own; under the page's headings). */
  headingLevel?: number;
}

export class App {
  state: ViewState;
  readonly defaults: ViewState;
  readonly main: FlameView;
  readonly callers: FlameView;
  readonly callees: FlameView;
  readonly chart: ChartView | null;
  readonly table: TableView;
  readonly tree: TreeView;
  private readonly treePane: TreePane;
  readonly tracks: TrackList | null;
  readonly timeline: TimelineView | null;
  readonly root: HTMLElement;
  readonly ids = uniquePrefix();
  private readonly hash: HashParams;
  /** Added to a window (ns since the profile's origin) to write it on the page's clock. */
  private readonly shift: number;
  private readonly header: HeaderParts;
  private readonly categoryLegend: CategoryLegend | null;
  private readonly ctrl: Record<string, HTMLElement>;
  private readonly tooltip: HTMLDivElement;
  private readonly details: HTMLDivElement;
  private readonly status: HTMLDivElement;
  private readonly notice: HTMLDivElement;
  /** "No samples in this window, because …" over the panes. */
  private readonly empty: HTMLDivElement;
  private readonly crumbs: HTMLElement;
  private readonly transformsBar: HTMLDivElement;
  private readonly menu = new Menu();
  private readonly help: HelpDialog;
  private readonly panes: Record<ViewName, HTMLElement>;
  private readonly sandwichTitle: HTMLDivElement;
  private hovered: { which: Which; v: number } | null = null;
  private hoveredBox: ChartBox | null = null;
  private matchIndex = -1;
  private sandwichData: Sandwich | null = null;
  private urlTimer = 0;
  private lastView: ViewName | null = null;
  private lastNormalise: boolean | null = null;
  /** The flame chart's visible range (ns since the profile's origin) when zoomed or
   *  panned away from the window; never the page's window itself. */
  private chartSpan: [number, number] | null = null;
  private lanesFor: { chart: FlameChart; hidden: string; lanes: FlameChart } | null = null;

  constructor(readonly model: Model, mount: HTMLElement, readonly opts: AppOptions = {}) {
    const meta = model.meta;
    const initial: ViewName = meta.view === 'chart' && model.hasChart ? 'chart' : 'flame';
    this.defaults = defaultState(meta.palette, meta.inverted, meta.leftHeavy, initial, model.categories ? 'category' : 'palette');
    this.hash = new HashParams(opts.key ?? '');
    this.shift = model.raw.timeOrigin - (opts.origin ?? model.raw.timeOrigin);
    this.state = this.readUrl();
    // The views, each calling back into the app.
    this.main = new FlameView(this.flameHandlers('main'), 'flame main-flame', 'Flame graph');
    this.callers = new FlameView(this.flameHandlers('callers'), 'flame sandwich-flame', 'Callers of the function');
    this.callees = new FlameView(this.flameHandlers('callees'), 'flame sandwich-flame', 'Callees of the function');
    this.chart = model.hasChart ? this.newChartView() : null;
    this.table = new TableView(
      `${this.ids}-table`,
      (key) => this.setState({ sort: key as ViewState['sort'] }),
      (filter) => this.setState({ filter }),
      (f) => this.setState({ fn: f, view: 'sandwich' }),
    );
    this.tree = new TreeView(`${this.ids}-tree`, {
      toggle: (n, open) => this.treePane.toggle(n, open),
      expandAll: (n) => this.treePane.expandAll(n),
      select: (n) => this.treePane.select(n),
      context: (n, x, y) => this.openTreeMenu(n, x, y),
    });
    this.treePane = new TreePane(this.tree, {
      model,
      state: () => this.state,
      derived: () => this.derived,
      callTree: () => this.callTree(),
      announce: (text) => {
        setText(this.details, text);
        setText(this.status, text);
      },
    });
    this.timeline = this.newTimeline();
    this.tracks = tracksFor(model, this.timeline, `${this.ids}-tracks-title`, {
      hidden: (hidden) => this.setState({ hidden, zoom: [] }),
      hover: (tip, ev) => (tip && ev ? this.showTooltip(tip.name, tip.lines, ev) : this.hideTooltip()),
      shift: this.shift,
    });
    // The header and the page's parts around the views.
    this.header = buildHeader(model, this.tabs(), this.ids, opts.embedded ? opts.key ?? '' : null, opts.headingLevel ?? 1, this.headerActions());
    this.ctrl = this.header.ctrl;
    this.categoryLegend = model.categories ? new CategoryLegend((k) => this.setState({ category: k })) : null;
    if (this.categoryLegend) this.header.el.append(this.categoryLegend.el);
    this.tooltip = el('div', { class: 'tooltip', role: 'tooltip', hidden: true });
    this.details = el('div', { class: 'details', 'data-ctrl': 'details' });
    this.status = el('div', { class: 'sr-only', role: 'status', 'aria-live': 'polite', 'data-ctrl': 'status' });
    this.notice = el('div', { class: 'notice', hidden: true });
    this.empty = el('div', { class: 'empty', role: 'note', 'data-ctrl': 'empty', hidden: true });
    // Landmarks named after the viewer: a page may hold several.
    this.crumbs = el('nav', { class: 'crumbs', 'aria-label': opts.embedded ? `Zoom path of the ${opts.key} flame graph` : 'Zoom path' });
    this.transformsBar = el('div', { class: 'transforms', hidden: true });
    this.help = new HelpDialog(`${this.ids}-help-title`);
    this.sandwichTitle = el('div', { class: 'sandwich-title' });
    this.panes = buildPanes(this.ids, {
      flame: this.main.el,
      chart: this.chart ? this.chart.el : null,
      tree: this.tree.el,
      table: this.table.el,
      sandwichTitle: this.sandwichTitle,
      callers: this.callers.el,
      callees: this.callees.el,
    });
    this.root = this.layOut();
    mount.replaceChildren(this.root);
    if (meta.view === 'chart' && !model.hasChart) {
      this.notice.hidden = false;
      setText(this.notice, 'This profile has no timestamps, so it has no time order to chart: showing the merged flame graph.');
    }
    this.listen();
    onThemeChange(() => this.redrawAll());
    this.render();
  }

  /** What a flame graph (the main one or a sandwich half) calls back. */
  private flameHandlers(which: Which) {
    return {
      hover: (v: number, ev: MouseEvent | null) => this.onHover(which, v, ev),
      click: (v: number) => this.onClick(which, v),
      context: (v: number, x: number, y: number) => this.openFrameMenu(which, v, x, y),
      select: (v: number) => this.onSelect(which, v),
    };
  }

  /** The flame chart's view (for a profile with timestamps). */
  private newChartView(): ChartView {
    return new ChartView({
      hover: (b, ev) => this.onChartHover(b, ev),
      // Zoom and pan move the chart's view, never the page's window.
      range: (t0, t1) => (this.chartSpan = [t0, t1]),
      context: (b, x, y) => this.openChartMenu(b, x, y),
      select: (b) => this.onChartSelect(b),
    });
  }

  /** The time strip, or null when the profile's samples carry no time. */
  private newTimeline(): TimelineView | null {
    const model = this.model;
    const nsw = model.nsPerWeight;
    const span = timeSpan(model.raw, nsw);
    if (!span) return null;
    return new TimelineView(
      span,
      (n, sp) => histogram(model.raw, n, sp, nsw),
      (r) => this.setState({ range: r && this.snapped(r), zoom: [] }),
      capitalise(model.unit.isTime ? model.unit.what : model.unit.countsSamples ? 'samples' : model.unit.what),
      this.shift,
    );
  }

  /** The views' tabs and their keys (the flame chart's only with a chart). */
  private tabs(): TabSpec[] {
    return [
      { view: 'flame', label: 'Flame graph', key: '1' },
      ...(this.chart ? [{ view: 'chart' as ViewName, label: 'Flame chart', key: '4' }] : []),
      { view: 'tree', label: 'Call tree', key: '5' },
      { view: 'table', label: 'Functions', key: '2' },
      { view: 'sandwich', label: 'Sandwich', key: '3' },
    ];
  }

  /** What the header's controls do. */
  private headerActions(): Parameters<typeof buildHeader>[5] {
    return {
      tab: (v) => this.setState({ view: v }),
      icicle: () => this.setState({ icicle: !this.state.icicle }),
      order: (v) => this.setState({ order: v as ViewState['order'] }),
      threads: (v) => this.setState({ threadMode: v as ViewState['threadMode'], zoom: [], transforms: [] }),
      tracks: () => this.toggleTracks(),
      invert: () => this.setState({ invert: !this.state.invert }),
      searchNames: () => this.setState({ searchNames: !this.state.searchNames }),
      palette: (v) => this.setState({ palette: v as Palette, colors: 'palette' }),
      colors: () => this.setState({ colors: this.state.colors === 'category' ? 'palette' : 'category', category: -1 }),
      normalise: () => this.setState({ normalise: !this.state.normalise }),
      reset: () => this.setState({ zoom: [] }),
      search: (q) => this.setState({ query: q }),
      step: (d) => this.stepMatch(d),
      matchCase: () => this.setState({ matchCase: !this.state.matchCase }),
      exportMenu: (b) => this.openExportMenu(b),
      help: () => this.help.toggle(),
    };
  }

  /**
   * The viewer's element: header, notices, time strip, zoom path, panes, then the floating
   * parts. A page of its own: the whole viewer is its main landmark; a report's page holds
   * the viewer inside its own.
   */
  private layOut(): HTMLElement {
    return el(
      this.opts.embedded ? 'div' : 'main',
      { class: 'kiln' },
      this.header.el,
      this.notice,
      this.transformsBar,
      this.timeline ? this.timeline.el : null,
      this.tracks ? this.tracks.el : null,
      this.crumbs,
      el('div', { class: 'panes' }, ...VIEWS.map((v) => this.panes[v]), this.empty),
      this.details,
      this.status,
      this.tooltip,
      this.menu.el,
      this.help.el,
    );
  }

  /** The page's events: a window chosen elsewhere, the URL, keys, clicks outside a popup. */
  private listen(): void {
    // A window selected elsewhere on the page (another viewer, a chart of the load).
    // Applied once the window settles: a pan on one viewer's flame chart sends one per
    // frame, and re-laying out every other graph per frame would make the pan stutter.
    let pendingWindow = 0;
    window.addEventListener(WINDOW_EVENT, (e) => {
      const d = (e as CustomEvent<WindowEvent>).detail;
      if (!d || d.source === this) return;
      clearTimeout(pendingWindow);
      pendingWindow = window.setTimeout(() => this.setWindow(d.window), 120);
    });
    window.addEventListener('hashchange', () => {
      this.state = this.readUrl();
      this.render();
    });
    this.root.addEventListener('keydown', (e) => this.onKey(e));
    if (this.opts.documentKeys) {
      document.addEventListener('keydown', (e) => {
        const t = e.target as Node | null;
        if (t === document || t === document.body || t === document.documentElement) this.onKey(e);
      });
    }
    document.addEventListener('mousedown', (e) => {
      if (this.menu.isOpen && !this.menu.el.contains(e.target as Node)) this.menu.close(false);
    });
  }

  private readUrl(): ViewState {
    const s = fromParams(this.hash.read(location.hash), this.defaults, this.model.maxFrames, this.shift, this.model.raw.threadName.length);
    if (s.view === 'chart' && !this.model.hasChart) s.view = 'flame';
    return s;
  }

  /** Writes the state to the URL: now, or (for a dragged time window) once it settles. */
  private writeUrl(later: boolean): void {
    clearTimeout(this.urlTimer);
    const write = (): void => {
      const h = this.hash.write(location.hash, toParams(this.state, this.defaults, this.shift, this.model.raw.threadName.length));
      if (h === location.hash.replace(/^#/, '')) return;
      history.replaceState(history.state, '', h ? `#${h}` : location.pathname + location.search);
    };
    if (later) this.urlTimer = window.setTimeout(write, 200);
    else write();
  }

  private derivedFor: { state: ViewState; d: Derived } | null = null;

  /** Everything the flame graph, table and sandwich draw for the current state. */
  get derived(): Derived {
    if (this.derivedFor?.state !== this.state) this.derivedFor = { state: this.state, d: this.model.derive(this.state) };
    return this.derivedFor.d;
  }

  setState(patch: Partial<ViewState>, announce = true): void {
    if ('query' in patch || 'matchCase' in patch || 'transforms' in patch || 'range' in patch || 'threadMode' in patch) this.matchIndex = -1;
    const before = this.state.range;
    if ('range' in patch) this.chartSpan = null;
    this.state = { ...this.state, ...patch };
    const keys = Object.keys(patch);
    this.writeUrl(keys.length === 1 && keys[0] === 'range' && this.state.view === 'chart');
    this.render();
    // The time window is the page's: tell the other viewers (and whatever else listens).
    if (announce && 'range' in patch && before !== this.state.range) {
      window.dispatchEvent(new CustomEvent<WindowEvent>(WINDOW_EVENT, { detail: { source: this, window: this.window } }));
    }
  }

  /**
   * A page's rule for a window dragged in this viewer, on the profiles' clock (ns): the run
   * report widens it to whole seconds of its series, as a drag on its charts is, so that
   * its figures and every flame graph describe the same seconds. None: kept as dragged.
   */
  snapWindow: ((w: [number, number]) => [number, number]) | null = null;

  /** A dragged range (ns since the profile's origin) as the page's rule has it. */
  private snapped(r: [number, number]): [number, number] {
    if (!this.snapWindow) return r;
    const o = this.model.raw.timeOrigin;
    const w = this.snapWindow([r[0] + o, r[1] + o]);
    return [w[0] - o, w[1] - o];
  }

  /**
   * Shows the samples of a time window [t0, t1] (ns on the profiles' clock), or all with
   * null: the call a page makes when a window is selected elsewhere (a chart of the load).
   */
  setWindow(w: [number, number] | null, announce = false): void {
    const o = this.model.raw.timeOrigin;
    const r: [number, number] | null = w ? [w[0] - o, w[1] - o] : null;
    const cur = this.state.range;
    if (r === cur || (r && cur && r[0] === cur[0] && r[1] === cur[1])) return;
    this.setState({ range: r, zoom: [] }, announce);
  }

  /**
   * Draws the time strip against a page's axis: `span` on the profiles' clock, `left` and
   * `right` px inside the strip (the run report lines it up with its charts); null: the
   * profile's own span.
   */
  setAxis(span: [number, number] | null, left = 0, right = 0): void {
    const o = this.model.raw.timeOrigin;
    this.timeline?.setAxis(span ? [span[0] - o, span[1] - o] : null, left, right);
    this.tracks?.requestDraw();
  }

  /**
   * Draws another viewer's off-CPU time over this viewer's tracks, stacked over its CPU
   * time (the run report's CPU viewer beside its off-CPU one).
   */
  showOffCpu(other: App): void {
    this.tracks?.setOffCpu(offCpuSource(other.model, other.model.raw.timeOrigin - this.model.raw.timeOrigin));
  }

  /** The selected window on the profiles' clock, or null. */
  get window(): [number, number] | null {
    const o = this.model.raw.timeOrigin;
    return this.state.range ? [this.state.range[0] + o, this.state.range[1] + o] : null;
  }

  private render(): void {
    const s = this.state;
    const m = this.model;
    if (s.view === 'chart' && !this.chart) s.view = 'flame';
    for (const v of VIEWS) {
      this.panes[v].hidden = s.view !== v;
      const tab = this.header.tabs.get(v);
      if (tab) {
        tab.setAttribute('aria-selected', String(s.view === v));
        tab.tabIndex = s.view === v ? 0 : -1;
      }
    }
    // Information about what was shown before must not outlive it.
    if (this.lastView !== s.view || this.lastNormalise !== s.normalise) {
      setText(this.details, '');
      this.hideTooltip();
    }
    this.lastView = s.view;
    this.lastNormalise = s.normalise;
    // Controls of the merged graph mean nothing on the time-ordered chart.
    for (const k of ['icicle', 'order', 'threads', 'reset']) if (this.ctrl[k]) this.ctrl[k].hidden = s.view === 'chart';
    for (const k of ['icicle', 'reset']) if (this.ctrl[k] && s.view === 'tree') this.ctrl[k].hidden = true;
    this.ctrl.invert.hidden = s.view !== 'tree';
    this.ctrl.invert.setAttribute('aria-pressed', String(s.invert));
    this.ctrl.icicle.setAttribute('aria-pressed', String(s.icicle));
    (this.ctrl.order as HTMLSelectElement).value = s.order;
    if (this.ctrl.threads) (this.ctrl.threads as HTMLSelectElement).value = s.threadMode;
    if (this.ctrl.palette) (this.ctrl.palette as HTMLSelectElement).value = s.palette;
    this.ctrl.colors?.setAttribute('aria-pressed', String(s.colors === 'category'));
    if (this.ctrl.normalise) this.ctrl.normalise.setAttribute('aria-pressed', String(s.normalise));
    this.ctrl.case.setAttribute('aria-pressed', String(s.matchCase));
    this.ctrl.names.setAttribute('aria-pressed', String(s.searchNames));
    this.ctrl.tracks?.setAttribute('aria-pressed', String(!(this.tracks?.el.hidden ?? true)));
    const search = this.ctrl.search as HTMLInputElement;
    if (search.value !== s.query) search.value = s.query;
    const frames = m.frames(s);
    const { error } = m.search(s, frames);
    search.classList.toggle('invalid', error !== null);
    search.setAttribute('aria-invalid', String(error !== null));
    search.title =
      error ??
      `Regular expression over ${s.searchNames ? 'functions and process and thread names' : 'function names'}; ${s.matchCase ? 'case always matters (Aa)' : 'case matters when the pattern has a capital letter'}. Enter: next match.`;
    this.renderTransforms(frames.names);
    this.timeline?.setRange(s.range);
    this.crumbs.hidden = s.view !== 'flame';
    this.renderFacts();
    this.renderTracks();
    if (s.view === 'chart') {
      // The chart's colours by category are the flame graph's: its legend with them.
      this.categoryLegend?.show(s.colors === 'category' && this.categoryLegend ? this.derived.categories : null, s.category);
      this.renderChart();
      this.renderEmpty(null);
      return;
    }
    const d = this.derived;
    this.renderEmpty(d.layout.total[0]);
    setText(this.ctrl.matched, error ? 'Invalid regex' : d.match ? `Matched: ${percent(d.matchedWeight, d.layout.total[0])}` : '');
    this.renderMatchCount();
    if (this.ctrl['legend-note'] && d.diff) {
      const u = m.unit;
      setText(
        this.ctrl['legend-note'],
        `${m.meta.labels[0]}: ${u.format(d.diff.sumBefore / d.diff.scale)}, ${m.meta.labels[1]}: ${u.format(d.diff.sumAfter)}` +
          (s.normalise ? ` (${m.meta.labels[0]} normalised to ${m.meta.labels[1]}'s total)` : ''),
      );
    }
    this.categoryLegend?.show(s.colors === 'category' && (s.view === 'flame' || s.view === 'sandwich') ? d.categories : null, s.category);
    if (s.view === 'flame') {
      this.renderCrumbs();
      this.main.show(d.layout, d.color, this.dimmer(d.match, d.layout), (v) => this.labelOf(d.layout, v), s.icicle, d.zoomNode);
    } else if (s.view === 'table') this.renderTable();
    else if (s.view === 'tree') this.treePane.render();
    else this.renderSandwich();
  }

  /** Samples of the selected window before transforms and hidden threads (cached). */
  private windowCounts() {
    return this.model.samplesIn(this.state.range);
  }

  /** The header's figures for what is shown: the window's beside the whole profile's. */
  private renderFacts(): void {
    const m = this.model;
    if (m.isDiff) return;
    const s = this.state;
    const all = m.totals();
    const whole = !s.range && !s.hidden.length && !s.transforms.length;
    const shown = whole ? { weight: all.weight, samples: all.samples } : this.shownTotals();
    const total = this.ctrl['fact-total-0'];
    if (total) setText(total, totalText(m.unit, all, shown, whole));
    const samples = this.ctrl['fact-samples-0'];
    if (samples) setText(samples, samplesText(m.unit, all, shown, whole));
    const dur = this.ctrl['fact-duration-0'];
    if (dur && all.durationNs !== null) setText(dur, durationText(s.range, this.shift, all.durationNs));
  }

  /**
   * Samples in the selected window (all threads, no transforms): from the drawn tree when
   * nothing else removes samples (no extra pass over them), else counted.
   */
  windowSamples(): number {
    const s = this.state;
    if (!s.hidden.length && !s.transforms.length && s.view !== 'chart') return this.derived.layout.samples;
    return this.windowCounts().total;
  }

  /** Weight and samples of what the views show (window, hidden threads, transforms). */
  shownTotals(): { weight: number; samples: number } {
    const l = this.derived.layout;
    return { weight: l.total[0], samples: l.samples };
  }

  /** The note over the panes when there is nothing to draw, and why (emptyText). */
  private renderEmpty(total: number | null): void {
    const text = emptyText(this.model, this.state, total, () => this.windowCounts().total, this.shift);
    this.empty.hidden = !text;
    setText(this.empty, text);
    this.root.classList.toggle('no-samples', this.model.totals().samples === 0);
  }

  /** Shows or hides the track list. */
  private toggleTracks(): void {
    const t = this.tracks;
    if (!t) return;
    t.el.hidden = !t.el.hidden;
    this.ctrl.tracks?.setAttribute('aria-pressed', String(!t.el.hidden));
    this.renderTracks();
  }

  /** The tracks' selection (the threads not hidden), the window and each thread's samples in it. */
  private renderTracks(): void {
    if (this.tracks && !this.tracks.el.hidden) this.tracks.show(this.state.hidden, this.state.range, this.state.range ? this.windowCounts().perThread : null);
  }

  /** The call tree of the state: the flame graph's layout, inverted or not, search applied. */
  callTree(): CallTree {
    const d = this.derived;
    return this.model.callTree(this.state, d);
  }

  private openTreeMenu(n: CallNode, x: number, y: number): void {
    const path = n.node > 0 ? pathOf(this.derived.layout, n.node) : null;
    const run = (key: string): void => this.action(key, n.frame, path, () => this.treePane.toggle(n, true), path ?? keyFrames(n.key));
    this.menu.open(this.derived.frames.names[n.frame] ?? '', this.frameItems(run, n.frame, path !== null, true, 'Open this row (→)'), x, y, this.tree.grid);
  }

  /** Search dims what does not match; null when there is no search. */
  private dimmer(match: Uint8Array | null, l: { frame: Int32Array }): ((v: number) => boolean) | null {
    if (!match) return null;
    return (v) => v > 0 && !match[l.frame[v]];
  }

  private labelOf(l: Layout, v: number): string {
    return v === 0 ? this.model.rootLabel() : this.derived.frames.names[l.frame[v]] ?? '';
  }

  private renderMatchCount(): void {
    const d = this.derived;
    if (!d.match) {
      setText(this.ctrl['match-count'], '');
      return;
    }
    const n = d.matches().length;
    setText(this.ctrl['match-count'], n === 0 ? 'no frames match' : this.matchIndex >= 0 ? `${this.matchIndex + 1} of ${thousands(n)} frames` : `${thousands(n)} frame${n === 1 ? '' : 's'}`);
  }

  /** The flame chart without the hidden threads' lanes (the same object while they stay). */
  private chartLanes(chart: FlameChart): FlameChart {
    const key = this.state.hidden.join('.');
    if (!key) return chart;
    if (this.lanesFor?.chart === chart && this.lanesFor.hidden === key) return this.lanesFor.lanes;
    const hidden = new Set(this.state.hidden);
    const lanes = { ...chart, lanes: chart.lanes.filter((l) => l.thread < 0 || !hidden.has(l.thread)) };
    this.lanesFor = { chart, hidden: key, lanes };
    return lanes;
  }

  private renderChart(): void {
    const s = this.state;
    const view = this.chart;
    if (!view) return;
    const chart = this.chartLanes(this.model.chart(s));
    const frames = this.model.frames({ ...s, threadMode: 'merged' });
    const { match, error } = this.model.search({ ...s, threadMode: 'merged' }, frames);
    const colors = this.model.chartNodeColors(s, chart);
    const fr = chart.frame;
    setText(this.ctrl.matched, error ? 'Invalid regex' : '');
    setText(this.ctrl['match-count'], match ? 'Enter: next match' : '');
    // The chart opens on the window; zoom and pan move only the chart's own view.
    const [a, b] = this.chartSpan ?? s.range ?? chart.span;
    const counts = s.range ? this.windowCounts() : null;
    const laneLabel = (li: number): string => {
      const lane = chart.lanes[li];
      if (!counts || lane.thread < 0) return `${lane.name} — ${thousands(lane.samples)} samples`;
      return `${lane.name} — ${thousands(counts.perThread[lane.thread])} of ${thousands(lane.samples)} samples in the window`;
    };
    view.show(chart, colors, match ? (n) => !match[fr[n]] : null, (n) => frames.names[fr[n]] ?? '', a, b, { shift: this.shift, window: s.range, laneLabel });
    if (chart.untimed || chart.dropped) {
      this.notice.hidden = false;
      setText(
        this.notice,
        [chart.untimed ? `${thousands(chart.untimed)} samples have no timestamp and are not in the chart` : '', chart.dropped ? `${thousands(chart.dropped)} samples dropped by the transforms` : '']
          .filter(Boolean)
          .join('; '),
      );
    } else if (this.model.meta.view !== 'chart' || this.model.hasChart) this.notice.hidden = true;
  }

  private renderTransforms(names: string[]): void {
    const name = (f: number): string => names[f] ?? `#${f}`;
    const items = this.state.transforms.map((t, i) => {
      const b = el('button', { type: 'button', class: 'transform', title: 'Remove this and later transforms', text: `${describe(t, name)} ✕` });
      b.addEventListener('click', () => this.setState({ transforms: this.state.transforms.slice(0, i), zoom: [] }));
      return b;
    });
    this.transformsBar.hidden = items.length === 0;
    this.transformsBar.replaceChildren(...(items.length ? [el('span', { text: 'Transforms: ' }), ...items] : []));
  }

  private renderCrumbs(): void {
    const d = this.derived;
    const chain: number[] = [];
    for (let v = d.zoomNode; v >= 0; v = d.layout.parent[v]) chain.push(v);
    chain.reverse();
    // Deep stacks: the root, an ellipsis for the middle, and the last frames, so the
    // current frame is always in view.
    const keep = 6;
    const shown = chain.length > keep + 1 ? [chain[0], -1, ...chain.slice(chain.length - keep)] : chain;
    const hiddenNames = chain.slice(1, chain.length - keep).map((v) => this.labelOf(d.layout, v));
    this.crumbs.replaceChildren(
      ...shown.map((v, i) => {
        if (v < 0) return el('span', { class: 'crumb-gap', title: hiddenNames.join(' › '), text: ` › … ${hiddenNames.length} more` });
        const last = i === shown.length - 1;
        const b = el('button', { type: 'button', class: `crumb${last ? ' current' : ''}`, text: this.labelOf(d.layout, v), title: this.labelOf(d.layout, v), 'aria-current': last ? 'location' : undefined });
        b.addEventListener('click', () => this.setState({ zoom: pathOf(d.layout, v), view: 'flame' }));
        return i === 0 ? b : el('span', { class: `crumb-item${last ? ' current' : ''}` }, ' › ', b);
      }),
    );
  }

  private renderTable(): void {
    const s = this.state;
    const { columns, rows } = functionTable(this.derived, this.model.unit, this.model.meta.labels, s.sort, s.filter);
    this.table.show(columns, rows, s.sort, s.filter);
  }

  private renderSandwich(): void {
    const d = this.derived;
    const f = this.state.fn;
    if (f < 0 || f >= d.frames.names.length) {
      setText(this.sandwichTitle, 'Pick a function: a row of the Functions table (Enter), or a frame\'s actions (right-click, Shift+F10) → "Sandwich".');
      this.callers.el.hidden = this.callees.el.hidden = true;
      this.sandwichData = null;
      return;
    }
    this.callers.el.hidden = this.callees.el.hidden = false;
    const sw = (this.sandwichData = this.model.sandwich(this.state, f));
    const stats = d.stats();
    const u = this.model.unit;
    setText(
      this.sandwichTitle,
      `${d.frames.names[f]} — total ${u.format(stats.total[f])} (${percent(stats.total[f], d.layout.total[0])} of all), self ${stats.self[f] > 0 ? u.format(stats.self[f]) : '–'}`,
    );
    const colorFor = (l: Layout, diff: Sandwich['callersDiff']) => (v: number): string => {
      if (diff) return v === 0 ? 'rgb(220,220,220)' : diffColorFor(diff, v);
      return v <= 0 ? 'rgb(220,220,220)' : d.frameColor(l.frame[v]);
    };
    const label = (l: Layout) => (v: number): string => (v === 0 ? this.model.rootLabel() : d.frames.names[l.frame[v]] ?? '');
    const dim = (l: Layout) => this.dimmer(d.match, l);
    // Callers: the function at the bottom edge, its callers above it; callees: the
    // function at the top edge, what it calls below. The two meet at the function, and
    // no synthetic root stands between them (base 1 hides it).
    const byCategory = this.model.sandwichColors(this.state, sw);
    const grey = (f: (v: number) => string) => (v: number): string => (v <= 0 ? 'rgb(220,220,220)' : f(v));
    this.callers.show(sw.callers, byCategory ? grey(byCategory.callers) : colorFor(sw.callers, sw.callersDiff), dim(sw.callers), label(sw.callers), false, 0, 1);
    this.callees.show(sw.callees, byCategory ? grey(byCategory.callees) : colorFor(sw.callees, sw.calleesDiff), dim(sw.callees), label(sw.callees), true, 0, 1);
  }

  private layoutOf(which: Which): Layout {
    if (which === 'main' || !this.sandwichData) return this.derived.layout;
    return which === 'callers' ? this.sandwichData.callers : this.sandwichData.callees;
  }

  /** Lines describing node v of a view (tooltip, details, announcements). */
  private describeNode(which: Which, v: number): { name: string; lines: string[] } {
    const l = this.layoutOf(which);
    const m = this.model;
    return {
      name: this.labelOf(l, v),
      lines: describeFrame({ which, layout: l, derived: this.derived, sandwich: this.sandwichData, unit: m.unit, labels: m.meta.labels, isDiff: m.isDiff }, v),
    };
  }

  private showTooltip(name: string, lines: string[], ev: MouseEvent): void {
    this.tooltip.replaceChildren(el('div', { class: 'tt-name', text: name }), ...lines.map((t) => el('div', { text: t })));
    this.tooltip.hidden = false;
    const x = Math.min(ev.clientX + 14, window.innerWidth - this.tooltip.offsetWidth - 8);
    const y = ev.clientY + 18 + this.tooltip.offsetHeight > window.innerHeight ? ev.clientY - this.tooltip.offsetHeight - 8 : ev.clientY + 18;
    this.tooltip.style.left = `${Math.max(0, x)}px`;
    this.tooltip.style.top = `${Math.max(0, y)}px`;
    setText(this.details, `${name} — ${lines.join('; ')}`);
  }

  private onHover(which: Which, v: number, ev: MouseEvent | null): void {
    if (v < 0 || !ev) {
      this.hovered = null;
      this.hideTooltip();
      return;
    }
    this.hovered = { which, v };
    const { name, lines } = this.describeNode(which, v);
    this.showTooltip(name, lines, ev);
  }

  private onSelect(which: Which, v: number): void {
    if (v < 0) return;
    const { name, lines } = this.describeNode(which, v);
    const text = `${name} — ${lines.join('; ')}`;
    setText(this.details, text);
    setText(this.status, text);
  }

  private boxInfo(b: ChartBox): { name: string; lines: string[]; frame: number } | null {
    return describeBox(this.chartLanes(this.model.chart(this.state)), this.model.frames({ ...this.state, threadMode: 'merged' }).names, b, this.shift);
  }

  private onChartHover(b: ChartBox | null, ev: MouseEvent | null): void {
    this.hoveredBox = b;
    const info = b && this.boxInfo(b);
    if (!info || !ev) return this.hideTooltip();
    this.showTooltip(info.name, info.lines, ev);
  }

  private onChartSelect(b: ChartBox | null): void {
    const info = b && this.boxInfo(b);
    if (!info) return;
    const text = `${info.name} — ${info.lines.join('; ')}`;
    setText(this.details, text);
    setText(this.status, text);
  }

  private hideTooltip(): void {
    this.tooltip.hidden = true;
  }

  private onClick(which: Which, v: number): void {
    if (which === 'main') this.setState({ zoom: pathOf(this.derived.layout, v) });
    else (which === 'callers' ? this.callers : this.callees).zoomTo(v);
  }

  private addTransform(t: Transform): void {
    this.setState({ transforms: [...this.state.transforms, t], zoom: [] });
  }

  /**
   * Runs a frame action (the menu's and the keys' m M F x d r R C s y Y). `path` is the
   * node's frames from the root of the tree as it stands (null where a node has none:
   * the inverted tree, the flame chart), `stack` the frames shown from the view's root to
   * the node (what "copy stack" copies).
   */
  private action(key: string, frame: number, path: number[] | null, zoom: (() => void) | null, stack: number[] | null = path): void {
    if (frame < 0) return;
    if (key === 'zoom') return zoom?.();
    const t = transformFor(key, frame, path);
    if (t) return this.addTransform(t);
    switch (key) {
      case 'C': {
        const lib = this.libraryOf(frame);
        if (lib >= 0) this.addTransform({ kind: 'collapse-library', f: lib });
        return;
      }
      case 'Y':
        if (stack) this.copy(stack.map((f) => this.frameName(f)).join('\n'), `the stack of ${stack.length} frame${stack.length === 1 ? '' : 's'}`);
        return;
      case 's':
        return this.setState({ fn: frame, view: 'sandwich' });
      case 'y': {
        const name = this.frameName(frame);
        return this.copy(name, `the name “${name}”`);
      }
    }
  }

  /** A frame's name (the flame chart's frames are the merged thread mode's). */
  private frameName(f: number): string {
    return this.model.frames(this.state.view === 'chart' ? { ...this.state, threadMode: 'merged' } : this.state).names[f] ?? '';
  }

  /** The id of a frame's library frame, or -1. */
  private libraryOf(f: number): number {
    return this.model.frames(this.state).library?.[f] ?? -1;
  }

  private copy(text: string, what: string): void {
    void copyText(text).then((ok) => {
      const said = ok ? `Copied ${what}` : 'The browser refused to copy; select the text in the details line instead';
      setText(this.details, ok ? said : text);
      setText(this.status, said);
    });
  }

  /**
   * A frame's actions. `node`: the frame is a node of the tree as it stands (focus on
   * subtree, merge node only); `stack`: its stack can be copied.
   */
  private frameItems(run: (key: string) => void, frame: number, node: boolean, stack: boolean, zoomLabel: string): MenuItem[] {
    const lib = this.libraryOf(frame);
    return frameMenuEntries(zoomLabel, node, stack, lib >= 0 ? this.frameName(lib) : null).map(([key, label]) => ({ key, label, run: () => run(key) }));
  }

  private openFrameMenu(which: Which, v: number, x: number, y: number): void {
    const l = this.layoutOf(which);
    const f = l.frame[v];
    if (v <= 0 || f < 0) return;
    const view = which === 'main' ? this.main : which === 'callers' ? this.callers : this.callees;
    const run = (key: string): void =>
      this.action(key, f, which === 'main' ? pathOf(l, v) : null, () => this.onClick(which, v), pathOf(l, v));
    this.menu.open(this.derived.frames.names[f] ?? '', this.frameItems(run, f, which === 'main', true, 'Zoom to this frame (Enter)'), x, y, view.canvas);
  }

  private openChartMenu(b: ChartBox, x: number, y: number): void {
    const info = this.boxInfo(b);
    if (!info || !this.chart) return;
    const chart = this.chart;
    const run = (key: string): void => this.action(key, info.frame, null, () => chart.zoomToBox(b));
    this.menu.open(info.name, this.frameItems(run, info.frame, false, false, 'Zoom to this time (Enter)'), x, y, chart.canvas);
  }

  private openExportMenu(anchor: HTMLElement): void {
    const r = anchor.getBoundingClientRect();
    const graph = this.state.view !== 'table';
    const items: MenuItem[] = [
      ...(graph && this.state.view !== 'chart' ? [{ key: 'svg', label: 'SVG of this flame graph', run: () => this.saveSvg() }] : []),
      ...(graph ? [{ key: 'png', label: 'PNG of what is on screen', run: () => void this.savePng() }] : []),
      { key: 'folded', label: 'Folded stacks (transforms and time window applied)', run: () => this.saveFolded() },
      ...(this.derived.diff
        ? []
        : [
            { key: 'speedscope', label: 'speedscope JSON of this flame graph (transforms and time window applied)', run: () => this.saveSpeedscope() },
            { key: 'firefox', label: 'Firefox Profiler JSON of this flame graph (transforms and time window applied)', run: () => this.saveFirefox() },
          ]),
    ];
    this.menu.open('Export', items, r.left, r.bottom + 2, anchor);
  }

  /** SVG of the flame graph as it stands (transforms, window, zoom), in kiln flamegraph's layout. */
  exportSvg(): string {
    const d = this.derived;
    const m = this.model.meta;
    return svgOf(d.layout, {
      title: m.title,
      subtitle: m.subtitle,
      color: d.color,
      label: (v) => this.labelOf(d.layout, v),
      unit: this.model.unit,
      zoom: d.zoomNode,
      icicle: this.state.icicle,
    });
  }

  /** Folded stacks of the tree as it stands (two counts per line for a diff). */
  exportFolded(): string {
    const d = this.derived;
    return foldedOf(d.layout, d.frames, d.diff ? { self: d.diff.selfBefore, after: d.diff.selfAfter } : undefined);
  }

  /** The flame graph as it stands as a speedscope file (not for a diff). */
  exportSpeedscope(): string {
    const d = this.derived;
    return speedscopeOf(d.layout, d.frames, this.model.unit, this.viewName());
  }

  /** The flame graph as it stands as a Firefox Profiler file (not for a diff). */
  exportFirefox(): string {
    const d = this.derived;
    return firefoxOf(d.layout, d.frames, this.model.unit, this.viewName());
  }

  /** The canvas of the current view as PNG. */
  exportPng(): Promise<Blob> {
    const s = this.state.view;
    const c = s === 'chart' && this.chart ? this.chart.canvas : s === 'sandwich' ? this.callers.canvas : this.main.canvas;
    return canvasPng(c);
  }

  /**
   * What the view shows, for an export's name: the page's title, the event, the time
   * window (s on the page's clock) and whether transforms apply.
   */
  private viewName(): string {
    const title = this.model.meta.title;
    const parts = [title];
    const ev = this.model.unit.event;
    if (ev && !title.includes(ev)) parts.push(ev);
    const r = this.state.range;
    const s = (x: number): string => `${Number(((x + this.shift) / 1e9).toFixed(3))}`;
    if (r) parts.push(`${s(r[0])}-${s(r[1])} s`);
    if (this.state.transforms.length) parts.push('transformed');
    return parts.join(' ');
  }

  /** A file name (without its extension) for what the view shows. */
  private stem(): string {
    return fileStem(this.viewName());
  }

  private saveSvg(): void {
    download(`${this.stem()}.svg`, new Blob([this.exportSvg()], { type: 'image/svg+xml' }));
  }

  private saveSpeedscope(): void {
    download(`${this.stem()}.speedscope.json`, new Blob([this.exportSpeedscope()], { type: 'application/json' }));
  }

  private saveFirefox(): void {
    download(`${this.stem()}.firefox.json`, new Blob([this.exportFirefox()], { type: 'application/json' }));
  }

  private saveFolded(): void {
    download(`${this.stem()}.folded`, new Blob([this.exportFolded()], { type: 'text/plain' }));
  }

  private async savePng(): Promise<void> {
    try {
      download(`${this.stem()}.png`, await this.exportPng());
    } catch (e) {
      setText(this.status, String(e instanceof Error ? e.message : e));
    }
  }

  /** Moves to the next (1) or previous (-1) search match. */
  stepMatch(dir: 1 | -1): void {
    if (!this.state.query) return;
    if (this.state.view === 'chart') return this.stepChartMatch(dir);
    if (this.state.view !== 'flame') this.setState({ view: 'flame' });
    const d = this.derived;
    const list = d.matches();
    if (!list.length) return this.renderMatchCount();
    this.matchIndex = this.matchIndex < 0 ? (dir > 0 ? 0 : list.length - 1) : (this.matchIndex + dir + list.length) % list.length;
    this.main.setSelected(list[this.matchIndex], true);
    this.renderMatchCount();
  }

  private stepChartMatch(dir: 1 | -1): void {
    const view = this.chart;
    if (!view) return;
    const chart = this.chartLanes(this.model.chart(this.state));
    const frames = this.model.frames({ ...this.state, threadMode: 'merged' });
    const { match } = this.model.search({ ...this.state, threadMode: 'merged' }, frames);
    if (!match) return;
    const boxes = matchingBoxes(chart, match);
    const n = boxes.length;
    if (!n) return setText(this.ctrl['match-count'], 'no frames match');
    this.matchIndex = this.matchIndex < 0 ? (dir > 0 ? 0 : n - 1) : (this.matchIndex + dir + n) % n;
    view.setSelected(boxes[this.matchIndex], true);
    setText(this.ctrl['match-count'], `${this.matchIndex + 1} of ${thousands(n)} boxes`);
  }

  /** The frame a key acts on: the keyboard's selection on a focused canvas, else the hovered one. */
  private keyTarget(): { which: Which; v: number } | { box: ChartBox } | { row: CallNode } | null {
    const a = document.activeElement;
    if (a === this.tree.grid && this.tree.activeRow) return { row: this.tree.activeRow };
    for (const [which, view] of [['main', this.main], ['callers', this.callers], ['callees', this.callees]] as const) {
      if (a === view.canvas && view.selected > 0) return { which, v: view.selected };
    }
    if (this.chart && a === this.chart.canvas && this.chart.selected) return { box: this.chart.selected };
    if (this.state.view === 'chart' && this.hoveredBox) return { box: this.hoveredBox };
    return this.hovered;
  }

  private onKey(e: KeyboardEvent): void {
    if (e.defaultPrevented) return;
    const t = e.target as HTMLElement;
    const typing = t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLTextAreaElement;
    if (e.key === 'F3') {
      e.preventDefault();
      return this.stepMatch(e.shiftKey ? -1 : 1);
    }
    if (e.key === 'Escape') return this.onEscape(t, typing);
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    const patch = STATE_KEYS.get(e.key);
    if (patch) return this.setState(patch(this.state));
    if (FRAME_KEYS.has(e.key)) return this.actOnKeyTarget(e.key);
    switch (e.key) {
      case '/':
        e.preventDefault();
        (this.ctrl.search as HTMLInputElement).focus();
        return;
      case '4':
        if (this.chart) this.setState({ view: 'chart' });
        return;
      case 'h':
        // To the tracks (shown first when hidden).
        if (this.tracks?.el.hidden) this.toggleTracks();
        e.preventDefault();
        return this.tracks?.focus();
      case 'n':
        if (this.model.isDiff) this.setState({ normalise: !this.state.normalise });
        return;
      case 'e':
        return this.openExportMenu(this.ctrl.export);
      case '?':
        return this.help.toggle();
    }
  }

  /** Escape closes what is open, leaves a field, then undoes the search, the chart's zoom, the window or the zoom. */
  private onEscape(t: HTMLElement, typing: boolean): void {
    if (this.menu.isOpen) return this.menu.close();
    if (this.help.isOpen) return this.help.close();
    if (typing) return (t as HTMLInputElement).blur();
    if (this.state.query) this.setState({ query: '' });
    else if (this.state.view === 'chart') {
      // First the chart's own zoom, then the window.
      if (this.chartSpan) {
        this.chartSpan = null;
        this.render();
      } else this.setState({ range: null });
    } else this.setState({ zoom: [] });
  }

  /** A frame key (FRAME_KEYS) on the frame the keyboard or the mouse is on, if any. */
  private actOnKeyTarget(key: string): void {
    const k = this.keyTarget();
    if (!k) return;
    if ('box' in k) {
      const info = this.boxInfo(k.box);
      if (info) this.action(key, info.frame, null, null, null);
      return;
    }
    if ('row' in k) {
      const path = k.row.node > 0 ? pathOf(this.derived.layout, k.row.node) : null;
      this.action(key, k.row.frame, path, null, path ?? keyFrames(k.row.key));
      return;
    }
    const l = this.layoutOf(k.which);
    if (k.v > 0) this.action(key, l.frame[k.v], k.which === 'main' ? pathOf(l, k.v) : null, null, pathOf(l, k.v));
  }

  /** Draws the current view now (first paint, benchmarks). */
  drawNow(): void {
    if (this.state.view === 'chart') this.chart?.drawNow();
    else if (this.state.view === 'flame') this.main.drawNow();
  }

  /**
   * Builds, once the page is shown, what the first clicks need and the first drawing did
   * not (children lists for zooming, sample counts for tooltips, the time index for
   * windows), so a click does not pay for them.
   */
  warmUp(): void {
    setTimeout(() => {
      if (this.state.view !== 'chart') {
        const l = this.derived.layout;
        void l.childList;
        void l.count;
      }
      // The time index: a window's tree then costs its stacks, not every sample.
      setTimeout(() => timeIndex(this.model.raw, this.model.nsPerWeight), 0);
      // The indexes of the first transform (merge, drop, collapse recursion).
      setTimeout(() => this.model.prepareTransforms(this.state), 0);
    }, 0);
  }

  private redrawAll(): void {
    for (const v of [this.main, this.callers, this.callees]) v.requestDraw();
    this.chart?.requestDraw();
    this.timeline?.draw();
    this.tracks?.requestDraw();
  }

  /** First drawn node named `name` in the main view, as a page rectangle (tests, benches). */
  find(name: string, which: Which = 'main'): { x: number; y: number; w: number; h: number; node: number } | null {
    const view = which === 'main' ? this.main : which === 'callers' ? this.callers : this.callees;
    const sc = view.scene;
    if (!sc || view.el.hidden || view.renderer.width === 0) return null;
    const l = sc.layout;
    const names = this.derived.frames.names;
    const r0 = view.canvas.getBoundingClientRect();
    for (let v = 1; v < l.n; v++) {
      if (names[l.frame[v]] !== name || l.total[v] <= 0 || l.depth[v] < sc.base) continue;
      const r = view.renderer.rectOf(sc, v);
      if (r.x + r.w <= 0 || r.x >= view.renderer.width || r.w < 1) continue;
      return { x: r0.left + Math.max(0, r.x), y: r0.top + r.y, w: Math.min(r.w, view.renderer.width), h: r.h, node: v };
    }
    return null;
  }

  /** Draw statistics of the main view. */
  get stats(): { drawCount: number; last: DrawStats | null } {
    return { drawCount: this.main.drawCount, last: this.main.lastStats };
  }

  /** The current colours (light or dark), for tests. */
  get theme(): string {
    return currentTheme().dark ? 'dark' : 'light';
  }
}

const maxDeltas = new WeakMap<object, number>();

/** Diff colour of a node of a sandwich half (its largest change computed once). */
function diffColorFor(diff: DiffLayout, v: number): string {
  let md = maxDeltas.get(diff);
  if (md === undefined) maxDeltas.set(diff, (md = maxDelta(diff)));
  return diffColorOf(diff, v, md);
}


function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
