// The application: header, the five views (flame graph, flame chart, call tree, function
// table, sandwich), the tracks and the floating parts, wired together. State changes go
// through setState, which writes the URL and redraws. The panes, frame actions, keyboard,
// hover text and exports are modules beside it, each given the app's parts it uses.
// Nothing here is global: a page may hold several apps (the run report's CPU, off-CPU and
// memory graphs), each owning the URL keys under its prefix and sharing the page's time
// window `t`.
import { Derived, Model } from '../app-state/model.js';
import { VIEWS, ViewName, ViewState, defaultState, fromParams, toParams } from '../app-state/state.js';
import { HashParams } from '../app-state/url.js';
import { CallTree } from '../lib/calltree.js';
import { Layout, pathOf } from '../lib/layout.js';
import { Palette } from '../lib/palette.js';
import { CategoryLegend } from './category-legend.js';
import { Resizer } from './resizer.js';
import { histogram, timeSpan } from '../lib/timeline.js';
import { timeIndex } from '../lib/timeindex.js';
import { percent } from '../lib/format.js';
import { DrawStats } from '../render/flame-renderer.js';
import { currentTheme, onThemeChange } from '../render/theme.js';
import { ActionSource, FrameActions } from './actions.js';
import { ChartPane } from './chart-pane.js';
import { ChartView } from './chart-view.js';
import { renderCrumbs, renderTransforms } from './crumbs.js';
import { el, setText, uniquePrefix } from './dom.js';
import { ExportSource, Exports } from './exports.js';
import { FlameView, searchDimmer } from './flame-view.js';
import { Hover, HoverSource } from './hover.js';
import { KeySource, onKey } from './keyboard.js';
import { MatchSource, Matches } from './matches.js';
import { Menu } from './menu.js';
import { SandwichPane, SandwichSource } from './sandwich-pane.js';
import { TableView } from './table-view.js';
import { TimelineView } from './timeline-view.js';
import { TrackList, offCpuSource, tracksFor } from './tracks.js';
import { TreeView } from './tree-view.js';
import { TreePane } from './tree-pane.js';
import { Which, functionTable } from './describe.js';
import { HelpDialog } from './help.js';
import { HeaderParts, buildHeader, showDiffTotals, showState, viewTabs } from './toolbar.js';
import { buildPanes } from './panes.js';
import { emptyText, showFacts } from './facts.js';

