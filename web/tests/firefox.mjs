// kiln's run export (`kiln runs export NAME --format firefox`) loaded by the Firefox
// Profiler's own loading code, offline:
//   node tests/firefox.mjs FIXTURE_DIR
// FIXTURE_DIR holds firefox.expect.json (written by crates/cli/tests/firefox.rs from the
// store: per thread its name, tid and sample count; per series its counter's name,
// category and values; the phases' names and lengths) and the file it names.
//
// The profiler's code is the pinned `@firefox-devtools/profiler-cli` package: one bundle
// of the profiler's importers, processed-format upgraders and selectors, built and
// published by the profiler's authors. Its daemon (tests/profiler-cli.mjs: in the
// foreground, a private session directory, no symbolication: nothing leaves the machine)
// is asked, as its CLI asks it, for the threads, each thread's samples, the counters and
// the markers, which must be the store's.
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
  // Threads: every kiln thread with exactly its samples; the run's own thread (counters
  // and markers) has none.
  const byKey = new Map(threads.threads.map((t) => [`${t.name}/${t.tid}`, t]));
  for (const t of expect.threads) {
    const got = byKey.get(`${t.name}/${t.tid}`);
    assert.ok(got, `thread ${t.name} ${t.tid} is not in the profile: ${[...byKey.keys()].join(', ')}`);
    const info = ask(['thread', 'info', '--thread', got.threadHandle]);
    assert.equal(info.sampleCount, t.samples, `thread ${t.name} ${t.tid}: samples`);
    console.log(`ok - thread ${t.name} (${t.tid}): ${info.sampleCount} samples`);
  }
  assert.equal(threads.threads.length, expect.threads.length + 1, 'the threads and the run\'s own');
  const run = threads.threads.find((t) => t.processName === 'kiln run');
  assert.ok(run, 'the run\'s process');

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
