// Which charts a run gets, from its stored tables (DOM-free): the load's rates, latency
// percentiles per measured latency (log scale, the intended-time latency dashed beside the
// measured one), flow-control spans, the target's CPU by thread group (stacked), memory,
// context switches, threads and files, who used the machine's CPUs, and CPU by category.
// Only series that hold something are charted; every chart names its unit.
import { CategorySeries, Column, ColumnNames, PerSecond, Table } from '../data.js';
import { plainGroup, plainLatency } from './names.js';
import { categorySharesIn, percentilesIn } from './window.js';
import { ScaleKind } from './scale.js';
import { TABLEAU10, categoryColor } from '../../lib/palette.js';

export { categoryColor };

export type ChartKind = 'lines' | 'stacked' | 'spans';

export interface Line {
  label: string;
  /** The stored column's name (tests match hover values against the store by it). */
  column: string;
  table: string;
  time: number[];
  values: (number | null)[];
  color: string;
  dash?: boolean;
  width?: number;
  /** Comparisons: the group a run belongs to. */
  group?: number;
  /** The store's own name of the series (tooltip), when the label is in plain words. */
  hint?: string;
  /**
   * A sampled rate (CPU, switches): its figure over a window counts the part of each
   * second inside it (lib/figures.ts `overlapOf`), as the headline's CPU does.
   */
  exact?: boolean;
}

/** What a chart's legend shows for a window when the cursor is away (default: means). */
export interface Summary {
  /** What the numbers are, after "over the window (…)": `share of the CPU time`. */
  caption: string;
  /** Line k's value over window w, or null. */
  value: (k: number, w: [number, number]) => { value: number; text: string } | null;
}

export interface ChartSpec {
  id: string;
  title: string;
  unit: string;
  scale: ScaleKind;
  kind: ChartKind;
  lines: Line[];
  /** Height of the plot, px. */
  height: number;
  /** Upper bound of the axis when known (all CPUs busy). */
  yMax?: number;
  note?: string;
  /** The internal names the title speaks of (tooltip). */
  hint?: string;
  summary?: Summary;
}

/** Colours of series (Tableau 10: distinct in light and dark pages). */
export const COLORS = TABLEAU10;
/** Colours of compared groups: first blue, then orange, green, purple. */
export const GROUP_COLORS = ['#2f6fd0', '#e0622b', '#3a9a4a', '#9a4fc0', '#b8860b'];

export const hasValue = (c: Column): boolean => c.values.some((v) => v !== null && v !== undefined && Number.isFinite(v) && v !== 0);
const anyValue = (c: Column): boolean => c.values.some((v) => v !== null && v !== undefined && Number.isFinite(v));

function line(t: Table, c: Column, color: string, label = c.name, extra: Partial<Line> = {}): Line {
  return { label, column: c.name, table: t.name, time: t.time, values: c.values, color, hint: label === c.name ? undefined : c.name, ...extra };
}

/** Element-wise sum of columns (null where all are null). */
export function sumColumns(cols: Column[], n: number): (number | null)[] {
  const out: (number | null)[] = new Array(n).fill(null);
  for (const c of cols) {
    for (let i = 0; i < n; i++) {
      const v = c.values[i];
      if (v === null || v === undefined || !Number.isFinite(v)) continue;
      out[i] = (out[i] ?? 0) + v;
    }
  }
  return out;
}

const LATENCY_COLORS: Record<string, string> = { p50: '#4e79a7', p99: '#f28e2b', 'p99.9': '#e15759', max: '#9c755f' };

/** Latency families of a load table: `consumer_latency p99` → family `consumer_latency`. */
export function latencyFamilies(t: Table): Map<string, Column[]> {
  const fams = new Map<string, Column[]>();
  for (const c of t.columns) {
    if (c.unit !== 'us') continue;
    const sp = c.name.lastIndexOf(' ');
    if (sp <= 0) continue;
    const fam = c.name.slice(0, sp);
    if (!fams.has(fam)) fams.set(fam, []);
    fams.get(fam)!.push(c);
  }
  return fams;
}

export interface RunShape {
  tables: Table[];
  /** The names of the series, as kiln writes them. */
  columns: ColumnNames;
  /** What one operation is (`msg`). */
  unit: string;
  /** The headline latency's name. */
  latency: string | null;
  cpus: number;
  categories: CategorySeries[];
  /** Per-second latency histograms (a window's exact percentiles); absent in old runs. */
  latencySeconds?: PerSecond;
}

