// Opens a flame chart page (recording2html --flamechart) in headless Chromium and measures:
//   show   ms from navigation start to the first complete drawing of the chart
//   frame  ms per pan/zoom frame: a range change and a synchronous redraw, median and
//          95th percentile over a scripted gesture (zoom in 40 steps around the middle,
//          pan 40 steps, zoom back out 40 steps)
//   fps    frames per second of the same gesture driven by requestAnimationFrame, one
//          step per frame, as a user's drag or wheel drives it
// Usage: [REPEAT=n] node chart.mjs FILE.html   prints one JSON line (medians over runs).
import { launch } from '../../web/tests/chromium.mjs';

const file = process.argv[2];
const repeat = Math.max(1, Number(process.env.REPEAT ?? 1));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function measure() {
  const { context, close } = await launch();
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`file://${file}`, { waitUntil: 'commit', timeout: 60000 });
    await page.waitForFunction(() => window.__kiln && (window.__kiln.ready || window.__kiln.error), null, { timeout: 60000, polling: 50 });
    const err = await page.evaluate(() => window.__kiln.error);
    if (err) throw new Error(err);
    return await page.evaluate(async () => {
      const app = window.__kiln.app;
      if (app.state.view !== 'chart') throw new Error('the page did not open on the flame chart');
      const view = app.chart;
      const show = window.__kiln.firstDrawMs;
      const [a, b] = view.scene.chart.span;
      const steps = [];
      let lo = a;
      let hi = b;
      for (let i = 0; i < 40; i++) {
        const c = (lo + hi) / 2;
        const w = (hi - lo) * 0.88;
        steps.push([c - w / 2, c + w / 2]);
        [lo, hi] = steps[steps.length - 1];
      }
      for (let i = 0; i < 40; i++) {
        const d = (hi - lo) * 0.05;
        steps.push([lo + d, hi + d]);
        [lo, hi] = steps[steps.length - 1];
      }
      for (let i = 39; i >= 0; i--) steps.push(steps[i]);
      const frames = [];
      for (const [x, y] of steps) {
        const t = performance.now();
        view.setRange(x, y);
        view.drawNow();
        frames.push(performance.now() - t);
      }
      // The same gesture, one step per animation frame.
      const drawn0 = view.drawCount;
      const t0 = performance.now();
      await new Promise((resolve) => {
        let i = 0;
        const tick = () => {
          if (i === steps.length) return resolve();
          view.setRange(...steps[i++]);
          requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
      });
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      const elapsed = performance.now() - t0;
      const sorted = [...frames].sort((p, q) => p - q);
      const c = view.scene.chart;
      let boxes = 0;
      for (const lane of c.lanes) for (const r of lane.rows) boxes += r.length;
      return {
        show,
        frameMedian: sorted[Math.floor(sorted.length / 2)],
        frameP95: sorted[Math.floor(sorted.length * 0.95)],
        fps: ((view.drawCount - drawn0) * 1000) / elapsed,
        samples: c.lanes.reduce((n, l) => n + l.samples, 0),
        lanes: c.lanes.length,
        boxes,
      };
    });
  } finally {
    await close();
  }
}

const runs = [];
for (let i = 0; i < repeat; i++) runs.push(await measure());
const pick = (k) => median(runs.map((r) => r[k]));
console.log(
  JSON.stringify({
    file,
    show: pick('show'),
    frameMedian: pick('frameMedian'),
    frameP95: pick('frameP95'),
    fps: pick('fps'),
    samples: runs[0].samples,
    lanes: runs[0].lanes,
    boxes: runs[0].boxes,
    shows: runs.map((r) => Math.round(r.show)),
  }),
);
