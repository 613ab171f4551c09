// kiln's exports opened in the applications they are for, offline, in headless Chromium:
//   node tests/apps.mjs FIXTURE_DIR [SCREENSHOT_DIR]
// FIXTURE_DIR holds speedscope.expect.json (written by crates/cli/tests/apps.rs from kiln's
// own recording: per thread its tid, total and each leaf function's self time, in ns) and
// the file it names (kiln's speedscope export of that recording).
//
// speedscope: its released app from the `speedscope` npm package, served with the export
// from 127.0.0.1 (speedscope refuses `#profileURL=` from file:// pages), loaded with
// `#profileURL=…&view=sandwich`. The page must name the profile, count one profile per
// thread, and its sandwich table (every function's total and self time, as speedscope
// computed them from the file) must hold each thread's leaf functions with kiln's self
// times and add up to kiln's thread totals. No request may leave 127.0.0.1.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import { dirname, extname, join, normalize } from 'node:path';
import { launch } from './chromium.mjs';
import { openInProfiler } from './profiler-cli.mjs';

const [dir, shots = dir] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node tests/apps.mjs FIXTURE_DIR [SCREENSHOT_DIR]');
  process.exit(2);
}

const speedscopeDir = join(dirname(createRequire(import.meta.url).resolve('speedscope/package.json')), 'dist/release');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png', '.ico': 'image/x-icon', '.woff2': 'font/woff2' };

