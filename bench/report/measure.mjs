// Measures report pages in headless Chromium (a fresh browser per opening):
//   open FILE...     ms from navigation start until the page is shown: the report's charts
//                    drawn and every embedded viewer's first flame graph drawn (for a plain
//                    viewer page: its first drawing), and the browser's CPU ms until then
//   windows FILE     ms to re-draw every flame graph and function table (and the charts'
//                    selection) for a window of 1 s, 10 s and 60 s in the middle of the
//                    measurement, the whole measurement, and none: synchronous work
//                    (derive + layout + draw) and wall time to the next painted frame
//   charts FILE      ms to draw every chart (full redraw) and per cursor move (every
//                    chart's overlay and legend), over 200 moves across the axis
// Usage: [REPEAT=n] node measure.mjs MODE FILE...      prints one JSON line per file/case
import { readFileSync, readdirSync } from 'node:fs';
import { launch } from '../../web/tests/chromium.mjs';

const [mode, ...files] = process.argv.slice(2);
const repeat = Math.max(1, Number(process.env.REPEAT ?? 5));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

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
      // gone
    }
  }
  return ticks * 10;
}

async function opened(file, f) {
  const { context, close, userDataDir } = await launch();
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(120000);
    const cpu0 = cpuOf(userDataDir);
    await page.goto(`file://${file}`);
    for (;;) {
      const done = await page.evaluate(() => {
        const r = window.__kilnReport;
        const k = window.__kiln;
        if (r && r.error) throw new Error(r.error);
        if (k && k.error) throw new Error(k.error);
        const viewers = document.querySelector('.kiln-mount, #kiln-meta') ? k && k.ready : true;
        return (r ? r.ready : true) && viewers;
      });
      if (done) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const shown = await page.evaluate(() => {
      const r = window.__kilnReport;
      const k = window.__kiln;
      return Math.max(r?.phases.drawn ?? 0, k?.firstDrawMs ?? 0);
    });
    const cpu = cpuOf(userDataDir) - cpu0;
    return await f(page, { shown, cpu });
  } finally {
    await close();
  }
}

if (mode === 'open') {
  for (const file of files) {
    const runs = [];
    for (let i = 0; i < repeat; i++) runs.push(await opened(file, async (_, m) => m));
    console.log(JSON.stringify({ file, shown: median(runs.map((r) => r.shown)), cpu: median(runs.map((r) => r.cpu)), all: runs.map((r) => Math.round(r.shown)) }));
  }
} else if (mode === 'windows') {
  for (const file of files) {
    await opened(file, async (page) => {
      const cases = await page.evaluate(() => {
        const r = window.__kilnReport.run;
        const [m0, m1] = [r.data.measure.start, r.data.measure.end];
        const mid = (m0 + m1) / 2;
        const at = (s) => [Math.round(mid - (s * 1e9) / 2), Math.round(mid + (s * 1e9) / 2)];
        return [['1 s', at(1)], ['10 s', at(10)], ['60 s', at(60)], ['measurement', [m0, m1]], ['none', null]];
      });
      for (const [name, w] of cases) {
        const sync = [];
        const frame = [];
        for (let i = 0; i < repeat; i++) {
          // Away first, so each selection is a change.
          await page.evaluate((w) => window.__kilnReport.run.setWindow(w ? [w[0] - 1e9, w[1] - 1e9] : [0, 1e9]), w);
          const t = await page.evaluate(async (w) => {
            const t0 = performance.now();
            window.__kilnReport.run.setWindow(w);
            for (const a of window.__kiln.apps) a.drawNow();
            for (const c of window.__kilnReport.run.group.charts) c.drawOverlay();
            const t1 = performance.now();
            await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
            return [t1 - t0, performance.now() - t0];
          }, w);
          sync.push(t[0]);
          frame.push(t[1]);
        }
        const totals = await page.evaluate(() => window.__kiln.apps.map((a) => a.derived.layout.total[0]));
        console.log(JSON.stringify({ file, window: name, sync: median(sync), frame: median(frame), all: sync.map(Math.round), totals }));
      }
    });
  }
} else if (mode === 'charts') {
  for (const file of files) {
    await opened(file, async (page) => {
      const r = await page.evaluate(async (repeat) => {
        const g = (window.__kilnReport.run ?? window.__kilnReport.compare).group;
        const full = [];
        for (let i = 0; i < repeat; i++) {
          const t0 = performance.now();
          for (const c of g.charts) c.draw();
          full.push(performance.now() - t0);
        }
        const [a, b] = g.range;
        const moves = 200;
        const t0 = performance.now();
        for (let i = 0; i < moves; i++) {
          g.cursor = a + ((b - a) * i) / moves;
          for (const c of g.charts) c.drawOverlay();
        }
        const perMove = (performance.now() - t0) / moves;
        const points = g.charts.reduce((s, c) => s + c.spec.lines.reduce((x, l) => x + l.values.length, 0), 0);
        const series = g.charts.reduce((s, c) => s + c.spec.lines.length, 0);
        return { full: full.sort((x, y) => x - y)[full.length >> 1], perMove, charts: g.charts.length, series, points };
      }, repeat);
      console.log(JSON.stringify({ file, ...r }));
    });
  }
} else {
  console.error('usage: node measure.mjs open|windows|charts FILE...');
  process.exit(2);
}
