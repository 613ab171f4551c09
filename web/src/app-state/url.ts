// The URL hash, shared by every viewer on a page. Each viewer owns the keys under its
// prefix (`cpu.q=…`, `offcpu.v=table`; no prefix when the page holds one viewer); keys
// listed as shared (the time window `t`) are the page's own: a window selected in one
// place applies to every viewer, and to whatever else on the page reads `t`.
//
// DOM-free: the hash text goes in and out as strings.

export class HashParams {
  constructor(
    /** Prefix of this viewer's keys, '' for none. */
    readonly prefix: string,
    /** Keys shared by the page, never prefixed. */
    readonly shared: readonly string[] = ['t'],
  ) {}

  private own(key: string): string | null {
    if (this.shared.includes(key)) return key;
    if (!this.prefix) return key.includes('.') ? null : key;
    return key.startsWith(this.prefix + '.') ? key.slice(this.prefix.length + 1) : null;
  }

  /** This viewer's parameters (prefix removed) and the shared ones, from a hash. */
  read(hash: string): URLSearchParams {
    const all = new URLSearchParams(hash.replace(/^#/, ''));
    const out = new URLSearchParams();
    for (const [k, v] of all) {
      const key = this.own(k);
      if (key !== null) out.set(key, v);
    }
    return out;
  }

  /** The hash with this viewer's and the shared parameters replaced by `p`; others kept. */
  write(hash: string, p: URLSearchParams): string {
    const all = new URLSearchParams(hash.replace(/^#/, ''));
    const out = new URLSearchParams();
    for (const [k, v] of all) if (this.own(k) === null) out.append(k, v);
    for (const [k, v] of p) out.set(this.shared.includes(k) || !this.prefix ? k : `${this.prefix}.${k}`, v);
    return out.toString();
  }
}
