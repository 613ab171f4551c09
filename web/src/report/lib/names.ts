// Plain-language names of the store's series (DOM-free): what a reader sees, while the
// internal name (`consumer_latency p99`, a truncated thread name such as `dirty_io_sche`)
// stays in the tooltip and in the elements' data attributes.

/** What each load's latency measures (the loads' own descriptions, crates/loadgen). */
const LATENCIES: Record<string, string> = {
  consumer_latency: 'latency, publish to consume',
  confirm_latency: 'confirm latency, publish to broker confirm',
  latency: 'latency',
  connect_latency: 'connect latency, TCP connect to CONNACK',
  ping_latency: 'ping round trip',
  ack_latency: 'ack latency, publish to PUBACK/PUBCOMP',
};

/** A latency's name in plain words: `consumer_latency_intended` → "latency, publish to consume, from the intended send time". */
export function plainLatency(name: string): string {
  const intended = name.endsWith('_intended');
  const base = intended ? name.slice(0, -'_intended'.length) : name;
  const words = LATENCIES[base] ?? base.replace(/_/g, ' ');
  return intended ? `${words}, from the intended send time` : words;
}

/** A percentile's name: `p50` → "median (p50)". */
export function plainQuantile(q: string): string {
  return q === 'p50' ? 'median (p50)' : q;
}

/** A series column in plain words: `consumer_latency p99` → "latency, publish to consume: p99". */
export function plainColumn(name: string): string {
  const sp = name.lastIndexOf(' ');
  if (sp > 0 && /^(p\d+(\.\d+)?|max|min)$/.test(name.slice(sp + 1))) return `${plainLatency(name.slice(0, sp))}: ${plainQuantile(name.slice(sp + 1))}`;
  return name.replace(/_/g, ' ');
}

/** Thread groups of the BEAM (names truncated to the kernel's 15 characters) and others. */
const GROUPS: [RegExp, string][] = [
  [/^scheduler$/, 'schedulers'],
  [/^dirty_cpu_sc/, 'dirty CPU schedulers'],
  [/^dirty_io_sc/, 'dirty I/O schedulers'],
  [/^poller$/, 'I/O pollers'],
  [/^aux$/, 'aux (timers, housekeeping)'],
  [/^sys_sig_dispat/, 'signal dispatcher'],
  [/^sys_msg_dispat/, 'system message dispatcher'],
  [/^async$/, 'async threads'],
];

/** A thread group's name in plain words; unknown ones as they are. */
export function plainGroup(name: string): string {
  for (const [re, words] of GROUPS) if (re.test(name)) return words;
  return name;
}
