// What a profile's numbers are, and how to write them at a readable scale. The page gets
// the quantity from kiln's model (crates/model Quantity: samples, time with its scale,
// bytes, events, and the CPU time one timer sample stands for); `--countname` overrides
// it. Formatting matches kiln_model::Quantity::format_value: three significant digits.

/** Per-profile metadata the page carries (crates/viewer/src/lib.rs `unit_meta`). */
export interface UnitMeta {
  /** kiln's WeightUnit name: samples, period, ns, us, bytes, events. */
  unit?: string;
  event?: string;
  quantity?: string | null;
  nsPerUnit?: number | null;
  samplePeriodNs?: number | null;
  countName?: string | null;
}

export type UnitKind = 'samples' | 'time' | 'bytes' | 'count';

/** 1234567 as 1,234,567 (by hand: toLocaleString's first call loads locale data). */
export function thousands(n: number): string {
  const r = Math.round(n);
  if (!Number.isFinite(r)) return String(r);
  const d = String(Math.abs(r));
  let out = '';
  for (let i = 0; i < d.length; i++) {
    if (i > 0 && (d.length - i) % 3 === 0) out += ',';
    out += d[i];
  }
  return r < 0 ? `-${out}` : out;
}

/** Three significant digits below 1,000 (1.20, 12.3, 123), whole numbers above. */
export function threeDigits(v: number): string {
  const a = Math.abs(v);
  if (a >= 999.5) return (v < 0 ? '-' : '') + thousands(a);
  return v.toFixed(a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2);
}

/** 12 ns, 1.50 µs, 850 ms, 1.20 s, 1,234 s. */
export function formatNs(ns: number): string {
  const a = Math.abs(ns);
  if (a < 1e3) return `${Math.round(ns)} ns`;
  if (a < 1e6) return `${threeDigits(ns / 1e3)} µs`;
  if (a < 1e9) return `${threeDigits(ns / 1e6)} ms`;
  return `${threeDigits(ns / 1e9)} s`;
}

/**
 * An instant on a time axis in seconds, with as many decimals as `resolutionNs` needs to
 * tell neighbours apart: formatInstant(12_503_100_000, 1e6) is `12.503 s`, and at any zoom
 * two ticks or a box's start and end never read the same.
 */
