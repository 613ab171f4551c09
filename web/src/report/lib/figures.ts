// Every figure of a window (DOM-free), from one rule: the headline cards (the same keys,
// meanings and units as the run's headline over the measurement, crates/report/src/run.rs
// `figures`), the charts' legends, the headings and tooltips all take their numbers from
// here. The rule is the store's (crates/store/src/window.rs `figures`, by which kiln run
// computes its own headline); web/tests/fixtures/window-figures.json, written by
// crates/report from a run's page data with the figures the Rust side gives each window,
// keeps the two equal (web/tests/report.test.ts). The load's seconds are whole: one is the
// window's when its middle lies in it (`rowsIn`); a column's figure over a window is its
// mean weighted by the seconds that have a value (Σ value × seconds / Σ seconds: a rate's
// count over its seconds); latency percentiles are the window's seconds' histograms merged
// (lib/window.ts). The sampler's rates (CPU, switches, the machine's busy share) count the
// part of each second inside the window (`overlapOf`: its totals interpolated at the
// window's edges).
import { ColumnNames, RunPage, Table } from '../data.js';
import { lowerBound } from './decimate.js';
import { rowsIn, rowStart, typicalStep } from './intervals.js';
import { thousands } from '../../lib/units.js';
import { formatValue } from './format.js';
import { percentilesIn } from './window.js';

const num = (v: number | null | undefined): v is number => v !== null && v !== undefined && Number.isFinite(v);

/** Σ(value × seconds) and Σ seconds over the seconds of w that have a value. */
export function integralOf(time: ArrayLike<number>, values: ArrayLike<number | null>, w: [number, number]): { sum: number; seconds: number; any: boolean } {
  const out = { sum: 0, seconds: 0, any: false };
  for (const [i, dt] of rowsIn(time, w)) {
    const v = values[i];
    if (!num(v)) continue;
    const secs = dt / 1e9;
    out.sum += v * secs;
    out.seconds += secs;
    out.any = true;
  }
  return out;
}

/**
 * Σ(value × seconds inside w) and Σ seconds inside w over the rows with a value, each row
 * counting the part of its interval inside the window (crates/store/src/window.rs
 * `overlap`): a sampled counter's total over exactly the window.
 */
export function overlapOf(time: ArrayLike<number>, values: ArrayLike<number | null>, w: [number, number]): { sum: number; seconds: number; any: boolean } {
  const out = { sum: 0, seconds: 0, any: false };
  const step = typicalStep(time);
  // A row ends at most two steps after its start: none before w[0] reaches into w.
  for (let i = lowerBound(time, w[0]); i < time.length; i++) {
    const start = rowStart(time, i, step);
    if (start >= w[1]) break;
    const inside = Math.min(time[i], w[1]) - Math.max(start, w[0]);
    const v = values[i];
    if (inside <= 0 || !num(v)) continue;
    // In the order of the Rust sum (rate × seconds inside), to the last bit.
    const secs = inside / 1e9;
    out.sum += v * secs;
    out.seconds += secs;
    out.any = true;
  }
  return out;
}

/** A sampled rate's mean over exactly w (the part of each second inside it); null without values. */
export function overlapMean(time: ArrayLike<number>, values: ArrayLike<number | null>, w: [number, number]): number | null {
  const x = overlapOf(time, values, w);
  return x.any && x.seconds > 0 ? x.sum / x.seconds : null;
}

/** [`overlapOf`] of column `column` summed over tables `ts` (every host's target), and the most seconds any covers. */
export function overlapIn(ts: Table[], column: string, w: [number, number]): { sum: number; seconds: number; any: boolean } {
  const out = { sum: 0, seconds: 0, any: false };
  for (const t of ts) {
    const c = t.columns.find((x) => x.name === column);
    if (!c) continue;
    const x = overlapOf(t.time, c.values, w);
    if (!x.any) continue;
    out.sum += x.sum;
    out.seconds = Math.max(out.seconds, x.seconds);
    out.any = true;
  }
  return out;
}

/** The same for column `column` of table t (nothing when either is missing). */
export function integral(t: Table | undefined, column: string, w: [number, number]): { sum: number; seconds: number; any: boolean } {
  const c = t?.columns.find((x) => x.name === column);
  return t && c ? integralOf(t.time, c.values, w) : { sum: 0, seconds: 0, any: false };
}

