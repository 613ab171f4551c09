// The time-ordered view (a flame chart, as the Firefox Profiler's stack chart and
// speedscope's time-ordered view): per thread, time on the x axis, each sample's stack
// drawn where it happened, consecutive samples with the same frame at the same depth
// merged into one box. DOM-free; the renderer draws it with the same culling as the flame
// graph (binary search per row, sub-pixel runs merged).
import { RawProfile } from './profile.js';

/** One row (depth) of a lane: boxes in time order, never overlapping. */
export interface ChartRow {
  start: Float64Array;
  end: Float64Array;
  /** Node of the chart's tree (a transformed stack). */
  node: Int32Array;
  /** Samples merged into the box. */
  count: Uint32Array;
  length: number;
}

/** One thread. */
export interface Lane {
  name: string;
  /** Thread index in the profile, -1 for samples without a thread. */
  thread: number;
  rows: ChartRow[];
  samples: number;
}

export interface FlameChart {
  lanes: Lane[];
  /** The tree the boxes' nodes belong to. */
  parent: Int32Array;
  frame: Int32Array;
  /** Time covered by the boxes, ns since the profile's origin. */
  span: [number, number];
  /** Samples without a timestamp (not drawn), and samples a transform dropped. */
  untimed: number;
  dropped: number;
}

export interface ChartOptions {
  /** ns per unit of weight when weights are time (off-CPU blocks, perf clock periods):
   *  a sample then covers [t, t + weight]. */
  nsPerWeight: number | null;
  /** CPU time one sample stands for (timer samples), when known. */
  periodNs: number | null;
}

/** Grows typed columns while boxes are appended. */
class RowBuilder {
  start = new Float64Array(64);
  end = new Float64Array(64);
  node = new Int32Array(64);
  count = new Uint32Array(64);
  length = 0;

  push(s: number, e: number, v: number): void {
    if (this.length === this.start.length) {
      const n = this.length * 2;
      const grow = <T extends Float64Array | Int32Array | Uint32Array>(a: T, b: T): T => (b.set(a), b);
      this.start = grow(this.start, new Float64Array(n));
      this.end = grow(this.end, new Float64Array(n));
      this.node = grow(this.node, new Int32Array(n));
      this.count = grow(this.count, new Uint32Array(n));
    }
    const i = this.length++;
    this.start[i] = s;
    this.end[i] = e;
    this.node[i] = v;
    this.count[i] = 1;
  }

  finish(): ChartRow {
    const n = this.length;
    return { start: this.start.slice(0, n), end: this.end.slice(0, n), node: this.node.slice(0, n), count: this.count.slice(0, n), length: n };
  }
}

function median(xs: Float64Array): number {
  if (xs.length === 0) return 0;
  const s = Float64Array.from(xs).sort();
  return s[s.length >> 1];
}

/**
 * Builds the chart of `raw`'s samples. `stackNode[s]` is the node of the transformed tree
 * for profile stack s (negative: the sample was dropped or lost every frame); the tree is
 * given by `parent` and `frame`, parents before children.
 */
