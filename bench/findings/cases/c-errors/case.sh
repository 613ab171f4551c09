#!/bin/bash
# Planted: errors. The server's backend check fails for every third request, answered 503
# at once (check_backend); the others take ~25 us of CPU.
# Oracle: the server's own counters (GET /stats: requests and errors) at the window's start
# and end.
. "$(dirname "$0")/../../lib.sh"

c_server

oracle_window() {
  snap "$WORK/stats.0" curl -sS --max-time 5 "http://127.0.0.1:$SERVER_PORT/stats"
  sleep "$D"
  snap "$WORK/stats.1" curl -sS --max-time 5 "http://127.0.0.1:$SERVER_PORT/stats"
}
oracle_end() {
  oracle_py << 'PY'
def stats(p):
    t, text = read_snap(p)
    w = text.split()
    return t, int(w[1]), int(w[3])
(ta, r0, e0), (tb, r1, e1) = stats(os.path.join(WORK, "stats.0")), stats(os.path.join(WORK, "stats.1"))
d = (tb - ta) / 1e9
f = {
    "requests_per_s": round((r1 - r0) / d, 1),
    "errors_per_s": round((e1 - e0) / d, 1),
    "error_pct": round(100 * (e1 - e0) / (r1 - r0), 1) if r1 > r0 else None,
    "status": 503,
}
text = (f"the server's own counters over the window: {r1 - r0} requests, {e1 - e0} answered 503 "
        f"({f['error_pct']}%)\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
