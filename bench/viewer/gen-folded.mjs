// Writes a synthetic folded profile with N distinct frames (stack-tree nodes):
//   [NAMES=lib] node gen-folded.mjs N OUT.folded [SEED]
// A random call tree: each new node calls from a recent node (so stacks get deep, up to
// 32 frames) or, sometimes, from any earlier node (so the tree gets wide); names come
// from a pool of N/4 functions so functions recur in many stacks, as in real profiles.
// Every leaf, and one internal node in eight, ends a folded line with a count of 1..20.
import { createWriteStream } from 'node:fs';

const n = Number(process.argv[2]);
const out = process.argv[3];
let seed = Number(process.argv[4] ?? 1) >>> 0;
if (!Number.isInteger(n) || n < 1 || !out) {
  console.error('usage: node gen-folded.mjs N OUT.folded [SEED]');
  process.exit(2);
}
const rand = () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 2 ** 32;
};
const pool = Math.max(64, Math.floor(n / 4));
// NAMES=lib writes each function in its library (`mod_7.so\`function_12/0`), as DTrace
// and bpftrace name user frames: the same profile for "collapse library" to work on.
const fname = process.env.NAMES === 'lib' ? (k) => `mod_${k % 211}.so\`function_${k}/${k % 4}` : (k) => `mod_${k % 211}:function_${k}/${k % 4}`;
const parent = new Int32Array(n);
const name = new Int32Array(n);
const depth = new Int32Array(n);
const used = new Set();
const roots = Math.min(8, n);
for (let i = 0; i < n; i++) {
  if (i < roots) {
    parent[i] = -1;
    name[i] = i;
    continue;
  }
  for (;;) {
    let p = rand() < 0.6 ? i - 1 - Math.floor(rand() * Math.min(i, 64)) : Math.floor(rand() * i);
    if (depth[p] >= 31) p = Math.floor(rand() * roots);
    const f = Math.floor(rand() * pool);
    const key = p * pool + f;
    if (used.has(key)) continue;
    used.add(key);
    parent[i] = p;
    name[i] = f;
    depth[i] = depth[p] + 1;
    break;
  }
}
// Children lists, then a depth-first walk that keeps the current path.
const count = new Int32Array(n + 1);
for (let i = roots; i < n; i++) count[parent[i]]++;
const first = new Int32Array(n + 1);
for (let i = 0; i < n; i++) first[i + 1] = first[i] + count[i];
const fill = first.slice(0, n);
const child = new Int32Array(Math.max(1, n - roots));
for (let i = roots; i < n; i++) child[fill[parent[i]]++] = i;
const w = createWriteStream(out);
let buf = '';
const flush = async () => {
  if (!w.write(buf)) await new Promise((r) => w.once('drain', r));
  buf = '';
};
const path = [];
const stack = [];
for (let r = roots - 1; r >= 0; r--) stack.push(r);
while (stack.length) {
  const v = stack.pop();
  path.length = depth[v];
  path.push(fname(name[v]));
  const leaf = first[v + 1] === first[v];
  if (leaf || rand() < 0.125) buf += `${path.join(';')} ${1 + Math.floor(rand() * 20)}\n`;
  for (let k = first[v + 1] - 1; k >= first[v]; k--) stack.push(child[k]);
  if (buf.length > 1 << 20) await flush();
}
await flush();
w.end();
