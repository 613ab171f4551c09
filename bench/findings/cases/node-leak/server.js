// An HTTP server that remembers every request's session: rememberSession allocates an
// 8 KiB buffer, fills it and keeps it in an array nothing ever empties.
// GET /metrics answers V8's and Node's own account (process.memoryUsage(): the heap and
// the buffers outside it, as JSON).
'use strict';
const http = require('http');

const sessions = [];

function rememberSession() {
  const b = Buffer.alloc(8192, sessions.length & 0xff);
  sessions.push({ id: sessions.length, b });
  return sessions.length;
}

const server = http.createServer((req, res) => {
  let body;
  if (req.url === '/metrics') {
    const m = process.memoryUsage();
    body = JSON.stringify({ heap_alloc: m.heapUsed + m.arrayBuffers, rss: m.rss, sessions: sessions.length }) + '\n';
  } else {
    body = rememberSession() + '\n';
  }
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', 128, () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});
