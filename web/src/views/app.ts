// The application: header controls, the three views, the tooltip, the context menu and
// the keyboard. State changes go through setState, which writes the URL hash and redraws.
import { Model, Derived } from '../app-state/model.js';
import { ViewState, defaultState, fromHash, toHash } from '../app-state/state.js';
import { calleesTree, callersTree } from '../lib/analysis.js';
import { GONE_COLOR, NEW_COLOR } from '../lib/diff.js';
import { formatWeight, percent } from '../lib/format.js';
import { Layout, layoutTree, pathOf } from '../lib/layout.js';
import { MATCH_COLOR, PALETTES, Palette, colorOf } from '../lib/palette.js';
import { histogram, timeSpan } from '../lib/timeline.js';
import { Transform, describe } from '../lib/transforms.js';
import { DrawStats } from '../render/flame-renderer.js';
import { el, setText } from './dom.js';
import { FlameView } from './flame-view.js';
import { Column, TableView } from './table-view.js';
import { TimelineView } from './timeline-view.js';

const SHORTCUTS: [string, string][] = [
  ['/', 'search'], ['c', 'toggle match case'], ['Esc', 'clear search / reset zoom / close'],
  ['1 2 3', 'flame graph / functions / sandwich'], ['i', 'flame ↔ icicle'], ['l', 'alphabetical ↔ left-heavy'],
  ['z', 'zoom out one level'], ['0', 'reset zoom'], ['u', 'undo last transform'],
  ['m F x d r s', 'on the hovered frame: merge, focus function, focus subtree, drop, collapse recursion, sandwich'],
  ['n', 'normalise (diff)'], ['?', 'this help'],
];

export class App {
  state: ViewState;
  readonly defaults: ViewState;
  derived!: Derived;
  readonly main: FlameView;
  private readonly callers: FlameView;
  private readonly callees: FlameView;
  private readonly table: TableView;
  private readonly timeline: TimelineView | null;
  private readonly root: HTMLDivElement;
  private readonly ctrl: Record<string, HTMLElement> = {};
  private readonly tooltip: HTMLDivElement;
  private readonly details: HTMLDivElement;
  private readonly crumbs: HTMLElement;
  private readonly transformsBar: HTMLDivElement;
  private readonly menu: HTMLDivElement;
  private readonly help: HTMLDivElement;
  private readonly panes: Record<string, HTMLElement>;
  private readonly sandwichTitle: HTMLDivElement;
  private hovered = -1;
  private sandwichLayouts: { callers: Layout; callees: Layout } | null = null;

