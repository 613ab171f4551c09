#!/bin/bash
# Planted: one worker saturated. A private nginx (Debian's package) with one worker
# process compresses every response at gzip's highest level (gzip_comp_level 9, a 96 KB
# text page, no cache of the result): the worker's one thread is on a CPU all the time
# while the machine's other core has room, and 16 connections queue for it.
# Oracle: perf record (99 Hz, call graphs, over the window) of the worker: the share of its
# samples in zlib (its library: Debian's is stripped of deflate's inner functions); /proc: the worker's share of the time on a CPU or waiting for
# one; nginx's own access log: requests per second.
. "$(dirname "$0")/../../lib.sh"

start_nginx 1 "gzip on; gzip_comp_level 9; gzip_min_length 0; gzip_types text/plain;" \
  "location / { default_type text/plain; }"
"$PY" - "$WORK/nginx/www/report.txt" << 'PY'
import random, sys
random.seed(7)
words = [''.join(random.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(random.randint(3, 9))) for _ in range(4000)]
out, n = [], 0
while n < 96 * 1024:
    w = random.choice(words)
    out.append(w)
    n += len(w) + 1
open(sys.argv[1], 'w').write(' '.join(out))
PY
WORKER_PID=$(cat "/proc/$SERVER_PID/task/$SERVER_PID/children" | awk '{print $1}')
[ -n "$WORKER_PID" ] || { say "nginx has no worker"; exit 1; }

oracle_window() { perf record -q -F 99 -g -p "$WORKER_PID" -o "$WORK/perf.data" -- sleep "$D"; }
oracle_end() {
  oracle_py << 'PY'
import subprocess
# Debian's zlib is stripped of its static functions (deflate_slow, longest_match): its
# samples are counted by the library they ran in, as perf names it.
out = subprocess.run(["perf", "script", "-i", os.path.join(WORK, "perf.data"), "-F", "ip,dso"], capture_output=True, text=True).stdout
blocks = [b for b in out.split("\n\n") if b.strip()]
total = len(blocks)
zlib = sum(1 for b in blocks if "libz.so" in b.strip().splitlines()[0])
reqs = nginx_requests(WORK, T0, T1)
secs = (T1 - T0) / 1e9
f = {
    "zlib_pct_of_worker_samples": round(100 * zlib / total, 1) if total else None,
    "worker_busy_pct": PROC.get("busiest_thread_busy_pct"),
    "worker_cpu_pct": PROC.get("hottest_thread_cpu_pct"),
    "requests_per_s": round(len(reqs) / secs, 1) if secs else None,
}
text = (f"perf record at 99 Hz over the window ({total} samples of the worker): {f['zlib_pct_of_worker_samples']}% in zlib (libz.so)\n"
        f"/proc: the worker on a CPU {f['worker_cpu_pct']}% of the time, on a CPU or waiting for one {f['worker_busy_pct']}%\n"
        f"nginx's access log: {f['requests_per_s']} requests/s\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s \
  -H 'Accept-Encoding: gzip' "http://127.0.0.1:$SERVER_PORT/report.txt"
