// Browser checks of the viewer files crates/viewer/tests/browser.rs writes:
//   node tests/browser.mjs FIXTURE_DIR SCREENSHOT_DIR
// Every check clicks, types or drags like a user (or walks with the keyboard only) and
// reads the result from the page or from a screenshot's pixels.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { axe, launch } from './chromium.mjs';
import { decodePng } from './png.mjs';

const [dir, shots = dir] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node tests/browser.mjs FIXTURE_DIR [SCREENSHOT_DIR]');
  process.exit(2);
}

const HOSTILE_IMG = '<img src=x onerror=window.__pwned=1>';
const HOSTILE_SCRIPT = '</script><script>window.__pwned=2</script>';
const { context, close } = await launch();
await context.grantPermissions(['clipboard-read', 'clipboard-write']).catch(() => {});
const errors = [];
const requests = [];
let step = 'start';

async function load(file, hash = '', scheme = 'light') {
  const page = context.pages()[0] ?? (await context.newPage());
  page.removeAllListeners('pageerror');
  page.removeAllListeners('request');
  page.on('pageerror', (e) => errors.push(`${file}: ${e.message}`));
  page.on('request', (r) => {
    if (!r.url().startsWith('file:') && !r.url().startsWith('blob:') && !r.url().startsWith('data:')) requests.push(r.url());
  });
  await page.emulateMedia({ colorScheme: scheme });
  // A fresh document even when only the hash differs.
  await page.goto('about:blank');
  await page.goto(`file://${join(dir, file)}${hash ? '#' + hash : ''}`);
  await page.waitForFunction(() => window.__kiln && (window.__kiln.ready || window.__kiln.error), null, { timeout: 20000 });
  return page;
}

async function open(file, hash = '', scheme = 'light') {
  const page = await load(file, hash, scheme);
  const err = await page.evaluate(() => window.__kiln.error);
  assert.equal(err, null, `${file} failed to load: ${err}`);
  await settle(page);
  return page;
}

/** Waits until pending animation frames have drawn. */
const settle = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
const find = (page, name, which = 'main') => page.evaluate(([n, w]) => window.__kiln.app.find(n, w), [name, which]);
const center = (r) => [r.x + Math.min(r.w, 40) / 2, r.y + r.h / 2];
const fact = (page, key) => page.textContent(`[data-fact=${key}] .fact-value`);
const hash = (page) => page.evaluate(() => location.hash);

async function shot(page, name) {
  return decodePng(await page.screenshot({ path: join(shots, `${name}.png`) }));
}

async function colourOf(page, frame, name, which = 'main') {
  const r = await find(page, frame, which);
  assert.ok(r, `${frame} is drawn`);
  // The top pixel row of a frame is always fill, never label text.
  return (await shot(page, name)).at(r.x + Math.min(r.w, 40) / 2, r.y + 1);
}

const pwned = (page) => page.evaluate(() => window.__pwned ?? null);
const brightness = ([r, g, b]) => r + g + b;

async function tooltipOf(page, frame, which = 'main') {
  const r = await find(page, frame, which);
  assert.ok(r, `${frame} is drawn in ${which}`);
  // From elsewhere first: a move to where the pointer already is sends no event.
  await page.mouse.move(1, 1);
  await page.mouse.move(...center(r));
  await settle(page);
  return page.textContent('.tooltip');
}

async function check(name, f) {
  step = name;
  const t = Date.now();
  await f();
  console.log(`ok - ${name} (${Date.now() - t} ms)`);
}

/** Presses Tab until `selector` has focus; returns the number of presses. */
async function tabTo(page, selector, max = 40) {
  for (let i = 1; i <= max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return i;
  }
  throw new Error(`${selector} not reached with ${max} Tab presses`);
}

