// Browser checks of the viewer files crates/viewer/tests/browser.rs writes:
//   node tests/browser.mjs FIXTURE_DIR SCREENSHOT_DIR
// Every check clicks, types or drags like a user and reads the result from the page or
// from a screenshot's pixels.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { launch } from './chromium.mjs';
import { decodePng } from './png.mjs';

const [dir, shots = dir] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node tests/browser.mjs FIXTURE_DIR [SCREENSHOT_DIR]');
  process.exit(2);
}

const HOSTILE_IMG = '<img src=x onerror=window.__pwned=1>';
const HOSTILE_SCRIPT = '</script><script>window.__pwned=2</script>';
const { context, close } = await launch();
const errors = [];
let step = 'start';

async function load(file, hash = '') {
  const page = context.pages()[0] ?? (await context.newPage());
  page.removeAllListeners('pageerror');
  page.on('pageerror', (e) => errors.push(`${file}: ${e.message}`));
  await page.goto(`file://${join(dir, file)}${hash ? '#' + hash : ''}`);
  await page.waitForFunction(() => window.__kiln && (window.__kiln.ready || window.__kiln.error), null, { timeout: 20000 });
  return page;
}

async function open(file, hash = '') {
  const page = context.pages()[0] ?? (await context.newPage());
  page.removeAllListeners('pageerror');
  page.on('pageerror', (e) => errors.push(`${file}: ${e.message}`));
  await page.goto(`file://${join(dir, file)}${hash ? '#' + hash : ''}`);
  await page.waitForFunction(() => window.__kiln && (window.__kiln.ready || window.__kiln.error), null, { timeout: 20000 });
  const err = await page.evaluate(() => window.__kiln.error);
  assert.equal(err, null, `${file} failed to load: ${err}`);
  await settle(page);
  return page;
}

/** Waits until pending animation frames have drawn. */
const settle = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
const find = (page, name) => page.evaluate((n) => window.__kiln.app.find(n), name);
const center = (r) => [r.x + Math.min(r.w, 40) / 2, r.y + r.h / 2];

async function pixel(page, name, x, y) {
  const png = decodePng(await page.screenshot({ path: join(shots, `${name}.png`) }));
  return png.at(x, y);
}

async function colourOf(page, frame, shot) {
  const r = await find(page, frame);
  assert.ok(r, `${frame} is drawn`);
  // The top pixel row of a frame is always fill, never label text.
  return pixel(page, shot, r.x + Math.min(r.w, 40) / 2, r.y + 1);
}

const isMagenta = ([r, g, b]) => r > 200 && g < 40 && b > 200;
const pwned = (page) => page.evaluate(() => window.__pwned ?? null);

async function check(name, f) {
  step = name;
  const t = Date.now();
  await f();
  console.log(`ok - ${name} (${Date.now() - t} ms)`);
}

