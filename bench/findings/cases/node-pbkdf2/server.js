// An HTTP server that derives a key per request with crypto.pbkdf2Sync on the event
// loop's thread (hashPassword): every request waits for the one thread. With --async
// (node-pool) it calls crypto.pbkdf2, which runs in libuv's pool: the requests wait for
// the pool's threads (UV_THREADPOOL_SIZE) while the event loop idles.
'use strict';
const http = require('http');
const crypto = require('crypto');

const PASSWORD = 'correct horse battery staple';

function hashPassword(n) {
  return crypto.pbkdf2Sync(PASSWORD, 'salt' + n, 3000, 32, 'sha256').toString('hex');
}

function hashPasswordAsync(n, done) {
  crypto.pbkdf2(PASSWORD, 'salt' + n, 3000, 32, 'sha256', (err, key) => done(err, key && key.toString('hex')));
}

function answer(res, body) {
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

let n = 0;
const server = http.createServer(process.argv.includes('--async')
  ? (req, res) => hashPasswordAsync(n++, (err, key) => answer(res, err ? String(err) : key + '\n'))
  : (req, res) => answer(res, hashPassword(n++) + '\n'));
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', 128, () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});