try {
  let page = await open('timed.html');

  await check('first drawing uses the hot palette; the header says what the profile is', async () => {
    const c = await colourOf(page, 'alpha_leaf', 'initial');
    assert.ok(c[0] >= 200 && c[2] <= 60, `hot colour, got ${c}`);
    assert.equal(await page.title(), 'kiln test </title><script>window.__pwned=3</script>');
    assert.equal(await fact(page, 'total'), '200 samples');
    assert.equal(await fact(page, 'duration'), '9.95 s');
    assert.equal(await page.$('.menu:not([hidden])'), null, 'no menu is visible at load');
    assert.equal(await page.$$eval('[role=menu]:not([hidden])', (x) => x.length), 0);
  });

  await check('units and totals: period, timer samples, time, bytes, --countname', async () => {
    const cases = [
      ['period.html', { input: 'perf.txt', event: 'cpu-clock', total: '1.20 s of CPU time', samples: '1,198 samples', duration: '1.20 s' }],
      ['record-cpu.html', { event: 'cpu-clock', total: '1.20 s of CPU time', samples: '1,198 samples (one per 1.00 ms of CPU, 999 Hz)' }],
      ['offcpu.html', { event: 'offcpu', total: '4.17 s of off-CPU time', samples: '80 samples' }],
      ['bytes.html', { event: 'mmap', total: '3.50 MiB', samples: '2 samples' }],
      ['countname.html', { total: '1,234 calls', samples: null }],
      ['countname-us.html', { total: '250 ms of time', samples: null }],
    ];
    for (const [file, want] of cases) {
      page = await open(file);
      for (const [k, v] of Object.entries(want)) {
        if (v === null) assert.equal(await page.$(`[data-fact=${k}]`), null, `${file}: no ${k}`);
        else assert.equal(await fact(page, k), v, `${file}: ${k}`);
      }
    }
    page = await open('period.html');
    assert.match(await tooltipOf(page, 'compute'), /total: 799 ms — 66\.6% of all.*samples: 798 \(798 self\)/s);
    assert.match(await tooltipOf(page, 'main'), /total: 1\.20 s — 100\.0% of all/);
    await page.keyboard.press('2');
    await settle(page);
    const head = await page.$$eval('.table-head [role=columnheader]', (x) => x.map((e) => e.textContent));
    assert.deepEqual(head.map((h) => h.replace(/ [▼▲]$/, '')), ['Self (time)', 'Self %', 'Total (time)', 'Total %', 'Function']);
    const rows = await page.$$eval('.table-rows .row', (r) => r.map((x) => [...x.children].map((c) => c.textContent)));
    assert.deepEqual(rows[0], ['–', '0.0%', '1.20 s', '100.0%', 'main'], 'no self weight reads –, as in the call tree');
    page = await open('bytes.html');
    assert.match(await tooltipOf(page, 'alloc_arena'), /total: 3\.00 MiB — 85\.7% of all/);
  });

  page = await open('timed.html');

  await check('search dims what does not match, counts and steps through matches', async () => {
    const plain = await colourOf(page, 'lock_wait', 'search-before');
    const other = await colourOf(page, 'alpha_leaf', 'search-before');
    const acquire = await colourOf(page, 'Lock_acquire', 'search-before');
    await page.fill('[data-ctrl=search]', 'lock');
    await settle(page);
    assert.equal(await page.textContent('[data-ctrl=matched]'), 'Matched: 20.0%');
    assert.equal(await page.textContent('[data-ctrl=match-count]'), '2 frames');
    assert.deepEqual(await colourOf(page, 'lock_wait', 'search'), plain, 'a match keeps its colour');
    const dimmed = await colourOf(page, 'alpha_leaf', 'search');
    assert.ok(brightness(dimmed) > brightness(other) + 150, `alpha_leaf is dimmed: ${other} -> ${dimmed}`);
    assert.deepEqual(await colourOf(page, 'Lock_acquire', 'search-ci'), acquire, 'case-insensitive by default');
    await page.press('[data-ctrl=search]', 'Enter');
    await settle(page);
    assert.equal(await page.textContent('[data-ctrl=match-count]'), '1 of 2 frames');
    const first = await page.evaluate(() => window.__kiln.app.main.selected);
    await page.press('[data-ctrl=search]', 'Enter');
    await settle(page);
    assert.equal(await page.textContent('[data-ctrl=match-count]'), '2 of 2 frames');
    const second = await page.evaluate(() => window.__kiln.app.main.selected);
    const names = await page.evaluate(([a, b]) => {
      const app = window.__kiln.app;
      const l = app.derived.layout;
      return [a, b].map((v) => app.derived.frames.names[l.frame[v]]);
    }, [first, second]);
    assert.deepEqual(names.sort(), ['Lock_acquire', 'lock_wait']);
    await page.press('[data-ctrl=search]', 'Shift+Enter');
    assert.equal(await page.textContent('[data-ctrl=match-count]'), '1 of 2 frames');
    // The selection's outline would cover the frame's top pixels.
    await page.evaluate(() => window.__kiln.app.main.setSelected(-1));
    await page.click('[data-ctrl=case]');
    await settle(page);
    assert.equal(await page.textContent('[data-ctrl=matched]'), 'Matched: 10.0%');
    assert.ok(brightness(await colourOf(page, 'Lock_acquire', 'search-case')) > brightness(acquire) + 100, 'Lock_acquire no longer matches');
    await page.fill('[data-ctrl=search]', '(');
    await settle(page);
    assert.equal(await page.textContent('[data-ctrl=matched]'), 'Invalid regex');
    await page.fill('[data-ctrl=search]', '');
    await page.click('[data-ctrl=case]');
    await page.evaluate(() => document.activeElement.blur());
  });

  await check('click zooms with breadcrumbs; hover shows % of the zoomed frame; reset', async () => {
    const before = await find(page, 'alpha');
    await page.mouse.click(...center(before));
    await settle(page);
    const zoomed = await find(page, 'alpha');
    const width = await page.evaluate(() => window.__kiln.app.main.renderer.width);
    assert.ok(Math.abs(zoomed.w - width) < 1, `alpha fills the width (${zoomed.w} of ${width})`);
    const crumbs = await page.$$eval('.crumb', (b) => b.map((x) => x.textContent));
    assert.deepEqual(crumbs, ['all', 'main', 'alpha']);
    assert.match(await hash(page), /z=\d+\.\d+/);
    assert.match(await tooltipOf(page, 'alpha_leaf'), /20\.0% of all, 66\.7% of the zoomed frame/);
    await page.click('[data-ctrl=reset]');
    await settle(page);
    assert.ok((await find(page, 'alpha')).w < width / 2, 'zoom reset');
    assert.deepEqual(await page.$$eval('.crumb', (b) => b.map((x) => x.textContent)), ['all']);
  });

  await check('dragging pans the zoomed graph with the pointer; the press is not a click', async () => {
    // beta is not the first frame of its row: there is room to its left to pan into.
    await page.mouse.click(...center(await find(page, 'beta')));
    await settle(page);
    const crumbs = await page.$$eval('.crumb', (b) => b.map((x) => x.textContent));
    assert.equal(crumbs.at(-1), 'beta');
    const z = await find(page, 'beta');
    const [x, y] = center(z);
    await page.mouse.move(x, y);
    await page.mouse.down();
    await page.mouse.move(x + 150, y, { steps: 5 });
    await page.mouse.up();
    await settle(page);
    const panned = await find(page, 'beta');
    assert.ok(Math.abs(panned.x - (z.x + 150)) < 2, `beta follows the pointer (${z.x} → ${panned.x})`);
    assert.deepEqual(await page.$$eval('.crumb', (b) => b.map((x) => x.textContent)), crumbs, 'no click: the zoom is the same');
    await page.click('[data-ctrl=reset]');
    await settle(page);
  });

  await check('hostile names stay text', async () => {
    for (const n of [HOSTILE_IMG, HOSTILE_SCRIPT]) assert.ok(await find(page, n), `${n} is drawn as a frame`);
    const names = await page.evaluate(() => window.__kiln.app.derived.frames.names);
    assert.ok(names.includes('ctl\x07\x1b[31m\ufffd\ufffdend'), 'invalid UTF-8 decoded as U+FFFD, control bytes kept as data');
    await page.mouse.move(...center(await find(page, HOSTILE_IMG)));
    await settle(page);
    assert.equal(await page.textContent('.tt-name'), HOSTILE_IMG);
    assert.equal(await page.$$eval('img', (x) => x.length), 0);
    assert.equal(await page.$$eval('script', (x) => x.length), 3, 'meta, data and viewer scripts only');
    assert.equal(await page.textContent('h1.title'), 'kiln test </title><script>window.__pwned=3</script>');
    assert.equal(await pwned(page), null);
  });

  await check('keyboard only: Tab to the canvas, arrows move, Enter zooms, Esc resets, Shift+F10 opens actions', async () => {
    page = await open('timed.html');
    const presses = await tabTo(page, 'canvas.flame-canvas');
    assert.ok(presses <= 25, `the canvas is reached in ${presses} Tab presses`);
    const sel = () =>
      page.evaluate(() => {
        const app = window.__kiln.app;
        const v = app.main.selected;
        return v <= 0 ? (v === 0 ? 'all' : null) : app.derived.frames.names[app.derived.layout.frame[v]];
      });
    assert.equal(await sel(), 'all', 'focus selects the root');
    await page.keyboard.press('ArrowUp');
    assert.equal(await sel(), 'main');
    assert.match(await page.textContent('[data-ctrl=status]'), /^main — total: 200 samples/);
    await page.keyboard.press('ArrowUp');
    assert.equal(await sel(), 'alpha', 'up goes to the widest callee');
    await page.keyboard.press('ArrowRight');
    assert.equal(await sel(), 'beta');
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowUp');
    assert.equal(await sel(), 'alpha_leaf');
    await page.keyboard.press('ArrowDown');
    assert.equal(await sel(), 'alpha');
    await page.keyboard.press('Enter');
    await settle(page);
    const zoom = await page.evaluate(() => window.__kiln.app.state.zoom.length);
    assert.equal(zoom, 2, 'Enter zooms to main > alpha');
    await page.keyboard.press('Shift+F10');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('role')), 'menuitem', 'the menu has focus');
    assert.equal(await page.getAttribute('.menu', 'aria-label'), 'alpha');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.action), 'x');
    await page.keyboard.press('Escape');
    assert.equal(await page.$('.menu:not([hidden])'), null, 'Esc closes the menu');
    assert.ok(await page.evaluate(() => document.activeElement?.matches('canvas.flame-canvas')), 'focus is back on the canvas');
    assert.equal(await page.evaluate(() => window.__kiln.app.state.zoom.length), 2, 'the first Esc only closed the menu');
    await page.keyboard.press('Escape');
    await settle(page);
    assert.equal(await page.evaluate(() => window.__kiln.app.state.zoom.length), 0, 'Esc resets the zoom');
    // A key on the selected frame: s opens its sandwich.
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('s');
    await settle(page);
    assert.match(await page.textContent('.sandwich-title'), /^alpha_leaf — /);
    assert.equal(await page.getAttribute('[data-ctrl=tab-sandwich]', 'aria-selected'), 'true');
    assert.equal(await page.getAttribute('[data-ctrl=tab-sandwich]', 'role'), 'tab');
  });

  await check('the function table sorts and picks with the keyboard', async () => {
    page = await open('timed.html', 'v=table');
    const names = () => page.$$eval('.table-rows .row', (r) => r.map((x) => x.lastChild.textContent));
    assert.equal((await names())[0], 'main', 'sorted by total');
    await tabTo(page, '.table-head button[data-key=self]');
    await page.keyboard.press('Enter');
    await settle(page);
    assert.deepEqual((await names()).slice(0, 3).sort(), ['alpha_leaf', 'beta_child', 'fib']);
    assert.equal(await page.getAttribute('.table-head [role=columnheader]:has(button[data-key=self]) >> nth=0', 'aria-sort'), 'descending');
    await tabTo(page, '.table-grid');
    await page.keyboard.press('End');
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowDown');
    const active = await page.evaluate(() => document.getElementById(document.activeElement.getAttribute('aria-activedescendant'))?.lastChild.textContent);
    assert.equal(active, (await names())[1], 'aria-activedescendant names the active row');
    await page.keyboard.press('Enter');
    await settle(page);
    assert.ok((await page.textContent('.sandwich-title')).startsWith(`${active} — `), 'Enter opens the sandwich of the active row');
    await page.keyboard.press('2');
    await page.fill('.table-filter', 'LOCK');
    await settle(page);
    assert.deepEqual((await names()).sort(), ['Lock_acquire', 'lock_wait']);
    await shot(page, 'table');
  });

  await check('sandwich: no synthetic root, percentages of the function as the model computes them', async () => {
    page = await open('timed.html');
    await page.click('canvas.flame-canvas >> nth=0', { button: 'right', position: await relative(page, 'fib') });
    assert.equal(await page.textContent('.menu-title'), 'fib');
    await page.click('[data-action=s]');
    await settle(page);
    assert.match(await page.textContent('.sandwich-title'), /^fib — total 40 samples \(20\.0% of all\), self 40 samples/);
    assert.match(await hash(page), /v=sandwich/);
    assert.match(await hash(page), /fn=\d+/);
    // The rows at the seam are fib itself: no grey "all" row between it and its callers.
    const box = await page.$eval('.sandwich-flame:not([hidden]) >> nth=0', (e) => JSON.parse(JSON.stringify(e.getBoundingClientRect())));
    const fibCaller = await find(page, 'fib', 'callers');
    assert.ok(Math.abs(fibCaller.y + fibCaller.h + 1 - (box.y + box.height)) < 2, 'fib is the bottom row of the callers pane');
    const c = (await shot(page, 'sandwich')).at(box.x + 20, box.y + box.height - 8);
    assert.ok(c[0] >= 200 && c[1] < 200, `the bottom row is fib's colour, got ${c}`);
    const model = await page.evaluate(() => {
      const app = window.__kiln.app;
      const sw = app.model.sandwich(app.state, app.state.fn);
      const names = app.derived.frames.names;
      const pct = (l, name) => {
        for (let v = 1; v < l.n; v++) if (names[l.frame[v]] === name && l.depth[v] === 2) return (100 * l.total[v]) / l.total[1];
        return null;
      };
      return { main: pct(sw.callers, 'main'), fib: pct(sw.callees, 'fib') };
    });
    assert.deepEqual(model, { main: 100, fib: 100 });
    assert.match(await tooltipOf(page, 'main', 'callers'), /total: 40 samples — 100.0% of fib, 20\.0% of all/);
    const callee = await page.evaluate(() => {
      const app = window.__kiln.app;
      const sw = app.model.sandwich(app.state, app.state.fn);
      const l = sw.callees;
      for (let v = 1; v < l.n; v++) if (l.depth[v] === 3) return (100 * l.total[v]) / l.total[1];
      return null;
    });
    assert.equal(callee, 50, 'fib > fib > fib is half of fib');
    const rows = await page.evaluate(() => window.__kiln.app.callees.scene.layout.rows[3].length);
    assert.equal(rows, 1);
  });

  await check('merge transform removes a function and shows in the transform bar', async () => {
    page = await open('timed.html');
    await page.click('canvas.flame-canvas >> nth=0', { button: 'right', position: await relative(page, 'beta') });
    await page.click('[data-action=m]');
    await settle(page);
    assert.equal(await find(page, 'beta'), null);
    const main = await find(page, 'main');
    const child = await find(page, 'beta_child');
    assert.equal(Math.round(main.y - child.y), 17, 'beta_child moved up to main');
    assert.match(await page.textContent('.transforms'), /Merge: beta/);
    await page.click('.transform');
    await settle(page);
    assert.ok(await find(page, 'beta'), 'removing the transform restores beta');
  });

  await check('merge node only, collapse direct recursion only, collapse library: from the menu, in the URL, exact trees', async () => {
    /** The drawn tree as "a;b;c total" lines (root excluded), and the transforms in the URL. */
    const stacks = () =>
      page.evaluate(() => {
        const app = window.__kiln.app;
        const l = app.derived.layout;
        const names = app.derived.frames.names;
        const path = (v) => (v > 0 ? [...path(l.parent[v]), names[l.frame[v]]] : []);
        const out = [];
        for (let v = 1; v < l.n; v++) if (l.total[v] > 0) out.push(`${path(v).join(';')} ${l.total[v]}`);
        return out.sort();
      });
    const tf = async () => new URLSearchParams((await hash(page)).slice(1)).get('tf');
    page = await open('timed.html');
    const fibs = (list) => list.filter((x) => /fib/.test(x));
    assert.deepEqual(fibs(await stacks()), ['main;fib 40', 'main;fib;fib 40', 'main;fib;fib;fib 20']);
    // Merge node only on main > fib: that one node goes, the fib it called takes its place.
    await page.click('canvas.flame-canvas >> nth=0', { button: 'right', position: await relative(page, 'fib') });
    assert.deepEqual(await page.$$eval('.menu [data-action]', (b) => b.map((x) => x.dataset.action)), ['zoom', 'x', 'F', 'm', 'M', 'd', 'r', 'R', 's', 'y', 'Y'], 'no library: no collapse library item');
    await page.click('[data-action=M]');
    await settle(page);
    assert.deepEqual(fibs(await stacks()), ['main;fib 40', 'main;fib;fib 20']);
    assert.match(await page.textContent('.transforms'), /Merge node: main > fib/);
    const ids = await page.evaluate(() => {
      const names = window.__kiln.app.derived.frames.names;
      return { main: names.indexOf('main'), fib: names.indexOf('fib') };
    });
    assert.equal(await tf(), `M${ids.main}.${ids.fib}`);
    // Undo, then collapse direct recursion only (the key R on the hovered frame).
    await page.keyboard.press('u');
    await settle(page);
    assert.equal(await tf(), null);
    const r = await find(page, 'fib');
    await page.mouse.move(...center(r));
    await page.keyboard.press('R');
    await settle(page);
    assert.deepEqual(fibs(await stacks()), ['main;fib 40']);
    assert.equal(await tf(), `R${ids.fib}`);
    assert.match(await page.textContent('.transforms'), /Collapse direct recursion: fib/);
    // The URL alone gives the same view.
    page = await open('timed.html', `tf=M${ids.main}.${ids.fib}~R${ids.fib}`);
    assert.deepEqual(fibs(await stacks()), ['main;fib 40']);
    assert.match(await page.textContent('.transforms'), /Merge node: main > fib ✕Collapse direct recursion: fib/);
    // Collapse library: each run of libc's frames becomes one frame named after it.
    page = await open('libs.html');
    await page.click('canvas.flame-canvas >> nth=0', { button: 'right', position: await relative(page, 'libc.so.6`malloc') });
    assert.equal(await page.textContent('.menu [data-action=C]'), 'Collapse library libc.so.6 (C)');
    await page.click('[data-action=C]');
    await settle(page);
    assert.deepEqual(await stacks(), ['main 60', 'main;server`handle 40', 'main;server`handle;libc.so.6 40', 'main;server`parse 20', 'main;server`parse;libc.so.6 20']);
    assert.match(await page.textContent('.transforms'), /Collapse library: libc.so.6/);
    const lib = await page.evaluate(() => window.__kiln.app.derived.frames.names.indexOf('libc.so.6'));
    assert.equal(await tf(), `C${lib}`);
    assert.ok(await find(page, 'libc.so.6'), 'the library\'s frame is drawn');
    await axe(page, 'collapsed library');
    page = await open('timed.html');
  });

  await check('time window selection shows only that window; the caption stays off the bars', async () => {
    const box = await page.$eval('.timeline-canvas', (e) => JSON.parse(JSON.stringify(e.getBoundingClientRect())));
    const label = await page.$eval('.timeline-label', (e) => JSON.parse(JSON.stringify(e.getBoundingClientRect())));
    assert.ok(label.y + label.height <= box.y + 0.5, 'the caption is above the bars');
    await page.mouse.move(box.x + box.width * 0.02, box.y + 20);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.3, box.y + 20, { steps: 4 });
    await page.mouse.up();
    await settle(page);
    assert.match(await hash(page), /t=\d+-\d+/);
    assert.ok(await find(page, 'alpha'), 'alpha ran in the first half');
    assert.equal(await find(page, 'beta'), null, 'beta ran only in the second half');
    assert.match(await page.textContent('.timeline-label'), /^Window /);
    // The model gives the same tree for that window, asked directly.
    const same = await page.evaluate(() => {
      const app = window.__kiln.app;
      const w = app.window;
      const other = app.model.derive({ ...app.state, range: [w[0] - app.model.raw.timeOrigin, w[1] - app.model.raw.timeOrigin] });
      return other.layout.total[0] === app.derived.layout.total[0];
    });
    assert.ok(same);
    await page.dblclick('.timeline-canvas');
    await settle(page);
    assert.ok(await find(page, 'beta'), 'double-click clears the window');
    await page.setViewportSize({ width: 420, height: 700 });
    await settle(page);
    const narrow = await page.evaluate(() => {
      const l = document.querySelector('.timeline-label').getBoundingClientRect();
      const c = document.querySelector('.timeline-canvas').getBoundingClientRect();
      return l.bottom <= c.top + 0.5;
    });
    assert.ok(narrow, 'no overlap at 420 px either');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  await check('a window set by the page (the run report) redraws the view', async () => {
    const origin = await page.evaluate(() => window.__kiln.app.model.raw.timeOrigin);
    await page.evaluate((o) => window.__kiln.setWindow([o + 5.2e9, o + 9.9e9]), origin);
    await settle(page);
    assert.equal(await find(page, 'alpha'), null);
    assert.ok(await find(page, 'beta'));
    await page.evaluate(() => window.__kiln.setWindow(null));
    await settle(page);
  });

  await check('threads merged by number, and icicle by keyboard', async () => {
    await page.selectOption('[data-ctrl=threads]', 'groups');
    await settle(page);
    // Named as the tracks name the group (kiln's thread groups).
    assert.ok(await find(page, 'scheduler'), '1_scheduler and 2_scheduler share one root');
    assert.equal(await find(page, 'N_scheduler'), null);
    assert.equal(await page.textContent('[data-track=g0] .track-label'), 'scheduler (2 threads) — 200 samples');
    await page.selectOption('[data-ctrl=threads]', 'threads');
    await settle(page);
    assert.ok(await find(page, '1_scheduler [11]'));
    assert.ok(await find(page, '2_scheduler [12]'));
    await page.selectOption('[data-ctrl=threads]', 'merged');
    await page.evaluate(() => document.activeElement.blur());
    await page.keyboard.press('i');
    await settle(page);
    assert.ok((await find(page, 'main')).y < (await find(page, 'alpha')).y, 'icicle: callers above callees');
    await page.keyboard.press('i');
  });

  await check('state in the URL hash restores a view', async () => {
    page = await open('timed.html', 'q=fib&icicle=1&order=heavy');
    assert.equal(await page.inputValue('[data-ctrl=search]'), 'fib');
    assert.equal(await page.textContent('[data-ctrl=matched]'), 'Matched: 20.0%');
    assert.equal(await page.getAttribute('[data-ctrl=icicle]', 'aria-pressed'), 'true');
    assert.equal(await page.inputValue('[data-ctrl=order]'), 'left-heavy');
    assert.ok((await find(page, 'alpha')).x < (await find(page, 'beta')).x);
    const ids = await page.evaluate(() => {
      const names = window.__kiln.app.derived.frames.names;
      return ['main', 'alpha', 'beta'].map((n) => names.indexOf(n));
    });
    const width = await page.evaluate(() => window.__kiln.app.main.renderer.width);
    for (const target of ['alpha', 'beta']) {
      const path = [ids[0], ids[target === 'alpha' ? 1 : 2]].join('.');
      await page.evaluate((z) => (location.hash = `z=${z}`), path);
      await page.waitForFunction((n) => window.__kiln.app.state.zoom.length === 2 && window.__kiln.app.state.zoom[1] === n, ids[target === 'alpha' ? 1 : 2]);
      await settle(page);
      const r = await find(page, target);
      assert.ok(r && Math.abs(r.w - width) < 1, `${target} fills the width after a hash change`);
    }
  });

  await check('stale details are cleared when the view changes', async () => {
    page = await open('timed.html');
    await tooltipOf(page, 'alpha');
    assert.match(await page.textContent('[data-ctrl=details]'), /^alpha — /);
    await page.mouse.move(5, 5);
    await page.keyboard.press('2');
    await settle(page);
    assert.equal(await page.textContent('[data-ctrl=details]'), '');
  });

  await check('help: a dialog whose key labels do not wrap', async () => {
    await page.keyboard.press('1');
    await page.keyboard.press('?');
    await settle(page);
    assert.equal(await page.getAttribute('.help', 'role'), 'dialog');
    const tall = await page.$$eval('.help kbd', (ks) => ks.filter((k) => k.getBoundingClientRect().height > 24).map((k) => k.textContent));
    assert.deepEqual(tall, [], 'every key label is on one line');
    await axe(page, 'help dialog');
    await page.keyboard.press('Escape');
    assert.equal(await page.$('.help:not([hidden])'), null);
  });

  await check('deep stacks: the breadcrumbs keep the current frame in view', async () => {
    page = await open('deep.html');
    await page.evaluate(() => {
      const app = window.__kiln.app;
      const l = app.derived.layout;
      const v = l.rows[l.maxDepth][0];
      const path = [];
      for (let u = v; u > 0; u = l.parent[u]) path.unshift(l.frame[u]);
      app.setState({ zoom: path });
    });
    await settle(page);
    const r = await page.evaluate(() => {
      const nav = document.querySelector('.crumbs').getBoundingClientRect();
      const cur = document.querySelector('.crumb.current');
      const c = cur.getBoundingClientRect();
      return { inside: c.left >= nav.left && c.right <= nav.right + 0.5, cut: cur.scrollWidth > cur.clientWidth + 1, text: cur.textContent };
    });
    assert.equal(r.text, 'level_59_some_function_name');
    assert.ok(r.inside && !r.cut, 'the current frame is whole and visible');
    assert.match(await page.textContent('.crumb-gap'), /more/);
  });

  await check('diff view: colours, legend with the inputs, tooltips, normalise', async () => {
    page = await open('diff.html');
    const legend = await page.$$eval('.legend-item', (x) => x.map((e) => e.textContent));
    assert.deepEqual(legend.slice(0, 2), ['grew in after (new.folded)', 'shrank in after (new.folded)']);
    assert.match(await page.textContent('.facts'), /before:.*Input base\.folded.*after:.*Input new\.folded/s);
    const grows = await colourOf(page, 'grows', 'diff');
    assert.ok(grows[0] === 255 && grows[1] < 100, `grows is red, got ${grows}`);
    const shrinks = await colourOf(page, 'shrinks', 'diff');
    assert.ok(shrinks[2] === 255 && shrinks[0] < 100, `shrinks is blue, got ${shrinks}`);
    assert.deepEqual(await colourOf(page, 'new', 'diff'), [40, 170, 90]);
    assert.deepEqual(await colourOf(page, 'gone', 'diff'), [150, 150, 160]);
    const same = await colourOf(page, 'same', 'diff');
    assert.ok(same[0] > 240 && same[1] > 240 && same[2] > 240, `unchanged is pale, got ${same}`);
    assert.match(await tooltipOf(page, 'grows'), /before: 10 samples.*after: 40 samples.*change: \+30 samples \(\+300\.0%\)/s);
    await page.click('[data-ctrl=normalise]');
    await settle(page);
    assert.match(await hash(page), /norm=0/);
    await page.keyboard.press('2');
    await settle(page);
    const rows = await page.$$eval('.table-rows .row', (r) => r.map((x) => [...x.children].map((c) => c.textContent)));
    const by = Object.fromEntries(rows.map((r) => [r[6], r]));
    assert.deepEqual(by.gone.slice(0, 6), ['9.1%', '0.0%', '−10 samples', '9.1%', '0.0%', '−10 samples']);
    assert.equal(by.grows[5], '+30 samples');
    assert.equal(rows.filter((r) => r[6] === 'gone').length, 1, 'each function once');
  });

  await check('diff table: seven columns, nothing cut at 1280 px', async () => {
    page = await open('diff-wide.html', 'v=table');
    const head = await page.$$eval('.table-head [role=columnheader]', (x) => x.map((e) => e.textContent.replace(/ [▼▲]$/, '')));
    assert.deepEqual(head, ['Self before', 'Self after', 'Δ self', 'Total before', 'Total after', 'Δ total', 'Function']);
    const cut = await page.$$eval('.table-rows .row .cell, .table-head .cell', (cells) =>
      cells.filter((c) => c.scrollWidth > c.clientWidth + 1 || c.getBoundingClientRect().right > window.innerWidth).map((c) => c.textContent),
    );
    assert.deepEqual(cut, [], 'no cell is truncated');
    const names = await page.$$eval('.table-rows .row', (r) => r.map((x) => x.lastChild.textContent));
    assert.ok(names.includes('rabbit_amqqueue_process:handle_cast/2'));
    const delta = await page.$$eval('.table-rows .row', (r) => r.map((x) => x.children[5].textContent));
    assert.ok(delta.every((d) => /^[+−±][0-9.,]+ (ns|µs|ms|s)$/.test(d)), `Δ total in time: ${delta}`);
    await shot(page, 'diff-table');
    await axe(page, 'diff table');
  });

  await check('diff sandwich keeps the diff colours', async () => {
    const f = await page.evaluate(() => window.__kiln.app.derived.frames.names.indexOf('rabbit_exchange:route/2'));
    page = await open('diff-wide.html', `v=sandwich&fn=${f}`);
    const c = await colourOf(page, 'rabbit_exchange:route/2', 'diff-sandwich', 'callers');
    assert.ok(c[2] === 255 && c[0] < 120, `shrank: blue in the sandwich, got ${c}`);
    const py = await page.evaluate(() => window.__kiln.app.derived.frames.names.indexOf('py_encode_basestring_ascii'));
    page = await open('diff-wide.html', `v=sandwich&fn=${py}`);
    const r = await colourOf(page, 'py_encode_basestring_ascii', 'diff-sandwich-2', 'callers');
    assert.ok(r[0] === 255 && r[2] < 120, `grew: red in the sandwich, got ${r}`);
    assert.match(await tooltipOf(page, 'process_main', 'callers'), /before: .* of py_encode_basestring_ascii.*after: .*change: \+/s);
  });

  await check('flame chart: boxes in the order of the samples\' timestamps, per thread', async () => {
    page = await open('timed-chart.html');
    assert.equal(await page.evaluate(() => window.__kiln.app.state.view), 'chart', '--flamechart opens the chart');
    const samples = JSON.parse(readFileSync(join(dir, 'timed.json'), 'utf8'));
    const threads = [...new Set(samples.map((s) => s.thread))];
    for (const th of threads) {
      const mine = samples.filter((s) => s.thread === th).sort((a, b) => a.t - b.t);
      for (const depth of [0, 1, 2]) {
        // Runs of the same path down to this depth, in time order (a sample not that
        // deep ends the run).
        const want = [];
        let prev = null;
        for (const s of mine) {
          if (s.stack.length <= depth) {
            prev = null;
            continue;
          }
          const key = s.stack.slice(0, depth + 1).join(';');
          if (key === prev) want[want.length - 1][1]++;
          else want.push([s.stack[depth], 1]);
          prev = key;
        }
        const got = await page.evaluate(
          ([thread, d]) => {
            const app = window.__kiln.app;
            const c = app.model.chart(app.state);
            const lane = c.lanes.find((l) => l.name === thread);
            const names = app.model.frames({ ...app.state, threadMode: 'merged' }).names;
            const row = lane.rows[d];
            const out = [];
            for (let k = 0; k < row.length; k++) out.push([names[c.frame[row.node[k]]], row.count[k], row.start[k]]);
            return out;
          },
          [th, depth],
        );
        assert.deepEqual(got.map(([n, c]) => [n, c]), want, `${th} depth ${depth}`);
        assert.ok(got.every((b, i) => i === 0 || b[2] > got[i - 1][2]), 'boxes start in time order');
      }
    }
    // Pixels: the chart is drawn, and the box under the pointer is the sample's frame.
    const canvas = await page.$eval('canvas.chart-canvas', (e) => JSON.parse(JSON.stringify(e.getBoundingClientRect())));
    const at = await page.evaluate(() => {
      const app = window.__kiln.app;
      const r = app.chart.renderer;
      const s = app.chart.scene;
      const lane = s.chart.lanes[0];
      const row = lane.rows[1];
      const k = row.length - 1;
      const rect = r.rectOf(s, { lane: 0, depth: 1, index: k });
      return { x: rect.x + rect.w / 2, y: rect.y + 8, name: app.model.frames({ ...app.state, threadMode: 'merged' }).names[s.chart.frame[row.node[k]]] };
    });
    await page.mouse.move(canvas.x + at.x, canvas.y + at.y);
    await settle(page);
    assert.equal(await page.textContent('.tt-name'), at.name);
    assert.match(await page.textContent('.tooltip'), /samples? in a row on/);
    const px = (await shot(page, 'chart')).at(canvas.x + at.x, canvas.y + at.y - 6);
    assert.ok(px[0] > 150 && px[2] < 120, `a flame colour under the pointer, got ${px}`);
  });

  await check('flame chart: zoom and pan move the chart\'s own view, never the selected window or the URL; axis labels stay distinct at any zoom', async () => {
    await tabTo(page, 'canvas.chart-canvas');
    const view = () => page.evaluate(() => [window.__kiln.app.chart.scene.t0, window.__kiln.app.chart.scene.t1]);
    const state = () => page.evaluate(() => [window.__kiln.app.state.range, new URLSearchParams(location.hash.slice(1)).get('t')]);
    const [f0, f1] = await view();
    await page.keyboard.press('+');
    await page.keyboard.press('+');
    await settle(page);
    const v1 = await view();
    assert.ok(v1[1] - v1[0] < (f1 - f0) / 3, `zoomed to a quarter: ${v1} of ${[f0, f1]}`);
    assert.deepEqual(await state(), [null, null], 'zooming selects no window and writes none in the URL');
    await page.keyboard.press('Shift+ArrowRight');
    const v2 = await view();
    assert.ok(v2[0] > v1[0], 'panned right');
    await page.keyboard.press('ArrowDown');
    assert.match(await page.textContent('[data-ctrl=status]'), / — .* in a row on /);
    // The mouse pans the view: dragged left, it moves later by the dragged share.
    const c = await page.$eval('canvas.chart-canvas', (e) => JSON.parse(JSON.stringify(e.getBoundingClientRect())));
    const r0 = await view();
    await page.mouse.move(c.x + c.width * 0.6, c.y + 20);
    await page.mouse.down();
    await page.mouse.move(c.x + c.width * 0.4, c.y + 20, { steps: 5 });
    await page.mouse.up();
    await settle(page);
    const r3 = await view();
    const moved = (r3[0] - r0[0]) / (r0[1] - r0[0]);
    assert.ok(Math.abs(moved - 0.2) < 0.02 && Math.abs(r3[1] - r3[0] - (r0[1] - r0[0])) < 1, `dragged a fifth of the width: the view moved ${moved} of itself (${r0} → ${r3})`);
    assert.deepEqual(await state(), [null, null], 'panning selects no window');
    // A window selected elsewhere (the strip, the report): the chart opens on it, its lanes
    // count the window's samples, and zooming deep leaves it and the URL alone.
    const win = await page.evaluate(() => {
      const a = window.__kiln.app;
      const [t0, t1] = a.model.chart(a.state).span;
      const o = a.model.raw.timeOrigin;
      a.setWindow([o + Math.round(t0 + (t1 - t0) * 0.25), o + Math.round(t0 + (t1 - t0) * 0.5)]);
      return a.state.range;
    });
    await settle(page);
    assert.deepEqual(await view(), win, 'the chart shows the window');
    const [, t] = await state();
    assert.equal(t, `${win[0]}-${win[1]}`);
    assert.match(await page.evaluate(() => window.__kiln.app.chart.scene.laneLabel(0)), / — [\d,]+ of [\d,]+ samples in the window$/);
    await page.focus('canvas.chart-canvas');
    for (let i = 0; i < 14; i++) await page.keyboard.press('+');
    await settle(page);
    const deep = await view();
    assert.ok(deep[1] - deep[0] < 1e6, `zoomed under a millisecond: ${deep[1] - deep[0]} ns`);
    assert.deepEqual(await state(), [win, t], 'the window and the URL stay');
    const ticks = await page.evaluate(() => window.__kiln.app.chart.renderer.axisTicks(window.__kiln.app.chart.scene).map((x) => x.text));
    assert.ok(ticks.length >= 3, `ticks ${ticks}`);
    assert.equal(new Set(ticks).size, ticks.length, `every tick reads differently: ${ticks}`);
    // A box's tooltip: its start and end read differently too.
    await page.keyboard.press('ArrowDown');
    const status = await page.textContent('[data-ctrl=status]');
    const m = /from (-?[\d.]+ s) to (-?[\d.]+ s)/.exec(status);
    assert.ok(m && m[1] !== m[2], `start and end of the box: ${status}`);
    // Escape: first the chart's own zoom (back to the window), then the window.
    await page.keyboard.press('Escape');
    await settle(page);
    assert.deepEqual(await view(), win, 'Esc: the view back on the window');
    assert.deepEqual((await state())[0], win);
    await page.keyboard.press('Escape');
    await settle(page);
    assert.equal(await page.evaluate(() => window.__kiln.app.state.range), null, 'Esc again: the whole time');
    await page.keyboard.press('1');
    await settle(page);
    assert.ok(await find(page, 'alpha'), 'the flame graph of the same profile');
    await axe(page, 'flame graph of the chart page');
    await page.keyboard.press('4');
    await settle(page);
    await axe(page, 'flame chart');
  });

  await check('export: SVG equal in frames to kiln flamegraph\'s for the same view', async () => {
    page = await open('export.html');
    await page.click('canvas.flame-canvas >> nth=0', { button: 'right', position: await relative(page, 'gc') });
    await page.click('[data-action=d]');
    await settle(page);
    const svg = await page.evaluate(() => window.__kiln.app.exportSvg());
    const ref = readFileSync(join(dir, 'ref-drop-gc.svg'), 'utf8');
    const framesOf = (text) =>
      page.evaluate((t) => {
        const doc = new DOMParser().parseFromString(t, 'image/svg+xml');
        if (doc.querySelector('parsererror')) return null;
        return [...doc.querySelectorAll('g')]
          .filter((g) => g.querySelector('rect[fg\\:w], rect'))
          .map((g) => {
            const r = g.querySelector('rect');
            const title = g.querySelector('title')?.textContent ?? '';
            const name = title.replace(/ \([^()]*\)$/, '');
            return `${name}|${r.getAttribute('fg:x')}|${r.getAttribute('fg:w')}`;
          })
          .filter((s) => !s.startsWith('|'))
          .sort();
      }, text);
    const mine = await framesOf(svg);
    assert.ok(mine, 'the exported SVG is well-formed XML');
    const theirs = (await framesOf(ref)).map((s) => s.replace(/^all\|/, 'all|'));
    assert.deepEqual(mine.map((s) => s.replace(/^all \(\)\|/, 'all|')), theirs);
    assert.ok(!mine.some((s) => s.startsWith('gc|')), 'gc was dropped');
    // The download itself, from the Export menu.
    const [dl] = await Promise.all([page.waitForEvent('download'), (async () => {
      await page.click('[data-ctrl=export]');
      await page.click('.menu [data-action=svg]');
    })()]);
    assert.match(dl.suggestedFilename(), /\.svg$/);
    assert.equal(readFileSync(await dl.path(), 'utf8'), svg);
  });

  await check('export: folded stacks equal the transformed profile; PNG is a PNG', async () => {
    page = await open('export.html');
    await page.click('canvas.flame-canvas >> nth=0', { button: 'right', position: await relative(page, 'serve') });
    await page.click('[data-action=m]');
    await settle(page);
    const folded = await page.evaluate(() => window.__kiln.app.exportFolded());
    const ref = readFileSync(join(dir, 'ref-merge-serve.folded'), 'utf8');
    const lines = (t) => t.trim().split('\n').sort();
    assert.deepEqual(lines(folded), lines(ref));
    const [dl] = await Promise.all([page.waitForEvent('download'), (async () => {
      await page.keyboard.press('e');
      await page.click('.menu [data-action=png]');
    })()]);
    const png = readFileSync(await dl.path());
    assert.deepEqual([...png.subarray(1, 4)], [0x50, 0x4e, 0x47], 'PNG signature');
    const img = decodePng(png);
    assert.ok(img.width > 500, `PNG of the canvas, ${img.width} px wide`);
    // speedscope's format: its evented profile replayed gives the same stacks and self
    // weights as the folded export (in the file's unit), and the file is named for the view.
    const [ss] = await Promise.all([page.waitForEvent('download'), (async () => {
      await page.keyboard.press('e');
      await page.click('.menu [data-action=speedscope]');
    })()]);
    assert.match(ss.suggestedFilename(), /-transformed\.speedscope\.json$/);
    const file = JSON.parse(readFileSync(await ss.path(), 'utf8'));
    assert.equal(file.$schema, 'https://www.speedscope.app/file-format-schema.json');
    const [prof] = file.profiles;
    assert.equal(prof.type, 'evented');
    const selfOf = new Map();
    const opened = [];
    let last = -Infinity;
    for (const e of prof.events) {
      assert.ok(e.at >= last, 'events in time order');
      last = e.at;
      if (e.type === 'O') opened.push({ frame: e.frame, at: e.at, inner: 0 });
      else {
        const o = opened.pop();
        assert.equal(o.frame, e.frame, 'a close matches the innermost open frame');
        const len = e.at - o.at;
        if (opened.length) opened[opened.length - 1].inner += len;
        const stack = [...opened.map((x) => file.shared.frames[x.frame].name), file.shared.frames[o.frame].name].join(';');
        if (len - o.inner > 0) selfOf.set(stack, (selfOf.get(stack) ?? 0) + len - o.inner);
      }
    }
    assert.equal(opened.length, 0, 'every frame closed');
    assert.equal(last, prof.endValue, 'the profile ends with its last close');
    const want = new Map(folded.trim().split('\n').map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]));
    assert.deepEqual([...selfOf.keys()].sort(), [...want.keys()].sort(), 'the same stacks');
    const k = selfOf.get([...want.keys()][0]) / [...want.values()][0];
    for (const [stack, w] of want) assert.ok(Math.abs(selfOf.get(stack) - w * k) <= 1e-6 * w * k, `${stack}: ${selfOf.get(stack)} for ${w} × ${k}`);
  });

  await check('export of hostile names is well-formed and inert; copy a frame\'s name', async () => {
    page = await open('timed.html');
    const ok = await page.evaluate(() => {
      const t = window.__kiln.app.exportSvg();
      const doc = new DOMParser().parseFromString(t, 'image/svg+xml');
      return !doc.querySelector('parsererror') && doc.querySelectorAll('script').length === 0 && t.includes('&lt;img src=x');
    });
    assert.ok(ok);
    await page.click('canvas.flame-canvas >> nth=0', { button: 'right', position: await relative(page, HOSTILE_IMG) });
    await page.click('[data-action=y]');
    await page.waitForFunction(() => /Copied|refused/.test(document.querySelector('[data-ctrl=status]').textContent));
    assert.equal(await page.textContent('[data-ctrl=status]'), `Copied the name “${HOSTILE_IMG}”`);
    const clip = await page.evaluate(() => navigator.clipboard.readText().catch(() => null));
    if (clip !== null) assert.equal(clip, HOSTILE_IMG);
    assert.equal(await pwned(page), null);
  });

  await check('copy stack: the frames from the root to the node, one a line, from the flame graph and the call tree', async () => {
    page = await open('timed.html');
    const clip = () => page.evaluate(() => navigator.clipboard.readText().catch(() => null));
    const copied = async () => {
      await page.waitForFunction(() => /Copied|refused/.test(document.querySelector('[data-ctrl=status]').textContent));
      const status = await page.textContent('[data-ctrl=status]');
      await page.evaluate(() => (document.querySelector('[data-ctrl=status]').textContent = ''));
      return status;
    };
    await page.click('canvas.flame-canvas >> nth=0', { button: 'right', position: await relative(page, 'alpha_leaf') });
    await page.click('[data-action=Y]');
    assert.equal(await copied(), 'Copied the stack of 3 frames');
    assert.equal(await clip(), 'main\nalpha\nalpha_leaf');
    // The call tree: the context menu of a row, and Y on the active row.
    await page.keyboard.press('5');
    await settle(page);
    const row = '[role=treegrid] [role=row][aria-level="2"]';
    const name = await page.textContent(`${row} .fn-name`);
    await page.click(row, { button: 'right' });
    await page.click('[data-action=Y]');
    assert.equal(await copied(), 'Copied the stack of 2 frames');
    assert.equal(await clip(), `main\n${name}`);
    await page.focus('[role=treegrid]');
    await page.keyboard.press('Home');
    await page.keyboard.press('Y');
    assert.equal(await copied(), 'Copied the stack of 1 frame');
    assert.equal(await clip(), 'main');
    // Inverted, a row's stack is the function and the callers opened above it.
    await page.keyboard.press('b');
    await settle(page);
    await page.focus('[role=treegrid]');
    await page.keyboard.press('Home');
    const selected = '[role=treegrid] [role=row][aria-selected=true]';
    const fn = await page.textContent(`${selected} .fn-name`);
    if ((await page.getAttribute(selected, 'aria-expanded')) !== 'true') await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.getAttribute(selected, 'aria-level'), '2');
    const caller = await page.textContent(`${selected} .fn-name`);
    await page.keyboard.press('Y');
    assert.equal(await copied(), 'Copied the stack of 2 frames');
    assert.equal(await clip(), `${fn}\n${caller}`);
  });

  await check('dark mode: dark page and canvas, frames keep their colours', async () => {
    page = await open('timed.html', '', 'dark');
    assert.equal(await page.evaluate(() => window.__kiln.app.theme), 'dark');
    const img = await shot(page, 'dark');
    const c = await page.$eval('canvas.flame-canvas', (e) => JSON.parse(JSON.stringify(e.getBoundingClientRect())));
    const bg = img.at(c.x + c.width - 5, c.y + 5);
    assert.ok(brightness(bg) < 120, `dark canvas background, got ${bg}`);
    const header = img.at(5, 5);
    assert.ok(brightness(header) < 120, `dark header, got ${header}`);
    const leaf = await colourOf(page, 'alpha_leaf', 'dark-frame');
    assert.ok(leaf[0] >= 200 && leaf[2] <= 60, `hot colour in the dark too, got ${leaf}`);
    const fg = await page.evaluate(() => getComputedStyle(document.querySelector('h1.title')).color);
    assert.match(fg, /rgb\(2[0-9]{2}, 2[0-9]{2}, 2[0-9]{2}\)/, `light text, got ${fg}`);
    await axe(page, 'dark flame graph');
  });

  await check('accessibility scan of every view, light and dark (axe-core: no moderate, serious or critical violations)', async () => {
    page = await open('timed.html');
    await axe(page, 'flame graph');
    await page.click('canvas.flame-canvas >> nth=0', { button: 'right', position: await relative(page, 'alpha') });
    await axe(page, 'context menu');
    await page.keyboard.press('Escape');
    for (const scheme of ['light', 'dark']) {
      for (const v of ['table', 'sandwich', 'tree', 'tree&inv=1']) {
        page = await open('timed.html', v === 'sandwich' ? 'v=sandwich&fn=2' : `v=${v}`, scheme);
        await axe(page, `${v}, ${scheme}`);
      }
      page = await open('timed-chart.html', 'v=chart', scheme);
      await page.click('[data-track=g0] .track-twisty');
      await page.click('[data-track=t1]');
      await settle(page);
      await axe(page, `tracks over the flame chart, one selected, ${scheme}`);
    }
    page = await open('diff.html');
    await axe(page, 'diff');
    page = await open('period.html', 'q=parse');
    await axe(page, 'search');
  });

  await check('two viewers on one page: own URL keys, one shared time window', async () => {
    page = await open('two.html');
    assert.equal(await page.evaluate(() => window.__kiln.apps.length), 2);
    const origin = await page.evaluate(() => window.__kiln.apps[0].model.raw.timeOrigin);
    const totals = () => page.evaluate(() => window.__kiln.apps.map((a) => a.derived.layout.total[0]));
    assert.deepEqual(await totals(), [200, 200]);
    // The page selects a window (the run report's chart would): both viewers follow.
    await page.evaluate((o) => window.__kiln.setWindow([o + 5.2e9, o + 9.9e9]), origin);
    await settle(page);
    assert.deepEqual(await totals(), [95, 95]);
    // The URL holds it once, on the page's clock (its origin is a second before the run).
    const t = await page.evaluate(() => new URLSearchParams(location.hash.slice(1)).get('t'));
    assert.equal(t, `${6.2e9}-${10.9e9}`);
    // A window dragged on one viewer's strip reaches the other; a search stays its own.
    await page.locator('.kiln-mount >> nth=1 >> .timeline-canvas').scrollIntoViewIfNeeded();
    const box = await page.$eval('.kiln-mount >> nth=1 >> .timeline-canvas', (e) => JSON.parse(JSON.stringify(e.getBoundingClientRect())));
    await page.mouse.move(box.x + box.width * 0.02, box.y + 10);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.3, box.y + 10, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(() => window.__kiln.apps[0].state.range?.[1] < 4e9);
    const [a, b] = await page.evaluate(() => window.__kiln.apps.map((x) => x.window));
    assert.deepEqual(a, b);
    await page.fill('.kiln-mount >> nth=0 >> [data-ctrl=search]', 'fib');
    await page.waitForFunction(() => /cpu\.q=fib/.test(location.hash));
    assert.equal(await page.evaluate(() => window.__kiln.apps[1].state.query), '');
    assert.match(await page.textContent('.kiln-mount >> nth=1 >> [data-fact=total]'), /page-faults/);
    const ids = await page.$$eval('[id]', (els) => els.map((e) => e.id));
    assert.equal(new Set(ids).size, ids.length, 'element ids are unique on the page');
    await axe(page, 'two viewers');
  });

  await check('an embedded viewer has room: its height, full screen, the tracks and the legend in the URL; the wheel reaches the page', async () => {
    const rect = (sel) => page.$eval(sel, (e) => JSON.parse(JSON.stringify(e.getBoundingClientRect())));
    const canvasH = async () => (await rect('.main-flame canvas.flame-canvas')).height;
    // One viewer on the page: its URL keys have no prefix.
    const hashOf = (key) => page.evaluate((k) => new URLSearchParams(location.hash.slice(1)).get(k), key);
    for (const [w, h] of [[1366, 768], [1600, 1000]]) {
      await page.setViewportSize({ width: w, height: h });
      page = await open('room.html');
      await page.evaluate(() => document.querySelector('.kiln').scrollIntoView());
      await settle(page);
      const viewer = await rect('.kiln');
      const c0 = await canvasH();
      // The viewer takes the window's height (less a margin), its canvas most of it.
      assert.ok(viewer.height >= h - 40, `${w}x${h}: the viewer is ${viewer.height} px high`);
      assert.ok(c0 >= 0.5 * h, `${w}x${h}: the canvas is ${c0} px of ${viewer.height}`);
      // The tracks, then the legend, closed: the canvas gets their room.
      await page.click('[data-ctrl=tracks]');
      await settle(page);
      assert.equal(await hashOf('tracks'), '0');
      const c1 = await canvasH();
      assert.ok(c1 > c0, `${w}x${h}: tracks closed, the canvas ${c0} -> ${c1} px`);
      await page.click('[data-ctrl=legend-toggle]');
      await settle(page);
      assert.equal(await hashOf('legend'), '0');
      assert.equal(await page.getAttribute('[data-ctrl=legend-toggle]', 'aria-expanded'), 'false');
      assert.match(await page.textContent('[data-ctrl=legend-toggle]'), /By category \(\d+ categor/);
      const c2 = await canvasH();
      assert.ok(c2 > c1, `${w}x${h}: legend closed, the canvas ${c1} -> ${c2} px`);
      // Full screen: the viewer fills the window; Esc goes back.
      await page.click('[data-ctrl=full]');
      await settle(page);
      const full = await rect('.kiln');
      assert.deepEqual([full.x, full.y, full.width, full.height], [0, 0, w, h], `${w}x${h}: full screen`);
      assert.equal(await hashOf('full'), '1');
      const c3 = await canvasH();
      assert.ok(c3 > c2, `${w}x${h}: full screen, the canvas ${c2} -> ${c3} px`);
      await page.focus('.main-flame canvas.flame-canvas');
      await page.keyboard.press('Escape');
      await settle(page);
      assert.equal(await hashOf('full'), null);
      assert.ok((await rect('.kiln')).height < h, 'back in the page');
      console.log(`  ${w}x${h}: viewer ${viewer.height} px, canvas ${c0} px; tracks closed ${c1}, legend closed ${c2}, full screen ${c3}`);
      // Reloaded, the URL gives the same room.
      page = await open('room.html', (await hash(page)).slice(1));
      assert.equal(await page.$eval('.kiln .tracks', (e) => e.hidden), true, 'tracks stay closed');
      assert.equal(await page.getAttribute('[data-ctrl=legend-toggle]', 'aria-expanded'), 'false');
    }
    // The resize handle: a drag makes the viewer taller, kept in the URL; the keys step it.
    page = await open('room.html');
    await page.evaluate(() => document.querySelector('.kiln-resize').scrollIntoView({ block: 'center' }));
    const before = (await rect('.kiln')).height;
    const bar = await rect('.kiln-resize');
    await page.mouse.move(bar.x + 50, bar.y + 3);
    await page.mouse.down();
    await page.mouse.move(bar.x + 50, bar.y + 103, { steps: 5 });
    await page.mouse.up();
    await settle(page);
    const taller = (await rect('.kiln')).height;
    assert.ok(Math.abs(taller - before - 100) <= 2, `dragged 100 px: ${before} -> ${taller}`);
    assert.equal(Number(await hashOf('h')), Math.round(taller));
    await page.focus('.kiln-resize');
    await page.keyboard.press('ArrowUp');
    await settle(page);
    assert.equal(Number(await hashOf('h')), Math.round(taller) - 40);
    assert.equal(Number(await page.getAttribute('.kiln-resize', 'aria-valuenow')), Math.round(taller) - 40);
    page = await open('room.html', (await hash(page)).slice(1));
    assert.equal(Math.round((await rect('.kiln')).height), Math.round(taller) - 40, 'the URL restores the height');
    await page.focus('.kiln-resize');
    await page.keyboard.press('Home');
    await settle(page);
    assert.equal(await hashOf('h'), null, 'Home: the page\'s height');
    // The wheel: over a graph at its end it scrolls the page; the other way, the graph.
    await page.evaluate(() => window.scrollTo(0, 0));
    const cv = await rect('.main-flame canvas.flame-canvas');
    await page.mouse.move(cv.x + cv.width / 2, cv.y + cv.height / 2);
    const scrollOf = () => page.evaluate(() => window.__kiln.apps[0].main.scene.scrollY);
    await page.mouse.wheel(0, -120);
    await settle(page);
    assert.ok((await scrollOf()) > 0, 'wheel up: the graph shows its deeper frames');
    assert.equal(await page.evaluate(() => window.scrollY), 0, 'the page stays');
    await page.mouse.wheel(0, 5000);
    await settle(page);
    assert.equal(await scrollOf(), 0, 'wheel down: the graph back at its root');
    assert.equal(await page.evaluate(() => window.scrollY), 0, 'the page still stays');
    await page.mouse.wheel(0, 120);
    await page.waitForFunction(() => window.scrollY > 0);
    await axe(page, 'an embedded viewer with room');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  await check('search: smart case, and functions only unless process and thread names are asked for', async () => {
    page = await open('timed.html');
    const matched = async (q) => {
      await page.fill('[data-ctrl=search]', q);
      await settle(page);
      return page.textContent('[data-ctrl=matched]');
    };
    assert.equal(await matched('lock'), 'Matched: 20.0%', 'lower case: either case');
    assert.equal(await matched('Lock'), 'Matched: 10.0%', 'a capital letter: that case only');
    assert.equal(await matched('\\block'), 'Matched: 20.0%', 'an escape is not a capital');
    // One root per thread: the thread names are frames, searched only when asked (t).
    await page.selectOption('[data-ctrl=threads]', 'threads');
    await settle(page);
    assert.equal(await matched('scheduler'), 'Matched: 0.0%', 'thread names are not functions');
    assert.equal(await page.textContent('[data-ctrl=match-count]'), 'no frames match');
    await page.click('[data-ctrl=names]');
    await settle(page);
    assert.equal(await page.textContent('[data-ctrl=matched]'), 'Matched: 100.0%');
    assert.equal(await page.getAttribute('[data-ctrl=names]', 'aria-pressed'), 'true');
    assert.match(await hash(page), /qn=1/);
    await page.fill('[data-ctrl=search]', '');
    await page.evaluate(() => document.activeElement.blur());
  });

  await check('call tree: totals equal the flame graph\'s, inverted and not; the keyboard opens, closes and acts on rows', async () => {
    page = await open('timed.html');
    await page.keyboard.press('5');
    await settle(page);
    assert.equal(await page.getAttribute('[data-ctrl=tab-tree]', 'aria-selected'), 'true');
    const compare = () =>
      page.evaluate(() => {
        const app = window.__kiln.app;
        const l = app.derived.layout;
        const names = app.derived.frames.names;
        const tree = app.callTree();
        const stats = app.derived.stats();
        const out = { rows: [], flame: {}, self: {}, total: l.total[0] };
        for (const n of tree.roots()) out.rows.push([names[n.frame], n.total, n.self]);
        // The flame graph: the root's children (non-inverted), each function's self (inverted).
        for (let k = l.childStart[0]; k < l.childStart[1]; k++) out.flame[names[l.frame[l.childList[k]]]] = l.total[l.childList[k]];
        for (const f of stats.present) if (stats.self[f] > 0) out.self[names[f]] = stats.self[f];
        return out;
      });
    const top = await compare();
    assert.ok(top.rows.length > 0);
    for (const [name, total] of top.rows) assert.equal(total, top.flame[name], `${name}: the tree's total is the flame graph's`);
    assert.equal(top.rows.reduce((a, r) => a + r[1], 0), top.total);
    // The rows on the page: level-1 rows, names and totals as the unit writes them.
    const shownRows = await page.$$eval('[role=treegrid] [role=row][aria-level="1"]', (rs) => rs.map((r) => [r.querySelector('.fn-name').textContent, r.querySelector('[aria-colindex="1"]').textContent]));
    assert.equal(shownRows[0][0], top.rows[0][0]);
    // Opened on the heaviest path: main is open, its heaviest child is shown below it.
    assert.equal(await page.getAttribute('[role=treegrid] [role=row][aria-level="1"]', 'aria-expanded'), 'true');
    // Inverted (b): the first level is every function that ran, with its self weight.
    await page.keyboard.press('b');
    await settle(page);
    assert.equal(await page.getAttribute('[data-ctrl=invert]', 'aria-pressed'), 'true');
    const inv = await compare();
    assert.deepEqual(Object.fromEntries(inv.rows.map(([n, t]) => [n, t])), inv.self, 'inverted roots: each function\'s self, as the function table has it');
    for (const [, total, self] of inv.rows) assert.equal(total, self);
    assert.equal(inv.rows.reduce((a, r) => a + r[1], 0), inv.total);
    // Keyboard: Tab to the tree, → opens the first row (its callers), ← closes it.
    await tabTo(page, '[role=treegrid]');
    await page.keyboard.press('Home');
    const first = '[role=treegrid] [role=row][aria-selected=true]';
    const opened = await page.getAttribute(first, 'aria-expanded');
    if (opened === 'true') await page.keyboard.press('ArrowLeft');
    assert.equal(await page.getAttribute(first, 'aria-expanded'), 'false');
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.getAttribute(first, 'aria-expanded'), 'true');
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.getAttribute(first, 'aria-level'), '2', '→ on an open row: its first child');
    const caller = await page.textContent(`${first} .fn-name`);
    const callers = await page.evaluate(() => {
      const app = window.__kiln.app;
      const tree = app.callTree();
      const r = tree.roots()[0];
      return tree.children(r).map((n) => [app.derived.frames.names[n.frame], n.total]);
    });
    assert.equal(caller, callers[0][0]);
    if ((await page.getAttribute(first, 'aria-expanded')) === 'true') {
      await page.keyboard.press('ArrowLeft');
      assert.equal(await page.getAttribute(first, 'aria-expanded'), 'false', '← on an open row closes it');
    }
    await page.keyboard.press('ArrowLeft');
    assert.equal(await page.getAttribute(first, 'aria-level'), '1', '← on a closed child: its parent');
    await page.keyboard.press('ArrowLeft');
    assert.equal(await page.getAttribute(first, 'aria-expanded'), 'false');
    // The window applies: a window of the second half shows beta, not alpha.
    await page.evaluate(() => {
      const a = window.__kiln.app;
      const o = a.model.raw.timeOrigin;
      a.setWindow([o + 5e9, o + 10e9]);
    });
    await settle(page);
    const late = await compare();
    assert.ok(late.self.beta_child > 0 && !late.self.alpha_leaf, 'the window\'s functions');
    assert.deepEqual(Object.fromEntries(late.rows.map(([n, t]) => [n, t])), late.self);
    // A frame action from the tree's row: s opens its sandwich.
    await page.focus('[role=treegrid]');
    await page.keyboard.press('s');
    await settle(page);
    assert.equal(await page.getAttribute('[data-ctrl=tab-sandwich]', 'aria-selected'), 'true');
    await axe(page, 'sandwich from the call tree');
    await page.keyboard.press('5');
    await settle(page);
    await axe(page, 'call tree');
    // The search keeps matching samples: fib's rows only, totals of fib's samples.
    await page.keyboard.press('b');
    await page.fill('[data-ctrl=search]', 'fib');
    await settle(page);
    const fib = await compare();
    assert.deepEqual(fib.rows.map((r) => r[0]), ['main']);
    assert.equal(fib.rows[0][1], await page.evaluate(() => window.__kiln.app.derived.matchedWeight));
    await page.fill('[data-ctrl=search]', '');
  });

  await check('tracks: a thread track selected from the keyboard shows only its thread in the flame chart, the call tree and the header', async () => {
    page = await open('timed-chart.html');
    const lanes = () => page.evaluate(() => window.__kiln.app.chart.scene.chart.lanes.map((l) => l.name));
    assert.deepEqual(await lanes(), ['1_scheduler [11]', '2_scheduler [12]']);
    const rows = () => page.$$eval('[data-track]', (rs) => rs.map((r) => [r.dataset.track, r.getAttribute('aria-selected'), r.textContent]));
    // 1_scheduler and 2_scheduler are one group, as kiln's summary groups them.
    assert.deepEqual(await rows(), [
      ['all', 'true', 'All threads — 200 samples'],
      ['g0', 'false', '▸scheduler (2 threads) — 200 samples'],
    ]);
    await page.evaluate(() => document.activeElement.blur());
    await page.keyboard.press('h');
    assert.equal(await page.evaluate(() => document.activeElement.dataset.track), 'all', 'h: to the tracks');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.getAttribute('[data-track=g0]', 'aria-expanded'), 'true');
    await page.keyboard.press('ArrowDown');
    assert.equal(await page.evaluate(() => document.activeElement.dataset.track), 't0');
    await page.keyboard.press('Enter');
    await settle(page);
    assert.deepEqual(await lanes(), ['1_scheduler [11]']);
    assert.match(await hash(page), /(^#|&)sel=0(&|$)/);
    assert.equal(await page.evaluate(() => window.__kiln.app.derived.layout.total[0]), 100, 'the flame graph holds the thread\'s 100 samples');
    assert.match(await fact(page, 'total'), /^100 of 200 samples$/);
    assert.deepEqual((await rows()).map((r) => r[1]), ['false', 'false', 'true', 'false']);
    // Ctrl+Enter on the other thread adds it: every thread again.
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Control+Enter');
    await settle(page);
    assert.deepEqual(await lanes(), ['1_scheduler [11]', '2_scheduler [12]']);
    assert.doesNotMatch(await hash(page), /sel=/);
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('Enter');
    await page.keyboard.press('5');
    await settle(page);
    assert.equal(await page.evaluate(() => window.__kiln.app.callTree().total), 100);
    await page.click('[data-track=all]');
    await settle(page);
    assert.equal(await page.evaluate(() => window.__kiln.app.callTree().total), 200);
    await axe(page, 'tracks');
  });

  await check('tracks: one per thread group; a click selects, ctrl-click adds, the flame graph holds exactly the groups\' samples, the URL restores them', async () => {
    const groups = JSON.parse(readFileSync(join(dir, 'tracks.json'), 'utf8'));
    const byName = Object.fromEntries(groups.map((g) => [g.name, g]));
    assert.deepEqual(Object.keys(byName).sort(), ['logger', 'scheduler', 'worker']);
    page = await open('tracks.html');
    const labels = await page.$$eval('[data-track]', (rs) => rs.map((r) => r.querySelector('.track-label').textContent));
    assert.deepEqual(labels, [
      `All threads — ${(3800).toLocaleString('en-US')} samples`,
      `scheduler (3 threads) — ${byName.scheduler.samples.toLocaleString('en-US')} samples`,
      `worker (2 threads) — ${byName.worker.samples} samples`,
      `logger [40] — ${byName.logger.samples} samples`,
    ]);
    const total = () => page.evaluate(() => window.__kiln.app.derived.layout.total[0]);
    const selected = () => page.$$eval('[data-track][aria-selected=true]', (rs) => rs.map((r) => r.dataset.track));
    await page.click('[data-track=g1]');
    await settle(page);
    assert.equal(await total(), byName.worker.samples);
    assert.ok(await find(page, 'work'));
    assert.equal(await find(page, 'schedule'), null);
    assert.deepEqual(await selected(), ['g1']);
    await page.click('[data-track=t5]', { modifiers: ['Control'] });
    await settle(page);
    assert.equal(await total(), byName.worker.samples + byName.logger.samples, 'ctrl-click adds the logger');
    assert.deepEqual(await selected(), ['g1', 't5']);
    // A plain click replaces the selection.
    await page.click('[data-track=g0]');
    await settle(page);
    assert.equal(await total(), byName.scheduler.samples);
    await page.click('[data-track=t5]', { modifiers: ['Control'] });
    await settle(page);
    const h = (await hash(page)).replace(/^#/, '');
    assert.match(h, /sel=/);
    // The URL restores the selection, in a fresh page.
    page = await open('tracks.html', h);
    assert.deepEqual(await selected(), ['g0', 't5']);
    assert.equal(await total(), byName.scheduler.samples + byName.logger.samples);
    // A window and a track: the track's samples in the window.
    page = await open('tracks.html', 't=6000000000-8000000000&sel=3.4');
    assert.deepEqual(await selected(), ['g1']);
    assert.equal(await total(), 201 + 201, 'worker-1 and worker-2 from 6 s to 8 s, both ends in');
  });

  await check('tracks: each track\'s activity and the window are drawn at the time strip\'s x (within 1 px)', async () => {
    const groups = JSON.parse(readFileSync(join(dir, 'tracks.json'), 'utf8'));
    const worker = groups.find((g) => g.name === 'worker');
    const logger = groups.find((g) => g.name === 'logger');
    page = await open('tracks.html', 't=3000000000-6000000000');
    // Page x of the first and last drawn columns of a canvas row (y from the top, css px),
    // where `hit` holds for the pixel.
    const columns = (sel, y, kind) =>
      page.evaluate(
        ([sel, y, kind]) => {
          const c = document.querySelector(sel);
          const k = c.width / c.clientWidth;
          const row = c.getContext('2d').getImageData(0, Math.min(c.height - 1, Math.round(y * k)), c.width, 1).data;
          const xs = [];
          for (let x = 0; x < c.width; x++) {
            const [r, g, b, a] = row.slice(x * 4, x * 4 + 4);
            const hit = kind === 'window' ? r > g + 20 && g > b + 20 : a > 0 && b > r + 30;
            if (hit) xs.push(x);
          }
          const left = c.getBoundingClientRect().left;
          return xs.length ? [left + xs[0] / k, left + (xs[xs.length - 1] + 1) / k] : null;
        },
        [sel, y, kind],
      );
    // The window's edges: the strip's and every track's top row.
    const strip = await columns('.timeline-canvas', 0, 'window');
    assert.ok(strip, 'the strip draws the window');
    const expected = await page.evaluate(() => {
      const tl = window.__kiln.app.timeline;
      const left = tl.canvas.getBoundingClientRect().left;
      return [left + tl.xOf(3e9), left + tl.xOf(6e9)];
    });
    assert.ok(Math.abs(strip[0] - expected[0]) <= 1 && Math.abs(strip[1] - expected[1]) <= 1, `strip window ${strip} at ${expected}`);
    for (const t of ['all', 'g0', 'g1', 't5']) {
      const w = await columns(`[data-track=${t}] canvas`, 0, 'window');
      assert.ok(w, `track ${t} draws the window`);
      assert.ok(Math.abs(w[0] - strip[0]) <= 1 && Math.abs(w[1] - strip[1]) <= 1, `track ${t}'s window ${w} is the strip's ${strip}`);
    }
    // The activity: the bucket of the worker's first sample and the logger's last, at the
    // strip's x of those buckets.
    const bucketEdge = (t, end) =>
      page.evaluate(
        ([t, end]) => {
          const tl = window.__kiln.app.timeline;
          const { a, b, x0, pw } = tl.plot(tl.canvas.clientWidth);
          const n = tl.buckets(pw);
          const k = Math.floor(((t - a) / (b - a)) * n) + (end ? 1 : 0);
          return tl.canvas.getBoundingClientRect().left + x0 + (k * pw) / n;
        },
        [t, end],
      );
    // Without the window over them.
    page = await open('tracks.html');
    const bottom = await page.evaluate(() => document.querySelector('[data-track=g1] canvas').clientHeight - 1);
    const w = await columns('[data-track=g1] canvas', bottom, 'bar');
    const l = await columns('[data-track=t5] canvas', bottom, 'bar');
    assert.ok(w && l, 'the worker and logger tracks draw their activity');
    const w0 = await bucketEdge(worker.first, false);
    const l1 = await bucketEdge(logger.last, true);
    assert.ok(Math.abs(w[0] - w0) <= 1, `the worker's activity starts at ${w[0]}, the strip's x of ${worker.first} ns is ${w0}`);
    assert.ok(Math.abs(l[1] - l1) <= 1.5, `the logger's activity ends at ${l[1]}, the strip's x of ${logger.last} ns is ${l1}`);
  });

  await check('tracks: a drag across the tracks selects a time window as the strip does: the URL\'s t= and the header\'s "N of M" follow, no track selected', async () => {
    const groups = JSON.parse(readFileSync(join(dir, 'tracks.json'), 'utf8'));
    page = await open('tracks.html');
    const selected = () => page.$$eval('[data-track][aria-selected=true]', (rs) => rs.map((r) => r.dataset.track));
    // The strip's page x of a time, and ns per px of its axis.
    const axis = () =>
      page.evaluate(() => {
        const tl = window.__kiln.app.timeline;
        const { a, b, pw } = tl.plot(tl.canvas.clientWidth);
        return { left: tl.canvas.getBoundingClientRect().left, nsPerPx: (b - a) / pw, x: [tl.xOf(2.5e9), tl.xOf(6.5e9)] };
      });
    const ax = await axis();
    const [x0, x1] = ax.x.map((x) => ax.left + x);
    const row = await page.$eval('[data-track=g1] canvas', (c) => c.getBoundingClientRect().top + c.clientHeight / 2);
    await page.mouse.move(x0, row);
    await page.mouse.down();
    // Down across the logger's track and back: the window follows the pointer's x.
    await page.mouse.move((x0 + x1) / 2, row + 24, { steps: 4 });
    await page.mouse.move(x1, row, { steps: 4 });
    await page.mouse.up();
    await settle(page);
    const m = /(?:^#|&)t=(\d+)-(\d+)(?:&|$)/.exec(await hash(page));
    assert.ok(m, `the URL holds the window: ${await hash(page)}`);
    const [a, b] = [Number(m[1]), Number(m[2])];
    assert.ok(Math.abs(a - 2.5e9) <= ax.nsPerPx && Math.abs(b - 6.5e9) <= ax.nsPerPx, `window ${a}-${b} where the drag began and ended (2.5 s, 6.5 s; ${ax.nsPerPx} ns a px)`);
    const inWindow = (g) => g.times.filter((t) => t >= a && t <= b).length;
    const n = groups.reduce((s, g) => s + inWindow(g), 0);
    assert.equal(await fact(page, 'total'), `${n.toLocaleString('en-US')} of ${(3800).toLocaleString('en-US')} samples`);
    assert.equal(await page.evaluate(() => window.__kiln.app.derived.layout.total[0]), n);
    assert.match(await page.textContent('.timeline-label'), /^Window 2\.\d+ s – 6\.\d+ s /);
    // A drag is not a click: every thread still shown.
    assert.deepEqual(await selected(), ['all']);
    assert.doesNotMatch(await hash(page), /sel=/);
    // A click then selects a track in that window.
    await page.click('[data-track=g1]');
    await settle(page);
    assert.deepEqual(await selected(), ['g1']);
    assert.match(await hash(page), new RegExp(`(^#|&)t=${a}-${b}(&|$)`));
    assert.equal(await page.evaluate(() => window.__kiln.app.derived.layout.total[0]), inWindow(groups.find((g) => g.name === 'worker')));
  });

  await check('tracks: the activity is CPUs used, said by a hover: the samples of the bar times the period over its length', async () => {
    page = await open('record-cpu.html');
    const bar = await page.evaluate(() => {
      const app = window.__kiln.app;
      const tl = app.timeline;
      const { a, b, x0, pw } = tl.plot(tl.canvas.clientWidth);
      const n = tl.buckets(pw);
      const k = Math.floor(n / 2);
      const [from, to] = [a + (k * (b - a)) / n, a + ((k + 1) * (b - a)) / n];
      const t = app.model.raw.sampleTime;
      let count = 0;
      for (let i = 0; i < t.length; i++) if (t[i] >= from && (t[i] < to || (k === n - 1 && t[i] <= to))) count++;
      const c = document.querySelector('[data-track=t0] canvas').getBoundingClientRect();
      return { x: tl.canvas.getBoundingClientRect().left + x0 + ((k + 0.5) * pw) / n, y: c.top + c.height / 2, count, len: to - from };
    });
    assert.ok(bar.count > 0, 'the bar holds samples');
    await page.mouse.move(1, 1);
    await page.mouse.move(bar.x, bar.y);
    await settle(page);
    const tip = await page.textContent('.tooltip');
    const share = (bar.count * 1_001_001) / bar.len;
    const cpus = (Math.round(share * 100) / 100).toFixed(2);
    assert.match(tip, new RegExp(`^worker \\[7\\]${cpus.replace('.', '\\.')} CPUs?, [0-9.]+ ms at [0-9.]+ sFull height: 1 CPU$`), `${tip}: ${bar.count} samples of 1.001 ms in ${bar.len} ns`);
    assert.equal(await page.isVisible('.tooltip'), true);
  });

  await check('the header follows the window: total, samples and duration beside the whole profile\'s; times on one clock', async () => {
    page = await open('timed.html', 't=2500000000-5000000000');
    // A sample every 50 ms; the window holds both its ends.
    assert.match(await fact(page, 'total'), /^51 of 200 samples$/);
    assert.match(await fact(page, 'duration'), /^2\.50 s window \(2\.5 s – 5\.0 s\) of /);
    assert.match(await page.textContent('.timeline-label'), /^Window 2\.50 s – 5\.00 s \(2\.50 s\) of 0\.00 s – 9\.95 s;/);
  });

  await check('no samples: the profile, the window or the view says why instead of blank boxes', async () => {
    page = await open('timed.html', `t=${20e9}-${21e9}`);
    assert.match(await page.textContent('[data-ctrl=empty]'), /^No samples in this window \(20\.0 s – 21\.0 s\): .*The profile's samples lie between 0\.0 s and /);
    await page.evaluate(() => window.__kiln.app.setWindow(null));
    await settle(page);
    assert.equal(await page.isVisible('[data-ctrl=empty]'), false);
    // Every function dropped: the transforms removed them, said so.
    await page.evaluate(() => {
      const a = window.__kiln.app;
      const main = a.derived.frames.names.indexOf('main');
      a.setState({ transforms: [{ kind: 'drop', f: main }] });
    });
    await settle(page);
    assert.match(await page.textContent('[data-ctrl=empty]'), /^No samples left: none of the 200 samples of the profile remain after the transforms \(u undoes the last\)\.$/);
    await axe(page, 'no samples left');
  });

  await check('an empty profile opens; damaged data gives a message, not a blank page', async () => {
    page = await open('empty.html');
    assert.equal(await page.textContent('.crumb'), 'all');
    assert.match(await page.textContent('[data-ctrl=empty]'), /^No samples in this profile: /);
    page = await load('broken.html');
    const err = await page.evaluate(() => window.__kiln.error);
    assert.ok(err, 'the damage is reported');
    assert.match(await page.textContent('.error'), /^This flame graph cannot be shown: /);
  });

  assert.deepEqual(errors, [], 'no page errors');
  assert.deepEqual(requests, [], 'no request leaves the page');
  console.log('all browser checks passed');
} catch (e) {
  console.log(`FAILED at: ${step}`);
  console.log(e && e.stack ? e.stack : String(e));
  if (errors.length) console.log('page errors:', errors);
  process.exitCode = 1;
} finally {
  await close();
}

/** Position of a frame relative to the main canvas (for clicks with a button). */
async function relative(page, frame) {
  const r = await find(page, frame);
  assert.ok(r, `${frame} is drawn`);
  const c = await page.$eval('canvas.flame-canvas', (e) => JSON.parse(JSON.stringify(e.getBoundingClientRect())));
  const [x, y] = center(r);
  return { x: x - c.x, y: y - c.y };
}
