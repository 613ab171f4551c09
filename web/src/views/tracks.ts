// The track list, as the Firefox Profiler's: one track per thread group, each opening
// onto one track per thread, every track a row with its activity over time drawn on the
// time strip's axis, bucket for bucket and pixel for pixel, with the strip's window over
// it. The activity's height is a share, as the profiler's CPU graphs are: CPU time as a
// share of one CPU, time blocked (an off-CPU profile) as a share of the wall time; the
// full height is one CPU (or the whole time) unless a group of threads used more. A
// hover says the bucket's share and time. A click selects a track (ctrl/cmd-click adds it
// or takes it out) and every view shows the selected tracks' threads; "All threads"
// selects them all again; a drag across the tracks selects a time window as a drag on
// the strip does (it is the strip's drag). A tree for the keyboard: arrows move, → opens
// a group, ← closes it, Enter or Space selects, Ctrl+Enter/Space adds.
import { Model } from '../app-state/model.js';
import { Histogram, histograms } from '../lib/timeline.js';
import { threadGroupName } from '../lib/profile.js';
import { Activity, ActivityKind, TrackGroup, activity, activityKind, describeBucket, fullHeight, isSelected, selectTracks, threadSamples, trackGroups } from '../lib/tracks.js';
import { thousands } from '../lib/units.js';
import { currentTheme } from '../render/theme.js';
import { el, setText } from './dom.js';

/** The time strip's axis as the tracks draw on it. */
export interface TrackAxis {
  /** The strip's canvas (its page x is the tracks' reference). */
  canvas: HTMLCanvasElement;
  /** The drawn span (ns since the profile's origin), the plot's left edge and width, px. */
  plot(w: number): { a: number; b: number; x0: number; pw: number };
  /** Buckets the strip draws in a plot `pw` px wide. */
  buckets(pw: number): number;
  /** The window drawn: the one being dragged, else the selected one. */
  selection(): [number, number] | null;
  /** Presses on `target` drag a window as presses on the strip do. */
  dragFrom(target: HTMLElement): void;
  /** Whether the last press dragged (its click then selects no track). */
  dragged(): boolean;
  /** Called while a window is dragged. */
  onDrag: (() => void) | null;
}

export interface TrackSource {
  groups: TrackGroup[];
  /** Each thread's samples in the whole profile. */
  whole: Float64Array;
  nThreads: number;
  /** A thread's label ("name [tid]"). */
  label(t: number): string;
  /** Per row, its histogram over `span` in `n` buckets, each thread counted in `rowOf[t]`. */
  histograms(n: number, span: [number, number], rowOf: Int32Array, rows: number): Histogram[];
  /** The selection changed: threads (ascending), empty for every thread. */
  select(threads: number[]): void;
  /** What the activity measures, and ns per unit of weight (0: weights are not time). */
  kind: ActivityKind;
  nsPerWeight: number;
  /** The machine's CPUs, 0 when unknown: the CPU scale stops there. */
  cpus: number;
  /** Added to a time (ns since the profile's origin) to read it on the page's clock. */
  shift: number;
  /** A weight as the reader reads it. */
  format(w: number): string;
  /** Shows a tooltip (a title and lines) at the pointer, or hides it (null). */
  hover(tip: { name: string; lines: string[] } | null, ev: MouseEvent | null): void;
}

/**
 * Another profile of the same threads whose weight is time blocked (the run's off-CPU
 * profile): its time is drawn stacked over this profile's CPU time, thread by thread
 * matched by name and tid, group by group by name.
 */
export interface OffCpuSource {
  /** Per thread of that profile: its label ("name [tid]") and its group's name. */
  labels: string[];
  groups: string[];
  /** Its histograms, ns blocked, over a span on this profile's clock. */
  histograms(n: number, span: [number, number], rowOf: Int32Array, rows: number): Histogram[];
}

interface Row {
  /** 'all', `g<group>` or `t<thread>`. */
  key: string;
  threads: number[];
  level: number;
  /** Group index for a group's row, -1 otherwise. */
  group: number;
  el: HTMLDivElement;
  canvas: HTMLCanvasElement;
  label: HTMLSpanElement;
}

