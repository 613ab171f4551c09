// Entry point of the report (dist/report.js): reads the page's data (base64 of JSON,
// deflated when large), builds the run or comparison page around the embedded viewers'
// mounts, and exposes window.__kilnReport for the browser tests and the benchmark. The
// viewer's own bundle runs after this one and fills the mounts.
import { DecodeError, base64ToBytes, inflate } from '../import/decode.js';
import { el } from '../views/dom.js';
import { STYLES } from '../views/styles.js';
import { ReportData } from './data.js';
import { CompareView, buildComparePage } from './views/compare-page.js';
import { RunView, buildRunPage } from './views/run-page.js';
import { TrendView, buildTrendPage } from './views/trend-page.js';
import { REPORT_STYLES } from './views/styles.js';

interface ReportApi {
  ready: boolean;
  error: string | null;
  kind: string | null;
  /** The page's origin on the profiles' clock (ns). */
  origin: number;
  run: RunView | null;
  compare: CompareView | null;
  trend: TrendView | null;
  /** performance.now() at the end of each start-up phase. */
  phases: Record<string, number>;
}

declare global {
  interface Window {
    __kilnReport: ReportApi;
  }
}

async function readData(): Promise<ReportData> {
  const node = document.getElementById('kiln-report-data');
  if (!node) throw new DecodeError('the report data is missing from the page');
  let bytes = base64ToBytes(node.textContent ?? '');
  node.textContent = '';
  if (node.dataset.compressed === '1') bytes = await inflate(bytes);
  const data = JSON.parse(new TextDecoder().decode(bytes)) as ReportData;
  if (!data || (data.kind !== 'run' && data.kind !== 'compare' && data.kind !== 'trend')) throw new DecodeError('the report data is not a kiln report');
  return data;
}

async function start(): Promise<void> {
  const api: ReportApi = (window.__kilnReport = { ready: false, error: null, kind: null, origin: 0, run: null, compare: null, trend: null, phases: {} });
  api.phases.script = performance.now();
  // The viewer's stylesheet too: the page must look right before the viewer's code runs.
  document.head.append(el('style', { text: STYLES }), el('style', { text: REPORT_STYLES }));
  const root = document.getElementById('kiln-report-root') ?? document.body.appendChild(el('div'));
  const page = el('main', { class: 'r-page' });
  const status = el('div', { class: 'sr-only', role: 'status', 'aria-live': 'polite', 'data-ctrl': 'report-status' });
  root.replaceChildren(page, status);
  try {
    const data = await readData();
    api.phases.decoded = performance.now();
    api.kind = data.kind;
    api.origin = data.origin;
    document.title = data.title;
    if (data.kind === 'run' && data.run) api.run = buildRunPage(page, data.run, data.origin, status);
    else if (data.kind === 'compare' && data.compare) api.compare = buildComparePage(page, data.compare, data.title, status);
    else if (data.kind === 'trend' && data.trend) api.trend = buildTrendPage(page, data.trend, data.title);
    else throw new DecodeError(`the report data has no ${data.kind} section`);
    api.phases.built = performance.now();
    // Draw now: the first paint shows the charts, not empty boxes.
    await new Promise((r) => requestAnimationFrame(r));
    (api.run?.group ?? api.compare?.group)?.drawNow();
    api.phases.drawn = performance.now();
    api.ready = true;
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    api.error = msg;
    page.replaceChildren(el('div', { class: 'error', role: 'alert', text: `This report cannot be shown: ${msg}` }));
  }
}

void start();
