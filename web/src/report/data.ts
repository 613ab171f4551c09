// What the report page carries (crates/report/src/run.rs and compare.rs write it): the
// run's metadata, formatted headline figures, its per-second series (columnar, uPlot's
// layout), sweep steps, latency distributions, CPU by category, and the flame graphs'
// keys. Times are ns relative to the page's origin (the start of the measurement).
import type { Marker } from './lib/markers.js';

export interface Column {
  name: string;
  unit: string;
  values: (number | null)[];
}

export interface Table {
  name: string;
  /** End of each interval, ns since the origin. */
  time: number[];
  columns: Column[];
}

export interface Span {
  name: string;
  start: number;
  end: number;
  /** What of it the recording holds when it reaches outside it (a sweep step begun in the warm-up). */
  note?: string | null;
}

export interface Fact {
  key: string;
  label: string;
  value: string;
}

export interface Figure {
  key: string;
  label: string;
  value: number;
  unit: string;
  text: string;
  detail?: string;
}

export interface Percentiles {
  p50: number;
  p99: number;
  p999: number;
  max: number;
  count: number;
}

export interface SweepPoint {
  name: string;
  value: number | null;
  start: number;
  end: number;
  throughput: number | null;
  latency: Percentiles | null;
  intended: Percentiles | null;
  target_cpu: number | null;
}

export interface Sweep {
  param: string;
  points: SweepPoint[];
}

export interface KneeStep {
  name: string;
  start: number;
  end: number;
  attempted: number | null;
  achieved: number | null;
  /** `held`, `not held (−20%)`, or null without a set rate. */
  held: string | null;
  p50_us: number | null;
  p99_us: number | null;
  cpu_per_op_us: number | null;
}

/** A sweep's steps, its knee and the before/after comparison (kiln_run::sweep). */
export interface Knee {
  steps: KneeStep[];
  knee: number | null;
  finding: string;
  diff: { key: string; title: string; line: string | null } | null;
}

export interface Distribution {
  name: string;
  group: number;
  intended: boolean;
  count: number;
  /** (percentile 0–100, value µs) */
  points: [number, number][];
  max: number;
}

/** Per-second latency histograms (crates/report/src/latency.rs `PerSecond`). */
export interface LatencySeconds {
  name: string;
  /** End of each second, ns since the origin (the load series' times). */
  time: number[];
  /** Per second: pairs of (index into `values` as the difference from the previous pair's, count). */
  counts: number[][];
}

export interface PerSecond {
  /** Bucket values, µs, ascending: what HdrHistogram answers for a quantile in the bucket. */
  values: number[];
  series: LatencySeconds[];
}

export interface CategorySeries {
  event: string;
  unit: string;
  names: string[];
  /** Interval edges, ns since the origin: interval i is [edges[i], edges[i + 1]). */
  edges: number[];
  values: number[][];
  shares: number[];
  outside: number;
  untimed: number;
}

export interface ProfileInfo {
  key: string;
  event: string;
  samples: number;
  title: string;
  /** Where a profile not recorded by kiln came from (the target's own pprof), or null. */
  origin: string | null;
}

/** One piece of a finding's evidence (crates/findings): where to look, with what it says. */
export interface FindingEvidence {
  what: string;
  value: string;
  source: string;
  /** Seconds on the page's clock (0: the measurement's start) the evidence covers. */
  from_s?: number | null;
  to_s?: number | null;
  /** A series to show: "table/column". */
  series?: string | null;
  /** The profile (its event) whose flame graph shows it. */
  profile?: string | null;
  /** The function to find in that flame graph. */
  focus?: string | null;
}

/** A finding of the run (crates/findings, ranked by Rust for the page's window). */
export interface Finding {
  rule: string;
  class: string;
  title: string;
  claim: string;
  explains: { pct: number; of: string } | null;
  evidence: FindingEvidence[];
  check: string;
  score: number;
}

/**
 * The names of the tables and columns of a run's series that the pages read, as kiln
 * writes them (crates/store/src/columns.rs, sent with the data: crates/report/src/run.rs
 * `ColumnNames`), so that no page spells one of its own.
 */
