// A catalogue server whose handler builds each page from ~20,000 short-lived objects
// (buildPage) and keeps the last 10 pages (as a cache of recent answers would), in a
// small young generation (--max-semi-space-size=1): V8's scavenger runs every few
// requests and copies what is still live, and what survives it fills the old generation,
// which is marked and compacted again and again.
// GET /metrics answers V8's own account of its collections (perf_hooks 'gc' entries: their
// count and summed pause, by kind) and process.cpuUsage(), as JSON.
'use strict';
const http = require('http');
const { PerformanceObserver, constants } = require('perf_hooks');

const gc = { count: 0, ms: 0, by_kind: {} };
const KINDS = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gc.count++;
    gc.ms += e.duration;
    const k = KINDS[e.detail ? e.detail.kind : e.kind] || 'other';
    gc.by_kind[k] = (gc.by_kind[k] || 0) + e.duration;
  }
}).observe({ entryTypes: ['gc'] });

const recent = [];

function buildPage(n) {
  const items = [];
  for (let i = 0; i < 20000; i++) {
    items.push({ id: n * 20000 + i, name: 'item-' + i, tags: ['t' + (i % 7), 'c' + (i % 13)], price: (i % 97) * 1.5 });
  }
  recent.push(items);
  if (recent.length > 10) recent.shift();
  let total = 0;
  for (const it of items) total += it.price;
  return total;
}

let n = 0;
const server = http.createServer((req, res) => {
  let body;
  if (req.url === '/metrics') {
    const cpu = process.cpuUsage();
    body = JSON.stringify({ gc_count: gc.count, gc_ms: gc.ms, gc_ms_by_kind: gc.by_kind, cpu_user_us: cpu.user, cpu_system_us: cpu.system }) + '\n';
  } else {
    body = buildPage(n++).toFixed(0) + '\n';
  }
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', 128, () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});