const QUANTILE_KEYS: Record<string, 'p50' | 'p99' | 'p999' | 'max'> = { p50: 'p50', p99: 'p99', 'p99.9': 'p999', max: 'max' };

/** A latency chart's legend over a window: each line's percentile of the merged seconds. */
function latencySummary(ps: PerSecond | undefined, lines: Line[], families: string[]): Summary | undefined {
  if (!ps || !families.every((f) => ps.series.some((x) => x.name === f))) return undefined;
  let cache: { key: string; p: Map<string, ReturnType<typeof percentilesIn>> } | null = null;
  return {
    caption: 'exact percentiles of the window’s seconds merged',
    value: (k, w) => {
      const l = lines[k];
      const sp = l.column.lastIndexOf(' ');
      const fam = l.column.slice(0, sp);
      const q = QUANTILE_KEYS[l.column.slice(sp + 1)];
      if (!q) return null;
      const key = `${w[0]}-${w[1]}`;
      if (cache?.key !== key) cache = { key, p: new Map() };
      if (!cache.p.has(fam)) cache.p.set(fam, percentilesIn(ps, fam, w));
      const p = cache.p.get(fam);
      return p ? { value: p[q], text: '' } : null;
    },
  };
}

/** The load's charts: rates, other events, levels, latency and flow control. */
function loadCharts(r: RunShape, load: Table): ChartSpec[] {
  const out: ChartSpec[] = [];
  const main = `${r.unit}/s`;
  const rates = load.columns.filter((c) => c.unit === main && hasValue(c));
  if (rates.length) {
    out.push({ id: 'rates', title: `Load: ${r.unit} per second`, unit: main, scale: 'linear', kind: 'lines', height: 130, lines: rates.map((c, i) => line(load, c, COLORS[i % COLORS.length])) });
  }
  const others = load.columns.filter((c) => c.unit.endsWith('/s') && c.unit !== main && hasValue(c));
  for (const unit of new Set(others.map((c) => c.unit))) {
    const cols = others.filter((c) => c.unit === unit);
    out.push({ id: `events:${unit}`, title: `Load: ${unit.replace(/\/s$/, '')} events per second`, unit, scale: 'linear', kind: 'lines', height: 90, lines: cols.map((c, i) => line(load, c, COLORS[(i + 3) % COLORS.length])) });
  }
  // Levels: what waited at the end of each second (the broker's queue, messages in
  // flight or undelivered, the server's accept queue), one chart per unit.
  const levels = load.columns.filter((c) => (c.unit === 'msg' || c.unit === 'conn') && anyValue(c));
  for (const unit of new Set(levels.map((c) => c.unit))) {
    const cols = levels.filter((c) => c.unit === unit);
    out.push({
      id: `levels:${unit}`,
      title: `Queues: ${unit === 'msg' ? 'messages' : 'connections'} waiting at the end of each second`,
      hint: cols.map((c) => c.name).join(', '),
      unit,
      scale: 'linear',
      kind: 'lines',
      height: 100,
      lines: cols.map((c, i) => line(load, c, COLORS[(i + 5) % COLORS.length], c.name.replace(/_/g, ' '))),
    });
  }
  out.push(...latencyCharts(r, load));
  const flags = load.columns.filter((c) => c.unit === 'bool');
  if (flags.length) {
    const colors: Record<string, string> = { blocked: '#e15759', stalled: '#f28e2b', disconnected: '#7a2a8a' };
    out.push({
      id: 'spans',
      title: 'Flow control: seconds the load was blocked, stalled or disconnected',
      unit: 'bool',
      scale: 'linear',
      kind: 'spans',
      height: 14 * flags.length + 6,
      lines: flags.map((c, i) => line(load, c, colors[c.name] ?? COLORS[(i + 2) % COLORS.length])),
    });
  }
  return out;
}

/** One latency chart per family of per-second percentiles, the run's own first; the
 * percentiles from the intended send time dashed beside them. */
