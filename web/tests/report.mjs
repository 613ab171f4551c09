// Browser checks of the report pages crates/cli/tests/report.rs writes from real runs:
//   node tests/report.mjs FIXTURE_DIR [SCREENSHOT_DIR]
// FIXTURE_DIR holds pages (run.html, compare.html, sweep.html, …) and, beside each run's
// page, NAME.expect.json: what the run store holds for that run (series, windows, every
// sample's time, weight and leaf function), written by the Rust test from the store, not
// from the page. Every check acts like a user (hover, drag, click, keys, URL) and compares
// what the page shows with the store.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { deflateSync, inflateSync } from 'node:zlib';
import { join } from 'node:path';
import { axe, launch } from './chromium.mjs';
import { decodePng } from './png.mjs';

const [dir, shots = dir] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node tests/report.mjs FIXTURE_DIR [SCREENSHOT_DIR]');
  process.exit(2);
}
const { context, close } = await launch();
const errors = [];
const requests = [];
let step = 'start';

const expectOf = (name) => JSON.parse(readFileSync(join(dir, `${name}.expect.json`), 'utf8'));

async function open(file, hash = '', scheme = 'light') {
  const page = context.pages()[0] ?? (await context.newPage());
  page.removeAllListeners('pageerror');
  page.removeAllListeners('request');
  page.on('pageerror', (e) => errors.push(`${file}: ${e.message}`));
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith('file:') && !u.startsWith('blob:') && !u.startsWith('data:')) requests.push(`${file}: ${u}`);
  });
  await page.emulateMedia({ colorScheme: scheme });
  await page.goto('about:blank');
  await page.goto(`file://${join(dir, file)}${hash ? '#' + hash : ''}`);
  await waitFor(
    page,
    () => window.__kilnReport && (window.__kilnReport.ready || window.__kilnReport.error) && (!document.querySelector('.kiln-mount') || (window.__kiln && (window.__kiln.ready || window.__kiln.error))),
    null,
    30000,
  );
  const err = await page.evaluate(() => window.__kilnReport.error ?? window.__kiln?.error ?? null);
  assert.equal(err, null, `${file} failed to load: ${err}`);
  await settle(page);
  return page;
}

/**
 * Polls `f(arg)` in the page until it is true. (Playwright's waitForFunction with an
 * argument evaluates a string, which the report's Content-Security-Policy forbids.)
 */
async function waitFor(page, f, arg, timeout = 10000) {
  const end = Date.now() + timeout;
  for (;;) {
    if (await page.evaluate(f, arg)) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${f}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const settle = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

async function check(name, f) {
  step = name;
  const t = Date.now();
  await f();
  console.log(`ok - ${name} (${Date.now() - t} ms)`);
}

async function shot(page, name) {
  return decodePng(await page.screenshot({ path: join(shots, `${name}.png`) }));
}

/** The overlay canvas of a chart, and where time t is on the page. */
async function chartGeometry(page, id) {
  return page.evaluate((id) => {
    const r = window.__kilnReport;
    const g = (r.run ?? r.compare).group;
    const c = g.charts.find((x) => x.spec.id === id);
    if (!c) return null;
    c.overlay.scrollIntoView({ block: 'center' });
    const b = c.overlay.getBoundingClientRect();
    return { left: b.left, top: b.top, width: b.width, height: b.height, plotH: c.spec.height, range: g.range };
  }, id);
}

const pageX = (geo, t) => {
  const [a, b] = geo.range;
  return geo.left + 72 + ((t - a) / (b - a)) * (geo.width - 72 - 14);
};

/** Samples of a profile inside [w0, w1] (ns since the origin): total and per leaf. */
function expectedIn(profile, w) {
  const perLeaf = new Map();
  let total = 0;
  for (const [t, weight, leaf] of profile.samples) {
    let part;
    if (profile.nsPerWeight && weight > 0) {
      const len = weight * profile.nsPerWeight;
      const covered = Math.min(t + len, w[1]) - Math.max(t, w[0]);
      part = covered <= 0 ? 0 : covered >= len ? weight : (weight * covered) / len;
    } else part = t >= w[0] && t <= w[1] ? weight : 0;
    if (!part) continue;
    total += part;
    perLeaf.set(leaf, (perLeaf.get(leaf) ?? 0) + part);
  }
  return { total, perLeaf };
}

/** What each viewer shows: its event, total, and self weight per function. */
const shown = (page) =>
  page.evaluate(() =>
    window.__kiln.apps.map((a) => {
      const d = a.derived;
      const l = d.layout;
      const self = {};
      for (let v = 1; v < l.n; v++) {
        if (!l.self[v]) continue;
        const name = d.frames.names[l.frame[v]];
        self[name] = (self[name] ?? 0) + l.self[v];
      }
      return { event: a.model.unit.event, total: l.total[0], self, window: a.window };
    }),
  );

const close_ = (a, b) => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a), Math.abs(b));

/** Every viewer shows exactly the store's samples of window w. */
async function assertViewersShow(page, exp, w, what) {
  const views = await shown(page);
  assert.equal(views.length, exp.profiles.length, `${what}: one viewer per profile`);
  for (const p of exp.profiles) {
    const v = views.find((x) => x.event === p.event);
    assert.ok(v, `${what}: a viewer of ${p.event}`);
    const e = expectedIn(p, w ?? [-Infinity, Infinity]);
    assert.ok(close_(v.total, e.total), `${what}: ${p.event} total ${v.total}, the store has ${e.total} in ${w}`);
    for (const [leaf, x] of e.perLeaf) {
      assert.ok(close_(v.self[leaf] ?? 0, x), `${what}: ${p.event} ${leaf}: shown ${v.self[leaf]}, stored ${x}`);
    }
    for (const [name, x] of Object.entries(v.self)) assert.ok(e.perLeaf.has(name) || x === 0, `${what}: ${p.event} shows ${name} (${x}), which has no sample there`);
    if (w) assert.deepEqual(v.window, [exp.origin + w[0], exp.origin + w[1]], `${what}: ${p.event}'s window`);
    else assert.equal(v.window, null);
  }
}

/** Interval edges of a stored table (ns since the origin). */
function edgesOf(t) {
  const d = [];
  for (let i = 1; i < t.time.length; i++) d.push(t.time[i] - t.time[i - 1]);
  d.sort((a, b) => a - b);
  const step = d.length ? d[d.length >> 1] : 1e9;
  return [t.time[0] - step, ...t.time];
}

/** Rows of a stored table in window w, as the headline counts seconds: [row, interval ns]. */
function rowsIn(t, w) {
  const d = [];
  for (let i = 1; i < t.time.length; i++) d.push(t.time[i] - t.time[i - 1]);
  d.sort((a, b) => a - b);
  const step = d.length ? d[d.length >> 1] : 1e9;
  const out = [];
  for (let i = 0; i < t.time.length; i++) {
    const start = i > 0 && t.time[i] - t.time[i - 1] <= 2 * step ? t.time[i - 1] : t.time[i] - step;
    const mid = start + (t.time[i] - start) / 2;
    if (mid >= w[0] && mid < w[1]) out.push([i, t.time[i] - start]);
  }
  return out;
}

/** Σ value × seconds of a stored column over w, and the seconds of w's rows with a value (kiln's summary's rule). */
function integral(t, col, w) {
  const out = { sum: 0, secs: 0, any: false };
  if (!t || !t.columns[col]) return out;
  for (const [i, dt] of rowsIn(t, w)) {
    const v = t.columns[col][i];
    if (v !== null && v !== undefined) {
      out.secs += dt / 1e9;
      out.sum += (v * dt) / 1e9;
      out.any = true;
    }
  }
  return out;
}

/**
 * Σ value × seconds inside w of a stored column, each row counting the part of its
 * interval inside w, and those seconds (the store's `overlap`: a sampled counter's total
 * over exactly the window).
 */
function overlap(t, col, w) {
  const out = { sum: 0, secs: 0, any: false };
  if (!t || !t.columns[col]) return out;
  const d = [];
  for (let i = 1; i < t.time.length; i++) d.push(t.time[i] - t.time[i - 1]);
  d.sort((a, b) => a - b);
  const step = d.length ? d[d.length >> 1] : 1e9;
  for (let i = 0; i < t.time.length; i++) {
    const start = i > 0 && t.time[i] - t.time[i - 1] <= 2 * step ? t.time[i - 1] : t.time[i] - step;
    const inside = Math.min(t.time[i], w[1]) - Math.max(start, w[0]);
    const v = t.columns[col][i];
    if (inside > 0 && v !== null && v !== undefined) {
      out.secs += inside / 1e9;
      out.sum += (v * inside) / 1e9;
      out.any = true;
    }
  }
  return out;
}

/** What each headline figure is over window w, from the store's series and histograms. */
function expectedFigures(exp, w) {
  const t = exp.tables;
  const out = {};
  const mean = (table, col) => {
    const x = integral(table, col, w);
    return x.any && x.secs > 0 ? x.sum / x.secs : undefined;
  };
  if (exp.completed && t.load) out.throughput = mean(t.load, exp.completed);
  // The sampler's rates over exactly w (the seconds of w their series cover).
  const exact = (table, col) => {
    const x = overlap(table, col, w);
    return x.any && x.secs > 0 ? x.sum / x.secs : undefined;
  };
  const user = overlap(t.target, 'cpu user', w);
  const system = overlap(t.target, 'cpu system', w);
  if (user.any && system.any) out.target_cpu = (user.sum + system.sum) / Math.max(user.secs, system.secs);
  if (t.target?.columns.rss) out.rss = Math.max(...rowsIn(t.target, w).map(([i]) => t.target.columns.rss[i]));
  const vol = overlap(t.target, 'voluntary switches', w);
  const inv = overlap(t.target, 'involuntary switches', w);
  // Switches are counted, a whole number, as the headline keeps them.
  if (vol.any && inv.any) out.switches = Math.round(vol.sum + inv.sum) / Math.max(vol.secs, inv.secs);
  if (t.kiln) {
    out.kiln_cpu = exact(t.kiln, 'kiln cpu');
    out.load_cpu = exact(t.kiln, 'load command cpu');
  }
  if (t.machine) out.machine_busy = exact(t.machine, 'busy');
  const lat = exp.latencies?.[`${w[0]}-${w[1]}`]?.[exp.latency];
  if (lat) for (const k of ['p50', 'p99', 'p999', 'max']) out[k] = lat[k];
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}

/** The figure cards as the page shows them: key → [value, scope]. */
const cardsOf = (page) =>
  page.$$eval('[data-figure]', (cs) => Object.fromEntries(cs.map((c) => [c.dataset.figure, [c.dataset.value === '' ? null : Number(c.dataset.value), c.dataset.scope, c.querySelector('[data-ctrl=figure-whole]').textContent]])));

/** Every figure the store can compute for w equals the card's; the whole measurement's is beside it. */
async function assertFigures(page, exp, w, what) {
  const cards = await cardsOf(page);
  const want = expectedFigures(exp, w);
  assert.ok(Object.keys(want).length >= 3, `${what}: figures to compare: ${Object.keys(want)}`);
  for (const [k, v] of Object.entries(want)) {
    const card = cards[k];
    assert.ok(card, `${what}: a card for ${k}`);
    assert.equal(card[1], 'window', `${what}: ${k} is the window's`);
    assert.ok(close_(card[0], v), `${what}: ${k} shows ${card[0]}, the store has ${v} in ${w}`);
    assert.match(card[2], /^whole measurement: /, `${what}: ${k} has the measurement's beside it`);
  }
}

/** Samples of each profile in w (spans overlapping it), as the flame graph counts them. */
function samplesIn(p, w) {
  let n = 0;
  for (const [t, weight] of p.samples) {
    const len = p.nsPerWeight && weight > 0 ? weight * p.nsPerWeight : 0;
    if (len > 0 ? t + len > w[0] && t < w[1] : t >= w[0] && t <= w[1]) n++;
  }
  return n;
}

/** Every profile's heading counts the store's samples of w. */
async function assertHeadings(page, exp, w, what) {
  const hs = await page.$$eval('[data-profile]', (ps) => ps.map((p) => [p.dataset.profile, p.querySelector('[data-ctrl=profile-heading]').textContent]));
  for (const p of exp.profiles) {
    const h = hs.find(([, text]) => text.startsWith(`${p.event}:`));
    assert.ok(h, `${what}: a heading for ${p.event}`);
    const n = samplesIn(p, w);
    const all = p.samples.length;
    const want = !all ? `${p.event}: no samples in this run` : n ? `${p.event}: ${n.toLocaleString('en-US')} of ${all.toLocaleString('en-US')} samples in the window` : `${p.event}: no samples in the window (of ${all.toLocaleString('en-US')})`;
    assert.equal(h[1], want, what);
  }
}

/**
 * Elements of the page's main column that stick out of it (run in the page). What an
 * ancestor clips or scrolls inside the column (a cut name, a wide table) is inside it.
 */
function insideColumn() {
  const main = document.querySelector('main');
  const col = main.getBoundingClientRect();
  const clipped = (e) => {
    for (let a = e.parentElement; a && a !== main; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') {
        const r = a.getBoundingClientRect();
        if (r.left >= col.left - 1 && r.right <= col.right + 1) return true;
      }
    }
    return false;
  };
  const bad = [];
  for (const e of main.querySelectorAll('*')) {
    if (e.closest('.tooltip, .menu, .help, .threads, [hidden]')) continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if ((r.right > col.right + 1 || r.left < col.left - 1) && !clipped(e)) bad.push(`${e.tagName}.${e.className} ${Math.round(r.left)}–${Math.round(r.right)}`);
  }
  return { col: [col.left, col.right], bad: bad.slice(0, 8) };
}

/** The run's phases as the store's run says them (warm-up, measurement, after, steps): [kind, start, end]. */
function expectedPhases(exp) {
  let first = Infinity;
  let last = -Infinity;
  for (const t of Object.values(exp.tables)) {
    if (!t.time.length) continue;
    first = Math.min(first, edgesOf(t)[0]);
    last = Math.max(last, t.time[t.time.length - 1]);
  }
  const [m0, m1] = exp.measure;
  const out = [];
  if (first < m0) out.push(['warm-up', first, m0]);
  out.push(['measurement', m0, m1]);
  if (last > m1) out.push(['after', m1, last]);
  for (const w of exp.windows) out.push(['sweep step', w.start, w.end]);
  return out;
}

/** Runs of seconds a stored flag was on, as the marker row shows them: [start, end, seconds]. */
function flagRuns(t, col) {
  const e = edgesOf(t);
  const v = t.columns[col];
  const out = [];
  for (let i = 0; i < v.length; i++) {
    if (!v[i]) continue;
    let j = i;
    while (j + 1 < v.length && v[j + 1]) j++;
    out.push([e[i], e[j + 1], j - i + 1]);
    i = j;
  }
  return out;
}

/**
 * The marker row's markers, where each is on the page against a chart's time axis: every
 * stored phase (and flow-control flag's run of seconds) at the x its times have on the
 * chart, to the pixel (clamped to the plot).
 */