  constructor(readonly model: Model, mount: HTMLElement) {
    const meta = model.meta;
    this.defaults = defaultState(meta.palette, meta.inverted, meta.leftHeavy);
    this.state = fromHash(location.hash, this.defaults, model.maxFrames);
    const flameHandlers = (which: 'main' | 'callers' | 'callees') => ({
      hover: (v: number, ev: MouseEvent | null) => this.onHover(which, v, ev),
      click: (v: number) => this.onClick(which, v),
      context: (v: number, ev: MouseEvent) => this.openMenu(which, v, ev),
    });
    this.main = new FlameView(flameHandlers('main'), 'flame main-flame');
    this.callers = new FlameView(flameHandlers('callers'), 'flame sandwich-flame');
    this.callees = new FlameView(flameHandlers('callees'), 'flame sandwich-flame');
    this.table = new TableView(
      (key) => this.setState({ sort: key as ViewState['sort'] }),
      (filter) => this.setState({ filter }),
      (f) => this.setState({ fn: f, view: 'sandwich' }),
    );
    const span = timeSpan(model.raws[model.raws.length - 1]);
    this.timeline = span
      ? new TimelineView(span, (n) => histogram(model.raws[model.raws.length - 1], n, span), (r) => this.setState({ range: r, zoom: [] }))
      : null;
    this.tooltip = el('div', { class: 'tooltip', role: 'tooltip' });
    this.details = el('div', { class: 'details', 'aria-live': 'polite' });
    this.crumbs = el('nav', { class: 'crumbs', 'aria-label': 'Zoom path' });
    this.transformsBar = el('div', { class: 'transforms' });
    this.menu = el('div', { class: 'menu', role: 'menu' });
    this.help = el('div', { class: 'help' });
    this.sandwichTitle = el('div', { class: 'sandwich-title' });
    this.panes = {
      flame: el('section', { class: 'pane flame-pane' }, this.main.el),
      table: el('section', { class: 'pane table-pane' }, this.table.el),
      sandwich: el(
        'section',
        { class: 'pane sandwich-pane' },
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
      this.header(),
      this.transformsBar,
      this.timeline ? this.timeline.el : null,
      this.crumbs,
      el('main', { class: 'panes' }, this.panes.flame, this.panes.table, this.panes.sandwich),
      this.details,
      this.tooltip,
      this.menu,
      this.help,
    );
    mount.replaceChildren(this.root);
    this.buildHelp();
    window.addEventListener('hashchange', () => {
      this.state = fromHash(location.hash, this.defaults, model.maxFrames);
      this.render();
    });
    document.addEventListener('keydown', (e) => this.onKey(e));
    document.addEventListener('click', (e) => {
      if (!this.menu.contains(e.target as Node)) this.closeMenu();
    });
    this.render();
  }

  private header(): HTMLElement {
    const m = this.model.meta;
    const button = (key: string, text: string, title: string, onClick: () => void): HTMLButtonElement => {
      const b = el('button', { type: 'button', 'data-ctrl': key, title, text });
      b.addEventListener('click', onClick);
      this.ctrl[key] = b;
      return b;
    };
    const select = (key: string, title: string, options: [string, string][], onChange: (v: string) => void): HTMLSelectElement => {
      const s = el('select', { 'data-ctrl': key, title, 'aria-label': title }, ...options.map(([v, t]) => el('option', { value: v, text: t })));
      s.addEventListener('change', () => onChange(s.value));
      this.ctrl[key] = s;
      return s;
    };
    const tabs = el(
      'div',
      { class: 'tabs', role: 'tablist' },
      button('tab-flame', 'Flame graph', 'Flame graph (1)', () => this.setState({ view: 'flame' })),
      button('tab-table', 'Functions', 'Function table (2)', () => this.setState({ view: 'table' })),
      button('tab-sandwich', 'Sandwich', 'Callers and callees of a function (3)', () => this.setState({ view: 'sandwich' })),
    );
    const search = el('input', { type: 'search', class: 'search', placeholder: 'Search (regex)', 'aria-label': 'Search', 'data-ctrl': 'search' });
    search.addEventListener('input', () => this.setState({ query: search.value }));
    this.ctrl.search = search;
    const raw = this.model.raws[this.model.raws.length - 1];
    const tools = el(
      'div',
      { class: 'toolbar' },
      tabs,
      button('icicle', 'Icicle', 'Roots at the top (i)', () => this.setState({ icicle: !this.state.icicle })),
      select('order', 'Order of frames (l)', [['alphabetical', 'Alphabetical'], ['left-heavy', 'Left-heavy']], (v) => this.setState({ order: v as ViewState['order'] })),
      raw.sampleThread
        ? select('threads', 'Threads', [['merged', 'All threads merged'], ['groups', 'Threads by name (numbers merged)'], ['threads', 'One root per thread']], (v) =>
            this.setState({ threadMode: v as ViewState['threadMode'], zoom: [], transforms: [] }),
          )
        : null,
      this.model.isDiff
        ? null
        : select('palette', 'Palette', PALETTES.map((p) => [p, p] as [string, string]), (v) => this.setState({ palette: v as Palette })),
      this.model.isDiff ? button('normalise', 'Normalise', 'Scale before to after\'s total (n)', () => this.setState({ normalise: !this.state.normalise })) : null,
      button('reset', 'Reset zoom', 'Reset zoom (0)', () => this.setState({ zoom: [] })),
      search,
      button('case', 'Aa', 'Match case (c)', () => this.setState({ matchCase: !this.state.matchCase })),
      el('span', { class: 'matched', 'data-ctrl': 'matched' }),
      button('help', '?', 'Keyboard shortcuts (?)', () => this.toggleHelp()),
    );
    this.ctrl.matched = tools.querySelector('.matched') as HTMLElement;
    const legend = this.model.isDiff
      ? el(
          'div',
          { class: 'legend' },
          swatch('rgb(255,60,60)', `grew in ${m.labels[1]}`),
          swatch('rgb(60,60,255)', `shrank in ${m.labels[1]}`),
          swatch(NEW_COLOR, `new in ${m.labels[1]}`),
          swatch(GONE_COLOR, `gone in ${m.labels[1]} (width from ${m.labels[0]})`),
          swatch(MATCH_COLOR, 'search match'),
          el('span', { class: 'legend-note', 'data-ctrl': 'legend-note' }),
        )
      : null;
    if (legend) this.ctrl['legend-note'] = legend.querySelector('.legend-note') as HTMLElement;
    return el(
      'header',
      {},
      el('h1', { class: 'title', text: m.title }),
      m.subtitle ? el('div', { class: 'subtitle', text: m.subtitle }) : null,
      tools,
      legend,
    );
  }

  setState(patch: Partial<ViewState>): void {
    this.state = { ...this.state, ...patch };
    const hash = toHash(this.state, this.defaults);
    history.replaceState(null, '', hash ? `#${hash}` : location.pathname + location.search);
    this.render();
  }

  private render(): void {
    const s = this.state;
    const d = (this.derived = this.model.derive(s));
    const label = (v: number): string => (v === 0 ? this.model.rootLabel() : d.frames.names[d.layout.frame[v]] ?? '');
    for (const v of ['flame', 'table', 'sandwich']) {
      this.panes[v].hidden = s.view !== v;
      this.ctrl[`tab-${v}`].setAttribute('aria-selected', String(s.view === v));
    }
    this.ctrl.icicle.setAttribute('aria-pressed', String(s.icicle));
    (this.ctrl.order as HTMLSelectElement).value = s.order;
    if (this.ctrl.threads) (this.ctrl.threads as HTMLSelectElement).value = s.threadMode;
    if (this.ctrl.palette) (this.ctrl.palette as HTMLSelectElement).value = s.palette;
    if (this.ctrl.normalise) this.ctrl.normalise.setAttribute('aria-pressed', String(s.normalise));
    this.ctrl.case.setAttribute('aria-pressed', String(s.matchCase));
    const search = this.ctrl.search as HTMLInputElement;
    if (search.value !== s.query) search.value = s.query;
    search.classList.toggle('invalid', d.searchError !== null);
    search.title = d.searchError ?? 'Regular expression; case-insensitive unless Aa is on';
    setText(
      this.ctrl.matched,
      d.searchError ? 'Invalid regex' : d.match ? `Matched: ${percent(d.matchedWeight, d.layout.total[0])}` : '',
    );
    if (this.ctrl['legend-note'] && d.diff) {
      const m = this.model.meta;
      setText(
        this.ctrl['legend-note'],
        `${m.labels[0]}: ${formatWeight(d.diff.sumBefore / d.diff.scale, this.model.unit)}, ${m.labels[1]}: ${formatWeight(d.diff.sumAfter, this.model.unit)}` +
          (s.normalise ? ' (before normalised to after)' : ''),
      );
    }
    this.renderTransforms();
    this.renderCrumbs(label);
    this.timeline?.setRange(s.range);
    if (s.view === 'flame') this.main.show(d.layout, d.color, label, s.icicle, d.zoomNode);
    else if (s.view === 'table') this.renderTable();
    else this.renderSandwich();
    this.hideTooltip();
  }

  private renderTransforms(): void {
    const d = this.derived;
    const name = (f: number): string => d.frames.names[f] ?? `#${f}`;
    const items = this.state.transforms.map((t, i) => {
      const b = el('button', { type: 'button', class: 'transform', title: 'Remove this and later transforms', text: `${describe(t, name)} ✕` });
      b.addEventListener('click', () => this.setState({ transforms: this.state.transforms.slice(0, i), zoom: [] }));
      return b;
    });
    this.transformsBar.hidden = items.length === 0;
    this.transformsBar.replaceChildren(...(items.length ? [el('span', { text: 'Transforms: ' }), ...items] : []));
  }

  private renderCrumbs(label: (v: number) => string): void {
    const d = this.derived;
    const chain: number[] = [];
    for (let v = d.zoomNode; v >= 0; v = d.layout.parent[v]) chain.push(v);
    chain.reverse();
    this.crumbs.replaceChildren(
      ...chain.map((v, i) => {
        const b = el('button', { type: 'button', class: 'crumb', text: label(v), title: label(v) });
        b.addEventListener('click', () => this.setState({ zoom: pathOf(d.layout, v), view: 'flame' }));
        return i === 0 ? b : el('span', {}, ' › ', b);
      }),
    );
  }

  private renderTable(): void {
    const d = this.derived;
    const s = this.state;
    const stats = d.stats();
    const before = d.statsBefore();
    const unit = this.model.unit;
    const all = d.layout.total[0];
    const name = (f: number): string => d.frames.names[f] ?? '';
    const cols: Column[] = before
      ? [
          { title: 'Before', key: 'total', numeric: true, text: (f) => percent(before.total[f], d.diff?.sumBefore ?? 1) },
          { title: 'After', key: 'self', numeric: true, text: (f) => percent(stats.total[f], d.diff?.sumAfter ?? 1) },
          { title: 'Change', key: 'delta', numeric: true, text: (f) => signed(stats.total[f] - before.total[f], unit) },
          { title: 'Function', key: 'name', numeric: false, text: name },
        ]
      : [
          { title: 'Self', key: 'self', numeric: true, text: (f) => formatWeight(stats.self[f], unit) },
          { title: 'Self %', key: 'self', numeric: true, text: (f) => percent(stats.self[f], all) },
          { title: 'Total', key: 'total', numeric: true, text: (f) => formatWeight(stats.total[f], unit) },
          { title: 'Total %', key: 'total', numeric: true, text: (f) => percent(stats.total[f], all) },
          { title: 'Function', key: 'name', numeric: false, text: name },
        ];
    let rows = Array.from(stats.present);
    if (before) for (const f of before.present) if (!(stats.total[f] > 0)) rows.push(f);
    if (s.filter) {
      const q = s.filter.toLowerCase();
      rows = rows.filter((f) => name(f).toLowerCase().includes(q));
    }
    const key: Record<string, (f: number) => number> = {
      self: (f) => stats.self[f],
      total: (f) => (before ? before.total[f] : stats.total[f]),
      delta: (f) => Math.abs(stats.total[f] - (before?.total[f] ?? 0)),
    };
    if (before) key.self = (f) => stats.total[f];
    if (s.sort === 'name') rows.sort((a, b) => d.frames.order[a] - d.frames.order[b]);
    else {
      const k = key[s.sort] ?? key.total;
      rows.sort((a, b) => k(b) - k(a) || d.frames.order[a] - d.frames.order[b]);
    }
    this.table.show(cols, Uint32Array.from(rows), s.sort, s.filter);
  }

  private renderSandwich(): void {
    const d = this.derived;
    const f = this.state.fn;
    if (f < 0 || f >= d.frames.names.length) {
      setText(this.sandwichTitle, 'Pick a function: click a row of the Functions table, or right-click a frame and choose "Sandwich".');
      this.callers.el.hidden = this.callees.el.hidden = true;
      return;
    }
    this.callers.el.hidden = this.callees.el.hidden = false;
    const n = d.frames.names.length;
    const callers = layoutTree(callersTree(d.layout, f, n), d.frames, this.state.order);
    const callees = layoutTree(calleesTree(d.layout, f, n), d.frames, this.state.order);
    this.sandwichLayouts = { callers, callees };
    const stats = d.stats();
    setText(
      this.sandwichTitle,
      `${d.frames.names[f]} — total ${formatWeight(stats.total[f], this.model.unit)} (${percent(stats.total[f], d.layout.total[0])}), self ${formatWeight(stats.self[f], this.model.unit)}`,
    );
    const pal = this.state.palette;
    const colorFor = (l: Layout) => (v: number): string => {
      const fr = l.frame[v];
      if (v === 0) return 'rgb(220,220,220)';
      if (d.match && d.match[fr]) return MATCH_COLOR;
      return colorOf(pal, d.frames.names[fr], d.frames.kinds[fr]);
    };
    const labelFor = (l: Layout) => (v: number): string => (v === 0 ? this.model.rootLabel() : d.frames.names[l.frame[v]]);
    // Callers: the function at the bottom edge, its callers below it (drawn as an icicle
    // whose root row is the function), so both halves meet at the function.
    this.callers.show(callers, colorFor(callers), labelFor(callers), false, 0);
    this.callees.show(callees, colorFor(callees), labelFor(callees), true, 0);
  }

  private layoutOf(which: 'main' | 'callers' | 'callees'): Layout {
    if (which === 'main' || !this.sandwichLayouts) return this.derived.layout;
    return this.sandwichLayouts[which];
  }

  private onHover(which: 'main' | 'callers' | 'callees', v: number, ev: MouseEvent | null): void {
    if (v < 0 || !ev) {
      this.hovered = -1;
      this.hideTooltip();
      return;
    }
    const l = this.layoutOf(which);
    const d = this.derived;
    this.hovered = which === 'main' ? v : -1;
    const unit = this.model.unit;
    const name = v === 0 ? this.model.rootLabel() : d.frames.names[l.frame[v]];
    const lines: string[] = [];
    if (which === 'main' && d.diff) {
      const b = d.diff.before[v];
      const a = d.diff.after[v];
      lines.push(`${this.model.meta.labels[0]}: ${formatWeight(b, unit)} (${percent(b, d.diff.sumBefore)})`);
      lines.push(`${this.model.meta.labels[1]}: ${formatWeight(a, unit)} (${percent(a, d.diff.sumAfter)})`);
      lines.push(b <= 0 ? 'new stack' : a <= 0 ? 'stack gone' : `change: ${signed(a - b, unit)} (${b > 0 ? signedPct(a - b, b) : ''})`);
    } else {
      const zoom = which === 'main' ? d.zoomNode : 0;
      lines.push(`total: ${formatWeight(l.total[v], unit)} — ${percent(l.total[v], l.total[0])} of all, ${percent(l.total[v], l.total[zoom])} of ${zoom === 0 ? 'the view' : 'the zoomed frame'}`);
      lines.push(`self: ${formatWeight(l.self[v], unit)} (${percent(l.self[v], l.total[0])})`);
      if (unit !== 'samples') lines.push(`samples: ${Math.round(l.count[v]).toLocaleString('en-US')} (${Math.round(l.selfCount[v]).toLocaleString('en-US')} self)`);
    }
    this.tooltip.replaceChildren(el('div', { class: 'tt-name', text: name }), ...lines.map((t) => el('div', { text: t })));
    this.tooltip.hidden = false;
    const x = Math.min(ev.clientX + 14, window.innerWidth - this.tooltip.offsetWidth - 8);
    const y = ev.clientY + 18 + this.tooltip.offsetHeight > window.innerHeight ? ev.clientY - this.tooltip.offsetHeight - 8 : ev.clientY + 18;
    this.tooltip.style.left = `${Math.max(0, x)}px`;
    this.tooltip.style.top = `${Math.max(0, y)}px`;
    setText(this.details, `${name} — ${lines.join('; ')}`);
  }

  private hideTooltip(): void {
    this.tooltip.hidden = true;
  }

  private onClick(which: 'main' | 'callers' | 'callees', v: number): void {
    if (which === 'main') this.setState({ zoom: pathOf(this.derived.layout, v) });
    else (which === 'callers' ? this.callers : this.callees).zoomTo(v);
  }

  private frameOf(which: 'main' | 'callers' | 'callees', v: number): number {
    return this.layoutOf(which).frame[v];
  }

  private addTransform(t: Transform): void {
    this.setState({ transforms: [...this.state.transforms, t], zoom: [] });
  }

  private action(key: string, which: 'main' | 'callers' | 'callees', v: number): void {
    const f = this.frameOf(which, v);
    if (v <= 0 || f < 0) return;
    switch (key) {
      case 'zoom':
        return this.onClick(which, v);
      case 'x':
        if (which === 'main') return this.addTransform({ kind: 'focus-subtree', path: pathOf(this.derived.layout, v) });
        return;
      case 'F':
        return this.addTransform({ kind: 'focus-function', f });
      case 'm':
        return this.addTransform({ kind: 'merge', f });
      case 'd':
        return this.addTransform({ kind: 'drop', f });
      case 'r':
        return this.addTransform({ kind: 'collapse-recursion', f });
      case 's':
        return this.setState({ fn: f, view: 'sandwich' });
    }
  }

  private openMenu(which: 'main' | 'callers' | 'callees', v: number, ev: MouseEvent): void {
    const items: [string, string][] = [
      ['zoom', 'Zoom to this frame'],
      ...(which === 'main' ? ([['x', 'Focus on subtree (x)']] as [string, string][]) : []),
      ['F', 'Focus on function (F)'],
      ['m', 'Merge function (m)'],
      ['d', 'Drop samples with this function (d)'],
      ['r', 'Collapse recursion (r)'],
      ['s', 'Sandwich: callers and callees (s)'],
    ];
    const name = this.derived.frames.names[this.frameOf(which, v)] ?? '';
    this.menu.replaceChildren(
      el('div', { class: 'menu-title', text: name }),
      ...items.map(([k, t]) => {
        const b = el('button', { type: 'button', role: 'menuitem', 'data-action': k, text: t });
        b.addEventListener('click', () => {
          this.closeMenu();
          this.action(k, which, v);
        });
        return b;
      }),
    );
    this.menu.hidden = false;
    this.menu.style.left = `${Math.min(ev.clientX, window.innerWidth - 280)}px`;
    this.menu.style.top = `${Math.min(ev.clientY, window.innerHeight - 220)}px`;
  }

  private closeMenu(): void {
    this.menu.hidden = true;
  }

  private buildHelp(): void {
    this.help.hidden = true;
    this.help.replaceChildren(
      el('h2', { text: 'Keyboard shortcuts' }),
      el('table', {}, ...SHORTCUTS.map(([k, t]) => el('tr', {}, el('td', {}, el('kbd', { text: k })), el('td', { text: t })))),
      el('p', { text: 'Click a frame to zoom, drag to pan, Ctrl+wheel to zoom, wheel to scroll, right-click for transforms. The URL keeps the view: copy it to share.' }),
    );
    this.help.addEventListener('click', () => this.toggleHelp());
  }

  private toggleHelp(): void {
    this.help.hidden = !this.help.hidden;
  }

  private onKey(e: KeyboardEvent): void {
    const t = e.target as HTMLElement;
    const typing = t instanceof HTMLInputElement || t instanceof HTMLSelectElement;
    if (e.key === 'Escape') {
      if (typing) (t as HTMLInputElement).blur();
      if (!this.menu.hidden || !this.help.hidden) {
        this.closeMenu();
        this.help.hidden = true;
      } else if (this.state.query) this.setState({ query: '' });
      else this.setState({ zoom: [] });
      return;
    }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    const s = this.state;
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
      case '?':
        return this.toggleHelp();
      case 'm':
      case 'F':
      case 'x':
      case 'd':
      case 'r':
      case 's':
        if (this.hovered > 0) this.action(e.key, 'main', this.hovered);
        return;
    }
  }

