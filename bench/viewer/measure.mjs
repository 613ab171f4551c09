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
//         (merge, then drop), wall and the browser's CPU time; the call tree's first open,
//         its inversion (key b) and back (three times; the first open of a fresh page said
//         alone); and per key press of 50 ArrowDown in the call tree (the key's own work,
//         and Playwright's presses end to end)
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
      if (process.env.TRANSFORMS) result.transforms = await transforms(page, userDataDir);
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

/**
 * Times of each transform, undo and call-tree key presses on an open kiln page: wall ms
 * in the page, and the CPU ms the browser's processes spent meanwhile (/proc, 10 ms
 * ticks), which a busy machine's load changes less.
 */
async function transforms(page, dir) {
  const kinds = await page.evaluate(() => {
    const app = window.__kiln.app;
    const l = app.derived.layout;
    // The three heaviest nodes three levels deep of distinct functions (for collapse
    // library: of distinct libraries), and their frames from the root.
    const row = [...l.rows[Math.min(3, l.maxDepth)]].sort((a, b) => l.total[b] - l.total[a]);
    const current = typeof app.libraryOf === 'function'; // the viewer with the newer transforms
    const lib = (f) => (current ? app.libraryOf(f) : -1);
    const pick = (key) => {
      const picked = [];
      for (const v of row) {
        if (picked.length < 3 && !picked.some((u) => key(l.frame[u]) === key(l.frame[v]))) picked.push(v);
      }
      return picked.map((v) => {
        const path = [];
        for (let u = v; u > 0; u = l.parent[u]) path.unshift(l.frame[u]);
        return { f: l.frame[v], path };
      });
    };
    const targets = pick((f) => f);
    const libTargets = pick(lib);
    const list = [
      ({ f }) => ({ kind: 'merge', f }),
      ({ f }) => ({ kind: 'focus-function', f }),
      ({ path }) => ({ kind: 'focus-subtree', path }),
      ({ f }) => ({ kind: 'drop', f }),
      ({ f }) => ({ kind: 'collapse-recursion', f }),
      ...(current ? [({ path }) => ({ kind: 'merge-call-node', path }), ({ f }) => ({ kind: 'collapse-direct-recursion', f })] : []),
    ];
    // Per kind, the transform on each target; then the second of two: merge, then drop.
    const trs = list.map((make) => targets.map(make));
    if (current && lib(libTargets[0].f) >= 0) trs.push(libTargets.map(({ f }) => ({ kind: 'collapse-library', f: lib(f) })));
    trs.push(targets.map((t, i) => ({ kind: 'merge', f: t.f, then: { kind: 'drop', f: targets[(i + 1) % 3].f } })));
    return trs;
  });
  /** Wall and CPU ms of one state change and redraw (then the next frame, not counted). */
  const timed = async (transforms) => {
    const cpu = cpuOf(dir);
    const wall = await page.evaluate(async (trs) => {
      const app = window.__kiln.app;
      const t = performance.now();
      app.setState({ transforms: trs, zoom: [] });
      app.drawNow();
      return performance.now() - t;
    }, transforms);
    const used = cpuOf(dir) - cpu;
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
    return [wall, used];
  };
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const wall = {};
  const cpu = {};
  const put = (name, runs) => {
    wall[name] = Math.round(med(runs.map((r) => r[0])));
    cpu[name] = med(runs.map((r) => r[1]));
  };
  for (const list of kinds) {
    const apply = [];
    const undo = [];
    const second = [];
    for (const tr of list) {
      if (tr.then) {
        const { then, ...first } = tr;
        await timed([first]);
        await timed([first, then]);
        second.push(await timed([first]));
        await timed([]);
        continue;
      }
      apply.push(await timed([tr]));
      undo.push(await timed([]));
    }
    if (second.length) put('undo the second of two', second);
    else {
      put(list[0].kind, apply);
      put(`undo ${list[0].kind}`, undo);
    }
  }
  // The call tree's first open (top down, built from the flame graph's layout) and its
  // inversion (key b), each a state change and the tree's rows drawn, then back.
  const tree = [];
  for (let k = 0; k < 3; k++) {
    const c0 = cpuOf(dir);
    const r = await page.evaluate(async () => {
      const app = window.__kiln.app;
      const frame = () => new Promise((ok) => requestAnimationFrame(() => ok()));
      const time = (patch) => {
        const t = performance.now();
        app.setState(patch);
        app.drawNow?.();
        return performance.now() - t;
      };
      const out = {};
      out.open = time({ view: 'tree', invert: false, transforms: [] });
      await frame();
      out.invert = time({ invert: true });
      await frame();
      out.back = time({ invert: false });
      await frame();
      app.setState({ view: 'flame', invert: false });
      await frame();
      return out;
    });
    r.cpu = cpuOf(dir) - c0;
    tree.push(r);
  }
  wall['call tree, first open'] = Math.round(tree[0].open);
  wall['call tree, open again'] = Math.round(med(tree.slice(1).map((r) => r.open)));
  wall['invert (b)'] = Math.round(med(tree.map((r) => r.invert)));
  wall['invert back'] = Math.round(med(tree.map((r) => r.back)));
  cpu['call tree open, invert and back'] = med(tree.map((r) => r.cpu));
  // The call tree: 50 ArrowDown, each key's own work.
  const keys = await page.evaluate(async () => {
    const app = window.__kiln.app;
    app.setState({ view: 'tree' });
    await new Promise((r) => requestAnimationFrame(() => r()));
    const grid = app.tree.grid;
    grid.focus();
    const out = [];
    for (let i = 0; i < 50; i++) {
      const t = performance.now();
      grid.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true, cancelable: true }));
      out.push(performance.now() - t);
    }
    return out;
  });
  const res = { wall, cpu };
  res['ArrowDown (mean of 50)'] = Number((keys.reduce((a, b) => a + b, 0) / keys.length).toFixed(2));
  res['ArrowDown (slowest of 50)'] = Number(Math.max(...keys).toFixed(2));
  // The same presses through the browser's input, end to end.
  await page.evaluate(() => window.__kiln.app.tree.grid.focus());
  const t = Date.now();
  const c = cpuOf(dir);
  for (let i = 0; i < 50; i++) await page.keyboard.press('ArrowDown');
  res['50 ArrowDown presses (Playwright)'] = Date.now() - t;
  res['50 ArrowDown presses, browser CPU'] = cpuOf(dir) - c;
  return res;
}