const TITLE = 'Tracks: click selects, Ctrl+click adds; → opens a group';

export class TrackList {
  readonly el: HTMLDivElement;
  private readonly tree: HTMLDivElement;
  private readonly title: HTMLDivElement;
  private rows: Row[] = [];
  private readonly expanded = new Set<number>();
  private selection: number[] = [];
  private range: [number, number] | null = null;
  private perThread: Float64Array | null = null;
  private focusKey = 'all';
  private hists = new Map<string, Histogram>();
  /** Each row's activity as last drawn, and where its buckets were (for hovers). */
  private drawn = new Map<string, Activity>();
  private geom: { x0: number; pw: number; n: number } | null = null;
  private offHists = new Map<string, Histogram>();
  private off: OffCpuSource | null = null;
  private histKey = '';
  private pending = 0;

  constructor(
    private readonly src: TrackSource,
    private readonly axis: TrackAxis | null,
    titleId: string,
  ) {
    this.tree = el('div', { class: 'tracks-tree', role: 'tree', 'aria-multiselectable': 'true', 'aria-labelledby': titleId });
    this.el = el(
      'div',
      { class: 'tracks', 'data-ctrl': 'tracks' },
      (this.title = el('div', { class: 'tracks-title', id: titleId, text: TITLE })),
      this.tree,
    );
    this.tree.addEventListener('keydown', (e) => this.onKey(e));
    this.tree.addEventListener('click', (e) => this.onClick(e));
    this.tree.addEventListener('mousemove', (e) => this.onHover(e));
    this.tree.addEventListener('mouseleave', () => this.src.hover(null, null));
    if (axis) {
      axis.dragFrom(this.tree);
      axis.onDrag = () => {
        this.src.hover(null, null);
        this.requestDraw();
      };
    }
    new ResizeObserver(() => this.requestDraw()).observe(this.tree);
    this.build();
  }

  /**
   * The view's hidden threads (the others are selected), its window and each thread's
   * samples in it (null without a window: the whole profile's, counted once).
   */
  show(hidden: readonly number[], range: [number, number] | null, perThread: Float64Array | null): void {
    const h = new Set(hidden);
    const sel: number[] = [];
    if (h.size) for (let t = 0; t < this.src.nThreads; t++) if (!h.has(t)) sel.push(t);
    this.update(sel, range, perThread ?? this.src.whole);
  }

  /** The selection (threads shown; empty: all), the window and each thread's samples in it. */
  private update(selection: readonly number[], range: [number, number] | null, perThread: Float64Array): void {
    this.selection = [...selection];
    this.range = range;
    this.perThread = perThread;
    for (const r of this.rows) {
      const sel = r.key === 'all' ? selection.length === 0 : isSelected(selection, r.threads);
      r.el.setAttribute('aria-selected', String(sel));
      setText(r.label, this.labelOf(r));
      r.el.title = this.labelOf(r);
    }
    this.requestDraw();
  }

  /** The rows in order: all threads, each group, the threads of the open groups. */
  private build(): void {
    const { groups } = this.src;
    const rows: Row[] = [this.newRow('all', [], 1, -1)];
    groups.forEach((g, i) => {
      const single = g.threads.length === 1;
      rows.push(this.newRow(single ? `t${g.threads[0]}` : `g${i}`, g.threads, 1, single ? -1 : i));
      if (!single && this.expanded.has(i)) for (const t of g.threads) rows.push(this.newRow(`t${t}`, [t], 2, -1));
    });
    this.rows = rows;
    if (!rows.some((r) => r.key === this.focusKey)) this.focusKey = 'all';
    for (const r of rows) r.el.tabIndex = r.key === this.focusKey ? 0 : -1;
    this.tree.replaceChildren(...rows.map((r) => r.el));
    this.hists.clear();
    this.histKey = '';
    if (this.perThread) this.update(this.selection, this.range, this.perThread);
  }