function latencyCharts(r: RunShape, load: Table): ChartSpec[] {
  const out: ChartSpec[] = [];
const fams = latencyFamilies(load);
const order = [...fams.keys()].filter((f) => !f.endsWith('_intended'));
if (r.latency) order.sort((a, b) => Number(b === r.latency) - Number(a === r.latency));
for (const fam of order) {
  const cols = fams.get(fam)!.filter(anyValue);
  if (!cols.length) continue;
  const intended = (fams.get(`${fam}_intended`) ?? []).filter(anyValue);
  const lines: Line[] = [];
  for (const c of cols) {
    const q = c.name.slice(fam.length + 1);
    lines.push(line(load, c, LATENCY_COLORS[q] ?? COLORS[lines.length % COLORS.length], q));
  }
  for (const c of intended) {
    const q = c.name.slice(fam.length + 10);
    lines.push(line(load, c, LATENCY_COLORS[q] ?? COLORS[lines.length % COLORS.length], `${q} intended`, { dash: true }));
  }
  out.push({
    summary: latencySummary(r.latencySeconds, lines, intended.length ? [fam, `${fam}_intended`] : [fam]),
    id: `latency:${fam}`,
    title: `Latency per second: ${plainLatency(fam)}${intended.length ? ' (dashed: from the intended send time)' : ''}`,
    hint: intended.length ? `${fam}, ${fam}_intended` : fam,
    unit: 'us',
    scale: 'log',
    kind: 'lines',
    height: 150,
    lines,
  });
}
  return out;
}

/** The target's charts (CPU by thread group, memory, switches, counts) and who used the
 * machine's CPUs. */
function targetCharts(r: RunShape, target: Table, machine: Table | undefined, kiln: Table | undefined): ChartSpec[] {
  const out: ChartSpec[] = [];
  const n = target.time.length;
  const names = r.columns;
  const groups = new Map<string, { user?: Column; system?: Column }>();
  for (const c of target.columns) {
    for (const [part, col] of [['user', names.cpu_user], ['system', names.cpu_system]] as const) {
      const prefix = col + names.group_separator;
      if (!c.name.startsWith(prefix)) continue;
      const name = c.name.slice(prefix.length);
      const g = groups.get(name) ?? {};
      g[part] = c;
      groups.set(name, g);
    }
  }
  const layers: Line[] = [];
  let k = 0;
  for (const [g, { user, system }] of groups) {
    if (!(user && hasValue(user)) && !(system && hasValue(system))) continue;
    const color = COLORS[k++ % COLORS.length];
    if (user) layers.push(line(target, user, color, `${plainGroup(g)} user`, { exact: true }));
    if (system) layers.push(line(target, system, shade(color), `${plainGroup(g)} system`, { exact: true }));
  }
  if (!layers.length) {
    for (const [name, color] of [[names.cpu_user, COLORS[0]], [names.cpu_system, shade(COLORS[0])]]) {
      const c = target.columns.find((x) => x.name === name);
      if (c) layers.push(line(target, c, color, c.name, { exact: true }));
    }
  }
  if (layers.length) {
    out.push({ id: 'cpu', title: 'Target CPU by thread group, % of one CPU (lighter: system time)', unit: '%', scale: 'linear', kind: 'stacked', height: 150, lines: layers });
  }
  const rss = target.columns.find((c) => c.name === names.rss);
  // A JVM's own account of its heap beside its resident memory (the heap is committed as
  // the JVM likes; what its old generation holds is what its collections left).
  const jvm = [
    [names.jvm_heap_used, 'JVM heap in use'],
    [names.jvm_old_used, 'JVM old generation in use'],
    [names.jvm_old_max, 'the most the old generation may take'],
  ]
    .map(([n, label]) => [target.columns.find((c) => n !== undefined && c.name === n), label] as const)
    .filter((x): x is readonly [Column, string] => !!x[0] && anyValue(x[0]));
  if (rss && anyValue(rss)) {
    const lines = [line(target, rss, COLORS[4], jvm.length ? 'resident (RSS)' : undefined)];
    jvm.forEach(([c, label], i) => lines.push(line(target, c, COLORS[(i + 7) % COLORS.length], label)));
    const title = jvm.length ? "Target memory: resident (RSS) and the JVM's heap by its own counters" : 'Target resident memory (RSS)';
    out.push({ id: 'rss', title, unit: 'bytes', scale: 'linear', kind: 'lines', height: jvm.length ? 120 : 90, lines });
  }
  const sw = [names.voluntary, names.involuntary].map((x) => target.columns.find((c) => c.name === x)).filter((c): c is Column => !!c && anyValue(c));
  if (sw.length) out.push({ id: 'switches', title: 'Target context switches per second', unit: '1/s', scale: 'linear', kind: 'lines', height: 90, lines: sw.map((c, i) => line(target, c, COLORS[(i + 5) % COLORS.length], c.name, { exact: true })) });
  const counts = [names.threads, names.open_files, names.sockets].map((x) => target.columns.find((c) => c.name === x)).filter((c): c is Column => !!c && anyValue(c));
  if (counts.length) out.push({ id: 'counts', title: 'Target threads, open files and sockets', unit: 'count', scale: 'linear', kind: 'lines', height: 80, lines: counts.map((c, i) => line(target, c, COLORS[(i + 6) % COLORS.length])) });
  out.push(...waitCharts(r, target, out));
  const busy = machine?.columns.find((c) => c.name === names.busy);
  const lines: Line[] = [];
  if (machine && busy && anyValue(busy)) {
    lines.push({ ...line(machine, busy, '#888888', `machine (all processes, ${r.cpus} CPUs)`, { exact: true }), values: busy.values.map((v) => (v === null ? null : v * Math.max(1, r.cpus))) });
  }
  const cpuCols = target.columns.filter((c) => c.name === names.cpu_user || c.name === names.cpu_system);
  if (cpuCols.length) lines.push({ label: 'target', column: `${names.cpu_user}+system`, table: names.target, time: target.time, values: sumColumns(cpuCols, n), color: COLORS[0], exact: true });
  for (const c of kiln?.columns ?? []) {
    if (c.unit === '%' && anyValue(c)) lines.push(line(kiln!, c, c.name === names.kiln_cpu ? COLORS[2] : COLORS[1], c.name === names.kiln_cpu ? 'kiln' : c.name === names.load_command_cpu ? 'load command' : c.name, { exact: true }));
  }
  if (lines.length > 1 || busy) {
    out.push({
      id: 'machine',
      title: `Who used the machine's CPUs, % of one CPU (${Math.max(1, r.cpus) * 100}% = all ${r.cpus})`,
      unit: '%',
      scale: 'linear',
      kind: 'lines',
      height: 110,
      yMax: Math.max(1, r.cpus) * 100,
      lines,
    });
  }
  return out;
}

