// The keyboard help: a dialog (role, name, focus on its Close button, Escape closes and
// returns focus where it was), with key labels that never wrap.
import { el } from './dom.js';

export const SHORTCUTS: [string, string][] = [
  ['Tab', 'move between controls, the views and the canvas'],
  ['← → ↑ ↓', 'on the canvas: move between frames; Enter zooms to the selected frame'],
  ['Shift+F10', 'actions of the selected frame (also the context-menu key, or right-click)'],
  ['/', 'search; Enter / Shift+Enter: next / previous match'],
  ['c', 'case always matters (else only when the pattern has a capital letter)'],
  ['t', 'the search also matches process and thread names (else functions only)'],
  ['Esc', 'close / clear search / reset zoom; flame chart: its zoom, then the time window'],
  ['1 2 3 4 5', 'flame graph / functions / sandwich / flame chart / call tree'],
  ['→ ← * Enter', 'call tree: open, close (or go to the parent), open every row below, toggle'],
  ['b', 'call tree inverted (bottom-up) ↔ top-down'],
  ['h', 'to the tracks (one per thread group, → opens one per thread): Enter selects, Ctrl+Enter adds'],
  ['i', 'flame ↔ icicle'],
  ['l', 'alphabetical ↔ left-heavy'],
  ['z', 'zoom out one level'],
  ['0', 'reset zoom'],
  ['u', 'undo last transform'],
  ['m M F x d r R C s', 'on the selected or hovered frame: merge function, merge node only, focus function, focus subtree, drop, collapse recursion, collapse direct recursion only, collapse library, sandwich'],
  ['y Y', 'copy the selected or hovered frame\'s name; its stack (root first, one frame a line)'],
  ['e', 'export: SVG, PNG, folded stacks'],
  ['+ −', 'flame chart: zoom time (the selected window stays); Shift+← →: pan'],
  ['n', 'normalise (diff)'],
  ['?', 'this help'],
];

export class HelpDialog {
  readonly el: HTMLDivElement;
  private returnTo: HTMLElement | null = null;

  constructor(titleId: string) {
    this.el = el('div', { class: 'help', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': titleId, hidden: true });
    const close = el('button', { type: 'button', class: 'help-close', text: 'Close', 'aria-label': 'Close the help' });
    close.addEventListener('click', () => this.close());
    this.el.replaceChildren(
      el('h2', { id: titleId, text: 'Keyboard shortcuts' }),
      el('table', {}, el('tbody', {}, ...SHORTCUTS.map(([k, t]) => el('tr', {}, el('th', { scope: 'row' }, el('kbd', { text: k })), el('td', { text: t }))))),
      el('p', { text: 'Mouse: click a frame to zoom, drag to pan, Ctrl+wheel to zoom, wheel to scroll (the graph, then the page), right-click for actions; drag on the time strip to select a window; drag the bar under an embedded viewer to resize it, Full screen to fill the window (Esc goes back). The URL keeps the view: copy it to share.' }),
      close,
    );
    this.el.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        this.close();
      }
    });
  }

  get isOpen(): boolean {
    return !this.el.hidden;
  }

  toggle(): void {
    if (this.isOpen) this.close();
    else this.open();
  }

  open(): void {
    this.returnTo = document.activeElement as HTMLElement | null;
    this.el.hidden = false;
    (this.el.querySelector('.help-close') as HTMLElement).focus();
  }

  close(): void {
    if (!this.isOpen) return;
    this.el.hidden = true;
    this.returnTo?.focus();
  }
}
