#!/bin/bash
# Planted: a slow upstream behind a reverse proxy. A private nginx (Debian's package, 2
# workers) proxies every request to a local "inventory service" (c-downstream's: another
# process answering after 20 ms) over keep-alive connections: nginx's workers sit idle
# in epoll while the requests wait for the upstream.
# Oracle: nginx's own access log, $upstream_response_time over $request_time of the
# requests ended in the window; the workers' CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

cc_build downstream "$CASE_DIR/../c-downstream/downstream.c"
start_server downstream "$WORK/downstream"
DOWN_PORT=$SERVER_PORT
start_nginx 2 "upstream inventory { server 127.0.0.1:$DOWN_PORT; keepalive 32; }" \
  "location / { proxy_pass http://inventory; proxy_http_version 1.1; proxy_set_header Connection \"\"; }"

oracle_end() {
  oracle_py << 'PY'
reqs = nginx_upstream_times(WORK, T0, T1)
secs = (T1 - T0) / 1e9
total = sum(t for t, _ in reqs)
up = sum(u for _, u in reqs)
f = {
    "upstream_pct_of_request_time": round(100 * up / total, 1) if total else None,
    "requests_per_s": round(len(reqs) / secs, 1) if secs else None,
    "upstream_ms_mean": round(1000 * up / len(reqs), 2) if reqs else None,
    "request_time_ms_mean": round(1000 * total / len(reqs), 2) if reqs else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"nginx's access log over the window: {len(reqs)} requests ({f['requests_per_s']}/s); $request_time "
        f"{f['request_time_ms_mean']} ms on average, of which $upstream_response_time {f['upstream_ms_mean']} ms "
        f"({f['upstream_pct_of_request_time']}%)\n/proc: nginx on a CPU {f['server_cpu_pct']}% of a core\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
