// A Node HTTP server whose handler blocks the event loop: lookupUser() waits 3 ms
// synchronously (Atomics.wait, as a synchronous driver call would), so no other
// connection is served meanwhile.
// usage: node blocking_loop.js   (prints "ready PORT" once it listens on 127.0.0.1)
'use strict';
const http = require('http');
const cell = new Int32Array(new SharedArrayBuffer(4));

function lookupUser(id) {
  Atomics.wait(cell, 0, 0, 3);
  return JSON.stringify({ id, name: 'user' + id });
}

http
  .createServer((req, res) => {
    const body = lookupUser(req.url.length);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  })
  .listen(0, '127.0.0.1', function () {
    console.log('ready ' + this.address().port);
  });
