// The application: header, the four views (flame graph, flame chart, function table,
// sandwich), tooltip, context menu, help, and the keyboard. State changes go through
// setState, which writes the URL and redraws. Nothing here is global: a page may hold
// several apps (the run report's CPU, off-CPU and memory graphs), each owning the URL keys
// under its prefix and sharing the page's time window `t`.
import { Derived, Model, Sandwich, diffColorOf } from '../app-state/model.js';
import { VIEWS, ViewName, ViewState, defaultState, fromParams, toParams } from '../app-state/state.js';
import { HashParams } from '../app-state/url.js';
import { DiffLayout, maxDelta } from '../lib/diff.js';
import { foldedOf, svgOf } from '../lib/export.js';
import { matchingBoxes } from '../lib/flamechart.js';
import { Layout, pathOf } from '../lib/layout.js';
import { Palette } from '../lib/palette.js';
import { histogram, timeSpan } from '../lib/timeline.js';
import { Transform, describe } from '../lib/transforms.js';
import { thousands } from '../lib/units.js';
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
import { describeBox, describeFrame, functionTable } from './describe.js';
import { HelpDialog } from './help.js';
import { HeaderParts, TabSpec, buildHeader } from './toolbar.js';


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
}

export class App {
  state: ViewState;
  readonly defaults: ViewState;
  readonly main: FlameView;
  readonly callers: FlameView;
  readonly callees: FlameView;
  readonly chart: ChartView | null;
  readonly table: TableView;
  readonly timeline: TimelineView | null;
  readonly root: HTMLDivElement;
  readonly ids = uniquePrefix();
  private readonly hash: HashParams;
  /** Added to a window (ns since the profile's origin) to write it on the page's clock. */
  private readonly shift: number;
  private readonly header: HeaderParts;
  private readonly ctrl: Record<string, HTMLElement>;
  private readonly tooltip: HTMLDivElement;
  private readonly details: HTMLDivElement;
  private readonly status: HTMLDivElement;
  private readonly notice: HTMLDivElement;
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

