// Numbers of the report with their units, at a readable scale (DOM-free). The units are
// the store's: `msg/s`, `us`, `%`, `bytes`, `1/s`, `count`, `bool`, plus the category
// charts' `% of one CPU` and `threads`.
import { formatBytes, formatNs, thousands, threeDigits } from '../../lib/units.js';

/** 1234 → 1,234; 12345 → 12.3k; 1234567 → 1.23M. */
export function compact(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) return `${threeDigits(v / 1e9)}G`;
  if (a >= 1e6) return `${threeDigits(v / 1e6)}M`;
  if (a >= 1e4) return `${threeDigits(v / 1e3)}k`;
  if (a >= 1000) return thousands(v);
  return threeDigits(v);
}

/** A value as a reader should see it, with its unit. */
export function formatValue(v: number | null | undefined, unit: string): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  switch (unit) {
    case 'us':
      return formatNs(v * 1e3);
    case 'ns':
      return formatNs(v);
    case '%':
    case '% of one CPU':
      return `${Math.abs(v) >= 99.95 ? v.toFixed(0) : v.toFixed(1)}%`;
    case 'bytes':
      return formatBytes(v);
    case 'count':
      return thousands(v);
    case 'bool':
      return v ? 'yes' : 'no';
    case '1/s':
      return `${compact(v)}/s`;
    case 'threads':
      return `${threeDigits(v)} threads`;
    case '':
      return threeDigits(v);
    default:
      return `${compact(v)} ${unit}`;
  }
}

/** A stored unit as a reader sees it: `us/msg` → `µs/msg`, `us` → `µs`. */
export function unitText(unit: string): string {
  return unit.replace(/^us(?=\/|$)/, 'µs');
}

/** A short axis label of a value (no unit words where the chart's title says them). */
export function formatTick(v: number, unit: string): string {
  switch (unit) {
    case 'us':
      return formatNs(v * 1e3).replace(/\.00 /, ' ');
    case '%':
    case '% of one CPU':
      return `${trim(v)}%`;
    case 'bytes':
      return formatBytes(v).replace(/\.00 /, ' ');
    case 'bool':
      return '';
    default:
      return Math.abs(v) >= 1e4 ? compact(v) : trim(v);
  }
}

function trim(v: number): string {
  if (Number.isInteger(v)) return thousands(v);
  return String(Number(v.toPrecision(3)));
}

/** Seconds on the time axis: `-5 s`, `30 s`, `2:30` (past 100 s: minutes). */
export function formatSeconds(ns: number, stepNs = 1e9): string {
  const s = ns / 1e9;
  if (Math.abs(s) < 100 || stepNs < 1e9) {
    const digits = stepNs >= 1e9 ? 0 : stepNs >= 1e8 ? 1 : 2;
    return `${fixed(s, digits)} s`;
  }
  const sign = s < 0 ? '-' : '';
  const a = Math.round(Math.abs(s));
  const h = Math.floor(a / 3600);
  const m = Math.floor((a % 3600) / 60);
  const sec = String(a % 60).padStart(2, '0');
  return h > 0 ? `${sign}${h}:${String(m).padStart(2, '0')}:${sec}` : `${sign}${m}:${sec}`;
}

/** `x.toFixed(digits)` without a negative zero (-0.004 → `0.0`). */
function fixed(x: number, digits: number): string {
  const t = x.toFixed(digits);
  return /^-0(\.0*)?$/.test(t) ? t.slice(1) : t;
}

/** An instant of a window or a second: `12.0 s`, `-4.0 s` (no `-0.0 s`), `1234 s`. */
export function formatInstant(ns: number): string {
  return `${fixed(ns / 1e9, Math.abs(ns) < 1e11 ? 1 : 0)} s`;
}

/** A window as text: `12.0 s – 13.0 s (1.00 s)`. */
export function formatWindow(w: [number, number]): string {
  return `${formatInstant(w[0])} – ${formatInstant(w[1])} (${formatNs(w[1] - w[0])})`;
}

/** A second (or any row's interval) of a series: `4.0 s – 5.0 s`, its own span whatever its edges. */
export function formatSpan(a: number, b: number): string {
  return `${formatInstant(a)} – ${formatInstant(b)}`;
}
