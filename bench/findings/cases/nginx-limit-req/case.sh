#!/bin/bash
# Planted: a rate limit that delays. A private nginx (Debian's package, two workers)
# serves a small page behind `limit_req` (400 requests/s, a burst of 1,000, no nodelay):
# nginx holds every request past the rate on its own timer until its turn, so the 16
# connections' requests spend nearly all their time held inside nginx, whose workers
# are idle — nothing outside it, no lock, no CPU.
# Oracle: nginx's own access log over the window: the share of the 16 connections' time
# in requests it delayed ($limit_req_status DELAYED, their $request_time), the requests'
# mean $request_time, and the workers' CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

start_nginx 2 "limit_req_zone \$server_port zone=paced:1m rate=400r/s; limit_req_log_level notice;" \
  "location / { limit_req zone=paced burst=1000; }"
head -c 600 /dev/zero | tr '\0' 'k' > "$WORK/nginx/www/index.html"

oracle_end() {
  oracle_py << 'PY'
reqs = nginx_requests(WORK, T0, T1)
secs = (T1 - T0) / 1e9
delayed = [t for t, _, st in reqs if st == "DELAYED"]
f = {
    "timer_wait_pct_of_request_time": round(100 * sum(delayed) / (16 * secs), 1) if secs else None,
    "delayed_pct_of_requests": round(100 * len(delayed) / len(reqs), 1) if reqs else None,
    "requests_per_s": round(len(reqs) / secs, 1) if secs else None,
    "request_time_ms_mean": round(1000 * sum(t for t, _, _ in reqs) / len(reqs), 2) if reqs else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"nginx's access log over the window: {len(reqs)} requests ({f['requests_per_s']}/s), {f['delayed_pct_of_requests']}% of them "
        f"DELAYED by limit_req; $request_time {f['request_time_ms_mean']} ms on average; the delayed requests hold "
        f"{f['timer_wait_pct_of_request_time']}% of the 16 connections' time\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
