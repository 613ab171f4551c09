// A Node HTTP server whose requests are cheap, and whose event loop stops for them at
// times: a timer re-indexes the catalogue every 500 ms, synchronously, for some 60 ms
// (reindexCatalogue), and every request that arrives meanwhile waits for it.
// usage: node stalling_loop.js   (prints "ready PORT" once it listens on 127.0.0.1)
'use strict';
const http = require('http');

let index = new Map();

function reindexCatalogue() {
  const start = Date.now();
  const next = new Map();
  let i = 0;
  while (Date.now() - start < 60) {
    next.set('item' + (i % 50000), (i * 2654435761) % 1000003);
    i++;
  }
  index = next;
}

setInterval(reindexCatalogue, 500);

http
  .createServer((req, res) => {
    const price = index.get('item' + (req.url.length % 50000)) || 0;
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('price ' + price + '\n');
  })
  .listen(0, '127.0.0.1', function () {
    console.log('ready ' + this.address().port);
  });
