// What the page says about the frame under the pointer (the tooltip and the details line)
// or under the keyboard's selection (the details line, announced), and which frame the
// pointer is on, for the frame keys.
import { Derived, Model, Sandwich } from '../app-state/model.js';
import { ViewState } from '../app-state/state.js';
import { Layout } from '../lib/layout.js';
import { ChartBox } from '../render/chart-renderer.js';
import type { FrameTarget } from './actions.js';
import { Which, describeFrame } from './describe.js';
import { el, setText } from './dom.js';

export interface HoverSource {
  model: Model;
  state(): ViewState;
  derived(): Derived;
  layoutOf(which: Which): Layout;
  /** The sandwich drawn, if any. */
  sandwich(): Sandwich | null;
  labelOf(l: Layout, v: number): string;
  boxInfo(b: ChartBox): { name: string; lines: string[]; frame: number } | null;
  /** The details line under the panes. */
  details: HTMLElement;
  /** Shows a text on the details line and announces it. */
  announce(text: string): void;
}

export class Hover {
  readonly tooltip: HTMLDivElement = el('div', { class: 'tooltip', role: 'tooltip', hidden: true });
  private node: { which: Which; v: number } | null = null;
  private box: ChartBox | null = null;

  constructor(private readonly src: HoverSource) {}

  /** The frame the pointer is on: the box on the flame chart, else a flame graph's node. */
  target(): FrameTarget | null {
    if (this.src.state().view === 'chart' && this.box) return { box: this.box };
    return this.node;
  }

  /** Lines describing node v of a view (tooltip, details, announcements). */
  private describeNode(which: Which, v: number): { name: string; lines: string[] } {
    const l = this.src.layoutOf(which);
    const m = this.src.model;
    return {
      name: this.src.labelOf(l, v),
      lines: describeFrame({ which, layout: l, derived: this.src.derived(), sandwich: this.src.sandwich(), unit: m.unit, labels: m.meta.labels, isDiff: m.isDiff }, v),
    };
  }

  show(name: string, lines: string[], ev: MouseEvent): void {
    const tip = this.tooltip;
    tip.replaceChildren(el('div', { class: 'tt-name', text: name }), ...lines.map((t) => el('div', { text: t })));
    tip.hidden = false;
    const x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    const y = ev.clientY + 18 + tip.offsetHeight > window.innerHeight ? ev.clientY - tip.offsetHeight - 8 : ev.clientY + 18;
    tip.style.left = `${Math.max(0, x)}px`;
    tip.style.top = `${Math.max(0, y)}px`;
    setText(this.src.details, `${name} — ${lines.join('; ')}`);
  }

  hide(): void {
    this.tooltip.hidden = true;
  }

  /** The pointer moved onto node v of a flame graph (-1 or no event: off it). */
  onNode(which: Which, v: number, ev: MouseEvent | null): void {
    if (v < 0 || !ev) {
      this.node = null;
      this.hide();
      return;
    }
    this.node = { which, v };
    const { name, lines } = this.describeNode(which, v);
    this.show(name, lines, ev);
  }

  /** The keyboard's selection moved to node v of a flame graph. */
  selectNode(which: Which, v: number): void {
    if (v < 0) return;
    const { name, lines } = this.describeNode(which, v);
    this.src.announce(`${name} — ${lines.join('; ')}`);
  }

  /** The pointer moved onto a box of the flame chart (null: off it). */
  onBox(b: ChartBox | null, ev: MouseEvent | null): void {
    this.box = b;
    const info = b && this.src.boxInfo(b);
    if (!info || !ev) return this.hide();
    this.show(info.name, info.lines, ev);
  }

  /** The keyboard's selection moved to a box of the flame chart. */
  selectBox(b: ChartBox | null): void {
    const info = b && this.src.boxInfo(b);
    if (!info) return;
    this.src.announce(`${info.name} — ${info.lines.join('; ')}`);
  }
}