  /** First drawn node named `name` in the main view, as a page rectangle (tests, benches). */
  find(name: string): { x: number; y: number; w: number; h: number; node: number } | null {
    const sc = this.main.scene;
    if (!sc) return null;
    const l = sc.layout;
    const names = this.derived.frames.names;
    const r0 = this.main.canvas.getBoundingClientRect();
    for (let v = 1; v < l.n; v++) {
      if (names[l.frame[v]] !== name || l.total[v] <= 0) continue;
      const r = this.main.renderer.rectOf(sc, v);
      if (r.x + r.w <= 0 || r.x >= this.main.renderer.width || r.w < 1) continue;
      return { x: r0.left + Math.max(0, r.x), y: r0.top + r.y, w: Math.min(r.w, this.main.renderer.width), h: r.h, node: v };
    }
    return null;
  }

  /** Draw statistics of the main view. */
  get stats(): { drawCount: number; last: DrawStats | null } {
    return { drawCount: this.main.drawCount, last: this.main.lastStats };
  }
}

function swatch(color: string, text: string): HTMLElement {
  const s = el('span', { class: 'swatch' });
  s.style.background = color;
  return el('span', { class: 'legend-item' }, s, text);
}

function signed(x: number, unit: string): string {
  return (x > 0 ? '+' : x < 0 ? '−' : '±') + formatWeight(Math.abs(x), unit);
}

function signedPct(x: number, base: number): string {
  return (x >= 0 ? '+' : '−') + percent(Math.abs(x), base);
}
