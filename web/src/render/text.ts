// Label fitting with cached widths: measuring text is the slow part of canvas drawing, so
// each character's width is measured once and labels are truncated arithmetically.

/** Widths per font, shared by every canvas of the page (each viewer has several). */
const shared = new Map<string, { ascii: Float64Array; widths: Map<number, number> }>();

export class TextFitter {
  /** Widths of ASCII characters, measured together up front (one font change). */
  private ascii: Float64Array;
  private widths: Map<number, number>;
  private readonly ellipsis = '..';
  private ellipsisWidth: number;

  constructor(private readonly ctx: CanvasRenderingContext2D, readonly font: string) {
    let w = shared.get(font);
    if (!w) {
      ctx.font = font;
      const ascii = new Float64Array(128);
      for (let c = 32; c < 127; c++) ascii[c] = ctx.measureText(String.fromCharCode(c)).width;
      shared.set(font, (w = { ascii, widths: new Map() }));
    }
    this.ascii = w.ascii;
    this.widths = w.widths;
    this.ellipsisWidth = this.ascii[46] * 2;
  }

  private charWidth(code: number): number {
    if (code >= 32 && code < 127) return this.ascii[code];
    let w = this.widths.get(code);
    if (w === undefined) {
      // The caller set this.font: labels are measured while drawing with it.
      const font = this.ctx.font;
      this.ctx.font = this.font;
      w = this.ctx.measureText(String.fromCharCode(code)).width;
      this.ctx.font = font;
      this.widths.set(code, w);
    }
    return w;
  }

  /** The longest prefix of `s` (with '..' when cut) that fits in `max` pixels; '' if none. */
  fit(s: string, max: number): string {
    let w = 0;
    const n = s.length;
    let i = 0;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      // Control characters are shown as U+FFFD by the canvas; they never act as markup.
      w += this.charWidth(c);
      if (w > max) break;
    }
    if (i === n) return s;
    let cut = i;
    let width = w - this.charWidth(s.charCodeAt(i));
    while (cut > 0 && width + this.ellipsisWidth > max) {
      cut--;
      width -= this.charWidth(s.charCodeAt(cut));
    }
    return cut < 2 ? '' : s.slice(0, cut) + this.ellipsis;
  }
}