/** A series' figure over w: its mean over the window's seconds, weighted by their length; null without values. */
export function meanIn(time: ArrayLike<number>, values: ArrayLike<number | null>, w: [number, number]): number | null {
  const x = integralOf(time, values, w);
  return x.any && x.seconds > 0 ? x.sum / x.seconds : null;
}

/** The mean rate of a column over w (per second), as the headline's rate; null without values. */
export function rateIn(t: Table | undefined, column: string, w: [number, number]): number | null {
  const c = t?.columns.find((x) => x.name === column);
  return t && c ? meanIn(t.time, c.values, w) : null;
}

/** The largest value of a column over w. */
export function maxIn(t: Table | undefined, column: string, w: [number, number]): number | null {
  const c = t?.columns.find((x) => x.name === column);
  if (!t || !c) return null;
  let m: number | null = null;
  for (const [i] of rowsIn(t.time, w)) {
    const v = c.values[i];
    if (num(v) && (m === null || v > m)) m = v;
  }
  return m;
}

/** Seconds of w in which a yes/no series (a flow-control stall) is yes. */
export function secondsOn(time: ArrayLike<number>, values: ArrayLike<number | null>, w: [number, number]): number {
  let n = 0;
  for (const [i] of rowsIn(time, w)) if (values[i]) n++;
  return n;
}

export interface WindowFigure {
  value: number;
  text: string;
  detail?: string;
}

/** `12.3k msg/s`, `123 msg/s`, `12.3 msg/s` (as the headline writes rates). */
export function rateText(v: number, unit: string): string {
  if (v >= 1e4) return `${(v / 1e3).toFixed(1)}k ${unit}/s`;
  if (v >= 100) return `${v.toFixed(0)} ${unit}/s`;
  return `${v.toFixed(1)} ${unit}/s`;
}

/** Connections open at `end`: connected minus dropped over the load's seconds whose middle lies before it (crates/store/src/window.rs `connections_held`). */
export function connectionsHeld(load: Table, end: number, names: ColumnNames): number | null {
  const connected = integral(load, names.connected, [-Infinity, end]);
  if (!connected.any) return null;
  const dropped = integral(load, names.dropped, [-Infinity, end]);
  return Math.max(0, Math.round(connected.sum - dropped.sum));
}

/** Whether a table named `name` is `table`: the local one or another host's (`target@db1`, crates/store/src/columns.rs `is_table`). */
export function isTable(name: string, table: string, names: ColumnNames): boolean {
  return name === table || name.startsWith(`${table}${names.host_separator}`);
}

