// What the page says about a frame (tooltips, the details line, announcements) and the
// function table's columns and rows: text only, no DOM, from the derived state.
import { Derived, Sandwich } from '../app-state/model.js';
import { SortKey } from '../app-state/state.js';
import { percent } from '../lib/format.js';
import { Layout } from '../lib/layout.js';
import { FlameChart } from '../lib/flamechart.js';
import { Unit, formatInstant, formatNs, thousands } from '../lib/units.js';
import { Column } from './table-view.js';

/** A flame graph of the app: the main one or a half of the sandwich. */
export type Which = 'main' | 'callers' | 'callees';

export interface FrameContext {
  which: Which;
  layout: Layout;
  derived: Derived;
  sandwich: Sandwich | null;
  unit: Unit;
  labels: [string, string];
  isDiff: boolean;
}

function signedPct(x: number, base: number): string {
  return (x >= 0 ? '+' : '−') + percent(Math.abs(x), base);
}

/** Lines about node v: amounts in the profile's unit, shares of what the reader sees. */
export function describeFrame(c: FrameContext, v: number): string[] {
  const { layout: l, derived: d, unit: u, labels } = c;
  const lines: string[] = [];
  const samples = (): string | null =>
    u.countsSamples || !u.samplesKnown || c.isDiff ? null : `samples: ${thousands(l.count[v])} (${thousands(l.selfCount[v])} self)`;
  if (c.which === 'main' && d.diff) {
    const b = d.diff.before[v];
    const a = d.diff.after[v];
    lines.push(`${labels[0]}: ${u.format(b)} (${percent(b, d.diff.sumBefore)})`);
    lines.push(`${labels[1]}: ${u.format(a)} (${percent(a, d.diff.sumAfter)})`);
    lines.push(b <= 0 ? 'new stack' : a <= 0 ? 'stack gone' : `change: ${u.formatDelta(a - b)} (${signedPct(a - b, b)})`);
  } else if (c.which !== 'main') {
    // The sandwich: shares of the function, whose total is the layout's root.
    const sw = c.sandwich;
    const diff = sw && (c.which === 'callers' ? sw.callersDiff : sw.calleesDiff);
    const fname = d.frames.names[sw?.f ?? -1] ?? 'the function';
    if (diff) {
      const b = diff.before[v];
      const a = diff.after[v];
      lines.push(`${labels[0]}: ${u.format(b)} (${percent(b, diff.before[0])} of ${fname})`);
      lines.push(`${labels[1]}: ${u.format(a)} (${percent(a, diff.after[0])} of ${fname})`);
      lines.push(b <= 0 ? 'new' : a <= 0 ? 'gone' : `change: ${u.formatDelta(a - b)} (${signedPct(a - b, b)})`);
    } else {
      lines.push(`total: ${u.format(l.total[v])} — ${percent(l.total[v], l.total[0])} of ${fname}, ${percent(l.total[v], d.layout.total[0])} of all`);
      if (c.which === 'callees') lines.push(`self: ${u.format(l.self[v])} (${percent(l.self[v], l.total[0])} of ${fname})`);
      const sm = samples();
      if (sm) lines.push(sm);
    }
  } else {
    const zoom = d.zoomNode;
    lines.push(`total: ${u.format(l.total[v])} — ${percent(l.total[v], l.total[0])} of all, ${percent(l.total[v], l.total[zoom])} of ${zoom === 0 ? 'the view' : 'the zoomed frame'}`);
    lines.push(`self: ${u.format(l.self[v])} (${percent(l.self[v], l.total[0])})`);
    const sm = samples();
    if (sm) lines.push(sm);
  }
  return lines;
}

/**
 * The function table: self and total in the profile's unit and as shares; for a diff,
 * each side's share (the amounts in the cells' tooltips) and the change. Rows filtered
 * by name and sorted by the chosen column (changes by size).
 */
