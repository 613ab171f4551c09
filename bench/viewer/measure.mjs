// Opens flame graphs in headless Chromium and measures, for each file:
//   show  ms from navigation start to the first complete drawing
//         (kiln: the viewer's first canvas draw; SVG: load event + two animation frames)
//   zoom  ms of a zoom redraw (kiln: click-zoom state change + redraw, median of 5;
//         SVG: inferno's own click handler + two animation frames, median of 5)
//   cpu   ms of CPU time (user + system) the browser's processes spent from navigation to
//         "shown": less sensitive than wall time to other work on a shared machine
//   peak  MiB, the browser's peak proportional set size (sum of PSS of its processes,
//         sampled every 100 ms)
//   transforms (TRANSFORMS=1, kiln pages) ms of each transform applied alone (state change
//         and redraw; median of 3, on the three heaviest nodes three levels deep, so no
//         run finds another's result cached), of undoing it, of undoing the second of two
//         (merge, then drop), and per key press of 50 ArrowDown in the call tree (the key's
//         own work, and Playwright's presses end to end)
// Usage: [REPEAT=n] [TRANSFORMS=1] node measure.mjs TIMEOUT_S FILE...   prints one JSON line per file;
// with REPEAT, each file is opened n times in fresh browsers and the medians are printed
// (show and zoom; peak is the largest), which tames a busy machine's noise.
import { readFileSync, readdirSync } from 'node:fs';
import { launch } from '../../web/tests/chromium.mjs';

const [timeoutS, ...files] = process.argv.slice(2);
const timeout = Number(timeoutS) * 1000;

function pssOf(dir) {
  let kb = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.includes(dir)) continue;
      const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
      if (m) kb += Number(m[1]);
    } catch {
      // the process ended between listing and reading
    }
  }
  return kb / 1024;
}

/** CPU time (user + system, ms) of the browser's processes so far. */
function cpuOf(dir) {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // the process ended between listing and reading
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const repeat = Math.max(1, Number(process.env.REPEAT ?? 1));
for (const file of files) {
  const runs = [];
  for (let i = 0; i < repeat; i++) runs.push(await measure(file));
  const ok = runs.filter((r) => r.show != null);
  const pick = (k) => (ok.length ? median(ok.map((r) => r[k])) : null);
  console.log(
    JSON.stringify({
      file,
      show: pick('show'),
      cpu: pick('cpu'),
      zoom: pick('zoom'),
      ...(runs[0].transforms ? { transforms: runs[0].transforms } : {}),
      peak: Math.max(...runs.map((r) => r.peak)),
      note: runs.map((r) => r.note).find((n) => n.startsWith('failed')) ?? runs[0].note,
      shows: runs.map((r) => r.show),
    }),
  );
}

async function measure(file) {
  const { context, close, userDataDir } = await launch();
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, pssOf(userDataDir))), 100);
  const result = { file, show: null, cpu: null, zoom: null, peak: null, note: '' };
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(timeout);
    const cpu0 = cpuOf(userDataDir);
    const isSvg = file.endsWith('.svg');
    if (isSvg) {
      await page.goto(`file://${file}`, { waitUntil: 'load', timeout });
      result.show = await page.evaluate(
        () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now())))),
      );
      result.cpu = cpuOf(userDataDir) - cpu0;
      // Zoom on a frame a few levels deep, through inferno's own click handler.
      const zooms = [];
      for (let i = 0; i < 5; i++) {
        zooms.push(
          await page.evaluate(async (k) => {
            const gs = document.querySelectorAll('#frames > g');
            const g = gs[Math.floor((gs.length * (k + 1)) / 7)];
            const t = performance.now();
            g.dispatchEvent(new MouseEvent('click', { bubbles: true }));
            await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
            return performance.now() - t;
          }, i),
        );
      }
      result.zoom = median(zooms);
    } else {
      await page.goto(`file://${file}`, { waitUntil: 'commit', timeout });
      await page.waitForFunction(() => window.__kiln && (window.__kiln.ready || window.__kiln.error), null, { timeout, polling: 50 });
      const err = await page.evaluate(() => window.__kiln.error);
      if (err) throw new Error(err);
      result.show = await page.evaluate(() => window.__kiln.firstDrawMs);
      result.cpu = cpuOf(userDataDir) - cpu0;
      const zooms = [];
      for (let i = 0; i < 5; i++) {
        zooms.push(
          await page.evaluate((k) => {
            const app = window.__kiln.app;
            const l = app.derived.layout;
            // A node about 3 levels deep, at a different place each time.
            const row = l.rows[Math.min(3, l.maxDepth)];
            const v = row[Math.floor((row.length * (k + 1)) / 7)];
            const path = [];
            for (let u = v; u > 0; u = l.parent[u]) path.unshift(l.frame[u]);
            const t = performance.now();
            app.setState({ zoom: k % 2 ? [] : path });
            app.main.drawNow();
            return performance.now() - t;
          }, i),
        );
      }
      result.zoom = median(zooms);
      result.note = JSON.stringify(await page.evaluate(() => window.__kiln.app.main.lastStats));
      if (process.env.TRANSFORMS) result.transforms = await transforms(page);
    }
  } catch (e) {
    result.note = `failed: ${String(e.message ?? e).split('\n')[0]}`;
  } finally {
    clearInterval(sampler);
    peak = Math.max(peak, pssOf(userDataDir));
    result.peak = Math.round(peak);
    await close();
  }
  return result;
}

