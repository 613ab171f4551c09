// Entry point: read the metadata and embedded profiles, start the app, and expose a small
// API on window.__kiln for the browser tests and benchmarks (timings, node positions).
import { Meta, Model } from './app-state/model.js';
import { DecodeError, base64ToBytes, decodeProfile, inflate } from './import/decode.js';
import { RawProfile } from './lib/profile.js';
import { App } from './views/app.js';
import { el } from './views/dom.js';
import { CSS } from './views/styles.js';

interface KilnApi {
  ready: boolean;
  error: string | null;
  firstDrawMs: number | null;
  app: App | null;
  /** performance.now() at the end of each start-up phase, for the benchmark. */
  phases: Record<string, number>;
}

declare global {
  interface Window {
    __kiln: KilnApi;
  }
}

async function loadProfiles(meta: Meta): Promise<RawProfile[]> {
  const out: RawProfile[] = [];
  for (let i = 0; i < meta.profiles.length; i++) {
    const node = document.getElementById(`kiln-data-${i}`);
    if (!node) throw new DecodeError(`profile ${i} is missing from the page`);
    let bytes = base64ToBytes(node.textContent ?? '');
    node.textContent = ''; // release the base64 text
    window.__kiln.phases[`base64-${i}`] = performance.now();
    if (meta.profiles[i].compressed) bytes = await inflate(bytes);
    window.__kiln.phases[`inflate-${i}`] = performance.now();
    out.push(decodeProfile(bytes));
  }
  return out;
}

async function start(): Promise<void> {
  const api: KilnApi = (window.__kiln = { ready: false, error: null, firstDrawMs: null, app: null, phases: {} });
  document.head.append(el('style', { text: CSS }));
  const mount = el('div', { class: 'kiln-root' });
  document.body.append(mount);
  try {
    const metaEl = document.getElementById('kiln-meta');
    if (!metaEl) throw new DecodeError('the page has no kiln metadata');
    const meta = JSON.parse(metaEl.textContent ?? '') as Meta;
    api.phases.script = performance.now();
    const raws = await loadProfiles(meta);
    api.phases.decoded = performance.now();
    const app = new App(new Model(raws, meta), mount);
    api.app = app;
    api.phases.laidOut = performance.now();
    const view = app.main;
    // "Shown" means the first complete drawing of the main view has been painted.
    view.onDrawn = () => {
      if (api.firstDrawMs === null) api.firstDrawMs = performance.now();
      api.ready = true;
    };
    // Draw now rather than on the next animation frame: the layout is ready.
    if (app.state.view === 'flame') {
      api.phases.drawStart = performance.now();
      view.drawNow();
    }
    else {
      api.firstDrawMs = performance.now();
      api.ready = true;
    }
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    api.error = msg;
    mount.replaceChildren(el('div', { class: 'error', text: `This flame graph cannot be shown: ${msg}` }));
  }
}

void start();
