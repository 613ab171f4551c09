// Label fitting with cached widths: measuring text is the slow part of canvas drawing, so
// each character's width is measured once and labels are truncated arithmetically.

export class TextFitter {
  private widths = new Map<number, number>();
  private readonly ellipsis = '..';
  private ellipsisWidth: number;

  constructor(private readonly ctx: CanvasRenderingContext2D, readonly font: string) {
    ctx.font = font;
    this.ellipsisWidth = this.charWidth(46) * 2;
  }

  private charWidth(code: number): number {
    let w = this.widths.get(code);
    if (w === undefined) {
      this.ctx.font = this.font;
      w = this.ctx.measureText(String.fromCharCode(code)).width;
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
