// What the load did, as markers on the page's time axis (DOM-free; Firefox Profiler's
// marker chart). The markers themselves are the run's, computed once by crates/report's
// `markers` (the run's phases, each run of seconds a flow-control flag was on or an event
// counter counted, agents that stopped early) for the page and the Firefox Profiler
// export alike; times are ns since the page's origin.

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

/** The lanes in drawing order (phases, sweep steps, then events as first met). */
export function lanesOf(markers: Marker[]): string[] {
  const lanes: string[] = [];
  for (const m of markers) if (!lanes.includes(m.lane)) lanes.push(m.lane);
  return lanes;
}
