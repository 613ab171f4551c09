// The bars over the panes that say how the graph got where it is: the zoom path and the
// transforms, each part a button back to before it.
import { Derived } from '../app-state/model.js';
import { Layout, pathOf } from '../lib/layout.js';
import { Transform, describe } from '../lib/transforms.js';
import { el } from './dom.js';

/** The zoom path from the root to the zoomed node; `go` zooms to a node's path. */
export function renderCrumbs(nav: HTMLElement, d: Derived, labelOf: (l: Layout, v: number) => string, go: (path: number[]) => void): void {
  const chain: number[] = [];
  for (let v = d.zoomNode; v >= 0; v = d.layout.parent[v]) chain.push(v);
  chain.reverse();
  // Deep stacks: the root, an ellipsis for the middle, and the last frames, so the
  // current frame is always in view.
  const keep = 6;
  const shown = chain.length > keep + 1 ? [chain[0], -1, ...chain.slice(chain.length - keep)] : chain;
  const hiddenNames = chain.slice(1, chain.length - keep).map((v) => labelOf(d.layout, v));
  nav.replaceChildren(
    ...shown.map((v, i) => {
      if (v < 0) return el('span', { class: 'crumb-gap', title: hiddenNames.join(' › '), text: ` › … ${hiddenNames.length} more` });
      const last = i === shown.length - 1;
      const b = el('button', { type: 'button', class: `crumb${last ? ' current' : ''}`, text: labelOf(d.layout, v), title: labelOf(d.layout, v), 'aria-current': last ? 'location' : undefined });
      b.addEventListener('click', () => go(pathOf(d.layout, v)));
      return i === 0 ? b : el('span', { class: `crumb-item${last ? ' current' : ''}` }, ' › ', b);
    }),
  );
}

/** The transforms applied, in order; `keep(i)` removes the i-th and those after it. */
export function renderTransforms(bar: HTMLElement, transforms: Transform[], names: string[], keep: (i: number) => void): void {
  const name = (f: number): string => names[f] ?? `#${f}`;
  const items = transforms.map((t, i) => {
    const b = el('button', { type: 'button', class: 'transform', title: 'Remove this and later transforms', text: `${describe(t, name)} ✕` });
    b.addEventListener('click', () => keep(i));
    return b;
  });
  bar.hidden = items.length === 0;
  bar.replaceChildren(...(items.length ? [el('span', { text: 'Transforms: ' }), ...items] : []));
}
