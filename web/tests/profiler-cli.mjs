// The Firefox Profiler's own loading code (the pinned `@firefox-devtools/profiler-cli`
// package: one bundle of the profiler's importers, processed-format upgraders and
// selectors, built and published by the profiler's authors), for the browser checks:
// its daemon is started in the foreground on a file, with a private session directory and
// no symbolication (nothing leaves the machine), and asked, as its CLI asks it.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const cli = join(dirname(createRequire(import.meta.url).resolve('@firefox-devtools/profiler-cli/package.json')), 'dist/profiler-cli.js');

/**
 * `file` loaded by the profiler's daemon: `ask(args)` gets a CLI command's JSON answer,
 * `close()` stops the daemon. Ready once it answers (the profile loaded and processed),
 * within 60 s; on a busy machine a daemon has been seen never to answer: then it is
 * stopped (by its PID) and one more is started, at most three in all.
 */
export async function openInProfiler(file) {
  const sessions = mkdtempSync(join(tmpdir(), 'kiln-profiler-cli-'));
  const env = { ...process.env, PROFILER_CLI_SESSION_DIR: sessions, PROFILER_CLI_NO_SYMBOLICATE: '1' };
  let lastRefusal = '';
  let session = 'kiln-1';
  const ask = (args, { quiet = false } = {}) => {
    try {
      const out = execFileSync(process.execPath, [cli, ...args, '--session', session, '--json'], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      return JSON.parse(out);
    } catch (e) {
      lastRefusal = `${e.stderr || ''}${e.stdout || ''}${e.message}`;
      if (quiet) return null;
      throw new Error(`profiler-cli ${args.join(' ')}: ${e.stderr || e.message}`);
    }
  };
  const start = () => {
    const d = { log: '', exited: null };
    d.proc = spawn(process.execPath, [cli, '--daemon', file, '--session', session], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    d.proc.stdout.on('data', (x) => (d.log += x));
    d.proc.stderr.on('data', (x) => (d.log += x));
    d.proc.on('exit', (code, signal) => (d.exited = { code, signal }));
    return d;
  };
  let daemon = start();
  const close = () => {
    ask(['stop'], { quiet: true });
    if (!daemon.exited) daemon.proc.kill();
    rmSync(sessions, { recursive: true, force: true });
  };
  let threads = null;
  const tried = [];
  for (let attempt = 1; attempt <= 3 && !threads; attempt++) {
    if (attempt > 1) {
      tried.push(`daemon ${attempt - 1}: ${JSON.stringify(daemon.exited)} ${daemon.log}; the last question got: ${lastRefusal}`);
      if (!daemon.exited) daemon.proc.kill('SIGKILL');
      session = `kiln-${attempt}`;
      daemon = start();
    }
    const until = Date.now() + 60_000;
    while (!threads && !daemon.exited && Date.now() < until) {
      threads = ask(['thread', 'list'], { quiet: true });
      if (!threads) await new Promise((ok) => setTimeout(ok, 100));
    }
  }
  if (!threads) {
    const why = `the profiler's daemon never answered: ${tried.join(' | ')} | daemon 3: ${JSON.stringify(daemon.exited)} ${daemon.log}; the last question got: ${lastRefusal}`;
    close();
    throw new Error(why);
  }
  if (tried.length) console.log(`note - the profiler's daemon answered on attempt ${tried.length + 1}: ${tried.join(' | ')}`);
  return { ask, close, threads };
}
