// The viewer's panes, one tab panel per view, and the sandwich's pair of flame graphs
// under their labels.
import { ViewName } from '../app-state/state.js';
import { el } from './dom.js';

/** What the panes hold: each view's element (the flame chart's when the profile has one). */
export interface PaneParts {
  flame: HTMLElement;
  chart: HTMLElement | null;
  tree: HTMLElement;
  table: HTMLElement;
  sandwichTitle: HTMLElement;
  callers: HTMLElement;
  callees: HTMLElement;
}

/** A tab panel per view, labelled by its tab (ids under the app's prefix). */
export function buildPanes(ids: string, p: PaneParts): Record<ViewName, HTMLElement> {
  const pane = (v: ViewName, cls: string, ...children: (Node | null)[]): HTMLElement =>
    el('section', { class: `pane ${cls}`, role: 'tabpanel', id: `${ids}-pane-${v}`, 'aria-labelledby': `${ids}-tab-${v}` }, ...children);
  return {
    flame: pane('flame', 'flame-pane', p.flame),
    chart: pane('chart', 'chart-pane', p.chart),
    tree: pane('tree', 'tree-pane', p.tree),
    table: pane('table', 'table-pane', p.table),
    sandwich: pane(
      'sandwich',
      'sandwich-pane',
      p.sandwichTitle,
      el('div', { class: 'sandwich-label', text: 'Callers: the function at the bottom, each row up one caller further out' }),
      p.callers,
      el('div', { class: 'sandwich-label', text: 'Callees: the function at the top, what it calls below' }),
      p.callees,
    ),
  };
}
