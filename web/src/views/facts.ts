// What the viewer says in words about the samples it shows: the header's facts (weight,
// samples, duration, each of the window beside the profile's) and, when nothing is left
// to draw, why.
import { Model } from '../app-state/model.js';
import { ViewState } from '../app-state/state.js';
import { timeSpan } from '../lib/timeline.js';
import { formatInstant, formatNs, thousands } from '../lib/units.js';
import { setText } from './dom.js';

type Totals = ReturnType<Model['totals']>;

/** The shown weight beside the profile's (`whole`: nothing removes any sample). */
export function totalText(u: Model['unit'], all: Totals, shown: { weight: number }, whole: boolean): string {
  const w = u.countsSamples ? thousands(shown.weight) : u.format(shown.weight);
  const of = u.countsSamples ? u.formatSamples(all.weight) : u.format(all.weight);
  return whole ? (u.countsSamples ? of : `${of}${u.isTime ? ` of ${u.what}` : ''}`) : `${w} of ${of}${u.isTime ? ` of ${u.what}` : ''}`;
}

/** The shown samples beside the profile's, and the sampling period when there is one. */
export function samplesText(u: Model['unit'], all: Totals, shown: { samples: number }, whole: boolean): string {
  let t = whole ? u.formatSamples(all.samples) : `${thousands(shown.samples)} of ${u.formatSamples(all.samples)}`;
  if (u.periodNs) t += ` (one per ${formatNs(u.periodNs)} of CPU, ${thousands(1e9 / u.periodNs)} Hz)`;
  return t;
}

/** The window's length and bounds on the page's clock (`shift` added) beside the profile's duration. */
export function durationText(r: [number, number] | null, shift: number, durationNs: number): string {
  return r ? `${formatNs(r[1] - r[0])} window (${formatInstant(r[0] + shift, 1e8)} – ${formatInstant(r[1] + shift, 1e8)}) of ${formatNs(durationNs)}` : formatNs(durationNs);
}

/**
 * The header's figures for what is shown: the window's beside the whole profile's. `shown`:
 * the weight and samples the views show (asked only when something removes samples).
 */
export function showFacts(ctrl: Record<string, HTMLElement>, m: Model, s: ViewState, shift: number, shown: () => { weight: number; samples: number }): void {
  if (m.isDiff) return;
  const all = m.totals();
  const whole = !s.range && !s.hidden.length && !s.transforms.length;
  const now = whole ? { weight: all.weight, samples: all.samples } : shown();
  const total = ctrl['fact-total-0'];
  if (total) setText(total, totalText(m.unit, all, now, whole));
  const samples = ctrl['fact-samples-0'];
  if (samples) setText(samples, samplesText(m.unit, all, now, whole));
  const dur = ctrl['fact-duration-0'];
  if (dur && all.durationNs !== null) setText(dur, durationText(s.range, shift, all.durationNs));
}

/**
 * What the page says when there is nothing to draw: the profile has no sample, the
 * window holds none, or the hidden threads and transforms leave none — and why; '' when
 * there is something. `total` is the shown weight (null: the flame chart, which counts its
 * own); `inWindow` counts the window's samples (a pass over every sample: called only when
 * nothing is shown).
 */
export function emptyText(m: Model, s: ViewState, total: number | null, inWindowCount: () => number, shift: number): string {
  const all = m.totals();
  const what = (where: string): string => {
    const ev = m.unit.event ?? '';
    if (/off-?cpu|sched_switch/i.test(ev)) return `no thread of the target was off CPU ${where} (it never blocked, or nothing was recorded)`;
    if (m.unit.periodNs || /cpu|clock|cycles/i.test(ev)) return `the target did not run on a CPU ${where} (an idle or stopped process)`;
    return `no event of this kind happened ${where}`;
  };
  if (all.samples === 0) return `No samples in this profile: ${what('while it was recorded')}.`;
  if (!(total === null ? s.range !== null : !(total > 0))) return '';
  const inWindow = s.range ? inWindowCount() : all.samples;
  const r = s.range;
  if (r && inWindow === 0) {
    const span = timeSpan(m.raw, m.nsPerWeight);
    const at = (t: number): string => formatInstant(t + shift, 1e8);
    return `No samples in this window (${at(r[0])} – ${at(r[1])}): ${what('in these seconds')}.${span ? ` The profile's samples lie between ${at(span[0])} and ${at(span[1])}.` : ''}`;
  }
  if (total !== null && !(total > 0)) {
    const why = [s.hidden.length ? `the tracks selected (${s.hidden.length} thread${s.hidden.length === 1 ? '' : 's'} left out; h: to the tracks)` : '', s.transforms.length ? 'the transforms (u undoes the last)' : ''].filter(Boolean).join(' and ');
    return `No samples left: none of the ${thousands(inWindow)} samples ${r ? 'of this window' : 'of the profile'} remain after ${why || 'this view'}.`;
  }
  return '';
}