export function functionTable(d: Derived, unit: Unit, labels: [string, string], sort: SortKey, filter: string): { columns: Column[]; rows: Uint32Array } {
  const stats = d.stats();
  const before = d.statsBefore();
  const all = d.layout.total[0];
  const name = (f: number): string => d.frames.names[f] ?? '';
  let columns: Column[];
  if (before && d.diff) {
    const sb = d.diff.sumBefore;
    const sa = d.diff.sumAfter;
    const abs = (x: number): string => unit.format(x);
    columns = [
      { title: `Self ${labels[0]}`, key: null, numeric: true, text: (f) => percent(before.self[f], sb), hint: (f) => abs(before.self[f]) },
      { title: `Self ${labels[1]}`, key: 'self', numeric: true, text: (f) => percent(stats.self[f], sa), hint: (f) => abs(stats.self[f]) },
      { title: 'Δ self', key: 'dself', numeric: true, text: (f) => unit.formatDelta(stats.self[f] - before.self[f]) },
      { title: `Total ${labels[0]}`, key: null, numeric: true, text: (f) => percent(before.total[f], sb), hint: (f) => abs(before.total[f]) },
      { title: `Total ${labels[1]}`, key: 'total', numeric: true, text: (f) => percent(stats.total[f], sa), hint: (f) => abs(stats.total[f]) },
      { title: 'Δ total', key: 'delta', numeric: true, text: (f) => unit.formatDelta(stats.total[f] - before.total[f]) },
      { title: 'Function', key: 'name', numeric: false, text: name },
    ];
  } else {
    const what = unit.countsSamples ? 'samples' : unit.isTime ? 'time' : unit.kind === 'bytes' ? 'bytes' : unit.name;
    columns = [
      { title: `Self (${what})`, key: 'self', numeric: true, text: (f) => (stats.self[f] > 0 ? unit.format(stats.self[f]) : '–') },
      { title: 'Self %', key: 'self', numeric: true, text: (f) => percent(stats.self[f], all) },
      { title: `Total (${what})`, key: 'total', numeric: true, text: (f) => unit.format(stats.total[f]) },
      { title: 'Total %', key: 'total', numeric: true, text: (f) => percent(stats.total[f], all) },
      { title: 'Function', key: 'name', numeric: false, text: name },
    ];
  }
  let rows = Array.from(stats.present);
  if (before) for (const f of before.present) if (!(stats.total[f] > 0)) rows.push(f);
  if (filter) {
    const q = filter.toLowerCase();
    rows = rows.filter((f) => name(f).toLowerCase().includes(q));
  }
  const key: Record<string, (f: number) => number> = {
    self: (f) => stats.self[f],
    total: (f) => stats.total[f],
    delta: (f) => Math.abs(stats.total[f] - (before?.total[f] ?? 0)),
    dself: (f) => Math.abs(stats.self[f] - (before?.self[f] ?? 0)),
  };
  if (sort === 'name') rows.sort((a, b) => d.frames.order[a] - d.frames.order[b]);
  else {
    const k = key[sort] ?? key.total;
    rows.sort((a, b) => k(b) - k(a) || d.frames.order[a] - d.frames.order[b]);
  }
  return { columns, rows: Uint32Array.from(rows) };
}

/** A box of the flame chart: its frame, how long, when, how many samples, which thread. */
export function describeBox(
  chart: FlameChart,
  names: string[],
  b: { lane: number; depth: number; index: number },
  /** Added to a time to read it on the page's clock. */
  shift = 0,
): { name: string; lines: string[]; frame: number } | null {
  const row = chart.lanes[b.lane]?.rows[b.depth];
  if (!row || b.index < 0 || b.index >= row.length) return null;
  const frame = chart.frame[row.node[b.index]];
  const s = row.start[b.index];
  const e = row.end[b.index];
  const n = row.count[b.index];
  return {
    name: names[frame] ?? '',
    frame,
    lines: [
      // As many digits as the box's length needs: its start and end never read the same.
      `${formatNs(e - s)} from ${formatInstant(s + shift, (e - s) / 10)} to ${formatInstant(e + shift, (e - s) / 10)}`,
      `${thousands(n)} sample${n === 1 ? '' : 's'} in a row on ${chart.lanes[b.lane].name}`,
    ],
  };
}
