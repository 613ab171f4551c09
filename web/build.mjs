// Builds web/dist/viewer.js (embedded by crates/viewer), web/dist/report.js (embedded by
// crates/report) and, with --tests, the unit tests.
//   node build.mjs            write dist/viewer.js and dist/report.js
//   node build.mjs --check    fail if a bundle in dist/ differs from a fresh build (CI)
//   node build.mjs --tests    build tests/*.test.ts into build-tests/ for `node --test`
import * as esbuild from 'esbuild';
import { readFileSync, writeFileSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);

const BUNDLES = [
  ['src/main.ts', 'dist/viewer.js'],
  ['src/report/main.ts', 'dist/report.js'],
];

async function bundle(entry) {
  const r = await esbuild.build({
    entryPoints: [join(here, entry)],
    bundle: true,
    format: 'iife',
    target: 'es2022',
    minify: !process.env.KILN_NO_MINIFY,
    legalComments: 'none',
    charset: 'utf8',
    write: false,
    logLevel: 'warning',
  });
  let js = r.outputFiles[0].text;
  // The bundle is inlined in a <script> element: it must never contain "</script" or "<!--".
  js = js.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
  return js;
}

if (args.includes('--tests')) {
  const dir = join(here, 'tests');
  const entries = readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => join(dir, f));
  mkdirSync(join(here, 'build-tests'), { recursive: true });
  await esbuild.build({
    entryPoints: entries,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outdir: join(here, 'build-tests'),
    outExtension: { '.js': '.mjs' },
    logLevel: 'warning',
  });
} else {
  let stale = false;
  for (const [entry, file] of BUNDLES) {
    const js = await bundle(entry);
    const out = join(here, file);
    if (args.includes('--check')) {
      let old = '';
      try {
        old = readFileSync(out, 'utf8');
      } catch {}
      if (old !== js) {
        console.error(`web/${file} is out of date: run \`npm run build\` in web/ and commit it`);
        stale = true;
      } else {
        console.error(`web/${file} matches its sources`);
      }
    } else {
      mkdirSync(join(here, 'dist'), { recursive: true });
      writeFileSync(out, js);
      console.error(`wrote ${out} (${js.length} bytes)`);
    }
  }
  if (stale) process.exit(1);
}