export interface ColumnNames {
  load: string;
  target: string;
  machine: string;
  kiln: string;
  cpu_user: string;
  cpu_system: string;
  rss: string;
  /** A JVM target's heap, old generation and its most, by its own counters (absent before 0.5). */
  jvm_heap_used?: string;
  jvm_old_used?: string;
  jvm_old_max?: string;
  threads: string;
  voluntary: string;
  involuntary: string;
  open_files: string;
  sockets: string;
  busy: string;
  kiln_cpu: string;
  load_command_cpu: string;
  sent: string;
  connected: string;
  dropped: string;
  queue_depth: string;
  /** The target's waits for a CPU: all its threads', its first thread's (an event loop's), its CPU quota's (absent before 0.6). */
  runnable?: string;
  main_runnable?: string;
  throttled?: string;
  /** The CPU of the processes the target started, and of its own copies that ended under a second old. */
  children_cpu?: string;
  young_copies_cpu?: string;
  /** Its threads blocked per reason (`waiting:disk`), and each thread group's busiest thread (`busiest thread:pool`). */
  waiting?: string;
  busiest?: string;
  /** What joins a per-group column and its group (`cpu user:scheduler`). */
  group_separator: string;
  /** What joins a table and the other host it is of (`target@db1`). */
  host_separator: string;
}

export interface RunPage {
  /** What the run's data says went wrong or limited it, most important first (absent: not computed). */
  findings?: Finding[];
  /** The names of the series, as kiln writes them. */
  columns: ColumnNames;
  name: string;
  id: number | null;
  complete: boolean;
  reason: string | null;
  note: string | null;
  tags: [string, string][];
  facts: Fact[];
  figures: Figure[];
  warnings: string[];
  unit: string;
  latency: string | null;
  cpus: number;
  measure: Span;
  windows: Span[];
  tables: Table[];
  sweep: Sweep | null;
  knee: Knee | null;
  distributions: Distribution[];
  /** Every latency's per-second histograms; empty for runs stored without them. */
  latency_seconds: PerSecond;
  /** The load column counting completed operations (`received`), when there is one. */
  completed: string | null;
  categories: CategorySeries[];
  profiles: ProfileInfo[];
  /** The run's markers: its phases, then what the load did (crates/report `markers`). */
  markers: Marker[];
  /** The BEAM's scheduler states as `kiln runs show` prints them (crates/report/src/run.rs `BeamPage`). */
  beam?: BeamPage | null;
  /** kiln's eBPF CPU per second of the run's seconds (% of one CPU), as `kiln runs show RUN@A-B` sums it. */
  ebpf?: Table | null;
}

/** The BEAM's scheduler states, computed by Rust for the measurement and windows of the run's seconds. */
export interface BeamPage {
  /** The run's seconds' ends, ns since the origin. */
  time: number[];
  /** Windows' ends are multiples of this many seconds (or the last second). */
  step: number;
  /** The measurement's line (the run's headline). */
  whole: string;
  /** [first second, end second, line] of the seconds first..end. */
  windows: [number, number, string][];
}

/** The rules, the runs' comparability and their pairing by round (crates/report/src/compare.rs `Judging`). */
export interface Judging {
  alpha: number;
  threshold_pct: number;
  not_comparable: string | null;
  /** Per group: its runs paired with the first group's by round, or null. */
  paired: ({ experiment: string; pairs: [number, number][] } | null)[];
  /** Per group: why its variants' rounds do not pair, or null. */
  unmatched: (string | null)[];
}

export interface RunRef {
  id: number | null;
  name: string;
  started: string;
  note: string | null;
  tags: [string, string][];
  complete: boolean;
  reason: string | null;
  load: string;
  target: string;
}

export interface Cell {
  /** The median (with the range), and for a set rate whether it was held. */
  text: string;
  median: number;
  min: number;
  max: number;
  n: number;
  /** Each run's own value, in the group's order (the figures table's format); absent in pages written before it. */
  each?: string[];
  /** `held`, `not held (−12%)`, or null. */
  held: string | null;
}

export interface ChangeCell {
  percent: number;
  text: string;
  /** `shown` for settings and context: never judged. */
  verdict: 'improved' | 'regressed' | 'no_change' | 'cannot_tell' | 'shown';
  verdict_text: string;
}

export interface MetricRow {
  key: string;
  label: string;
  unit: string;
  better: 'higher' | 'lower';
  role: 'setting' | 'outcome' | 'context';
  why: string | null;
  noise: string | null;
  cells: (Cell | null)[];
  changes: (ChangeCell | null)[];
}

export interface RunSeries {
  group: number;
  /** The rate the load was set to, per second. */
  rate: number | null;
  concurrency: number | null;
  /** The load column a window's operations are counted in, as `kiln compare NAME@START-END` counts them. */
  counted: string | null;
  /** The run's per-second latency histograms: a window's percentiles. */
  latency_seconds: PerSecond;
  id: number | null;
  index: number;
  tables: Table[];
  measure_end: number;
  unit: string;
  completed: string | null;
  latency: string | null;
  cpus: number;
  /** kiln's eBPF CPU over the run's seconds (% of one CPU), when it measured it (crates/report/src/run.rs `bpf_table`). */
  ebpf?: Table | null;
  /** The BEAM's schedulers' weight by state per second, when the target is a BEAM (crates/report/src/compare.rs `BeamSeconds`). */
  beam?: BeamSeconds | null;
}