try {
  let page = await open('timed.html');

  await check('first drawing uses the hot palette', async () => {
    const c = await colourOf(page, 'alpha_leaf', 'initial');
    assert.ok(c[0] >= 200 && c[2] <= 60, `hot colour, got ${c}`);
    assert.equal(await page.title(), 'kiln test </title><script>window.__pwned=3</script>');
  });

  await check('search highlights matches, reports Matched: and honours the case toggle', async () => {
    await page.fill('[data-ctrl=search]', 'lock');
    await settle(page);
    assert.equal(await page.textContent('[data-ctrl=matched]'), 'Matched: 20.0%');
    assert.ok(isMagenta(await colourOf(page, 'lock_wait', 'search')), 'lock_wait is magenta');
    assert.ok(isMagenta(await colourOf(page, 'Lock_acquire', 'search-ci')), 'case-insensitive by default');
    await page.click('[data-ctrl=case]');
    await settle(page);
    assert.equal(await page.textContent('[data-ctrl=matched]'), 'Matched: 10.0%');
    assert.ok(!isMagenta(await colourOf(page, 'Lock_acquire', 'search-case')), 'Lock_acquire no longer matches');
    await page.fill('[data-ctrl=search]', '(');
    await settle(page);
    assert.equal(await page.textContent('[data-ctrl=matched]'), 'Invalid regex');
    await page.fill('[data-ctrl=search]', '');
    await page.click('[data-ctrl=case]');
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
    assert.match(await page.evaluate(() => location.hash), /z=\d+\.\d+/);
    const leaf = await find(page, 'alpha_leaf');
    await page.mouse.move(...center(leaf));
    await settle(page);
    const tip = await page.textContent('.tooltip');
    assert.match(tip, /alpha_leaf/);
    assert.match(tip, /20\.0% of all, 66\.7% of the zoomed frame/);
    await page.click('[data-ctrl=reset]');
    await settle(page);
    assert.ok((await find(page, 'alpha')).w < width / 2, 'zoom reset');
    assert.deepEqual(await page.$$eval('.crumb', (b) => b.map((x) => x.textContent)), ['all']);
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

  await check('sandwich of a recursive function from the context menu', async () => {
    await page.click('canvas.flame-canvas >> nth=0', { button: 'right', position: await relative(page, 'fib') });
    assert.equal(await page.textContent('.menu-title'), 'fib');
    await page.click('[data-action=s]');
    await settle(page);
    assert.match(await page.textContent('.sandwich-title'), /^fib — total 40 samples \(20\.0%\), self 40 samples/);
    assert.match(await page.evaluate(() => location.hash), /v=sandwich/);
    assert.match(await page.evaluate(() => location.hash), /fn=\d+/);
    const shot = decodePng(await page.screenshot({ path: join(shots, 'sandwich.png') }));
    const box = await page.$eval('.sandwich-flame:not([hidden]) >> nth=0', (e) => JSON.parse(JSON.stringify(e.getBoundingClientRect())));
    // Callers pane: its root row ("all") at the bottom, fib above it, main above that.
    const c = shot.at(box.x + 20, box.y + box.height - 8 - 17);
    assert.ok(c[0] >= 200, `fib drawn in the callers pane, got ${c}`);
    await page.keyboard.press('1');
  });

  await check('merge transform removes a function and shows in the transform bar', async () => {
    await page.click('canvas.flame-canvas >> nth=0', { button: 'right', position: await relative(page, 'beta') });
    await page.click('[data-action=m]');
    await settle(page);
    assert.equal(await find(page, 'beta'), null);
    const main = await find(page, 'main');
    const child = await find(page, 'beta_child');
    assert.equal(Math.round(main.y - child.y), 17, 'beta_child moved up to main');
    assert.match(await page.textContent('.transforms'), /Merge: beta/);
    await page.screenshot({ path: join(shots, 'merged.png') });
    await page.click('.transform');
    await settle(page);
    assert.ok(await find(page, 'beta'), 'removing the transform restores beta');
  });

  await check('function table sorts and filters; a row opens the sandwich', async () => {
    await page.keyboard.press('2');
    await settle(page);
    const first = await page.$$eval('.table-rows .row', (r) => r.map((x) => x.lastChild.textContent));
    assert.equal(first[0], 'main', 'sorted by total');
    await page.click('.table-head [data-key=self]');
    await settle(page);
    const bySelf = await page.$$eval('.table-rows .row', (r) => r.map((x) => x.lastChild.textContent));
    assert.deepEqual(bySelf.slice(0, 3).sort(), ['alpha_leaf', 'beta_child', 'fib']);
    await page.fill('.table-filter', 'LOCK');
    await settle(page);
    const filtered = await page.$$eval('.table-rows .row', (r) => r.map((x) => x.lastChild.textContent));
    assert.deepEqual(filtered.sort(), ['Lock_acquire', 'lock_wait']);
    await page.screenshot({ path: join(shots, 'table.png') });
    await page.click('.table-rows .row >> nth=0');
    await settle(page);
    assert.match(await page.textContent('.sandwich-title'), /lock|Lock/);
    await page.keyboard.press('2');
    await page.fill('.table-filter', '');
    await page.keyboard.press('Escape');
    await page.keyboard.press('1');
  });

  await check('time range selection shows only that range', async () => {
    const box = await page.$eval('.timeline-canvas', (e) => JSON.parse(JSON.stringify(e.getBoundingClientRect())));
    await page.mouse.move(box.x + box.width * 0.02, box.y + 20);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.3, box.y + 20, { steps: 4 });
    await page.mouse.up();
    await settle(page);
    assert.match(await page.evaluate(() => location.hash), /t=\d+-\d+/);
    assert.ok(await find(page, 'alpha'), 'alpha ran in the first half');
    assert.equal(await find(page, 'beta'), null, 'beta ran only in the second half');
    assert.match(await page.textContent('.timeline-label'), /^Selected/);
    await page.screenshot({ path: join(shots, 'range.png') });
    await page.dblclick('.timeline-canvas');
    await settle(page);
    assert.ok(await find(page, 'beta'), 'double-click clears the range');
  });

  await check('threads merged by number, and icicle by keyboard', async () => {
    await page.selectOption('[data-ctrl=threads]', 'groups');
    await settle(page);
    assert.ok(await find(page, 'N_scheduler'), '1_scheduler and 2_scheduler share one root');
    await page.selectOption('[data-ctrl=threads]', 'threads');
    await settle(page);
    assert.ok(await find(page, '1_scheduler [11]'));
    assert.ok(await find(page, '2_scheduler [12]'));
    await page.selectOption('[data-ctrl=threads]', 'merged');
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
    // Left-heavy: the widest child of main (alpha, 60) comes first.
    assert.ok((await find(page, 'alpha')).x < (await find(page, 'beta')).x);
    // Zooming from one frame to another at the same depth through the hash (back button,
    // pasted link) moves the view.
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

  await check('diff view: colours, legend, normalise toggle', async () => {
    page = await open('diff.html');
    const legend = await page.$$eval('.legend-item', (x) => x.map((e) => e.textContent));
    assert.deepEqual(legend.slice(0, 4), ['grew in after', 'shrank in after', 'new in after', 'gone in after (width from before)']);
    const grows = await colourOf(page, 'grows', 'diff');
    assert.ok(grows[0] === 255 && grows[1] < 100, `grows is red, got ${grows}`);
    const shrinks = await colourOf(page, 'shrinks', 'diff');
    assert.ok(shrinks[2] === 255 && shrinks[0] < 100, `shrinks is blue, got ${shrinks}`);
    assert.deepEqual(await colourOf(page, 'new', 'diff'), [40, 170, 90]);
    assert.deepEqual(await colourOf(page, 'gone', 'diff'), [150, 150, 160]);
    const same = await colourOf(page, 'same', 'diff');
    assert.ok(same[0] > 240 && same[1] > 240 && same[2] > 240, `unchanged is pale, got ${same}`);
    await page.mouse.move(...center(await find(page, 'grows')));
    await settle(page);
    assert.match(await page.textContent('.tooltip'), /before: 10 samples.*after: 40 samples.*change: \+30 samples \(\+300\.0%\)/s);
    await page.click('[data-ctrl=normalise]');
    await settle(page);
    assert.match(await page.evaluate(() => location.hash), /norm=0/);
    await page.keyboard.press('2');
    await settle(page);
    const rows = await page.$$eval('.table-rows .row', (r) => r.map((x) => [...x.children].map((c) => c.textContent)));
    assert.ok(rows.some((r) => r[3] === 'gone' && r[1] === '0.0%'), 'gone listed with 0% after');
    assert.ok(rows.some((r) => r[3] === 'grows' && r[2] === '+30 samples'));
    assert.equal(rows.filter((r) => r[3] === 'gone').length, 1, 'each function once');
  });

  await check('an empty profile opens; damaged data gives a message, not a blank page', async () => {
    page = await open('empty.html');
    assert.equal(await page.textContent('.crumb'), 'all');
    page = await load('broken.html');
    const err = await page.evaluate(() => window.__kiln.error);
    assert.ok(err, 'the damage is reported');
    assert.match(await page.textContent('.error'), /^This flame graph cannot be shown: /);
    await page.screenshot({ path: join(shots, 'broken.png') });
  });

  assert.deepEqual(errors, [], 'no page errors');
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
