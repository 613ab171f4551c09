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

/** A row of the marker chart: its lane, and whether it is the lane's first (labelled). */
export interface MarkerRowSpec {
  lane: string;
  first: boolean;
}

/**
 * The marker chart's rows: each lane (in `lanesOf` order) as many rows as its markers need
 * not to overlap, a marker in the first row of its lane free at its start (markers in
 * start order; touching ends do not overlap). Returns the rows and each marker's row.
 */
export function rowsOf(markers: Marker[]): { rows: MarkerRowSpec[]; rowOf: number[] } {
  const rows: MarkerRowSpec[] = [];
  const rowOf = new Array<number>(markers.length).fill(0);
  for (const lane of lanesOf(markers)) {
    const mine = markers.map((m, i) => i).filter((i) => markers[i].lane === lane);
    mine.sort((a, b) => markers[a].start - markers[b].start || markers[a].end - markers[b].end || a - b);
    const ends: number[] = [];
    const base = rows.length;
    for (const i of mine) {
      const m = markers[i];
      let r = ends.findIndex((e) => e <= m.start);
      if (r < 0) {
        r = ends.length;
        ends.push(m.end);
        rows.push({ lane, first: r === 0 });
      } else ends[r] = m.end;
      rowOf[i] = base + r;
    }
  }
  return { rows, rowOf };
}

/** The markers whose name, lane or detail holds `query` (any case), in start order. */
export function searchMarkers(markers: Marker[], query: string): number[] {
  const q = query.trim().toLowerCase();
  const out = markers.map((_, i) => i).filter((i) => {
    if (!q) return true;
    const m = markers[i];
    return [m.name, m.lane, m.kind, m.detail ?? ''].some((x) => x.toLowerCase().includes(q));
  });
  return out.sort((a, b) => markers[a].start - markers[b].start || a - b);
}