async function assertMarkers(page, exp, chart, what) {
  await page.evaluate(() => document.querySelector('[data-chart=markers]').scrollIntoView({ block: 'center' }));
  await settle(page);
  const geo = await chartGeometry(page, chart);
  const got = await page.$$eval('.r-marker', (bs) =>
    bs.map((b) => {
      const r = b.getBoundingClientRect();
      return { kind: b.dataset.marker, name: b.dataset.name, left: r.left, right: r.right, top: r.top, bottom: r.bottom, hidden: b.hidden, label: b.getAttribute('aria-label') };
    }),
  );
  // No marker drawn over another: overlapping spans of a lane take rows of their own.
  const shown = got.filter((m) => !m.hidden);
  for (const [i, a] of shown.entries())
    for (const b of shown.slice(0, i)) {
      const apart = a.right <= b.left + 0.5 || b.right <= a.left + 0.5 || a.bottom <= b.top + 0.5 || b.bottom <= a.top + 0.5;
      assert.ok(apart, `${what}: the marker ${a.name} is drawn over ${b.name}`);
    }
  // The marker table lists every marker, and its search finds them by name.
  assert.equal(await page.$$eval('[data-ctrl=marker-table] tbody tr', (rs) => rs.length), got.length, `${what}: a table row per marker`);
  const some = got[got.length - 1].name;
  await page.evaluate(() => (document.querySelector('[data-ctrl=marker-table]').open = true));
  await page.fill('[data-ctrl=marker-search]', some);
  const found = await page.$$eval('[data-ctrl=marker-table] tbody tr td:first-child', (ts) => ts.map((t) => t.textContent));
  assert.ok(found.length < got.length || got.every((m) => m.name === some), `${what}: searching ${some} leaves out the others: ${found}`);
  assert.ok(found.includes(some), `${what}: searching ${some} finds it: ${found}`);
  await page.fill('[data-ctrl=marker-search]', '');
  await page.evaluate(() => (document.querySelector('[data-ctrl=marker-table]').open = false));
  const lo = geo.left + 72;
  const hi = geo.left + geo.width - 14;
  const clamp = (x) => Math.min(hi, Math.max(lo, x));
  const want = expectedPhases(exp).map(([kind, a, b]) => ({ kind, a, b }));
  if (exp.tables.load) {
    for (const [col, v] of Object.entries(exp.tables.load.columns)) {
      if (['blocked', 'stalled', 'disconnected', 'errors'].includes(col) && v.some((x) => x)) for (const [a, b] of flagRuns(exp.tables.load, col)) want.push({ kind: 'flag', a, b });
    }
  }
  const kinds = ['warm-up', 'measurement', 'after', 'sweep step', 'flag'];
  const mine = got.filter((m) => kinds.includes(m.kind));
  assert.equal(mine.length, want.length, `${what}: markers ${mine.map((m) => m.name)} for ${want.map((w) => w.kind)}`);
  for (const w of want) {
    if (w.b < geo.range[0] || w.a > geo.range[1]) {
      // Outside the zoomed axis: not drawn.
      assert.ok(mine.some((g) => g.kind === w.kind && g.hidden), `${what}: the ${w.kind} marker outside the axis is hidden`);
      continue;
    }
    const x0 = clamp(pageX(geo, w.a));
    const x1 = clamp(pageX(geo, w.b));
    const m = mine.find((g) => g.kind === w.kind && !g.hidden && Math.abs(g.left - x0) <= 1);
    assert.ok(m, `${what}: a ${w.kind} marker at x ${x0.toFixed(1)} (${w.a}–${w.b} ns): ${JSON.stringify(mine.filter((g) => g.kind === w.kind))}`);
    assert.ok(Math.abs(m.right - Math.max(x0 + 2, x1)) <= 1, `${what}: ${m.name} ends at ${m.right}, the chart has ${x1}`);
  }
  return got;
}

/** The colour of a page pixel in a full-page screenshot, and a frame's fill pixel. */
async function framePixel(page, png, app, name, which = 'main') {
  const r = await page.evaluate(([i, n, w]) => {
    const f = window.__kiln.apps[i].find(n, w);
    return f && { x: f.x + scrollX, y: f.y + scrollY, w: f.w, node: f.node };
  }, [app, name, which]);
  assert.ok(r && r.w >= 4, `${name} is drawn wide enough to read: ${JSON.stringify(r)}`);
  return { node: r.node, rgb: png.at(Math.floor(r.x) + 1, Math.floor(r.y) + 2) };
}

/** The page's window in its URL (`t=START-END`). */
const hashT = (page) => page.evaluate(() => new URLSearchParams(location.hash.slice(1)).get('t'));

/** `rgb(r,g,b)` as numbers. */
const rgbOf = (s) => s.match(/\d+/g).map(Number);

/** Pixels of a region that are neither background nor grey (series colours). */
function colouredPixels(png, box) {
  let n = 0;
  for (let y = Math.max(0, Math.floor(box.top)); y < Math.min(png.height, box.top + box.height); y++) {
    for (let x = Math.max(0, Math.floor(box.left)); x < Math.min(png.width, box.left + box.width); x++) {
      const [r, g, b] = png.at(x, y);
      if (Math.max(r, g, b) - Math.min(r, g, b) > 40) n++;
    }
  }
  return n;
}