/** Times of each transform, undo and call-tree key presses on an open kiln page (ms). */
async function transforms(page) {
  const out = await page.evaluate(async () => {
    const app = window.__kiln.app;
    const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
    const l = app.derived.layout;
    // The three heaviest nodes three levels deep (of distinct functions and libraries),
    // and their frames from the root.
    const row = [...l.rows[Math.min(3, l.maxDepth)]].sort((a, b) => l.total[b] - l.total[a]);
    const current = typeof app.libraryOf === 'function'; // the viewer with the newer transforms
    const lib = (f) => (current ? app.libraryOf(f) : -1);
    const picked = [];
    for (const v of row) {
      if (picked.length === 3) break;
      if (picked.some((u) => l.frame[u] === l.frame[v] || lib(l.frame[u]) === lib(l.frame[v]))) continue;
      picked.push(v);
    }
    const targets = picked.map((v) => {
      const path = [];
      for (let u = v; u > 0; u = l.parent[u]) path.unshift(l.frame[u]);
      return { f: l.frame[v], path };
    });
    const kinds = [
      ({ f }) => ({ kind: 'merge', f }),
      ({ f }) => ({ kind: 'focus-function', f }),
      ({ path }) => ({ kind: 'focus-subtree', path }),
      ({ f }) => ({ kind: 'drop', f }),
      ({ f }) => ({ kind: 'collapse-recursion', f }),
      ...(current ? [({ path }) => ({ kind: 'merge-call-node', path }), ({ f }) => ({ kind: 'collapse-direct-recursion', f })] : []),
      ...(current && lib(targets[0].f) >= 0 ? [({ f }) => ({ kind: 'collapse-library', f: lib(f) })] : []),
    ];
    const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const timed = async (patch) => {
      const t = performance.now();
      app.setState({ ...patch, zoom: [] });
      app.drawNow();
      const ms = performance.now() - t;
      await frame();
      return ms;
    };
    const res = {};
    for (const make of kinds) {
      const apply = [];
      const undo = [];
      for (const target of targets) {
        const tr = make(target);
        apply.push(await timed({ transforms: [tr] }));
        undo.push(await timed({ transforms: [] }));
      }
      const kind = make(targets[0]).kind;
      res[kind] = Math.round(med(apply));
      res[`undo ${kind}`] = Math.round(med(undo));
    }
    const second = [];
    for (const target of targets) {
      const first = { kind: 'merge', f: target.f };
      await timed({ transforms: [first] });
      await timed({ transforms: [first, { kind: 'drop', f: targets[(targets.indexOf(target) + 1) % 3].f }] });
      second.push(await timed({ transforms: [first] }));
      await timed({ transforms: [] });
    }
    res['undo the second of two'] = Math.round(med(second));
    // The call tree: 50 ArrowDown, each key's own work.
    app.setState({ view: 'tree' });
    await frame();
    const grid = app.tree.grid;
    grid.focus();
    const keys = [];
    for (let i = 0; i < 50; i++) {
      const t = performance.now();
      grid.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true, cancelable: true }));
      keys.push(performance.now() - t);
    }
    res['ArrowDown (mean of 50)'] = Number((keys.reduce((a, b) => a + b, 0) / keys.length).toFixed(2));
    res['ArrowDown (slowest of 50)'] = Number(Math.max(...keys).toFixed(2));
    return res;
  });
  // The same presses through the browser's input, end to end.
  await page.evaluate(() => window.__kiln.app.tree.grid.focus());
  const t = Date.now();
  for (let i = 0; i < 50; i++) await page.keyboard.press('ArrowDown');
  out['50 ArrowDown presses (Playwright)'] = Date.now() - t;
  return out;
}
