// A frame's actions (zoom, the transforms, the sandwich, copying its name or stack), run
// from its key (keys.ts) or from the context menu of a flame graph's node, a flame chart's
// box or a call tree's row.
import { Derived, Model } from '../app-state/model.js';
import { ViewState } from '../app-state/state.js';
import { CallNode, keyFrames } from '../lib/calltree.js';
import { Layout, pathOf } from '../lib/layout.js';
import { Transform } from '../lib/transforms.js';
import { ChartBox } from '../render/chart-renderer.js';
import { ChartView } from './chart-view.js';
import { Which } from './describe.js';
import { copyText } from './download.js';
import { FlameView } from './flame-view.js';
import { frameMenuEntries, transformFor } from './keys.js';
import { Menu, MenuItem } from './menu.js';

/** The frame an action applies to: a flame graph's node, a flame chart's box or a call tree's row. */
export type FrameTarget = { which: Which; v: number } | { box: ChartBox } | { row: CallNode };

export interface ActionSource {
  model: Model;
  menu: Menu;
  state(): ViewState;
  derived(): Derived;
  setState(patch: Partial<ViewState>): void;
  layoutOf(which: Which): Layout;
  flame(which: Which): FlameView;
  chart: ChartView | null;
  boxInfo(b: ChartBox): { name: string; lines: string[]; frame: number } | null;
  /** The id of a frame's library frame, or -1. */
  libraryOf(f: number): number;
  /** The call tree's grid (where focus returns from its menu). */
  treeGrid: HTMLElement;
  /** Opens a row of the call tree. */
  openRow(n: CallNode): void;
  /** Zooms a flame graph to node v (the main one's zoom is the state's). */
  zoom(which: Which, v: number): void;
  /** Shows `details` on the details line and announces `said`. */
  say(details: string, said: string): void;
}

export class FrameActions {
  constructor(private readonly src: ActionSource) {}

  /** A frame key (FRAME_KEYS) on a frame the keyboard or the pointer is on. */
  onKey(key: string, k: FrameTarget): void {
    if ('box' in k) {
      const info = this.src.boxInfo(k.box);
      if (info) this.run(key, info.frame, null, null, null);
      return;
    }
    if ('row' in k) {
      const path = k.row.node > 0 ? pathOf(this.src.derived().layout, k.row.node) : null;
      this.run(key, k.row.frame, path, null, path ?? keyFrames(k.row.key));
      return;
    }
    const l = this.src.layoutOf(k.which);
    if (k.v > 0) this.run(key, l.frame[k.v], k.which === 'main' ? pathOf(l, k.v) : null, null, pathOf(l, k.v));
  }

  openFrameMenu(which: Which, v: number, x: number, y: number): void {
    const l = this.src.layoutOf(which);
    const f = l.frame[v];
    if (v <= 0 || f < 0) return;
    const run = (key: string): void =>
      this.run(key, f, which === 'main' ? pathOf(l, v) : null, () => this.src.zoom(which, v), pathOf(l, v));
    const names = this.src.derived().frames.names;
    this.src.menu.open(names[f] ?? '', this.items(run, f, which === 'main', true, 'Zoom to this frame (Enter)'), x, y, this.src.flame(which).canvas);
  }

  openChartMenu(b: ChartBox, x: number, y: number): void {
    const info = this.src.boxInfo(b);
    const chart = this.src.chart;
    if (!info || !chart) return;
    const run = (key: string): void => this.run(key, info.frame, null, () => chart.zoomToBox(b));
    this.src.menu.open(info.name, this.items(run, info.frame, false, false, 'Zoom to this time (Enter)'), x, y, chart.canvas);
  }

  openTreeMenu(n: CallNode, x: number, y: number): void {
    const d = this.src.derived();
    const path = n.node > 0 ? pathOf(d.layout, n.node) : null;
    const run = (key: string): void => this.run(key, n.frame, path, () => this.src.openRow(n), path ?? keyFrames(n.key));
    this.src.menu.open(d.frames.names[n.frame] ?? '', this.items(run, n.frame, path !== null, true, 'Open this row (→)'), x, y, this.src.treeGrid);
  }

  /**
   * Runs a frame action (the menu's and the keys' m M F x d r R C s y Y). `path` is the
   * node's frames from the root of the tree as it stands (null where a node has none:
   * the inverted tree, the flame chart), `stack` the frames shown from the view's root to
   * the node (what "copy stack" copies).
   */
  private run(key: string, frame: number, path: number[] | null, zoom: (() => void) | null, stack: number[] | null = path): void {
    if (frame < 0) return;
    if (key === 'zoom') return zoom?.();
    const t = transformFor(key, frame, path);
    if (t) return this.addTransform(t);
    switch (key) {
      case 'C': {
        const lib = this.src.libraryOf(frame);
        if (lib >= 0) this.addTransform({ kind: 'collapse-library', f: lib });
        return;
      }
      case 'Y':
        if (stack) this.copy(stack.map((f) => this.frameName(f)).join('\n'), `the stack of ${stack.length} frame${stack.length === 1 ? '' : 's'}`);
        return;
      case 's':
        return this.src.setState({ fn: frame, view: 'sandwich' });
      case 'y': {
        const name = this.frameName(frame);
        return this.copy(name, `the name “${name}”`);
      }
    }
  }

  /**
   * A frame's actions. `node`: the frame is a node of the tree as it stands (focus on
   * subtree, merge node only); `stack`: its stack can be copied.
   */
  private items(run: (key: string) => void, frame: number, node: boolean, stack: boolean, zoomLabel: string): MenuItem[] {
    const lib = this.src.libraryOf(frame);
    return frameMenuEntries(zoomLabel, node, stack, lib >= 0 ? this.frameName(lib) : null).map(([key, label]) => ({ key, label, run: () => run(key) }));
  }

  /** A frame's name (the flame chart's frames are the merged thread mode's). */
  private frameName(f: number): string {
    const s = this.src.state();
    return this.src.model.frames(s.view === 'chart' ? { ...s, threadMode: 'merged' } : s).names[f] ?? '';
  }

  private copy(text: string, what: string): void {
    void copyText(text).then((ok) => {
      const said = ok ? `Copied ${what}` : 'The browser refused to copy; select the text in the details line instead';
      this.src.say(ok ? said : text, said);
    });
  }

  private addTransform(t: Transform): void {
    this.src.setState({ transforms: [...this.src.state().transforms, t], zoom: [] });
  }
}
