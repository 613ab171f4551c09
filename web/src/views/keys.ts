// The viewer's keyboard, as tables: the keys that only change the view's state, and the
// keys that act on a frame (the selected or hovered one). The keys that need the app itself
// (search focus, export, help, threads) are keyboard.ts's own. Beside them, what
// each frame key does and the frame menu that offers the same actions.
import { ViewState } from '../app-state/state.js';
import { Transform } from '../lib/transforms.js';

/** Keys whose whole effect is a change of state, given the state when pressed. */
export const STATE_KEYS: ReadonlyMap<string, (s: ViewState) => Partial<ViewState>> = new Map<string, (s: ViewState) => Partial<ViewState>>([
  ['c', (s) => ({ matchCase: !s.matchCase })],
  ['1', () => ({ view: 'flame' })],
  ['2', () => ({ view: 'table' })],
  ['3', () => ({ view: 'sandwich' })],
  ['5', () => ({ view: 'tree' })],
  ['b', (s) => ({ invert: !s.invert, view: 'tree' })],
  ['t', (s) => ({ searchNames: !s.searchNames })],
  ['i', (s) => ({ icicle: !s.icicle })],
  ['l', (s) => ({ order: s.order === 'alphabetical' ? 'left-heavy' : 'alphabetical' })],
  ['z', (s) => ({ zoom: s.zoom.slice(0, -1) })],
  ['0', () => ({ zoom: [] })],
  ['u', (s) => ({ transforms: s.transforms.slice(0, -1), zoom: [] })],
]);

/** Keys that act on a frame, as the frame's context menu does (actions.ts). */
export const FRAME_KEYS: ReadonlySet<string> = new Set(['m', 'M', 'F', 'x', 'd', 'r', 'R', 'C', 's', 'y', 'Y']);

/**
 * The transform a frame key adds for `frame` (`path`: its node's frames from the root,
 * null where the node has none), or null for a key that adds none (or needs the path it
 * lacks). C (collapse the frame's library) needs the library: actions.ts finds it.
 */
export function transformFor(key: string, frame: number, path: number[] | null): Transform | null {
  switch (key) {
    case 'x':
      return path ? { kind: 'focus-subtree', path } : null;
    case 'M':
      return path ? { kind: 'merge-call-node', path } : null;
    case 'R':
      return { kind: 'collapse-direct-recursion', f: frame };
    case 'F':
      return { kind: 'focus-function', f: frame };
    case 'm':
      return { kind: 'merge', f: frame };
    case 'd':
      return { kind: 'drop', f: frame };
    case 'r':
      return { kind: 'collapse-recursion', f: frame };
  }
  return null;
}

/**
 * A frame's context menu: each action's key and label, those that apply. `node`: the frame
 * is a node of the tree as it stands (focus on subtree, merge node only); `stack`: its stack
 * can be copied; `library`: the name of its library frame, or null.
 */
export function frameMenuEntries(zoomLabel: string, node: boolean, stack: boolean, library: string | null): [string, string][] {
  const items: [string, string, boolean][] = [
    ['zoom', zoomLabel, true],
    ['x', 'Focus on subtree (x)', node],
    ['F', 'Focus on function (F)', true],
    ['m', 'Merge function (m)', true],
    ['M', 'Merge node only (M)', node],
    ['d', 'Drop samples with this function (d)', true],
    ['r', 'Collapse recursion (r)', true],
    ['R', 'Collapse direct recursion only (R)', true],
    ['C', `Collapse library ${library ?? ''} (C)`, library !== null],
    ['s', 'Sandwich: callers and callees (s)', true],
    ['y', 'Copy name (y)', true],
    ['Y', 'Copy stack (Y)', stack],
  ];
  return items.filter((it) => it[2]).map(([key, label]) => [key, label]);
}