/** The figures of window w by key; a key is missing where the window has no value. */
export function windowFigures(r: RunPage, w: [number, number]): Map<string, WindowFigure> {
  const out = new Map<string, WindowFigure>();
  const names = r.columns;
  const table = (n: string) => r.tables.find((t) => t.name === n);
  const load = table(names.load);
  // Every host's target: the local one and each other host's (`target@HOST`).
  const targets = r.tables.filter((t) => isTable(t.name, names.target, names));
  const target = table(names.target);
  const machine = table(names.machine);
  const kiln = table(names.kiln);
  const unit = r.unit;
  // Operations completed and their rate.
  const done = r.completed ? integral(load, r.completed, w) : null;
  // A fleet's connect rate is not its work (holding is): it has no throughput.
  const throughput = r.unit !== 'conn' && done && done.any && done.seconds > 0 ? done.sum / done.seconds : null;
  if (throughput !== null) {
    const sent = rateIn(load, names.sent, w);
    out.set('throughput', { value: throughput, text: rateText(throughput, unit), detail: sent !== null && Math.abs(sent - throughput) > 0.5 ? `${rateText(sent, unit)} sent` : undefined });
  }
  const ops = throughput !== null && done ? Math.max(0, Math.round(done.sum)) : null;
  // A fleet: the connections held at the window's end (connected minus dropped, every
  // second of the load up to it).
  const held = r.unit === 'conn' && load ? connectionsHeld(load, w[1], names) : null;
  if (held !== null) out.set('connections', { value: held, text: thousands(held), detail: 'at the end of the window' });
  if (r.latency) {
    // A sweep's step: the histogram the load kept for it, as `kiln runs show RUN@STEP`
    // and the sweep's table give it; any other window: its seconds' histograms merged.
    const step = r.sweep?.points.find((x) => x.start === w[0] && x.end === w[1]);
    const p = step?.latency ?? percentilesIn(r.latency_seconds, r.latency, w);
    if (p) {
      for (const [key, v] of [['p50', p.p50], ['p99', p.p99], ['p999', p.p999], ['max', p.max]] as const) out.set(key, { value: v, text: formatValue(v, 'us'), detail: `of ${thousands(p.count)} values` });
    }
  }
  // Figures per second are over the seconds of the window the target's series cover: the
  // window's length where they cover it (the run's headline's rule over its measurement),
  // and a window dragged beyond them not diluted.
  const user = overlapIn(targets, names.cpu_user, w);
  const system = overlapIn(targets, names.cpu_system, w);
  const secs = Math.max(user.seconds, system.seconds);
  if (user.any && system.any && secs > 0) {
    // % of one CPU: CPU seconds over seconds.
    const cpuS = user.sum / 100 + system.sum / 100;
    const pct = (cpuS / secs) * 100;
    out.set('target_cpu', { value: pct, text: `${pct.toFixed(1)}% of one CPU`, detail: `user ${((user.sum / 100 / secs) * 100).toFixed(1)}%, system ${((system.sum / 100 / secs) * 100).toFixed(1)}%` });
    if (ops) out.set('cpu_per_op', { value: (cpuS * 1e6) / ops, text: formatValue((cpuS * 1e6) / ops, 'us') });
    if (held) out.set('cpu_per_1000_conn', { value: pct / (held / 1000), text: `${(pct / (held / 1000)).toFixed(2)}% of one CPU` });
  }
  // Whole bytes; a reading of 0 is no process read.
  const rss = maxIn(target, names.rss, w);
  if (rss !== null && Math.trunc(rss) > 0) out.set('rss', { value: Math.trunc(rss), text: formatValue(Math.trunc(rss), 'bytes') });
  const vol = overlapIn(targets, names.voluntary, w);
  const inv = overlapIn(targets, names.involuntary, w);
  const swSecs = Math.max(vol.seconds, inv.seconds);
  if (vol.any && inv.any && swSecs > 0) {
    // Counted switches, a whole number (as the headline keeps them).
    const n = Math.max(0, Math.round(vol.sum + inv.sum));
    const perS = n / swSecs;
    out.set('switches', { value: perS, text: `${perS.toFixed(0)}/s`, detail: ops ? `${(n / ops).toFixed(2)} per ${unit}` : undefined });
  }
  // kiln's and the load command's CPU and the machine's busy share over the seconds of
  // the window their series cover.
  const mean = (t: Table | undefined, column: string): number | null => {
    const c = t?.columns.find((x) => x.name === column);
    return t && c ? overlapMean(t.time, c.values, w) : null;
  };
  const k = mean(kiln, names.kiln_cpu);
  if (k !== null) out.set('kiln_cpu', { value: k, text: `${k.toFixed(1)}% of one CPU` });
  const l = mean(kiln, names.load_command_cpu);
  if (l !== null) out.set('load_cpu', { value: l, text: `${l.toFixed(1)}% of one CPU` });
  // kiln's eBPF CPU: the recording's total given to each second by Rust (crates/store
  // seconds.rs); a window's is its seconds' sum, as `kiln runs show RUN@A-B` gives it.
  const bpf = rateIn(r.ebpf ?? undefined, 'kiln eBPF cpu', w);
  if (bpf !== null) out.set('kiln_bpf_cpu', { value: bpf, text: `${bpf.toFixed(1)}% of one CPU`, detail: 'the recording\u2019s eBPF CPU given to each second by its share of the recorded samples' });
  const busy = mean(machine, names.busy);
  if (busy !== null) out.set('machine_busy', { value: busy, text: `${busy.toFixed(0)}% of ${r.cpus} CPUs` });
  return out;
}
