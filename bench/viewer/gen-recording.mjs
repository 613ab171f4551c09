// Writes a synthetic recording, the shape of `kiln record -e cpu -a -d SECONDS` on a
// machine with CPUS busy CPUs sampled at HZ: each CPU runs one of THREADS threads at a
// time (switching every 5-100 ms); each thread walks a call tree of a few thousand
// functions, staying in a stack for a while, calling deeper or returning, as programs do.
//   node gen-recording.mjs SECONDS HZ CPUS THREADS OUT.tsv [SEED]
// One line per sample: time_ns <TAB> thread name <TAB> tid <TAB> frame;frame;...
// (the input of the recording2html example, and of inferno's --flamechart after cut).
import { createWriteStream } from 'node:fs';

const [seconds, hz, cpus, threads] = process.argv.slice(2, 6).map(Number);
const out = process.argv[6];
let seed = Number(process.argv[7] ?? 1) >>> 0;
if (!(seconds > 0 && hz > 0 && cpus > 0 && threads > 0) || !out) {
  console.error('usage: node gen-recording.mjs SECONDS HZ CPUS THREADS OUT.tsv [SEED]');
  process.exit(2);
}
const rand = () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 2 ** 32;
};
// A call tree: node i calls children; names from a pool so functions recur.
const N = 4000;
const pool = 900;
const parent = new Int32Array(N).fill(-1);
const depth = new Int32Array(N);
const name = new Int32Array(N);
const kids = Array.from({ length: N }, () => []);
for (let i = 1; i < N; i++) {
  let p = rand() < 0.7 ? Math.max(0, i - 1 - Math.floor(rand() * 20)) : Math.floor(rand() * i);
  if (depth[p] >= 34) p = 0;
  parent[i] = p;
  depth[i] = depth[p] + 1;
  name[i] = Math.floor(rand() * pool);
  kids[p].push(i);
}
const fname = (k) => `mod_${k % 37}:function_${k}/${k % 4}`;
const pathOf = (v) => {
  const p = [];
  for (; v >= 0; v = parent[v]) p.push(v === 0 ? 'main' : fname(name[v]));
  return p.reverse().join(';');
};
const pathCache = new Map();
const path = (v) => {
  let s = pathCache.get(v);
  if (s === undefined) pathCache.set(v, (s = pathOf(v)));
  return s;
};
const at = new Int32Array(threads); // each thread's current node
const period = Math.round(1e9 / hz);
const w = createWriteStream(out);
let buf = '';
const t0 = 1_000_000_000_000;
const total = Math.round(seconds * hz);
for (let c = 0; c < cpus; c++) {
  let th = c % threads;
  let sliceEnd = 0;
  for (let k = 0; k < total; k++) {
    const t = t0 + k * period + c * 7919;
    if (t - t0 >= sliceEnd) {
      th = Math.floor(rand() * threads);
      sliceEnd = t - t0 + (5 + rand() * 95) * 1e6;
    }
    // The thread's program moves on: deeper, back up, or stays.
    const r = rand();
    let v = at[th];
    if (r < 0.15 && kids[v].length) v = kids[v][Math.floor(rand() * kids[v].length)];
    else if (r < 0.21 && parent[v] >= 0) v = parent[v];
    at[th] = v;
    buf += `${t}\tworker-${th}\t${1000 + th}\t${path(v)}\n`;
    if (buf.length > 1 << 20) {
      w.write(buf);
      buf = '';
    }
  }
}
w.write(buf);
w.end();
