// A Node HTTP server run as the cluster module makes it: the first process (the primary)
// forks one worker per CPU and serves nothing itself; each worker derives a key per
// request with crypto.pbkdf2Sync (hashPassword) on its event loop. The workers share the
// listening socket (the primary accepts and hands connections round-robin).
'use strict';
const cluster = require('cluster');
const http = require('http');
const crypto = require('crypto');
const os = require('os');

function hashPassword(n) {
  return crypto.pbkdf2Sync('correct horse battery staple', 'salt' + n, 2000, 32, 'sha256').toString('hex');
}

if (cluster.isPrimary) {
  // Workers that listen on port 0 share one port, the first's.
  let listening = 0;
  cluster.on('listening', (w, address) => {
    if (++listening === os.cpus().length) console.log(`listening on 127.0.0.1:${address.port}`);
  });
  for (let i = 0; i < os.cpus().length; i++) cluster.fork();
} else {
  let n = 0;
  const server = http.createServer((req, res) => {
    const body = hashPassword(n++) + '\n';
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
  server.keepAliveTimeout = 60000;
  server.listen(0, '127.0.0.1', 128);
}