/** What the modules beside the app use of it: one object serves them all. */
type AppParts = ActionSource & ExportSource & HoverSource & KeySource & MatchSource & SandwichSource;

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
  private readonly details: HTMLDivElement;
  private readonly status: HTMLDivElement;
  private readonly notice: HTMLDivElement;
  /** "No samples in this window, because …" over the panes. */
  private readonly empty: HTMLDivElement;
  private readonly crumbs: HTMLElement;
  private readonly transformsBar: HTMLDivElement;
  private readonly menu = new Menu();
  private readonly help: HelpDialog;
  /** An embedded viewer's resize handle. */
  private readonly resizer: Resizer | null;
  private readonly panes: Record<ViewName, HTMLElement>;
  private readonly chartPane: ChartPane;
  private readonly sandwich: SandwichPane;
  private readonly hover: Hover;
  private readonly matches: Matches;
  private readonly actions: FrameActions;
  private readonly exports: Exports;
  private readonly keys: KeySource;
  private urlTimer = 0;
  private lastView: ViewName | null = null;
  private lastNormalise: boolean | null = null;
  /** The flame chart's visible range (ns since the profile's origin) when zoomed or
   *  panned away from the window; never the page's window itself. */
  private chartSpan: [number, number] | null = null;

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
      context: (n, x, y) => this.actions.openTreeMenu(n, x, y),
    });
    this.treePane = new TreePane(this.tree, {
      model,
      state: () => this.state,
      derived: () => this.derived,
      callTree: () => this.callTree(),
      announce: (text) => this.announce(text),
    });
    this.timeline = this.newTimeline();
    this.tracks = tracksFor(model, this.timeline, `${this.ids}-tracks-title`, {
      hidden: (hidden) => this.setState({ hidden, zoom: [] }),
      hover: (tip, ev) => (tip && ev ? this.hover.show(tip.name, tip.lines, ev) : this.hover.hide()),
      shift: this.shift,
    });
    // The header and the page's parts around the views.
    this.header = buildHeader(model, viewTabs(this.chart !== null), this.ids, opts.embedded ? opts.key ?? '' : null, opts.headingLevel ?? 1, this.headerActions());
    this.ctrl = this.header.ctrl;
    this.categoryLegend = model.categories ? new CategoryLegend((k) => this.setState({ category: k }), () => this.setState({ legend: !this.state.legend })) : null;
    if (this.categoryLegend) this.header.el.append(this.categoryLegend.el);
    this.details = el('div', { class: 'details', 'data-ctrl': 'details' });
    this.status = el('div', { class: 'sr-only', role: 'status', 'aria-live': 'polite', 'data-ctrl': 'status' });
    this.notice = el('div', { class: 'notice', hidden: true });
    this.empty = el('div', { class: 'empty', role: 'note', 'data-ctrl': 'empty', hidden: true });
    // Landmarks named after the viewer: a page may hold several.
    this.crumbs = el('nav', { class: 'crumbs', 'aria-label': opts.embedded ? `Zoom path of the ${opts.key} flame graph` : 'Zoom path' });
    this.transformsBar = el('div', { class: 'transforms', hidden: true });
    this.help = new HelpDialog(`${this.ids}-help-title`);
    this.resizer = opts.embedded ? new Resizer(opts.key ?? '', () => this.root, (height) => this.setState({ height })) : null;
    // The parts beside the app.
    this.chartPane = new ChartPane(this.chart, { model, shift: this.shift, state: () => this.state, ctrl: this.ctrl, notice: this.notice, span: () => this.chartSpan });
    const parts = this.parts();
    this.sandwich = new SandwichPane(this.callers, this.callees, parts);
    this.hover = new Hover(parts);
    this.matches = new Matches(parts);
    this.actions = new FrameActions(parts);
    this.exports = new Exports(parts);
    this.keys = parts;
    this.panes = buildPanes(this.ids, {
      flame: this.main.el,
      chart: this.chart ? this.chart.el : null,
      tree: this.tree.el,
      table: this.table.el,
      sandwichTitle: this.sandwich.title,
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

  /** The app's parts and hooks that the modules beside it use (AppParts). */
  private parts(): AppParts {
    return {
      model: this.model,
      shift: this.shift,
      menu: this.menu,
      help: this.help,
      ctrl: this.ctrl,
      details: this.details,
      main: this.main,
      flames: [['main', this.main], ['callers', this.callers], ['callees', this.callees]],
      chart: this.chart,
      chartPane: this.chartPane,
      tree: this.tree,
      treeGrid: this.tree.grid,
      tracks: this.tracks,
      count: this.ctrl['match-count'],
      state: () => this.state,
      derived: () => this.derived,
      setState: (patch) => this.setState(patch),
      unzoomChart: () => {
        if (!this.chartSpan) return false;
        this.chartSpan = null;
        this.render();
        return true;
      },
      layoutOf: (which) => this.layoutOf(which),
      labelOf: (l, v) => this.labelOf(l, v),
      flame: (which) => this.flame(which),
      sandwich: () => this.sandwich.data,
      boxInfo: (b) => this.chartPane.boxInfo(b),
      libraryOf: (f) => this.libraryOf(f),
      hovered: () => this.hover.target(),
      canvas: () => {
        const s = this.state.view;
        return s === 'chart' && this.chart ? this.chart.canvas : s === 'sandwich' ? this.callers.canvas : this.main.canvas;
      },
      announce: (text) => this.announce(text),
      say: (details, said) => {
        setText(this.details, details);
        setText(this.status, said);
      },
      fail: (message) => setText(this.status, message),
      zoom: (which, v) => this.onClick(which, v),
      openRow: (n) => this.treePane.toggle(n, true),
      stepMatch: (dir) => this.stepMatch(dir),
      toggleTracks: () => this.toggleTracks(),
      openExportMenu: (anchor) => this.exports.openMenu(anchor),
      act: (key, target) => this.actions.onKey(key, target),
    };
  }

  /** Shows a text on the details line and announces it. */
  private announce(text: string): void {
    setText(this.details, text);
    setText(this.status, text);
  }

  /** What a flame graph (the main one or a sandwich half) calls back. */
  private flameHandlers(which: Which) {
    return {
      hover: (v: number, ev: MouseEvent | null) => this.hover.onNode(which, v, ev),
      click: (v: number) => this.onClick(which, v),
      context: (v: number, x: number, y: number) => this.actions.openFrameMenu(which, v, x, y),
      select: (v: number) => this.hover.selectNode(which, v),
    };
  }

  private flame(which: Which): FlameView {
    return which === 'main' ? this.main : which === 'callers' ? this.callers : this.callees;
  }

  /** The flame chart's view (for a profile with timestamps). */
  private newChartView(): ChartView {
    return new ChartView({
      hover: (b, ev) => this.hover.onBox(b, ev),
      // Zoom and pan move the chart's view, never the page's window.
      range: (t0, t1) => (this.chartSpan = [t0, t1]),
      context: (b, x, y) => this.actions.openChartMenu(b, x, y),
      select: (b) => this.hover.selectBox(b),
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
      exportMenu: (b) => this.exports.openMenu(b),
      help: () => this.help.toggle(),
      full: () => this.setState({ full: !this.state.full }),
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
      this.resizer ? this.resizer.el : null,
      this.status,
      this.hover.tooltip,
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
    this.root.addEventListener('keydown', (e) => onKey(this.keys, e));
    if (this.opts.documentKeys) {
      document.addEventListener('keydown', (e) => {
        const t = e.target as Node | null;
        if (t === document || t === document.body || t === document.documentElement) onKey(this.keys, e);
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
    if ('query' in patch || 'matchCase' in patch || 'transforms' in patch || 'range' in patch || 'threadMode' in patch) this.matches.index = -1;
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
    for (const v of VIEWS) this.panes[v].hidden = s.view !== v;
    // Information about what was shown before must not outlive it.
    if (this.lastView !== s.view || this.lastNormalise !== s.normalise) {
      setText(this.details, '');
      this.hover.hide();
    }
    this.lastView = s.view;
    this.lastNormalise = s.normalise;
    const frames = m.frames(s);
    const { error } = m.search(s, frames);
    this.renderRoom();
    showState(this.header, s, !(this.tracks?.el.hidden ?? true), error);
    renderTransforms(this.transformsBar, s.transforms, frames.names, (i) => this.setState({ transforms: this.state.transforms.slice(0, i), zoom: [] }));
    this.timeline?.setRange(s.range);
    this.crumbs.hidden = s.view !== 'flame';
    showFacts(this.ctrl, m, s, this.shift, () => this.shownTotals());
    this.renderTracks();
    if (s.view === 'chart') {
      // The chart's colours by category are the flame graph's: its legend with them.
      this.categoryLegend?.show(s.colors === 'category' && this.categoryLegend ? this.derived.categories : null, s.category, s.legend);
      this.chartPane.render();
      this.renderEmpty(null);
      return;
    }
    const d = this.derived;
    this.renderEmpty(d.layout.total[0]);
    setText(this.ctrl.matched, error ? 'Invalid regex' : d.match ? `Matched: ${percent(d.matchedWeight, d.layout.total[0])}` : '');
    this.matches.renderCount();
    if (d.diff) showDiffTotals(this.ctrl, m, d.diff, s.normalise);
    this.categoryLegend?.show(s.colors === 'category' && (s.view === 'flame' || s.view === 'sandwich') ? d.categories : null, s.category, s.legend);
    if (s.view === 'flame') {
      renderCrumbs(this.crumbs, d, (l, v) => this.labelOf(l, v), (zoom) => this.setState({ zoom, view: 'flame' }));
      this.main.show(d.layout, d.color, searchDimmer(d.match, d.layout), (v) => this.labelOf(d.layout, v), s.icicle, d.zoomNode);
    } else if (s.view === 'table') this.renderTable();
    else if (s.view === 'tree') this.treePane.render();
    else this.sandwich.render();
  }

  /** Samples of the selected window before transforms and hidden threads (cached). */
  private windowCounts() {
    return this.model.samplesIn(this.state.range);
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
    if (this.tracks) this.setState({ tracks: !this.state.tracks });
  }

  /**
   * The viewer's room: the tracks shown or not, its height (an embedded viewer's resize
   * handle) and full screen, from the state.
   */
  private renderRoom(): void {
    const s = this.state;
    if (this.tracks) this.tracks.el.hidden = !s.tracks;
    this.root.classList.toggle('kiln-full', s.full);
    document.documentElement.classList.toggle('kiln-has-full', s.full || document.querySelector('.kiln-full') !== null);
    if (this.opts.embedded) this.root.style.height = s.height > 0 && !s.full ? `${s.height}px` : '';
    this.resizer?.show(s.height);
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

  /** The id of a frame's library frame, or -1 (the transforms' benchmark asks too). */
  private libraryOf(f: number): number {
    return this.model.frames(this.state).library?.[f] ?? -1;
  }

  private labelOf(l: Layout, v: number): string {
    return v === 0 ? this.model.rootLabel() : this.derived.frames.names[l.frame[v]] ?? '';
  }

  private renderTable(): void {
    const s = this.state;
    const { columns, rows } = functionTable(this.derived, this.model.unit, this.model.meta.labels, s.sort, s.filter);
    this.table.show(columns, rows, s.sort, s.filter);
  }

  private layoutOf(which: Which): Layout {
    const sw = this.sandwich.data;
    if (which === 'main' || !sw) return this.derived.layout;
    return which === 'callers' ? sw.callers : sw.callees;
  }

  private onClick(which: Which, v: number): void {
    if (which === 'main') this.setState({ zoom: pathOf(this.derived.layout, v) });
    else this.flame(which).zoomTo(v);
  }

  /** SVG of the flame graph as it stands (transforms, window, zoom), in kiln flamegraph's layout. */
  exportSvg(): string {
    return this.exports.svg();
  }

  /** Folded stacks of the tree as it stands (two counts per line for a diff). */
  exportFolded(): string {
    return this.exports.folded();
  }

  /** The flame graph as it stands as a speedscope file (not for a diff). */
  exportSpeedscope(): string {
    return this.exports.speedscope();
  }

  /** The flame graph as it stands as a Firefox Profiler file (not for a diff). */
  exportFirefox(): string {
    return this.exports.firefox();
  }

  /** The canvas of the current view as PNG. */
  exportPng(): Promise<Blob> {
    return this.exports.png();
  }

  /** Moves to the next (1) or previous (-1) search match. */
  stepMatch(dir: 1 | -1): void {
    this.matches.step(dir);
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
    return this.flame(which).find(name, () => this.derived.frames.names);
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


function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}