/** The target's waits and queues (what its findings cite): its time waiting for a CPU,
 * each group's busiest thread, its threads blocked by reason, the processes it started;
 * then every other series it has values in and no chart of `above` (or of these) draws,
 * a chart per unit. */
function waitCharts(r: RunShape, target: Table, above: ChartSpec[]): ChartSpec[] {
  const out: ChartSpec[] = [];
  const names = r.columns;
  const sep = names.group_separator;
  const find = (n: string | undefined): Column | undefined => (n === undefined ? undefined : target.columns.find((c) => c.name === n && hasValue(c)));
  const grouped = (n: string | undefined): [string, Column][] =>
    n === undefined ? [] : target.columns.filter((c) => c.name.startsWith(n + sep) && hasValue(c)).map((c) => [c.name.slice(n.length + sep.length), c]);
  const cpuWait = (
    [
      [names.runnable, 'all threads (runnable)'],
      [names.main_runnable, 'its first thread (an event loop, the main thread)'],
      [names.throttled, 'held by its CPU quota (throttled)'],
    ] as const
  ).flatMap(([n, label]) => {
    const c = find(n);
    return c ? [[c, label] as const] : [];
  });
  if (cpuWait.length) {
    out.push({ id: 'cpu-wait', title: 'Target time waiting for a CPU, % of one thread', unit: '%', scale: 'linear', kind: 'lines', height: 90, lines: cpuWait.map(([c, label], i) => line(target, c, COLORS[(i + 2) % COLORS.length], label, { exact: true })) });
  }
  const busiest = grouped(names.busiest);
  if (busiest.length) {
    out.push({ id: 'busiest', title: "Each thread group's busiest thread, % of one CPU (100: a thread that cannot go faster)", unit: '%', scale: 'linear', kind: 'lines', height: 90, yMax: 100, lines: busiest.map(([g, c], i) => line(target, c, COLORS[i % COLORS.length], plainGroup(g), { exact: true })) });
  }
  const blocked = grouped(names.waiting);
  if (blocked.length) {
    out.push({ id: 'blocked', title: 'Target threads blocked, by what they waited on (threads, sampled)', unit: 'count', scale: 'linear', kind: 'stacked', height: 100, lines: blocked.map(([b, c], i) => line(target, c, COLORS[(i + 3) % COLORS.length], b, { exact: true })) });
  }
  const started = [find(names.children_cpu), find(names.young_copies_cpu)].filter((c): c is Column => !!c);
  if (started.length) {
    out.push({ id: 'children', title: "CPU of the processes the target started, and of its own copies that ended under a second old, % of one CPU", unit: '%', scale: 'linear', kind: 'lines', height: 90, lines: started.map((c, i) => line(target, c, COLORS[(i + 8) % COLORS.length], c.name, { exact: true })) });
  }
  // Every other series with a value, a chart per unit (per-group series other than the
  // above stay in the tables). The target's CPU total is drawn above by its groups.
  const charted = new Set<string>([names.cpu_user, names.cpu_system]);
  for (const l of [...above, ...out].flatMap((c) => c.lines)) if (l.table === target.name) charted.add(l.column);
  const units = new Map<string, Column[]>();
  for (const c of target.columns) {
    if (charted.has(c.name) || c.name.includes(sep) || !hasValue(c)) continue;
    const u = c.unit ?? '';
    units.set(u, [...(units.get(u) ?? []), c]);
  }
  for (const [u, cs] of units) {
    out.push({ id: `other:${u}`, title: `Target: ${cs.map((c) => c.name).join(', ')}${u ? ` (${u})` : ''}`, unit: u, scale: 'linear', kind: 'lines', height: 80, lines: cs.map((c, i) => line(target, c, COLORS[(i + 1) % COLORS.length], c.name, { exact: true })) });
  }
  return out;
}

