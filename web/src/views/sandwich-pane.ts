// The sandwich's pane: its title, then the picked function's callers and callees as two
// flame graphs that meet at the function.
import { Derived, Model, Sandwich, diffColorOf } from '../app-state/model.js';
import { ViewState } from '../app-state/state.js';
import { DiffLayout, maxDelta } from '../lib/diff.js';
import { percent } from '../lib/format.js';
import { Layout } from '../lib/layout.js';
import { el, setText } from './dom.js';
import { FlameView, searchDimmer } from './flame-view.js';

export interface SandwichSource {
  model: Model;
  state(): ViewState;
  derived(): Derived;
}

export class SandwichPane {
  readonly title: HTMLDivElement = el('div', { class: 'sandwich-title' });
  /** The sandwich drawn (null while no function is picked). */
  data: Sandwich | null = null;

  constructor(
    readonly callers: FlameView,
    readonly callees: FlameView,
    private readonly src: SandwichSource,
  ) {}

  render(): void {
    const d = this.src.derived();
    const s = this.src.state();
    const m = this.src.model;
    const f = s.fn;
    if (f < 0 || f >= d.frames.names.length) {
      setText(this.title, 'Pick a function: a row of the Functions table (Enter), or a frame\'s actions (right-click, Shift+F10) → "Sandwich".');
      this.callers.el.hidden = this.callees.el.hidden = true;
      this.data = null;
      return;
    }
    this.callers.el.hidden = this.callees.el.hidden = false;
    const sw = (this.data = m.sandwich(s, f));
    const stats = d.stats();
    const u = m.unit;
    setText(
      this.title,
      `${d.frames.names[f]} — total ${u.format(stats.total[f])} (${percent(stats.total[f], d.layout.total[0])} of all), self ${stats.self[f] > 0 ? u.format(stats.self[f]) : '–'}`,
    );
    const colorFor = (l: Layout, diff: Sandwich['callersDiff']) => (v: number): string => {
      if (diff) return v === 0 ? 'rgb(220,220,220)' : diffColorFor(diff, v);
      return v <= 0 ? 'rgb(220,220,220)' : d.frameColor(l.frame[v]);
    };
    const label = (l: Layout) => (v: number): string => (v === 0 ? m.rootLabel() : d.frames.names[l.frame[v]] ?? '');
    const dim = (l: Layout) => searchDimmer(d.match, l);
    // Callers: the function at the bottom edge, its callers above it; callees: the
    // function at the top edge, what it calls below. The two meet at the function, and
    // no synthetic root stands between them (base 1 hides it).
    const byCategory = m.sandwichColors(s, sw);
    const grey = (f: (v: number) => string) => (v: number): string => (v <= 0 ? 'rgb(220,220,220)' : f(v));
    this.callers.show(sw.callers, byCategory ? grey(byCategory.callers) : colorFor(sw.callers, sw.callersDiff), dim(sw.callers), label(sw.callers), false, 0, 1);
    this.callees.show(sw.callees, byCategory ? grey(byCategory.callees) : colorFor(sw.callees, sw.calleesDiff), dim(sw.callees), label(sw.callees), true, 0, 1);
  }
}

const maxDeltas = new WeakMap<object, number>();

/** Diff colour of a node of a sandwich half (its largest change computed once). */
function diffColorFor(diff: DiffLayout, v: number): string {
  let md = maxDeltas.get(diff);
  if (md === undefined) maxDeltas.set(diff, (md = maxDelta(diff)));
  return diffColorOf(diff, v, md);
}
