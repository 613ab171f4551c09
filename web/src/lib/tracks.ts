// The tracks of a profile (DOM-free), as the Firefox Profiler's track list has them: one
// per thread group, each opening onto one per thread. Threads are grouped as kiln groups
// them everywhere else (profile.ts `threadGroupName`, kiln's `merge_name`), so a group's
// track and its root in "Threads by name" carry one name.
// A selection of tracks is a set of threads: a group's track stands for all its threads.
import { RawProfile, threadGroupName } from './profile.js';

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
