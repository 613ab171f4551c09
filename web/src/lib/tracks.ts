// The tracks of a profile (DOM-free), as the Firefox Profiler's track list has them: one
// per thread group, each opening onto one per thread. Threads are grouped as kiln groups
// them everywhere else (profile.ts `threadGroupName`, kiln's `merge_name`), so a group's
// track and its root in "Threads by name" carry one name.
// A selection of tracks is a set of threads: a group's track stands for all its threads.
import { RawProfile, threadGroupName } from './profile.js';
import { Histogram } from './timeline.js';
import { Unit, formatInstant, formatNs } from './units.js';

export interface TrackGroup {
  name: string;
  /** Thread indices, most samples first. */
  threads: number[];
  /** Samples of the whole profile. */
  samples: number;
}

/** Samples of each thread in the whole profile. */
export function threadSamples(raw: RawProfile): Float64Array {
  const nT = raw.threadName.length;
  const perThread = new Float64Array(nT);
  const th = raw.sampleThread;
  if (th) {
    const c = raw.sampleCount;
    for (let i = 0; i < th.length; i++) if (th[i] >= 0 && th[i] < nT) perThread[th[i]] += c ? c[i] : 1;
  }
  return perThread;
}

/** The profile's thread groups, most samples first (ties: first seen first). */
export function trackGroups(raw: RawProfile, perThread: Float64Array = threadSamples(raw)): TrackGroup[] {
  const nT = raw.threadName.length;
  const byName = new Map<string, TrackGroup>();
  for (let t = 0; t < nT; t++) {
    const name = threadGroupName(raw.strings[raw.threadName[t]] ?? '');
    let g = byName.get(name);
    if (!g) byName.set(name, (g = { name, threads: [], samples: 0 }));
    g.threads.push(t);
    g.samples += perThread[t];
  }
  const groups = [...byName.values()];
  for (const g of groups) g.threads.sort((a, b) => perThread[b] - perThread[a] || a - b);
  // A stable sort keeps first-seen order among equals.
  return groups.sort((a, b) => b.samples - a.samples);
}

/** Each thread's group (index into `groups`), -1 for none. */
export function groupOf(groups: TrackGroup[], nThreads: number): Int32Array {
  const out = new Int32Array(nThreads).fill(-1);
  groups.forEach((g, i) => {
    for (const t of g.threads) out[t] = i;
  });
  return out;
}

/**
 * The selection after a click on a track standing for `threads`: a plain click selects
 * the track alone; `add` (ctrl/cmd-click) adds it, or takes it out when it is wholly
 * selected already (never leaving nothing selected). `current` empty: every thread.
 */
export function selectTracks(current: readonly number[], threads: readonly number[], add: boolean): number[] {
  const sorted = (s: Iterable<number>): number[] => [...new Set(s)].sort((a, b) => a - b);
  if (!add || current.length === 0) return sorted(threads);
  const cur = new Set(current);
  if (threads.every((t) => cur.has(t))) {
    for (const t of threads) cur.delete(t);
    return cur.size ? sorted(cur) : sorted(current);
  }
  for (const t of threads) cur.add(t);
  return sorted(cur);
}

/** Whether every thread of a track is in the selection (empty: every thread is). */
export function isSelected(selection: readonly number[], threads: readonly number[]): boolean {
  if (!selection.length) return false;
  const s = new Set(selection);
  return threads.length > 0 && threads.every((t) => s.has(t));
}

/**
 * What a track's height measures: CPU time in CPUs, time blocked (an off-CPU profile) or
 * other time as a share of its threads' wall time, or (weights that are not time: bytes,
 * events, samples without a period) the weight itself.
 */
export type ActivityKind = 'cpu' | 'blocked' | 'time' | 'weight';

/** What the activity of a profile whose weights are `unit` measures. */
export function activityKind(unit: Unit): ActivityKind {
  if (!unit.isTime) return 'weight';
  return unit.what === 'CPU time' ? 'cpu' : unit.what === 'off-CPU time' ? 'blocked' : 'time';
}

/** A track's activity in each bucket of the time axis. */
export interface Activity {
  kind: ActivityKind;
  /**
   * Per bucket: for 'cpu' the CPUs used (CPU time over the bucket's length: 1 is a whole
   * CPU, a group of threads can use several); for 'blocked' and 'time' the share of the
   * track's threads' wall time (1: every thread all along); for 'weight' the weight.
   */
  own: Float64Array;
  /** Per bucket, ns of `own` (0 for 'weight'). */
  ownNs: Float64Array;
  /**
   * Another profile's time blocked, per bucket, as a share of the track's threads' wall
   * time (1: every thread blocked all along), drawn down from the top on its own scale;
   * null without.
   */
  off: Float64Array | null;
  offNs: Float64Array | null;
  /**
   * The value drawn at the track's full height: for 'cpu' 1 CPU unless the track used
   * more, then its busiest bucket, at most one CPU per thread and at most the machine's
   * CPUs (more in a bucket is sampling jitter, clipped); 1 for shares of the wall time;
   * for 'weight' its busiest bucket.
   */
  top: number;
  /** The track's threads (the wall time blocked time is a share of). */
  threads: number;
  /** The buckets' span (ns since the profile's origin) and length. */
  from: number;
  bucketNs: number;
}