  private newRow(key: string, threads: number[], level: number, group: number): Row {
    const label = el('span', { class: 'track-label' });
    // Without times there is no activity to draw: the track only selects.
    const canvas = el('canvas', { class: 'track-canvas', 'aria-hidden': 'true', hidden: !this.axis });
    const open = group >= 0 ? this.expanded.has(group) : null;
    const twisty = el('span', { class: 'track-twisty', 'aria-hidden': 'true', text: open === null ? '' : open ? '▾' : '▸' });
    const row = el(
      'div',
      { class: `track track-l${level}`, role: 'treeitem', 'aria-level': level, 'aria-expanded': open === null ? undefined : String(open), 'data-track': key },
      canvas,
      el('span', { class: 'track-head' }, twisty, label),
    );
    return { key, threads, level, group, el: row, canvas, label };
  }

  private labelOf(r: Row): string {
    const per = this.perThread;
    const count = (ts: number[]): number => (per ? ts.reduce((s, t) => s + per[t], 0) : 0);
    const inWindow = this.range ? ' in the window' : '';
    if (r.key === 'all') {
      const n = per ? per.reduce((s, x) => s + x, 0) : 0;
      return `All threads — ${thousands(n)} samples${inWindow}`;
    }
    return `${this.nameOf(r)} — ${thousands(count(r.threads))} samples${inWindow}`;
  }

  /** A row's name: "All threads", "scheduler (3 threads)", "logger [40]". */
  private nameOf(r: Row): string {
    if (r.key === 'all') return 'All threads';
    const g = r.group >= 0 ? this.src.groups[r.group] : null;
    return g ? `${g.name} (${g.threads.length} threads)` : this.src.label(r.threads[0]);
  }

  private rowOfEvent(e: Event): Row | null {
    const t = (e.target as HTMLElement).closest<HTMLElement>('[data-track]');
    return t ? this.rows.find((r) => r.el === t) ?? null : null;
  }

  private onClick(e: MouseEvent): void {
    const r = this.rowOfEvent(e);
    // A press that dragged chose a window, not a track.
    if (!r || this.axis?.dragged()) return;
    this.focusRow(r);
    if ((e.target as HTMLElement).classList.contains('track-twisty') && r.group >= 0) return this.setOpen(r, !this.expanded.has(r.group));
    this.choose(r, e.ctrlKey || e.metaKey);
  }

  /** Selects row r alone, or adds it (`add`). */
  private choose(r: Row, add: boolean): void {
    if (r.key === 'all') return this.src.select([]);
    const next = selectTracks(this.selection, r.threads, add);
    // Every thread selected is the same as none named.
    this.src.select(next.length === this.src.nThreads ? [] : next);
  }

  private setOpen(r: Row, open: boolean): void {
    if (r.group < 0 || this.expanded.has(r.group) === open) return;
    if (open) this.expanded.add(r.group);
    else this.expanded.delete(r.group);
    this.focusKey = r.key;
    this.build();
    this.rows.find((x) => x.key === r.key)?.el.focus();
  }

  private focusRow(r: Row): void {
    this.focusKey = r.key;
    for (const x of this.rows) x.el.tabIndex = x === r ? 0 : -1;
    r.el.focus();
  }

  private onKey(e: KeyboardEvent): void {
    const r = this.rowOfEvent(e);
    if (!r) return;
    const i = this.rows.indexOf(r);
    const go = (j: number): void => this.focusRow(this.rows[Math.max(0, Math.min(this.rows.length - 1, j))]);
    switch (e.key) {
      case 'ArrowDown':
        go(i + 1);
        break;
      case 'ArrowUp':
        go(i - 1);
        break;
      case 'Home':
        go(0);
        break;
      case 'End':
        go(this.rows.length - 1);
        break;
      case 'ArrowRight':
        if (r.group >= 0 && !this.expanded.has(r.group)) this.setOpen(r, true);
        else if (r.group >= 0) go(i + 1);
        break;
      case 'ArrowLeft': {
        if (r.group >= 0 && this.expanded.has(r.group)) this.setOpen(r, false);
        else if (r.level === 2) {
          // To the thread's group.
          let j = i - 1;
          while (j > 0 && this.rows[j].level !== 1) j--;
          go(j);
        }
        break;
      }
      case 'Enter':
      case ' ':
        this.choose(r, e.ctrlKey || e.metaKey);
        break;
      default:
        return;
    }
    e.preventDefault();
    e.stopPropagation();
  }