/** The charts of a run, top to bottom. */
export function runCharts(r: RunShape): ChartSpec[] {
  const out: ChartSpec[] = [];
  const table = (n: string): Table | undefined => r.tables.find((t) => t.name === n);
  const load = table(r.columns.load);
  const target = table(r.columns.target);
  const machine = table(r.columns.machine);
  const kiln = table(r.columns.kiln);
  if (load) out.push(...loadCharts(r, load));
  if (target) out.push(...targetCharts(r, target, machine, kiln));
  for (const c of r.categories) out.push(categoryChart(c));
  return out;
}

/** A stacked chart of a profile's categories per interval. */
export function categoryChart(c: CategorySeries): ChartSpec {
  const time = c.edges.slice(1);
  let cache: { key: string; shares: number[] | null } | null = null;
  const what = c.unit === 'threads' ? 'threads blocked (mean)' : c.unit === '/s' ? 'samples per second' : '% of one CPU';
  return {
    id: `category:${c.event}`,
    title: `Where the ${c.unit === 'threads' ? 'off-CPU time' : 'CPU'} went by category (${c.event}), ${what}`,
    unit: c.unit,
    scale: 'linear',
    kind: 'stacked',
    height: 160,
    // One number per category: its value at the cursor, its share of the window else (the
    // whole run's share in the tooltip).
    lines: c.names.map((name, i) => ({
      label: name,
      column: name,
      table: `category:${c.event}`,
      time,
      values: c.values[i],
      color: categoryColor(name, i),
      hint: `${name}: ${c.shares[i].toFixed(1)}% of the ${c.event} ${c.unit === 'threads' ? 'off-CPU time' : 'samples'} over the whole run`,
    })),
    note: c.outside ? `${c.outside} samples fall outside the charted seconds` : undefined,
    summary: {
      caption: c.unit === 'threads' ? 'share of the off-CPU time' : c.unit === '/s' ? 'share of the samples' : 'share of the CPU time',
      value: (k, w) => {
        const key = `${w[0]}-${w[1]}`;
        if (cache?.key !== key) cache = { key, shares: categorySharesIn(c, w) };
        const v = cache.shares?.[k];
        return v === undefined ? null : { value: v, text: `${v.toFixed(1)}%` };
      },
    },
  };
}

/** A lighter shade of a #rrggbb colour (system time beside user time). */
export function shade(hex: string): string {
  const n = parseInt(hex.slice(1), 16);
  const mix = (c: number): number => Math.round(c + (255 - c) * 0.5);
  const r = mix((n >> 16) & 255);
  const g = mix((n >> 8) & 255);
  const b = mix(n & 255);
  return `#${((r << 16) | (g << 8) | b).toString(16).padStart(6, '0')}`;
}
