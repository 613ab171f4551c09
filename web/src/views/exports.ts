// The export menu and what it saves: the flame graph as it stands as SVG, folded stacks,
// speedscope or Firefox Profiler JSON, and the view on screen as PNG, named after the view.
import { Derived, Model } from '../app-state/model.js';
import { ViewState } from '../app-state/state.js';
import { firefoxOf, foldedOf, speedscopeOf, svgOf } from '../lib/export.js';
import { Layout } from '../lib/layout.js';
import { canvasPng, download, fileStem } from './download.js';
import { Menu, MenuItem } from './menu.js';

export interface ExportSource {
  model: Model;
  /** Added to a window (ns since the profile's origin) to write it on the page's clock. */
  shift: number;
  menu: Menu;
  state(): ViewState;
  derived(): Derived;
  /** A node's label in a layout (the root's is the profile's). */
  labelOf(l: Layout, v: number): string;
  /** The canvas of the view on screen (what a PNG shows). */
  canvas(): HTMLCanvasElement;
  /** Announces why a save failed. */
  fail(message: string): void;
}

export class Exports {
  constructor(private readonly src: ExportSource) {}

  openMenu(anchor: HTMLElement): void {
    const r = anchor.getBoundingClientRect();
    const view = this.src.state().view;
    const graph = view !== 'table';
    const items: MenuItem[] = [
      ...(graph && view !== 'chart' ? [{ key: 'svg', label: 'SVG of this flame graph', run: () => this.saveSvg() }] : []),
      ...(graph ? [{ key: 'png', label: 'PNG of what is on screen', run: () => void this.savePng() }] : []),
      { key: 'folded', label: 'Folded stacks (transforms and time window applied)', run: () => this.saveFolded() },
      ...(this.src.derived().diff
        ? []
        : [
            { key: 'speedscope', label: 'speedscope JSON of this flame graph (transforms and time window applied)', run: () => this.saveSpeedscope() },
            { key: 'firefox', label: 'Firefox Profiler JSON of this flame graph (transforms and time window applied)', run: () => this.saveFirefox() },
          ]),
    ];
    this.src.menu.open('Export', items, r.left, r.bottom + 2, anchor);
  }

  /** SVG of the flame graph as it stands (transforms, window, zoom), in kiln flamegraph's layout. */
  svg(): string {
    const d = this.src.derived();
    const m = this.src.model.meta;
    return svgOf(d.layout, {
      title: m.title,
      subtitle: m.subtitle,
      color: d.color,
      label: (v) => this.src.labelOf(d.layout, v),
      unit: this.src.model.unit,
      zoom: d.zoomNode,
      icicle: this.src.state().icicle,
    });
  }

  /** Folded stacks of the tree as it stands (two counts per line for a diff). */
  folded(): string {
    const d = this.src.derived();
    return foldedOf(d.layout, d.frames, d.diff ? { self: d.diff.selfBefore, after: d.diff.selfAfter } : undefined);
  }

  /** The flame graph as it stands as a speedscope file (not for a diff). */
  speedscope(): string {
    const d = this.src.derived();
    return speedscopeOf(d.layout, d.frames, this.src.model.unit, this.viewName());
  }

  /** The flame graph as it stands as a Firefox Profiler file (not for a diff). */
  firefox(): string {
    const d = this.src.derived();
    return firefoxOf(d.layout, d.frames, this.src.model.unit, this.viewName());
  }

  /** The canvas of the current view as PNG. */
  png(): Promise<Blob> {
    return canvasPng(this.src.canvas());
  }

  /**
   * What the view shows, for an export's name: the page's title, the event, the time
   * window (s on the page's clock) and whether transforms apply.
   */
  private viewName(): string {
    const title = this.src.model.meta.title;
    const parts = [title];
    const ev = this.src.model.unit.event;
    if (ev && !title.includes(ev)) parts.push(ev);
    const state = this.src.state();
    const r = state.range;
    const s = (x: number): string => `${Number(((x + this.src.shift) / 1e9).toFixed(3))}`;
    if (r) parts.push(`${s(r[0])}-${s(r[1])} s`);
    if (state.transforms.length) parts.push('transformed');
    return parts.join(' ');
  }

  /** A file name (without its extension) for what the view shows. */
  private stem(): string {
    return fileStem(this.viewName());
  }

  private saveSvg(): void {
    download(`${this.stem()}.svg`, new Blob([this.svg()], { type: 'image/svg+xml' }));
  }

  private saveSpeedscope(): void {
    download(`${this.stem()}.speedscope.json`, new Blob([this.speedscope()], { type: 'application/json' }));
  }

  private saveFirefox(): void {
    download(`${this.stem()}.firefox.json`, new Blob([this.firefox()], { type: 'application/json' }));
  }

  private saveFolded(): void {
    download(`${this.stem()}.folded`, new Blob([this.folded()], { type: 'text/plain' }));
  }

  private async savePng(): Promise<void> {
    try {
      download(`${this.stem()}.png`, await this.png());
    } catch (e) {
      this.src.fail(String(e instanceof Error ? e.message : e));
    }
  }
}
