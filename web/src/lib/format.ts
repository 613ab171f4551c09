// Number formatting for details, tables and the legend.

export function formatWeight(w: number, unit: string): string {
  if (unit === 'ns' || unit === 'us') {
    const ns = unit === 'us' ? w * 1e3 : w;
    if (ns >= 1e9) return `${(ns / 1e9).toFixed(2)} s`;
    if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
    if (ns >= 1e3) return `${(ns / 1e3).toFixed(2)} µs`;
    return `${Math.round(ns)} ns`;
  }
  if (unit === 'bytes') {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (w >= 1024 && i < u.length - 1) {
      w /= 1024;
      i++;
    }
    return `${i === 0 ? Math.round(w) : w.toFixed(1)} ${u[i]}`;
  }
  return `${Math.round(w).toLocaleString('en-US')} ${unit}`;
}

export function percent(part: number, whole: number): string {
  if (!(whole > 0)) return '0%';
  const p = (100 * part) / whole;
  return `${p >= 10 || p === 0 ? p.toFixed(1) : p.toPrecision(2)}%`;
}

export function formatSeconds(ns: number): string {
  return `${(ns / 1e9).toFixed(ns >= 1e10 ? 1 : 3)} s`;
}