export function formatInstant(ns: number, resolutionNs = 1e9): string {
  const r = Math.max(1, Math.abs(resolutionNs));
  const decimals = Math.min(9, Math.max(0, Math.ceil(-Math.log10(r / 1e9) - 1e-9)));
  const s = (ns / 1e9).toFixed(decimals);
  // No "-0 s".
  return `${/^-0(\.0*)?$/.test(s) ? s.slice(1) : s} s`;
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** 512 B, 1.50 KiB, 3.20 MiB. */
export function formatBytes(b: number): string {
  let v = b;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < BYTE_UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${Math.round(b)} B` : `${threeDigits(v)} ${BYTE_UNITS[i]}`;
}

/** A `--countname` that names a unit of time or size: its scale. */
function parseCountName(name: string): { kind: 'time' | 'bytes'; scale: number } | null {
  const n = name.trim();
  const time: Record<string, number> = {
    ns: 1, nsec: 1, nsecs: 1, nanoseconds: 1,
    us: 1e3, 'µs': 1e3, usec: 1e3, usecs: 1e3, microseconds: 1e3,
    ms: 1e6, msec: 1e6, msecs: 1e6, milliseconds: 1e6,
    s: 1e9, sec: 1e9, secs: 1e9, seconds: 1e9,
  };
  const bytes: Record<string, number> = { b: 1, bytes: 1, byte: 1, kib: 1024, kb: 1024, kbytes: 1024, mib: 1 << 20, mb: 1 << 20 };
  const lower = n.toLowerCase();
  if (n in time) return { kind: 'time', scale: time[n] };
  if (lower in time && lower !== 'ms' && lower !== 's') return { kind: 'time', scale: time[lower] };
  if (lower in bytes) return { kind: 'bytes', scale: bytes[lower] };
  return null;
}

/** What a profile's weights are and how to write them. */
export class Unit {
  constructor(
    readonly kind: UnitKind,
    /** ns per unit of weight (time), bytes per unit (bytes), else 1. */
    readonly scale: number,
    /** What counts are called ("samples", "events", "calls", "page-faults"). */
    readonly name: string,
    /** CPU time one sample stands for (samples of a timer), else null. */
    readonly periodNs: number | null,
    /** The measured event ("cpu-clock", "offcpu", ""). */
    readonly event: string,
    /**
     * Whether the page knows how many samples each weight stands for. Folded input has
     * only weights: when `--countname` says they are not samples, there is no count.
     */
    readonly samplesKnown = true,
  ) {}

  static of(m: UnitMeta): Unit {
    const event = m.event ?? '';
    const cn = m.countName?.trim();
    if (cn) {
      const p = parseCountName(cn);
      const known = m.quantity !== 'samples' && m.quantity !== undefined && m.quantity !== null;
      if (p) return new Unit(p.kind, p.scale, cn, null, event, known);
      if (cn === 'samples') return new Unit('samples', 1, cn, null, event);
      return new Unit('count', 1, cn, null, event, known);
    }
    let q = m.quantity ?? null;
    let nsPerUnit = m.nsPerUnit ?? null;
    if (!q) {
      // Pages without a quantity: from the weight unit's name alone.
      const u = m.unit ?? 'samples';
      if (u === 'ns' || u === 'us') [q, nsPerUnit] = ['time', u === 'us' ? 1e3 : 1];
      else if (u === 'bytes') q = 'bytes';
      else if (u === 'samples') q = 'samples';
      else q = 'events';
    }
    switch (q) {
      case 'time':
        return new Unit('time', nsPerUnit && nsPerUnit > 0 ? nsPerUnit : 1, 'ns', null, event);
      case 'bytes':
        return new Unit('bytes', 1, 'bytes', null, event);
      case 'samples': {
        const p = m.samplePeriodNs && m.samplePeriodNs > 0 ? m.samplePeriodNs : null;
        return new Unit('samples', 1, 'samples', p, event);
      }
      default:
        return new Unit('count', 1, /^[a-z][a-z-]*$/.test(event) ? event : 'events', null, event);
    }
  }

  /** Whether weights can be read as time (time itself, or timer samples). */
  get isTime(): boolean {
    return this.kind === 'time' || this.periodNs !== null;
  }

  /** Weight `w` in nanoseconds, when it is time. */
  ns(w: number): number {
    return this.kind === 'time' ? w * this.scale : w * (this.periodNs ?? 0);
  }

  /** A weight as the reader should see it: 1.20 s, 3.50 MiB, 1,234 samples. */
  format(w: number): string {
    if (this.kind === 'time' || this.periodNs !== null) return formatNs(this.ns(w));
    if (this.kind === 'bytes') return formatBytes(w * this.scale);
    return `${thousands(w)} ${this.name}`;
  }

  /** A signed change of weight: +1.20 s, −3 samples. */
  formatDelta(d: number): string {
    return (d > 0 ? '+' : d < 0 ? '−' : '±') + this.format(Math.abs(d));
  }

  /** A number of samples. */
  formatSamples(n: number): string {
    return `${thousands(n)} sample${Math.round(n) === 1 ? '' : 's'}`;
  }

  /** What a total of this unit is, for headings: "CPU time", "off-CPU time", "bytes". */
  get what(): string {
    const ev = this.event.toLowerCase();
    if (this.isTime) {
      if (ev.includes('offcpu') || ev.includes('off-cpu') || ev.includes('sched_switch')) return 'off-CPU time';
      if (ev.includes('clock') || ev === 'cpu' || this.periodNs !== null) return 'CPU time';
      return 'time';
    }
    if (this.kind === 'bytes') return 'bytes';
    return this.name;
  }

  /** Whether the weights are samples themselves (so a separate sample count says nothing new). */
  get countsSamples(): boolean {
    return this.kind === 'samples' && this.periodNs === null;
  }
}
