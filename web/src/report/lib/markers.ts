// What the load did, as markers on the page's time axis (DOM-free; Firefox Profiler's
// marker chart): the run's phases as the store says them (warm-up, measurement, the
// seconds after it and sweep steps, crates/report's `phases`, the same as the Firefox
// Profiler export's markers), then the load's events from its stored per-second series:
// each run of seconds a flow-control flag was on (blocked, stalled, disconnected,
// errors), each run of seconds an event counter counted (connections dropped, failed or
// re-established, failed requests, nacks, losses), and agents whose seconds stop before
// the load's did. Times are ns since the origin; a second is the interval ending at its
// row's time.
import { PhaseSpan, Table } from '../data.js';
import { rowStart, typicalStep } from './intervals.js';

export interface Marker {
  /** The lane (row of the marker chart) it is drawn in. */
  lane: string;
  name: string;
  /** `warm-up`, `measurement`, `after`, `sweep step`, `flag`, `counter`, `agent`. */
  kind: string;
  start: number;
  end: number;
  /** How many: seconds a flag was on, events a counter counted; null for phases. */
  count: number | null;
  /** What `count` counts (`s`, `conn`, `req`). */
  unit: string;
  /** More to say (why an agent failed), or empty. */
  detail?: string;
}

/** Plain names of the flags and counters that are events, not throughput. */
const FLAGS: Record<string, string> = {
  blocked: 'flow control: blocked',
  stalled: 'stalled (sends due, none sent)',
  disconnected: 'disconnected',
  errors: 'errors',
};
const COUNTERS: Record<string, [string, string]> = {
  dropped: ['connections', 'connections dropped'],
  reconnects: ['connections', 'reconnects'],
  failed: ['connections', 'connection attempts failed'],
  refused: ['errors', 'refused by the server'],
  nacked: ['errors', 'nacked'],
  returned: ['errors', 'returned (unroutable)'],
  lost: ['errors', 'messages lost'],
  err_connect: ['errors', 'failed requests: connect'],
  err_timeout: ['errors', 'failed requests: timeout'],
  err_reset: ['errors', 'failed requests: reset'],
  err_closed: ['errors', 'failed requests: closed'],
  err_protocol: ['errors', 'failed requests: protocol'],
  err_other: ['errors', 'failed requests: other'],
  status_5xx: ['errors', '5xx responses'],
  unanswered: ['errors', 'requests unanswered'],
  not_sent: ['errors', 'requests not sent'],
};

/** The lane of each phase kind. */
function phaseLane(kind: string): string {
  return kind === 'sweep step' ? 'sweep steps' : 'phases';
}

/**
 * Runs of consecutive rows where `on(i)` holds, as [first, last] row indices.
 */
export function runsOf(n: number, on: (i: number) => boolean): [number, number][] {
  const out: [number, number][] = [];
  let first = -1;
  for (let i = 0; i <= n; i++) {
    if (i < n && on(i)) {
      if (first < 0) first = i;
    } else if (first >= 0) {
      out.push([first, i - 1]);
      first = -1;
    }
  }
  return out;
}

const finite = (v: number | null | undefined): v is number => v !== null && v !== undefined && Number.isFinite(v);

/** The load's events in one table: flags' runs of seconds and counters' runs of seconds. */
export function eventMarkers(t: Table): Marker[] {
  const out: Marker[] = [];
  const step = typicalStep(t.time);
  const n = t.time.length;
  const span = (a: number, b: number): [number, number] => [rowStart(t.time, a, step), t.time[b]];
  for (const c of t.columns) {
    if (c.unit === 'bool') {
      const name = FLAGS[c.name] ?? c.name;
      for (const [a, b] of runsOf(n, (i) => finite(c.values[i]) && c.values[i] !== 0)) {
        const [s, e] = span(a, b);
        out.push({ lane: 'flow control', name, kind: 'flag', start: s, end: e, count: b - a + 1, unit: 's' });
      }
      continue;
    }
    const ev = COUNTERS[c.name];
    if (!ev || !c.unit.endsWith('/s')) continue;
    // A rate per second: the events of a row are its rate times its interval.
    for (const [a, b] of runsOf(n, (i) => finite(c.values[i]) && c.values[i]! > 0)) {
      let count = 0;
      for (let i = a; i <= b; i++) count += c.values[i]! * ((t.time[i] - rowStart(t.time, i, step)) / 1e9);
      const [s, e] = span(a, b);
      out.push({ lane: ev[0], name: ev[1], kind: 'counter', start: s, end: e, count: Math.round(count), unit: c.unit.slice(0, -2) });
    }
  }
  return out;
}

/**
 * Agents whose seconds (`load@NAME`) end before the load's: from an agent's last second
 * to the load's end, its failure as the run's warnings say it when they do.
 */
export function agentMarkers(tables: Table[], warnings: string[]): Marker[] {
  const load = tables.find((t) => t.name === 'load');
  if (!load || !load.time.length) return [];
  const end = load.time[load.time.length - 1];
  const step = typicalStep(load.time);
  const out: Marker[] = [];
  for (const t of tables) {
    if (!t.name.startsWith('load@') || !t.time.length) continue;
    const last = t.time[t.time.length - 1];
    if (end - last < step * 1.5) continue;
    const agent = t.name.slice(5);
    const why = warnings.find((w) => w.includes(`host ${agent} failed`));
    out.push({ lane: 'agents', name: `agent ${agent} ${why ? 'failed' : 'stopped'}`, kind: 'agent', start: last, end, count: null, unit: '', detail: why ?? '' });
  }
  return out;
}

/** Every marker of a run, phases first, then events by lane. */
export function runMarkers(phases: PhaseSpan[], tables: Table[], warnings: string[]): Marker[] {
  const out: Marker[] = phases.filter((p) => p.end > p.start).map((p) => ({ lane: phaseLane(p.kind), name: p.name, kind: p.kind, start: p.start, end: p.end, count: null, unit: '' }));
  const load = tables.find((t) => t.name === 'load');
  if (load) out.push(...eventMarkers(load));
  out.push(...agentMarkers(tables, warnings));
  return out;
}

/** The lanes in drawing order (phases, sweep steps, then events as first met). */
export function lanesOf(markers: Marker[]): string[] {
  const lanes: string[] = [];
  for (const m of markers) if (!lanes.includes(m.lane)) lanes.push(m.lane);
  return lanes;
}