/** A static server on 127.0.0.1: `/app/…` from `app`, `/data/…` from `data`. */
async function serve(app, data) {
  const server = http.createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    const [root, rest] = path.startsWith('/data/') ? [data, path.slice(6)] : path.startsWith('/app/') ? [app, path.slice(5)] : [null, ''];
    const file = root && normalize(join(root, rest || 'index.html'));
    if (!file || !file.startsWith(normalize(root))) {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = readFileSync(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return { origin: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((ok) => server.close(ok)) };
}

/** speedscope's formatted times (`1.23ms`, `0.00ns`, `2.50s`, `12.00µs`) in ns. */
function ns(text) {
  const m = /^([\d.]+)(ns|µs|us|ms|s|min)$/.exec(text.trim());
  assert.ok(m, `not a time: ${text}`);
  const f = { ns: 1, µs: 1e3, us: 1e3, ms: 1e6, s: 1e9, min: 60e9 }[m[2]];
  return Number(m[1]) * f;
}

/** Whether a shown value (rounded to 3 significant digits or 2 decimals) is `want`. */
function near(shown, want, what) {
  const tol = Math.max(0.006 * want, 10_000); // 2 decimals of ms, or 3 digits
  assert.ok(Math.abs(shown - want) <= tol, `${what}: speedscope shows ${shown} ns, kiln has ${want} ns`);
}

/**
 * The Firefox Profiler's own loading code (the pinned `@firefox-devtools/profiler-cli`
 * package, tests/profiler-cli.mjs) on kiln's gecko export of the recording: one thread
 * per recorded thread, each with every leaf function and its samples (the functions'
 * self samples, as the profiler's call tree counts them), and the CPU time its activity
 * graph draws (the samples' CPU deltas after the first: samples × the timer's period).
 */
async function firefoxProfiler() {
  const expect = JSON.parse(readFileSync(join(dir, 'gecko.expect.json'), 'utf8'));
  const fx = await openInProfiler(join(dir, expect.file));
  try {
    let total = 0;
    const listed = fx.threads.threads;
    assert.equal(listed.length, expect.threads.length, `one thread per recorded thread: ${listed.map((t) => `${t.name} ${t.tid}`).join(', ')}`);
    for (const thread of expect.threads) {
      step = `Firefox Profiler: thread ${thread.name} (${thread.tid})`;
      const t = listed.find((x) => x.name === thread.name && String(x.tid).split('.')[0] === String(thread.tid));
      assert.ok(t, `${step}: not in the profile`);
      const fns = fx.ask(['thread', 'functions', '--thread', t.threadHandle]);
      const counts = new Map();
      for (const f of fns.functions) if (f.selfSamples > 0) counts.set(f.name, (counts.get(f.name) ?? 0) + f.selfSamples);
      const want = new Map(Object.entries(thread.selfNs).map(([k, v]) => [k, v / expect.periodNs]));
      assert.deepEqual(Object.fromEntries([...counts].sort()), Object.fromEntries([...want].sort()), `${step}: leaf functions and their samples`);
      const sum = [...counts.values()].reduce((a, b) => a + b, 0);
      assert.equal(sum, thread.totalNs / expect.periodNs, `${step}: the thread's samples`);
      // The CPU its activity graph draws: every sample's period but the first's.
      const cpuMs = (thread.totalNs - thread.firstNs) / 1e6;
      assert.ok(Math.abs(t.cpuMs - cpuMs) <= 1e-6 * cpuMs + 1e-3, `${step}: the profiler's CPU time ${t.cpuMs} ms, the recording's ${cpuMs} ms`);
      total += sum;
      console.log(`ok - Firefox Profiler: thread ${thread.name} (${thread.tid}): ${counts.size} leaf functions, ${sum} samples, ${t.cpuMs.toFixed(2)} ms of CPU`);
    }
    console.log(`ok - Firefox Profiler: ${listed.length} threads, ${total} samples`);
  } finally {
    fx.close();
  }
}

/**
 * The viewer's own speedscope export of the same recording (r.html, its Export menu's
 * file) opened in speedscope: one profile, the flame graph as the viewer shows it, whose
 * sandwich holds every leaf function with its self time summed over the threads, adding
 * up to the recording's total.
 */
async function viewerExport(context, expect) {
  step = "the viewer's speedscope export";
  const viewer = await context.newPage();
  await viewer.goto(`file://${join(dir, 'r.html')}`);
  await viewer.waitForFunction(() => window.__kiln && (window.__kiln.ready || window.__kiln.error), null, { timeout: 30000 });
  assert.equal(await viewer.evaluate(() => window.__kiln.error), null, 'the viewer page loads');
  writeFileSync(join(dir, 'viewer.speedscope.json'), await viewer.evaluate(() => window.__kiln.app.exportSpeedscope()));
  writeFileSync(join(dir, 'viewer.firefox.json'), await viewer.evaluate(() => window.__kiln.app.exportFirefox()));
  await viewer.close();
  const page = await context.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('request', (r) => {
    if (!r.url().startsWith(server.origin) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) outside.push(r.url());
  });
  await page.goto(`${server.origin}/app/index.html#profileURL=${encodeURIComponent('/data/viewer.speedscope.json')}&view=sandwich`);
  await page.waitForFunction(() => / - speedscope$/.test(document.title), null, { timeout: 30000 });
  await page.waitForFunction(() => document.body.innerText.includes('Symbol Name'));
  const rows = await page.evaluate(() => [...document.querySelectorAll('tr:not([title])')].map((r) => [...r.querySelectorAll(':scope > td')].map((c) => c.innerText.trim())));
  const self = new Map();
  for (const [, s, name] of rows.filter((r) => r.length >= 3)) self.set(name, (self.get(name) ?? 0) + ns(s.split(' ')[0]));
  const want = new Map();
  for (const t of expect.threads) for (const [name, v] of Object.entries(t.selfNs)) want.set(name, (want.get(name) ?? 0) + v);
  for (const [name, v] of want) {
    assert.ok(self.has(name), `${step}: ${name} is not in speedscope's table (${[...self.keys()].join(', ')})`);
    near(self.get(name), v, `${step}: self time of ${name}`);
  }
  const total = expect.threads.reduce((a, t) => a + t.totalNs, 0);
  near([...self.values()].reduce((a, b) => a + b, 0), total, `${step}: the total`);
  await page.screenshot({ path: join(shots, 'speedscope-viewer-export.png') });
  console.log(`ok - speedscope: the viewer's export, ${want.size} leaf functions, total ${(total / 1e6).toFixed(2)} ms`);
  await page.close();

  // The Firefox Profiler's own loading code on the viewer's Firefox export: one thread,
  // every leaf function with its samples (kiln's self time over the timer's period).
  step = "the viewer's Firefox Profiler export";
  const fx = await openInProfiler(join(dir, 'viewer.firefox.json'));
  try {
    assert.equal(fx.threads.threads.length, 1, 'one thread: the flame graph as shown');
    const fns = fx.ask(['thread', 'functions', '--thread', fx.threads.threads[0].threadHandle]);
    const got = new Map();
    for (const f of fns.functions) got.set(f.name, (got.get(f.name) ?? 0) + f.selfSamples);
    for (const [name, v] of want) assert.equal(got.get(name), v / expect.periodNs, `${step}: ${name}'s samples`);
    const sum = [...got.values()].reduce((a, b) => a + b, 0);
    assert.equal(sum, total / expect.periodNs, `${step}: every sample`);
    console.log(`ok - Firefox Profiler: the viewer's export, ${want.size} leaf functions, ${sum} samples`);
  } finally {
    fx.close();
  }
}

const { context, close } = await launch();
const server = await serve(speedscopeDir, dir);
const errors = [];
const outside = [];
let step = 'start';
try {
  const expect = JSON.parse(readFileSync(join(dir, 'speedscope.expect.json'), 'utf8'));
  const page = await context.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('request', (r) => {
    if (!r.url().startsWith(server.origin) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) outside.push(r.url());
  });
  step = 'speedscope loads the export';
  await page.goto(`${server.origin}/app/index.html#profileURL=${encodeURIComponent('/data/' + expect.file)}&view=sandwich`);
  await page.waitForFunction(() => / - speedscope$/.test(document.title), null, { timeout: 30000 });
  assert.equal(await page.title(), `${expect.title} - speedscope`, 'the profile name');

  // The toolbar names the shown profile and says "(i/N)".
  const toolbar = async () => {
    const text = await page.evaluate(() => document.body.innerText);
    const m = /\n(.*) \((\d+)\/(\d+)\)\n/.exec(text);
    assert.ok(m, `no profile selector in: ${text.slice(0, 400)}`);
    return { name: m[1], index: Number(m[2]), count: Number(m[3]) };
  };
  const first = await toolbar();
  assert.equal(first.count, expect.threads.length, 'one profile per thread');
  // speedscope's profile selector lists every profile with its total weight.
  const listed = await page.evaluate(() => [...document.querySelectorAll('tr[title]')].map((r) => [...r.querySelectorAll(':scope > td')].map((c) => c.innerText.trim())));
  assert.equal(listed.length, expect.threads.length, `the profile selector lists one profile per thread: ${JSON.stringify(listed)}`);
  // A thread is named by its name and tid: a forked child is one tid under two names
  // (the shell's before exec, the program's after), kiln's threads and speedscope's
  // profiles alike.
  const threadOf = (name) => expect.threads.find((t) => name.endsWith(`: ${t.name} (${t.tid})`));
  for (const [, name, total] of listed) {
    const thread = threadOf(name);
    assert.ok(thread, `${name}: no thread of the recording has this name and tid`);
    near(ns(total), thread.totalNs, `the profile selector's total of ${name}`);
  }

  // speedscope opens on the file's active profile (kiln's heaviest); then each profile
  // in turn from the first ('p' and 'n' are speedscope's keys for the previous and next).
  const press = async (key, from) => {
    await page.keyboard.press(key);
    for (let t = 0; t < 100 && (await toolbar()).index === from; t++) await new Promise((r) => setTimeout(r, 50));
  };
  for (let i = first.index; i > 1; i--) await press('p', i);
  const seen = new Set();
  for (let k = 1; k <= first.count; k++) {
    const bar = await toolbar();
    assert.equal(bar.index, k, 'speedscope moves from profile to profile');
    step = `profile ${bar.index}/${bar.count}: ${bar.name}`;
    const thread = threadOf(bar.name);
    assert.ok(thread, `${bar.name}: no thread of the recording has this name and tid`);
    assert.ok(bar.name.startsWith(`${expect.event}: ${thread.name}`), `${bar.name}: event and thread name`);
    seen.add(`${thread.name} (${thread.tid})`);
    // The sandwich table: rows of total, self, name.
    await page.waitForFunction(() => document.body.innerText.includes('Symbol Name'));
    const rows = await page.evaluate(() =>
      // The sandwich table's rows (the profile selector's rows carry a title).
      [...document.querySelectorAll('tr:not([title])')].map((r) => [...r.querySelectorAll(':scope > td')].map((c) => c.innerText.trim())),
    );
    const table = rows.filter((r) => r.length >= 3).map(([total, self, name]) => ({ total: ns(total.split(' ')[0]), self: ns(self.split(' ')[0]), name }));
    assert.ok(table.length > 0, `${step}: the sandwich table is empty`);
    const self = new Map();
    for (const r of table) self.set(r.name, (self.get(r.name) ?? 0) + r.self);
    for (const [name, want] of Object.entries(thread.selfNs)) {
      assert.ok(self.has(name), `${step}: ${name} is not in speedscope's table (${[...self.keys()].join(', ')})`);
      near(self.get(name), want, `${step}: self time of ${name}`);
    }
    const sum = [...self.values()].reduce((a, b) => a + b, 0);
    near(sum, thread.totalNs, `${step}: the thread's total (sum of self times)`);
    for (const r of table) assert.ok(r.total >= r.self && r.total <= thread.totalNs * 1.006, `${step}: ${r.name}: total ${r.total} ns, self ${r.self} ns`);
    console.log(`ok - speedscope: ${bar.name}: ${table.length} functions, total ${(sum / 1e6).toFixed(2)} ms (kiln ${(thread.totalNs / 1e6).toFixed(2)} ms)`);
    await page.screenshot({ path: join(shots, `speedscope-${bar.index}.png`) });
    if (k < first.count) await press('n', k);
  }
  assert.equal(seen.size, expect.threads.length, 'every thread shown once');
  await viewerExport(context, expect);
  await firefoxProfiler();
  step = 'offline';
  assert.deepEqual(outside, [], 'requests outside 127.0.0.1');
  assert.deepEqual(errors, [], 'page errors');
  console.log('all browser checks passed');
} catch (e) {
  console.error(`FAILED at ${step}: ${e.stack ?? e}`);
  process.exitCode = 1;
} finally {
  await close();
  await server.close();
}
