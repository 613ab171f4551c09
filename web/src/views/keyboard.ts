// What a key typed on the viewer does: the tables' keys (keys.ts) change the state or act on
// the frame the keyboard or the pointer is on; the others (search, export, help, the tracks,
// Escape) need the app's parts.
import { Model } from '../app-state/model.js';
import { ViewState } from '../app-state/state.js';
import { FrameTarget } from './actions.js';
import { ChartPane } from './chart-pane.js';
import { Which } from './describe.js';
import { FlameView } from './flame-view.js';
import { HelpDialog } from './help.js';
import { FRAME_KEYS, STATE_KEYS } from './keys.js';
import { Menu } from './menu.js';
import { TrackList } from './tracks.js';
import { TreeView } from './tree-view.js';

export interface KeySource {
  model: Model;
  menu: Menu;
  help: HelpDialog;
  ctrl: Record<string, HTMLElement>;
  flames: readonly (readonly [Which, FlameView])[];
  chartPane: ChartPane;
  tree: TreeView;
  tracks: TrackList | null;
  state(): ViewState;
  setState(patch: Partial<ViewState>): void;
  /** Undoes the flame chart's own zoom and pan; false when it has none. */
  unzoomChart(): boolean;
  /** The frame the pointer is on, if any. */
  hovered(): FrameTarget | null;
  stepMatch(dir: 1 | -1): void;
  toggleTracks(): void;
  openExportMenu(anchor: HTMLElement): void;
  /** A frame key on a frame. */
  act(key: string, target: FrameTarget): void;
}

export function onKey(k: KeySource, e: KeyboardEvent): void {
  if (e.defaultPrevented) return;
  const t = e.target as HTMLElement;
  const typing = t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLTextAreaElement;
  if (e.key === 'F3') {
    e.preventDefault();
    return k.stepMatch(e.shiftKey ? -1 : 1);
  }
  if (e.key === 'Escape') return onEscape(k, t, typing);
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  const patch = STATE_KEYS.get(e.key);
  if (patch) return k.setState(patch(k.state()));
  if (FRAME_KEYS.has(e.key)) {
    const target = keyTarget(k);
    if (target) k.act(e.key, target);
    return;
  }
  switch (e.key) {
    case '/':
      e.preventDefault();
      (k.ctrl.search as HTMLInputElement).focus();
      return;
    case '4':
      if (k.chartPane.view) k.setState({ view: 'chart' });
      return;
    case 'h':
      // To the tracks (shown first when hidden).
      if (k.tracks?.el.hidden) k.toggleTracks();
      e.preventDefault();
      return k.tracks?.focus();
    case 'n':
      if (k.model.isDiff) k.setState({ normalise: !k.state().normalise });
      return;
    case 'e':
      return k.openExportMenu(k.ctrl.export);
    case '?':
      return k.help.toggle();
  }
}

/** Escape closes what is open, leaves a field or full screen, then undoes the search, the chart's zoom, the window or the zoom. */
function onEscape(k: KeySource, t: HTMLElement, typing: boolean): void {
  if (k.menu.isOpen) return k.menu.close();
  if (k.help.isOpen) return k.help.close();
  if (typing) return (t as HTMLInputElement).blur();
  const s = k.state();
  if (s.full) k.setState({ full: false });
  else if (s.query) k.setState({ query: '' });
  else if (s.view === 'chart') {
    // First the chart's own zoom, then the window.
    if (!k.unzoomChart()) k.setState({ range: null });
  } else k.setState({ zoom: [] });
}

/** The frame a key acts on: the keyboard's selection on a focused canvas, else the hovered one. */
function keyTarget(k: KeySource): FrameTarget | null {
  const a = document.activeElement;
  if (a === k.tree.grid && k.tree.activeRow) return { row: k.tree.activeRow };
  for (const [which, view] of k.flames) {
    if (a === view.canvas && view.selected > 0) return { which, v: view.selected };
  }
  const chart = k.chartPane.view;
  if (chart && a === chart.canvas && chart.selected) return { box: chart.selected };
  return k.hovered();
}
