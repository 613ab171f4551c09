// Launches Debian's Chromium headless through playwright-core, with a fresh profile
// directory, for the browser tests and the benchmark.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
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
