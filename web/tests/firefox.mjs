// kiln's run export (`kiln runs export NAME --format firefox`) loaded by the Firefox
// Profiler's own loading code, offline:
//   node tests/firefox.mjs FIXTURE_DIR
// FIXTURE_DIR holds firefox.expect.json (written by crates/cli/tests/firefox.rs from the
// store: per thread its name, tid, sample count, CPU or traced time; per series with a
// value its counter's name, category and values, and the series left out; the phases'
// names and lengths) and the file it names.
//
// The profiler's code is the pinned `@firefox-devtools/profiler-cli` package: one bundle
// of the profiler's importers, processed-format upgraders and selectors, built and
// published by the profiler's authors. Its daemon (tests/profiler-cli.mjs: in the
// foreground, a private session directory, no symbolication: nothing leaves the machine)
// is asked, as its CLI asks it, for the threads, each thread's samples, CPU time and
// activity graph, the counter tracks, and the markers, which must be the store's.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openInProfiler } from './profiler-cli.mjs';

const [dir] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node tests/firefox.mjs FIXTURE_DIR');
  process.exit(2);
}
const expect = JSON.parse(readFileSync(join(dir, 'firefox.expect.json'), 'utf8'));
const { ask, close, threads } = await openInProfiler(join(dir, expect.file));
try {
  // Threads: every kiln thread with exactly its samples (named as exported, `busy
  // (cpu-clock)`; a tid two tracks share is made unique by the writer, `4242.1`); the
  // run's own thread (counters and markers) has none.
  const threadNamed = new Map(threads.threads.map((t) => [t.name, t]));
  const near = (got, want, tol, what) => assert.ok(Math.abs(got - want) <= tol, `${what}: the profiler has ${got}, the store ${want}`);
  for (const t of expect.threads) {
    const got = threadNamed.get(t.name);
    assert.ok(got, `thread ${t.name} is not in the profile: ${[...threadNamed.keys()].join(', ')}`);
    assert.equal(String(got.tid).split('.')[0], String(t.tid), `thread ${t.name}: tid`);
    const info = ask(['thread', 'info', '--thread', got.threadHandle]);
    assert.equal(info.sampleCount, t.samples, `thread ${t.name}: samples`);
    let said = `${info.sampleCount} samples`;
    if (t.cpuMs !== null) {
      // The profiler's CPU time of the thread: its samples' CPU deltas after the first
      // (src/selectors/profile.ts getThreadCPUTimeMs), which its activity graph draws.
      near(got.cpuMs, t.cpuMs, 1e-6 * t.cpuMs + 1e-3, `thread ${t.name}: CPU ms`);
      assert.ok(t.cpuMs > 0, `thread ${t.name}: the store has CPU time`);
      // The activity graph's slices (the CPU the graph draws over the thread's time):
      // not empty.
      const top = (info.cpuActivity ?? []).find((a) => a.depthLevel === 0);
      assert.ok(top && top.cpuMs > 0, `thread ${t.name}: the activity graph draws nothing: ${JSON.stringify(info.cpuActivity)}`);
      said += `, ${got.cpuMs.toFixed(1)} ms of CPU, the activity graph ${top.cpuMs.toFixed(1)} ms`;
    }
    if (t.tracedMs !== null) {
      // Traced time: weights in ms (each block to the µs), summed by the call tree.
      const samples = ask(['thread', 'samples', '--thread', got.threadHandle]);
      assert.equal(samples.weightType, 'tracing-ms', `thread ${t.name}: weight type`);
      near(samples.categoryBreakdown.totalSamples, t.tracedMs, 5e-4 * t.samples + 1e-6, `thread ${t.name}: traced ms`);
      said += `, ${samples.categoryBreakdown.totalSamples.toFixed(1)} ms traced`;
    }
    console.log(`ok - thread ${t.name} (${t.tid}): ${said}`);
  }
  assert.equal(threads.threads.length, expect.threads.length + 1, 'the threads and the run\'s own');
  const run = threads.threads.find((t) => t.processName === 'kiln run');
  assert.ok(run, 'the run\'s process');

  // Tracks: the profiler makes a counter track for each counter of a process it has a
  // track for (src/profile-logic/tracks.ts, computeLocalTracksByPid): the run's
  // process, its thread the main one. One per series with a value, each drawing.
  const profile = ask(['profile', 'info', '--all']);
  const proc = profile.processes.find((p) => p.name === 'kiln run');
  assert.ok(proc, `the run's process: ${profile.processes.map((p) => p.name).join(', ')}`);
  const tracks = proc.counters ?? [];
  assert.equal(tracks.length, expect.counters.length, `one counter track per series: ${tracks.map((c) => c.name).join(', ')}`);
  for (const c of tracks) {
    assert.equal(c.graphType, 'line-rate', `${c.name}: graph type`);
    assert.ok(c.graph.some((v) => v > 0), `${c.name}: its graph draws nothing: ${c.graph}`);
    assert.ok(!expect.leftOut.includes(c.name), `${c.name} was to be left out`);
  }
  console.log(`ok - ${tracks.length} counter tracks in the run's process, each drawing (${expect.leftOut.length} series of zeros left out)`);

  // Counters: one per series, its seconds (and the leading zero the export adds), its
  // values as stored.
  const list = ask(['counter', 'list']);
  const counters = list.counters ?? list;
  assert.equal(counters.length, expect.counters.length, 'one counter per series');
  for (const c of expect.counters) {
    const got = counters.find((x) => x.name === c.name);
    assert.ok(got, `counter ${c.name} is missing: ${counters.map((x) => x.name).join(', ')}`);
    const info = ask(['counter', 'info', got.counterHandle]);
    assert.equal(info.category, c.category, `${c.name}: category`);
    assert.equal(info.sampleCount, c.values.length + 1, `${c.name}: samples`);
    // The profiler's buckets over the whole profile sum the values of the samples in
    // each: together, every stored value once.
    const shown = info.overTime.reduce((a, b) => a + b.value, 0);
    const stored = c.values.reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(shown - stored) <= 1e-9 * Math.max(1, Math.abs(stored)), `${c.name}: the profiler sums ${shown}, the store ${stored} (${c.values})`);
  }
  console.log(`ok - ${counters.length} counters, each with every stored value`);

  // Markers: the phases and the load's events, with their lengths.
  const markers = ask(['thread', 'markers', '--thread', run.threadHandle, '--list']);
  const flat = markers.flatMarkers;
  // The profiler lists markers by their start; kiln writes phases first, then what the
  // load did: compared as sets of (name, length).
  const byName = (a, b) => a.name.localeCompare(b.name) || a.ms - b.ms;
  const got = flat.map((m) => ({ name: m.name, ms: m.duration })).sort(byName);
  const want = [...expect.markers].sort(byName);
  assert.deepEqual(got.map((m) => m.name), want.map((m) => m.name), 'the markers');
  for (const [i, m] of want.entries()) {
    assert.ok(Math.abs(got[i].ms - m.ms) < 1e-3, `${m.name}: ${got[i].ms} ms, stored ${m.ms} ms`);
  }
  console.log(`ok - markers: ${flat.map((m) => `${m.name} ${m.duration.toFixed(0)} ms`).join(', ')}`);
  console.log('all Firefox Profiler checks passed');
} finally {
  close();
}