try {
  // ---------------------------------------------------------------- the run report
  let page;
  if (existsSync(join(dir, 'run.html'))) {
    const exp = expectOf('run');
    page = await open('run.html');
    const target = exp.tables.target;
    const edges = edgesOf(target);

    await check('names, notes and tags stay text; the header has figures and units', async () => {
      assert.equal(await page.evaluate(() => window.__pwned ?? null), null);
      assert.equal(await page.textContent('[data-field=title]'), `Run '${exp.name}' #${exp.id}`);
      assert.equal(await page.textContent('[data-field=note]'), exp.note);
      assert.deepEqual(await page.$$eval('[data-field=tag]', (e) => e.map((x) => x.textContent)), exp.tags.map(([k, v]) => `${k}=${v}`));
      assert.equal(await page.$$eval('img, iframe, object, embed', (e) => e.length), 0, 'no element came from a name');
      assert.equal(await page.title(), `kiln run '${exp.name}' #${exp.id}`);
      assert.match(await page.textContent('[data-figure=target_cpu] .r-figure-value'), /^\d+\.\d% of one CPU$/);
      assert.match(await page.textContent('[data-fact=events]'), /cpu-clock, offcpu at 999 Hz/);
      assert.equal(await page.textContent('[data-field=status]'), 'complete');
    });

    await check('charts are drawn (pixels of the series colours on every chart)', async () => {
      const ids = await page.evaluate(() => window.__kilnReport.run.group.charts.map((c) => c.spec.id));
      for (const want of ['cpu', 'rss', 'switches', 'machine', 'category:cpu-clock', 'category:offcpu']) assert.ok(ids.includes(want), `chart ${want} in ${ids}`);
      for (const id of ['cpu', 'category:cpu-clock', 'machine']) {
        const geo = await chartGeometry(page, id);
        await settle(page);
        const png = await shot(page, `run-chart-${id.replace(/\W/g, '_')}`);
        const n = colouredPixels(png, { left: geo.left + 72, top: geo.top, width: geo.width - 86, height: geo.plotH });
        assert.ok(n > 300, `${id}: ${n} coloured pixels`);
      }
    });

    await check('every series of the target with a value is on a chart (what a finding cites can be shown)', async () => {
      const drawn = await page.evaluate(() => window.__kilnReport.run.group.charts.flatMap((c) => c.spec.lines.map((l) => `${l.table}/${l.column}`)));
      const cited = Object.entries(target.columns)
        .filter(([name, v]) => (!name.includes(':') || /^(busiest thread|waiting|cpu user|cpu system):/.test(name)) && v.some((x) => x !== null && Number.isFinite(x) && x !== 0))
        .map(([name]) => `target/${name}`)
        // (The target's CPU in all is on the machine's chart, as user + system.)
        .filter((c) => !['target/cpu user', 'target/cpu system'].includes(c) || !drawn.includes('target/cpu user+system'));
      assert.ok(cited.includes('target/runnable'), `the run's threads waited for a CPU at some second: ${cited}`);
      const missing = cited.filter((c) => !drawn.includes(c));
      assert.deepEqual(missing, [], `on no chart: ${missing} (charted: ${drawn})`);
    });

    await check('legends hide and isolate series (Grafana\'s): a click shows one series alone, again all, Ctrl+click hides one', async () => {
      // Pixels of each series' colour on a chart's base canvas.
      const colours = (id) =>
        page.evaluate((cid) => {
          const c = window.__kilnReport.run.group.charts.find((x) => x.spec.id === cid);
          const px = c.base.getContext('2d').getImageData(0, 0, c.base.width, c.base.height).data;
          return c.spec.lines.map((l) => {
            const h = l.color.replace('#', '');
            const [r, g, b] = [0, 2, 4].map((k) => parseInt(h.slice(k, k + 2), 16));
            let n = 0;
            for (let i = 0; i < px.length; i += 4) if (px[i + 3] > 200 && Math.abs(px[i] - r) + Math.abs(px[i + 1] - g) + Math.abs(px[i + 2] - b) < 12) n++;
            return n;
          });
        }, id);
      // A chart of lines in colours (not greys, which the grid shares).
      const coloured = (c) => /^#[0-9a-f]{6}$/i.test(c) && Math.max(...[1, 3, 5].map((k) => parseInt(c.slice(k, k + 2), 16))) - Math.min(...[1, 3, 5].map((k) => parseInt(c.slice(k, k + 2), 16))) > 40;
      const id = await page.evaluate((f) => window.__kilnReport.run.group.charts.find((c) => c.spec.kind === 'lines' && c.spec.lines.length >= 2 && c.spec.lines.every((l) => new Function('c', `return (${f})(c)`)(l.color)))?.spec.id, coloured.toString());
      assert.ok(id, 'a chart of several series');
      const items = page.locator(`[data-chart="${id}"] .r-legend .r-item`);
      const all = await colours(id);
      const drawn = all.map((n, k) => (n > 0 ? k : -1)).filter((k) => k >= 0);
      assert.ok(drawn.length >= 1, `${id}: its series drawn: ${all}`);
      const one = drawn[0];
      await items.nth(one).click();
      await settle(page);
      const alone = await colours(id);
      assert.ok(alone[one] > 0 && alone.every((n, k) => k === one || n === 0), `${id}: series ${one} alone: ${alone} (all: ${all})`);
      assert.deepEqual(await items.evaluateAll((is) => is.map((i) => i.getAttribute('aria-pressed'))), all.map((_, k) => String(k === one)));
      await items.nth(one).click();
      await settle(page);
      assert.deepEqual(await colours(id), all, `${id}: every series again`);
      await items.nth(one).click({ modifiers: ['Control'] });
      await settle(page);
      const hid = await colours(id);
      assert.ok(hid[one] === 0 && drawn.every((k) => k === one || hid[k] > 0), `${id}: series ${one} hidden: ${hid}`);
      await items.nth(one).click({ modifiers: ['Control'] });
      await settle(page);
      assert.deepEqual(await colours(id), all);
    });

    await check('hover shows the stored values of that second', async () => {
      const geo = await chartGeometry(page, 'cpu');
      const cols = ['cpu user:phases', 'cpu system:phases'];
      for (const i of [2, Math.floor(target.time.length / 2), target.time.length - 2]) {
        const mid = (target.time[i - 1] + target.time[i]) / 2;
        await page.mouse.move(1, 1);
        await page.mouse.move(pageX(geo, mid), geo.top + 20);
        await settle(page);
        for (const c of cols) {
          const v = await page.getAttribute(`[data-chart=cpu] [data-column="${c}"] .r-value`, 'data-value');
          assert.equal(Number(v), target.columns[c][i], `${c} at row ${i}`);
        }
        // Every chart shows the same second.
        const rss = await page.getAttribute('[data-chart=rss] [data-column=rss] .r-value', 'data-value');
        assert.equal(Number(rss), target.columns.rss[i]);
        const vol = await page.getAttribute('[data-chart=switches] [data-column="voluntary switches"] .r-value', 'data-value');
        assert.equal(Number(vol), target.columns['voluntary switches'][i]);
      }
      await page.mouse.move(1, 1);
    });

    let win;
    await check('a window dragged on a chart: every flame graph shows exactly the store’s samples of it', async () => {
      await assertViewersShow(page, exp, null, 'before any window');
      const geo = await chartGeometry(page, 'cpu');
      const [m0, m1] = exp.measure;
      const a = m0 + (m1 - m0) * 0.3;
      const b = m0 + (m1 - m0) * 0.62;
      await page.mouse.move(pageX(geo, a), geo.top + 30);
      await page.mouse.down();
      await page.mouse.move(pageX(geo, (a + b) / 2), geo.top + 30, { steps: 3 });
      await page.mouse.move(pageX(geo, b), geo.top + 30, { steps: 3 });
      await page.mouse.up();
      await settle(page);
      win = await page.evaluate(() => window.__kilnReport.run.window);
      assert.ok(win, 'a window is selected');
      // Widened to whole seconds of the series: the smallest run of intervals holding the drag.
      const i0 = edges.indexOf(win[0]);
      const i1 = edges.indexOf(win[1]);
      assert.ok(i0 >= 0 && i1 > i0, `window ${win} on the series' edges`);
      const px = (geo.width - 86) / (geo.range[1] - geo.range[0]);
      assert.ok(win[0] <= a + 2 / px && edges[i0 + 1] > a - 2 / px, `start ${win[0]} is the edge before ${a}`);
      assert.ok(win[1] >= b - 2 / px && edges[i1 - 1] < b + 2 / px, `end ${win[1]} is the edge after ${b}`);
      await assertViewersShow(page, exp, win, 'dragged window');
      const t = await page.evaluate(() => new URLSearchParams(location.hash.slice(1)).get('t'));
      assert.equal(t, `${win[0]}-${win[1]}`, 'the window is in the URL');
      assert.match(await page.textContent('[data-ctrl=window]'), /^Window: /);
      // The function table follows too.
      const rows = await page.evaluate(() => window.__kiln.apps[0].derived.stats());
      assert.ok(rows, 'function statistics of the window');
    });

    await check('the URL restores the window', async () => {
      page = await open('run.html', `t=${win[0]}-${win[1]}`);
      assert.deepEqual(await page.evaluate(() => window.__kilnReport.run.window), win);
      await assertViewersShow(page, exp, win, 'restored window');
      // The charts show it: the selection colour inside the window on the CPU chart.
      const geo = await chartGeometry(page, 'switches');
      await settle(page);
      const png = await shot(page, 'run-restored');
      const x = Math.round((pageX(geo, win[0]) + pageX(geo, win[1])) / 2);
      const [r, g, b] = png.at(x, Math.round(geo.top + 3));
      assert.ok(r > 240 && g > 200 && b < 235, `selection shade at the window's middle, got ${[r, g, b]}`);
    });

    await check('a click selects its second; keys move, extend and select; Esc clears', async () => {
      const geo = await chartGeometry(page, 'rss');
      const i = Math.floor(target.time.length / 2);
      const mid = (target.time[i - 1] + target.time[i]) / 2;
      await page.mouse.click(pageX(geo, mid), geo.top + 20);
      await settle(page);
      assert.deepEqual(await page.evaluate(() => window.__kilnReport.run.window), [target.time[i - 1], target.time[i]]);
      await assertViewersShow(page, exp, [target.time[i - 1], target.time[i]], 'clicked second');
      // Keyboard only: the cursor starts on the focused chart, → moves a second, Shift+→ extends.
      await page.mouse.move(1, 1);
      await page.focus('[data-chart=rss] canvas.r-overlay');
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('Shift+ArrowRight');
      await page.keyboard.press('Shift+ArrowRight');
      await page.keyboard.press('Enter');
      await settle(page);
      const kw = await page.evaluate(() => window.__kilnReport.run.window);
      const k0 = edges.indexOf(kw[0]);
      assert.ok(k0 >= 0 && edges[k0 + 3] === kw[1], `three seconds on the edges: ${kw}`);
      await assertViewersShow(page, exp, kw, 'keyboard window');
      await page.keyboard.press('Escape');
      await settle(page);
      assert.equal(await page.evaluate(() => window.__kilnReport.run.window), null);
      await assertViewersShow(page, exp, null, 'cleared');
    });

    await check('a window chosen in a viewer’s time strip reaches the charts; buttons select the measurement', async () => {
      await page.click('[data-ctrl=measure]');
      await settle(page);
      assert.deepEqual(await page.evaluate(() => window.__kilnReport.run.window), exp.measure);
      await assertViewersShow(page, exp, exp.measure, 'measurement');
      const box = await page.$eval('.kiln-mount >> nth=0 >> .timeline-canvas', (e) => {
        e.scrollIntoView({ block: 'center' });
        return JSON.parse(JSON.stringify(e.getBoundingClientRect()));
      });
      await page.mouse.move(box.x + box.width * 0.1, box.y + 10);
      await page.mouse.down();
      await page.mouse.move(box.x + box.width * 0.4, box.y + 10, { steps: 4 });
      await page.mouse.up();
      await waitFor(page, (m) => {
        const w = window.__kilnReport.run.window;
        return w && (w[0] !== m[0] || w[1] !== m[1]);
      }, exp.measure);
      const [rw, aw] = await page.evaluate(() => [window.__kilnReport.run.window, window.__kiln.apps[0].window]);
      assert.deepEqual(rw, [aw[0] - exp.origin, aw[1] - exp.origin]);
      // Widened to whole seconds of the series, as a drag on a chart is: the cards and the
      // flame graphs describe the same seconds.
      assert.ok(edges.indexOf(rw[0]) >= 0 && edges.indexOf(rw[1]) > edges.indexOf(rw[0]), `window ${rw} from a viewer on the series' edges`);
      await waitFor(page, () => {
        const ws = window.__kiln.apps.map((a) => JSON.stringify(a.window));
        return ws.every((w) => w === ws[0]);
      });
      await assertViewersShow(page, exp, rw, 'window from a viewer');
      await page.click('[data-ctrl=clear]');
      await settle(page);
    });

    await check('categories: the user’s rule and the built-in kernel sets, summing to the profile', async () => {
      const legend = await page.$$eval('[data-chart="category:cpu-clock"] .r-item', (e) => e.map((x) => x.getAttribute('data-column')));
      assert.ok(legend.includes('phase work'), `the user rule's category: ${legend}`);
      const off = await page.$$eval('[data-chart="category:offcpu"] .r-item', (e) => e.map((x) => x.getAttribute('data-column')));
      assert.ok(off.includes('sleep'), `off-CPU time in nanosleep is the reason 'sleep': ${off}`);
      // Per interval, the categories add up to the profile's samples in it, and the user's
      // category holds exactly the samples whose leaf is a phase function (leaf first).
      const cats = await page.evaluate(() => window.__kilnReport.run.data.categories.find((c) => c.event === 'cpu-clock'));
      const cpu = exp.profiles.find((p) => p.event === 'cpu-clock');
      const period = Math.floor(1e9 / 999);
      const mine = cats.names.indexOf('phase work');
      for (let i = 0; i + 1 < cats.edges.length; i++) {
        const [a, b] = [cats.edges[i], cats.edges[i + 1]];
        const inside = cpu.samples.filter(([t]) => t >= a && t < b);
        const scale = (period / (b - a)) * 100;
        const total = cats.values.reduce((s, v) => s + v[i], 0);
        assert.ok(close_(total, inside.reduce((s, x) => s + x[1], 0) * scale), `interval ${i}: ${total}`);
        // At least the samples whose leaf is a phase function, at most those with one on
        // the stack (an interrupt below it may be the kernel's softirq).
        const leaf = inside.filter(([, , l]) => /^phase_(even|odd)$/.test(l)).reduce((s, x) => s + x[1], 0);
        const any = inside.filter(([, , , st]) => /(^|;)phase_(even|odd)(;|$)/.test(st)).reduce((s, x) => s + x[1], 0);
        const v = cats.values[mine][i];
        assert.ok(v >= leaf * scale - 1e-9 && v <= any * scale + 1e-9, `interval ${i}: phase work ${v} within ${leaf * scale}..${any * scale}`);
      }
    });

    await check('flame graphs by category: the legend\'s shares are the report\'s, frames of one category share its colour, a toggle goes back to the palette', async () => {
      page = await open('run.html');
      const cats = await page.evaluate(() => window.__kilnReport.run.data.categories.find((c) => c.event === 'cpu-clock'));
      const app = await page.evaluate(() => window.__kiln.apps.findIndex((a) => a.model.unit.event === 'cpu-clock'));
      const off = await page.evaluate(() => window.__kiln.apps.findIndex((a) => a.model.unit.event === 'offcpu'));
      const mount = (i) => `.kiln-mount >> nth=${i}`;
      assert.ok(app >= 0);
      // By category is the report's default: pressed, nothing in the URL.
      const cpu = page.locator(mount(app));
      assert.equal(await cpu.locator('[data-ctrl=colors]').getAttribute('aria-pressed'), 'true');
      assert.equal(await page.locator(mount(off)).locator('[data-ctrl=colors]').count(), 0, 'off-CPU time goes by why it waited: no frame categories');
      const legend = await cpu.locator('.category-item').evaluateAll((bs) => bs.map((b) => [b.dataset.category, Number(b.querySelector('.category-share').dataset.value)]));
      assert.ok(legend.length >= 2, `categories in the legend: ${legend}`);
      // Every category of the report's chart is listed with its share of the samples (the
      // chart leaves out samples outside its seconds, c.outside of them).
      const n = exp.profiles.find((p) => p.event === 'cpu-clock').samples.length;
      const slack = (100 * cats.outside) / n + 1e-6;
      for (const [i, name] of cats.names.entries()) {
        const row = legend.find(([l]) => l === name);
        assert.ok(row, `${name} in the legend ${legend.map((l) => l[0])}`);
        assert.ok(Math.abs(row[1] - cats.shares[i]) <= slack, `${name}: legend ${row[1]}%, the report ${cats.shares[i]}% (±${slack})`);
      }
      assert.ok(Math.abs(legend.reduce((a, [, v]) => a + v, 0) - 100) < 1e-6, 'the shares sum to 100%');
      // The user's rule: at least the samples whose leaf is a phase function, at most those
      // with one on the stack, counted from the store.
      const samples = exp.profiles.find((p) => p.event === 'cpu-clock').samples;
      const all = samples.reduce((a, x) => a + x[1], 0);
      const leaf = samples.filter(([, , l]) => /^phase_(even|odd)$/.test(l)).reduce((a, x) => a + x[1], 0);
      const any = samples.filter(([, , , st]) => /(^|;)phase_(even|odd)(;|$)/.test(st)).reduce((a, x) => a + x[1], 0);
      const work = legend.find(([l]) => l === 'phase work')[1];
      assert.ok(work >= (100 * leaf) / all - 1e-9 && work <= (100 * any) / all + 1e-9, `phase work ${work}% within ${(100 * leaf) / all}..${(100 * any) / all}`);
      // Pixels: phase_even and phase_odd (one category) share its colour; main (another) not.
      await cpu.locator('canvas.flame-canvas').first().scrollIntoViewIfNeeded();
      await settle(page);
      const png = decodePng(await page.screenshot({ fullPage: true, path: join(shots, 'run-flame-by-category.png') }));
      const even = await framePixel(page, png, app, 'phase_even');
      const odd = await framePixel(page, png, app, 'phase_odd');
      const want = await page.evaluate(([i, v]) => {
        const d = window.__kiln.apps[i].derived;
        return d.categories.colors[d.categories.of[v]];
      }, [app, even.node]);
      const near = (a, b) => a.every((x, k) => Math.abs(x - b[k]) <= 2);
      assert.ok(near(even.rgb, rgbOf(want)) && near(odd.rgb, rgbOf(want)), `phase_even ${even.rgb}, phase_odd ${odd.rgb}, the category's ${want}`);
      const main = await framePixel(page, png, app, 'main');
      assert.ok(!near(main.rgb, even.rgb), `main (another category) ${main.rgb} differs from ${even.rgb}`);
      // The sandwich of phase_even: its own box, above and below, in its category's colour;
      // the legend beside it.
      await page.evaluate(([i]) => {
        const a = window.__kiln.apps[i];
        a.setState({ view: 'sandwich', fn: a.derived.frames.names.indexOf('phase_even') });
      }, [app]);
      await cpu.locator('canvas.sandwich-flame, .sandwich-flame canvas').first().scrollIntoViewIfNeeded();
      await settle(page);
      const swPng = decodePng(await page.screenshot({ fullPage: true, path: join(shots, 'run-sandwich-by-category.png') }));
      for (const which of ['callers', 'callees']) {
        const px = await framePixel(page, swPng, app, 'phase_even', which);
        assert.ok(near(px.rgb, rgbOf(want)), `sandwich ${which}: phase_even ${px.rgb}, the category's ${want}`);
      }
      assert.equal(await cpu.locator('[data-ctrl=category-legend]').isVisible(), true, 'the legend beside the sandwich');
      // The flame chart: a box of phase_even in the category's colour, one of main not.
      await page.evaluate(([i]) => window.__kiln.apps[i].setState({ view: 'chart' }), [app]);
      await cpu.locator('canvas.chart-canvas').scrollIntoViewIfNeeded();
      await settle(page);
      // Zoomed onto the longest box of phase_even, so that it and main above it are wide.
      const boxes = await page.evaluate(async ([i]) => {
        const a = window.__kiln.apps[i];
        const names = a.model.frames({ ...a.state, threadMode: 'merged' }).names;
        const chart = a.chart.scene.chart;
        let even = null;
        chart.lanes.forEach((lane, li) =>
          lane.rows.forEach((row, depth) => {
            for (let k = 0; k < row.length; k++) {
              if (names[chart.frame[row.node[k]]] !== 'phase_even') continue;
              if (!even || row.end[k] - row.start[k] > even.len) even = { lane: li, depth, index: k, len: row.end[k] - row.start[k], t: (row.start[k] + row.end[k]) / 2 };
            }
          }),
        );
        if (!even) return null;
        const lane = chart.lanes[even.lane];
        let main = null;
        lane.rows.forEach((row, depth) => {
          for (let k = 0; k < row.length; k++) if (row.start[k] <= even.t && row.end[k] >= even.t && names[chart.frame[row.node[k]]] === 'main') main = { lane: even.lane, depth, index: k };
        });
        a.chartSpan = [even.t - even.len, even.t + even.len];
        a.render();
        a.chart.drawNow();
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        const c = a.chart.canvas.getBoundingClientRect();
        const at = (b) => {
          const r = b && a.chart.renderer.rectOf(a.chart.scene, b);
          return r && { x: c.left + scrollX + Math.max(0, r.x), y: c.top + scrollY + r.y, w: Math.min(r.w, c.width - Math.max(0, r.x)) };
        };
        return { even: at(even), main: at(main) };
      }, [app]);
      const chartPng = decodePng(await page.screenshot({ fullPage: true, path: join(shots, 'run-chart-by-category.png') }));
      const evenBox = boxes?.even;
      const mainBox = boxes?.main;
      assert.ok(evenBox && evenBox.w >= 3 && mainBox && mainBox.w >= 3, `phase_even and main boxes in the chart: ${JSON.stringify(boxes)}`);
      const evenPx = chartPng.at(Math.floor(evenBox.x + evenBox.w / 2), Math.floor(evenBox.y) + 2);
      const mainPx = chartPng.at(Math.floor(mainBox.x + mainBox.w / 2), Math.floor(mainBox.y) + 2);
      assert.ok(near(evenPx, rgbOf(want)), `flame chart: phase_even ${evenPx}, the category's ${want}`);
      assert.ok(!near(mainPx, rgbOf(want)), `flame chart: main ${mainPx}, not ${want}`);
      await page.evaluate(([i]) => window.__kiln.apps[i].setState({ view: 'flame', fn: -1 }), [app]);
      await settle(page);
      // A click on a legend entry highlights its category (the URL keeps it); again clears.
      await cpu.locator('.category-item[data-category="phase work"]').click();
      await settle(page);
      assert.equal(await cpu.locator('.category-item[data-category="phase work"]').getAttribute('aria-pressed'), 'true');
      assert.match(await page.evaluate(() => location.hash), /\.cat=\d+/);
      const muted = await page.evaluate(([i, a, b]) => [window.__kiln.apps[i].derived.color(a), window.__kiln.apps[i].derived.color(b)], [app, even.node, main.node]);
      assert.deepEqual(rgbOf(muted[0]), rgbOf(want), 'the highlighted category keeps its colour');
      assert.notDeepEqual(rgbOf(muted[1]), rgbOf(want), 'the others are greyed');
      await cpu.locator('.category-item[data-category="phase work"]').click();
      await settle(page);
      assert.doesNotMatch(await page.evaluate(() => location.hash), /\.cat=/);
      // The toggle: the palette, in the URL; back to categories.
      await cpu.locator('[data-ctrl=colors]').click();
      await settle(page);
      assert.equal(await cpu.locator('[data-ctrl=colors]').getAttribute('aria-pressed'), 'false');
      assert.match(await page.evaluate(() => location.hash), /\.colors=palette/);
      assert.equal(await cpu.locator('[data-ctrl=category-legend]').isVisible(), false, 'no legend with the palette');
      page = await open('run.html', (await page.evaluate(() => location.hash)).slice(1));
      assert.equal(await page.locator(mount(app)).locator('[data-ctrl=colors]').getAttribute('aria-pressed'), 'false', 'the URL restores the palette');
      await page.locator(mount(app)).locator('[data-ctrl=colors]').click();
      await settle(page);
      assert.doesNotMatch(await page.evaluate(() => location.hash), /colors=/);
    });

    await check('every figure follows the window: headline cards, headings, legends and the viewers\' totals, the whole measurement\'s beside them', async () => {
      page = await open('run.html');
      // The legends away from a cursor (the mouse may rest over a chart of the new page).
      await page.mouse.move(1, 1);
      // Seconds of the measurement (the series start seconds before it, with no samples).
      const e = edgesOf(target).filter((x) => x >= exp.measure[0]);
      const w = [e[0], e[Math.min(e.length - 1, 3)]];
      const before = await cardsOf(page);
      assert.ok(Object.values(before).every(([, scope, whole]) => scope === 'measurement' && whole === ''), 'no window: the measurement\'s figures');
      await page.evaluate((x) => window.__kilnReport.run.setWindow(x), w);
      await settle(page);
      await assertFigures(page, exp, w, 'a window of three seconds');
      await assertHeadings(page, exp, w, 'a window of three seconds');
      // Legends: the category chart's shares of the window add up to 100%.
      const shares = await page.$$eval('[data-chart="category:cpu-clock"] .r-value', (vs) => vs.map((v) => Number(v.dataset.value)));
      assert.ok(Math.abs(shares.reduce((a, b) => a + b, 0) - 100) < 0.01, `shares ${shares}`);
      assert.match(await page.textContent('[data-chart="category:cpu-clock"] [data-ctrl=caption]'), /^share of the CPU time: the window \(/);
      // One number per category, its whole-run share in the tooltip.
      const item = await page.$eval('[data-chart="category:cpu-clock"] .r-item', (e) => [e.querySelector('.r-label').textContent, e.title]);
      assert.ok(!/%/.test(item[0]) && /% of the cpu-clock samples over the whole run$/.test(item[1]), `${item}`);
      // Each viewer's header: the window's samples of the profile's.
      let facts = 0;
      for (const p of exp.profiles) {
        const n = samplesIn(p, w);
        const key = p.event.replace(/[^A-Za-z0-9_-]/g, '_');
        const text = await page.evaluate((k) => document.querySelector(`[data-profile="${k}"] [data-fact=samples] .fact-value`)?.textContent ?? null, key);
        if (text === null) continue;
        facts++;
        assert.ok(text.startsWith(`${n.toLocaleString('en-US')} of ${p.samples.length.toLocaleString('en-US')}`), `${p.event}: ${text}`);
      }
      assert.ok(facts >= 1, 'the viewers count the window\'s samples');
      // The same window from the URL, on opening.
      page = await open('run.html', `t=${w[0]}-${w[1]}`);
      await assertFigures(page, exp, w, 'the window from the URL');
      await assertHeadings(page, exp, w, 'the window from the URL');
      // Another window, other figures.
      const w2 = [e[e.length - 3], e[e.length - 1]];
      await page.evaluate((x) => window.__kilnReport.run.setWindow(x), w2);
      await settle(page);
      await assertFigures(page, exp, w2, 'the last two seconds');
      await assertHeadings(page, exp, w2, 'the last two seconds');
    });

    await check('one number for one thing: legends and cards agree for windows of 1, 2 and every second, and for no window', async () => {
      page = await open('run.html');
      await page.mouse.move(1, 1);
      const e = edgesOf(target).filter((x) => x >= exp.measure[0]);
      const legend = (chart) =>
        page.$$eval(`[data-chart="${chart}"] .r-item`, (items) => Object.fromEntries(items.map((x) => [x.dataset.column, x.querySelector('.r-value').dataset.value]).filter(([, v]) => v !== '').map(([k, v]) => [k, Number(v)])));
      const sum = (o, f = () => true) => Object.entries(o).filter(([k]) => f(k)).reduce((a, [, v]) => a + v, 0);
      for (const [w, what] of [
        [[e[0], e[1]], 'one second'],
        [[e[1], e[3]], 'two seconds'],
        [[-6e9, e[0]], 'the warm-up'],
        // Off the seconds' edges, as a URL may give them: the seconds whose middle is inside.
        [[1e9, 2e9], 'one second, off the edges'],
        [[1e9, 3e9], 'two seconds, off the edges'],
        [exp.measure, 'every second of the measurement'],
        [null, 'no window: the measurement'],
      ]) {
        await page.evaluate((x) => window.__kilnReport.run.setWindow(x), w);
        await settle(page);
        const cards = await cardsOf(page);
        const want = expectedFigures(exp, w ?? exp.measure);
        // Switches: the legend's two lines add up to the card, both the store's (the card
        // a whole number of switches over the seconds covered).
        const sw = await legend('switches');
        assert.equal(Object.keys(sw).length, 2, `${what}: both switch lines have a value: ${JSON.stringify(sw)}`);
        const covered = overlap(target, 'voluntary switches', w ?? exp.measure).secs;
        assert.ok(Math.abs(sum(sw) - cards.switches[0]) <= 0.5 / covered + 1e-6 * Math.abs(sum(sw)), `${what}: switches legend ${sum(sw)}, card ${cards.switches[0]}`);
        assert.ok(close_(cards.switches[0], want.switches), `${what}: switches card ${cards.switches[0]}, store ${want.switches}`);
        // Who used the machine: kiln's own CPU and the machine's, the cards' figures.
        const m = await legend('machine');
        const cpus = Math.max(1, await page.evaluate(() => window.__kilnReport.run.data.cpus));
        assert.ok(close_(m['kiln cpu'], cards.kiln_cpu[0]), `${what}: kiln CPU legend ${m['kiln cpu']}, card ${cards.kiln_cpu[0]}`);
        assert.ok(close_(m.busy / cpus, cards.machine_busy[0]), `${what}: machine legend ${m.busy}, card ${cards.machine_busy[0]} of ${cpus} CPUs`);
        // The target's CPU by thread group: each layer's legend is its stored column's
        // figure by the cards' rule (over exactly the window). (The card reads the
        // process's own counters, which the threads' need not sum to within a second: each
        // is read in clock ticks.)
        const cpu = await legend('cpu');
        assert.ok(Object.keys(cpu).length >= 2, `${what}: CPU layers ${JSON.stringify(cpu)}`);
        for (const [col, v] of Object.entries(cpu)) {
          const x = overlap(target, col, w ?? exp.measure);
          assert.ok(close_(v, x.sum / x.secs), `${what}: ${col} legend ${v}, store ${x.sum / x.secs}`);
        }
        assert.ok(close_(cards.target_cpu[0], want.target_cpu), `${what}: CPU card ${cards.target_cpu[0]}, store ${want.target_cpu}`);
        const caption = await page.textContent('[data-chart=switches] [data-ctrl=caption]');
        assert.match(caption, w ? /^mean of the window \(/ : /^mean of the measurement \(/, what);
      }
    });

    await check('one time axis: a window is shaded from the same x to the same x on every chart and every flame graph\'s time strip, zoomed or not', async () => {
      page = await open('run.html');
      await page.mouse.move(1, 1);
      const [m0, m1] = exp.measure;
      const w = [m0 + (m1 - m0) * 0.2, m0 + (m1 - m0) * 0.6];
      await page.evaluate((x) => window.__kilnReport.run.setWindow(x), w);
      // The shaded columns of a row of pixels (the selection's yellow), page coordinates.
      const shaded = (png, y, x0, x1) => {
        let a = null;
        let b = null;
        for (let x = Math.ceil(x0); x < Math.floor(x1); x++) {
          const [r, g, bl] = png.at(x, y);
          if (r > 240 && g > 200 && bl < 235) {
            a ??= x;
            b = x;
          }
        }
        return [a, b];
      };
      // Over a band of rows at the top of a plot, the span most rows agree on: a series'
      // line may cross any one row (a flat RSS drawn at the top of its chart covers it
      // from edge to edge), and a yellow series may add a stray column to another.
      const shadedBand = (png, top, x0, x1, bottom = Infinity) => {
        const seen = new Map();
        for (let dy = 2; dy <= 16 && top + dy < bottom; dy++) {
          const span = shaded(png, Math.round(top + dy), x0, x1);
          if (span[0] === null) continue;
          const k = span.join(',');
          seen.set(k, (seen.get(k) ?? 0) + 1);
        }
        let best = null;
        for (const [k, n] of seen) if (!best || n > best[1]) best = [k, n];
        return best ? best[0].split(',').map(Number) : [null, null];
      };
      for (const zoom of [false, true]) {
        if (zoom) {
          const geo = await chartGeometry(page, 'cpu');
          await page.mouse.move(geo.left + geo.width / 2, geo.top + 30);
          await page.keyboard.down('Control');
          await page.mouse.wheel(0, -200);
          await page.keyboard.up('Control');
          await page.mouse.move(1, 1);
        }
        await settle(page);
        await settle(page);
        const boxes = await page.evaluate(() => {
          const doc = (r) => ({ left: r.left + scrollX, right: r.right + scrollX, top: r.top + scrollY, bottom: r.bottom + scrollY });
          const run = window.__kilnReport.run;
          return {
            // Each chart's shaded columns as its overlay canvas draws them (the series
            // under it may fill any row of a screenshot: a stacked chart's peak second).
            charts: run.group.charts.filter((c) => c.spec.kind !== 'spans').map((c) => {
              const r = c.overlay.getBoundingClientRect();
              const px = c.overlay.getContext('2d').getImageData(0, Math.round(4 * devicePixelRatio), c.overlay.width, 1).data;
              let a = null;
              let b = null;
              let top = 0;
              for (let x = 0; x < c.overlay.width; x++) top = Math.max(top, px[x * 4 + 3]);
              // Whole columns only, not an edge's anti-aliased part of one.
              for (let x = 0; x < c.overlay.width; x++) {
                if (px[x * 4 + 3] < top / 2) continue;
                a ??= x;
                b = x;
              }
              const at = (x) => (x === null ? null : Math.round(r.left + scrollX + x / devicePixelRatio));
              return { id: c.spec.id, ...doc(r), band: [at(a), at(b)] };
            }),
            // Each strip's shaded columns from its canvas' top row, which its bars never
            // reach (they are at most its height less 2 px): the selection over the
            // background, whatever the samples under it.
            strips: window.__kiln.apps.filter((a) => a.timeline).map((a) => {
              const cv = a.timeline.canvas;
              const r = cv.getBoundingClientRect();
              const px = cv.getContext('2d').getImageData(0, 0, cv.width, 1).data;
              const bg = [px.length - 4, px.length - 3, px.length - 2];
              const diff = (x) => Math.abs(px[x * 4] - px[bg[0]]) + Math.abs(px[x * 4 + 1] - px[bg[1]]) + Math.abs(px[x * 4 + 2] - px[bg[2]]);
              let top = 0;
              for (let x = 0; x < cv.width; x++) top = Math.max(top, diff(x));
              let lo = null;
              let hi = null;
              for (let x = 0; x < cv.width; x++) {
                if (top === 0 || diff(x) < top / 2) continue;
                lo ??= x;
                hi = x;
              }
              const at = (x) => (x === null ? null : Math.round(r.left + scrollX + x / devicePixelRatio));
              return { event: a.model.unit.event, ...doc(r), band: [at(lo), at(hi)] };
            }),
            // Each track's shaded columns from its canvas' top row, which its activity
            // never reaches: the window over a transparent canvas.
            tracks: window.__kiln.apps.filter((a) => a.tracks && !a.tracks.el.hidden).flatMap((a) =>
              [...a.tracks.el.querySelectorAll('[data-track]')].map((row) => {
                const cv = row.querySelector('canvas');
                const r = cv.getBoundingClientRect();
                const px = cv.getContext('2d').getImageData(0, 0, cv.width, 1).data;
                let top = 0;
                for (let x = 0; x < cv.width; x++) top = Math.max(top, px[x * 4 + 3]);
                let lo = null;
                let hi = null;
                for (let x = 0; x < cv.width; x++) {
                  if (top === 0 || px[x * 4 + 3] < top / 2) continue;
                  lo ??= x;
                  hi = x;
                }
                const at = (x) => (x === null ? null : Math.round(r.left + scrollX + x / devicePixelRatio));
                return { track: `${a.model.unit.event} ${row.dataset.track}`, band: [at(lo), at(hi)] };
              }),
            ),
            range: [...run.group.range],
          };
        });
        assert.ok(boxes.charts.length >= 4 && boxes.strips.length >= 2, `charts ${boxes.charts.length}, strips ${boxes.strips.length}`);
        const png = decodePng(await page.screenshot({ fullPage: true, path: join(shots, `run-one-axis-${zoom ? 'zoomed' : 'whole'}.png`) }));
        const first = boxes.charts[0];
        const want = first.band;
        assert.ok(want[0] !== null && want[1] - want[0] > 20, `${first.id}: a shaded window ${want}`);
        // The screenshot shows it there too (the first chart's top rows are free of series).
        const seen = shadedBand(png, first.top, first.left, first.right);
        assert.ok(Math.abs(seen[0] - want[0]) <= 1 && Math.abs(seen[1] - want[1]) <= 1, `${first.id}: shaded ${seen} on the page, ${want} on its overlay`);
        for (const c of boxes.charts) {
          const got = c.band;
          assert.ok(Math.abs(got[0] - want[0]) <= 1 && Math.abs(got[1] - want[1]) <= 1, `chart ${c.id}: shaded ${got}, ${first.id} ${want}`);
        }
        // Every strip (CPU and off-CPU, zoomed or not) within a pixel of the charts.
        for (const st of boxes.strips) {
          const got = st.band;
          assert.ok(Math.abs(got[0] - want[0]) <= 1 && Math.abs(got[1] - want[1]) <= 1, `${st.event} strip${zoom ? ', zoomed' : ''}: shaded ${got}, the charts ${want}`);
        }
        // Every track of every viewer, as its strip.
        assert.ok(boxes.tracks.length >= 2 * boxes.strips.length, `tracks: ${boxes.tracks.map((t) => t.track)}`);
        for (const t of boxes.tracks) {
          const got = t.band;
          assert.ok(Math.abs(got[0] - want[0]) <= 1 && Math.abs(got[1] - want[1]) <= 1, `track ${t.track}${zoom ? ', zoomed' : ''}: shaded ${got}, the charts ${want}`);
        }
      }
      await page.click('[data-ctrl=zoom-reset]');
    });

    await check('tracks: the CPU viewer\'s thread tracks draw the off-CPU profile\'s time blocked of the same thread, to the nanosecond', async () => {
      page = await open('run.html');
      const cpu = await page.evaluate(() => window.__kiln.apps.findIndex((a) => a.model.unit.event === 'cpu-clock'));
      assert.ok(cpu >= 0);
      const mount = page.locator(`.kiln-mount >> nth=${cpu}`);
      assert.match(await mount.locator('.tracks-title').textContent(), /time blocked \(lighter/);
      // Every group opened: a track per thread.
      for (const t of await mount.locator('.track-twisty').all()) if ((await t.textContent()) === '▸') await t.click();
      await settle(page);
      await settle(page);
      const rows = await page.evaluate(([i]) => {
        const app = window.__kiln.apps[i];
        const off = window.__kiln.apps.find((a) => a.model.unit.event === 'offcpu');
        const raw = off.model.raw;
        const tl = app.timeline;
        const { a, b } = tl.plot(tl.canvas.clientWidth);
        // The axis on the off-CPU profile's clock.
        const shift = off.model.raw.timeOrigin - app.model.raw.timeOrigin;
        const [a1, b1] = [a - shift, b - shift];
        const label = (r, t) => (r.threadTid[t] >= 0 ? `${r.strings[r.threadName[t]]} [${r.threadTid[t]}]` : r.strings[r.threadName[t]]);
        const ns = off.model.unit.ns(1);
        // Each off-CPU thread's time blocked inside the axis, block by block.
        const blocked = new Map();
        for (let k = 0; k < raw.sampleWeight.length; k++) {
          const t0 = raw.sampleTime[k];
          const len = raw.sampleWeight[k] * ns;
          if (t0 < 0 || len <= 0) continue;
          const inside = Math.max(0, Math.min(b1, t0 + len) - Math.max(a1, t0));
          const l = label(raw, raw.sampleThread[k]);
          blocked.set(l, (blocked.get(l) ?? 0) + (raw.sampleWeight[k] * ns * inside) / len);
        }
        const me = app.model.raw;
        return [...app.tracks.el.querySelectorAll('[data-track^=t]')].map((r) => {
          const t = Number(r.dataset.track.slice(1));
          const s = app.tracks.series(r.dataset.track);
          return { label: label(me, t), drawn: s.off ? s.off.buckets.reduce((x, y) => x + y, 0) : null, want: blocked.get(label(me, t)) ?? 0 };
        });
      }, [cpu]);
      assert.ok(rows.length >= 1, `thread tracks: ${JSON.stringify(rows)}`);
      assert.ok(rows.some((r) => r.want > 0), `some thread was blocked: ${JSON.stringify(rows)}`);
      for (const r of rows) assert.ok(r.drawn !== null && Math.abs(r.drawn - r.want) <= 1e-6 * Math.max(1, r.want) + 1, `${r.label}: drawn ${r.drawn} ns blocked, the profile's ${r.want}`);
      // The CPU scale of every track is CPUs, never beyond the machine's (time blocked is
      // its own share of the threads' time, not CPUs).
      const cpus = await page.evaluate(() => window.__kilnReport.run.data.cpus);
      assert.equal(await page.evaluate(([i]) => window.__kiln.apps[i].model.meta.cpus, [cpu]), cpus, 'the page knows the machine\'s CPUs');
      const tops = await page.evaluate(([i]) => [...window.__kiln.apps[i].tracks.drawn.values()].map((a) => [a.kind, a.top, Math.max(0, ...(a.off ?? [0]))]), [cpu]);
      for (const [kind, top, off] of tops) {
        assert.equal(kind, 'cpu');
        assert.ok(top >= 1 && top <= Math.max(1, cpus), `a track's full height ${top} CPUs on a machine of ${cpus}`);
        assert.ok(off <= 1 + 1e-9, `time blocked ${off} of the threads' time`);
      }
    });

    await check('markers: the run\'s phases on the charts\' time axis at the stored times; a click on one selects its span', async () => {
      page = await open('run.html');
      const got = await assertMarkers(page, exp, 'cpu', 'run');
      assert.deepEqual(got.filter((m) => m.kind !== 'flag').map((m) => m.kind), ['warm-up', 'measurement', 'after'], 'a warm-up, the measurement, the seconds after it');
      // The tooltip says what the marker is and when.
      await page.hover('.r-marker[data-marker=measurement]');
      const tip = await page.textContent('.r-marker-tip');
      const [m0, m1] = exp.measure;
      assert.match(tip, new RegExp(`^measurement: ${(m0 / 1e9).toFixed(1).replace(/^-?0\.0$/, '0.0')} s – ${(m1 / 1e9).toFixed(1)} s`), tip);
      assert.equal(await page.isVisible('.r-marker-tip'), true);
      // Zoomed, the markers follow the axis.
      const geo = await chartGeometry(page, 'cpu');
      await page.mouse.move(geo.left + geo.width / 2, geo.top + 30);
      await page.keyboard.down('Control');
      await page.mouse.wheel(0, -300);
      await page.keyboard.up('Control');
      await settle(page);
      await assertMarkers(page, exp, 'cpu', 'run, zoomed');
      await page.click('[data-ctrl=zoom-reset]');
      await settle(page);
      await page.click('.r-marker[data-marker=warm-up]');
      await settle(page);
      const w = expectedPhases(exp)[0];
      assert.deepEqual(await page.evaluate(() => window.__kilnReport.run.window), [w[1], w[2]]);
      assert.equal(await hashT(page), `${w[1]}-${w[2]}`);
      assert.equal(await page.getAttribute('.r-marker[data-marker=warm-up]', 'aria-pressed'), 'true');
      await assertViewersShow(page, exp, [w[1], w[2]], 'the warm-up marker');
      await page.click('[data-ctrl=clear]');
      await settle(page);
    });

    await check('the header links to every section without touching the window in the URL', async () => {
      const links = await page.$$eval('nav.r-toc a', (as) => as.map((a) => a.dataset.jump));
      const sections = await page.$$eval('main .r-section[id], main .r-profile[id]', (ss) => ss.map((s) => s.id));
      for (const id of sections) assert.ok(links.includes(id), `a link to ${id}: ${links}`);
      const hash = await page.evaluate(() => location.hash);
      const last = links[links.length - 1];
      await page.click(`nav.r-toc a[data-jump="${last}"]`);
      await settle(page);
      const [top, focused] = await page.evaluate((id) => [document.getElementById(id).getBoundingClientRect().top, document.activeElement.closest('[id]')?.id], last);
      assert.ok(top >= -1 && top < 200, `the section is at the top of the view: ${top}`);
      assert.ok(focused === last || focused?.startsWith('r-h-profile'), `focus moved to the section: ${focused}`);
      assert.equal(await page.evaluate(() => location.hash), hash, 'the URL keeps the window');
    });

    await check('nothing covers a flame graph: the window bar stays over the charts; the CPU viewer\'s canvas at 1366x768 and 1600x1000', async () => {
      const size = page.viewportSize();
      for (const [w, h] of [[1366, 768], [1600, 1000]]) {
        await page.setViewportSize({ width: w, height: h });
        // Scrolled so the viewer's top is at the window's top, and by a third of it.
        for (const by of [0, 1 / 3]) {
          await page.evaluate((f) => {
            const k = document.querySelector('[data-profile] .kiln');
            window.scrollBy(0, k.getBoundingClientRect().top + f * k.getBoundingClientRect().height);
          }, by);
          await settle(page);
          const [bar, viewer] = await page.evaluate(() => [document.querySelector('.r-windowbar'), document.querySelector('[data-profile] .kiln')].map((e) => JSON.parse(JSON.stringify(e.getBoundingClientRect()))));
          assert.ok(bar.bottom <= Math.max(0, viewer.top) + 0.5, `${w}x${h}: the window bar (to ${bar.bottom} px) covers the viewer (from ${viewer.top} px)`);
        }
        const canvas = await page.$eval('[data-profile] .main-flame canvas.flame-canvas', (e) => e.getBoundingClientRect().height);
        assert.ok(canvas >= 0.5 * h, `${w}x${h}: the CPU flame graph's canvas is ${canvas} px`);
        console.log(`  ${w}x${h}: the CPU flame graph's canvas ${canvas} px`);
      }
      await page.setViewportSize(size);
      await page.evaluate(() => window.scrollTo(0, 0));
    });

    await check('Ctrl+wheel zooms every chart\'s time axis, never the selected window; 0 or the button shows the whole axis', async () => {
      const before = await page.evaluate(() => [window.__kilnReport.run.window, [...window.__kilnReport.run.group.range], location.hash]);
      const geo = await chartGeometry(page, 'cpu');
      await page.mouse.move(geo.left + geo.width / 2, geo.top + 30);
      await page.keyboard.down('Control');
      await page.mouse.wheel(0, -400);
      await page.keyboard.up('Control');
      await settle(page);
      const after = await page.evaluate(() => [window.__kilnReport.run.window, [...window.__kilnReport.run.group.range], location.hash]);
      assert.ok(after[1][1] - after[1][0] < (before[1][1] - before[1][0]) * 0.7, `zoomed in: ${before[1]} → ${after[1]}`);
      assert.deepEqual([after[0], after[2]], [before[0], before[2]], 'the window and the URL stay');
      assert.equal(await page.isVisible('[data-ctrl=zoom-reset]'), true);
      await page.click('[data-ctrl=zoom-reset]');
      await settle(page);
      assert.deepEqual(await page.evaluate(() => [...window.__kilnReport.run.group.range]), before[1]);
      assert.equal(await page.isVisible('[data-ctrl=zoom-reset]'), false);
    });

    await check('the call tree of every viewer: its totals are the flame graph\'s, inverted and not, in the window', async () => {
      for (const invert of [false, true]) {
        const res = await page.evaluate((inv) => {
          return window.__kiln.apps.map((a) => {
            a.setState({ view: 'tree', invert: inv });
            const l = a.derived.layout;
            const stats = a.derived.stats();
            const tree = a.callTree();
            const rows = tree.roots().map((n) => [n.frame, n.total, n.node]);
            const want = rows.map(([f, , v]) => (inv ? stats.self[f] : l.total[v]));
            return { event: a.model.unit.event, rows: rows.map((r) => r[1]), want, total: tree.total, flame: l.total[0] - l.self[0] };
          });
        }, invert);
        for (const r of res) {
          assert.deepEqual(r.rows, r.want, `${r.event}, ${invert ? 'inverted' : 'top-down'}: first-level rows`);
          assert.ok(close_(r.rows.reduce((a, b) => a + b, 0), r.flame), `${r.event}: the rows sum to the flame graph's total`);
        }
      }
      // The header's words stand apart: the last figure's title (right-aligned) and "Function".
      await page.evaluate(() => window.__kiln.apps[0].setState({ view: 'tree', invert: false }));
      await settle(page);
      const gaps = await page.$eval('.kiln-mount >> nth=0', (m) => {
        const cells = [...m.querySelectorAll('.tree .table-head [role=columnheader]')].filter((c) => c.offsetParent);
        const text = (c) => {
          const r = document.createRange();
          r.selectNodeContents(c);
          return r.getBoundingClientRect();
        };
        return cells.slice(1).map((c, i) => text(c).left - text(cells[i]).right);
      });
      assert.ok(gaps.length >= 3 && gaps.every((g) => g >= 8), `space between the call tree's headers: ${gaps}`);
      await page.evaluate(() => window.__kiln.apps.forEach((a) => a.setState({ view: 'flame', invert: false })));
    });

    await check('accessibility scan (axe-core: no moderate, serious or critical violations), light and dark', async () => {
      await axe(page, 'run report');
      page = await open('run.html', '', 'dark');
      const png = await shot(page, 'run-dark');
      const [r, g, b] = png.at(5, 5);
      assert.ok(r + g + b < 150, `dark background, got ${[r, g, b]}`);
      await axe(page, 'run report, dark');
    });
  }

  // ---------------------------------------------------------------- a load's failures
  if (existsSync(join(dir, 'failures.html'))) {
    const exp = expectOf('failures');
    await check('markers: the seconds a load\'s requests failed, at the stored times with the stored counts; a click selects them', async () => {
      const page = await open('failures.html');
      await assertMarkers(page, exp, 'rates', 'failures');
      const load = exp.tables.load;
      const e = edgesOf(load);
      const rate = load.columns.status_5xx;
      const want = [];
      for (let i = 0; i < rate.length; i++) {
        if (!(rate[i] > 0)) continue;
        let j = i;
        let n = 0;
        for (; j < rate.length && rate[j] > 0; j++) n += (rate[j] * (e[j + 1] - e[j])) / 1e9;
        want.push([e[i], e[j], Math.round(n)]);
        i = j;
      }
      assert.ok(want.length >= 1, `the server answered 500 in some seconds: ${rate}`);
      const geo = await chartGeometry(page, 'rates');
      const got = await page.$$eval('.r-marker[data-name="5xx responses"]', (bs) => bs.map((b) => ({ left: b.getBoundingClientRect().left, right: b.getBoundingClientRect().right, count: Number(b.dataset.count) })));
      assert.equal(got.length, want.length, `one marker per run of failing seconds: ${JSON.stringify(got)} for ${JSON.stringify(want)}`);
      const lo = geo.left + 72;
      const hi = geo.left + geo.width - 14;
      const clamp = (x) => Math.min(hi, Math.max(lo, x));
      want.forEach(([a, b, n], k) => {
        assert.ok(Math.abs(got[k].left - clamp(pageX(geo, a))) <= 1 && Math.abs(got[k].right - Math.max(clamp(pageX(geo, a)) + 2, clamp(pageX(geo, b)))) <= 1, `run ${k}: ${got[k].left}–${got[k].right} for ${a}–${b}`);
        assert.equal(got[k].count, n, `run ${k}: the stored seconds' 5xx responses`);
      });
      await page.hover('.r-marker[data-name="5xx responses"] >> nth=0');
      assert.match(await page.textContent('.r-marker-tip'), new RegExp(`^5xx responses: .* s – .* s \\(.*, ${want[0][2].toLocaleString('en-US')} req\\)$`));
      await page.click('.r-marker[data-name="5xx responses"] >> nth=0');
      await settle(page);
      assert.deepEqual(await page.evaluate(() => window.__kilnReport.run.window), [want[0][0], want[0][1]]);
      assert.equal(await hashT(page), `${want[0][0]}-${want[0][1]}`);
      await axe(page, 'failures report');
    });
  }

  // ---------------------------------------------------------------- one event: one viewer
  if (existsSync(join(dir, 'one.html'))) {
    const exp = expectOf('one');
    await check('findings: the panel at the top lists the page\'s findings in their order, each linked to its window, chart and flame graph', async () => {
      // The run's page with findings written by hand here (the shape crates/findings
      // gives the page), on the run's own series and profile.
      const html = readFileSync(join(dir, 'run.html'), 'utf8');
      const m = /(<script[^>]*id="kiln-report-data"[^>]*>)([^<]*)(<\/script>)/.exec(html);
      assert.ok(m, 'the page\'s data');
      const compressed = /data-compressed="1"/.test(m[1]);
      const raw = Buffer.from(m[2].trim(), 'base64');
      const data = JSON.parse((compressed ? inflateSync(raw) : raw).toString('utf8'));
      const cpuKey = data.run.profiles.find((p) => p.event === 'cpu-clock').key;
      data.run.findings = [
        {
          rule: 'one-thread-saturated', class: 'one-thread-saturated', title: 'One thread saturated',
          claim: 'The <b>phases</b> thread ran 97% of the time on one CPU.', explains: { pct: 64.2, of: 'request time' },
          evidence: [{ what: 'CPU of the thread', value: '0.97 CPU', source: 'cpu-clock samples', from_s: 1, to_s: 3, series: 'target/cpu user:phases', profile: 'cpu-clock', focus: 'phase_even' }],
          check: "pidstat -t -p PID 1", score: 0.64,
        },
        { rule: 'sleep-in-path', class: 'sleep-in-path', title: 'Sleep in the request path', claim: 'nanosleep under main.', explains: null, evidence: [], check: '', score: 0.1 },
      ];
      let body = Buffer.from(JSON.stringify(data), 'utf8');
      if (compressed) body = deflateSync(body);
      writeFileSync(join(dir, 'run-findings.html'), html.replace(m[0], `${m[1]}${body.toString('base64')}${m[3]}`));
      page = await open('run-findings.html');
      const items = await page.$$eval('#r-findings .r-finding', (e) => e.map((x) => [x.dataset.finding, x.querySelector('.r-finding-claim').textContent]));
      assert.deepEqual(items.map((i) => i[0]), ['one-thread-saturated', 'sleep-in-path'], 'in the page\'s order');
      assert.equal(items[0][1], 'One thread saturated: The <b>phases</b> thread ran 97% of the time on one CPU. [64% of request time]', 'text, as the summary writes it');
      assert.equal(await page.$$eval('#r-findings b', (e) => e.length), 0, 'names stay text');
      const top = await page.$eval('#r-findings', (e) => e.getBoundingClientRect().top);
      const timeline = await page.$eval('#r-timeline', (e) => e.getBoundingClientRect().top);
      assert.ok(top < timeline, 'the panel is above the charts');
      // Its window: the seconds the evidence covers, on the page's clock.
      await page.click('[data-finding-window]');
      await settle(page);
      assert.deepEqual(await page.evaluate(() => window.__kilnReport.run.window), [1e9, 3e9]);
      // Its chart: scrolled to and focused.
      await page.click('[data-finding-series]');
      await settle(page);
      const chart = await page.evaluate(() => document.activeElement?.closest('.r-chart')?.dataset.chart);
      assert.equal(chart, 'cpu', 'the chart of target/cpu user:phases');
      // Its flame graph, the function searched.
      await page.click('[data-finding-profile]');
      await page.waitForFunction((k) => document.querySelector(`#r-profile-${k} [data-ctrl=search]`)?.value === 'phase_even', cpuKey);
      const app = await page.evaluate((k) => window.__kiln.apps.findIndex((a) => document.getElementById(`r-profile-${k}`).contains(a.root)), cpuKey);
      await page.waitForFunction((i) => window.__kiln.apps[i].state.query === 'phase_even', app);
      const sectionTop = await page.$eval(`#r-profile-${cpuKey}`, (e) => e.getBoundingClientRect().top);
      assert.ok(Math.abs(sectionTop) < 5, `the flame graph scrolled to: ${sectionTop}`);
      await axe(page, 'findings');
    });

    await check('a page of one viewer: its heading counts the window\'s samples, as the viewer does', async () => {
      assert.equal(exp.profiles.length, 1);
      const e = edgesOf(exp.tables.target).filter((x) => x >= exp.measure[0]);
      for (const w of [[e[0], e[1]], [e[1], e[3]], exp.measure]) {
        page = await open('one.html', `t=${w[0]}-${w[1]}`);
        await assertHeadings(page, exp, w, `window ${w} from the URL`);
        await page.evaluate(() => window.__kilnReport.run.setWindow(null));
        await page.evaluate((x) => window.__kilnReport.run.setWindow(x), w);
        await settle(page);
        await assertHeadings(page, exp, w, `window ${w} selected`);
        const p = exp.profiles[0];
        const fact = await page.textContent('[data-fact=samples] .fact-value');
        assert.ok(fact.startsWith(`${samplesIn(p, w).toLocaleString('en-US')} of ${p.samples.length.toLocaleString('en-US')}`), `the viewer: ${fact}`);
      }
    });
  }

  // ---------------------------------------------------------------- an idle target, a long name
  if (existsSync(join(dir, 'idle.html'))) {
    const exp = expectOf('idle');
    page = await open('idle.html');
    await check('an idle run: "no samples in this run, because …" instead of blank flame graphs', async () => {
      for (const p of exp.profiles) assert.equal(p.samples.length, 0, `${p.event}: the idle target has no samples`);
      const hs = await page.$$eval('[data-ctrl=profile-heading]', (e) => e.map((x) => x.textContent));
      assert.ok(hs.length >= 1 && hs.every((h) => /: no samples in this run$/.test(h)), `${hs}`);
      const notes = await page.$$eval('.kiln-mount [data-ctrl=empty]', (e) => e.map((x) => [x.hidden, x.textContent]));
      assert.equal(notes.length, hs.length);
      for (const [hidden, text] of notes) {
        assert.equal(hidden, false);
        assert.match(text, /^No samples in this profile: (the target did not run on a CPU|no thread of the target was off CPU) while it was recorded/);
      }
      // No 700-px blank boxes: an empty viewer is as tall as its message.
      const heights = await page.$$eval('.kiln-mount .kiln', (e) => e.map((x) => x.getBoundingClientRect().height));
      assert.ok(heights.every((h) => h < 300), `heights ${heights}`);
      await assertHeadings(page, exp, exp.measure, 'idle, a window');
    });
    await check('a long name (126 characters, names are at most 128) on a narrow window: the page stays in its column, the full name on hover', async () => {
      assert.ok(exp.name.length >= 120);
      // Narrow enough that the name cannot fit on one line.
      await page.setViewportSize({ width: 600, height: 720 });
      await settle(page);
      const [sw, iw] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
      assert.ok(sw <= iw, `no sideways scrolling: ${sw} > ${iw}`);
      const title = await page.$eval('[data-field=title]', (e) => [e.textContent, e.title, e.getBoundingClientRect().right]);
      assert.equal(title[1], title[0], 'the full title on hover');
      assert.ok(title[2] <= iw);
      // Every element inside the page's column (canvases and scrolled tables excepted: they
      // scroll inside it).
      const out = await page.evaluate(insideColumn);
      assert.deepEqual(out.bad, [], `elements outside the column ${out.col}`);
      // The viewer's title is cut to the column, its full text on hover.
      const vt = await page.$eval('.kiln-mount .title', (e) => [e.title, e.scrollWidth > e.clientWidth]);
      assert.ok(vt[0].includes(exp.name) && vt[1], 'cut, with the name in the tooltip');
      await axe(page, 'idle run with a long name');
      page = await open('idle.html', '', 'dark');
      await axe(page, 'idle run with a long name, dark');
    });
  }

  // ---------------------------------------------------------------- sweeps (RabbitMQ)
  if (existsSync(join(dir, 'sweep.html'))) {
    const sw = expectOf('sweep');
    page = await open('sweep.html');
    await check('sweep: the latency-vs-rate curve; a click on a step selects its window exactly', async () => {
      assert.ok(await page.$('[data-chart=sweep-latency]'), 'latency curve');
      assert.ok(await page.$('[data-chart=sweep-throughput]'), 'throughput curve');
      const labels = await page.$$eval('[data-chart=sweep-latency] .r-item', (e) => e.map((x) => x.getAttribute('data-series')));
      assert.ok(labels.includes('p99') && labels.includes('p99 intended'), `measured and intended latency: ${labels}`);
      const pos = await page.evaluate(() => {
        const c = window.__kilnReport.run.sweep[0];
        c.canvas.scrollIntoView({ block: 'center' });
        const b = c.canvas.getBoundingClientRect();
        return { x: b.left + c.xOf(c.count - 1), y: b.top + b.height / 2 };
      });
      await page.mouse.click(pos.x, pos.y);
      await settle(page);
      const step = sw.windows[sw.windows.length - 1];
      assert.deepEqual(await page.evaluate(() => window.__kilnReport.run.window), [step.start, step.end]);
      await assertViewersShow(page, sw, [step.start, step.end], `step ${step.name}`);
      await page.click(`[data-step="${sw.windows[0].name}"]`);
      await settle(page);
      await assertViewersShow(page, sw, [sw.windows[0].start, sw.windows[0].end], `step ${sw.windows[0].name}`);
    });
    await check('sweep: its steps and flow control on the marker row at the stored times; the measurement marker selects the measurement', async () => {
      page = await open('sweep.html');
      const got = await assertMarkers(page, sw, 'rates', 'sweep');
      assert.equal(got.filter((m) => m.kind === 'sweep step').length, sw.windows.length, 'one marker per step');
      await page.click('.r-marker[data-marker=measurement]');
      await settle(page);
      const w = sw.measure;
      assert.deepEqual(await page.evaluate(() => window.__kilnReport.run.window), w);
      assert.equal(await hashT(page), `${w[0]}-${w[1]}`);
      await assertFigures(page, sw, w, 'the measurement marker');
      const step = sw.windows[sw.windows.length - 1];
      await page.click(`.r-marker[data-name="step ${step.name}"]`);
      await settle(page);
      assert.equal(await hashT(page), `${step.start}-${step.end}`);
      await assertFigures(page, sw, [step.start, step.end], `the marker of step ${step.name}`);
      await page.click('[data-ctrl=clear]');
      await settle(page);
    });

    await check('sweep: one headline row per step, the knee marked, step boundaries on the charts; a row selects its step', async () => {
      const rows = await page.$$eval('[data-table=sweep-steps] tbody tr', (trs) => trs.map((tr) => ({ step: tr.dataset.step, knee: tr.dataset.knee === '1', held: tr.children[3].textContent })));
      assert.deepEqual(
        rows.map((r) => r.step),
        sw.windows.map((w) => w.name),
      );
      assert.ok(rows.every((r) => /^(held|not held \(−\d+%\))$/.test(r.held)), `held or not: ${JSON.stringify(rows)}`);
      const finding = await page.textContent('[data-field=knee]');
      assert.equal(rows.filter((r) => r.knee).length, finding.startsWith('knee at ') || finding.startsWith('no knee within') ? 1 : 0, finding);
      const steps = await page.evaluate(() => window.__kilnReport.run.group.opts.steps);
      assert.equal(steps.length, sw.windows.length, 'a boundary at each step after the first and at the end');
      assert.deepEqual(
        steps.map((b) => b.at),
        [...sw.windows.slice(1).map((w) => w.start), sw.windows[sw.windows.length - 1].end],
      );
      await page.click(`[data-table=sweep-steps] [data-step="${sw.windows[0].name}"] button`);
      await settle(page);
      assert.deepEqual(await page.evaluate(() => window.__kilnReport.run.window), [sw.windows[0].start, sw.windows[0].end]);
    });
    await check('one time grid: under a step or a window of whole seconds, every figure, the BEAM states, the latency named and what the recording holds are kiln runs show\'s', async () => {
      page = await open('sweep.html');
      const data = await page.evaluate(() => window.__kilnReport.run.data);
      // The category charts are on the load's seconds, as every other figure of a window.
      const loadEdges = edgesOf(sw.tables.load);
      for (const c of data.categories) assert.deepEqual(c.edges, loadEdges, `${c.event}: the category chart's seconds are the load's`);
      assert.ok(data.beam, 'a BEAM target: its scheduler states are on the page');
      assert.ok(sw.show.length >= 2, `the steps and a span: ${sw.show.map((s) => s.ref)}`);
      const headline = (s, k) => s.json.headline[k] ?? null;
      for (const s of sw.show) {
        await page.evaluate((w) => window.__kilnReport.run.setWindow(w), s.window);
        await settle(page);
        const what = `${s.ref} (${s.window})`;
        const cards = await cardsOf(page);
        // The BEAM's line(s) as the command prints them; none where it prints none.
        const cli = s.text
          .split('\n')
          .map((l) => l.trim())
          .filter((l) => l.startsWith('BEAM schedulers by state') || l.startsWith('waiting for a CPU'))
          .join('\n');
        const beam = await page.textContent('[data-field=beam]');
        if (cli) assert.equal(beam, cli, what);
        else assert.equal(beam, 'BEAM schedulers by state: no scheduler sample in these seconds', `${what}: kiln runs show prints none:\n${s.text}`);
        // One latency: the command's is the page's, and its percentiles are the cards'.
        const lat = /^ {2}latency \(([^)]+)\)/m.exec(s.text);
        assert.ok(lat, `${what}: a latency line in\n${s.text}`);
        assert.equal(lat[1], data.latency, `${what}: the command's latency is the page's`);
        assert.equal(headline(s, 'latency'), data.latency, what);
        for (const [card, key] of [['p50', 'p50_us'], ['p99', 'p99_us'], ['p999', 'p999_us'], ['max', 'max_us']]) {
          assert.equal(cards[card]?.[0], headline(s, key), `${what}: ${card}`);
        }
        // The load's and the target's figures: the same seconds, the same sums.
        assert.ok(close_(cards.throughput[0], headline(s, 'throughput')), `${what}: throughput ${cards.throughput[0]} against ${headline(s, 'throughput')}`);
        const secsOf = (t) => rowsIn(t, s.window).reduce((a, [, dt]) => a + dt / 1e9, 0);
        // The target's CPU: the sampler's counters over exactly the window
        // (kiln_store::window::figures), its share of the window's length.
        const cpuS = headline(s, 'target_cpu_s');
        assert.ok(close_((cards.target_cpu[0] * (s.window[1] - s.window[0])) / 1e9 / 100, cpuS), `${what}: target CPU ${cards.target_cpu[0]}% against ${cpuS} s`);
        assert.equal(cards.rss[0], headline(s, 'rss_max_bytes'), `${what}: RSS`);
        // kiln's eBPF CPU of the window: the recording's, given to the seconds by their
        // samples, summed over the window's (as the command sums it).
        const bpf = headline(s, 'kiln_bpf_cpu_s');
        if (bpf !== null) {
          assert.ok(cards.kiln_bpf_cpu && cards.kiln_bpf_cpu[1] === 'window', `${what}: the eBPF card is the window's`);
          assert.ok(close_((cards.kiln_bpf_cpu[0] * secsOf(sw.tables.load)) / 100, bpf), `${what}: eBPF ${cards.kiln_bpf_cpu[0]}% against ${bpf} s`);
        } else assert.equal(data.ebpf ?? null, null, `${what}: the run measured no eBPF CPU`);
        // A window reaching outside the recording says what it holds, as the command warns.
        const warn = /warning: window [^:]+: (the recording covers .*)$/m.exec(s.text);
        const bar = await page.textContent('[data-ctrl=window]');
        const profileWindows = await page.$$eval('[data-ctrl=profile-window]', (e) => e.map((x) => x.textContent));
        if (warn) {
          assert.ok(bar.includes(warn[1]), `${what}: the window bar says ${warn[1]}: ${bar}`);
          for (const t of profileWindows) assert.ok(t.includes(warn[1]), `${what}: above the flame graph: ${t}`);
        } else assert.ok(!bar.includes('the recording covers'), `${what}: ${bar}`);
      }
      assert.ok(
        sw.show.some((s) => /the recording covers/.test(s.text)),
        'a step outside the 3 s recording is said',
      );
      // The sweep's curves and both its tables give each step's latency as the command does.
      for (const p of data.sweep.points) {
        const s = sw.show.find((x) => x.ref === `sweep@${p.name}`);
        assert.ok(s, `${p.name}: kiln runs show sweep@${p.name}`);
        assert.equal(p.latency?.p50 ?? null, headline(s, 'p50_us'), `${p.name}: the sweep's p50`);
        assert.equal(p.latency?.p99 ?? null, headline(s, 'p99_us'), `${p.name}: the sweep's p99`);
        const k = data.knee.steps.find((x) => x.name === p.name);
        assert.equal(k.p50_us, headline(s, 'p50_us'), `${p.name}: the steps' table p50`);
      }
      await page.evaluate(() => window.__kilnReport.run.setWindow(null));
      await settle(page);
    });
    await check('rate-limited load: intended-time latency beside the measured one; flow-control strip; hover equals the store', async () => {
      const lat = await page.$$eval('[data-chart="latency:consumer_latency"] .r-item', (e) => e.map((x) => x.getAttribute('data-column')));
      assert.ok(lat.includes('consumer_latency p99') && lat.includes('consumer_latency_intended p99'), `${lat}`);
      assert.ok(await page.$('[data-chart=spans]'), 'the flow-control strip');
      const load = sw.tables.load;
      const geo = await chartGeometry(page, 'rates');
      const i = Math.floor(load.time.length / 2);
      await page.mouse.move(1, 1);
      await page.mouse.move(pageX(geo, (load.time[i - 1] + load.time[i]) / 2), geo.top + 20);
      await settle(page);
      for (const c of ['sent', 'received']) {
        const v = await page.getAttribute(`[data-chart=rates] [data-column="${c}"] .r-value`, 'data-value');
        assert.equal(Number(v), load.columns[c][i], `${c} at row ${i}`);
      }
      const p99 = await page.getAttribute('[data-chart="latency:consumer_latency"] [data-column="consumer_latency p99"] .r-value', 'data-value');
      assert.equal(p99 === '' ? null : Number(p99), load.columns['consumer_latency p99'][i]);
      const cats = await page.$$eval('[data-chart="category:cpu-clock"] .r-item', (e) => e.map((x) => x.getAttribute('data-column')));
      // The testkit's broker runs without +JPperf: no Erlang names, but the runtime's are there.
        assert.ok(cats.includes('I/O polling (poll/epoll)') && cats.some((c) => c.startsWith('BEAM')), `BEAM categories: ${cats}`);
      await axe(page, 'sweep report');
    });
    await check('latency figures, legends and distribution of a window: exactly the stored seconds\' histograms merged', async () => {
      page = await open('sweep.html');
      const load = sw.tables.load;
      const lat = await page.evaluate(() => window.__kilnReport.run.data.latency);
      assert.ok(lat, 'a headline latency');
      const expLat = { ...sw, latency: lat };
      let compared = 0;
      // Every window of whole stored seconds the store's oracle has (at most six).
      const windows = Object.keys(sw.latencies).map((k) => k.split(/(?<=\d)-/).map(Number)).slice(0, 6);
      assert.ok(windows.length >= 3, `windows of the stored seconds: ${windows.length} (${load.time.length} seconds)`);
      for (const w of windows) {
        const want = sw.latencies[`${w[0]}-${w[1]}`];
        if (!want || !want[lat]) continue;
        await page.evaluate((x) => window.__kilnReport.run.setWindow(x), w);
        await settle(page);
        await assertFigures(page, expLat, w, `window ${w}`);
        // The latency chart's legend (away from the cursor): the same exact percentiles.
        await page.mouse.move(1, 1);
        await settle(page);
        for (const [q, k] of [['p50', 'p50'], ['p99', 'p99'], ['p99.9', 'p999'], ['max', 'max']]) {
          const v = await page.getAttribute(`[data-chart="latency:${lat}"] [data-column="${lat} ${q}"] .r-value`, 'data-value');
          assert.equal(Number(v), want[lat][k], `${lat} ${q} in ${w}`);
          const intended = want[`${lat}_intended`];
          if (intended) assert.equal(Number(await page.getAttribute(`[data-chart="latency:${lat}"] [data-column="${lat}_intended ${q}"] .r-value`, 'data-value')), intended[k]);
        }
        assert.match(await page.textContent(`[data-chart="latency:${lat}"] [data-ctrl=caption]`), /^exact percentiles of the window’s seconds merged: the window/);
        // The distribution is the window's: its count is the merged histograms'.
        const label = await page.$eval('[data-chart=distribution] .r-item .r-label', (x) => x.textContent);
        const n = want[lat].count;
        if (n < 1e4) assert.ok(label.endsWith(`(${n.toLocaleString('en-US')} values)`), `${label}: ${n} values`);
        assert.match(await page.textContent('[data-chart=distribution] .r-chart-title'), /over the window/);
        compared++;
      }
      assert.ok(compared >= 3, `windows compared: ${compared} of ${windows.length}`);
      // Over the measurement, the page's curve from the merged seconds is the one the run
      // stored for the measurement (HdrHistogram's own merge and quantile iteration).
      const same = await page.evaluate(() => {
        const r = window.__kilnReport.run;
        r.setWindow(null);
        const d = r.data.distributions[0];
        const shown = r.distribution.spec.series[0];
        return { stored: d.points, shown: shown.points, label: shown.label };
      });
      assert.deepEqual(same.shown, same.stored, `the measurement's curve (${same.label})`);
    });
  }

  // ---------------------------------------------------------------- a Go target's own pprof (kiln run --pprof)
  if (existsSync(join(dir, 'pprof.html'))) {
    page = await open('pprof.html');
    await check('pprof: the target\'s own profiles in a column beside kiln\'s, marked as its own, not filtered by a window', async () => {
      const cols = await page.$$eval('.r-pair > .r-profile-col', (e) =>
        e.map((c) => {
          const b = c.getBoundingClientRect();
          return { left: b.left, right: b.right, top: b.top, origin: c.getAttribute('data-origin'), profiles: [...c.querySelectorAll('[data-profile]')].map((p) => p.querySelector('h3').textContent) };
        }),
      );
      assert.equal(cols.length, 2, 'two columns');
      const [own, theirs] = cols;
      assert.equal(own.origin, null);
      assert.equal(theirs.origin, 'pprof');
      assert.ok(own.profiles.some((p) => p.startsWith('cpu-clock')) && own.profiles.some((p) => p.startsWith('offcpu')), `kiln's: ${own.profiles}`);
      assert.ok(own.profiles.every((p) => !p.startsWith('pprof ')), `kiln's: ${own.profiles}`);
      assert.ok(theirs.profiles.length > 0 && theirs.profiles.every((p) => p.startsWith('pprof ')), `the target's: ${theirs.profiles}`);
      // Go's CPU profile faces kiln's CPU profile, Go's delays its off-CPU time.
      assert.ok(theirs.profiles[0].startsWith('pprof cpu') && theirs.profiles[1].startsWith('pprof block delay'), `${theirs.profiles}`);
      // Side by side at the tests' 1280 px: the same top, the target's to the right.
      assert.ok(theirs.left >= own.right - 1 && Math.abs(theirs.top - own.top) < 2, `columns ${JSON.stringify(cols)}`);
      const origins = await page.$$eval('[data-origin=pprof] [data-ctrl=profile-origin]', (e) => e.map((x) => x.textContent));
      assert.equal(origins.length, theirs.profiles.length);
      for (const o of origins) assert.match(o, /net\/http\/pprof endpoint \(http:\/\/127\.0\.0\.1:\d+\/debug\/pprof\//);
      // Every flame graph is drawn; a window selects kiln's samples and leaves Go's whole.
      assert.equal(await page.evaluate(() => window.__kiln.apps.length), own.profiles.length + theirs.profiles.length);
      const m = await page.evaluate(() => window.__kilnReport.run.data.measure);
      await page.evaluate((w) => window.__kilnReport.run.setWindow(w), [m.start, m.start + (m.end - m.start) / 4]);
      await settle(page);
      assert.match(await page.textContent('[data-profile] [data-ctrl=profile-window]'), /^Samples in /);
      assert.deepEqual(await page.$$eval('[data-origin=pprof] [data-ctrl=profile-origin]', (e) => e.map((x) => x.textContent)), origins);
      await shot(page, 'pprof');
      await axe(page, 'pprof report');
    });
  }

  // ---------------------------------------------------------------- compare
  if (existsSync(join(dir, 'compare.html'))) {
    const ce = JSON.parse(readFileSync(join(dir, 'compare.expect.json'), 'utf8'));
    page = await open('compare.html');
    await check('compare: the overall line, settings held, verdicts coloured, hostile labels as text', async () => {
      assert.equal(await page.evaluate(() => window.__pwned ?? null), null);
      assert.equal(await page.$$eval('img, iframe', (e) => e.length), 0);
      const overall = await page.textContent('[data-field=overall]');
      assert.ok(overall.startsWith(`fast against ${ce.labels[0]}: `), overall);
      const rows = await page.$$eval('[data-table=figures] tbody tr[data-metric]', (trs) =>
        trs.map((tr) => {
          const c = tr.querySelector('[data-change="1"]');
          const v = tr.querySelector('[data-verdict]');
          return {
            key: tr.dataset.metric,
            role: tr.dataset.role,
            held: [...tr.querySelectorAll('[data-held]')].map((x) => x.dataset.held),
            text: c?.textContent ?? '',
            cls: c?.className ?? '',
            pct: Number(c?.dataset.percent),
            verdict: v?.dataset.verdict ?? '',
            color: c ? getComputedStyle(c).color : '',
          };
        }),
      );
      // Two set rates, both held: a setting, never better or worse.
      const thr = rows.find((r) => r.key === 'throughput');
      assert.ok(thr, 'a throughput row');
      assert.equal(thr.role, 'setting');
      assert.deepEqual(thr.held, ['held', 'held']);
      assert.ok(thr.pct > 50, `throughput rose: ${thr.pct}`);
      assert.match(thr.text, /^\+\d+\.\d%$/);
      assert.equal(thr.verdict, 'shown');
      assert.match(thr.cls, /r-same/);
      assert.equal(rows.find((r) => r.key === 'target_cpu')?.role, 'context', 'total CPU at another rate is context');
      for (const r of rows) {
        if (!r.text || r.text === 'new') continue;
        if (Math.abs(r.pct) >= 0.05) assert.equal(r.text.startsWith('+'), r.pct > 0, `${r.key}: sign of ${r.text} and ${r.pct}`);
        // One run per group: no outcome can be told from noise.
        if (r.role === 'outcome') assert.equal(r.verdict, 'cannot_tell', `${r.key}`);
        else assert.equal(r.verdict, 'shown', `${r.key}`);
        assert.match(r.cls, /r-same/, `${r.key} is not coloured better or worse`);
      }
      const labels = await page.$$eval('.r-group h3', (e) => e.map((x) => x.textContent));
      assert.ok(labels[0].includes(ce.labels[0]), `${labels[0]} names ${ce.labels[0]} as text`);
    });
    await check('compare: distributions and series overlaid, hover equals each run’s stored values', async () => {
      const n = await page.evaluate(() => window.__kilnReport.compare.distribution.spec.series.length);
      assert.ok(n >= 2, `two groups' distributions, got ${n}`);
      const geo = await chartGeometry(page, 'throughput');
      await settle(page);
      const png = await shot(page, 'compare-throughput');
      assert.ok(colouredPixels(png, { left: geo.left + 72, top: geo.top, width: geo.width - 86, height: geo.plotH }) > 100);
      const i = 2;
      const t = ce.runs[0].load.time;
      await page.mouse.move(1, 1);
      await page.mouse.move(pageX(geo, (t[i - 1] + t[i]) / 2), geo.top + 20);
      await settle(page);
      const vals = await page.$$eval('[data-chart=throughput] .r-item', (e) => e.map((x) => [x.dataset.column, x.querySelector('.r-value').dataset.value]));
      // The column counting completed operations (the store does not name it: the page
      // takes the rate whose mean is the headline throughput).
      const [col, v] = vals[0];
      assert.ok(col === 'received' || col === 'sent', `a message rate: ${col}`);
      assert.equal(Number(v), ce.runs[0].load.columns[col][i], `the first run's ${col} at that second`);
      const fn = await page.$$eval('[data-table=functions] tbody tr', (trs) => trs.length);
      assert.ok(fn > 0, 'the function table');
      // Functions are judged like figures: coloured only beyond noise (one run each here).
      const fv = await page.$$eval('[data-table=functions] tr[data-verdict]', (e) => e.map((x) => [x.dataset.verdict, x.querySelector('td[data-delta]').className]));
      for (const [v, cls] of fv) assert.match(cls, v === 'regressed' ? /r-worse/ : v === 'improved' ? /r-better/ : /r-same/, `${v}`);
      assert.ok(fv.every(([v]) => v === 'cannot_tell'), 'one run each: no function can be told from noise');
      assert.equal(await page.evaluate(() => window.__kiln.apps[0].model.isDiff), true, 'the differential flame graph');
      await axe(page, 'compare');
      page = await open('compare.html', '', 'dark');
      await axe(page, 'compare, dark');
    });
    await check('compare: everything in the content column, the differential viewer in its section; p99 legends are each run\'s own figure, its group\'s median beside it', async () => {
      page = await open('compare.html');
      const out = await page.evaluate(insideColumn);
      assert.deepEqual(out.bad, [], `elements outside the column ${out.col}`);
      const where = await page.evaluate(() => {
        const m = document.querySelector('.kiln-mount');
        const col = document.querySelector('main').getBoundingClientRect();
        const r = m.getBoundingClientRect();
        return { inMain: !!m.closest('main .r-section'), left: r.left, right: r.right, col: [col.left, col.right] };
      });
      assert.ok(where.inMain, 'the viewer is inside its section');
      assert.ok(where.left >= where.col[0] && where.right <= where.col[1], `the viewer's box ${where.left}–${where.right} inside ${where.col}`);
      const p99 = await page.$$eval('[data-chart=p99] .r-item', (e) => e.map((x) => x.querySelector('.r-value').textContent));
      const cells = await page.$$eval('[data-table=figures] tr[data-metric=p99] td[data-group]', (e) => e.map((x) => x.textContent));
      // Each run's own figure; a group of repeats' median beside it, as the table has it.
      const median = (c) => c.replace(/ \(.*$/, '');
      assert.ok(p99.length >= 2 && p99.every((v) => cells.some((c) => v === c || v.endsWith(`(its group's median ${median(c)})`))), `legend ${p99}, table ${cells}`);
      assert.match(await page.textContent('[data-chart=p99] [data-ctrl=caption]'), /^p99 over each whole measurement, from its histograms/);
    });
    await check('compare: a window dragged on the series is the same seconds of every run: its figures per group and the command that judges it', async () => {
      page = await open('compare.html');
      const geo = await chartGeometry(page, 'throughput');
      await page.mouse.move(pageX(geo, 1.2e9), geo.top + 30);
      await page.mouse.down();
      await page.mouse.move(pageX(geo, 2e9), geo.top + 30, { steps: 3 });
      await page.mouse.move(pageX(geo, 2.8e9), geo.top + 30, { steps: 3 });
      await page.mouse.up();
      await settle(page);
      assert.equal(await page.isVisible('[data-field=window-figures]'), true, 'the window figures are shown');
      const cmd = await page.textContent('[data-field=window-command]');
      assert.equal(cmd, `kiln compare ${ce.labels[0]}@1-3 ${ce.labels[1]}@1-3`);
      // The first group's throughput over seconds 1-3: its stored seconds whose middle
      // lies in them, weighted by their lengths.
      const load = ce.runs[0].load;
      // The column the page counts completed operations in (its throughput legend's).
      const col = await page.$eval('[data-chart=throughput] .r-item', (x) => x.dataset.column);
      let sum = 0;
      let secs = 0;
      for (let i = 1; i < load.time.length; i++) {
        const dt = load.time[i] - load.time[i - 1];
        const mid = load.time[i] - dt / 2;
        const v = load.columns[col][i];
        if (mid >= 1e9 && mid < 3e9 && v !== null) {
          sum += v * dt;
          secs += dt;
        }
      }
      const shown = Number(await page.getAttribute('[data-table=window-figures] tr[data-metric=throughput] td[data-group="0"]', 'data-value'));
      assert.ok(secs > 0 && Math.abs(shown - sum / secs) <= 1e-6 * (sum / secs), `throughput over 1-3 s: shown ${shown}, stored ${col} ${sum / secs}`);
      // Every row kiln compare prints for these seconds, and its medians: the BEAM's
      // busy-wait and polling and kiln's eBPF CPU too (put on the runs' seconds by Rust).
      const rows = await page.$$eval('[data-table=window-figures] tr[data-metric]', (trs) =>
        trs.map((tr) => ({ key: tr.dataset.metric, values: [...tr.querySelectorAll('td[data-group]')].map((td) => ({ value: td.dataset.value, text: td.textContent })) })),
      );
      const cmp = ce.window.json;
      assert.deepEqual(rows.map((r) => r.key).sort(), cmp.rows.map((r) => r.key).sort(), 'the same figures as kiln compare');
      for (const k of ['beam_busy_wait', 'beam_check_io']) assert.ok(cmp.rows.some((r) => r.key === k), `kiln compare has ${k} for a window of a BEAM: ${cmp.rows.map((r) => r.key)}`);
      for (const want of cmp.rows) {
        const got = rows.find((r) => r.key === want.key);
        const line = ce.window.text.split('\n').find((l) => l.startsWith(`${want.label}  `));
        assert.ok(line, `${want.key}: a line in kiln compare's text`);
        want.groups.forEach((g, i) => {
          if (g) assert.ok(Math.abs(Number(got.values[i].value) - g.median) <= 1e-9 * Math.max(1, Math.abs(g.median)), `${want.key} of group ${i}: page ${got.values[i].value}, kiln compare ${g.median}`);
          assert.ok(line.includes(got.values[i].text), `${want.key}: group ${i} '${got.values[i].text}' in '${line}'`);
        });
      }
      await page.keyboard.press('Escape');
      await settle(page);
    });
  }

  // ---------------------------------------------------------------- a window judged on the compare page
  // compare-window.expect.json holds what `kiln compare LABEL@A-B ...` printed (JSON and
  // text) for the window the check drags: the page must say the same of it.
  if (existsSync(join(dir, 'compare-window.html'))) {
    const we = expectOf('compare-window');
    await check('compare: a window dragged is judged as kiln compare LABEL@START-END judges it: figures, changes, p-values, verdicts, words', async () => {
      page = await open('compare-window.html');
      const curves = await page.evaluate(() => window.__kilnReport.compare.distribution.spec.series.length);
      assert.ok(curves >= we.labels.length, `a latency curve per group at least: ${curves}`);
      const [a, b] = we.window;
      const geo = await chartGeometry(page, 'throughput');
      await page.mouse.move(pageX(geo, (a + 0.2) * 1e9), geo.top + 30);
      await page.mouse.down();
      await page.mouse.move(pageX(geo, (a + b) * 0.5e9), geo.top + 30, { steps: 3 });
      await page.mouse.move(pageX(geo, (b - 0.2) * 1e9), geo.top + 30, { steps: 3 });
      await page.mouse.up();
      await settle(page);
      assert.equal(await page.textContent('[data-field=window-command]'), `kiln compare ${we.labels.map((l) => `${l}@${a}-${b}`).join(' ')}`);
      const rows = await page.$$eval('[data-table=window-figures] tr[data-metric]', (trs) =>
        trs.map((tr) => ({
          key: tr.dataset.metric,
          role: tr.dataset.role,
          values: [...tr.querySelectorAll('td[data-group]')].map((td) => ({ value: td.dataset.value, text: td.textContent })),
          changes: [...tr.querySelectorAll('td[data-change]')].map((td) => ({ i: Number(td.dataset.change), verdict: td.dataset.verdict, percent: td.dataset.percent, p: td.dataset.p, text: td.textContent })),
        })),
      );
      const cmp = we.json;
      assert.deepEqual(rows.map((r) => r.key).sort(), cmp.rows.map((r) => r.key).sort(), 'the same figures');
      const close = (x, y, what) => assert.ok(Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(y)), `${what}: page ${x}, kiln compare ${y}`);
      let judged = 0;
      for (const want of cmp.rows) {
        const got = rows.find((r) => r.key === want.key);
        assert.equal(got.role, want.role, `${want.key}: role`);
        // The text table's line of this figure: every cell the page shows is in it.
        const line = we.text.split('\n').find((l) => l.startsWith(`${want.label}  `));
        assert.ok(line, `${want.key}: a line in kiln compare's text`);
        want.groups.forEach((g, i) => {
          if (g) close(Number(got.values[i].value), g.median, `${want.key} median of group ${i}`);
          assert.ok(line.includes(got.values[i].text), `${want.key}: group ${i} '${got.values[i].text}' in '${line}'`);
        });
        want.changes.forEach((c, i) => {
          if (!c || i === 0) return;
          const pc = got.changes.find((x) => x.i === i);
          if (c.percent !== null) close(Number(pc.percent), c.percent, `${want.key} change of group ${i}`);
          if (c.p === undefined) assert.equal(pc.p, '', `${want.key}: no p for group ${i}`);
          else close(Number(pc.p), c.p, `${want.key} p of group ${i}`);
          if (want.role === 'outcome') {
            assert.equal(pc.verdict, c.verdict, `${want.key} verdict of group ${i}`);
            if (c.p !== undefined) judged++;
          }
          assert.ok(line.includes(pc.text), `${want.key}: change '${pc.text}' in '${line}'`);
        });
      }
      assert.ok(judged >= 3, `verdicts with a p-value compared: ${judged}`);
      // The overall line: the same, up to what moved in the profile (the command's alone).
      const overall = await page.$eval('[data-field=window-overall]', (p) => ({ verdict: p.dataset.verdict, text: p.textContent }));
      assert.equal(overall.verdict, cmp.overall.verdict);
      assert.ok(cmp.overall.line.startsWith(overall.text), `overall: page '${overall.text}', kiln compare '${cmp.overall.line}'`);
      const notes = await page.$$eval('[data-field=window-note]', (e) => e.map((x) => x.textContent));
      assert.ok(notes.some((n) => n.includes('paired by round')) && notes.some((n) => n.includes('Mann-Whitney')), `${notes}`);
      // The pairing is said in the command's own words.
      for (const n of notes.filter((x) => /paired/.test(x))) assert.ok(cmp.notes.includes(n), `note '${n}' among kiln compare's: ${cmp.notes}`);
      // The latency distributions follow the window: each group's runs over those seconds.
      const dist = () => page.evaluate(() => ({ title: window.__kilnReport.compare.distribution.spec.title, n: window.__kilnReport.compare.distribution.spec.series.length }));
      const inWindow = await dist();
      assert.ok(inWindow.title.includes('over the window 1.0 s'), inWindow.title);
      assert.equal(inWindow.n, curves, 'every curve of the measurements, over the window');
      await shot(page, 'compare-window');
      await axe(page, 'compare, a window judged');
      await page.keyboard.press('Escape');
      await settle(page);
      assert.ok((await dist()).title.includes('over each measurement'), 'the measurements\' curves again');
    });
  }

  // compare-profile.expect.json holds what `kiln compare LABEL@A-B ...` printed (JSON and
  // text) for a window, and the whole measurements' JSON: under the window the page's
  // overall line must carry the command's clause on the profile, and its function tables
  // must be the command's for those seconds, after a reload too.
  if (existsSync(join(dir, 'compare-profile.html'))) {
    const pe = expectOf('compare-profile');
    const [a, b] = pe.window;
    const cmp = pe.json;
    // The clause the command puts on its overall line (before the findings' changes).
    const clauseOf = (line) => {
      const at = line.search(/(in the profile|but the profile changed) \(/);
      if (at < 0) return null;
      const end = line.indexOf('; findings: ', at);
      return line.slice(at, end < 0 ? undefined : end);
    };
    const clause = clauseOf(cmp.overall.line);
    // The check can tell a window's profile from the whole measurements' only when they differ.
    const key = (tables) => JSON.stringify(tables.map((t) => t.rows.map((r) => [r.name, r.before.median, r.after.median])));
    const shownTables = (page) =>
      page.$$eval('[data-field=functions] table[data-table=functions]', (ts) =>
        ts.map((t) => ({
          event: t.dataset.event,
          window: t.dataset.window,
          rows: [...t.querySelectorAll('tbody tr')].map((tr) => ({ name: tr.dataset.function, verdict: tr.dataset.verdict, delta: Number(tr.querySelector('[data-delta]').dataset.delta), cells: [...tr.querySelectorAll('td')].map((td) => td.textContent) })),
        })),
      );
    const close = (x, y, what) => assert.ok(Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(y)), `${what}: page ${x}, kiln compare ${y}`);
    /** The page's tables are `want`'s (the command's JSON), every cell in the command's text when `text` is given. */
    const sameTables = (got, want, text, what) => {
      const tables = want.filter((t) => t.rows.length);
      assert.deepEqual(got.map((t) => t.event), tables.map((t) => t.event), `${what}: the same tables`);
      tables.forEach((t, ti) => {
        const g = got[ti];
        assert.deepEqual(g.rows.map((r) => r.name), t.rows.map((r) => r.name), `${what} (${t.event}): the same functions in the same order`);
        t.rows.forEach((r, i) => {
          const gr = g.rows[i];
          assert.equal(gr.verdict, r.change.verdict, `${what} (${t.event}) ${r.name}: verdict`);
          close(gr.delta, r.after.median - r.before.median, `${what} (${t.event}) ${r.name}: change of cost`);
          if (!text) return;
          // Its line in the text table (names clipped at 60 characters there): every cost and change the page shows is in it.
          const cells = gr.cells.slice(1, 4);
          const lines = text.split('\n').filter((l) => l.trimStart().startsWith(r.name.slice(0, 40)));
          assert.ok(lines.some((l) => cells.every((c) => l.includes(c))), `${what} (${t.event}) ${r.name}: '${cells.join("', '")}' in one of ${JSON.stringify(lines)}`);
        });
      });
    };
    const overallOf = (page) => page.$eval('[data-field=window-overall]', (p) => ({ verdict: p.dataset.verdict, text: p.textContent }));
    // The differential flame graph's sides as drawn: each side's total weight (before's
    // without the normalisation to after's) and the note under it.
    const diffShown = (page) =>
      page.evaluate(() => {
        const mount = document.querySelector('[data-kiln-mount="diff"]');
        const app = window.__kiln.apps.find((x) => mount.contains(x.root));
        const d = app.derived.diff;
        const note = document.querySelector('[data-field=diff-window]');
        return { before: d.sumBefore / d.scale, after: d.sumAfter, note: note.hidden ? null : note.textContent, window: note.dataset.window ?? null };
      });
    const sameTotals = (got, want, what) => {
      const near = (x, y) => Math.abs(x - y) <= 1e-9 * Math.max(Math.abs(x), Math.abs(y));
      assert.ok(near(got.before, want[0]) && near(got.after, want[1]), `${what}: the flame graph's totals ${got.before} → ${got.after}, kiln collapse's ${want[0]} → ${want[1]}`);
    };
    await check('compare: a window has its own profile: the overall line\'s clause, the function tables of kiln compare LABEL@START-END and the flame graph of its seconds, kept by a reload', async () => {
      assert.ok(clause, `kiln compare's window names what moved in the profile: '${cmp.overall.line}'`);
      assert.notEqual(key(cmp.functions), key(pe.whole.functions), 'the window\'s tables differ from the whole measurements\'');
      const col = pe.collapsed;
      assert.ok(col.window[0] < col.whole[0] && col.window[1] < col.whole[1], `the window's samples are fewer than the whole measurements': ${JSON.stringify(col)}`);
      let page = await open('compare-profile.html');
      sameTables(await shownTables(page), pe.whole.functions, null, 'no window');
      sameTotals(await diffShown(page), col.whole, 'no window');
      const geo = await chartGeometry(page, 'throughput');
      await page.mouse.move(pageX(geo, (a + 0.2) * 1e9), geo.top + 30);
      await page.mouse.down();
      await page.mouse.move(pageX(geo, (a + b) * 0.5e9), geo.top + 30, { steps: 3 });
      await page.mouse.move(pageX(geo, (b - 0.2) * 1e9), geo.top + 30, { steps: 3 });
      await page.mouse.up();
      await settle(page);
      assert.equal(await page.textContent('[data-field=window-command]'), `kiln compare ${pe.labels.map((l) => `${l}@${a}-${b}`).join(' ')}`);
      const judged = async (what) => {
        const o = await overallOf(page);
        assert.equal(o.verdict, cmp.overall.verdict, `${what}: verdict`);
        assert.equal(clauseOf(o.text), clause, `${what}: the profile's clause`);
        // The whole line, up to the findings' changes (the command's alone).
        assert.ok(cmp.overall.line === o.text || cmp.overall.line.startsWith(`${o.text}; findings: `), `${what}: page '${o.text}', kiln compare '${cmp.overall.line}'`);
        const tables = await shownTables(page);
        for (const t of tables) assert.equal(t.window, `${a}-${b}`, `${what}: the table of ${t.event} is the window's`);
        sameTables(tables, cmp.functions, pe.text, what);
        const d = await diffShown(page);
        sameTotals(d, col.window, what);
        assert.equal(d.window, `${a}-${b}`, `${what}: the flame graph's note names its seconds`);
        assert.ok(d.note.includes(`seconds ${a}-${b}`) && d.note.includes(`kiln compare ${pe.labels.map((l) => `${l}@${a}-${b}`).join(' ')} -o diff.svg`), `${what}: ${d.note}`);
      };
      await judged('dragged');
      const hash = await page.evaluate(() => location.hash);
      assert.equal(new URLSearchParams(hash.slice(1)).get('cmp.t'), `${a * 1e9}-${b * 1e9}`, 'the URL holds the window');
      await page.keyboard.press('Escape');
      await settle(page);
      sameTables(await shownTables(page), pe.whole.functions, null, 'window cleared');
      const cleared = await diffShown(page);
      sameTotals(cleared, col.whole, 'window cleared');
      assert.equal(cleared.note, null, 'window cleared: no note under the flame graph');
      assert.equal(new URLSearchParams((await page.evaluate(() => location.hash)).slice(1)).get('cmp.t'), null, 'the URL without the window');
      // A window chosen in the flame graph's own time strip (on the measurements' clock) is
      // the page's, widened to whole seconds as a drag on a chart is.
      await page.evaluate(([x, y]) => {
        const mount = document.querySelector('[data-kiln-mount="diff"]');
        window.__kiln.apps.find((app) => mount.contains(app.root)).setWindow([x, y], true);
      }, [(a + 0.3) * 1e9, (b - 0.3) * 1e9]);
      await settle(page);
      await judged('chosen in the flame graph');
      assert.equal(new URLSearchParams((await page.evaluate(() => location.hash)).slice(1)).get('cmp.t'), `${a * 1e9}-${b * 1e9}`, 'the URL holds the window chosen in the flame graph');
      page = await open('compare-profile.html', hash.slice(1));
      await judged('reloaded');
      assert.equal(await page.evaluate(() => location.hash), hash, 'the URL keeps the window');
    });
  }

  // ---------------------------------------------------------------- trend
  if (existsSync(join(dir, 'trend.html'))) {
    const te = JSON.parse(readFileSync(join(dir, 'trend.expect.json'), 'utf8'));
    page = await open('trend.html');
    await check('trend: each figure drawn over its runs, its change points marked where the analysis put them, named in the table', async () => {
      assert.equal(await page.evaluate(() => window.__kilnReport.kind), 'trend');
      const c = te.configurations[0];
      for (const f of c.figures) {
        const sel = `svg[data-trend-chart="${f.key}"][data-config="0"]`;
        const dots = await page.$$eval(`${sel} circle[data-run]`, (e) => e.map((x) => Number(x.dataset.run)));
        const want = c.runs.filter((_, i) => f.values[i] !== null).map((r) => r.id);
        assert.deepEqual(dots, want, `${f.key}: one point per run with a value`);
        const marks = await page.$$eval(`${sel} [data-change-point]`, (e) => e.map((x) => [Number(x.dataset.changePoint), x.querySelector('title').textContent]));
        assert.deepEqual(marks.map((m) => m[0]), f.change_points.map((s) => s.run), `${f.key}: change points`);
        for (const [run, tip] of marks) assert.ok(tip.startsWith(`run #${run} (`) && tip.includes(f.label), tip);
        // A change point lies between the last run before it and the first after.
        for (const s of f.change_points) {
          const cx = (run) => page.$eval(`${sel} circle[data-run="${run}"]`, (x) => Number(x.getAttribute('cx')));
          const [a, b] = [await cx(c.runs[s.index - 1].id), await cx(s.run)];
          const m = await page.$eval(`${sel} [data-change-point="${s.run}"]`, (x) => Number(x.getAttribute('x1')));
          assert.ok(m > a && m < b, `${f.key}: mark at ${m} between ${a} and ${b}`);
        }
      }
      // Axes with ticks; latency on a log scale (its values all positive).
      for (const f of c.figures) {
        const sel = `svg[data-trend-chart="${f.key}"][data-config="0"]`;
        const ticks = await page.$$eval(`${sel} [data-tick]`, (e) => e.length);
        assert.ok(ticks >= 2, `${f.key}: ${ticks} ticks`);
        if (/^p\d|latency/.test(f.key) && f.values.every((v) => v === null || v > 0)) assert.equal(await page.getAttribute(sel, 'data-scale'), 'log', `${f.key}: a log scale`);
        // Every point and change point is reached by the keyboard and says what it is.
        const focusable = await page.$$eval(`${sel} circle[data-run]`, (e) => e.map((x) => [x.getAttribute('tabindex'), x.getAttribute('aria-label')]));
        for (const [tab, label] of focusable) assert.ok(tab === '0' && /run #\d+ \(.*\): /.test(label), `${f.key}: a point ${tab} ${label}`);
      }
      const first = c.figures.find((f) => f.change_points.length);
      if (first) {
        const hit = `svg[data-trend-chart="${first.key}"][data-config="0"] [data-change-point-hit="${first.change_points[0].run}"]`;
        await page.focus(hit);
        await page.keyboard.press('Enter');
        await settle(page);
        assert.equal(await page.$eval('[data-config="0"] [data-diffs="0"]', (x) => Number(x.dataset.run)), first.change_points[0].run, 'Enter on a change point shows its flame graph');
      }
      // The runs left out, said as the text output says them.
      if (te.left_out.other_configurations > 0) assert.match(await page.textContent('[data-field=left-out]'), new RegExp(`^Left out: ${te.left_out.other_configurations} run\\(s\\) of ${te.left_out.configurations} other configuration`));
      const rows = await page.$$eval('[data-table=change-points] tbody tr', (e) => e.map((x) => [x.dataset.figure, Number(x.dataset.run)]));
      const want = c.figures.flatMap((f) => f.change_points.map((s) => [f.key, s.run]));
      assert.deepEqual(rows, want, 'one row per change point');
      assert.ok(want.length > 0, 'the history has a change point');
      await axe(page, 'trend');
    });
    await check('trend: a change point opens the differential flame graph of the runs either side: its top change the function the trend names, its totals the runs\' profiles', async () => {
      const dc = te.diff_check;
      const section = '[data-config="0"] [data-diffs="0"]';
      const shown = () =>
        page.$eval(section, (s) => ({
          key: s.dataset.selected,
          figure: s.dataset.figure,
          run: Number(s.dataset.run),
          caption: s.querySelector('[data-field=diff-caption]').textContent,
          visible: [...s.querySelectorAll('.kiln-mount')].filter((m) => !m.hidden && m.getBoundingClientRect().height > 0).map((m) => m.dataset.kilnMount),
        }));
      // Another change point selected first (when there is one), then the mark clicked.
      const other = await page.$$eval('[data-show-diff]', (b) => b.map((x) => x.dataset.showDiff));
      const last = other[other.length - 1];
      await page.click(`[data-show-diff="${last}"]`);
      await page.click(`svg[data-trend-chart="${dc.figure}"][data-config="0"] [data-change-point-hit="${dc.run}"]`);
      await settle(page);
      let s = await shown();
      assert.equal(s.figure, dc.figure);
      assert.equal(s.run, dc.run, 'the mark clicked selects its change point');
      assert.deepEqual(s.visible, [s.key], 'one viewer shown, the change point\'s');
      const span = (ids) => (ids.length === 1 ? `#${ids[0]}` : `#${ids[0]}–#${ids[ids.length - 1]}`);
      assert.ok(s.caption.includes(`runs ${span(dc.before)} → runs ${span(dc.after)}`), s.caption);
      // Its row's button selects the same viewer.
      await page.click(`[data-show-diff="${last}"]`);
      await page.click(`[data-show-diff="${dc.figure}:${dc.run}"]`);
      await settle(page);
      assert.equal((await shown()).key, s.key);
      assert.equal(await page.$eval(`[data-show-diff="${dc.figure}:${dc.run}"]`, (b) => b.getAttribute('aria-pressed')), 'true');
      // The viewer: a diff of the runs' profiles, each side's total the sum of its runs'.
      const model = await page.evaluate((key) => {
        // By its mount: a page of one viewer gives it no key.
        const m = document.querySelector(`[data-kiln-mount="${key}"]`);
        const a = window.__kiln.apps.find((x) => m.contains(x.root));
        return { diff: a.model.isDiff, before: a.model.totals(0).weight, after: a.model.totals(1).weight, marked: a.model.meta.marked ?? null };
      }, s.key);
      assert.ok(model.diff, 'a differential flame graph');
      const near = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));
      assert.ok(near(model.before, dc.before_total), `before: ${model.before} in the page, ${dc.before_total} from kiln collapse of runs ${dc.before}`);
      assert.ok(near(model.after, dc.after_total), `after: ${model.after} in the page, ${dc.after_total} from kiln collapse of runs ${dc.after}`);
      // Only the functions whose change is beyond noise are coloured (as kiln compare's
      // page colours its own); the one the trend names first among them.
      assert.ok(model.marked?.includes(dc.top.name), `${dc.top.name} coloured: ${model.marked}`);
      await shot(page, 'trend-diff');
      await axe(page, 'trend, a change point\'s flame graph');
      // Its function table ranked by change: of the coloured functions, the one the trend
      // names first at the top (a share can shrink while the cost per request grows: not
      // a change beyond noise, drawn uncoloured).
      const mount = `[data-kiln-mount="${s.key}"]`;
      await page.click(`${mount} [role=tab]:has-text("Functions")`);
      await page.click(`${mount} button.sort[data-key=delta]`);
      await settle(page);
      const all = await page.$$eval(`${mount} .table-rows .row`, (r) => r.map((x) => [...x.children].map((c) => c.textContent)));
      const rows = all.filter((r) => model.marked.includes(r[6]));
      const pts = (r) => parseFloat(r[4]) - parseFloat(r[3]);
      const top = rows[0];
      assert.ok(top, `a coloured function among the largest changes: ${JSON.stringify(all.slice(0, 5))}`);
      const named = rows.find((r) => r[6] === dc.top.name);
      assert.ok(named, `${dc.top.name} among the largest changes: ${JSON.stringify(rows.slice(0, 5))}`);
      // Ties (a function and its only caller move together) are the same change.
      assert.equal(named[5], top[5], `${dc.top.name} changed by ${named[5]}, the largest coloured change is ${top[6]}'s ${top[5]}`);
      assert.ok(Math.abs(pts(named) - dc.top.points) < 0.15, `${dc.top.name}: ${named[3]} → ${named[4]} in the page, ${dc.top.points} pts in the trend`);
      await shot(page, 'trend-diff-table');
    });
  }

  assert.deepEqual(requests, [], 'no request leaves the page');
  assert.deepEqual(errors, [], 'no script errors');
  console.log('report: all browser checks passed');
} catch (e) {
  console.error(`not ok - ${step}`);
  console.error(e);
  if (errors.length) console.error('page errors:', errors);
  process.exitCode = 1;
} finally {
  await close();
}
