// The flame chart's pane: the chart of the state without the hidden threads' lanes, what
// it draws (the window, or the chart's own zoom and pan), the notice about samples it
// cannot place, and what a box is.
import { Model } from '../app-state/model.js';
import { ViewState } from '../app-state/state.js';
import { FlameChart } from '../lib/flamechart.js';
import { thousands } from '../lib/units.js';
import { ChartBox } from '../render/chart-renderer.js';
import { ChartView } from './chart-view.js';
import { describeBox } from './describe.js';
import { setText } from './dom.js';

export interface ChartSource {
  model: Model;
  /** Added to a time (ns since the profile's origin) to write it on the page's clock. */
  shift: number;
  state(): ViewState;
  ctrl: Record<string, HTMLElement>;
  /** The note over the views (samples without timestamps, dropped samples). */
  notice: HTMLElement;
  /** The chart's own zoom and pan (ns since the profile's origin), or null: the window. */
  span(): [number, number] | null;
}

export class ChartPane {
  private lanesFor: { chart: FlameChart; hidden: string; lanes: FlameChart } | null = null;

  /** `view`: null for a profile without timestamps (no chart). */
  constructor(
    readonly view: ChartView | null,
    private readonly src: ChartSource,
  ) {}

  /** The flame chart of the state without the hidden threads' lanes (the same object while they stay). */
  chart(): FlameChart {
    const s = this.src.state();
    const chart = this.src.model.chart(s);
    const key = s.hidden.join('.');
    if (!key) return chart;
    if (this.lanesFor?.chart === chart && this.lanesFor.hidden === key) return this.lanesFor.lanes;
    const hidden = new Set(s.hidden);
    const lanes = { ...chart, lanes: chart.lanes.filter((l) => l.thread < 0 || !hidden.has(l.thread)) };
    this.lanesFor = { chart, hidden: key, lanes };
    return lanes;
  }

  /** The state the chart's frames and search are of: its frames are the merged thread mode's. */
  merged(): ViewState {
    return { ...this.src.state(), threadMode: 'merged' };
  }

  /** A box's name, description and frame, or null. */
  boxInfo(b: ChartBox): { name: string; lines: string[]; frame: number } | null {
    return describeBox(this.chart(), this.src.model.frames(this.merged()).names, b, this.src.shift);
  }

  render(): void {
    const s = this.src.state();
    const view = this.view;
    if (!view) return;
    const m = this.src.model;
    const ctrl = this.src.ctrl;
    const chart = this.chart();
    const frames = m.frames({ ...s, threadMode: 'merged' });
    const { match, error } = m.search({ ...s, threadMode: 'merged' }, frames);
    const colors = m.chartNodeColors(s, chart);
    const fr = chart.frame;
    setText(ctrl.matched, error ? 'Invalid regex' : '');
    setText(ctrl['match-count'], match ? 'Enter: next match' : '');
    // The chart opens on the window; zoom and pan move only the chart's own view.
    const [a, b] = this.src.span() ?? s.range ?? chart.span;
    const counts = s.range ? m.samplesIn(s.range) : null;
    const laneLabel = (li: number): string => {
      const lane = chart.lanes[li];
      if (!counts || lane.thread < 0) return `${lane.name} — ${thousands(lane.samples)} samples`;
      return `${lane.name} — ${thousands(counts.perThread[lane.thread])} of ${thousands(lane.samples)} samples in the window`;
    };
    view.show(chart, colors, match ? (n) => !match[fr[n]] : null, (n) => frames.names[fr[n]] ?? '', a, b, { shift: this.src.shift, window: s.range, laneLabel });
    const notice = this.src.notice;
    if (chart.untimed || chart.dropped) {
      notice.hidden = false;
      setText(
        notice,
        [chart.untimed ? `${thousands(chart.untimed)} samples have no timestamp and are not in the chart` : '', chart.dropped ? `${thousands(chart.dropped)} samples dropped by the transforms` : '']
          .filter(Boolean)
          .join('; '),
      );
    } else if (m.meta.view !== 'chart' || m.hasChart) notice.hidden = true;
  }
}
