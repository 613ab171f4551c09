// A busy Node program: main() -> outerWork() -> hotSpin(). Run with
// `node --perf-basic-prof` so V8 writes /tmp/perf-<pid>.map.
function hotSpin(n) {
  let acc = 0;
  for (let i = 0; i < n; i++) acc = (acc * 31 + i) & 0xffffff;
  return acc;
}
function outerWork() {
  let s = 0;
  for (let k = 0; k < 200; k++) s ^= hotSpin(5000);
  return s;
}
function main(seconds) {
  const end = Date.now() + seconds * 1000;
  let x = 0;
  while (Date.now() < end) x ^= outerWork();
  return x;
}
main(Number(process.argv[2] || 1));
