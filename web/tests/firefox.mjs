// kiln's run export (`kiln runs export NAME --format firefox`) loaded by the Firefox
// Profiler's own loading code, offline:
//   node tests/firefox.mjs FIXTURE_DIR
// FIXTURE_DIR holds firefox.expect.json (written by crates/cli/tests/firefox.rs from the
// store: per thread its name, tid and sample count; per series its counter's name,
// category and values; the phases' names and lengths) and the file it names.
//
// The profiler's code is the pinned `@firefox-devtools/profiler-cli` package: one bundle
// of the profiler's importers, processed-format upgraders and selectors, built and
// published by the profiler's authors. Its daemon is started here in the foreground with
// a private session directory and no symbolication (nothing leaves the machine), and is
// asked, as its CLI asks it, for the threads, each thread's samples, the counters and
// the markers, which must be the store's.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const [dir] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node tests/firefox.mjs FIXTURE_DIR');
  process.exit(2);
}
const cli = join(dirname(createRequire(import.meta.url).resolve('@firefox-devtools/profiler-cli/package.json')), 'dist/profiler-cli.js');
const expect = JSON.parse(readFileSync(join(dir, 'firefox.expect.json'), 'utf8'));
const sessions = mkdtempSync(join(tmpdir(), 'kiln-profiler-cli-'));
const env = { ...process.env, PROFILER_CLI_SESSION_DIR: sessions, PROFILER_CLI_NO_SYMBOLICATE: '1' };

/** What the last quiet question got instead of an answer. */
let lastRefusal = '';

/** One CLI command's JSON answer, or null while the daemon cannot answer yet. */
function ask(args, { quiet = false } = {}) {
  try {
    const out = execFileSync(process.execPath, [cli, ...args, '--session', session, '--json'], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return JSON.parse(out);
  } catch (e) {
    lastRefusal = `${e.stderr || ''}${e.stdout || ''}${e.message}`;
    if (quiet) return null;
    throw new Error(`profiler-cli ${args.join(' ')}: ${e.stderr || e.message}`);
  }
}

/** Starts the daemon on the file for `session`; its output and exit are kept. */
function startDaemon() {
  const d = { log: '', exited: null };
  d.proc = spawn(process.execPath, [cli, '--daemon', join(dir, expect.file), '--session', session], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  d.proc.stdout.on('data', (x) => (d.log += x));
  d.proc.stderr.on('data', (x) => (d.log += x));
  d.proc.on('exit', (code, signal) => (d.exited = { code, signal }));
  return d;
}

let session = 'kiln-1';
let daemon = startDaemon();
try {
  // Ready when it answers (the profile is loaded and processed by then), within 60 s;
  // on a busy machine a daemon has been seen never to answer: then it is stopped (by its
  // PID) and one more is started, at most three in all.
  let threads = null;
  const tried = [];
  for (let attempt = 1; attempt <= 3 && !threads; attempt++) {
    if (attempt > 1) {
      tried.push(`daemon ${attempt - 1}: ${JSON.stringify(daemon.exited)} ${daemon.log}; the last question got: ${lastRefusal}`);
      if (!daemon.exited) daemon.proc.kill('SIGKILL');
      session = `kiln-${attempt}`;
      daemon = startDaemon();
    }
    const until = Date.now() + 60_000;
    while (!threads && !daemon.exited && Date.now() < until) {
      threads = ask(['thread', 'list'], { quiet: true });
      if (!threads) await new Promise((ok) => setTimeout(ok, 100));
    }
  }
  assert.ok(threads, `the profiler's daemon never answered: ${tried.join(' | ')} | daemon 3: ${JSON.stringify(daemon.exited)} ${daemon.log}; the last question got: ${lastRefusal}`);
  if (tried.length) console.log(`note - the profiler's daemon answered on attempt ${tried.length + 1}: ${tried.join(' | ')}`);

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
  ask(['stop'], { quiet: true });
  if (!daemon.exited) daemon.proc.kill();
  rmSync(sessions, { recursive: true, force: true });
}
