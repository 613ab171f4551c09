// A Node HTTP server whose every request derives a key with crypto.pbkdf2 (about a
// millisecond of SHA-256), asynchronously: the work runs on libuv's thread pool, not on
// the event loop. Run with UV_THREADPOOL_SIZE=1, that pool is one thread, and it is the
// limit while the event loop idles.
// usage: UV_THREADPOOL_SIZE=1 node pool_crypto.js   (prints "ready PORT" once it listens)
'use strict';
const http = require('http');
const crypto = require('crypto');

http
  .createServer((req, res) => {
    crypto.pbkdf2('secret', 'salt' + req.url, 2000, 32, 'sha256', (err, key) => {
      if (err) {
        res.writeHead(500);
        res.end();
        return;
      }
      res.end(key.toString('hex') + '\n');
    });
  })
  .listen(0, '127.0.0.1', function () {
    console.log('ready ' + this.address().port);
  });
