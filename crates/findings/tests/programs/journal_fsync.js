// An HTTP server that appends each order to a journal and syncs it to the disk before it
// answers (appendOrder: fs.write, then fs.fdatasync, both asynchronous: libuv's thread pool,
// 4 threads, does the calls while the event loop goes on). GET /stats answers its own
// account (ns, process.hrtime: CLOCK_MONOTONIC): orders, the time from each appendOrder's
// call to its last callback (the write and the sync, with their waits for a pool thread),
// the time from each fdatasync's call to its callback, and the clock.
'use strict';
const http = require('http');
const fs = require('fs');
const path = require('path');

const fd = fs.openSync(path.join(process.cwd(), 'orders.journal'), 'a');
const record = Buffer.alloc(512, 'o');
const stats = { orders: 0, append_ns: 0n, sync_ns: 0n };

function appendOrder(done) {
  const t0 = process.hrtime.bigint();
  fs.write(fd, record, (err) => {
    if (err) return done(err);
    const t1 = process.hrtime.bigint();
    fs.fdatasync(fd, (err2) => {
      const t2 = process.hrtime.bigint();
      stats.orders++;
      stats.append_ns += t2 - t0;
      stats.sync_ns += t2 - t1;
      done(err2);
    });
  });
}

const server = http.createServer((req, res) => {
  if (req.url === '/stats') {
    res.end(JSON.stringify({ orders: stats.orders, append_ns: Number(stats.append_ns), sync_ns: Number(stats.sync_ns), now_ns: Number(process.hrtime.bigint()) }) + '\n');
    return;
  }
  appendOrder((err) => {
    const body = err ? 'error: ' + err.message + '\n' : 'ok\n';
    res.writeHead(err ? 500 : 200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', 128, () => console.log(`listening on 127.0.0.1:${server.address().port}`));
