// Entry point: read each viewer's metadata and embedded profiles, start the apps, and
// expose a small API on window.__kiln for the browser tests, the benchmarks and pages
// that hold several viewers (timings, the apps, a page-level time window).
//
// A page holds one viewer (`<script id="kiln-meta">`, data in `kiln-data-N`, mounted at
// the end of the body) or several (`<script class="kiln-meta">`, each with `key` naming
// its URL keys, `data` naming its data elements, and a `<div data-kiln-mount="KEY">` to
// draw in); they share the page's time window (`t` in the URL, `__kiln.setWindow`).
import { Meta, Model } from './app-state/model.js';
import { DecodeError, base64ToBytes, decodeProfile, inflate } from './import/decode.js';
import { RawProfile } from './lib/profile.js';
import { App } from './views/app.js';
import { el } from './views/dom.js';
import { STYLES } from './views/styles.js';

interface KilnApi {
  ready: boolean;
  error: string | null;
  firstDrawMs: number | null;
  /** The first viewer (the only one on most pages). */
  app: App | null;
  apps: App[];
  /** performance.now() at the end of each start-up phase, for the benchmark. */
  phases: Record<string, number>;
  /** Shows the window [t0, t1] (ns on the profiles' clock) in every viewer; null: all. */
  setWindow(w: [number, number] | null): void;
}

declare global {
  interface Window {
    __kiln: KilnApi;
  }
}

async function loadProfiles(meta: Meta, phases: Record<string, number>): Promise<RawProfile[]> {
  const out: RawProfile[] = [];
  for (let i = 0; i < meta.profiles.length; i++) {
    const id = meta.data?.[i] ?? `kiln-data-${i}`;
    const node = document.getElementById(id);
    if (!node) throw new DecodeError(`profile ${i} (${id}) is missing from the page`);
    let bytes = base64ToBytes(node.textContent ?? '');
    node.textContent = ''; // release the base64 text
    phases[`base64-${id}`] = performance.now();
    if (meta.profiles[i].compressed) bytes = await inflate(bytes);
    phases[`inflate-${id}`] = performance.now();
    out.push(decodeProfile(bytes));
  }
  return out;
}

async function startOne(metaEl: Element, api: KilnApi, single: boolean): Promise<void> {
  const meta = JSON.parse(metaEl.textContent ?? '') as Meta;
  const key = single ? '' : (meta.key ?? `v${api.apps.length + 1}`);
  // A page's own place for the viewer (the report's sections), even when it holds one.
  let mount = document.querySelector<HTMLElement>(`[data-kiln-mount="${CSS.escape(meta.key ?? key)}"]`);
  if (!mount) {
    mount = el('div', { class: 'kiln-root' });
    document.body.append(mount);
  }
  try {
    const raws = await loadProfiles(meta, api.phases);
    api.phases.decoded = performance.now();
    const embedded = mount.hasAttribute('data-kiln-mount');
    const headingLevel = Number(mount.dataset.headingLevel) || 1;
    const app = new App(new Model(raws, meta), mount, { key, origin: meta.origin, documentKeys: single && !embedded, embedded, headingLevel });
    api.apps.push(app);
    api.app ??= app;
    api.phases.laidOut = performance.now();
    api.phases.drawStart = performance.now();
    // Draw now rather than on the next animation frame: the layout is ready.
    app.drawNow();
    app.warmUp();
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    api.error ??= msg;
    mount.replaceChildren(el('div', { class: 'error', role: 'alert', text: `This flame graph cannot be shown: ${msg}` }));
  }
}

/** A page with a CPU and an off-CPU viewer of one run: the CPU viewer's tracks show both. */
function pairOffCpu(apps: App[]): void {
  const off = apps.find((a) => !a.model.isDiff && a.model.unit.what === 'off-CPU time');
  if (!off) return;
  for (const a of apps) if (a !== off && !a.model.isDiff && a.model.unit.what === 'CPU time') a.showOffCpu(off);
}

async function start(): Promise<void> {
  const api: KilnApi = (window.__kiln = {
    ready: false,
    error: null,
    firstDrawMs: null,
    app: null,
    apps: [],
    phases: {},
    setWindow: (w) => api.apps.forEach((a) => a.setWindow(w)),
  });
  document.head.append(el('style', { text: STYLES }));
  api.phases.script = performance.now();
  const metas = [...document.querySelectorAll('script.kiln-meta, script#kiln-meta')];
  if (metas.length === 0) {
    api.error = 'the page has no kiln metadata';
    document.body.append(el('div', { class: 'error', role: 'alert', text: `This flame graph cannot be shown: ${api.error}` }));
    return;
  }
  for (const m of metas) await startOne(m, api, metas.length === 1);
  pairOffCpu(api.apps);
  // "Shown" means the first complete drawing of the views has been painted.
  api.firstDrawMs = performance.now();
  api.ready = true;
  window.dispatchEvent(new Event('kiln-viewers-ready'));
}

void start();
