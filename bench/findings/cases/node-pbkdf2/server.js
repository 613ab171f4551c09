// An HTTP server that derives a key per request with crypto.pbkdf2Sync on the event
// loop's thread (hashPassword): every request waits for the one thread.
'use strict';
const http = require('http');
const crypto = require('crypto');

function hashPassword(n) {
  return crypto.pbkdf2Sync('correct horse battery staple', 'salt' + n, 3000, 32, 'sha256').toString('hex');
}

let n = 0;
const server = http.createServer((req, res) => {
  const body = hashPassword(n++) + '\n';
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', 128, () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});
