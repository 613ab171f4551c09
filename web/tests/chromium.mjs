// Launches Debian's Chromium headless through playwright-core, with a fresh profile
// directory, for the browser tests and the benchmark.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CHROMIUM = process.env.KILN_CHROMIUM || '/usr/bin/chromium';

export async function launch(extraArgs = []) {
  const userDataDir = mkdtempSync(join(tmpdir(), 'kiln-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      ...extraArgs,
    ],
  });
  const close = async () => {
    await context.close().catch(() => {});
    rmSync(userDataDir, { recursive: true, force: true });
  };
  return { context, close, userDataDir };
}

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Runs axe-core on the page; fails on moderate, serious or critical violations. */
export async function axe(page, what) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.addScriptTag({ content: AXE });
  const result = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 4) }));
  });
  const bad = result.filter((v) => v.impact === 'moderate' || v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad, [], `${what}: axe-core found moderate, serious or critical violations: ${JSON.stringify(bad, null, 1)}`);
  return result;
}
