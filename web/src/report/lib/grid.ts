// What the page shows of a window from the run's seconds as Rust put them on its grid
// (DOM-free; crates/store/src/seconds.rs): the BEAM's scheduler states of the seconds a
// window holds, and what a window reaching outside the recording holds of it.
import { BeamPage, RunPage, Span } from '../data.js';
import { rowsIn } from './intervals.js';

type Window = [number, number];

/**
 * What a window holds of the recording (kiln records the measurement only): a named
 * window's note as Rust wrote it (`kiln runs show RUN@STEP` warns the same), else the same
 * words for a window chosen here; null inside the measurement.
 */
export function recordedPart(r: RunPage, w: Window): string | null {
  const named = r.windows.find((x: Span) => x.start === w[0] && x.end === w[1]);
  if (named) return named.note ?? null;
  const [a, b] = [r.measure.start, r.measure.end];
  if (w[0] >= a && w[1] <= b) return null;
  const covered = Math.max(0, Math.min(w[1], b) - Math.max(w[0], a));
  const s = (ns: number): string => (ns / 1e9).toFixed(1);
  return `the recording covers ${s(covered)} s of this window's ${s(w[1] - w[0])} s (the window runs from ${s(w[0] - a)} s to ${s(w[1] - a)} s of the measurement, which alone was recorded): its profiles, and the figures read from them, hold only those seconds`;
}

/**
 * The BEAM's scheduler states of a window as `kiln runs show RUN@A-B` prints them (Rust
 * computed them for the seconds the window holds); the measurement's without a window.
 */
export function beamText(b: BeamPage, w: Window | null): string {
  const lines = (t: string): string =>
    t
      .split('\n')
      .map((x) => x.trim())
      .filter(Boolean)
      .join('\n');
  if (!w) return lines(b.whole);
  const rows = rowsIn(b.time, w);
  if (!rows.length) return 'BEAM schedulers by state: no second of the run lies in the window';
  const first = rows[0][0];
  const end = rows[rows.length - 1][0] + 1;
  const hit = b.windows.find((x) => x[0] === first && x[1] === end);
  if (hit) return lines(hit[2]);
  return `BEAM schedulers by state: this page keeps them for windows of whole ${b.step}-second steps of the run (kiln runs show NAME@START-END prints them for any window)`;
}