/**
 * The activity of a track of `threads` threads from its histogram over the time axis
 * (`own`, in the profile's weight; `nsPerWeight`: ns one unit of weight stands for, the
 * sampling period for timer samples, 0 when weights are not time) and another profile's
 * time blocked (`off`, in ns over the same buckets); `cpus`: the machine's CPUs (0:
 * unknown). A bucket of 10 ms holding 4 samples of a 1 ms timer is 0.40 CPU.
 */
export function activity(kind: ActivityKind, own: Histogram, off: Histogram | null, nsPerWeight: number, threads: number, cpus = 0): Activity {
  const n = own.buckets.length;
  const bucketNs = (own.to - own.from) / Math.max(1, n);
  const isTime = kind !== 'weight' && nsPerWeight > 0 && bucketNs > 0;
  const wall = bucketNs * Math.max(1, threads);
  const ownNs = new Float64Array(n);
  const share = new Float64Array(n);
  const offNs = isTime && off ? new Float64Array(n) : null;
  const offShare = offNs ? new Float64Array(n) : null;
  let top = 0;
  for (let k = 0; k < n; k++) {
    if (!isTime) {
      share[k] = own.buckets[k];
      top = Math.max(top, share[k]);
      continue;
    }
    ownNs[k] = own.buckets[k] * nsPerWeight;
    share[k] = ownNs[k] / (kind === 'cpu' ? bucketNs : wall);
    if (offNs && offShare && off) {
      offNs[k] = off.buckets[k] ?? 0;
      offShare[k] = offNs[k] / wall;
    }
    top = Math.max(top, share[k]);
  }
  const most = Math.max(1, cpus > 0 ? Math.min(threads, cpus) : threads);
  const full = !isTime ? top : kind === 'cpu' ? Math.min(most, Math.max(1, top)) : 1;
  return { kind: isTime ? kind : 'weight', own: share, ownNs, off: offShare, offNs, top: full, threads: Math.max(1, threads), from: own.from, bucketNs };
}

/** CPUs used: "0.34 CPU", "1 CPU", "2.30 CPUs". */
export function cpusText(x: number): string {
  if (x === 1) return '1 CPU';
  return `${(Math.round(x * 100) / 100).toFixed(2)} ${x > 1 ? 'CPUs' : 'CPU'}`;
}

/** The wall time a share of a track's time is of: "the time", "3 threads' time". */
function wallOf(a: Activity): string {
  return a.threads > 1 ? `${a.threads} threads' time` : 'the time';
}

/** A share as a percentage: 34%, 4.5%, <0.1%, 0%. */
export function percent(share: number): string {
  const p = share * 100;
  if (p <= 0) return '0%';
  if (p < 0.1) return '<0.1%';
  return p < 9.95 ? `${p.toFixed(1)}%` : `${Math.round(p)}%`;
}

/** What the full height of a track stands for: "1 CPU", "2.30 CPUs", "100% of the time". */
export function fullHeight(a: Activity): string {
  if (a.kind === 'weight') return '';
  if (a.kind === 'cpu') return cpusText(a.top);
  return `${percent(a.top)} of ${wallOf(a)}`;
}

/**
 * Bucket k of a track as its tooltip says it: "0.34 CPU, 12 ms at 1.20 s", "blocked 80% of
 * the time, 40 ms at 1.20 s"; with the time blocked beside, both ("…; blocked 50% of 3
 * threads' time, 18 ms"). `shift` is added to times to read them on the page's clock;
 * `format` writes a weight.
 */
export function describeBucket(a: Activity, k: number, shift: number, format: (w: number) => string): string {
  const at = ` at ${formatInstant(a.from + k * a.bucketNs + shift, a.bucketNs)}`;
  if (a.kind === 'weight') return `${format(a.own[k])}${at}`;
  const own = a.kind === 'cpu' ? `${cpusText(a.own[k])}, ${formatNs(a.ownNs[k])}` : `${percent(a.own[k])} of ${wallOf(a)}, ${formatNs(a.ownNs[k])}`;
  const lead = a.kind === 'blocked' ? `blocked ${own}` : own;
  const off = a.off && a.offNs ? `; blocked ${percent(a.off[k])} of ${wallOf(a)}, ${formatNs(a.offNs[k])}` : '';
  return `${lead}${off}${at}`;
}