  /** Focuses the focused track (the `h` key). */
  focus(): void {
    (this.rows.find((r) => r.key === this.focusKey) ?? this.rows[0])?.el.focus();
  }

  requestDraw(): void {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = 0;
      this.draw();
    });
  }

  /**
   * Draws another profile's off-CPU time stacked over this one's CPU time (when this
   * profile's weights are CPU time; otherwise nothing is).
   */
  setOffCpu(off: OffCpuSource | null): void {
    this.off = this.src.kind === 'cpu' && this.src.nsPerWeight > 0 ? off : null;
    this.histKey = '';
    setText(this.title, this.off ? `${TITLE}; CPUs used from the bottom, time blocked (lighter, a share of the threads' time) from the top` : TITLE);
    this.requestDraw();
  }

  /** The off-CPU histogram of each row (empty without an off-CPU profile). */
  private offRows(n: number, span: [number, number], open: number[]): Map<string, Histogram> {
    const out = new Map<string, Histogram>();
    const off = this.off;
    if (!off) return out;
    const { groups } = this.src;
    const index = new Map(groups.map((g, i) => [g.name, i]));
    const rowOf = Int32Array.from(off.groups, (g) => index.get(g) ?? -1);
    const gh = off.histograms(n, span, rowOf, groups.length);
    groups.forEach((g, i) => out.set(g.threads.length === 1 ? `t${g.threads[0]}` : `g${i}`, gh[i]));
    const all = new Float64Array(n);
    for (const h of gh) for (let k = 0; k < n; k++) all[k] += h.buckets[k];
    out.set('all', { buckets: all, from: span[0], to: span[1], max: all.reduce((m, x) => Math.max(m, x), 0) });
    if (open.length) {
      const byLabel = new Map(open.map((t, i) => [this.src.label(t), i]));
      const th = Int32Array.from(off.labels, (l) => byLabel.get(l) ?? -1);
      off.histograms(n, span, th, open.length).forEach((h, i) => out.set(`t${open[i]}`, h));
    }
    return out;
  }

  /** A row's histograms (tests): its own weight and, with an off-CPU profile, the time blocked. */
  series(key: string): { own: Histogram | null; off: Histogram | null } {
    return { own: this.hists.get(key) ?? null, off: this.offHists.get(key) ?? null };
  }

  /** Histograms of every row over the strip's buckets (recomputed when the axis or the rows change). */
  private histogramsFor(n: number, span: [number, number]): Map<string, Histogram> {
    const key = `${n}|${span[0]}|${span[1]}|${this.rows.length}|${[...this.expanded].join('.')}`;
    if (key === this.histKey) return this.hists;
    const { groups, nThreads } = this.src;
    const hists = new Map<string, Histogram>();
    // One pass per level: the groups', then the open groups' threads.
    const byGroup = new Int32Array(nThreads).fill(-1);
    groups.forEach((g, i) => g.threads.forEach((t) => (byGroup[t] = i)));
    const gh = this.src.histograms(n, span, byGroup, groups.length);
    groups.forEach((g, i) => hists.set(g.threads.length === 1 ? `t${g.threads[0]}` : `g${i}`, gh[i]));
    const all = new Float64Array(n);
    for (const h of gh) for (let k = 0; k < n; k++) all[k] += h.buckets[k];
    hists.set('all', { buckets: all, from: span[0], to: span[1], max: all.reduce((m, x) => Math.max(m, x), 0) });
    const open = this.rows.filter((r) => r.level === 2).map((r) => r.threads[0]);
    if (open.length) {
      const byThread = new Int32Array(nThreads).fill(-1);
      open.forEach((t, i) => (byThread[t] = i));
      this.src.histograms(n, span, byThread, open.length).forEach((h, i) => hists.set(`t${open[i]}`, h));
    }
    this.hists = hists;
    this.offHists = this.offRows(n, span, open);
    this.histKey = key;
    return hists;
  }

  /** The x (px from a track canvas' left edge) of time t: the strip's x at the same page x. */
  xOf(t: number): number | null {
    const ax = this.axis;
    const c = this.rows[0]?.canvas;
    if (!ax || !c) return null;
    const { a, b, x0, pw } = ax.plot(ax.canvas.clientWidth || 1);
    const dx = ax.canvas.getBoundingClientRect().left - c.getBoundingClientRect().left;
    return dx + x0 + ((t - a) / Math.max(1, b - a)) * pw;
  }

  /**
   * A row's bars: its activity from the bottom, the full height standing for `a.top` (one
   * CPU unless the track used more; its threads' whole time); with another profile's time
   * blocked, that down from the top (lighter), on its own scale: the full height is every
   * thread of the track blocked all along. What the full height stands for is written at
   * the row's right.
   */
  private drawBars(ctx: CanvasRenderingContext2D, a: Activity, left: number, bw: number, w: number, h: number): void {
    const theme = currentTheme();
    const n = a.own.length;
    if (a.top <= 0) return;
    const scale = (h - 3) / a.top;
    for (let k = 0; k < n; k++) {
      // Beyond the full height (sampling jitter on a saturated thread): clipped.
      const c = Math.min(a.own[k], a.top);
      const o = a.off ? Math.min(a.off[k], 1) : 0;
      const ch = c > 0 ? Math.max(1, c * scale) : 0;
      if (o > 0) {
        const oh = Math.max(1, o * (h - 3));
        ctx.fillStyle = theme.dark ? 'rgba(160,160,175,0.45)' : 'rgba(120,120,135,0.35)';
        ctx.fillRect(left + k * bw, 1, Math.max(1, bw - 0.5), oh);
      }
      if (ch > 0) {
        ctx.fillStyle = theme.bar;
        ctx.fillRect(left + k * bw, h - ch, Math.max(1, bw - 0.5), ch);
      }
    }
    const top = fullHeight(a);
    if (top && h >= 14) {
      ctx.font = '9px system-ui, sans-serif';
      ctx.textAlign = 'right';
      ctx.textBaseline = 'top';
      const tw = ctx.measureText(top).width;
      // On a plate, as the track's name is: readable over the bars.
      ctx.globalAlpha = 0.8;
      ctx.fillStyle = theme.background;
      ctx.fillRect(w - tw - 7, 1, tw + 7, 11);
      ctx.globalAlpha = 1;
      ctx.fillStyle = theme.muted;
      ctx.fillText(top, w - 3, 2);
    }
  }

  /** The tooltip of the bucket under the pointer: the track, its share and time there. */
  private onHover(e: MouseEvent): void {
    const r = this.rowOfEvent(e);
    const g = this.geom;
    const a = r ? this.drawn.get(r.key) : undefined;
    // Nothing while a window is dragged.
    if (!r || !g || !a || !this.axis || e.buttons & 1) return this.src.hover(null, null);
    const x = e.clientX - this.axis.canvas.getBoundingClientRect().left - g.x0;
    const k = Math.floor((x / g.pw) * g.n);
    if (x < 0 || k < 0 || k >= a.own.length) return this.src.hover(null, null);
    const lines = [describeBucket(a, k, this.src.shift, this.src.format)];
    const top = fullHeight(a);
    if (top) lines.push(`Full height: ${top}`);
    this.src.hover({ name: this.nameOf(r), lines }, e);
  }

  draw(): void {
    const ax = this.axis;
    if (!ax || !this.rows.length) return;
    const sw = Math.floor(ax.canvas.clientWidth);
    if (sw <= 0) return;
    const { a, b, x0, pw } = ax.plot(sw);
    const n = ax.buckets(pw);
    const hists = this.histogramsFor(n, [a, b]);
    const theme = currentTheme();
    const dpr = window.devicePixelRatio || 1;
    const stripLeft = ax.canvas.getBoundingClientRect().left;
    const sel = ax.selection();
    this.geom = { x0, pw, n };
    this.drawn.clear();
    for (const r of this.rows) {
      const c = r.canvas;
      const w = Math.floor(c.clientWidth);
      const h = Math.floor(c.clientHeight);
      if (w <= 0 || h <= 0) continue;
      if (c.width !== w * dpr || c.height !== h * dpr) {
        c.width = w * dpr;
        c.height = h * dpr;
      }
      const ctx = c.getContext('2d');
      if (!ctx) continue;
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, w, h);
      // The strip's x0 at the same page x: the track's canvas may start elsewhere.
      const left = stripLeft - c.getBoundingClientRect().left + x0;
      const own = hists.get(r.key);
      if (own) {
        const threads = r.key === 'all' ? this.src.nThreads : r.threads.length;
        const act = activity(this.src.kind, own, this.offHists.get(r.key) ?? null, this.src.nsPerWeight, threads, this.src.cpus);
        this.drawn.set(r.key, act);
        this.drawBars(ctx, act, left, pw / n, w, h);
      }
      if (sel) {
        const x = (t: number): number => Math.min(w, Math.max(0, left + ((t - a) / Math.max(1, b - a)) * pw));
        ctx.fillStyle = theme.selection;
        ctx.fillRect(x(sel[0]), 0, Math.max(1, x(sel[1]) - x(sel[0])), h);
      }
    }
  }
}

