// The call tree's pane: which rows are open (per direction, kept across windows and
// transforms; the heaviest path opens first, as the Firefox Profiler's does), its columns
// and caption, and what a row's keys and clicks do to it. The app hands it the tree of
// its state and says where a selected row's text goes.
import { Derived, Model } from '../app-state/model.js';
import { ViewState } from '../app-state/state.js';
import { CallNode, CallTree } from '../lib/calltree.js';
import { percent } from '../lib/format.js';
import { thousands } from '../lib/units.js';
import { setText } from './dom.js';
import { TreeView } from './tree-view.js';

export interface TreeSource {
  model: Model;
  state(): ViewState;
  derived(): Derived;
  callTree(): CallTree;
  /** Shows and announces a selected row's text. */
  announce(text: string): void;
}

export class TreePane {
  /** Open rows, per direction. */
  private readonly open = { top: new Set<string>(), inverted: new Set<string>() };
  /** Whether a direction's rows were opened yet (the heaviest path opens first). */
  private readonly opened = { top: false, inverted: false };
  private key: string | null = null;

  constructor(
    private readonly view: TreeView,
    private readonly src: TreeSource,
  ) {}

  private openRows(): Set<string> {
    return this.open[this.src.state().invert ? 'inverted' : 'top'];
  }

  render(): void {
    const s = this.src.state();
    const d = this.src.derived();
    const tree = this.src.callTree();
    const which = s.invert ? 'inverted' : 'top';
    const open = this.open[which];
    if (!this.opened[which] && tree.total > 0) {
      for (const k of tree.heaviestPath(s.invert ? 3 : 16, s.invert ? 0 : 0.5)) open.add(k);
      this.opened[which] = true;
    }
    const rows = tree.rows(open);
    const u = this.src.model.unit;
    const all = tree.total;
    const what = u.countsSamples ? 'samples' : u.isTime ? 'time' : u.kind === 'bytes' ? 'bytes' : u.name;
    const columns = [
      { title: `Total (${what})`, text: (n: CallNode) => u.format(n.total) },
      { title: 'Total %', text: (n: CallNode) => percent(n.total, all) },
      { title: `Self (${what})`, text: (n: CallNode) => (n.self > 0 ? u.format(n.self) : '–') },
    ];
    const match = d.match;
    const name = (n: CallNode): string => d.frames.names[n.frame] ?? '';
    this.view.show(columns, rows, open, (n) => tree.hasChildren(n), name, (n) => !!match && match[n.frame] === 1, this.key);
    setText(
      this.view.caption,
      `${s.invert ? 'Inverted: the functions that ran (their own time), each opening onto its callers' : 'Callers above their callees, heaviest first'}; ${thousands(rows.length)} rows shown.${s.query ? ' The search keeps the samples whose stack has a matching function.' : ''}`,
    );
  }

  toggle(n: CallNode, open: boolean): void {
    const set = this.openRows();
    if (open) set.add(n.key);
    else set.delete(n.key);
    this.key = n.key;
    this.render();
  }

  /** Opens every row below n (at most 5,000 rows, so a huge tree cannot freeze the page). */
  expandAll(n: CallNode): void {
    const tree = this.src.callTree();
    const set = this.openRows();
    let budget = 5000;
    const walk = (x: CallNode): void => {
      if (budget-- <= 0 || !tree.hasChildren(x)) return;
      set.add(x.key);
      for (const c of tree.children(x)) walk(c);
    };
    walk(n);
    this.key = n.key;
    this.render();
  }

  select(n: CallNode): void {
    this.key = n.key;
    const d = this.src.derived();
    const u = this.src.model.unit;
    const all = this.src.callTree().total;
    // No self weight reads '–', as in the tree's column.
    this.src.announce(`${d.frames.names[n.frame] ?? ''} — total ${u.format(n.total)} (${percent(n.total, all)}), self ${n.self > 0 ? u.format(n.self) : '–'}`);
  }
}
