// The search's matches: stepping through them (Enter, F3, the header's arrows) on the flame
// graph or the flame chart, and the count beside the search field.
import { Derived, Model } from '../app-state/model.js';
import { ViewState } from '../app-state/state.js';
import { matchingBoxes } from '../lib/flamechart.js';
import { thousands } from '../lib/units.js';
import { ChartPane } from './chart-pane.js';
import { setText } from './dom.js';
import { FlameView } from './flame-view.js';

export interface MatchSource {
  model: Model;
  state(): ViewState;
  derived(): Derived;
  setState(patch: Partial<ViewState>): void;
  main: FlameView;
  chartPane: ChartPane;
  /** Where the count goes. */
  count: HTMLElement;
}

export class Matches {
  /** The match stepped to (-1: none yet; a new search starts over). */
  index = -1;

  constructor(private readonly src: MatchSource) {}

  /** Moves to the next (1) or previous (-1) search match. */
  step(dir: 1 | -1): void {
    const s = this.src.state();
    if (!s.query) return;
    if (s.view === 'chart') return this.stepChart(dir);
    if (s.view !== 'flame') this.src.setState({ view: 'flame' });
    const list = this.src.derived().matches();
    if (!list.length) return this.renderCount();
    this.index = this.next(dir, list.length);
    this.src.main.setSelected(list[this.index], true);
    this.renderCount();
  }

  private stepChart(dir: 1 | -1): void {
    const pane = this.src.chartPane;
    const view = pane.view;
    if (!view) return;
    const chart = pane.chart();
    const merged = pane.merged();
    const { match } = this.src.model.search(merged, this.src.model.frames(merged));
    if (!match) return;
    const boxes = matchingBoxes(chart, match);
    const n = boxes.length;
    if (!n) return setText(this.src.count, 'no frames match');
    this.index = this.next(dir, n);
    view.setSelected(boxes[this.index], true);
    setText(this.src.count, `${this.index + 1} of ${thousands(n)} boxes`);
  }

  /** The match after (or before) the current one of n, the first (or last) at the start. */
  private next(dir: 1 | -1, n: number): number {
    return this.index < 0 ? (dir > 0 ? 0 : n - 1) : (this.index + dir + n) % n;
  }

  /** The count of the flame graph's matches, and which one is stepped to. */
  renderCount(): void {
    const d = this.src.derived();
    if (!d.match) {
      setText(this.src.count, '');
      return;
    }
    const n = d.matches().length;
    setText(this.src.count, n === 0 ? 'no frames match' : this.index >= 0 ? `${this.index + 1} of ${thousands(n)} frames` : `${thousands(n)} frame${n === 1 ? '' : 's'}`);
  }
}