/** What a track list of a profile's threads needs from its page. */
export interface TrackHooks {
  /** Receives the threads the selection leaves out (none: every thread selected). */
  hidden(h: number[]): void;
  /** Shows a tooltip at the pointer, or hides it (null). */
  hover: TrackSource['hover'];
  /** Added to a time (ns since the profile's origin) to read it on the page's clock. */
  shift: number;
}

/**
 * The track list of a model's profile, drawn on a time strip's axis (none without one:
 * the tracks then only select), or null when its samples name no thread or it is a diff.
 */
export function tracksFor(model: Model, strip: TrackAxis | null, titleId: string, hooks: TrackHooks): TrackList | null {
  const raw = model.raw;
  if (!raw.sampleThread || model.isDiff) return null;
  const nThreads = raw.threadName.length;
  const whole = threadSamples(raw);
  const unit = model.unit;
  const source: TrackSource = {
    groups: trackGroups(raw, whole),
    whole,
    nThreads,
    label: (t) => {
      const name = raw.strings[raw.threadName[t]] ?? '';
      return raw.threadTid[t] >= 0 ? `${name} [${raw.threadTid[t]}]` : name;
    },
    histograms: (n, span, rowOf, rows) => histograms(raw, n, span, model.nsPerWeight, rowOf, rows),
    select: (sel) => {
      const keep = new Set(sel);
      const out: number[] = [];
      if (sel.length) for (let t = 0; t < nThreads; t++) if (!keep.has(t)) out.push(t);
      hooks.hidden(out);
    },
    kind: activityKind(unit),
    nsPerWeight: unit.isTime ? unit.ns(1) : 0,
    cpus: model.meta.cpus ?? 0,
    shift: hooks.shift,
    format: (w) => unit.format(w),
    hover: hooks.hover,
  };
  return new TrackList(source, strip, titleId);
}

/** A profile's threads as an off-CPU source for another profile's tracks (`shift`: its clock minus theirs, ns). */
export function offCpuSource(model: Model, shift: number): OffCpuSource {
  const raw = model.raw;
  const names = Array.from(raw.threadName, (s) => raw.strings[s] ?? '');
  const ns = model.unit.ns(1);
  return {
    labels: names.map((name, t) => (raw.threadTid[t] >= 0 ? `${name} [${raw.threadTid[t]}]` : name)),
    groups: names.map(threadGroupName),
    histograms: (n, span, rowOf, rows) =>
      histograms(raw, n, [span[0] - shift, span[1] - shift], model.nsPerWeight, rowOf, rows).map((h) => {
        const b = h.buckets.map((x) => x * ns);
        return { buckets: b, from: span[0], to: span[1], max: h.max * ns };
      }),
  };
}