  constructor(readonly model: Model, mount: HTMLElement, readonly opts: AppOptions = {}) {
    const meta = model.meta;
    const initial: ViewName = meta.view === 'chart' && model.hasChart ? 'chart' : 'flame';
    this.defaults = defaultState(meta.palette, meta.inverted, meta.leftHeavy, initial);
    this.hash = new HashParams(opts.key ?? '');
    this.shift = model.raw.timeOrigin - (opts.origin ?? model.raw.timeOrigin);
    this.state = this.readUrl();
    const flameHandlers = (which: Which) => ({
      hover: (v: number, ev: MouseEvent | null) => this.onHover(which, v, ev),
      click: (v: number) => this.onClick(which, v),
      context: (v: number, x: number, y: number) => this.openFrameMenu(which, v, x, y),
      select: (v: number) => this.onSelect(which, v),
    });
    this.main = new FlameView(flameHandlers('main'), 'flame main-flame', 'Flame graph');
    this.callers = new FlameView(flameHandlers('callers'), 'flame sandwich-flame', 'Callers of the function');
    this.callees = new FlameView(flameHandlers('callees'), 'flame sandwich-flame', 'Callees of the function');
    this.chart = model.hasChart
      ? new ChartView({
          hover: (b, ev) => this.onChartHover(b, ev),
          range: (t0, t1) => this.setState({ range: [t0, t1] }),
          context: (b, x, y) => this.openChartMenu(b, x, y),
          select: (b) => this.onChartSelect(b),
        })
      : null;
    this.table = new TableView(
      `${this.ids}-table`,
      (key) => this.setState({ sort: key as ViewState['sort'] }),
      (filter) => this.setState({ filter }),
      (f) => this.setState({ fn: f, view: 'sandwich' }),
    );
    const nsw = model.nsPerWeight;
    const span = timeSpan(model.raw, nsw);
    this.timeline = span
      ? new TimelineView(span, (n) => histogram(model.raw, n, span, nsw), (r) => this.setState({ range: r, zoom: [] }), capitalise(model.unit.isTime ? model.unit.what : model.unit.countsSamples ? 'samples' : model.unit.what))
      : null;
    const views: TabSpec[] = [
      { view: 'flame', label: 'Flame graph', key: '1' },
      ...(this.chart ? [{ view: 'chart' as ViewName, label: 'Flame chart', key: '4' }] : []),
      { view: 'table', label: 'Functions', key: '2' },
      { view: 'sandwich', label: 'Sandwich', key: '3' },
    ];
    this.header = buildHeader(model, views, this.ids, {
      tab: (v) => this.setState({ view: v }),
      icicle: () => this.setState({ icicle: !this.state.icicle }),
      order: (v) => this.setState({ order: v as ViewState['order'] }),
      threads: (v) => this.setState({ threadMode: v as ViewState['threadMode'], zoom: [], transforms: [] }),
      palette: (v) => this.setState({ palette: v as Palette }),
      normalise: () => this.setState({ normalise: !this.state.normalise }),
      reset: () => this.setState({ zoom: [] }),
      search: (q) => this.setState({ query: q }),
      step: (d) => this.stepMatch(d),
      matchCase: () => this.setState({ matchCase: !this.state.matchCase }),
      exportMenu: (b) => this.openExportMenu(b),
      help: () => this.help.toggle(),
    });
    this.ctrl = this.header.ctrl;
    this.tooltip = el('div', { class: 'tooltip', role: 'tooltip', hidden: true });
    this.details = el('div', { class: 'details', 'data-ctrl': 'details' });
    this.status = el('div', { class: 'sr-only', role: 'status', 'aria-live': 'polite', 'data-ctrl': 'status' });
    this.notice = el('div', { class: 'notice', hidden: true });
    this.crumbs = el('nav', { class: 'crumbs', 'aria-label': 'Zoom path' });
    this.transformsBar = el('div', { class: 'transforms', hidden: true });
    this.help = new HelpDialog(`${this.ids}-help-title`);
    this.sandwichTitle = el('div', { class: 'sandwich-title' });
    const pane = (v: ViewName, cls: string, ...children: (Node | null)[]): HTMLElement =>
      el('section', { class: `pane ${cls}`, role: 'tabpanel', id: `${this.ids}-pane-${v}`, 'aria-labelledby': `${this.ids}-tab-${v}` }, ...children);
    this.panes = {
      flame: pane('flame', 'flame-pane', this.main.el),
      chart: pane('chart', 'chart-pane', this.chart ? this.chart.el : null),
      table: pane('table', 'table-pane', this.table.el),
      sandwich: pane(
        'sandwich',
        'sandwich-pane',
        this.sandwichTitle,
        el('div', { class: 'sandwich-label', text: 'Callers: the function at the bottom, each row up one caller further out' }),
        this.callers.el,
        el('div', { class: 'sandwich-label', text: 'Callees: the function at the top, what it calls below' }),
        this.callees.el,
      ),
    };
    this.root = el(
      'div',
      { class: 'kiln' },
      this.header.el,
      this.notice,
      this.transformsBar,
      this.timeline ? this.timeline.el : null,
      this.crumbs,
      el('main', { class: 'panes' }, ...VIEWS.map((v) => this.panes[v])),
      this.details,
      this.status,
      this.tooltip,
      this.menu.el,
      this.help.el,
    );
    mount.replaceChildren(this.root);
    if (meta.view === 'chart' && !model.hasChart) {
      this.notice.hidden = false;
      setText(this.notice, 'This profile has no timestamps, so it has no time order to chart: showing the merged flame graph.');
    }
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
    if (opts.documentKeys) {
      document.addEventListener('keydown', (e) => {
        const t = e.target as Node | null;
        if (t === document || t === document.body || t === document.documentElement) this.onKey(e);
      });
    }
    document.addEventListener('mousedown', (e) => {
      if (this.menu.isOpen && !this.menu.el.contains(e.target as Node)) this.menu.close(false);
    });
    onThemeChange(() => this.redrawAll());
    this.render();
  }

  private readUrl(): ViewState {
    const s = fromParams(this.hash.read(location.hash), this.defaults, this.model.maxFrames, this.shift);
    if (s.view === 'chart' && !this.model.hasChart) s.view = 'flame';
    return s;
  }

