// An HTTP server whose requests spend their CPU in one named JavaScript function.
// Run: node --perf-basic-prof --interpreted-frames-native-stack hot_server.js
// Prints "listening PORT" once it accepts on 127.0.0.1.
'use strict';
const http = require('http');

function hotSpin(n) {
  let x = 0;
  for (let i = 0; i < n; i++) x += Math.sqrt(i * 0.5 + x);
  return x;
}

const server = http.createServer((req, res) => {
  res.end(String(hotSpin(300000)));
});
server.listen(0, '127.0.0.1', () => {
  console.log(`listening ${server.address().port}`);
});