export function buildFlameChart(
  raw: RawProfile,
  stackNode: Int32Array,
  parent: Int32Array,
  frame: Int32Array,
  threadLabel: (t: number) => string,
  opts: ChartOptions,
): FlameChart {
  const time = raw.sampleTime;
  const nSamples = raw.sampleStack.length;
  const lanes: Lane[] = [];
  const chart: FlameChart = { lanes, parent, frame, span: [0, 0], untimed: 0, dropped: 0 };
  if (!time) {
    chart.untimed = nSamples;
    return chart;
  }
  // Depth of each tree node, for path buffers.
  const depth = new Int32Array(parent.length);
  let maxDepth = 0;
  for (let v = 0; v < parent.length; v++) {
    depth[v] = parent[v] < 0 ? 0 : depth[parent[v]] + 1;
    if (depth[v] > maxDepth) maxDepth = depth[v];
  }
  // Samples per thread, in time order (a counting sort by thread, then by time).
  const nT = raw.threadName.length;
  const laneOf = (i: number): number => (raw.sampleThread && raw.sampleThread[i] >= 0 ? raw.sampleThread[i] : nT);
  const perLane = new Uint32Array(nT + 2);
  for (let i = 0; i < nSamples; i++) {
    if (time[i] < 0) chart.untimed++;
    else if (stackNode[raw.sampleStack[i]] < 0) chart.dropped++;
    else perLane[laneOf(i) + 1]++;
  }
  for (let t = 0; t <= nT; t++) perLane[t + 1] += perLane[t];
  const order = new Uint32Array(perLane[nT + 1]);
  const fill = perLane.slice(0, nT + 1);
  for (let i = 0; i < nSamples; i++) if (time[i] >= 0 && stackNode[raw.sampleStack[i]] >= 0) order[fill[laneOf(i)]++] = i;
  let lo = Infinity;
  let hi = -Infinity;
  for (let t = 0; t <= nT; t++) {
    const from = perLane[t];
    const to = perLane[t + 1];
    if (to === from) continue;
    const idx = order.subarray(from, to);
    // Recordings are in time order already; sort only when they are not.
    let sorted = true;
    for (let k = 1; k < idx.length; k++) if (time[idx[k]] < time[idx[k - 1]]) { sorted = false; break; }
    if (!sorted) idx.sort((a, b) => time[a] - time[b] || a - b);
    // How long a sample lasts when the weights do not say: its period, or up to the next
    // sample, at most twice the thread's usual interval (a gap is time the thread was not
    // sampled, not time in its last stack).
    const gaps = new Float64Array(Math.max(0, idx.length - 1));
    for (let k = 1; k < idx.length; k++) gaps[k - 1] = time[idx[k]] - time[idx[k - 1]];
    const usual = opts.periodNs ?? (median(gaps) || 1e6);
    const cap = opts.periodNs ?? 2 * usual;
    const tolerance = 0.5 * usual;
    const rows: RowBuilder[] = [];
    // The boxes the previous sample left open: for depth j < openDepth, the box's index
    // in row j and the ordinal of the sample that opened it. A box's end and count are
    // written when it closes, so a sample whose stack is its predecessor's costs O(1) and
    // any sample costs O(frames that changed), not O(depth).
    const openBox = new Int32Array(maxDepth + 1);
    const openedAt = new Int32Array(maxDepth + 1);
    let openDepth = 0;
    let prevNode = -1;
    let prevEnd = -Infinity;
    const close = (from: number, k: number): void => {
      for (let j = from; j < openDepth; j++) {
        const r = rows[j];
        r.end[openBox[j]] = prevEnd;
        r.count[openBox[j]] = k - openedAt[j];
      }
    };
    for (let k = 0; k < idx.length; k++) {
      const i = idx[k];
      const s = time[i];
      let e: number;
      if (opts.nsPerWeight !== null) e = s + raw.sampleWeight[i] * opts.nsPerWeight;
      else e = s + cap;
      if (k + 1 < idx.length) e = Math.min(e, Math.max(s, time[idx[k + 1]]));
      if (e < s) e = s;
      const v = stackNode[raw.sampleStack[i]];
      const d = depth[v] + 1;
      // Frames shared with the previous sample: the depth of their common ancestor + 1.
      let common = 0;
      if (prevNode >= 0 && s - prevEnd <= tolerance) {
        let a = prevNode;
        let b = v;
        while (depth[a] > depth[b]) a = parent[a];
        while (depth[b] > depth[a]) b = parent[b];
        while (a !== b) {
          a = parent[a];
          b = parent[b];
        }
        common = a < 0 ? 0 : depth[a] + 1;
      }
      close(common, k);
      // New boxes for the frames below the shared ones, deepest first up the parents.
      let u = v;
      for (let j = d - 1; j >= common; j--, u = parent[u]) {
        const r = (rows[j] ??= new RowBuilder());
        openBox[j] = r.length;
        openedAt[j] = k;
        r.push(s, e, u);
      }
      openDepth = d;
      prevNode = v;
      prevEnd = e;
      if (s < lo) lo = s;
      if (e > hi) hi = e;
    }
    close(0, idx.length);
    lanes.push({ name: threadLabel(t < nT ? t : -1), thread: t < nT ? t : -1, rows: rows.map((r) => r.finish()), samples: idx.length });
  }
  // Busiest threads first.
  lanes.sort((a, b) => b.samples - a.samples || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  chart.span = lo <= hi ? [lo, hi] : [0, 0];
  return chart;
}

/** Index of the first box of `row` ending after t (from `from` on). */
export function firstBoxEndingAfter(row: ChartRow, t: number, from = 0): number {
  let lo = from;
  let hi = row.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (row.end[mid] <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The box of a row covering time t, or -1. */
export function boxAt(row: ChartRow | undefined, t: number): number {
  if (!row) return -1;
  const k = firstBoxEndingAfter(row, t);
  return k < row.length && row.start[k] <= t ? k : -1;
}

/** Boxes whose frame matches, lane by lane, each lane's in time order (search steps). */
export function matchingBoxes(chart: FlameChart, match: Uint8Array): { lane: number; depth: number; index: number }[] {
  const boxes: { lane: number; depth: number; index: number; start: number }[] = [];
  chart.lanes.forEach((lane, li) =>
    lane.rows.forEach((row, depth) => {
      for (let k = 0; k < row.length; k++) if (match[chart.frame[row.node[k]]]) boxes.push({ lane: li, depth, index: k, start: row.start[k] });
    }),
  );
  boxes.sort((a, b) => a.lane - b.lane || a.start - b.start || a.depth - b.depth);
  return boxes.map(({ lane, depth, index }) => ({ lane, depth, index }));
}
