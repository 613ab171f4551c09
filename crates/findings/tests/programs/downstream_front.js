// A front that asks a local "inventory service" in every request (callInventoryService,
// http.get over a keep-alive agent) and answers with its reply. The same file serves the
// inventory (`downstream_front.js --inventory`: every answer after 20 ms, a timer), and,
// with `--throttle`, a front that asks no one but holds every request 20 ms on a timer of
// its own (waitForRateLimit: setTimeout, no thread on it), timed as the calls are.
// GET /metrics on the front answers its own account (ns, process.hrtime: CLOCK_MONOTONIC):
// the calls and their summed duration, the requests answered and their summed time from
// arrival to answer, and the clock.
'use strict';
const http = require('http');

function listen(server) {
  server.keepAliveTimeout = 60000;
  server.listen(0, '127.0.0.1', 128, () => console.log(`listening on 127.0.0.1:${server.address().port}`));
}

if (process.argv[2] === '--inventory') {
  listen(http.createServer((req, res) => {
    setTimeout(() => res.end('in stock: 12\n'), 20);
  }));
} else {
  const downstream = process.argv[2];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const stats = { calls: 0, ns: 0n, requests: 0, req_ns: 0n };
  function waitForRateLimit(done) {
    const t0 = process.hrtime.bigint();
    setTimeout(() => {
      stats.calls++;
      stats.ns += process.hrtime.bigint() - t0;
      done('ok\n');
    }, 20);
  }
  function callInventoryService(done) {
    if (downstream === '--throttle') {
      waitForRateLimit(done);
      return;
    }
    const t0 = process.hrtime.bigint();
    http.get(downstream, { agent }, (r) => {
      let body = '';
      r.on('data', (c) => { body += c; });
      r.on('end', () => {
        stats.calls++;
        stats.ns += process.hrtime.bigint() - t0;
        done(body);
      });
    }).on('error', (e) => done('error: ' + e.message + '\n'));
  }
  listen(http.createServer((req, res) => {
    if (req.url === '/metrics') {
      res.end(JSON.stringify({
        calls: stats.calls, ns: Number(stats.ns), requests: stats.requests, req_ns: Number(stats.req_ns),
        now_ns: Number(process.hrtime.bigint()),
      }) + '\n');
      return;
    }
    const t0 = process.hrtime.bigint();
    callInventoryService((body) => {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
      stats.requests++;
      stats.req_ns += process.hrtime.bigint() - t0;
    });
  }));
}