/** The BEAM's schedulers' weight by state (emulator, port, gc, check_io, aux, other, sleep) in each second of the run. */
export interface BeamSeconds {
  /** The seconds' ends, ns since the run's start of measurement. */
  time: number[];
  cpu: number[][];
  blocked: number[][];
  runnable: number[][];
  /** ns per unit of CPU weight. */
  cpu_ns: number;
  /** ns per unit of off-CPU and of runnable weight; null: the shares are of CPU time. */
  wall_ns: [number, number] | null;
}

export interface FunctionRow {
  name: string;
  before: string;
  after: string;
  delta: number;
  verdict: 'improved' | 'regressed' | 'no_change' | 'cannot_tell';
  change: string;
  total_before: number;
  total_after: number;
}

export interface FunctionTable {
  event: string;
  unit: string;
  what: string;
  rows: FunctionRow[];
}

export interface ComparePage {
  /** What a window's verdicts are decided by (lib/verdict.ts). */
  judging: Judging;
  overall: 'improved' | 'regressed' | 'mixed' | 'no_change' | 'cannot_tell';
  overall_line: string;
  groups: { label: string; runs: RunRef[] }[];
  metrics: MetricRow[];
  notes: string[];
  distributions: Distribution[];
  series: RunSeries[];
  functions: FunctionTable[];
  /**
   * The differential flame graph. `windows_below_ns`, when set: its samples are timed in ns
   * from the start of their run's measurement, so that it shows a window of whole seconds
   * starting before it (the shortest measurement's length); null: the whole measurements only.
   */
  diff: { key: string; event: string; title: string; marked: boolean; windows_below_ns?: number | null } | null;
  /** The names of the series, as kiln writes them. */
  columns: ColumnNames;
  /** Each window of whole seconds (from the start of each measurement): its function tables and what moved in its profile, as kiln compare NAME@START-END computes them. */
  windows?: CompareWindow[];
}

export interface CompareWindow {
  start: number;
  end: number;
  functions: FunctionTable[];
  moved: string | null;
  quiet: string | null;
}

/** `kiln runs trend NAME -o trend.html`: crates/compare/src/trend (its JSON, as `--format json`). */
export interface TrendShift {
  index: number;
  run: number;
  started_unix_ms: number;
  before: number;
  after: number;
  percent: number;
  p: number;
  verdict: string;
  functions: { name: string; before_pct: number; after_pct: number; points: number; cost_pct: number; verdict: string }[];
  /** The machine's other work changed with it (CPUs busy, medians of the runs either side). */
  machine?: { before_cpus: number; after_cpus: number };
}

export interface TrendSeries {
  key: string;
  label: string;
  unit: string;
  better: string;
  values: (number | null)[];
  segments: { first: number; runs: number; median: number }[];
  change_points: TrendShift[];
  below_threshold: number;
}

export interface TrendConfiguration {
  configuration: string;
  runs: { id: number; started_unix_ms: number; group: string }[];
  figures: TrendSeries[];
}

export interface TrendPage {
  name: string;
  method: { name: string; alpha: number; permutations: number; min_segment: number; threshold_pct: number };
  configurations: TrendConfiguration[];
  /** Absent without --fail-if. */
  gates?: { condition: string; status: string; message: string }[];
  /** The differential flame graphs of the runs either side of change points (none when no profile was read). */
  diffs?: TrendDiff[];
  /** The runs left out (incomplete, damaged, other configurations, untagged), as the text output says them. */
  left_out_text?: string | null;
}

/** A differential flame graph of the trend page: each side's runs merged (crates/report/src/trend.rs). */
export interface TrendDiff {
  /** Its viewer's key (the mount's `data-kiln-mount`). */
  key: string;
  /** Index of its configuration. */
  config: number;
  event: string;
  title: string;
  /** Ids of the runs before and after. */
  before: number[];
  after: number[];
  /** The change points it belongs to: [figure key, first run after it]. */
  points: [string, number][];
  /** Whether only the functions beyond noise are coloured. */
  marked: boolean;
}

export interface ReportData {
  kind: 'run' | 'compare' | 'trend';
  version: number;
  title: string;
  /** The page's origin on the profiles' clock (CLOCK_MONOTONIC ns). */
  origin: number;
  run?: RunPage;
  compare?: ComparePage;
  trend?: TrendPage;
}