  /** Writes the state to the URL: now, or (for a dragged time window) once it settles. */
  private writeUrl(later: boolean): void {
    clearTimeout(this.urlTimer);
    const write = (): void => {
      const h = this.hash.write(location.hash, toParams(this.state, this.defaults, this.shift));
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
    this.ctrl.icicle.setAttribute('aria-pressed', String(s.icicle));
    (this.ctrl.order as HTMLSelectElement).value = s.order;
    if (this.ctrl.threads) (this.ctrl.threads as HTMLSelectElement).value = s.threadMode;
    if (this.ctrl.palette) (this.ctrl.palette as HTMLSelectElement).value = s.palette;
    if (this.ctrl.normalise) this.ctrl.normalise.setAttribute('aria-pressed', String(s.normalise));
    this.ctrl.case.setAttribute('aria-pressed', String(s.matchCase));
    const search = this.ctrl.search as HTMLInputElement;
    if (search.value !== s.query) search.value = s.query;
    const frames = m.frames(s);
    const { error } = m.search(s, frames);
    search.classList.toggle('invalid', error !== null);
    search.setAttribute('aria-invalid', String(error !== null));
    search.title = error ?? 'Regular expression; case-insensitive unless Aa is on. Enter: next match.';
    this.renderTransforms(frames.names);
    this.timeline?.setRange(s.range);
    this.crumbs.hidden = s.view !== 'flame';
    if (s.view === 'chart') {
      this.renderChart();
      return;
    }
    const d = this.derived;
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
    if (s.view === 'flame') {
      this.renderCrumbs();
      this.main.show(d.layout, d.color, this.dimmer(d.match, d.layout), (v) => this.labelOf(d.layout, v), s.icicle, d.zoomNode);
    } else if (s.view === 'table') this.renderTable();
    else this.renderSandwich();
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

  private renderChart(): void {
    const s = this.state;
    const view = this.chart;
    if (!view) return;
    const chart = this.model.chart(s);
    const frames = this.model.frames({ ...s, threadMode: 'merged' });
    const { match, error } = this.model.search({ ...s, threadMode: 'merged' }, frames);
    const colors = this.model.chartColors(s);
    const fr = chart.frame;
    setText(this.ctrl.matched, error ? 'Invalid regex' : '');
    setText(this.ctrl['match-count'], match ? 'Enter: next match' : '');
    const [a, b] = s.range ?? chart.span;
    view.show(chart, (n) => colors(fr[n]), match ? (n) => !match[fr[n]] : null, (n) => frames.names[fr[n]] ?? '', a, b);
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
      `${d.frames.names[f]} — total ${u.format(stats.total[f])} (${percent(stats.total[f], d.layout.total[0])} of all), self ${u.format(stats.self[f])}`,
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
    this.callers.show(sw.callers, colorFor(sw.callers, sw.callersDiff), dim(sw.callers), label(sw.callers), false, 0, 1);
    this.callees.show(sw.callees, colorFor(sw.callees, sw.calleesDiff), dim(sw.callees), label(sw.callees), true, 0, 1);
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
    return describeBox(this.model.chart(this.state), this.model.frames({ ...this.state, threadMode: 'merged' }).names, b);
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

  /** Runs a frame action (the menu's and the keys' m F x d r s y). */
  private action(key: string, frame: number, path: number[] | null, zoom: (() => void) | null): void {
    if (frame < 0) return;
    switch (key) {
      case 'zoom':
        return zoom?.();
      case 'x':
        if (path) this.addTransform({ kind: 'focus-subtree', path });
        return;
      case 'F':
        return this.addTransform({ kind: 'focus-function', f: frame });
      case 'm':
        return this.addTransform({ kind: 'merge', f: frame });
      case 'd':
        return this.addTransform({ kind: 'drop', f: frame });
      case 'r':
        return this.addTransform({ kind: 'collapse-recursion', f: frame });
      case 's':
        return this.setState({ fn: frame, view: 'sandwich' });
      case 'y': {
        const name = this.model.frames(this.state.view === 'chart' ? { ...this.state, threadMode: 'merged' } : this.state).names[frame] ?? '';
        void copyText(name).then((ok) => {
          const text = ok ? `Copied the name “${name}”` : 'The browser refused to copy; select the name in the details line instead';
          setText(this.details, text);
          setText(this.status, text);
        });
        return;
      }
    }
  }

  private frameItems(run: (key: string) => void, withSubtree: boolean, zoomLabel: string): MenuItem[] {
    const items: [string, string][] = [
      ['zoom', zoomLabel],
      ...(withSubtree ? ([['x', 'Focus on subtree (x)']] as [string, string][]) : []),
      ['F', 'Focus on function (F)'],
      ['m', 'Merge function (m)'],
      ['d', 'Drop samples with this function (d)'],
      ['r', 'Collapse recursion (r)'],
      ['s', 'Sandwich: callers and callees (s)'],
      ['y', 'Copy name (y)'],
    ];
    return items.map(([key, label]) => ({ key, label, run: () => run(key) }));
  }

  private openFrameMenu(which: Which, v: number, x: number, y: number): void {
    const l = this.layoutOf(which);
    const f = l.frame[v];
    if (v <= 0 || f < 0) return;
    const view = which === 'main' ? this.main : which === 'callers' ? this.callers : this.callees;
    const run = (key: string): void =>
      this.action(key, f, which === 'main' ? pathOf(l, v) : null, () => this.onClick(which, v));
    this.menu.open(this.derived.frames.names[f] ?? '', this.frameItems(run, which === 'main', 'Zoom to this frame (Enter)'), x, y, view.canvas);
  }

  private openChartMenu(b: ChartBox, x: number, y: number): void {
    const info = this.boxInfo(b);
    if (!info || !this.chart) return;
    const chart = this.chart;
    const run = (key: string): void => this.action(key, info.frame, null, () => chart.zoomToBox(b));
    this.menu.open(info.name, this.frameItems(run, false, 'Zoom to this time (Enter)'), x, y, chart.canvas);
  }

  private openExportMenu(anchor: HTMLElement): void {
    const r = anchor.getBoundingClientRect();
    const graph = this.state.view !== 'table';
    const items: MenuItem[] = [
      ...(graph && this.state.view !== 'chart' ? [{ key: 'svg', label: 'SVG of this flame graph', run: () => this.saveSvg() }] : []),
      ...(graph ? [{ key: 'png', label: 'PNG of what is on screen', run: () => void this.savePng() }] : []),
      { key: 'folded', label: 'Folded stacks (transforms and time window applied)', run: () => this.saveFolded() },
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

  /** The canvas of the current view as PNG. */
  exportPng(): Promise<Blob> {
    const s = this.state.view;
    const c = s === 'chart' && this.chart ? this.chart.canvas : s === 'sandwich' ? this.callers.canvas : this.main.canvas;
    return canvasPng(c);
  }

  private stem(): string {
    return fileStem(this.model.meta.title);
  }

  private saveSvg(): void {
    download(`${this.stem()}.svg`, new Blob([this.exportSvg()], { type: 'image/svg+xml' }));
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
    const chart = this.model.chart(this.state);
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
  private keyTarget(): { which: Which; v: number } | { box: ChartBox } | null {
    const a = document.activeElement;
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
    if (e.key === 'Escape') {
      if (this.menu.isOpen) return this.menu.close();
      if (this.help.isOpen) return this.help.close();
      if (typing) return (t as HTMLInputElement).blur();
      if (this.state.query) this.setState({ query: '' });
      else if (this.state.view === 'chart') this.setState({ range: null });
      else this.setState({ zoom: [] });
      return;
    }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    const s = this.state;
    const target = (key: string): void => {
      const k = this.keyTarget();
      if (!k) return;
      if ('box' in k) {
        const info = this.boxInfo(k.box);
        if (info && key !== 'x') this.action(key, info.frame, null, null);
        return;
      }
      const l = this.layoutOf(k.which);
      if (k.v > 0) this.action(key, l.frame[k.v], k.which === 'main' ? pathOf(l, k.v) : null, null);
    };
    switch (e.key) {
      case '/':
        e.preventDefault();
        (this.ctrl.search as HTMLInputElement).focus();
        return;
      case 'c':
        return this.setState({ matchCase: !s.matchCase });
      case '1':
        return this.setState({ view: 'flame' });
      case '2':
        return this.setState({ view: 'table' });
      case '3':
        return this.setState({ view: 'sandwich' });
      case '4':
        if (this.chart) this.setState({ view: 'chart' });
        return;
      case 'i':
        return this.setState({ icicle: !s.icicle });
      case 'l':
        return this.setState({ order: s.order === 'alphabetical' ? 'left-heavy' : 'alphabetical' });
      case 'z':
        return this.setState({ zoom: s.zoom.slice(0, -1) });
      case '0':
        return this.setState({ zoom: [] });
      case 'u':
        return this.setState({ transforms: s.transforms.slice(0, -1), zoom: [] });
      case 'n':
        if (this.model.isDiff) this.setState({ normalise: !s.normalise });
        return;
      case 'e':
        return this.openExportMenu(this.ctrl.export);
      case '?':
        return this.help.toggle();
      case 'm':
      case 'F':
      case 'x':
      case 'd':
      case 'r':
      case 's':
      case 'y':
        return target(e.key);
    }
  }

  /** Draws the current view now (first paint, benchmarks). */
  drawNow(): void {
    if (this.state.view === 'chart') this.chart?.drawNow();
    else if (this.state.view === 'flame') this.main.drawNow();
  }

  /**
   * Builds, once the page is shown, what the first clicks need and the first drawing did
   * not (children lists for zooming, sample counts for tooltips), so a click does not pay
   * for them.
   */
  warmUp(): void {
    setTimeout(() => {
      if (this.state.view === 'chart') return;
      const l = this.derived.layout;
      void l.childList;
      void l.count;
    }, 0);
  }

  private redrawAll(): void {
    for (const v of [this.main, this.callers, this.callees]) v.requestDraw();
    this.chart?.requestDraw();
    this.timeline?.draw();
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
