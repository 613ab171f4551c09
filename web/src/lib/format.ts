// Shares for details, tables and the legend (units.ts writes the amounts).

export function percent(part: number, whole: number): string {
  if (!(whole > 0)) return '0%';
  const p = (100 * part) / whole;
  return `${p >= 10 || p === 0 ? p.toFixed(1) : p.toPrecision(2)}%`;
}
